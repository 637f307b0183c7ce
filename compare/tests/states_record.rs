//! Every warp-state table among the records (`compare states-table`'s pages under
//! `docs/src/results/runs/`) is what its own records give: the table is written again from the
//! Nsight Compute logs and the predictions its header names, and must come out the same. A
//! record edited by hand, or a change to how the table reads them, fails here.

use std::path::{Path, PathBuf};

use compare::tables::read_cases;
use compare::tables::states::{StatesTableInputs, table};

fn runs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/src/results/runs")
}

/// The file names in backticks after `label` on `line`, up to the next full stop.
fn named(line: &str, label: &str) -> Vec<PathBuf> {
    let Some(at) = line.find(label) else { return Vec::new() };
    let rest = &line[at + label.len()..];
    let end = rest.find(". ").unwrap_or(rest.len());
    rest[..end].split('`').skip(1).step_by(2).map(|name| runs().join(name)).collect()
}

#[test]
fn each_warp_state_table_is_what_its_records_give() {
    let mut checked = 0;
    for entry in std::fs::read_dir(runs()).expect("the records' folder") {
        let path = entry.expect("an entry").path();
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        if path.extension().is_none_or(|e| e != "md") || !text.contains("Written by `compare states-table`") {
            continue;
        }
        let header = text.lines().find(|l| l.starts_with("Nsight Compute: ")).expect("the header line");
        let gpu = text
            .lines()
            .next()
            .and_then(|l| l.split("Nsight Compute on the ").nth(1))
            .and_then(|l| l.split(' ').next())
            .expect("the title names the GPU");
        let inputs = StatesTableInputs {
            ncu: named(header, "Nsight Compute: "),
            predicted: named(header, "Predictions: "),
            cases: read_cases(&runs().join("../../../../ptx_emulator/heldout/corpus.txt"))
                .expect("the corpus"),
            gpu: gpu.to_owned(),
        };
        assert!(
            !inputs.ncu.is_empty() && !inputs.predicted.is_empty(),
            "{}: no records named",
            path.display()
        );
        let again = table(&inputs).expect("the table from its records").join("\n") + "\n";
        assert_eq!(again, text, "{} is not what its records give", path.display());
        checked += 1;
    }
    assert!(checked > 0, "no warp-state table among the records");
}

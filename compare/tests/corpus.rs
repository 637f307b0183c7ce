//! The time model's corpus (`ptx_emulator/heldout/corpus.txt`) against the lists it gathers:
//! every lab the emulator runs (`labs.tsv`) but 03, each of its stages and variants (the files of
//! `STEP/stages/` and `STEP/variants/`), the held-out set (`cases.txt`) and the chapters'
//! comparisons (`lessons.txt`). A kernel added to one of them and not to the corpus fails here,
//! and so does a corpus line that names a kernel none of them holds.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use compare::tables::parse_cases;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A run's words, spaces evened out: `STEP ARGUMENTS…`.
fn run_of(step_and_args: &str) -> String {
    step_and_args.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The `.cu` files of `dir`, sorted.
fn kernels(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut out: Vec<String> = entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".cu"))
        .collect();
    out.sort();
    out
}

/// Every run the corpus must hold, in the lists' order.
fn expected() -> Vec<String> {
    let mut out = Vec::new();
    for line in read("labs.tsv").lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let f: Vec<&str> = line.split('\t').collect();
        let (number, krate, emulates) = (f[0], f[1], f[5] == "yes");
        if !emulates || number == "03" {
            continue;
        }
        out.push(krate.to_owned());
        for stage in kernels(&root().join(krate).join("stages")) {
            out.push(format!("{krate} --stage {}", stage.trim_end_matches(".cu")));
        }
        for variant in kernels(&root().join(krate).join("variants")) {
            out.push(format!("{krate} --kernel {krate}/variants/{variant}"));
        }
    }
    for file in ["ptx_emulator/heldout/cases.txt", "ptx_emulator/heldout/lessons.txt"] {
        out.extend(parse_cases(&read(file)).into_iter().map(|(_, run)| run_of(&run)));
    }
    out
}

#[test]
fn the_corpus_holds_every_lab_stage_variant_and_held_out_kernel_once() {
    let corpus: Vec<(String, String)> = parse_cases(&read("ptx_emulator/heldout/corpus.txt"));
    let runs: Vec<String> = corpus.iter().map(|(_, r)| run_of(r)).collect();
    let held: BTreeSet<&String> = runs.iter().collect();
    assert_eq!(held.len(), runs.len(), "corpus.txt lists a kernel twice");
    let names: BTreeSet<&String> = corpus.iter().map(|(n, _)| n).collect();
    assert_eq!(names.len(), corpus.len(), "corpus.txt gives two kernels one name");
    let wanted = expected();
    let missing: Vec<&String> = wanted.iter().filter(|r| !held.contains(r)).collect();
    assert!(missing.is_empty(), "corpus.txt lacks: {missing:?}");
    let wanted: BTreeSet<&String> = wanted.iter().collect();
    let extra: Vec<&&String> = held.iter().filter(|r| !wanted.contains(**r)).collect();
    assert!(extra.is_empty(), "corpus.txt holds kernels no list names: {extra:?}");
}

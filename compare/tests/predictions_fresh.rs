//! The chapters' tables "Predicted without a GPU" print the time model's predictions from a
//! record (docs/figures.txt's `model.stepNN.…` figures, each from a table of
//! `compare model-table`, which names the predictions it read). Each of those predictions must
//! have been made by the model in the tree: a change to the model (ptx_model/src) fails here
//! until `scripts/model-predictions.sh` runs again and the table is written from its record.

use std::collections::BTreeSet;
use std::path::Path;

use compare::tables::fingerprint::{model_fingerprint, named_in};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace")
}

/// The tables the chapters' `model.stepNN.…` figures come from.
fn tables() -> BTreeSet<String> {
    let figures = std::fs::read_to_string(root().join("docs/figures.txt")).expect("docs/figures.txt");
    figures
        .lines()
        .filter(|l| {
            l.strip_prefix("model.step").is_some_and(|rest| rest.chars().take(2).all(|c| c.is_ascii_digit()))
        })
        .filter_map(|l| l.split(" | ").nth(2).map(|r| r.trim().to_owned()))
        .collect()
}

/// The records of predictions a table of `compare model-table` names on its `Predictions:` line.
fn predictions_of(table: &str) -> Vec<String> {
    let line = table.lines().find(|l| l.starts_with("Predictions:")).expect("a Predictions: line");
    // The GPU's times follow on the same line.
    let line = line.split(" Times:").next().unwrap_or(line);
    line.split('`').skip(1).step_by(2).filter(|name| name.ends_with(".log")).map(str::to_owned).collect()
}

#[test]
fn the_chapters_predictions_come_from_the_model_in_the_tree() {
    let now = model_fingerprint(root()).expect("the model's fingerprint");
    let tables = tables();
    assert!(!tables.is_empty(), "no figure named model.stepNN.… in docs/figures.txt");
    for table in &tables {
        let path = root().join("docs/src").join(table);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let records = predictions_of(&text);
        assert!(!records.is_empty(), "{table} names no record of predictions");
        for record in records {
            let at = path.parent().expect("the runs' folder").join(&record);
            let log = std::fs::read_to_string(&at).unwrap_or_else(|e| panic!("{}: {e}", at.display()));
            match named_in(&log) {
                Some(made_by) => assert_eq!(
                    made_by, now,
                    "{record} (read by {table}) was predicted by another time model than ptx_model/src's now: run scripts/model-predictions.sh again, and `compare model-table` on its record"
                ),
                None => panic!(
                    "{record} (read by {table}) names no model in its header: predict again with scripts/model-predictions.sh"
                ),
            }
        }
    }
}

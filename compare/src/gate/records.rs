//! The gate's committed records, one per GPU model, carried in the program (a bundle runs it far
//! from the source tree, which it never reads): `docs/src/results/gate/<device>.json`, named by
//! [`crate::slug`] of the device's name.
//!
//! To add a GPU's record: run `compare --gate --record` on it, copy the JSON it wrote under
//! `--out` to `docs/src/results/gate/`, and add a line to [`RECORDS`] such as
//! `("nvidia-h200", include_str!("../../../docs/src/results/gate/nvidia-h200.json")),`.
//! A record measured again replaces its file, and needs no change here.

use anyhow::{Result, bail};

use super::GateRecord;
use crate::slug;

/// Each record: the device's slug and the record's JSON.
pub const RECORDS: &[(&str, &str)] =
    &[("nvidia-h200", include_str!("../../../docs/src/results/gate/nvidia-h200.json"))];

/// Where the record of the device of slug `slug` is committed, from the repository's root.
pub fn path(slug: &str) -> String {
    format!("docs/src/results/gate/{slug}.json")
}

/// The record of the GPU named `device`, or why there is none in one sentence.
pub fn for_device(device: &str) -> Result<GateRecord> {
    let slug = slug(device);
    match RECORDS.iter().find(|(s, _)| *s == slug) {
        Some((_, text)) => GateRecord::parse(text, &path(&slug)),
        None => bail!(
            "this program holds no gate record for the {device}: make one on this GPU with \
             `cargo run --release -p compare -- --gate --record`, commit the JSON it writes as {} and \
             list it in compare/src/gate/records.rs",
            path(&slug)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every record carried parses, is its device's, and is the file of that name in the
    /// repository; and every record committed there is carried.
    #[test]
    fn the_carried_records_parse_and_are_the_committed_files() {
        for (slug, text) in RECORDS {
            let record = GateRecord::parse(text, &path(slug)).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(crate::slug(&record.device), *slug, "{}: another device's record", path(slug));
            assert!(!record.entries.is_empty(), "{}: no entries", path(slug));
            assert_eq!(for_device(&record.device).unwrap(), record);
        }
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let committed: Vec<String> = match std::fs::read_dir(root.join("docs/src/results/gate")) {
            Ok(dir) => dir
                .flatten()
                .filter_map(|e| e.file_name().to_str()?.strip_suffix(".json").map(str::to_owned))
                .collect(),
            Err(_) => Vec::new(), // no record committed yet
        };
        let mut carried: Vec<String> = RECORDS.iter().map(|(s, _)| (*s).to_owned()).collect();
        let mut committed = committed;
        committed.sort();
        carried.sort();
        assert_eq!(carried, committed, "RECORDS against the JSON files of docs/src/results/gate/");
    }

    #[test]
    fn a_gpu_without_a_record_is_told_how_to_make_one() {
        let err = for_device("Test GPU 9000 (no record)").unwrap_err().to_string();
        assert_eq!(
            err,
            "this program holds no gate record for the Test GPU 9000 (no record): make one on this GPU with \
             `cargo run --release -p compare -- --gate --record`, commit the JSON it writes as \
             docs/src/results/gate/test-gpu-9000-no-record.json and list it in compare/src/gate/records.rs"
        );
    }
}

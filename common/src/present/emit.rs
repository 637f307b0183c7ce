//! How a report leaves the program: its text or its JSON on standard output (`--format`), and
//! its JSON in a file beside the text (`--json-to`), which is how the records keep it.
//!
//! The JSON is the report's own fields ([`Report`]'s `Serialize`), with two more at the top
//! level: `schema`, the version of the form ([`SCHEMA`]), and `derived`, the rates and shares
//! computed once from the fields ([`Derived`]), which the text prints too.
//! A step with a report of its own (step 13's) implements [`Emit`] and is printed and written
//! by the same functions.

use std::fmt;
use std::path::Path;

use anyhow::{Result, anyhow};
use serde::Serialize;

use crate::cli::{Args, Format};
use crate::report::{Derived, Report};

/// The version of the reports' JSON form, their top-level `schema` field: one version for every
/// report the course writes (a step's, and step 13's own). It goes up by one when a field of
/// either is renamed or removed, or a value changes its meaning or unit, so that a reader written
/// for one version can refuse another; a field added leaves it as it is (readers ignore fields
/// they do not know). `common/tests/golden/*.json` pins the form.
pub const SCHEMA: u32 = 4;

/// The report's JSON: `schema`, the report's fields, then `derived`.
#[derive(Serialize)]
struct ReportJson<'a> {
    schema: u32,
    #[serde(flatten)]
    report: &'a Report,
    derived: Derived,
}

/// `report`'s JSON text, its fields in the order of the types that hold them, indented
/// (`pretty`) or on one line. Non-finite numbers, which JSON has not, become null.
pub fn json_text(report: &Report, pretty: bool) -> String {
    to_json_text(&ReportJson { schema: SCHEMA, report, derived: Derived::of(report) }, pretty)
}

/// Any report's JSON text, as [`json_text`] writes a step's: indented (`pretty`) or on one line,
/// non-finite numbers as null.
pub fn to_json_text<T: Serialize>(value: &T, pretty: bool) -> String {
    let text = if pretty { serde_json::to_string_pretty(value) } else { serde_json::to_string(value) };
    text.expect("a report is plain data")
}

/// A report as a run prints it: its text ([`fmt::Display`]) and its JSON, which carries
/// `schema` ([`SCHEMA`]) among its top-level fields.
pub trait Emit: fmt::Display {
    /// The JSON text, indented (`pretty`) or on one line.
    fn json_text(&self, pretty: bool) -> String;
}

impl Emit for Report {
    fn json_text(&self, pretty: bool) -> String {
        json_text(self, pretty)
    }
}

/// `report` as a JSON value, to read its fields.
pub fn json(report: &Report) -> serde_json::Value {
    serde_json::from_str(&json_text(report, false)).expect("the report's own JSON")
}

/// Prints `report` as `--format` asks (the text, or its JSON, indented) and writes its JSON, on
/// one line, to `--json-to`'s file where one was given.
pub fn emit(report: &Report, args: &Args) -> Result<()> {
    emit_as(report, args.format.unwrap_or_default(), args.json_to.as_deref())
}

/// Prints `report` in `format` and writes its JSON, on one line, to `json_to` where given: what
/// [`emit`] does with a step's arguments, for a report of another type.
pub fn emit_as(report: &impl Emit, format: Format, json_to: Option<&Path>) -> Result<()> {
    match format {
        Format::Text => print!("{report}"),
        Format::Json => println!("{}", report.json_text(true)),
    }
    crate::record::keep(|| report.json_text(false));
    if let Some(path) = json_to {
        write_json(report, path)?;
    }
    Ok(())
}

/// Writes `report`'s JSON to `path`, one line and a newline.
pub fn write_json(report: &impl Emit, path: &Path) -> Result<()> {
    std::fs::write(path, format!("{}\n", report.json_text(false))).map_err(|e| json_to_error(path, e))
}

/// Checks that `path` can be written, for a run long enough that a `--json-to` it cannot write
/// should stop it before it starts rather than after, leaving a file already there as it is;
/// [`write_json`] writes it at the end. Returns whether the check made the file (empty), which
/// [`guarding_json_to`] removes where the run writes no report: no empty report is left behind.
fn claim_json_to(path: &Path) -> Result<bool> {
    let existed = path.exists();
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .map(drop)
        .map_err(|e| json_to_error(path, e))?;
    Ok(!existed)
}

/// Runs `run` with `--json-to`'s file, where one is given, checked first ([`claim_json_to`]),
/// and left as it was found where the run writes no report (it failed before its report, or
/// it was `--tune`): no empty report is left behind, and an earlier one is not lost. A run that
/// wrote its report and then failed (a verification) keeps it.
pub fn guarding_json_to<T>(json_to: Option<&Path>, run: impl FnOnce() -> Result<T>) -> Result<T> {
    let Some(path) = json_to else { return run() };
    let made = claim_json_to(path)?;
    let outcome = run();
    let empty = std::fs::metadata(path).is_ok_and(|m| m.len() == 0);
    if made && empty {
        // Nothing more to do where it cannot be removed: the run's own outcome is what is told.
        let _ = std::fs::remove_file(path);
    }
    outcome
}

/// The sentence for a `--json-to` file that cannot be written.
fn json_to_error(path: &Path, e: std::io::Error) -> anyhow::Error {
    anyhow!("--json-to could not write {}: {e}", path.display())
}

/// Prints a line of a run that is not its report (a note before it): on standard output beside
/// the text, on standard error where standard output carries the JSON, so that it stays one
/// JSON value.
pub fn aside(args: &Args, line: &str) {
    match args.format.unwrap_or_default() {
        Format::Text => println!("{line}"),
        Format::Json => eprintln!("{line}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("emit-{name}-{}.json", std::process::id()))
    }

    #[test]
    fn a_failed_run_leaves_json_to_as_it_found_it() {
        let (new, old) = (temp("new"), temp("old"));
        std::fs::write(&old, "earlier\n").unwrap();
        for path in [&new, &old] {
            let outcome: Result<()> = guarding_json_to(Some(path), || Err(anyhow!("the run failed")));
            assert!(outcome.is_err());
        }
        assert!(!new.exists(), "an empty report was left behind");
        assert_eq!(std::fs::read_to_string(&old).unwrap(), "earlier\n");
        // A run that writes no report (--compile-only, --tune) leaves none either.
        guarding_json_to(Some(&new), || Ok(())).unwrap();
        assert!(!new.exists(), "an empty report was left behind");
        // A run that writes its report keeps it, also where it then fails (a verification).
        guarding_json_to(Some(&old), || std::fs::write(&old, "{}\n").map_err(anyhow::Error::from)).unwrap();
        assert_eq!(std::fs::read_to_string(&old).unwrap(), "{}\n");
        let failed: Result<()> = guarding_json_to(Some(&new), || {
            std::fs::write(&new, "{}\n")?;
            Err(anyhow!("verification failed"))
        });
        assert!(failed.is_err());
        assert_eq!(std::fs::read_to_string(&new).unwrap(), "{}\n", "a written report was removed");
        std::fs::remove_file(&old).unwrap();
        std::fs::remove_file(&new).unwrap();
    }

    #[test]
    fn a_json_to_that_cannot_be_written_stops_the_run_before_it_starts() {
        let path = temp("folder").join("report.json");
        let mut ran = false;
        let e = guarding_json_to(Some(&path), || {
            ran = true;
            Ok(())
        })
        .unwrap_err()
        .to_string();
        assert!(!ran && e.starts_with("--json-to could not write"), "{e}");
    }
}

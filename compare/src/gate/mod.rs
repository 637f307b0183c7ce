//! The gate (`compare --gate`): every lab at its headline shapes beside its cuBLAS baseline, each
//! share set against the committed record of the GPU (`docs/src/results/gate/<device>.json`). A
//! share more than 3% below its record is measured once more; below again, it fails the gate, as
//! does a wrong result or an entry of the record the run no longer measures. This module holds
//! the record and the decision, with no GPU: what a run measures is [`plan`], the records the
//! program carries are [`records`], and the run itself is the binary's `gate_run.rs`.

use std::fmt::Write as _;

use anyhow::{Result, bail};
use common::matrix::Family;
use serde::{Deserialize, Serialize};

use crate::{CUBLAS, CUBLAS_TF32};

pub mod lower;
pub mod plan;
pub mod records;

/// How far below its record a share may fall before it is measured again, and fails when the
/// second measurement is as low: now < (1 − 3%) × record.
pub const TOLERANCE: f64 = 0.03;

/// Whether a share `now` is more than [`TOLERANCE`] below `record`.
pub fn below(now: f64, record: f64) -> bool {
    now < (1.0 - TOLERANCE) * record
}

/// One lab at one shape on one family of inputs, beside its baseline in the same run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// The lab's crate, e.g. `step11_int8_crt`.
    pub lab: String,
    /// `MxNxK`, e.g. `1024x1024x4096`.
    pub shape: String,
    /// The family of inputs, as `--inputs` names it (`uniform`, `lognormal:2`, …).
    pub inputs: String,
    /// [`CUBLAS`] or [`CUBLAS_TF32`].
    pub baseline: String,
    /// The lab's rate over its baseline's, on the same inputs in the same run.
    pub share: f64,
    /// The lab's rate, GFLOP/s.
    pub gflops: f64,
    /// Whether the lab's result (and its baseline's) passed verification.
    pub passed: bool,
}

impl Entry {
    /// An entry from a run: the share rounded to four decimals and the rate to one, as the
    /// record keeps them.
    pub fn measured(
        lab: &str,
        (m, n, k): (usize, usize, usize),
        inputs: Family,
        baseline: &str,
        (gflops, baseline_gflops): (f64, f64),
        passed: bool,
    ) -> Entry {
        let round = |x: f64, places: i32| (x * 10f64.powi(places)).round() / 10f64.powi(places);
        Entry {
            lab: lab.to_owned(),
            shape: shape_key((m, n, k)),
            inputs: inputs.to_string(),
            baseline: baseline.to_owned(),
            share: round(gflops / baseline_gflops, 4),
            gflops: round(gflops, 1),
            passed,
        }
    }

    /// What matches an entry of the run with one of the record: the lab, the shape and the inputs.
    pub fn key(&self) -> (&str, &str, &str) {
        (&self.lab, &self.shape, &self.inputs)
    }

    /// `step11_int8_crt 4096×4096×4096 uniform`, as a line names the entry.
    fn named(&self) -> String {
        format!("{} {} {}", self.lab, self.shape.replace('x', "×"), self.inputs)
    }
}

/// `MxNxK`, the form a record gives a shape in.
pub fn shape_key((m, n, k): (usize, usize, usize)) -> String {
    format!("{m}x{n}x{k}")
}

/// A record's `MxNxK` read back; None unless three whole numbers of at least 1.
pub fn parse_shape(s: &str) -> Option<(usize, usize, usize)> {
    let d: Vec<usize> = s.split('x').map(|d| d.parse().ok().filter(|&d| d > 0)).collect::<Option<_>>()?;
    match d[..] {
        [m, n, k] => Some((m, n, k)),
        _ => None,
    }
}

/// A share as the gate prints it: `2.72×`, three significant digits below 1 (`0.122×`).
fn share(s: f64) -> String {
    match s {
        s if s >= 1.0 => format!("{s:.2}×"),
        s if s >= 0.1 => format!("{s:.3}×"),
        s => format!("{s:.4}×"),
    }
}

/// `now` against `record` in percent, signed, with a minus sign: `−19.1%`, `+0.4%`.
fn change(now: f64, record: f64) -> String {
    format!("{:+.1}%", 100.0 * (now / record - 1.0)).replace('-', "−")
}

/// The baseline as a sentence names it.
fn baseline_name(baseline: &str) -> &str {
    match baseline {
        CUBLAS => "cuBLAS SGEMM",
        CUBLAS_TF32 => "cuBLAS TF32",
        other => other,
    }
}

/// The record of one GPU model: how it was measured, and an entry per lab, shape and inputs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GateRecord {
    /// The device's name as the driver gives it, e.g. `NVIDIA H200`.
    pub device: String,
    /// The driver's release and its CUDA version.
    pub driver: String,
    pub nvrtc: String,
    /// `YYYY-MM-DD`.
    pub date: String,
    /// The command that measured it.
    pub command: String,
    /// Timed samples per measurement ([`plan::REPS`] when it was made).
    pub reps: usize,
    pub entries: Vec<Entry>,
}

impl GateRecord {
    /// A record from its JSON (`origin` names it in the error), each entry checked: a known
    /// baseline, a shape `MxNxK`, a family of inputs, a positive share, and no entry twice.
    pub fn parse(text: &str, origin: &str) -> Result<GateRecord> {
        let record: GateRecord = match serde_json::from_str(text) {
            Ok(r) => r,
            Err(e) => bail!("the gate record {origin} is not one this program reads: {e}"),
        };
        for (i, e) in record.entries.iter().enumerate() {
            let problem = if ![CUBLAS, CUBLAS_TF32].contains(&e.baseline.as_str()) {
                format!("its baseline '{}' is neither {CUBLAS} nor {CUBLAS_TF32}", e.baseline)
            } else if parse_shape(&e.shape).is_none() {
                format!("its shape '{}' is not MxNxK", e.shape)
            } else if let Err(why) = Family::parse(&e.inputs) {
                why
            } else if !(e.share.is_finite() && e.share > 0.0 && e.gflops.is_finite() && e.gflops >= 0.0) {
                format!("its share {} or rate {} is not a positive number", e.share, e.gflops)
            } else if record.entries[..i].iter().any(|o| o.key() == e.key()) {
                "it is in the record twice".to_owned()
            } else {
                continue;
            };
            bail!("the gate record {origin} has a bad entry ({}): {problem}", e.named());
        }
        Ok(record)
    }

    /// The record as committed: pretty JSON, an entry a few lines, ending in a newline.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a record is plain data") + "\n"
    }

    /// The record as a page: how it was measured and a row per entry.
    pub fn markdown(&self) -> String {
        let mut md = format!("# The gate's record on {}\n\n", self.device);
        let _ = writeln!(
            md,
            "Measured {} with driver {}, NVRTC {}, {} samples a measurement. Each lab's rate as a \
             share of its cuBLAS baseline (strict FP32 SGEMM, or TF32) on the same inputs in the \
             same run.\n\nCommand: {}\n",
            self.date, self.driver, self.nvrtc, self.reps, self.command
        );
        md += "| lab | shape | inputs | baseline | GFLOP/s | share | verdict |\n";
        md += "| --- | --- | --- | --- | ---: | ---: | --- |\n";
        for e in &self.entries {
            let verdict = if e.passed { "PASS" } else { "**FAIL**" };
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {:.0} | {} | {verdict} |",
                e.lab,
                e.shape.replace('x', "×"),
                e.inputs,
                if e.baseline == CUBLAS_TF32 { "TF32" } else { "SGEMM" },
                e.gflops,
                share(e.share)
            );
        }
        md
    }
}

/// The entries of a run more than 3% below their record (against the same baseline, both
/// verified): each is measured once more, with its baseline, before it can fail.
pub fn to_confirm(record: &GateRecord, run: &[Entry]) -> Vec<Entry> {
    run.iter()
        .filter(|now| {
            record.entries.iter().find(|r| r.key() == now.key()).is_some_and(|r| {
                r.baseline == now.baseline && r.passed && now.passed && below(now.share, r.share)
            })
        })
        .cloned()
        .collect()
}

/// What the gate found for one lab, shape and inputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Finding {
    /// Within 3% of its record, or above it.
    Held,
    /// More than 3% below at first, within 3% on the second measurement.
    HeldSecond,
    /// More than 3% below twice (or not measured the second time): fails.
    Slower,
    /// A result that failed verification, the lab's or its baseline's: fails.
    Wrong,
    /// Set against another baseline than the record's: fails.
    OtherBaseline,
    /// In the record, and not measured by this run: fails, so that coverage cannot shrink.
    NotMeasured,
    /// Measured, and not in the record: listed, not a failure.
    NotInRecord,
}

impl Finding {
    pub fn fails(self) -> bool {
        matches!(self, Finding::Slower | Finding::Wrong | Finding::OtherBaseline | Finding::NotMeasured)
    }
}

/// One line of the gate's table: the record's entry, the run's first and second measurements.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub record: Option<Entry>,
    pub first: Option<Entry>,
    pub second: Option<Entry>,
    pub finding: Finding,
}

impl Row {
    fn entry(&self) -> &Entry {
        let e = self.first.as_ref().or(self.record.as_ref());
        e.expect("a row has a record or a measurement")
    }

    /// The measurement that decides: the second where one was taken, else the first.
    fn now(&self) -> Option<&Entry> {
        self.second.as_ref().or(self.first.as_ref())
    }

    /// The one line a failure prints; None for a row that does not fail.
    pub fn failure(&self) -> Option<String> {
        let e = self.entry();
        let base = baseline_name(&e.baseline);
        let record = |r: &Option<Entry>| r.as_ref().map(|r| share(r.share));
        let why = match (self.finding, &self.record, &self.first) {
            (Finding::Slower, Some(r), Some(first)) => {
                let then = match &self.second {
                    Some(s) => format!("confirmed by a second run {}", share(s.share)),
                    None => "not measured a second time".to_owned(),
                };
                let (now, rec, ch) = (share(first.share), share(r.share), change(first.share, r.share));
                format!("{now} {base}, record {rec} ({ch}, {then})")
            }
            (Finding::Wrong, r, Some(_)) => {
                let now = share(self.now().map_or(f64::NAN, |n| n.share));
                let rec = record(r).map_or("not in the record".to_owned(), |r| format!("record {r}"));
                format!("a result failed verification ({now} {base}, {rec})")
            }
            (Finding::OtherBaseline, Some(r), Some(_)) => format!(
                "set against {base} now and against {} in the record (record it again)",
                baseline_name(&r.baseline)
            ),
            (Finding::NotMeasured, Some(r), _) => {
                format!("in the record ({} {base}) but not measured by this run", share(r.share))
            }
            _ => return None,
        };
        Some(format!("gate: FAIL {}: {why}", e.named()))
    }
}

/// What one gate run found, a row per entry of the run and of the record in its scope.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    pub rows: Vec<Row>,
}

/// The run's entries (`run`, and `second`: those [`to_confirm`] named, measured again) against
/// the record's whose lab is `in_scope` (every lab, or `--steps`'). In the run's order, then the
/// record's entries the run did not measure.
pub fn judge(
    record: &GateRecord,
    run: &[Entry],
    second: &[Entry],
    in_scope: impl Fn(&str) -> bool,
) -> Outcome {
    let find = |list: &[Entry], e: &Entry| list.iter().find(|x| x.key() == e.key()).cloned();
    let mut rows: Vec<Row> = run
        .iter()
        .map(|first| {
            let (rec, second) = (find(&record.entries, first), find(second, first));
            let finding = match &rec {
                _ if !first.passed || second.as_ref().is_some_and(|s| !s.passed) => Finding::Wrong,
                None => Finding::NotInRecord,
                Some(r) if r.baseline != first.baseline => Finding::OtherBaseline,
                Some(r) if !below(first.share, r.share) => Finding::Held,
                Some(r) if second.as_ref().is_some_and(|s| !below(s.share, r.share)) => Finding::HeldSecond,
                Some(_) => Finding::Slower,
            };
            Row { record: rec, first: Some(first.clone()), second, finding }
        })
        .collect();
    let unmeasured = record.entries.iter().filter(|r| in_scope(&r.lab) && find(run, r).is_none());
    rows.extend(unmeasured.map(|r| Row {
        record: Some(r.clone()),
        first: None,
        second: None,
        finding: Finding::NotMeasured,
    }));
    Outcome { rows }
}

impl Outcome {
    /// Whether the gate passes: no row fails.
    pub fn passed(&self) -> bool {
        !self.rows.iter().any(|r| r.finding.fails())
    }

    /// A line per failure.
    pub fn failures(&self) -> Vec<String> {
        self.rows.iter().filter_map(Row::failure).collect()
    }

    /// A line per entry measured and not in the record (not a failure).
    pub fn unrecorded(&self) -> Vec<String> {
        let rows = self.rows.iter().filter(|r| r.finding == Finding::NotInRecord);
        rows.map(|r| {
            let e = r.entry();
            format!(
                "gate: not in the record: {} ({} {})",
                e.named(),
                share(e.share),
                baseline_name(&e.baseline)
            )
        })
        .collect()
    }

    /// The table: each lab, shape and inputs, its record, the share now (the second
    /// measurement's where one was taken) and the change, and what the gate made of it.
    pub fn table(&self) -> String {
        let mut md = String::from("| lab | shape | inputs | record | now | change | gate |\n");
        md += "| --- | --- | --- | ---: | ---: | ---: | --- |\n";
        for r in &self.rows {
            let e = r.entry();
            let rec = r.record.as_ref().map(|r| r.share);
            let now = r.now().map(|n| n.share);
            let first = r.first.as_ref().map_or(String::new(), |f| format!(" (first {})", share(f.share)));
            let gate = match r.finding {
                Finding::Held => "held".to_owned(),
                Finding::HeldSecond => format!("held on a second run{first}"),
                Finding::Slower if r.second.is_some() => format!("**FAIL** slower twice{first}"),
                Finding::Slower => "**FAIL** slower".to_owned(),
                Finding::Wrong => "**FAIL** wrong result".to_owned(),
                Finding::OtherBaseline => "**FAIL** another baseline".to_owned(),
                Finding::NotMeasured => "**FAIL** not measured".to_owned(),
                Finding::NotInRecord => "not in the record".to_owned(),
            };
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} | {gate} |",
                e.lab,
                e.shape.replace('x', "×"),
                e.inputs,
                rec.map_or("–".to_owned(), share),
                now.map_or("–".to_owned(), share),
                rec.zip(now).map_or("–".to_owned(), |(rec, now)| change(now, rec)),
            );
        }
        md
    }

    /// `gate: N of M at or above their record (within 3%)`: M the record's entries in scope.
    pub fn summary(&self) -> String {
        let compared = self.rows.iter().filter(|r| r.record.is_some()).count();
        let held = self.rows.iter().filter(|r| matches!(r.finding, Finding::Held | Finding::HeldSecond));
        format!("gate: {} of {compared} at or above their record (within 3%)", held.count())
    }
}

#[cfg(test)]
mod tests;

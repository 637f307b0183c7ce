//! A record from several gate runs on one GPU: each entry at the lowest share any of them
//! measured. A single run of a lab whose baseline swings (cuBLAS TF32 at 4096³ and 8192³ moved by
//! 6–8% between two runs of one day on an H200) can set a record the next run misses by more than
//! the gate's 3% with nothing changed; the lowest of two or more runs is a record a run of the
//! same code meets, and a real loss still falls below it.

use anyhow::{Result, bail};

use super::GateRecord;

/// The record whose entries are the lowest of `runs`' (at least one, all of one GPU and of one
/// sampling): an entry in some runs only is kept as those measured it, and passes only where
/// every run that measured it passed.
pub fn lower_of(runs: &[GateRecord]) -> Result<GateRecord> {
    let Some(first) = runs.first() else { bail!("the lowest of no gate records is no record") };
    if let Some(other) = runs.iter().find(|r| r.device != first.device) {
        bail!(
            "gate records of the {} and of the {} do not combine: shares compare only on one GPU",
            first.device,
            other.device
        );
    }
    if let Some(other) = runs.iter().find(|r| r.reps != first.reps) {
        bail!("gate records of {} and of {} samples a measurement do not combine", first.reps, other.reps);
    }
    let mut lowest = first.clone();
    lowest.entries.clear();
    for run in runs {
        for e in &run.entries {
            let same = |o: &&mut super::Entry| o.key() == e.key() && o.baseline == e.baseline;
            match lowest.entries.iter_mut().find(same) {
                Some(kept) => {
                    let passed = kept.passed && e.passed;
                    if e.share < kept.share {
                        *kept = e.clone();
                    }
                    kept.passed = passed;
                }
                None => lowest.entries.push(e.clone()),
            }
        }
    }
    let distinct = |f: fn(&GateRecord) -> &str| {
        let mut all: Vec<&str> = runs.iter().map(f).collect();
        all.dedup();
        all.join("; ")
    };
    lowest.date = runs.iter().map(|r| r.date.as_str()).max().unwrap_or_default().to_owned();
    lowest.driver = distinct(|r| &r.driver);
    lowest.nvrtc = distinct(|r| &r.nvrtc);
    lowest.command = format!("the lowest share of {} gate runs: {}", runs.len(), distinct(|r| &r.command));
    Ok(lowest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::Entry;

    fn record(device: &str, shares: &[(&str, f64, bool)]) -> GateRecord {
        GateRecord {
            device: device.into(),
            driver: "580".into(),
            nvrtc: "13.0".into(),
            date: "2026-11-28".into(),
            command: "compare --gate --record".into(),
            reps: 30,
            entries: shares
                .iter()
                .map(|&(lab, share, passed)| Entry {
                    lab: lab.into(),
                    shape: "4096x4096x4096".into(),
                    inputs: "uniform".into(),
                    baseline: "cublas_tf32".into(),
                    share,
                    gflops: 1000.0 * share,
                    passed,
                })
                .collect(),
        }
    }

    #[test]
    fn each_entry_is_the_lowest_any_run_measured() {
        let a = record(
            "NVIDIA H200",
            &[("step08_wgmma_tma", 0.98, true), ("step12_persistent_clusters", 1.01, true)],
        );
        let b = record(
            "NVIDIA H200",
            &[("step08_wgmma_tma", 1.04, true), ("step12_persistent_clusters", 0.93, false)],
        );
        let c = record("NVIDIA H200", &[("step07_tf32_mma", 0.44, true)]);
        let low = lower_of(&[a, b, c]).unwrap();
        let got: Vec<(&str, f64, bool)> =
            low.entries.iter().map(|e| (e.lab.as_str(), e.share, e.passed)).collect();
        assert_eq!(
            got,
            [
                ("step08_wgmma_tma", 0.98, true),
                ("step12_persistent_clusters", 0.93, false),
                ("step07_tf32_mma", 0.44, true)
            ]
        );
        assert!(low.command.starts_with("the lowest share of 3 gate runs"), "{}", low.command);
        // What it writes reads back as a record.
        GateRecord::parse(&low.to_json(), "lowest").unwrap();
    }

    #[test]
    fn runs_of_two_gpus_or_two_samplings_do_not_combine() {
        let a = record("NVIDIA H200", &[("step08_wgmma_tma", 0.98, true)]);
        let b = record("NVIDIA H100 80GB HBM3", &[("step08_wgmma_tma", 0.98, true)]);
        assert!(lower_of(&[a.clone(), b]).unwrap_err().to_string().contains("only on one GPU"));
        let mut c = a.clone();
        c.reps = 20;
        assert!(lower_of(&[a, c]).unwrap_err().to_string().contains("samples a measurement"));
        assert!(lower_of(&[]).is_err());
    }
}

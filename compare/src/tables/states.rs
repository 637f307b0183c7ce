//! `compare states-table`: where each kernel's warps spend their clocks, as Nsight Compute samples
//! them on the GPU and as the time model's replay counts them, side by side (the book's appendix
//! "The time model" quotes it).
//!
//! Nsight Compute gives, for each warp state, the warps in it a cycle per issued instruction
//! (`smsp__average_warps_issue_stalled_STATE_per_issue_active.ratio`): their sum is the cycles
//! between two issues of a warp, and each state's share of the sum is the share of the warps'
//! time it takes. The replay counts each warp's clocks by state ([`GROUPS`] maps one to the
//! other). The table gives both shares for each group, the issue slots each uses, and the L2's
//! hit rate.

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde_json::Value;

use super::heldout::{blocks, csv_row};
use super::{Ordered, names, read_runs};

/// A group of warp states: its name, Nsight Compute's states in it, and the replay's.
pub struct StateGroup {
    pub name: &'static str,
    pub ncu: &'static [&'static str],
    pub model: &'static [&'static str],
    /// Whether the group is a wait (the shares the target holds to ±10 points).
    pub wait: bool,
}

/// Nsight Compute's warp states grouped as the replay tells them apart. Every state Nsight
/// Compute names on Hopper is in one group; the replay has nothing in the last. Where a PTX wait
/// lands is what the GPU's per-instruction samples show (`2026-11-29-nvidia-h200-model-states-sass.log`):
/// `wgmma.wait_group` becomes `WARPGROUP.DEPBAR`, sampled as a barrier, and a cluster's barrier
/// `UCGABAR_WAIT`, a barrier too; an mbarrier's phase check (`SYNCS.PHASECHK`) owes its result
/// on the long scoreboard, as a global load does.
pub const GROUPS: [StateGroup; 8] = [
    StateGroup { name: "issuing", ncu: &["selected"], model: &["issued"], wait: false },
    StateGroup { name: "held back", ncu: &["dispatch_stall"], model: &["dispatch"], wait: false },
    StateGroup { name: "ready", ncu: &["not_selected"], model: &["ready"], wait: false },
    StateGroup {
        name: "global memory and phases",
        ncu: &["long_scoreboard", "lg_throttle", "drain"],
        model: &["memory", "phases"],
        wait: true,
    },
    StateGroup {
        name: "shared memory",
        ncu: &["short_scoreboard", "mio_throttle"],
        model: &["shared"],
        wait: true,
    },
    StateGroup {
        name: "arithmetic",
        ncu: &["wait", "math_pipe_throttle", "gmma"],
        model: &["arithmetic"],
        wait: true,
    },
    StateGroup {
        name: "barriers and wgmma groups",
        ncu: &["barrier", "membar", "sleeping"],
        model: &["barrier", "tensor"],
        wait: true,
    },
    StateGroup {
        name: "not replayed",
        ncu: &["no_instruction", "branch_resolving", "imc_miss", "misc", "tex_throttle"],
        model: &[],
        wait: true,
    },
];

/// A wait group the GPU gives at least this share is one of a kernel's main waits (its largest
/// wait group always is).
pub const MAIN: f64 = 10.0;

/// How far, in points, a main wait's predicted share may lie from the GPU's.
pub const POINTS: f64 = 10.0;

/// One side's view of a kernel: each group's share of the warps' clocks (percent), the cycles
/// between two issues of a warp, the share of issue slots used (percent), the L2's hit rate
/// (percent), the 32-byte sectors the SMs moved through the L2, and the bytes read from DRAM.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct States {
    pub shares: [f64; GROUPS.len()],
    pub cycles_an_issue: f64,
    pub issue_slots: f64,
    pub l2_hit: Option<f64>,
    pub l2_sectors: Option<f64>,
    pub dram_read: Option<f64>,
}

impl States {
    fn from_parts(parts: [f64; GROUPS.len()], issue_slots: f64, l2_hit: Option<f64>) -> Option<States> {
        let total: f64 = parts.iter().sum();
        if total <= 0.0 || parts[0] <= 0.0 {
            return None;
        }
        Some(States {
            shares: parts.map(|p| 100.0 * p / total),
            cycles_an_issue: total / parts[0],
            issue_slots,
            l2_hit,
            ..States::default()
        })
    }
}

/// What the table reads.
pub struct StatesTableInputs {
    /// Nsight Compute's logs (`scripts/model-heldout.sh states`).
    pub ncu: Vec<PathBuf>,
    /// The predictions' records (`scripts/model-heldout.sh predict corpus`).
    pub predicted: Vec<PathBuf>,
    pub cases: Vec<(String, String)>,
    pub gpu: String,
}

/// Case -> the GPU's states, from logs of `== CASE` blocks of Nsight Compute's CSV.
pub fn ncu(paths: &[PathBuf]) -> Result<Ordered<States>> {
    let mut out = Ordered::default();
    for path in paths {
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("could not read {}: {e}", path.display()))?;
        for (case, lines) in blocks(&text) {
            let rows: Vec<Vec<String>> =
                lines.iter().filter(|l| l.starts_with('"')).map(|l| csv_row(l)).collect();
            if rows.len() < 3 {
                continue;
            }
            let (header, values) = (&rows[0], &rows[rows.len() - 1]);
            let got = |name: &str| {
                header
                    .iter()
                    .zip(values)
                    .find(|(h, _)| *h == name)
                    .and_then(|(_, v)| v.replace(',', "").parse::<f64>().ok())
            };
            let state =
                |s: &str| got(&format!("smsp__average_warps_issue_stalled_{s}_per_issue_active.ratio"));
            let parts = GROUPS.map(|g| g.ncu.iter().filter_map(|s| state(s)).fold(0.0, |sum, v| sum + v));
            let slots = got("smsp__issue_active.avg.pct_of_peak_sustained_active").unwrap_or(0.0);
            if let Some(mut s) = States::from_parts(parts, slots, got("lts__t_sector_hit_rate.pct")) {
                s.l2_sectors = got("lts__t_sectors_srcunit_tex.sum");
                s.dram_read = got("dram__bytes_read.sum");
                out.insert(&case, s);
            }
        }
    }
    Ok(out)
}

/// The replay's states of a report's prediction (none where no replay ran).
pub fn replayed(report: &Value) -> Option<States> {
    let replay = report.pointer("/predicted/prediction/replay").filter(|r| !r.is_null())?;
    let states = replay.get("states")?;
    // Records from before the replay told an mbarrier's phase from a wgmma group's wait keep
    // the phases (and a cluster's barrier) as `asynchronous`, and the wgmma groups in
    // `arithmetic`.
    let clocks = |k: &str| {
        let old = if k == "phases" { "asynchronous" } else { k };
        states.get(k).or_else(|| states.get(old)).and_then(Value::as_f64).unwrap_or(0.0)
    };
    let parts = GROUPS.map(|g| g.model.iter().fold(0.0, |sum, k| sum + clocks(k)));
    let slots = 100.0 * replay.get("issue_slots").and_then(Value::as_f64).unwrap_or(0.0);
    let miss = replay.get("l2_miss").and_then(Value::as_f64);
    let mut s = States::from_parts(parts, slots, miss.map(|m| 100.0 * (1.0 - m)))?;
    let p = report.pointer("/predicted/prediction")?;
    let sectors = |k: &str| p.get(k).and_then(Value::as_f64);
    let read = sectors("l2_read_sectors");
    s.l2_sectors = read.zip(sectors("l2_written_sectors")).map(|(r, w)| r + w);
    // The sectors it reads that miss, from DRAM.
    s.dram_read = read.zip(miss).map(|(r, m)| 32.0 * r * m);
    Some(s)
}

/// Case -> the replay's states, a later record's replacing an earlier one's.
pub fn predictions(paths: &[PathBuf], cases: &[(String, String)]) -> Result<Ordered<States>> {
    let mut out = Ordered::default();
    for path in paths {
        for (case, run) in read_runs(path, cases)?.iter() {
            if let Some(s) = run.report.as_ref().and_then(replayed) {
                out.insert(case, s);
            }
        }
    }
    Ok(out)
}

/// The largest distance, in points, between the GPU's and the replay's shares of the GPU's main
/// waits (each wait group it gives [`MAIN`]% or more, and its largest), and that group's name.
pub fn main_gap(gpu: &States, model: &States) -> (f64, &'static str) {
    let waits: Vec<usize> = (0..GROUPS.len()).filter(|&i| GROUPS[i].wait).collect();
    let largest = waits.iter().copied().max_by(|&a, &b| gpu.shares[a].total_cmp(&gpu.shares[b]));
    waits
        .iter()
        .copied()
        .filter(|&i| gpu.shares[i] >= MAIN || Some(i) == largest)
        .map(|i| ((gpu.shares[i] - model.shares[i]).abs(), GROUPS[i].name))
        .fold((0.0, "–"), |a, b| if b.0 > a.0 { b } else { a })
}

/// The table's lines.
pub fn table(inputs: &StatesTableInputs) -> Result<Vec<String>> {
    let gpu_states = ncu(&inputs.ncu)?;
    let model_states = predictions(&inputs.predicted, &inputs.cases)?;
    let gpu = &inputs.gpu;
    let heads: Vec<&str> = GROUPS.iter().map(|g| g.name).collect();
    let mut lines = vec![
        format!("# Where the warps' clocks go: Nsight Compute on the {gpu} beside the time model's replay"),
        String::new(),
        format!(
            "Nsight Compute: {}. Predictions: {}. Each cell: the {gpu}'s share of its warps' clocks / the replay's \
             (percent), for the groups of warp states the book's appendix \"The time model\" maps. Cycles an issue: \
             the warps' clocks over their issued instructions. Issue slots: the share of the schedulers' slots that \
             issued. Main waits: the wait groups the {gpu} gives {MAIN:.0}% or more, and its largest; gap: the largest \
             distance, in points, between the two shares of one of them. Written by `compare states-table`.",
            names(&inputs.ncu),
            names(&inputs.predicted)
        ),
        String::new(),
        format!(
            "| case | cycles an issue | {} | issue slots | L2 hit | L2 sectors, model ÷ {gpu} | DRAM read, model ÷ {gpu} | main-wait gap |",
            heads.join(" | ")
        ),
        format!(
            "| --- | ---: | {} | ---: | ---: | ---: | ---: | ---: |",
            vec!["---:"; GROUPS.len()].join(" | ")
        ),
    ];
    let mut gaps: Vec<(String, f64, &str)> = Vec::new();
    let mut slots: Vec<(String, f64)> = Vec::new();
    let mut sectors: Vec<(String, f64)> = Vec::new();
    let mut missing = Vec::new();
    for (case, g) in gpu_states.iter() {
        let Some(m) = model_states.get(case) else {
            missing.push(case.to_owned());
            continue;
        };
        let cells: Vec<String> =
            g.shares.iter().zip(&m.shares).map(|(a, b)| format!("{a:.0} / {b:.0}")).collect();
        let (gap, group) = main_gap(g, m);
        gaps.push((case.to_owned(), gap, group));
        if g.issue_slots > 0.0 {
            slots.push((case.to_owned(), m.issue_slots / g.issue_slots - 1.0));
        }
        let hit = |s: &States| s.l2_hit.map_or("–".to_owned(), |h| format!("{h:.0}"));
        let ratio = |m: Option<f64>, g: Option<f64>| match (m, g) {
            (Some(m), Some(g)) if g > 0.0 => format!("{:.2}", m / g),
            _ => "–".to_owned(),
        };
        if let (Some(ms), Some(gs)) = (m.l2_sectors, g.l2_sectors) {
            if gs > 0.0 {
                sectors.push((case.to_owned(), ms / gs - 1.0));
            }
        }
        lines.push(format!(
            "| `{case}` | {:.1} / {:.1} | {} | {:.0} / {:.0} | {} / {} | {} | {} | {gap:.0} ({group}) |",
            g.cycles_an_issue,
            m.cycles_an_issue,
            cells.join(" | "),
            g.issue_slots,
            m.issue_slots,
            hit(g),
            hit(m),
            ratio(m.l2_sectors, g.l2_sectors),
            ratio(m.dram_read, g.dram_read)
        ));
    }
    lines.extend([String::new(), "## Summary".to_owned(), String::new()]);
    for size in ["1024", "4096", ""] {
        let of_size = |case: &str| size.is_empty() || case.ends_with(&format!("--size {size}"));
        let gaps: Vec<f64> = gaps.iter().filter(|(c, _, _)| of_size(c)).map(|(_, g, _)| *g).collect();
        if gaps.is_empty() {
            continue;
        }
        let label = if size.is_empty() { "in all".to_owned() } else { format!("at {size}³") };
        let within = |p: f64| gaps.iter().filter(|g| **g <= p).count();
        let slots: Vec<f64> = slots.iter().filter(|(c, _)| of_size(c)).map(|(_, e)| *e).collect();
        let sectors: Vec<f64> = sectors.iter().filter(|(c, _)| of_size(c)).map(|(_, e)| *e).collect();
        lines.push(format!(
            "- {label}: main waits of {} of {} kernels within ±{POINTS:.0} points of the {gpu}'s shares, {} within ±5; \
             issue slots of {} of {} within ±10% of the {gpu}'s; L2 sectors of {} of {} within ±5%",
            within(POINTS),
            gaps.len(),
            within(5.0),
            slots.iter().filter(|e| e.abs() <= 0.10).count(),
            slots.len(),
            sectors.iter().filter(|e| e.abs() <= 0.05).count(),
            sectors.len()
        ));
    }
    if !missing.is_empty() {
        lines.push(format!("- profiled, with no replay in the predictions: {}", missing.len()));
    }
    gaps.sort_by(|a, b| b.1.total_cmp(&a.1));
    lines.extend([String::new(), "## The ten widest gaps".to_owned(), String::new()]);
    lines.push("| case | gap (points) | in |".to_owned());
    lines.push("| --- | ---: | --- |".to_owned());
    for (case, gap, group) in gaps.iter().take(10) {
        lines.push(format!("| `{case}` | {gap:.0} | {group} |"));
    }
    Ok(lines)
}

/// Writes the table to `out`, and prints its summary.
pub fn run(inputs: &StatesTableInputs, out: &Path) -> Result<()> {
    let lines = table(inputs)?;
    super::write(out, &lines)?;
    let from = lines.iter().position(|l| l == "## Summary").unwrap_or(0);
    println!("{}", lines[from..].join("\n"));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn states(shares: [f64; 8]) -> States {
        States { shares, cycles_an_issue: 1.0, issue_slots: 50.0, ..States::default() }
    }

    #[test]
    fn every_state_nsight_compute_names_on_hopper_is_in_one_group() {
        let hopper = [
            "barrier",
            "branch_resolving",
            "dispatch_stall",
            "drain",
            "gmma",
            "imc_miss",
            "lg_throttle",
            "long_scoreboard",
            "math_pipe_throttle",
            "membar",
            "mio_throttle",
            "misc",
            "no_instruction",
            "not_selected",
            "selected",
            "short_scoreboard",
            "sleeping",
            "tex_throttle",
            "wait",
        ];
        for s in hopper {
            assert_eq!(GROUPS.iter().filter(|g| g.ncu.contains(&s)).count(), 1, "{s}");
        }
        let grouped: usize = GROUPS.iter().map(|g| g.ncu.len()).sum();
        assert_eq!(grouped, hopper.len());
    }

    #[test]
    fn the_gap_is_taken_over_the_gpus_main_waits_only() {
        // The GPU: global memory 40%, arithmetic 12%, barriers 3%; the replay: 20%, 30%, 30%.
        let gpu = states([30.0, 5.0, 10.0, 40.0, 0.0, 12.0, 3.0, 0.0]);
        let model = states([10.0, 0.0, 10.0, 20.0, 0.0, 30.0, 30.0, 0.0]);
        // Global memory is 20 points off, arithmetic 18; the barriers' 27 is no main wait.
        assert_eq!(main_gap(&gpu, &model), (20.0, "global memory and phases"));
        // The largest wait counts even under MAIN.
        let quiet = states([90.0, 0.0, 5.0, 4.0, 1.0, 0.0, 0.0, 0.0]);
        let gap = main_gap(&quiet, &states([90.0, 0.0, 5.0, 0.0, 5.0, 0.0, 0.0, 0.0]));
        assert_eq!(gap.1, "global memory and phases");
    }

    #[test]
    fn nsight_computes_states_are_read_as_shares_of_their_sum() {
        let dir = std::env::temp_dir().join(format!("states-ncu-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("states.log");
        let stall = |s: &str| format!("\"smsp__average_warps_issue_stalled_{s}_per_issue_active.ratio\"");
        let header = format!(
            "\"Kernel Name\",{},{},{},{},\"smsp__issue_active.avg.pct_of_peak_sustained_active\"",
            stall("selected"),
            stall("long_scoreboard"),
            stall("lg_throttle"),
            stall("barrier")
        );
        let text = format!(
            "# a header\n== a --size 1024\n{header}\n\"\",\"inst\",\"inst\",\"inst\",\"inst\",\"%\"\n\
             \"matmul\",\"1\",\"2\",\"0.5\",\"0.5\",\"40\"\n== b --size 1024\n# no profile\n"
        );
        std::fs::write(&log, text).unwrap();
        let got = ncu(&[log]).unwrap();
        let a = got.get("a --size 1024").expect("a's states");
        assert_eq!(a.cycles_an_issue, 4.0);
        assert_eq!(a.shares[0], 25.0);
        assert_eq!(a.shares[3], 62.5);
        assert_eq!(a.shares[6], 12.5);
        assert_eq!(a.issue_slots, 40.0);
        assert!(got.get("b --size 1024").is_none());
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn the_replays_states_are_read_from_a_report() {
        let report: Value = serde_json::from_str(
            r#"{"predicted": {"prediction": {"replay": {"issue_slots": 0.25, "l2_miss": 0.2,
                "states": {"issued": 10, "dispatch": 2, "ready": 0, "memory": 3, "shared": 0,
                           "arithmetic": 2, "barrier": 1, "phases": 1, "tensor": 1}}}}}"#,
        )
        .unwrap();
        let s = replayed(&report).expect("a replay");
        assert_eq!(s.cycles_an_issue, 2.0);
        assert_eq!(s.shares[3], 20.0, "global memory and mbarriers' phases together");
        assert_eq!(s.shares[6], 10.0, "barriers and wgmma groups together");
        assert_eq!(s.issue_slots, 25.0);
        assert!((s.l2_hit.unwrap() - 80.0).abs() < 1e-9);
        let none: Value = serde_json::from_str(r#"{"predicted": {"prediction": {"replay": null}}}"#).unwrap();
        assert!(replayed(&none).is_none());
    }
}

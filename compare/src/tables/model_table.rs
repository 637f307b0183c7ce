//! `compare model-table`: the emulator's predicted times (`scripts/model-predictions.sh`'s
//! record) beside the times a GPU measured (`scripts/gpu-model-runs.sh judged`, and step 10's
//! column of a suite page), as a record.
//!
//! For each case: the measured median, the predicted time, the error (predicted over measured,
//! less one), the limit the model names. Then, for each lab with stages, whether the model orders
//! each stage after the one before as the GPU does: a change the GPU makes more than 3% faster
//! (slower) must be predicted faster (slower); within 3% either way is noise and passes.

use std::path::{Path, PathBuf};

use anyhow::{Result, anyhow, bail};

use super::{NOISE, Ordered, names, read_runs, sig, signed_pct};

/// What the table reads.
pub struct ModelTableInputs {
    pub predicted: Vec<PathBuf>,
    pub times: Vec<PathBuf>,
    /// A suite page (`compare --suite`), whose step 10 column gives that lab's times.
    pub suite: Option<PathBuf>,
    pub gpu: String,
}

/// A case's prediction: its time, the limit (or why there is none), the emulation's seconds and
/// whether it was scaled.
#[derive(Clone, Debug)]
struct ModelPrediction {
    ms: Option<f64>,
    limit: String,
    seconds: Option<f64>,
    how: &'static str,
}

/// The labs the model judges, (number, crate, what it needs), in `labs.tsv`'s order: every lab
/// the emulator runs but 03, whose one block holds 32³ at most.
fn modelled_labs() -> Vec<(String, String, String)> {
    include_str!("../../../labs.tsv")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| l.split('\t').collect::<Vec<_>>())
        .filter(|r| r.len() > 5 && r[5] == "yes" && r[0] != "03")
        .map(|r| (r[0].to_owned(), r[1].to_owned(), r[4].to_owned()))
        .collect()
}

/// `labs 02–06 and 10` for `numbers` among `order`: a run of three or more neighbours in
/// `order` as a range, the rest one by one.
pub fn label(numbers: &[&str], order: &[&str]) -> String {
    let at: Vec<usize> =
        numbers.iter().map(|n| order.iter().position(|o| o == n).unwrap_or(usize::MAX)).collect();
    let (mut runs, mut start) = (Vec::new(), 0);
    for i in 1..=at.len() {
        if i == at.len() || at[i] != at[i - 1].wrapping_add(1) {
            let part = &numbers[start..i];
            if part.len() >= 3 {
                runs.push(format!("{}–{}", part[0], part[part.len() - 1]));
            } else {
                runs.extend(part.iter().map(|p| p.to_string()));
            }
            start = i;
        }
    }
    match runs.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("labs {} and {last}", rest.join(", ")),
        _ => format!("labs {}", runs.join("")),
    }
}

/// Case -> the GPU's median ms: a later record's time replaces an earlier one's, and the suite
/// page's step 10 column comes last.
fn measured(inputs: &ModelTableInputs) -> Result<Ordered<f64>> {
    let mut times = Ordered::default();
    for path in &inputs.times {
        // A record kept before runs kept their JSON: the text of its reports.
        if !path.with_extension("jsonl").exists() {
            let text = std::fs::read_to_string(path)
                .map_err(|e| anyhow!("could not read {}: {e}", path.display()))?;
            for (case, ms) in logged_times(&text) {
                times.insert(&case, ms);
            }
            continue;
        }
        for (case, run) in read_runs(path, &[])?.iter() {
            if let Some(ms) = run.measured_ms() {
                times.insert(case, ms);
            }
        }
    }
    if let Some(page) = &inputs.suite {
        let text =
            std::fs::read_to_string(page).map_err(|e| anyhow!("could not read {}: {e}", page.display()))?;
        for (case, ms) in suite_step10(&text).map_err(|e| anyhow!("{}: {e}", page.display()))? {
            times.insert(&case, ms);
        }
    }
    Ok(times)
}

/// The times of a log of GPU runs without its JSON: each `== CASE` heading, then the report's
/// `time` line, `  time     0.355 ms median (…)`, in ms or µs.
fn logged_times(text: &str) -> Vec<(String, f64)> {
    let mut out = Vec::new();
    let mut case: Option<&str> = None;
    for line in text.lines() {
        if let Some(c) = line.strip_prefix("== ") {
            case = Some(c.trim());
        } else if let (Some(c), Some(rest)) = (case, line.strip_prefix("  time ")) {
            let mut words = rest.split_whitespace();
            let value = words.next().and_then(|v| v.parse::<f64>().ok());
            let scale = match words.next() {
                Some("ms") => Some(1.0),
                Some("µs") => Some(1e-3),
                _ => None,
            };
            if let (Some(v), Some(scale), Some("median")) = (value, scale, words.next()) {
                out.push((c.to_owned(), v * scale));
                case = None;
            }
        }
    }
    out
}

/// Step 10's times on a suite page: its table of shapes, a rate (GFLOP/s) a cell of column `10`.
fn suite_step10(text: &str) -> Result<Vec<(String, f64)>> {
    let mut cols: Option<Vec<String>> = None;
    let mut out = Vec::new();
    for line in text.lines() {
        let cells: Vec<String> =
            line.trim().trim_matches('|').split('|').map(|c| c.trim().to_owned()).collect();
        if cells[0] == "shape" {
            cols = Some(cells);
            continue;
        }
        let Some(cols) = &cols else { continue };
        let shape = &cells[0];
        let is_shape = !shape.is_empty() && shape.chars().all(|c| c.is_ascii_digit() || c == '×' || c == '³');
        if cells.len() != cols.len() || !is_shape {
            continue;
        }
        let Some(col) = cols.iter().position(|c| c == "10") else {
            bail!("the suite's table has no column 10")
        };
        let dims: Vec<usize> = match shape.strip_suffix('³') {
            Some(side) => vec![side.parse()?; 3],
            None => shape.split('×').map(str::parse).collect::<Result<_, _>>()?,
        };
        let rate = cells[col].split_whitespace().next().unwrap_or("–");
        if rate != "–" {
            let flops = 2.0 * dims.iter().map(|&d| d as f64).product::<f64>();
            let rate: f64 = rate.parse().map_err(|_| anyhow!("`{rate}` at {shape} is not a rate"))?;
            out.push((
                format!("step10_any_shape -m {} -n {} -k {}", dims[0], dims[1], dims[2]),
                flops / rate / 1e6,
            ));
        }
    }
    Ok(out)
}

/// Case -> its prediction: a later record's replaces an earlier one's, but a refusal never
/// replaces a prediction (a case a scaled run refused, run whole in another record).
fn predicted(paths: &[PathBuf]) -> Result<Ordered<ModelPrediction>> {
    let mut out: Ordered<ModelPrediction> = Ordered::default();
    for path in paths {
        for (case, run) in read_runs(path, &[])?.iter() {
            let p = match run.predicted_ms() {
                Some(ms) => ModelPrediction {
                    ms: Some(ms),
                    limit: run.limit().unwrap_or("").to_owned(),
                    seconds: run.wall_s,
                    how: if run.scaled() { "scaled" } else { "whole" },
                },
                None => ModelPrediction {
                    ms: None,
                    limit: run.refusal().chars().take(90).collect(),
                    seconds: None,
                    how: "",
                },
            };
            if p.ms.is_some() || !out.contains(case) {
                out.insert(case, p);
            }
        }
    }
    Ok(out)
}

/// The table's lines.
pub fn table(inputs: &ModelTableInputs) -> Result<Vec<String>> {
    let (meas, pred) = (measured(inputs)?, predicted(&inputs.predicted)?);
    let gpu = &inputs.gpu;
    // Case -> (predicted, measured, error), in the order of the predictions.
    let mut errors: Ordered<(f64, f64, f64)> = Ordered::default();
    let mut rows = Vec::new();
    for (case, p) in pred.iter() {
        let m = meas.get(case).copied();
        let emulation = |s: Option<f64>| s.map_or("–".to_owned(), |s| format!("{s:.1} s ({})", p.how));
        match (p.ms, m) {
            (None, m) => rows.push(format!(
                "| `{case}` | {} | – | – | {} | – |",
                m.map_or("–".to_owned(), |m| sig(m, 4)),
                p.limit
            )),
            (Some(pm), None) => rows.push(format!(
                "| `{case}` | – | {} | – | {} | {} |",
                sig(pm, 4),
                p.limit,
                emulation(p.seconds)
            )),
            (Some(pm), Some(m)) => {
                let err = pm / m - 1.0;
                errors.insert(case, (pm, m, err));
                rows.push(format!(
                    "| `{case}` | {} | {} | {} | {} | {} |",
                    sig(m, 4),
                    sig(pm, 4),
                    signed_pct(err),
                    p.limit,
                    emulation(p.seconds)
                ));
            }
        }
    }
    let mut lines = vec![
        format!("# The time model's predictions beside the {gpu}'s times"),
        String::new(),
        format!(
            "Predictions: {} (scripts/model-predictions.sh on the CPU). Times: {}{}. \
             Error: predicted over measured, less one. Written by `compare model-table`.",
            names(&inputs.predicted),
            names(&inputs.times),
            inputs.suite.as_ref().map_or(String::new(), |s| format!(
                " and step 10's column of {}",
                names(std::slice::from_ref(s))
            ))
        ),
        String::new(),
        format!("| case | {gpu} ms | predicted ms | error | the model's limit | emulation |"),
        "| --- | ---: | ---: | ---: | --- | --- |".to_owned(),
    ];
    lines.extend(rows);
    lines.extend([String::new(), "## Summary".to_owned(), String::new()]);
    lines.extend(summaries(&errors, &pred));
    lines.extend(stage_orders(&errors));
    Ok(lines)
}

/// The summary's lines: each group of labs at each size within ±25% and ±10%, step 10 over the
/// suite, and every case timed.
fn summaries(errors: &Ordered<(f64, f64, f64)>, pred: &Ordered<ModelPrediction>) -> Vec<String> {
    let lab_case = |t: &str, labs: &[&str], size: u32| {
        labs.contains(&t.split(' ').next().unwrap_or(""))
            && t.ends_with(&format!("--size {size}"))
            && !t.contains("--stage")
            && !t.contains("--kernel")
    };
    let mut lines = Vec::new();
    let modelled = modelled_labs();
    let order: Vec<&str> = modelled.iter().map(|(n, _, _)| n.as_str()).collect();
    // The labs of compute capability 7.5 (the SIMT cores' FP32), then those of the tensor cores.
    for simt in [true, false] {
        let group: Vec<&(String, String, String)> =
            modelled.iter().filter(|(_, _, needs)| (needs == "gpu") == simt).collect();
        let labs: Vec<&str> = group.iter().map(|(_, c, _)| c.as_str()).collect();
        let name = label(&group.iter().map(|(n, _, _)| n.as_str()).collect::<Vec<_>>(), &order);
        for size in [4096, 1024] {
            for bound in [0.25, 0.10] {
                let sel: Vec<(&str, f64)> =
                    errors.iter().filter(|(t, _)| lab_case(t, &labs, size)).map(|(t, e)| (t, e.2)).collect();
                let ok = sel.iter().filter(|(_, e)| e.abs() <= bound).count();
                let missing = pred.iter().filter(|(t, p)| lab_case(t, &labs, size) && p.ms.is_none()).count();
                let worst = sel.iter().fold(None::<(&str, f64)>, |w, &(t, e)| match w {
                    Some((_, we)) if e.abs() <= we.abs() => w,
                    _ => Some((t, e)),
                });
                let w =
                    worst.map_or(String::new(), |(t, e)| format!("; the worst {} (`{t}`)", signed_pct(e)));
                let m = if missing > 0 { format!("; {missing} without a prediction") } else { String::new() };
                lines.push(format!(
                    "- {name} at {size}³: {ok} of {} within ±{:.0}%{w}{m}",
                    sel.len() + missing,
                    100.0 * bound
                ));
            }
        }
    }
    let suite: Vec<f64> =
        errors.iter().filter(|(t, _)| t.starts_with("step10_any_shape -m")).map(|(_, e)| e.2).collect();
    if !suite.is_empty() {
        let ok = suite.iter().filter(|e| e.abs() <= 0.25).count();
        let worst = suite.iter().copied().fold(0.0f64, |w, e| if e.abs() > w.abs() { e } else { w });
        let unpredicted =
            pred.iter().filter(|(t, p)| t.starts_with("step10_any_shape -m") && p.ms.is_none()).count();
        lines.push(format!(
            "- step 10 over the suite: {ok} of {} shapes within ±25%; the worst {}; {unpredicted} more without a prediction",
            suite.len(),
            signed_pct(worst)
        ));
    }
    let timed: Vec<f64> = errors.iter().filter(|(t, _)| !t.contains("--kernel")).map(|(_, e)| e.2).collect();
    if !timed.is_empty() {
        let mean = timed.iter().map(|e| e.abs()).sum::<f64>() / timed.len() as f64;
        let count = |f: &dyn Fn(f64) -> bool| timed.iter().filter(|e| f(**e)).count();
        lines.push(format!(
            "- every lab, stage and shape timed: {} cases, mean |error| {:.1}%, {} within ±25%, {} too fast and {} too slow",
            timed.len(),
            100.0 * mean,
            count(&|e| e.abs() <= 0.25),
            count(&|e| e < 0.0),
            count(&|e| e > 0.0)
        ));
    }
    lines
}

/// The order of the stages: each stage beside the one before (the lab's own kernel last), the
/// GPU's change and the model's.
fn stage_orders(errors: &Ordered<(f64, f64, f64)>) -> Vec<String> {
    let mut lines = vec![
        String::new(),
        "## The order of the stages".to_owned(),
        String::new(),
        format!(
            "Each stage beside the one before (the lab's own kernel last): the GPU's change and the model's. A GPU change \
             within ±{:.0}% is noise: either prediction passes.",
            100.0 * NOISE
        ),
        String::new(),
        "| size | from | to | GPU | model | order |".to_owned(),
        "| --- | --- | --- | ---: | ---: | --- |".to_owned(),
    ];
    let mut staged: Vec<&str> =
        errors.keys().filter(|t| t.contains(" --stage ")).filter_map(|t| t.split(' ').next()).collect();
    staged.sort_unstable();
    staged.dedup();
    let (mut right, mut wrong) = (0, 0);
    let short = |t: &str| {
        t.split("--stage ").nth(1).and_then(|s| s.split(' ').next()).unwrap_or("the kernel").to_owned()
    };
    for size in [1024, 4096] {
        for lab in &staged {
            let mut chain: Vec<&str> = errors
                .keys()
                .filter(|t| t.starts_with(&format!("{lab} --stage")) && t.contains(&format!("--size {size}")))
                .collect();
            chain.sort_unstable();
            let own = format!("{lab} --size {size}");
            if errors.contains(&own) {
                chain.push(errors.keys().find(|k| *k == own).expect("just found"));
            }
            for pair in chain.windows(2) {
                let (a, b) = (errors.get(pair[0]).expect("a case"), errors.get(pair[1]).expect("a case"));
                let g = b.1 / a.1 - 1.0;
                let mo = b.0 / a.0 - 1.0;
                let ok = g.abs() <= NOISE || (g < 0.0) == (mo < 0.0);
                right += usize::from(ok);
                wrong += usize::from(!ok);
                lines.push(format!(
                    "| {size}³ | {} | {} | {} | {} | {} |",
                    short(pair[0]),
                    short(pair[1]),
                    signed_pct(g),
                    signed_pct(mo),
                    if ok { "right" } else { "WRONG" }
                ));
            }
        }
    }
    lines.extend([String::new(), format!("Stage orders: {right} right, {wrong} wrong.")]);
    lines
}

/// Writes the table to `out`, and prints its last lines.
pub fn run(inputs: &ModelTableInputs, out: &Path) -> Result<()> {
    let lines = table(inputs)?;
    super::write(out, &lines)?;
    println!("{}", lines[lines.len().saturating_sub(60)..].join("\n"));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labs_are_named_in_runs() {
        let order = ["02", "04", "05", "06", "07", "08", "09", "10", "11", "12"];
        assert_eq!(label(&["02", "04", "05", "06", "10"], &order), "labs 02–06 and 10");
        assert_eq!(label(&["07", "08"], &order), "labs 07 and 08");
        assert_eq!(label(&["08", "09", "11", "12"], &order), "labs 08, 09, 11 and 12");
        assert_eq!(label(&["07"], &order), "labs 07");
    }

    #[test]
    fn a_log_without_its_json_gives_its_reports_times() {
        let log = "# header\n== step02_gpu_naive --size 1024\n  time     0.355 ms median (min 0.354) · 234 samples\n  speed    6051 GFLOP/s\n== step07_tf32_mma --size 1024\n  time     36.2 µs median (min 36.0) · 200 samples\n== step99 --size 8\nerror: no time\n";
        let got = super::logged_times(log);
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(got[0], ("step02_gpu_naive --size 1024".to_owned(), 0.355));
        assert!((got[1].1 - 0.0362).abs() < 1e-12 && got[1].0 == "step07_tf32_mma --size 1024", "{got:?}");
    }

    #[test]
    fn the_suite_pages_step_10_column_gives_times() {
        let page = "| shape | 02 | 10 | SGEMM |\n| --- | ---: | ---: | ---: |\n| 1024³ | 6102 (15.9%) | 2147.483648 (89.3%) | 38328 |\n\
                    | 16×4096×4096 | 1 | – | 2 |\n";
        let got = suite_step10(page).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].0, "step10_any_shape -m 1024 -n 1024 -k 1024");
        assert!((got[0].1 - 1.0).abs() < 1e-9, "{}", got[0].1);
        assert!(
            suite_step10("| shape | 02 |\n| 1024³ | 1 |\n").unwrap_err().to_string().contains("no column 10")
        );
    }

    #[test]
    fn stages_are_ordered_as_the_gpu_orders_them() {
        use crate::tables::heldout::tests::{folder, line};
        let dir = folder("model");
        let (times, pred) = (dir.join("gpu.jsonl"), dir.join("cpu.jsonl"));
        let gpu = [
            line("step04_tiled --stage 1_a --size 1024", Some(4.0), None),
            line("step04_tiled --stage 2_b --size 1024", Some(2.0), None),
            line("step04_tiled --size 1024", Some(1.0), None),
            line("step02_gpu_naive --size 1024", Some(1.0), None),
        ];
        std::fs::write(&times, gpu.join("\n")).unwrap();
        let cpu = [
            line("step04_tiled --stage 1_a --size 1024 --emulate --scaled", None, Some((3.0, "L2 bytes"))),
            line("step04_tiled --stage 2_b --size 1024 --emulate --scaled", None, Some((4.0, "L2 bytes"))),
            line("step04_tiled --size 1024 --emulate --scaled", None, Some((1.01, "DRAM bytes"))),
            line("step02_gpu_naive --size 1024 --emulate", None, Some((1.5, "DRAM bytes"))),
        ];
        std::fs::write(&pred, cpu.join("\n")).unwrap();
        let inputs = ModelTableInputs {
            predicted: vec![pred],
            times: vec![times],
            suite: None,
            gpu: "H200".to_owned(),
        };
        let lines = table(&inputs).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        let has = |s: &str| lines.iter().any(|l| l == s);
        assert!(
            has("| `step04_tiled --stage 1_a --size 1024` | 4 | 3 | -25% | L2 bytes | 1.0 s (whole) |"),
            "{lines:#?}"
        );
        // The GPU halves the time from 1_a to 2_b, the model does not: wrong.
        assert!(has("| 1024³ | 1_a | 2_b | -50% | +33% | WRONG |"), "{lines:#?}");
        assert!(has("| 1024³ | 2_b | the kernel | -50% | -75% | right |"), "{lines:#?}");
        assert!(has("Stage orders: 1 right, 1 wrong."), "{lines:#?}");
        assert!(
            has(
                "- labs 02–06 and 10 at 1024³: 1 of 2 within ±25%; the worst +50% (`step02_gpu_naive --size 1024`)"
            ),
            "{lines:#?}"
        );
    }
}

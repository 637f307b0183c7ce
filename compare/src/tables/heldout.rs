//! `compare heldout-table`: the time model's predictions beside the GPU's times and Nsight
//! Compute's busiest unit, case by case (the book's appendix "The time model" quotes it).
//!
//! Nsight Compute's limit: the busiest of the units the model weighs, each as a share of its
//! peak over the launch: SM issue (issue slots, or the FMA pipe where that is busier), the tensor
//! pipe, L1/shared (l1tex throughput), L2 (lts throughput) and DRAM; where none reaches 60%,
//! latency.

use std::path::{Path, PathBuf};

use anyhow::Result;

use super::{Ordered, names, read_runs, sig, signed_pct};

/// Below this share of its peak, no unit is the limit: latency is.
pub const BUSY: f64 = 60.0;

/// The model's limits, as its prediction names them, and the unit each stands for.
const MODEL_UNIT: [(&str, &str); 7] = [
    ("instruction issue", "SM issue"),
    ("tensor-core issue", "tensor pipe"),
    ("shared-memory and L1 wavefronts", "L1/shared"),
    ("L2 bytes", "L2"),
    ("DRAM bytes", "DRAM"),
    ("latency at this occupancy", "latency"),
    ("the launch itself", "latency"),
];

/// Nsight Compute's units and the counters that measure each (the busiest of them counts).
const NCU_UNITS: [(&str, &[&str]); 5] = [
    (
        "SM issue",
        &[
            "sm__issue_active.avg.pct_of_peak_sustained_active",
            "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
        ],
    ),
    ("tensor pipe", &["sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"]),
    ("L1/shared", &["l1tex__throughput.avg.pct_of_peak_sustained_active"]),
    ("L2", &["lts__throughput.avg.pct_of_peak_sustained_elapsed"]),
    ("DRAM", &["gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"]),
];

/// The unit a limit of the model's stands for (the limit itself where it is none of them).
pub fn model_unit(limit: &str) -> &str {
    MODEL_UNIT.iter().find(|(l, _)| *l == limit).map_or(limit, |(_, u)| u)
}

/// What the table reads, and how it names the GPU.
pub struct HeldoutTableInputs {
    pub times: Vec<PathBuf>,
    pub ncu: Vec<PathBuf>,
    pub predicted: Vec<PathBuf>,
    pub cases: Vec<(String, String)>,
    pub gpu: String,
    pub title: Option<String>,
}

/// Case -> the GPU's median ms: the first record that timed a case gives its time.
pub fn times(paths: &[PathBuf], cases: &[(String, String)]) -> Result<Ordered<f64>> {
    let mut out = Ordered::default();
    for path in paths {
        for (case, run) in read_runs(path, cases)?.iter() {
            if let Some(ms) = run.measured_ms().filter(|_| !out.contains(case)) {
                out.insert(case, ms);
            }
        }
    }
    Ok(out)
}

/// Case -> (predicted ms, the limit) or (None, why not): a later record's prediction replaces
/// an earlier one's, and a refusal never replaces a prediction.
pub fn predictions(paths: &[PathBuf], cases: &[(String, String)]) -> Result<Ordered<(Option<f64>, String)>> {
    let mut out: Ordered<(Option<f64>, String)> = Ordered::default();
    for path in paths {
        for (case, run) in read_runs(path, cases)?.iter() {
            match run.predicted_ms() {
                Some(ms) => out.insert(case, (Some(ms), run.limit().unwrap_or("").to_owned())),
                None if out.get(case).is_none_or(|p| p.0.is_none()) => {
                    out.insert(case, (None, run.refusal()))
                }
                None => {}
            }
        }
    }
    Ok(out)
}

/// Nsight Compute's verdict on a case: the busiest unit (or latency), its share of its peak.
#[derive(Clone, Debug, PartialEq)]
pub struct Busiest {
    pub unit: &'static str,
    pub pct: f64,
}

/// Case -> Nsight Compute's busiest unit, from logs of `== CASE` blocks of its CSV (a header
/// line, a units line, a line of values: `scripts/model-heldout.sh ncu`).
pub fn ncu(paths: &[PathBuf]) -> Result<Ordered<Busiest>> {
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
                    .filter(|(h, _)| *h == name)
                    .filter_map(|(_, v)| v.replace(',', "").parse::<f64>().ok())
                    .next_back()
                    .unwrap_or(0.0)
            };
            let mut busiest = Busiest { unit: NCU_UNITS[0].0, pct: f64::NEG_INFINITY };
            for (unit, counters) in NCU_UNITS {
                let pct = counters.iter().map(|c| got(c)).fold(f64::NEG_INFINITY, f64::max);
                if pct > busiest.pct {
                    busiest = Busiest { unit, pct };
                }
            }
            if busiest.pct < BUSY {
                busiest.unit = "latency";
            }
            out.insert(&case, busiest);
        }
    }
    Ok(out)
}

/// (case, its lines) for each `== CASE` block of a log.
pub(super) fn blocks(text: &str) -> Vec<(String, Vec<&str>)> {
    let mut out: Vec<(String, Vec<&str>)> = Vec::new();
    for line in text.lines() {
        if let Some(case) = line.strip_prefix("== ") {
            out.push((case.trim().to_owned(), Vec::new()));
        } else if let Some((_, lines)) = out.last_mut() {
            lines.push(line);
        }
    }
    out
}

/// The fields of one CSV line: commas between fields, a field in double quotes where it holds
/// commas, a doubled quote for a quote.
pub(super) fn csv_row(line: &str) -> Vec<String> {
    let (mut fields, mut field, mut quoted) = (Vec::new(), String::new(), false);
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => fields.push(std::mem::take(&mut field)),
            _ => field.push(c),
        }
    }
    fields.push(field);
    fields
}

/// The table's lines.
pub fn table(inputs: &HeldoutTableInputs) -> Result<Vec<String>> {
    let measured = times(&inputs.times, &inputs.cases)?;
    let profiled = ncu(&inputs.ncu)?;
    let predicted = predictions(&inputs.predicted, &inputs.cases)?;
    let gpu = &inputs.gpu;
    let (mut rows, mut errs, mut agree, mut compared) = (Vec::new(), Vec::new(), 0, 0);
    // Every case timed or predicted: a timed case without a prediction is a refusal.
    let cases: Vec<&str> =
        predicted.keys().chain(measured.keys().filter(|c| !predicted.contains(c))).collect();
    let mut refused = 0;
    for case in &cases {
        let (p, limit) =
            predicted.get(case).cloned().unwrap_or((None, "no prediction in the logs".to_owned()));
        let m = measured.get(case).copied();
        let n = profiled.get(case);
        let ncu_cell = n.map_or("–".to_owned(), |n| format!("{} ({:.0}%)", n.unit, n.pct));
        let m_cell = m.map_or("–".to_owned(), |m| sig(m, 4));
        let Some(p) = p else {
            refused += 1;
            let why: String = limit.chars().take(100).collect();
            rows.push(format!("| `{case}` | {m_cell} | – | – | refused: {why} | {ncu_cell} | – |"));
            continue;
        };
        let unit = model_unit(&limit);
        let same = match n {
            Some(n) => {
                compared += 1;
                agree += usize::from(n.unit == unit);
                if n.unit == unit { "yes" } else { "no" }
            }
            None => "–",
        };
        let Some(m) = m else {
            rows.push(format!("| `{case}` | – | {} | – | {unit} | {ncu_cell} | {same} |", sig(p, 4)));
            continue;
        };
        let e = p / m - 1.0;
        errs.push((case.to_string(), e));
        rows.push(format!(
            "| `{case}` | {m_cell} | {} | {} | {unit} | {ncu_cell} | {same} |",
            sig(p, 4),
            signed_pct(e)
        ));
    }
    let title = inputs.title.clone().unwrap_or_else(|| format!("The time model beside the {gpu}"));
    let ncu_names = if inputs.ncu.is_empty() { "none".to_owned() } else { names(&inputs.ncu) };
    let mut lines = vec![
        format!("# {title}"),
        String::new(),
        format!(
            "Times: {}. Predictions: {}. Nsight Compute: {ncu_names}. Error: predicted over measured, less one. \
             Nsight Compute's limit: the busiest of SM issue, the tensor pipe, L1/shared, L2 and DRAM as a share of its \
             peak, or latency where none reaches {BUSY:.0}%. Written by `compare heldout-table`.",
            names(&inputs.times),
            names(&inputs.predicted)
        ),
        String::new(),
        format!("| case | {gpu} ms | predicted ms | error | the model's limit | Nsight Compute's | same |"),
        "| --- | ---: | ---: | ---: | --- | --- | --- |".to_owned(),
    ];
    lines.extend(rows);
    lines.extend([String::new(), "## Summary".to_owned(), String::new()]);
    for size in ["256", "1024", "4096", ""] {
        let sel: Vec<f64> = errs
            .iter()
            .filter(|(c, _)| size.is_empty() || c.ends_with(&format!("--size {size}")))
            .map(|(_, e)| *e)
            .collect();
        if sel.is_empty() {
            continue;
        }
        let label = if size.is_empty() { "in all".to_owned() } else { format!("at {size}³") };
        lines.push(format!("- {label}: {}", summary(&sel)));
    }
    if refused > 0 {
        lines.push(format!("- refused: {refused}"));
    }
    if compared > 0 {
        lines.push(format!(
            "- the limit named: the model and Nsight Compute agree in {agree} of {compared} cases ({:.0}%)",
            100.0 * agree as f64 / compared as f64
        ));
    }
    Ok(lines)
}

/// The errors' count, mean size, worst, and how many lie within ±25% and ±10%, and on each side.
pub fn summary(errors: &[f64]) -> String {
    let mean = errors.iter().map(|e| e.abs()).sum::<f64>() / errors.len() as f64;
    // The first of the largest, as the table has always named it.
    let worst = errors.iter().copied().fold(0.0f64, |w, e| if e.abs() > w.abs() { e } else { w });
    let count = |f: &dyn Fn(f64) -> bool| errors.iter().filter(|e| f(**e)).count();
    format!(
        "{} cases, mean |error| {:.1}%, worst {}, {} within ±25%, {} within ±10%, {} too fast and {} too slow",
        errors.len(),
        100.0 * mean,
        signed_pct(worst),
        count(&|e| e.abs() <= 0.25),
        count(&|e| e.abs() <= 0.10),
        count(&|e| e < 0.0),
        count(&|e| e > 0.0)
    )
}

/// Writes the table to `out`, and prints its summary.
pub fn run(inputs: &HeldoutTableInputs, out: &Path) -> Result<()> {
    let lines = table(inputs)?;
    super::write(out, &lines)?;
    let from = lines.len().saturating_sub(8);
    println!("{}", lines[from..].join("\n"));
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn nsight_computes_busiest_unit_or_latency() {
        let dir = std::env::temp_dir().join(format!("heldout-ncu-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("ncu.log");
        let header = r#""Kernel Name","sm__issue_active.avg.pct_of_peak_sustained_active","sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active","lts__throughput.avg.pct_of_peak_sustained_elapsed""#;
        let units = r#""","%","%","%""#;
        let text = format!(
            "# a header\n== a --size 1024\n{header}\n{units}\n\"matmul\",\"40\",\"71.5\",\"65\"\n\
             == b --size 1024\n{header}\n{units}\n\"matmul\",\"10\",\"20\",\"1,030\"\n\
             == c --size 1024\n{header}\n{units}\n\"matmul\",\"10\",\"20\",\"30\"\n== d --size 1024\nerror: no kernel\n"
        );
        std::fs::write(&log, text).unwrap();
        let got = ncu(&[log]).unwrap();
        assert_eq!(got.get("a --size 1024"), Some(&Busiest { unit: "SM issue", pct: 71.5 }));
        assert_eq!(got.get("b --size 1024"), Some(&Busiest { unit: "L2", pct: 1030.0 }));
        assert_eq!(got.get("c --size 1024"), Some(&Busiest { unit: "latency", pct: 30.0 }));
        assert!(!got.contains("d --size 1024"), "a block without counters has no verdict");
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(csv_row(r#""a,b","say ""hi""",3"#), ["a,b", "say \"hi\"", "3"]);
    }

    #[test]
    fn the_summary_counts_each_side() {
        let s = summary(&[0.05, -0.2, 0.5, -0.5]);
        assert_eq!(
            s,
            "4 cases, mean |error| 31.2%, worst +50%, 2 within ±25%, 1 within ±10%, 2 too fast and 2 too slow"
        );
        assert_eq!(model_unit("L2 bytes"), "L2");
        assert_eq!(model_unit("something new"), "something new");
    }

    /// A folder of its own for a test's records.
    pub(crate) fn folder(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("tables-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// A report's JSON: timed (`ms` the median) or predicted (`ms` the predicted time).
    pub(crate) fn line(command: &str, timed: Option<f64>, predicted: Option<(f64, &str)>) -> String {
        let time = match timed {
            Some(ms) => format!(r#"{{"median_ms":{ms},"samples":30}}"#),
            None => r#"{"median_ms":0.0,"samples":0}"#.to_owned(),
        };
        let pred = predicted.map_or("null".to_owned(), |(ms, limit)| {
            format!(r#"{{"gpu":"H200","seconds":{{"H200":{}}},"limit":"{limit}"}}"#, ms / 1e3)
        });
        format!(
            r#"{{"command":"{command}","exit":0,"wall_s":1.0,"report":{{"schema":3,"time":{time},"predicted":{pred}}},"error":null}}"#
        )
    }

    #[test]
    fn the_table_names_runs_by_their_case_and_counts_refusals() {
        let dir = folder("heldout");
        let (times, pred) = (dir.join("gpu.jsonl"), dir.join("cpu.log"));
        let gpu = [
            line("step02_gpu_naive --size 1024 --param BLOCK=32", Some(2.0), None),
            line("step04_tiled --size 1024", Some(1.0), None),
            line("step04_tiled --size 1024", Some(4.0), None),
            line("lonely --size 1024", Some(3.0), None),
        ];
        std::fs::write(&times, gpu.join("\n")).unwrap();
        let cpu = [
            line("step02_gpu_naive --size 1024 --param BLOCK=32 --emulate --scaled --gpu H200", None, Some((2.5, "L2 bytes"))),
            r#"{"command":"step04_tiled --size 1024 --emulate --scaled --gpu H200","exit":1,"wall_s":0.5,"report":null,"error":"scaling would guess"}"#.to_owned(),
            line("step04_tiled --size 1024 --emulate --no-verify --gpu H200", None, Some((3.0, "DRAM bytes"))),
            r#"{"command":"step05_thread_tile --size 1024 --emulate","exit":1,"wall_s":0.5,"report":null,"error":"too big"}"#.to_owned(),
        ];
        std::fs::write(dir.join("cpu.jsonl"), cpu.join("\n")).unwrap();
        // A later record's refusal of a case predicted before does not replace the prediction.
        let later = dir.join("later.jsonl");
        let refused = r#"{"command":"step02_gpu_naive --size 1024 --param BLOCK=32 --emulate","exit":1,"wall_s":0.5,"report":null,"error":"no"}"#;
        std::fs::write(&later, refused).unwrap();
        let inputs = HeldoutTableInputs {
            times: vec![times],
            ncu: vec![],
            predicted: vec![pred, later],
            cases: super::super::parse_cases("small step02_gpu_naive --param BLOCK=32\nplain step04_tiled\n"),
            gpu: "H200".to_owned(),
            title: None,
        };
        let lines = table(&inputs).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        let rows: Vec<&str> = lines.iter().filter(|l| l.starts_with("| `")).map(String::as_str).collect();
        assert_eq!(
            rows,
            [
                "| `small --size 1024` | 2 | 2.5 | +25% | L2 | – | – |",
                // The whole emulation after the scaled run's refusal; the later timing of a case.
                "| `plain --size 1024` | 4 | 3 | -25% | DRAM | – | – |",
                "| `step05_thread_tile --size 1024` | – | – | – | refused: too big | – | – |",
                "| `lonely --size 1024` | 3 | – | – | refused: no prediction in the logs | – | – |",
            ]
        );
        assert_eq!(lines[0], "# The time model beside the H200");
        assert!(lines.contains(&"- refused: 2".to_owned()), "{lines:#?}");
        assert!(
            lines.iter().any(|l| l.starts_with("- at 1024³: 2 cases, mean |error| 25.0%, worst +25%")),
            "{lines:#?}"
        );
    }

    #[test]
    fn a_record_that_is_missing_or_wrong_is_named() {
        let dir = folder("heldout-missing");
        let inputs = |times: PathBuf| HeldoutTableInputs {
            times: vec![times],
            ncu: vec![],
            predicted: vec![],
            cases: vec![],
            gpu: "H100".to_owned(),
            title: None,
        };
        let e = format!("{:#}", table(&inputs(dir.join("none.log"))).unwrap_err());
        assert!(e.starts_with("could not read ") && e.contains("none.jsonl: No such file"), "{e}");
        std::fs::write(dir.join("bad.jsonl"), "{\"command\":\"a\"}\n{\"exit\":0}\n").unwrap();
        let e = format!("{:#}", table(&inputs(dir.join("bad.jsonl"))).unwrap_err());
        assert!(e.ends_with("bad.jsonl: line 2 has no command"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

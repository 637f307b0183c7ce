//! The time model's tables, written as records from the JSON the runs keep (`NAME.jsonl` beside
//! `NAME.log`, a line a run: `{"command", "exit", "wall_s", "report", "error"}`, which a program
//! writes with `--record`): the predictions beside the GPU's times (`compare model-table`), the
//! held-out set's (`compare heldout-table`) and the chapters' comparisons (`compare
//! lessons-table`).
//!
//! A run is known by its case: its command without the flags that say how it ran rather than
//! what (`--emulate`, `--scaled`, `--no-verify`, `--gpu NAME`), and where the command is one of
//! the named cases of `ptx_emulator/heldout/` (`NAME STEP ARGUMENTS…`, run as `STEP --size S
//! ARGUMENTS…`), by that name, `NAME --size S`. A later line of a case replaces an earlier one.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::{Result, anyhow, bail};
use serde_json::Value;

pub mod fingerprint;
pub mod heldout;
pub mod lessons;
pub mod model_table;
pub mod states;

/// The versions of the report's JSON the tables read (`common::emit::SCHEMA` and those before
/// it): schema 3 renamed the replay's busy shares, which the tables do not read; schema 4 named
/// the prediction's limit its bottleneck.
pub const SCHEMAS: [u64; 4] = [1, 2, 3, 4];

/// A GPU run's change of less than this either way is noise: it has no side.
pub const NOISE: f64 = 0.03;

/// Entries in the order they were first added; adding one again replaces its value in place.
#[derive(Clone, Debug)]
pub struct Ordered<T> {
    keys: Vec<String>,
    values: HashMap<String, T>,
}

impl<T> Default for Ordered<T> {
    fn default() -> Self {
        Ordered { keys: Vec::new(), values: HashMap::new() }
    }
}

impl<T> Ordered<T> {
    pub fn insert(&mut self, key: &str, value: T) {
        if self.values.insert(key.to_owned(), value).is_none() {
            self.keys.push(key.to_owned());
        }
    }
    pub fn get(&self, key: &str) -> Option<&T> {
        self.values.get(key)
    }
    pub fn contains(&self, key: &str) -> bool {
        self.values.contains_key(key)
    }
    pub fn iter(&self) -> impl Iterator<Item = (&str, &T)> {
        self.keys.iter().map(|k| (k.as_str(), &self.values[k]))
    }
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.keys.iter().map(String::as_str)
    }
}

/// One line of a record.
#[derive(Clone, Debug)]
pub struct RecordedRun {
    pub exit: Option<i64>,
    pub wall_s: Option<f64>,
    pub report: Option<Value>,
    pub error: Option<String>,
}

impl RecordedRun {
    /// The predicted time of the launch in milliseconds on the GPU the run predicted for. Schema
    /// 1 kept the H100's alone, as `h100_seconds`; from schema 2 on, `seconds` holds every
    /// profile's by name and `gpu` names the one asked for.
    pub fn predicted_ms(&self) -> Option<f64> {
        let p = self.report.as_ref()?.get("predicted").filter(|p| !p.is_null())?;
        let seconds = match p.get("seconds") {
            Some(by_gpu) => by_gpu.get(p.get("gpu")?.as_str()?)?.as_f64()?,
            None => p.get("h100_seconds")?.as_f64()?,
        };
        Some(seconds * 1e3)
    }

    /// The limit the prediction names (`predicted.bottleneck`, `predicted.limit` before schema 4).
    pub fn limit(&self) -> Option<&str> {
        let p = self.report.as_ref()?.get("predicted")?;
        p.get("bottleneck").or_else(|| p.get("limit"))?.as_str()
    }

    /// The median time of a timed run in milliseconds.
    pub fn measured_ms(&self) -> Option<f64> {
        let t = self.report.as_ref()?.get("time")?;
        (t.get("samples")?.as_u64()? > 0).then(|| t.get("median_ms")?.as_f64()).flatten()
    }

    /// Whether the emulation ran a few blocks and multiplied their counts out.
    pub fn scaled(&self) -> bool {
        let r = self.report.as_ref();
        let of = r.and_then(|r| r.pointer("/device/emulated/traffic/scaled_of")).and_then(Value::as_u64);
        of.is_some_and(|n| n > 0)
    }

    /// Why the run has no prediction: its error, or "no prediction".
    pub fn refusal(&self) -> String {
        self.error.clone().filter(|e| !e.is_empty()).unwrap_or_else(|| "no prediction".to_owned())
    }
}

/// The named cases of a file of cases (`ptx_emulator/heldout/cases.txt`, `lessons.txt`).
pub fn read_cases(path: &Path) -> Result<Vec<(String, String)>> {
    let text =
        std::fs::read_to_string(path).map_err(|e| anyhow!("could not read {}: {e}", path.display()))?;
    Ok(parse_cases(&text))
}

/// (name, `STEP ARGUMENTS…`) for each case of a file of cases.
pub fn parse_cases(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            let (name, step) = (words.next()?, words.next()?);
            let args: Vec<&str> = words.collect();
            Some((name.to_owned(), std::iter::once(step).chain(args).collect::<Vec<_>>().join(" ")))
        })
        .collect()
}

/// The cases a command stands for: each named case it runs (`STEP ARGUMENTS…` with `--size S`
/// among them is `NAME --size S`), or where it runs none, the command without the flags of how
/// it ran.
pub fn cases_of(command: &str, named: &[(String, String)]) -> Vec<String> {
    let mut words = command.split_whitespace();
    let mut kept: Vec<&str> = Vec::new();
    while let Some(w) = words.next() {
        match w {
            "--emulate" | "--scaled" | "--no-verify" => {}
            "--gpu" => {
                words.next();
            }
            _ => kept.push(w),
        }
    }
    // `--size S` anywhere: the case is the rest, as its file gives it.
    if let Some(at) = kept.iter().position(|w| *w == "--size").filter(|&at| at + 1 < kept.len()) {
        let size = kept[at + 1];
        let rest: Vec<&str> =
            kept.iter().enumerate().filter(|(i, _)| *i != at && *i != at + 1).map(|(_, w)| *w).collect();
        let run = rest.join(" ");
        // A case's own line may hold a flag of how it runs (an exercise's --no-verify).
        let how =
            |c: &str| c.split_whitespace().filter(|w| *w != "--no-verify").collect::<Vec<_>>().join(" ");
        let names: Vec<String> = named
            .iter()
            .filter(|(_, c)| how(c) == run)
            .map(|(name, _)| format!("{name} --size {size}"))
            .collect();
        if !names.is_empty() {
            return names;
        }
    }
    vec![kept.join(" ")]
}

/// The runs of the record at `path` (`NAME.jsonl`, or `NAME.log` with its `NAME.jsonl` beside
/// it), by case, a later line of a case replacing an earlier one.
pub fn read_runs(path: &Path, named: &[(String, String)]) -> Result<Ordered<RecordedRun>> {
    let jsonl = path.with_extension("jsonl");
    let text =
        std::fs::read_to_string(&jsonl).map_err(|e| anyhow!("could not read {}: {e}", jsonl.display()))?;
    let mut out = Ordered::default();
    for (command, run) in parse_runs(&text).map_err(|e| anyhow!("{}: {e}", jsonl.display()))? {
        for case in cases_of(&command, named) {
            out.insert(&case, run.clone());
        }
    }
    Ok(out)
}

/// (command, run) for each line of a record's JSON; an error names the line that is not one.
pub fn parse_runs(text: &str) -> Result<Vec<(String, RecordedRun)>> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let at = n + 1;
        let v: Value = serde_json::from_str(line).map_err(|e| anyhow!("line {at} is not JSON: {e}"))?;
        let Some(command) = v.get("command").and_then(Value::as_str) else {
            bail!("line {at} has no command");
        };
        let report = v.get("report").filter(|r| !r.is_null()).cloned();
        if let Some(r) = &report {
            let schema = r.get("schema").and_then(Value::as_u64);
            if !schema.is_some_and(|s| SCHEMAS.contains(&s)) {
                bail!("line {at} holds a report of schema {schema:?}, and the tables read {SCHEMAS:?}");
            }
        }
        let run = RecordedRun {
            exit: v.get("exit").and_then(Value::as_i64),
            wall_s: v.get("wall_s").and_then(Value::as_f64),
            report,
            error: v.get("error").and_then(Value::as_str).map(str::to_owned),
        };
        out.push((command.to_owned(), run));
    }
    Ok(out)
}

/// `x` as C's `%.Ng` writes it: N significant digits, trailing zeros dropped, in scientific
/// notation below 10⁻⁴ or from 10ᴺ on.
pub fn sig(x: f64, n: usize) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let e = format!("{:.*e}", n - 1, x);
    let (mantissa, exp) = e.split_once('e').expect("Rust writes an exponent");
    let exp: i32 = exp.parse().expect("an integer exponent");
    let trim = |s: &str| {
        if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_owned() } else { s.to_owned() }
    };
    if exp < -4 || exp >= n as i32 {
        format!("{}e{}{:02}", trim(mantissa), if exp < 0 { '-' } else { '+' }, exp.abs())
    } else {
        trim(&format!("{:.*}", (n as i32 - 1 - exp) as usize, x))
    }
}

/// A share in percent with its sign and no decimals (`+13%`).
pub fn signed_pct(fraction: f64) -> String {
    format!("{:+.0}%", 100.0 * fraction)
}

/// The file names of `paths`, each in backticks, comma-separated.
pub fn names(paths: &[PathBuf]) -> String {
    let name =
        |p: &PathBuf| p.file_name().map_or(p.display().to_string(), |n| n.to_string_lossy().into_owned());
    paths.iter().map(|p| format!("`{}`", name(p))).collect::<Vec<_>>().join(", ")
}

/// Writes `lines` to `out`, a newline after each.
pub fn write(out: &Path, lines: &[String]) -> Result<()> {
    std::fs::write(out, lines.join("\n") + "\n")
        .map_err(|e| anyhow!("could not write {}: {e}", out.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_written_as_the_tables_always_wrote_them() {
        let cases = [
            (4.425983905792236, "4.426"),
            (0.33999200661977136, "0.34"),
            (109.2, "109.2"),
            (0.0, "0"),
            (12345.0, "1.234e+04"),
            (0.00001234, "1.234e-05"),
            (1000.0, "1000"),
            (0.9999999, "1"),
        ];
        for (x, want) in cases {
            assert_eq!(sig(x, 4), want, "{x}");
        }
        assert_eq!(signed_pct(0.126), "+13%");
        assert_eq!(signed_pct(-0.003), "-0%");
    }

    #[test]
    fn a_run_is_known_by_its_case() {
        let named =
            parse_cases("# a comment\nsmall  step02_gpu_naive --param BLOCK=32\nplain step04_tiled\n");
        assert_eq!(
            cases_of("step02_gpu_naive --size 1024 --param BLOCK=32 --emulate --scaled --gpu H200", &named),
            ["small --size 1024"]
        );
        assert_eq!(cases_of("step04_tiled --size 256 --no-verify", &named), ["plain --size 256"]);
        assert_eq!(
            cases_of("step02_gpu_naive --param BLOCK=32 --size 64 --emulate", &named),
            ["small --size 64"]
        );
        assert_eq!(cases_of("step04_tiled --size 256 --no-verify", &[]), ["step04_tiled --size 256"]);
        assert_eq!(
            cases_of("step04_tiled --stage 1_x --size 256 --emulate", &named),
            ["step04_tiled --stage 1_x --size 256"]
        );
        // A case whose own line says how it runs (an exercise's --no-verify) is known by it too.
        let exercise = parse_cases("ex step04_tiled --kernel x.cu --no-verify\n");
        assert_eq!(
            cases_of("step04_tiled --size 1024 --kernel x.cu --no-verify --emulate", &exercise),
            ["ex --size 1024"]
        );
        // A record that names its runs by their case already (older records) keeps the name.
        assert_eq!(cases_of("small --size 1024", &named), ["small --size 1024"]);
    }

    #[test]
    fn a_record_is_read_and_a_bad_line_named() {
        let text = r#"{"command":"a --size 8","exit":0,"wall_s":1.5,"report":{"schema":2,"predicted":{"gpu":"H200","seconds":{"H100":0.002,"H200":0.001},"limit":"L2 bytes"},"time":{"median_ms":0.0,"samples":0}},"error":null}
{"command":"b --size 8","exit":0,"wall_s":null,"report":{"schema":1,"predicted":{"h100_seconds":0.003,"limit":"DRAM bytes"},"time":{"median_ms":2.5,"samples":30},"device":{"emulated":{"traffic":{"scaled_of":64}}}},"error":null}

{"command":"c --size 8","exit":1,"wall_s":0.2,"report":null,"error":"refused"}"#;
        let runs = parse_runs(text).unwrap();
        assert_eq!(runs.len(), 3);
        let (a, b, c) = (&runs[0].1, &runs[1].1, &runs[2].1);
        assert_eq!(
            (a.predicted_ms(), a.limit(), a.measured_ms(), a.scaled()),
            (Some(1.0), Some("L2 bytes"), None, false)
        );
        assert_eq!((b.predicted_ms(), b.measured_ms(), b.scaled()), (Some(3.0), Some(2.5), true));
        assert_eq!((c.predicted_ms(), c.refusal().as_str(), c.exit), (None, "refused", Some(1)));
        let e = parse_runs("{\"command\":\"a\",\"report\":{\"schema\":9}}").unwrap_err().to_string();
        assert!(e.contains("line 1") && e.contains("schema Some(9)"), "{e}");
        let e = parse_runs("{}\n").unwrap_err().to_string();
        assert_eq!(e, "line 1 has no command");
        assert!(parse_runs("\n{not json\n").unwrap_err().to_string().contains("line 2 is not JSON"));
    }
}

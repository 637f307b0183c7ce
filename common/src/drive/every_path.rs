//! `--every-path`: the step's (edited) kernel run over the cases its hooks declare
//! ([`crate::hooks::Hooks::every_path`]), each a run of its own with the sanitizer, one line a
//! case: the path, the verdict, whether the run's own report shows the path reached, and the
//! command that runs the case alone.

use std::path::PathBuf;
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::cli::Args;
use crate::paths::{PathCase, Reach};
use crate::step::GpuStep;

/// What a case's line says of its path where the run stopped before its report.
const STOPPED: &str = "the run stopped before its report";

/// How one case went.
struct CaseRun {
    passed: bool,
    /// Where the report shows the path reached, or what it shows instead.
    reached: Result<String, String>,
    /// Why the run failed, in its own sentence, where it did.
    failed: Option<String>,
    seconds: f64,
}

/// Runs every case of `step` with what `args` carries over (`--emulate`, `--kernel`, `--stage`,
/// `--gpu`, `--seed`), prints a line for each and a summary; true where every case passed and
/// reached its path.
pub fn run(step: &GpuStep, args: &Args) -> Result<bool> {
    let cases = step.hooks.every_path();
    let exe = std::env::current_exe().context("cannot find this program's own file to run the cases")?;
    let carried = carried_args(args);
    let scratch = std::env::temp_dir().join(format!("every-path-{}", std::process::id()));
    std::fs::create_dir_all(&scratch)
        .with_context(|| format!("cannot make {} for the cases' reports", scratch.display()))?;
    let under_test = match (&args.kernel, &args.stage) {
        (Some(k), _) => format!("the kernel from {}", k.display()),
        (None, Some(s)) => format!("stage {s}"),
        (None, None) => "the step's kernel".to_owned(),
    };
    println!("{}: every path, {} cases, each with {under_test}", step.name, cases.len());
    let mut failures = 0;
    for (i, case) in cases.iter().enumerate() {
        let json = scratch.join(format!("case{i}.json"));
        let files = made_files(step.name, case)?;
        let outcome = run_case(&exe, case, (&files, &carried), &json)?;
        let ok = outcome.passed && outcome.reached.is_ok();
        failures += usize::from(!ok);
        let verdict = if outcome.passed { "PASS" } else { "FAIL" };
        let reached = match &outcome.reached {
            Ok(what) => format!("reached: {what}"),
            Err(what) if what == STOPPED => format!("path not known: {what}"),
            Err(what) => format!("NOT REACHED: {what}"),
        };
        println!("  {:<28} {verdict} · {reached} · {:.1} s", case.path, outcome.seconds);
        if let Some(why) = &outcome.failed {
            println!("  {:<28} {why}", "");
        }
        println!("  {:<28} alone: {}", "", command_line(step.name, case, (&files, &carried)));
    }
    let _ = std::fs::remove_dir_all(&scratch);
    let n = cases.len();
    if failures > 0 {
        bail!(
            "every path FAIL: {failures} of {n} cases failed or did not reach their path (the lines above; each `alone:` command runs one again)"
        );
    }
    println!("every path PASS · {n} of {n} cases passed, each reaching its path");
    Ok(true)
}

/// The options of `args` each case runs with too.
fn carried_args(args: &Args) -> Vec<String> {
    let mut out = Vec::new();
    if args.emulate {
        out.push("--emulate".to_owned());
    }
    if let Some(k) = &args.kernel {
        out.extend(["--kernel".to_owned(), k.display().to_string()]);
    }
    if let Some(s) = &args.stage {
        out.extend(["--stage".to_owned(), s.clone()]);
    }
    if let Some(g) = args.gpu {
        out.extend(["--gpu".to_owned(), g.name.to_owned()]);
    }
    if args.seed != 42 {
        out.extend(["--seed".to_owned(), args.seed.to_string()]);
    }
    out
}

/// `--a FILE --b FILE` for a case that makes its inputs: written where a later run of the case
/// alone finds them (the system's scratch folder), so that its `alone:` command works as shown.
fn made_files(step: &str, case: &PathCase) -> Result<Vec<String>> {
    let Some(made) = case.made else { return Ok(Vec::new()) };
    let (m, n, k) = made.shape;
    let shape = crate::matrix::Shape::new(m, n, k).map_err(anyhow::Error::msg)?;
    let inputs = (made.make)(shape)
        .map_err(|e| anyhow::anyhow!("the case \"{}\" cannot make its inputs: {e}", case.path))?;
    let dir = std::env::temp_dir().join("every-path");
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot make {}", dir.display()))?;
    let mut files = Vec::new();
    for (side, matrix) in [("a", &inputs.a), ("b", &inputs.b)] {
        let path = dir.join(format!("{step}-{}-{side}.npy", made.name));
        crate::files::write_npy(&path, matrix.rows, matrix.cols, &matrix.data)?;
        files.extend([format!("--{side}"), path.display().to_string()]);
    }
    Ok(files)
}

/// The command that runs `case` alone, as a learner types it.
fn command_line(step: &str, case: &PathCase, (files, carried): (&[String], &[String])) -> String {
    let env = case.env.map(|(k, v)| format!("{k}={v} ")).unwrap_or_default();
    let words: Vec<&str> =
        case.args.iter().copied().chain(files.iter().chain(carried).map(String::as_str)).collect();
    match words.is_empty() {
        true => format!("{env}cargo run --release -p {step}"),
        false => format!("{env}cargo run --release -p {step} -- {}", words.join(" ")),
    }
}

/// Runs one case as a process of its own, its report's JSON to `json`.
fn run_case(
    exe: &PathBuf,
    case: &PathCase,
    (files, carried): (&[String], &[String]),
    json: &std::path::Path,
) -> Result<CaseRun> {
    let mut cmd = Command::new(exe);
    cmd.args(case.args).args(files).args(carried).arg("--json-to").arg(json);
    match case.env {
        Some((k, v)) => cmd.env(k, v),
        None => cmd.env_remove(crate::stream_k::LAYOUT_VAR),
    };
    let start = std::time::Instant::now();
    let out = cmd.output().with_context(|| format!("cannot run {}", exe.display()))?;
    let seconds = start.elapsed().as_secs_f64();
    let report: Option<Value> =
        std::fs::read_to_string(json).ok().and_then(|s| serde_json::from_str(&s).ok());
    let passed_report = report.as_ref().is_some_and(|r| {
        r["derived"]["passed"].as_bool() == Some(true)
            && r["derived"]["next_product_passed"].as_bool() != Some(false)
    });
    let passed = out.status.success() && passed_report;
    let failed = (!passed).then(|| {
        if let Some(why) = report.as_ref().and_then(verify_failed) {
            return why;
        }
        let text =
            format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        text.lines()
            .rev()
            .find(|l| l.starts_with("error:"))
            .map(str::to_owned)
            .unwrap_or_else(|| "the run printed no verdict (see the `alone:` command)".to_owned())
    });
    let reached = match &report {
        Some(r) => reach(&case.reach, r),
        None => Err(STOPPED.to_owned()),
    };
    Ok(CaseRun { passed, reached, failed, seconds })
}

/// Whether report `r` shows `what`: the fact it shows, or what it shows instead.
fn reach(what: &Reach, r: &Value) -> Result<String, String> {
    let kernel_ran = r["derived"]["kernel_ran"].as_bool();
    let fp32 = || {
        let p = &r["paths"][0];
        (p["rows"].as_u64().unwrap_or(0), p["cols"].as_u64().unwrap_or(0))
    };
    match what {
        Reach::Kernel => match kernel_ran {
            Some(false) => Err("every element took the FP32 path: the kernel did not run".to_owned()),
            Some(true) => Ok("the kernel ran".to_owned()),
            None => Ok("the kernel ran".to_owned()),
        },
        Reach::Fp32AndKernel => {
            let (rows, cols) = fp32();
            match (rows + cols > 0, kernel_ran) {
                (true, Some(true)) => {
                    Ok(format!("{rows} rows and {cols} columns in FP32, the kernel on the rest"))
                }
                (true, _) => Err("every element took the FP32 path: the kernel did not run".to_owned()),
                (false, _) => Err("no row or column took the FP32 path".to_owned()),
            }
        }
        Reach::Fp32Only => match kernel_ran {
            Some(false) => Ok("every element in FP32".to_owned()),
            _ => Err("the kernel multiplied some of C".to_owned()),
        },
        Reach::Says(label, text) => {
            let adds = &r["kernel"]["adds"];
            match (adds[0].as_str(), adds[1].as_str()) {
                (Some(l), Some(line)) if l == *label && line.contains(text) => {
                    Ok(format!("{label} line: {text}"))
                }
                (Some(l), Some(line)) => Err(format!("its {l} line says \"{line}\"")),
                _ => Err(format!("the report has no {label} line")),
            }
        }
        Reach::Shared => {
            let g = &r["kernel"]["geometry"];
            match (g["whole_rows"].as_u64(), g["grid"][1].as_u64()) {
                (Some(whole), Some(rows)) if whole < rows => {
                    Ok(format!("Stream-K: grid rows from {whole} on share tiles"))
                }
                _ => Err("no tile is shared (no Stream-K)".to_owned()),
            }
        }
        Reach::BulkStores(want) => {
            let traffic = &r["device"]["emulated"]["traffic"]["bulk_store_requests"];
            match traffic.as_u64() {
                Some(n) if (n > 0) == *want => {
                    Ok(if *want { format!("{n} boxed stores of C") } else { "C stored directly".to_owned() })
                }
                Some(n) => Err(format!("{n} boxed stores of C")),
                // A GPU counts no stores: the case passes on its verdict, and says so.
                None => Ok("not known on a GPU (an emulated run counts C's stores)".to_owned()),
            }
        }
        Reach::Products(least) => match r["paths"][0]["products"].as_u64() {
            Some(n) if n as usize >= *least => Ok(format!("{n} products a result")),
            Some(n) => Err(format!("{n} products a result, fewer than {least}")),
            None => Err("the report counts no products".to_owned()),
        },
        Reach::Param(name, want) => match r["kernel"]["params"][name].as_u64() {
            Some(v) if v == u64::from(*want) => Ok(format!("{name}={v}")),
            Some(v) => Err(format!("the launch ran {name}={v}")),
            None => Err(format!("the launch has no parameter {name}")),
        },
        Reach::Padded(want) => match (r["kernel"]["padded"].is_null(), want) {
            (false, true) => Ok("rows padded to 16 bytes".to_owned()),
            (true, false) => Ok("rows read as they are".to_owned()),
            (false, false) => Err("the rows were padded".to_owned()),
            (true, true) => Err("the rows were read as they are".to_owned()),
        },
        Reach::GlobalStores => match r["device"]["emulated"]["traffic"]["global_store_requests"].as_u64() {
            Some(0) => Err("the kernel made no ordinary stores to global memory".to_owned()),
            Some(n) => Ok(format!("{n} ordinary stores to global memory")),
            None => Ok("not known on a GPU (an emulated run counts the stores)".to_owned()),
        },
        Reach::Both(a, b) => {
            let (a, b) = (reach(a, r)?, reach(b, r)?);
            Ok(format!("{a}; {b}"))
        }
    }
}

/// What a report that failed its verification says of it, in one line (None where it passed).
fn verify_failed(r: &Value) -> Option<String> {
    let (d, v) = (&r["derived"], &r["verdict"]);
    if d["passed"].as_bool() == Some(false) {
        return Some(format!(
            "verify FAIL: {} of {} elements outside their bound, ‖ΔC‖/‖C‖ at {:.3} of its limit",
            v["outside"].as_u64().unwrap_or(0),
            v["checked"].as_u64().unwrap_or(0),
            d["normwise_of_limit"].as_f64().unwrap_or(f64::NAN)
        ));
    }
    (d["next_product_passed"].as_bool() == Some(false))
        .then(|| "verify FAIL: the second product, on output poisoned again, is wrong".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Each reach is read from the report's own facts: where they show the path, the case
    /// reached it; where they show another, it did not, and the line says what they show.
    #[test]
    fn a_path_is_reached_only_where_the_report_shows_it() {
        let fp32_only = json!({"derived": {"kernel_ran": false}, "paths": [{"rows": 67, "cols": 0}, 0.0]});
        assert!(reach(&Reach::Fp32Only, &fp32_only).is_ok());
        assert_eq!(
            reach(&Reach::Kernel, &fp32_only),
            Err("every element took the FP32 path: the kernel did not run".to_owned())
        );
        let beside = json!({"derived": {"kernel_ran": true}, "paths": [{"rows": 4, "cols": 3}, 0.0]});
        assert!(reach(&Reach::Fp32AndKernel, &beside).is_ok());
        assert!(reach(&Reach::Fp32Only, &beside).is_err());
        let split = json!({"kernel": {"adds": ["split", "K cut between 3 blocks per tile"], "params": {"PATH": 0},
            "geometry": {"grid": [2, 5, 1], "whole_rows": 5}}});
        assert!(reach(&Reach::Says("split", "between 3 blocks"), &split).is_ok());
        assert!(reach(&Reach::Says("split", "between 4 blocks"), &split).is_err());
        assert!(reach(&Reach::Shared, &split).is_err(), "every grid row whole: no Stream-K");
        assert!(reach(&Reach::Param("PATH", 0), &split).is_ok());
        assert!(reach(&Reach::Param("PATH", 2), &split).is_err());
        let shared = json!({"kernel": {"geometry": {"grid": [2, 5, 1], "whole_rows": 1}}});
        assert!(reach(&Reach::Shared, &shared).is_ok());
        let stores = json!({"device": {"emulated": {"traffic": {"bulk_store_requests": 0, "global_store_requests": 0}}}});
        assert!(reach(&Reach::BulkStores(false), &stores).is_ok());
        assert!(reach(&Reach::BulkStores(true), &stores).is_err());
        assert!(reach(&Reach::GlobalStores, &stores).is_err(), "no ordinary stores counted");
        let both = Reach::Both(&Reach::Shared, &Reach::BulkStores(false));
        assert!(reach(&both, &stores).is_err(), "one of the two missing");
    }

    /// The command a case prints runs it alone: its variable, the program, its arguments and
    /// what the whole run carries.
    #[test]
    fn a_case_prints_the_command_that_runs_it_alone() {
        let case = PathCase {
            path: "Stream-K",
            args: &["-m", "200"],
            env: Some(("STREAM_K_LAYOUT", "1,5")),
            made: None,
            reach: Reach::Shared,
        };
        let carried = ["--emulate".to_owned(), "--kernel".to_owned(), "mine/k.cu".to_owned()];
        assert_eq!(
            command_line("step10_any_shape", &case, (&[], &carried)),
            "STREAM_K_LAYOUT=1,5 cargo run --release -p step10_any_shape -- -m 200 --emulate --kernel mine/k.cu"
        );
        let plain = PathCase { args: &[], env: None, ..case };
        assert_eq!(command_line("step04_tiled", &plain, (&[], &[])), "cargo run --release -p step04_tiled");
    }
}

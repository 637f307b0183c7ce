//! The program's refusals, and its runs on a GPU: G ranks simulated on one, and NCCL over
//! several.

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_step13_collective_matmul");

fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(common::testing::program(BIN)).args(args).output().expect("the program starts");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
}

/// Bad arguments get one line and exit 2 (clap's), never a panic.
#[test]
fn bad_arguments_are_refused_in_one_sentence() {
    for (args, want) in [
        (&["-m", "0"][..], "at least 1"),
        (&["-k", "x"][..], "is not a whole number"),
        (&["--gpus", "1"][..], "--gpus"),
        (&["--simulate", "0"][..], "--simulate"),
        (&["--product", "lab7"][..], "lab7"),
        (&["--gpus", "2", "--simulate", "2"][..], "cannot be used with"),
    ] {
        let (code, _, err) = run(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

/// The program with no GPU visible: its exit code, standard output and standard error.
fn run_without_a_gpu(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(common::testing::program(BIN))
        .args(args)
        .env("CUDA_VISIBLE_DEVICES", "")
        .output()
        .expect("the program starts");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

/// Without a GPU (none visible), a run over GPUs gets one sentence and exit 1.
#[test]
fn without_a_gpu_it_says_so_in_one_sentence() {
    for args in [&[][..], &["--gpus", "2"][..]] {
        let (code, out, err) = run_without_a_gpu(args);
        assert_eq!(code, Some(1), "{args:?}: {out}{err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {out}{err}");
        assert!(err.starts_with("error: step13_collective_matmul needs"), "{args:?}: {err}");
        assert!(err.contains("GPU") && !err.contains("panicked"), "{args:?}: {err}");
    }
}

/// Without a GPU, `--simulate G` runs the ring's schedule on the CPU, at a small shard unless
/// one is given, and verifies both ways on every rank (the chapter's first exercise).
#[test]
fn without_a_gpu_a_simulated_ring_runs_its_schedule_on_the_cpu() {
    for args in [&["--simulate", "4"][..], &["--simulate", "3", "-m", "33", "-n", "17", "-k", "70"][..]] {
        let (code, out, err) = run_without_a_gpu(args);
        assert_eq!(code, Some(0), "{args:?}: {out}{err}");
        assert!(out.contains("runs on the CPU"), "{out}");
        for way in ["baseline", "ring"] {
            assert!(out.contains(&format!("verify   {way} (first run): PASS on every rank")), "{way}: {out}");
        }
    }
}

/// A simulated run has no NCCL to ring by: refused before any GPU is touched.
#[test]
fn a_simulated_ring_by_nccl_is_refused_in_one_sentence() {
    let (code, _, err) = run(&["--simulate", "2", "--exchange", "nccl"]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("leave out --exchange nccl"), "{err}");
}

#[test]
fn help_names_the_default_shard_and_the_chapter() {
    let (code, out, _) = run(&["--help"]);
    assert_eq!(code, 0);
    for want in [
        "Default shard: 1024×4096×4096",
        "Chapter: docs/src/step13.md",
        "--simulate",
        "--gpus",
        "--format <FORMAT>",
        "--json-to <FILE>",
    ] {
        assert!(out.contains(want), "{want} missing from:\n{out}");
    }
}

/// A report format it does not know: clap's refusal, naming the ones it does, before any GPU.
#[test]
fn an_unknown_format_is_refused_naming_the_known_ones() {
    let (code, out, err) = run(&["--simulate", "2", "--format", "xml"]);
    assert_eq!(code, 2, "{err}");
    assert!(out.is_empty(), "{out}");
    assert!(err.starts_with("error: invalid value 'xml' for '--format <FORMAT>'"), "{err}");
    assert!(err.contains("[possible values: text, json]") && !err.contains("panicked"), "{err}");
}

/// A --json-to file that cannot be written (in a folder that does not exist, or a folder
/// itself) stops the run in one sentence before it looks for a GPU.
#[test]
fn a_json_to_that_cannot_be_written_is_refused_in_one_sentence() {
    let folder = std::env::temp_dir();
    let missing = folder.join(format!("step13-no-such-folder-{}", std::process::id())).join("report.json");
    for (path, why) in [(&missing, "No such file or directory"), (&folder, "Is a directory")] {
        for args in [&[][..], &["--simulate", "2", "--format", "json"][..]] {
            let out = Command::new(common::testing::program(BIN))
                .args(args)
                .arg("--json-to")
                .arg(path)
                .env("CUDA_VISIBLE_DEVICES", "")
                .output()
                .expect("the program starts");
            let (code, err) = (out.status.code(), String::from_utf8_lossy(&out.stderr));
            assert_eq!(code, Some(1), "{path:?} {args:?}: {err}");
            assert_eq!(err.lines().count(), 1, "{path:?} {args:?}: {err}");
            let want = format!("error: --json-to could not write {}: {why}", path.display());
            assert!(err.starts_with(&want) && !err.contains("panicked"), "{want}\n{err}");
            assert!(out.stdout.is_empty(), "{path:?} {args:?}");
        }
    }
    assert!(!missing.exists());
}

/// `--record FILE.jsonl`: a refused command line and a run that fails (no GPU is visible) each
/// append their line, with the exit status and the error, and no report.
#[test]
fn a_refused_or_failed_run_is_recorded() {
    let path = std::env::temp_dir().join(format!("step13-record-{}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&path);
    for args in [&["-m", "0"][..], &["--gpus", "2"][..]] {
        Command::new(common::testing::program(BIN))
            .args(args)
            .arg("--record")
            .arg(&path)
            .env("CUDA_VISIBLE_DEVICES", "")
            .output()
            .expect("the program starts");
    }
    let text = std::fs::read_to_string(&path).expect("the record");
    std::fs::remove_file(&path).ok();
    let lines: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert_eq!(lines[0]["command"], "step13_collective_matmul -m 0");
    assert_eq!((&lines[0]["exit"], &lines[1]["exit"]), (&2.into(), &1.into()), "{text}");
    assert_eq!(lines[1]["command"], "step13_collective_matmul --gpus 2");
    assert!(
        lines.iter().all(|l| l["report"].is_null() && l["error"].as_str().is_some_and(|e| !e.is_empty()))
    );
}

/// A run that fails after --json-to's file was found writable (here: no GPU is visible) leaves
/// no empty report behind where there was none, and a report already there as it was.
#[test]
fn a_run_that_fails_leaves_json_to_as_it_found_it() {
    let dir = std::env::temp_dir();
    let new = dir.join(format!("step13-fails-new-{}.json", std::process::id()));
    let old = dir.join(format!("step13-fails-old-{}.json", std::process::id()));
    std::fs::write(&old, "{\"an\": \"earlier report\"}\n").expect("a file in the temporary folder");
    for path in [&new, &old] {
        let out = Command::new(common::testing::program(BIN))
            .args(["--gpus", "2", "--json-to"])
            .arg(path)
            .env("CUDA_VISIBLE_DEVICES", "")
            .output()
            .expect("the program starts");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{path:?}: {err}");
        assert!(err.starts_with("error: ") && !err.contains("--json-to"), "{path:?}: {err}");
    }
    assert!(!new.exists(), "an empty report was left at {new:?}");
    let kept = std::fs::read_to_string(&old).expect("the earlier report");
    std::fs::remove_file(&old).ok();
    assert_eq!(kept, "{\"an\": \"earlier report\"}\n");
}

/// Asserts a run passed every verification, of both ways, first and last timed.
fn assert_passed(args: &[&str]) -> String {
    let (code, out, err) = run(args);
    assert_eq!(code, 0, "{args:?}:\n{out}{err}");
    assert!(!out.contains("FAIL"), "{args:?}:\n{out}");
    let passes = out.matches(": PASS on every rank").count();
    let products = out.matches("\nproduct ").count();
    assert!(
        products >= 1 && passes == 4 * products,
        "{args:?}: {passes} passes for {products} products:\n{out}"
    );
    out
}

/// The ring's schedule on one GPU, copies standing in for NCCL: odd shard shapes, rings of one
/// to five ranks, both products, every rank's C against its f64 reference.
#[test]
#[ignore = "needs a GPU"]
fn gpu_simulated_rings_match_the_reference() {
    for (g, m, n, k) in [
        ("1", "64", "64", "64"),
        ("2", "33", "130", "70"),
        ("3", "100", "7", "257"),
        ("5", "128", "256", "512"),
    ] {
        assert_passed(&["--simulate", g, "-m", m, "-n", n, "-k", k, "--reps", "3"]);
    }
    assert_passed(&["--simulate", "4", "--reps", "3", "--inputs", "normal"]);
}

/// The real thing over two GPUs: the baseline's all-gather by NCCL, the ring's shards by the
/// copy engines and by NCCL, at an odd shard and at the default one.
#[test]
#[ignore = "needs 2 GPUs and NCCL"]
fn gpu_nccl_rings_over_two_gpus_match_the_reference() {
    let odd = ["--gpus", "2", "-m", "100", "-n", "130", "-k", "257", "--reps", "3"];
    assert_passed(&odd);
    let out = assert_passed(&[&odd[..], &["--exchange", "nccl", "--product", "cublas"]].concat());
    assert!(out.contains("NCCL 2.") && out.contains("by NCCL's send and receive"), "{out}");
    let out = assert_passed(&["--gpus", "2", "--reps", "3", "--product", "lab12"]);
    assert!(out.contains("by the copy engines"), "{out}");
}

/// A simulated run's report as JSON: standard output is one JSON object, --json-to's file holds
/// the same one, and every check of both ways of every product passed.
#[test]
#[ignore = "needs a GPU"]
fn gpu_simulated_ring_reports_json() {
    let path = std::env::temp_dir().join(format!("step13-report-{}.json", std::process::id()));
    let file = path.to_str().expect("a temporary path in UTF-8");
    let args = ["--simulate", "2", "-m", "33", "-n", "130", "-k", "70", "--reps", "3"];
    let (code, out, err) = run(&[&args[..], &["--format", "json", "--json-to", file]].concat());
    let written = std::fs::read_to_string(&path);
    let _ = std::fs::remove_file(&path);
    assert_eq!(code, 0, "{out}{err}");
    let json: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}:\n{out}"));
    let written = written.expect("--json-to's file");
    assert_eq!(written.lines().count(), 1, "{written}");
    assert_eq!(serde_json::from_str::<serde_json::Value>(&written).expect("the file's JSON"), json);

    assert_eq!(json["schema"], common::emit::SCHEMA, "{out}");
    assert_eq!((&json["ranks"], &json["gpus"], &json["simulated"]), (&2.into(), &1.into(), &true.into()));
    assert_eq!((&json["nccl"], &json["exchange"]["ring"]), (&serde_json::Value::Null, &"copies".into()));
    assert_eq!(
        (&json["shard"]["m"], &json["shard"]["n"], &json["shard"]["k"]),
        (&33.into(), &130.into(), &70.into())
    );
    assert_eq!((&json["global"]["m"], &json["global"]["n"]), (&66.into(), &260.into()));
    assert_eq!(json["derived"]["passed"], true, "{out}");
    let products = json["products"].as_array().expect("products");
    assert!(!products.is_empty() && products.iter().any(|p| p["product"] == "cublas"), "{out}");
    for p in products {
        let checks = p["checks"].as_array().expect("checks");
        assert_eq!(checks.len(), 4, "{p}");
        for c in checks {
            assert_eq!((&c["passed"], &c["failures"]), (&true.into(), &serde_json::json!([])), "{c}");
            assert!(c["worst_normwise"].as_f64().is_some_and(|r| r <= 1.0), "{c}");
        }
        assert_eq!(
            (&p["reps"], &p["ring"]["samples"], &p["derived"]["passed"]),
            (&3.into(), &3.into(), &true.into())
        );
        assert!(p["derived"]["speedup"].as_f64().is_some_and(|s| s > 0.0), "{p}");
    }
}

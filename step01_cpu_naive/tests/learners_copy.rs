//! A learner's copy of the loop runs through the lab's program: `STEP01_LOOP=FILE` compiles FILE
//! in place of `src/matmul.rs` (build.rs). A faithful copy passes, a copy that drops a term
//! fails its verification, and a path that names no file is refused in one sentence. Each run
//! builds the lab in a target folder of its own (about a minute the first time), so that the
//! workspace's programs keep the lab's own loop.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs lab 01 at 64³ with `STEP01_LOOP` naming `copy`: its exit code and standard error.
fn run_with(copy: &Path) -> (Option<i32>, String) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let target = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("learners-copy");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(&root)
        .args(["run", "--quiet", "-p", "step01_cpu_naive", "--target-dir"])
        .arg(&target)
        .args(["--", "--size", "64"])
        .env("STEP01_LOOP", copy)
        .output()
        .expect("cargo runs");
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
#[ignore = "builds the lab again in a folder of its own: .ci/run runs it with the slow_ tests"]
fn slow_a_learners_copy_of_the_loop_runs_through_the_lab() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let faithful = dir.join("matmul.rs");
    let planted = dir.join("matmul_from_1.rs");
    let source = include_str!("../src/matmul.rs");
    std::fs::write(&faithful, source).unwrap();
    assert!(source.contains("for p in 0..k"), "the loop no longer reads `for p in 0..k`");
    std::fs::write(&planted, source.replace("for p in 0..k", "for p in 1..k")).unwrap();

    let (code, err) = run_with(&faithful);
    assert_eq!(code, Some(0), "the faithful copy: {err}");
    let (code, err) = run_with(&planted);
    assert_eq!(code, Some(1), "the copy that starts at p = 1: {err}");
    assert!(err.contains("error: the result is wrong"), "{err}");
    let (code, err) = run_with(&dir.join("no-such-file.rs"));
    assert_ne!(code, Some(0));
    assert!(err.contains("no-such-file.rs, which is not a file"), "{err}");
}

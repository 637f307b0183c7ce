//! A learner's copy of the loop runs through the lab's program: `STEP01_LOOP=FILE` compiles FILE
//! in place of `src/matmul.rs` (build.rs). A faithful copy passes, a copy that drops a term
//! fails its verification, and a path that names no file is refused in one sentence. The runs
//! build the lab in the workspace's own target folder, so that only the lab is compiled again
//! (its dependencies are those the tests were built with), and the lab is built once more with
//! its own loop when the test ends, so that the workspace's program is the lab's again.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The workspace's target folder (the parent of the tests' scratch folder).
fn target() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("..")
}

/// `cargo ARGS -p step01_cpu_naive` in the workspace's target folder and the tests' profile, with
/// `STEP01_LOOP` naming `copy` (unset where None).
fn cargo(verb: &str, copy: Option<&Path>, rest: &[&str]) -> Output {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut command = Command::new(cargo);
    command.current_dir(&root).args([verb, "--quiet", "-p", "step01_cpu_naive", "--target-dir"]);
    command.arg(target());
    if !cfg!(debug_assertions) {
        command.arg("--release");
    }
    command.args(rest);
    match copy {
        Some(copy) => command.env("STEP01_LOOP", copy),
        None => command.env_remove("STEP01_LOOP"),
    };
    command.output().expect("cargo runs")
}

/// Runs lab 01 at 64³ with `STEP01_LOOP` naming `copy`: its exit code and standard error.
fn run_with(copy: &Path) -> (Option<i32>, String) {
    let out = cargo("run", Some(copy), &["--", "--size", "64"]);
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Builds the lab with its own loop again when dropped, whatever the test's outcome.
struct OwnLoopAgain;

impl Drop for OwnLoopAgain {
    fn drop(&mut self) {
        let out = cargo("build", None, &[]);
        assert!(out.status.success(), "the lab with its own loop: {}", String::from_utf8_lossy(&out.stderr));
    }
}

#[test]
#[ignore = "builds the lab three times: .ci/run runs it with the slow_ tests"]
fn slow_a_learners_copy_of_the_loop_runs_through_the_lab() {
    let _own = OwnLoopAgain;
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

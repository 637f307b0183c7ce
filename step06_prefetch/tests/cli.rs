//! Bad inputs: each gets one clear sentence and a non-zero exit, never a panic.

use common::testing;

const BIN: &str = env!("CARGO_BIN_EXE_step06_prefetch");

common::program_tests!(BIN);

#[test]
fn invalid_parameter_sets_are_refused_without_a_gpu() {
    testing::thread_tile::assert_bad_sets_refused_without_a_gpu(BIN);
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_a_spilling_set_is_refused() {
    testing::thread_tile::assert_spilling_set_refused_by_program(BIN);
}

#[test]
fn help_names_the_default_shape_and_the_chapter() {
    testing::assert_help(BIN, &["Default shape: 4096×4096×4096", "Chapter: docs/src/step06.md", "MINB"], &[]);
}

#[test]
fn a_stage_is_refused_where_there_are_none() {
    let (code, out) = testing::run_program(BIN, &["--stage", "1_column_tile", "--compile-only"], &[]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("step06_prefetch has no stages: a step that has them lists them"), "{out}");
}

/// Without `__launch_bounds__` the compiler gives each of the 512 threads more registers than an
/// SM holds for the block: `--emulate` refuses the launch in the sentence `--compile-only` gives.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_a_kernel_no_sm_can_hold_is_refused_by_the_emulator_too() {
    let dir = std::env::temp_dir().join(format!("step06-no-bounds-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let copy = dir.join("my.cu");
    let source = step06_prefetch::STEP.source;
    assert!(source.contains("__launch_bounds__(THREADS, MINB)"));
    std::fs::write(&copy, source.replacen("__launch_bounds__(THREADS, MINB)", "", 1)).unwrap();
    let path = copy.to_str().unwrap();
    let (code, out, _) = testing::run_for_output(BIN, &["--compile-only", "--kernel", path]);
    assert_eq!(code, Some(0), "{out}");
    let note = out.lines().find(|l| l.contains("it cannot launch")).unwrap_or_else(|| panic!("{out}"));
    let sentence = note.trim_start().trim_start_matches("note").trim_start();
    assert!(sentence.starts_with("a block of 512 threads needs at least"), "{note}");
    let (code, err) = testing::run_program(BIN, &["--emulate", "--kernel", path, "--size", "64"], &[]);
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(code, Some(1), "{err}");
    let error = err.lines().find(|l| l.starts_with("error: ")).unwrap_or_else(|| panic!("{err}"));
    assert_eq!(error, format!("error: {path}: {sentence}"), "the sentence --compile-only gives:\n{err}");
    assert!(!err.contains("panicked") && !err.contains("resident blocks/SM"), "{err}");
}

//! Bad inputs: each gets one clear sentence and a non-zero exit, never a panic.

use common::testing;

const BIN: &str = env!("CARGO_BIN_EXE_step06_prefetch");

#[test]
fn bad_inputs_are_refused_in_one_sentence() {
    testing::assert_common_bad_inputs_refused(BIN);
}

#[test]
fn without_a_gpu_it_runs_on_the_emulator() {
    testing::assert_run_without_a_gpu(BIN, true);
}

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

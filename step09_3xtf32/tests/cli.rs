//! Bad inputs: each gets one clear sentence and a non-zero exit, never a panic.

use common::testing;

const BIN: &str = env!("CARGO_BIN_EXE_step09_3xtf32");

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
    testing::assert_bad_sets_refused_without_a_gpu(
        BIN,
        &[
            (&["--param", "BN=192"], "BN must be 64 or 128"),
            (&["--param", "GROUP=0"], "GROUP must be 1 to 64"),
            (&["--param", "STAGES=5"], "lower STAGES or BN"),
        ],
    );
}

#[test]
fn help_names_the_default_shape_and_the_chapter() {
    testing::assert_help(
        BIN,
        &["Default shape: 4096×4096×4096", "Chapter: docs/src/step09.md", "STAGES"],
        &[],
    );
}

/// Inputs with the features that once cost this step FP32's accuracy, brought as `.npy` files.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_real_looking_inputs_from_npy_files_pass() {
    testing::assert_npy_inputs_pass(BIN);
}

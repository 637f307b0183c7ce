//! Bad inputs: each gets one clear sentence and a non-zero exit, never a panic.

use common::testing;

const BIN: &str = env!("CARGO_BIN_EXE_step06_prefetch");

#[test]
fn bad_inputs_are_refused_in_one_sentence() {
    testing::assert_common_bad_inputs_refused(BIN);
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_invalid_parameter_sets_are_refused() {
    testing::thread_tile::assert_bad_sets_refused_by_program(BIN);
}

//! Bad inputs: each gets one clear sentence and a non-zero exit, never a panic.

use common::testing;

const BIN: &str = env!("CARGO_BIN_EXE_step02_gpu_naive");

#[test]
fn bad_inputs_are_refused_in_one_sentence() {
    testing::assert_common_bad_inputs_refused(BIN);
}

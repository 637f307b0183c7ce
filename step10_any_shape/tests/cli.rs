//! Without a GPU the step runs on the emulator.

use common::testing;

const BIN: &str = env!("CARGO_BIN_EXE_step10_any_shape");

#[test]
fn without_a_gpu_it_runs_on_the_emulator() {
    testing::assert_run_without_a_gpu(BIN, true);
}

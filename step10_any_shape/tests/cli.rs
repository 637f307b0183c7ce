//! Without a GPU the step runs on the emulator; without NVRTC as well, it says that it needs it.

use common::testing;

const BIN: &str = env!("CARGO_BIN_EXE_step10_any_shape");

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_program_runs_on_the_emulator_without_a_gpu() {
    testing::assert_runs_on_the_emulator_without_a_gpu(BIN);
}

#[test]
#[ignore = "needs a machine without libnvrtc"]
fn without_the_compiler_library_the_program_asks_for_nvrtc() {
    testing::assert_needs_nvrtc_without_a_gpu(BIN);
}

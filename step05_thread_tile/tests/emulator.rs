//! Step 05 on the PTX emulator: the kernel and each of its stages right at small and odd shapes.

use common::testing::emulator::{self, SHAPES};
use step05_thread_tile::{STAGES, STEP};

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_kernel_matches_the_reference() {
    emulator::assert_emulated_pass(&STEP, &[], SHAPES);
    emulator::assert_emulated_pass(
        &STEP,
        &[("BM", 64), ("BN", 64), ("WM", 32), ("WN", 32), ("TN", 4)],
        &SHAPES[..2],
    );
    emulator::assert_emulated_pass(&STEP, &[("TN", 1), ("WN", 8), ("WM", 32), ("BN", 32)], &SHAPES[..2]);
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_stages_match_the_reference() {
    for stage in STAGES {
        emulator::assert_emulated_pass(&STEP.stage(stage.name).unwrap(), &[], SHAPES);
    }
}

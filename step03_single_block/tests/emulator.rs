//! Step 03 on the PTX emulator: the one block right at the shapes it serves.

use common::testing::emulator;
use step03_single_block::STEP;

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_kernel_matches_the_reference() {
    emulator::assert_emulated_pass(&STEP, &[], &[(32, 32, 32), (7, 5, 3), (1, 1, 1), (20, 40, 33)]);
}

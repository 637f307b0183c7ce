//! Step 07 on the PTX emulator: `cp.async`, `ldmatrix` and the TF32 `mma.sync` run by whole
//! warps, within TF32's limits at small and odd shapes; the variant that issues the MMAs alone
//! runs to its end.

use common::testing::emulator::{self, SHAPES};
use step07_tf32_mma::STEP;

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_kernel_matches_the_reference() {
    emulator::assert_emulated_pass(&STEP, &[], SHAPES);
    emulator::assert_emulated_pass(&STEP, &[("BM", 64), ("BN", 64), ("WM", 32), ("WN", 32)], &SHAPES[..2]);
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_mma_only_variant_runs_to_its_end() {
    let variant = emulator::with_source(
        &STEP,
        "step07_tf32_mma/variants/mma_only.cu",
        include_str!("../variants/mma_only.cu").into(),
    );
    emulator::emulate(&variant, &[], common::Shape { m: 128, n: 128, k: 64 }).unwrap();
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulator_names_a_missing_wait() {
    // Without waiting for its copies, a warp reads a tile that has not landed.
    let missing = emulator::planted(&STEP, "    asm volatile(\"cp.async.wait_group 0;\\n\" ::);\n", "");
    emulator::assert_fault_named(&missing, &[], (64, 64, 64), &["before the cp.async of", "has landed"]);
}

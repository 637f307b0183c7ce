//! Step 02 on the PTX emulator: both mappings right at small and odd shapes, and a guard left
//! out named: the first read past the end of B, at the byte where B ends.

use common::testing::emulator::{self, EMULATED_SHAPES};
use step02_gpu_naive::STEP;

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_kernel_matches_the_reference() {
    emulator::assert_emulated_pass(&STEP, &[], EMULATED_SHAPES);
    emulator::assert_emulated_pass(&STEP, &[("COALESCED", 0)], EMULATED_SHAPES);
    emulator::assert_emulated_pass(&STEP, &[("BLOCK", 16)], &EMULATED_SHAPES[..2]);
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulator_names_a_missing_guard() {
    let unguarded = emulator::planted(&STEP, "if (row < M && col < N) {", "{");
    emulator::assert_fault_named(
        &unguarded,
        &[],
        (33, 7, 5),
        &["reads 4 bytes of global memory at byte 140 of B, past the end of its 140 bytes"],
    );
}

/// One block of each kind, scaled (`--emulate --scaled`), counts what the whole grid counts.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_scaled_counts_match_the_whole_emulation() {
    common::testing::emulator::assert_scaled_counts_match(
        &step02_gpu_naive::STEP,
        &[(300, 200, 96), (256, 256, 256)],
    );
}

/// Every product among FP32's subnormals, C normal: the kernel passes, and with the first term
/// of each dot product dropped it fails.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_products_in_the_subnormal_range_pass_and_a_dropped_term_fails() {
    let dropped = emulator::planted(&STEP, "for (int k = 0; k < K; ++k) {", "for (int k = 1; k < K; ++k) {");
    emulator::assert_tiny_products_pass_and_a_fault_fails(&STEP, &dropped);
}

/// Compiled wide (64-bit offsets), the kernel gives the narrow kernel's C bit for bit, and its
/// PTX forms no global address from a 32-bit product of M, N or K (the narrow PTX does).
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_wide_offsets_give_the_same_c() {
    common::testing::wide_offsets::assert_wide_matches_narrow(&STEP, &[(67, 45, 129), (33, 7, 5)], true);
}

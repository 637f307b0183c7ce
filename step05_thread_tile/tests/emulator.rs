//! Step 05 on the PTX emulator: the kernel and each of its stages right at small and odd shapes.

use common::testing::emulator::{self, EMULATED_SHAPES};
use step05_thread_tile::{STAGES, STEP};

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_kernel_matches_the_reference() {
    emulator::assert_emulated_pass(&STEP, &[], EMULATED_SHAPES);
    emulator::assert_emulated_pass(
        &STEP,
        &[("BM", 64), ("BN", 64), ("WM", 32), ("WN", 32), ("TN", 4)],
        &EMULATED_SHAPES[..2],
    );
    emulator::assert_emulated_pass(
        &STEP,
        &[("TN", 1), ("WN", 8), ("WM", 32), ("BN", 32)],
        &EMULATED_SHAPES[..2],
    );
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_stages_match_the_reference() {
    for stage in STAGES {
        emulator::assert_emulated_pass(&STEP.stage(stage.name).unwrap(), &[], EMULATED_SHAPES);
    }
}

/// The one-dimensional thread tile (`TN=1`, which the chapter profiles) reads per slice of K 8
/// floats of B one at a time and 16 float4 of A, of which NVRTC writes one as an 8-byte load
/// and two 4-byte ones: ptxas makes them one 16-byte load again. 24 loads a warp and slice, as
/// Nsight Compute counts at 4096³ (805 306 368:
/// `docs/src/results/ncu-h100/step05_one_dimensional.csv`).
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_one_dimensional_tile_reads_shared_memory_as_the_gpu_counts() {
    let params = [("BM", 64), ("BN", 64), ("BK", 8), ("WM", 8), ("WN", 32), ("TM", 8), ("TN", 1)];
    let (_, verdict, t) =
        emulator::emulate_counted(&STEP, &params, common::Shape { m: 128, n: 128, k: 64 }).unwrap();
    assert!(verdict.passed());
    // 4 blocks of 16 warps, 8 slices of K each.
    assert_eq!(t.shared_load_requests, 4 * 16 * 8 * 24, "shared loads per warp and slice");
}

/// One block of each kind, scaled (`--emulate --scaled`), counts what the whole grid counts.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_scaled_counts_match_the_whole_emulation() {
    common::testing::emulator::assert_scaled_counts_match(
        &step05_thread_tile::STEP,
        &[(300, 200, 96), (512, 512, 128)],
    );
}

/// Compiled wide (64-bit offsets), the kernel gives the narrow kernel's C bit for bit, and its
/// PTX forms no global address from a 32-bit product of M, N or K (the narrow PTX does).
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_wide_offsets_give_the_same_c() {
    common::testing::wide_offsets::assert_wide_matches_narrow(&STEP, &[(67, 45, 129), (33, 7, 5)], true);
}

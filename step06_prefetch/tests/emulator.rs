//! Step 06 on the PTX emulator: the kernel and its Stream-K variant right at small and odd
//! shapes, and the hazards a learner plants named with their line: the loop's barrier left out
//! (a race on the buffer being filled), a tile index off by one (past the end of shared memory),
//! a write index off by one (past the end of C), and warps with no work leaving early.

use common::testing::emulator::{self, EMULATED_SHAPES};
use step06_prefetch::{STEP, VARIANTS};

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_kernel_matches_the_reference() {
    emulator::assert_emulated_pass(&STEP, &[], EMULATED_SHAPES);
    emulator::assert_emulated_pass(
        &STEP,
        &[("BM", 64), ("BN", 64), ("WM", 32), ("WN", 32), ("TN", 4)],
        &EMULATED_SHAPES[..2],
    );
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_stream_k_variant_matches_the_reference() {
    let v = &VARIANTS[0];
    let variant = STEP.with_variant(v, v.source, v.file);
    emulator::assert_emulated_pass(&variant, &[], EMULATED_SHAPES);
    // Shapes whose last wave is shared slice by slice between blocks.
    emulator::assert_emulated_pass(
        &variant,
        &[("SHARE", 1), ("BM", 64), ("BN", 64), ("WM", 32), ("WN", 32), ("TN", 4)],
        &[(1000, 1000, 200), (700, 1300, 96)],
    );
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulator_names_a_missing_barrier() {
    let missing =
        emulator::planted(&STEP, "        __syncthreads();\n        buf ^= 1;", "        buf ^= 1;");
    emulator::assert_fault_named(
        &missing,
        &[],
        (64, 64, 64),
        &["shared-memory race", "with no barrier between"],
    );
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulator_names_an_index_off_by_one() {
    let tile = emulator::planted(
        &STEP,
        "&Bs[e / (BN / 4)][4 * (e % (BN / 4))]",
        "&Bs[e / (BN / 4) + 1][4 * (e % (BN / 4))]",
    );
    emulator::assert_fault_named(
        &tile,
        &[],
        (64, 64, 64),
        &["writes 16 bytes at byte", "outside the block's"],
    );
    let write = emulator::planted(
        &STEP,
        "if (col + v < N) C[(offset_t)row * N + col + v]",
        "if (col + v < N) C[row * N + col + v + 1]",
    );
    emulator::assert_fault_named(
        &write,
        &[],
        (67, 45, 129),
        &["writes 4 bytes of global memory at byte 12060 of C, past the end of its 12060 bytes"],
    );
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulator_names_a_barrier_some_threads_skip() {
    let left = emulator::planted(&STEP, "    int buf = 0;\n", "    if (!active) return;\n    int buf = 0;\n");
    emulator::assert_fault_named(
        &left,
        &[],
        (64, 40, 64),
        &["not reached by every thread", "has already left the kernel"],
    );
}

/// One block of each kind, scaled (`--emulate --scaled`), counts what the whole grid counts.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_scaled_counts_match_the_whole_emulation() {
    common::testing::emulator::assert_scaled_counts_match(
        &step06_prefetch::STEP,
        &[(300, 200, 96), (512, 512, 128)],
    );
}

/// Every product among FP32's subnormals, C normal: the kernel passes, and with A's operands cut
/// to TF32's 10 fraction bits it fails.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_products_in_the_subnormal_range_pass_and_tf32_operands_fail() {
    let tf32 = emulator::planted(
        &STEP,
        "acc[i][j] += a[i] * b[j];",
        "acc[i][j] += __uint_as_float(__float_as_uint(a[i]) & 0xffffe000u) * b[j];",
    );
    emulator::assert_tiny_products_pass_and_a_fault_fails(&STEP, &tf32);
}

/// Compiled wide (64-bit offsets), the kernel gives the narrow kernel's C bit for bit, and its
/// PTX forms no global address from a 32-bit product of M, N or K (the narrow PTX does).
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_wide_offsets_give_the_same_c() {
    common::testing::wide_offsets::assert_wide_matches_narrow(&STEP, &[(67, 45, 129), (33, 7, 5)], true);
}

//! Step 04 on the PTX emulator: the kernel and its variant right at small and odd shapes, and
//! the hazards a learner plants named with their line: a missing barrier (a race on the tiles),
//! an index off by one (past the end of a tile or of A), a barrier some threads skip.

use common::testing::emulator::{self, EMULATED_SHAPES};
use step04_tiled::STEP;

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_kernel_matches_the_reference() {
    emulator::assert_emulated_pass(&STEP, &[], EMULATED_SHAPES);
    emulator::assert_emulated_pass(&STEP, &[("TILE", 16), ("UNROLL", 4)], EMULATED_SHAPES);
    emulator::assert_emulated_pass(&STEP, &[("BT", 1), ("PAD", 1)], &EMULATED_SHAPES[..2]);
    emulator::assert_emulated_pass(&STEP, &[("TILE", 8), ("UNROLL", 1)], &EMULATED_SHAPES[..2]);
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_variant_matches_the_reference() {
    let variant = emulator::with_source(
        &STEP,
        "step04_tiled/variants/l1_cache.cu",
        include_str!("../variants/l1_cache.cu").into(),
    );
    emulator::assert_emulated_pass(&variant, &[], EMULATED_SHAPES);
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulator_names_a_missing_barrier() {
    let first = emulator::planted(
        &STEP,
        "        // The tiles are complete before anyone reads them...\n        __syncthreads();",
        "",
    );
    let first_message = emulator::assert_fault_named(
        &first,
        &[],
        (64, 64, 64),
        &["shared-memory race", "with no barrier between"],
    );
    let second = emulator::planted(
        &STEP,
        "        // ...and everyone has finished reading them before the next copy overwrites them.\n        __syncthreads();",
        "",
    );
    // The copy of one trip of the loop against the read of the trip before: both trips named.
    let message = emulator::assert_fault_named(
        &second,
        &[],
        (64, 64, 64),
        &["shared-memory race", "in trip 1", "in trip 2", "of its loop", "with no barrier between"],
    );
    assert!(!first_message.contains("trip"), "the first barrier's race is within one trip: {first_message}");
    assert_ne!(message, first_message);
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulator_names_an_index_off_by_one() {
    let tile = emulator::planted(&STEP, "sum += As[ty][k] * Bs[k][tx];", "sum += As[ty][k + 1] * Bs[k][tx];");
    emulator::assert_fault_named(
        &tile,
        &[],
        (64, 64, 64),
        &["reads 4 bytes at byte 4096 of the shared array `As`"],
    );
    let global = emulator::planted(&STEP, "A[(offset_t)row * K + k0 + tx]", "A[row * K + k0 + tx + 1]");
    emulator::assert_fault_named(
        &global,
        &[],
        (64, 64, 64),
        &["reads 4 bytes of global memory at byte 16384 of A, past the end of its 16384 bytes"],
    );
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulator_names_a_barrier_some_threads_skip() {
    // Threads below the last row of C leave before the loop, as if they had no work.
    let left = emulator::planted(
        &STEP,
        "    float sum = 0.0f;\n",
        "    if (row >= M) return;\n    float sum = 0.0f;\n",
    );
    emulator::assert_fault_named(
        &left,
        &[],
        (40, 64, 64),
        &["not reached by every thread", "has already left the kernel"],
    );
}

/// The shared loads a warp makes per tile, as the machine code makes them: the 32 loads of Bs
/// and 8 of As (four k per 16-byte load), Nsight Compute's 41 943 040 at 1024³; Bᵀ in unpadded
/// rows, 16-byte aligned, is read 16 bytes at a time too (16 777 216); padded rows are not
/// aligned and are read a float at a time (41 943 040 again) (record
/// `2026-11-25-nvidia-h100-80gb-hbm3-emulator-traffic.md`); four k per trip of the loop
/// (`UNROLL=4`) start 8 bytes into a 16-byte piece, and ptxas joins them in pairs, 8-byte loads
/// (its listing for sm_90).
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_shared_loads_are_the_machine_codes() {
    let cases: [(&[(&str, u32)], u64); 4] = [
        (&[], 40),
        (&[("BT", 1), ("PAD", 0)], 16),
        (&[("BT", 1), ("PAD", 1)], 40),
        (&[("BT", 1), ("PAD", 0), ("UNROLL", 4)], 32),
    ];
    for (params, per_tile) in cases {
        let (_, verdict, t) =
            emulator::emulate_counted(&STEP, params, common::Shape { m: 64, n: 64, k: 64 }).unwrap();
        assert!(verdict.passed(), "{params:?}");
        // 4 blocks of 32 warps, 2 tiles of K each.
        assert_eq!(
            t.shared_load_requests,
            4 * 32 * 2 * per_tile,
            "{params:?}: shared loads per warp and tile"
        );
    }
}

/// One block of each kind, scaled (`--emulate --scaled`), counts what the whole grid counts.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_scaled_counts_match_the_whole_emulation() {
    common::testing::emulator::assert_scaled_counts_match(
        &step04_tiled::STEP,
        &[(300, 200, 96), (256, 256, 256)],
    );
}

/// Compiled wide (64-bit offsets), the kernel gives the narrow kernel's C bit for bit, and its
/// PTX forms no global address from a 32-bit product of M, N or K (the narrow PTX does).
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_wide_offsets_give_the_same_c() {
    common::testing::wide_offsets::assert_wide_matches_narrow(&STEP, &[(67, 45, 129), (33, 7, 5)], true);
}

//! Step 10 on the PTX emulator: every path (the tiles with Stream-K, a split of K and its sum,
//! few rows, few columns, short K) right at shapes that take it.

use common::testing::emulator;
use step10_any_shape::STEP;

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_paths_match_the_reference() {
    // The rule's own choices: a split of K (and its sum), the tiles, odd shapes.
    emulator::assert_emulated_pass(
        &STEP,
        &[],
        &[(256, 256, 256), (67, 45, 129), (64, 64, 4000), (1, 1, 1), (1000, 1000, 64)],
    );
    // Each path forced where it serves.
    emulator::assert_emulated_pass(&STEP, &[("PATH", 1), ("SPLIT", 1)], &[(4, 300, 500), (1, 33, 7)]);
    emulator::assert_emulated_pass(&STEP, &[("PATH", 2), ("SPLIT", 1)], &[(300, 5, 400), (33, 1, 7)]);
    emulator::assert_emulated_pass(&STEP, &[("PATH", 3)], &[(300, 200, 8), (65, 33, 16)]);
    emulator::assert_emulated_pass(&STEP, &[("PATH", 1), ("SPLIT", 4)], &[(4, 300, 500)]);
    emulator::assert_emulated_pass(&STEP, &[("PATH", 0), ("SPLIT", 1), ("SHARE", 1)], &[(1000, 1000, 200)]);
}

/// One block of each kind, scaled (`--emulate --scaled`), counts what the whole grid counts.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_scaled_counts_match_the_whole_emulation() {
    common::testing::emulator::assert_scaled_counts_match(
        &step10_any_shape::STEP,
        &[(300, 200, 96), (512, 512, 128)],
    );
}

/// The fault the scaled emulation's check exists for: K split into pieces of unequal depth
/// (64×64×4096 on this schedule) would scale the wrong counts, and is refused.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_scaling_refuses_pieces_of_unequal_depth() {
    let why = common::testing::emulator::scaled_refusal(&step10_any_shape::STEP, (64, 64, 4096));
    assert!(why.contains("count differently") && why.contains("emulate it whole"), "{why}");
}

/// Where a scaled run is refused (the pieces of unequal depth above), a prediction emulates the
/// launch whole rather than failing: the refusal is told apart by its kind, not its words.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_a_prediction_a_scaled_run_refuses_is_emulated_whole() {
    let shape = common::Shape::new(64, 64, 4096).unwrap();
    let p = common::run::predict(&step10_any_shape::STEP, shape, &common::emulated::profile::H100)
        .expect("a whole emulation");
    assert!(p.whole && p.seconds > 0.0, "{p:?}");
}

/// A Stream-K layout up to 1024³, whose blocks wait for one another's turns, is refused by a
/// scaled run from its launch alone, before a block runs (a whole emulation takes under a minute).
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_a_scaled_stream_k_layout_is_refused_before_it_emulates() {
    let why = common::testing::emulator::scaled_refusal_before_emulating(
        &step10_any_shape::STEP,
        &[("SPLIT", 1), ("SHARE", 1), ("PATH", 0)],
        (1024, 1024, 1024),
    );
    assert!(why.contains("Stream-K") && why.contains("without --scaled"), "{why}");
}

/// Compiled wide (64-bit offsets), the kernel gives the narrow kernel's C bit for bit, and its
/// PTX forms no global address from a 32-bit product of M, N or K, on each of its paths
/// (tiles, split K, few rows, few columns, short K; the narrow PTX of the tiles does).
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_wide_offsets_give_the_same_c() {
    common::testing::wide_offsets::assert_wide_matches_narrow(
        &STEP,
        &[(67, 45, 129), (64, 64, 4000), (4, 300, 500), (300, 5, 400), (300, 200, 8)],
        true,
    );
}

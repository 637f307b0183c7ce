//! The timeline `--picture-timeline` draws, pinned through the events it is drawn from: the
//! producer never more than STAGES fills ahead of the consumers, no wgmma reading a buffer before
//! its `full[s]` phase completed, and the copies, landings, phases and wgmma groups of a block
//! counted; a consumer that skips its wait on `full[s]` is seen reading early; a block outside
//! the grid is refused in one sentence.

use common::Shape;
use common::emulated::TimelinePicture;
use common::emulated::timeline::What;
use common::testing::emulator;
use step08_wgmma_tma::STEP;

/// Block (0, 0, 0) at 256×256×256 (BM 256, BN 128: two consumer warpgroups, eight 32-deep
/// k-tiles, a box of A and four of B each), at each depth of pipeline.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_timeline_counts_the_pipeline_of_a_block() {
    let shape = Shape { m: 256, n: 256, k: 256 };
    for stages in [2u32, 4] {
        let t = emulator::timeline(&STEP, &[("STAGES", stages)], shape, [0, 0, 0], true).unwrap();
        let stages = stages as usize;
        assert_eq!(t.buffers(), stages);
        assert_eq!(t.producers(), vec![0], "thread 0 issues the copies");
        assert_eq!(t.consumers(), vec![1, 2], "BN / 64 consumer warpgroups after the producer's");
        assert_eq!(t.count(|w| matches!(w, What::Issue { .. })), 8 * 5, "8 k-tiles of 5 boxes");
        assert_eq!(t.count(|w| matches!(w, What::Land { .. })), 8 * 5);
        let full = t.full_bars();
        let full_phases = t.count(|w| matches!(w, What::Phase { bar, .. } if full.contains(bar)));
        assert_eq!(full_phases, 8, "one full[s] phase a k-tile");
        // A wgmma per warp and 8-deep step, a group per warp and k-tile.
        assert_eq!(t.count(|w| matches!(w, What::Wgmma { .. })), 2 * 4 * 8 * 4);
        assert_eq!(t.count(|w| matches!(w, What::Commit)), 2 * 4 * 8);
        let empty = t.empty_bars();
        assert_eq!(empty.len(), stages);
        let arrivals = t.count(|w| matches!(w, What::Arrive { bar, .. } if empty.contains(bar)));
        assert_eq!(arrivals, 2 * 4 * 8, "a consumer warp frees each buffer it used");
        assert_eq!(t.most_ahead(), stages, "the producer fills every buffer ahead, and no more");
        assert_eq!(t.reads_before_full(), Vec::<String>::new());
        assert_eq!(t.store_buffers(), vec!["C"]);
        assert!(t.svg(t.window(None).unwrap()).contains("consumers, warpgroup 2"));
    }
}

/// Shapes the pipeline was not drawn for: odd sides, a K of one partial k-tile, the last block
/// of a grid; the properties hold in each.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_timeline_holds_at_odd_shapes_and_other_blocks() {
    for ((m, n, k), block) in
        [((67, 45, 129), [0, 0, 0]), ((33, 7, 5), [0, 0, 0]), ((130, 257, 40), [1, 0, 0])]
    {
        let t = emulator::timeline(&STEP, &[], Shape { m, n, k }, block, true).unwrap();
        let at = format!("{m}×{n}×{k}, block {block:?}");
        assert!(
            t.most_ahead() <= t.buffers(),
            "{at}: {} fills ahead of {} buffers",
            t.most_ahead(),
            t.buffers()
        );
        assert_eq!(t.reads_before_full(), Vec::<String>::new(), "{at}");
        let fills = k.div_ceil(32);
        assert_eq!(t.count(|w| matches!(w, What::Land { .. })), t.count(|w| matches!(w, What::Issue { .. })));
        let full = t.full_bars();
        assert_eq!(t.count(|w| matches!(w, What::Phase { bar, .. } if full.contains(bar))), fills, "{at}");
        assert!(t.check().is_ok());
    }
}

/// A consumer that does not wait for `full[s]`, run without the race check (which would stop it
/// first) and with no more k-tiles than buffers (more would deadlock, the consumers freeing
/// buffers the producer has not filled): the timeline shows its wgmma reading buffers whose
/// copies have not completed.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_timeline_sees_a_read_before_the_buffer_is_full() {
    let missing = emulator::planted(&STEP, "            mbar_wait(&full[s], (kt / STAGES) % 2);\n", "");
    let shape = Shape { m: 256, n: 256, k: 128 };
    let t = emulator::timeline(&missing, &[("STAGES", 4)], shape, [0, 0, 0], false).unwrap();
    let early = t.reads_before_full();
    assert!(!early.is_empty(), "no early read seen");
    // The consumers run before the producer in the round after the block's first barrier.
    assert_eq!(
        early[0], "warp 11 ran a wgmma reading shared byte 0 in round 1 before any copy into it had landed",
        "{early:?}"
    );
}

/// A block outside the grid: refused before the run, in one sentence naming the grid.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_timeline_of_a_block_outside_the_grid_is_refused() {
    let e = emulator::timeline(&STEP, &[], Shape { m: 256, n: 256, k: 64 }, [2, 0, 0], true).unwrap_err();
    assert_eq!(
        e.to_string(),
        "block (2, 0, 0) is outside matmul's grid of 2×1×1 blocks, so it has no timeline to draw: \
         choose one from (0, 0, 0) to (1, 0, 0)"
    );
}

//! Step 12's pipeline as `--picture-timeline` records it, for both blocks of a cluster: the
//! producer at most STAGES fills ahead, no wgmma before its buffer's `full[s]` phase (the peer's
//! half of A included), the peer's arrivals on this block's `empty[s]`, and C stored.

use common::Shape;
use common::emulated::timeline::{PEER, What};
use common::testing::emulator;
use step12_persistent_clusters::STEP;

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_timeline_of_both_blocks_of_a_cluster() {
    for block in [[0, 0, 0], [1, 0, 0]] {
        let t = emulator::timeline(&STEP, &[], Shape { m: 256, n: 256, k: 256 }, block, true).unwrap();
        assert_eq!(t.buffers(), 4, "{block:?}");
        assert_eq!(t.most_ahead(), 4, "{block:?}");
        assert_eq!(t.reads_before_full(), Vec::<String>::new(), "{block:?}");
        // Eight k-tiles: this block's half of A and B's four boxes issued, the peer's half landing.
        assert_eq!(t.count(|w| matches!(w, What::Issue { .. })), 8 * 5, "{block:?}");
        assert_eq!(t.count(|w| matches!(w, What::Land { .. })), 8 * 6, "{block:?}");
        let peer = t.events.iter().filter(|e| e.who == PEER && matches!(e.what, What::Arrive { .. })).count();
        assert_eq!(peer, 8 * 8, "the peer's eight consumer warps free each k-tile: {block:?}");
        assert_eq!(t.store_buffers(), vec!["C"], "{block:?}");
    }
}

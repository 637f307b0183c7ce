//! What a scaled run of the launch needs to know from the schedule (`--emulate --scaled`): where
//! C's edge makes the persistent clusters' shares unequal, and where a shorter depth of K is
//! another launch.

use common::{Params, Shape};

use crate::{Sharing, alike, units};

/// More clusters than a scaled run takes along a side, and units that are not all alike
/// (C's edge cuts the last ones): which clusters take which, only every cluster's run tells.
pub fn unequal_shares(p: &Params, s: Shape, grid: (u32, u32, u32)) -> Option<String> {
    let clusters = grid.0 / p.get("CLUSTER").max(1);
    let (units, _) = units(p, s);
    if clusters <= common::emulated::FULL_SIDE || alike(p, s, (units, clusters), false).is_some() {
        return None;
    }
    let (bm, bn, cluster) = (p.get("BM"), p.get("BN"), p.get("CLUSTER"));
    let rows = if cluster >= 4 { 2 * bm } else { bm };
    Some(format!(
        "at {s} C's edge cuts the launch's units of tiles ({units} of them; an M that is a multiple of {rows} and an N of {} make them whole), so its {clusters} persistent clusters take unequal shares",
        bn * cluster
    ))
}

/// A launch that cuts the last round along K at one depth and not at the other, or cuts it
/// into runs of another length, is another launch.
pub fn shorter_depth(p: &Params, whole: Shape, short: Shape, grid: (u32, u32, u32)) -> Option<String> {
    let clusters = (grid.0 / p.get("CLUSTER")).max(1);
    let sharing = |s: Shape| {
        let (units, k_tiles) = units(p, s);
        let sharing = Sharing::new(units, clusters, k_tiles, p.get("PIECE"));
        sharing.cuts(units).then_some((sharing, k_tiles))
    };
    match (sharing(whole), sharing(short)) {
        (None, None) => None,
        _ => Some(format!(
            "at K = {} the schedule cuts the last round's units along K into pieces, whose count and depth change with K",
            whole.k
        )),
    }
}

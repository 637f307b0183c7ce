//! The tile height for a shape: BM = 256 unless the launch has so few units of tiles that half of
//! the clusters would sit idle, where BM = 128 makes twice as many units and wins more from the
//! SMs it fills than it loses on each tile (measured on an H200: docs/src/step12.md, "Which tile").

use common::{Choice, Shape};

use crate::{BK, Sharing};

/// The time of one k-tile of a BM = 128 unit, as a share of one of a BM = 256 unit's: half the
/// work, at the lower rate of the narrower wgmma (the kernel at 4096³ and 8192³, BM = 128 against
/// 256 on the H200: 0.498 against 0.388 ms, 3.948 against 3.060).
const NARROW: f64 = 0.64;

/// What cutting the last round into pieces costs, in k-tiles of a BM = 256 unit: the pieces'
/// sums written and added (1024×1024×4096 and 2048×1024×2048, each cut into pieces of 32
/// k-tiles, took 0.041 and 0.040 ms on the H200; 1024³, 32 k-tiles uncut, 0.025 ms).
const CUT_COST: f64 = 19.0;

/// The rule's choice must win by this share before it leaves the default tile.
const MARGIN: f64 = 0.05;

/// The busiest cluster's work at `shape` with tiles `bm` rows high, in k-tiles of a BM = 256
/// unit, on `clusters` clusters of `cluster` blocks side by side (BN = 128 each), with pieces of
/// at least `piece` k-tiles where the last round is cut.
pub fn work(shape: Shape, bm: u32, clusters: u32, cluster: u32, piece: u32) -> f64 {
    let rows = (shape.m as u32).div_ceil(bm);
    let units = rows * (shape.n as u32).div_ceil(128 * cluster);
    let k_tiles = (shape.k as u32).div_ceil(BK);
    let sharing = Sharing::new(units, clusters, k_tiles, piece);
    let scale = if bm == 128 { NARROW } else { 1.0 };
    match sharing.cuts(units) {
        true => f64::from(sharing.whole / clusters * k_tiles + sharing.share) * scale + CUT_COST,
        false => f64::from(units.div_ceil(clusters) * k_tiles) * scale,
    }
}

/// Lab 12's rule ([`common::Schedule::Chosen`]): BM = 128 where it is predicted to take at least
/// [`MARGIN`] less time than BM = 256 on `sms` SMs, with the other parameters at their defaults.
pub fn choose(shape: Shape, sms: u32) -> Result<Choice, String> {
    let (cluster, piece) = (2, 32);
    let clusters = (sms / cluster).max(1);
    let wide = work(shape, 256, clusters, cluster, piece);
    let narrow = work(shape, 128, clusters, cluster, piece);
    let units = |bm: u32| (shape.m as u32).div_ceil(bm) * (shape.n as u32).div_ceil(128 * cluster);
    if narrow < wide * (1.0 - MARGIN) {
        Ok(Choice {
            set: vec![("BM", 128)],
            why: format!(
                "BM=128: {} units of 256 rows would keep {} of the {clusters} clusters busy, {} of 128 rows more; the busiest cluster's work {:.0} against {:.0} k-tiles of a 256-row unit",
                units(256),
                units(256).min(clusters),
                units(128).min(clusters),
                narrow,
                wide
            ),
            predicted_us: None,
        })
    } else {
        Ok(Choice {
            set: vec![("BM", 256)],
            why: format!(
                "BM=256: {} units of 256 rows for {clusters} clusters; 128 rows would take {:.0} k-tiles of a 256-row unit against {:.0}",
                units(256),
                narrow,
                wide
            ),
            predicted_us: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::choose;
    use common::Shape;

    /// The shapes measured on the H200 (docs/src/results/runs/2026-11-29-nvidia-h200-step12-tiles.log):
    /// BM = 128 won at 1024³, 2048×1024×2048 and 1024×2048×1024, lost everywhere else.
    #[test]
    fn the_rule_picks_the_tile_that_won_on_the_gpu() {
        let bm = |m, n, k| choose(Shape { m, n, k }, 132).expect("a choice").set[0].1;
        for (m, n, k) in [(1024, 1024, 1024), (2048, 1024, 2048), (1024, 2048, 1024)] {
            assert_eq!(bm(m, n, k), 128, "{m}×{n}×{k}");
        }
        for (m, n, k) in [
            (2048, 2048, 2048),
            (1024, 1024, 4096),
            (1536, 1536, 1536),
            (4096, 4096, 4096),
            (8192, 8192, 8192),
        ] {
            assert_eq!(bm(m, n, k), 256, "{m}×{n}×{k}");
        }
    }
}

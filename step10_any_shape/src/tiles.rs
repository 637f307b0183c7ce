//! Step 10's ways to cut a product: the block tiles the rule chooses between, the kernels for a
//! short side and for a short K, and every cut of a shape it weighs (a way, a split of K, and
//! whether a tile's launch pads rows that are not 16-byte multiples).

use std::fmt::Write as _;

use common::Shape;

// ANCHOR: tiles
/// A block tile the rule chooses from: the block's BM×BN, the warp's WM×WN, the thread's TM×TN,
/// and how many of its blocks an SM holds at once on sm_90 (registers × threads; a test checks
/// it against the compiler's count).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tile {
    pub bm: u32,
    pub bn: u32,
    pub wm: u32,
    pub wn: u32,
    pub tm: u32,
    pub tn: u32,
    pub per_sm: u32,
}

/// Largest first: step 06's tile, then tiles of a half and an eighth of its area, and a flat tile
/// for products of a few rows.
pub const TILES: [Tile; 4] = [
    Tile { bm: 128, bn: 256, wm: 128, wn: 16, tm: 8, tn: 8, per_sm: 1 },
    Tile { bm: 128, bn: 128, wm: 64, wn: 32, tm: 8, tn: 8, per_sm: 1 },
    Tile { bm: 64, bn: 64, wm: 32, wn: 32, tm: 8, tn: 4, per_sm: 4 },
    Tile { bm: 16, bn: 128, wm: 16, wn: 64, tm: 4, tn: 8, per_sm: 4 },
];

// ANCHOR_END: tiles

impl Tile {
    /// Tiles of C at `shape`.
    pub fn count(&self, s: Shape) -> u64 {
        (s.m as u64).div_ceil(u64::from(self.bm)) * (s.n as u64).div_ceil(u64::from(self.bn))
    }
}

/// The flat tile, 16 rows by 128 columns: the last of [`TILES`].
pub const FLAT: Tile = TILES[TILES.len() - 1];

// ANCHOR: short
/// The most rows of C the few rows kernel (PATH=1) takes.
pub const SHORT: usize = 8;

/// The most columns of C the few columns kernel (PATH=2) takes.
pub const SHORT_COLS: usize = 16;

/// Threads in a block of the short side's kernels: 8 warps, which take turns down K over 128
/// columns of C (few rows), or each take rows of it (few columns: [`few_cols_warp_rows`]).
pub const SHORT_THREADS: u32 = 256;

/// Lanes of a warp that few rows lays across C's columns, 4 columns each (the kernel's
/// `lanes_across`): 32 where N > 64, else the least power of two that covers N; the warp's other
/// lanes take other rows of K.
pub fn few_rows_lanes(n: usize) -> usize {
    let mut lanes = 1;
    while lanes < 32 && 4 * lanes < n {
        lanes *= 2;
    }
    lanes
}

/// Lanes of a warp that few columns lays along a row of A, 4 entries each, where K is split
/// `split` ways (the kernel's `lanes_along`): 32 where a block's share of K is over 64 entries,
/// else the least power of two that covers it; the warp's other lanes take other rows at once.
pub fn few_cols_lanes(k: usize, split: u32) -> usize {
    let quads = k.div_ceil(4).div_ceil(split.max(1) as usize);
    let mut lanes = 1;
    while lanes < 32 && lanes < quads {
        lanes *= 2;
    }
    lanes
}

/// Rows of C a warp of few columns takes (the kernel's `warp_rows` times its groups of lanes):
/// where rows are short, 8 turns (4 from 5 columns on, 2 from 9) of 32 / lanes rows each; where they are
/// long, 4 rows from 4 to 8 columns, so that a block's copy of B serves several rows of
/// A, else 1.
pub fn few_cols_warp_rows(n: usize, k: usize, split: u32) -> usize {
    match few_cols_lanes(k, split) {
        32 if n > 8 => 1,
        32 if n >= 4 => 4,
        32 => 1,
        lanes if n <= 4 => 8 * (32 / lanes),
        lanes if n <= 8 => 4 * (32 / lanes),
        lanes => 2 * (32 / lanes),
    }
}

/// The most entries of K the short K kernel (PATH=3) takes.
pub const SHORT_K: usize = 16;

/// Rows and columns of C a block of short K takes.
pub const SHORT_K_ROWS: usize = 64;
pub const SHORT_K_COLUMNS: usize = 128;
// ANCHOR_END: short

/// The ways the rule weighs: one of the block tiles, or a short side's kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Way {
    Tile(Tile),
    /// PATH=1: at most [`SHORT`] rows of C; a block takes 128 columns.
    FewRows,
    /// PATH=2: at most [`SHORT_COLS`] columns of C; a block takes 8 warps' rows ([`few_cols_rows`]).
    FewCols,
    /// PATH=3: K of at most [`SHORT_K`]; a block takes 64 rows and 128 columns of C.
    ShortK,
}

/// Blocks of the short side's kernels an SM holds at once (the kernel's `BLOCKS_PER_SM`): few
/// rows, few columns.
pub const SHORT_PER_SM: [u32; 2] = [3, 2];

/// Blocks of short K an SM holds at once (the kernel's `BLOCKS_PER_SM` for PATH 3).
pub const SHORT_K_PER_SM: u32 = 2;

/// Columns of C a block of few rows takes.
pub const FEW_ROWS_COLUMNS: usize = 128;

/// Rows of C a block of few columns takes at `s` with K split `split` ways: its 8 warps' rows.
pub fn few_cols_rows(s: Shape, split: u32) -> usize {
    (SHORT_THREADS / 32) as usize * few_cols_warp_rows(s.n, s.k, split)
}

impl Way {
    pub fn path(self) -> u32 {
        match self {
            Way::Tile(_) => 0,
            Way::FewRows => 1,
            Way::FewCols => 2,
            Way::ShortK => 3,
        }
    }

    pub fn per_sm(self) -> u32 {
        match self {
            Way::Tile(t) => t.per_sm,
            Way::FewRows => SHORT_PER_SM[0],
            Way::FewCols => SHORT_PER_SM[1],
            Way::ShortK => SHORT_K_PER_SM,
        }
    }

    /// The blocks of one slice of K at `s` where K is split `split` ways (a tile's at the shape
    /// it multiplies).
    pub fn units(self, s: Shape, split: u32) -> u64 {
        match self {
            Way::Tile(t) => t.count(s),
            Way::FewRows => s.n.div_ceil(FEW_ROWS_COLUMNS) as u64,
            Way::FewCols => s.m.div_ceil(few_cols_rows(s, split)) as u64,
            Way::ShortK => (s.m.div_ceil(SHORT_K_ROWS) * s.n.div_ceil(SHORT_K_COLUMNS)) as u64,
        }
    }

    /// Whether the way serves `s` at all.
    pub fn serves(self, s: Shape) -> bool {
        match self {
            Way::Tile(_) => true,
            Way::FewRows => s.m <= SHORT,
            Way::FewCols => s.n <= SHORT_COLS,
            Way::ShortK => s.k <= SHORT_K,
        }
    }

    pub fn name(self) -> String {
        match self {
            Way::Tile(t) => format!("tile {}×{}", t.bm, t.bn),
            Way::FewRows => "few rows".to_owned(),
            Way::FewCols => "few columns".to_owned(),
            Way::ShortK => "short K".to_owned(),
        }
    }
}

// ANCHOR: cuts
/// The depth of K a block of a split keeps at least: one slice of the tiles (BK = 16), so that
/// no split has more blocks than K has slices.
pub const MIN_DEPTH: usize = 16;

/// The most rows of blocks a launch may have (grid.y).
pub const GRID_ROWS_MAX: usize = 65_535;

/// One way to run a product: a tile or the kernel of a short side or a short K, K split `split`
/// ways, and (for a tile, where rows are not 16-byte multiples) whether the launch pads them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cut {
    pub way: Way,
    pub split: u32,
    pub pad: bool,
}

impl Cut {
    /// The parameters that run this cut, with Stream-K's layout offered (`share`) or not.
    pub fn params(&self, share: bool) -> Vec<(&'static str, u32)> {
        let tile = match self.way {
            Way::Tile(t) => t,
            // The short side's kernels read no tile parameters; they keep step 06's.
            Way::FewRows | Way::FewCols | Way::ShortK => TILES[0],
        };
        vec![
            ("BM", tile.bm),
            ("BN", tile.bn),
            ("WM", tile.wm),
            ("WN", tile.wn),
            ("TM", tile.tm),
            ("TN", tile.tn),
            ("SPLIT", self.split),
            ("SHARE", u32::from(share)),
            ("PATH", self.way.path()),
            ("PAD", u32::from(self.pad)),
        ]
    }

    /// The depth of K that a split hands out whole: the tiles' `my_split` gives each block whole
    /// slices of BK (step 06's default, which no cut replaces), the short side's `my_range`
    /// multiples of 4 (a short K is never split).
    pub fn k_grain(&self) -> usize {
        match self.way {
            Way::Tile(_) => step06_prefetch::PARAMS
                .iter()
                .find(|p| p.name == "BK")
                .map_or(MIN_DEPTH, |p| p.default as usize),
            Way::FewRows | Way::FewCols | Way::ShortK => 4,
        }
    }

    /// The depth of K that each block of a tile gets at `k`, in order of z, as the kernel's
    /// `my_split` and `my_range` cut it: `k_grain` pieces, the same number (give or take one) to
    /// each block, the last piece cut short where `k` is not a multiple of it.
    pub fn k_shares(&self, k: usize) -> Vec<usize> {
        let (grain, split) = (self.k_grain(), self.split.max(1) as usize);
        let pieces = k.div_ceil(grain);
        let edge = |z: usize| (pieces * z / split * grain).min(k);
        (0..split).map(|z| edge(z + 1) - edge(z)).collect()
    }

    /// What each block of a split gets, for the choice line: "64 of K each" where every block gets
    /// the same, else the depths they get, and in what pieces ("16 or 32 of K each, in slices of
    /// 16").
    pub fn k_each(&self, k: usize) -> String {
        let mut depths = self.k_shares(k);
        depths.sort_unstable();
        depths.dedup();
        let grain = self.k_grain();
        let pieces = match self.way {
            Way::Tile(_) => format!("in slices of {grain}"),
            _ => format!("in multiples of {grain}"),
        };
        match depths.as_slice() {
            [one] => format!("{one} of K each"),
            [a, b] => format!("{a} or {b} of K each, {pieces}"),
            [first, .., last] => format!("{first} to {last} of K each, {pieces}"),
            [] => "no K".to_owned(),
        }
    }

    pub(crate) fn name(&self, s: Shape) -> String {
        let mut name = self.way.name();
        if self.split > 1 {
            let _ = write!(name, " × split {}", self.split);
        }
        if matches!(self.way, Way::Tile(_)) && common::pad::padded_shape(s).is_some() {
            name += if self.pad { ", rows padded" } else { ", rows as they are" };
        }
        name
    }
}

/// Every cut the rule weighs at `s`: each tile whose rows of blocks a launch can hold, a short
/// side's kernel where a side is short, and short K's where K is; each with K split every number
/// of ways from 1 to 256 while every block keeps [`MIN_DEPTH`] of K (not only powers of two: 3 ways
/// can fill the SMs where 2 leave them short and 4 start a second round); a tile on rows that are
/// not 16-byte multiples both padded and not.
pub fn cuts(s: Shape) -> Vec<Cut> {
    let unaligned = common::pad::padded_shape(s).is_some();
    let ways = TILES
        .iter()
        .map(|&t| Way::Tile(t))
        .chain([Way::FewRows, Way::FewCols, Way::ShortK])
        .filter(|w| w.serves(s));
    let mut all = Vec::new();
    for way in ways {
        // A launch has at most 65535 rows of blocks: a tile too short for that is not offered.
        if let Way::Tile(t) = way
            && s.m.div_ceil(t.bm as usize) > GRID_ROWS_MAX
        {
            continue;
        }
        for split in 1..=crate::split::SPLIT_MAX {
            if split > 1 && (split as usize) > s.k.div_ceil(MIN_DEPTH) {
                break;
            }
            let pads: &[bool] =
                if unaligned && matches!(way, Way::Tile(_)) { &[true, false] } else { &[true] };
            all.extend(pads.iter().map(|&pad| Cut { way, split, pad }));
        }
    }
    all
}
// ANCHOR_END: cuts

#[cfg(test)]
mod tests {
    use super::*;

    fn split(way: Way, split: u32) -> Cut {
        Cut { way, split, pad: true }
    }

    #[test]
    fn a_split_hands_out_whole_slices_as_the_kernel_does() {
        let tile = Way::Tile(TILES[0]);
        // 256 = 16 slices of 16 between 10 blocks: four get one slice, six get two.
        let shares = split(tile, 10).k_shares(256);
        assert_eq!(shares, [16, 32, 16, 32, 32, 16, 32, 16, 32, 32]);
        assert_eq!(split(tile, 10).k_each(256), "16 or 32 of K each, in slices of 16");
        // Every block the same: said once.
        assert_eq!(split(tile, 4).k_each(256), "64 of K each");
        // A last slice cut short: 1000 = 62 slices of 16 and one of 8, 21 slices to each block.
        assert_eq!(split(tile, 3).k_shares(1000), [336, 336, 328]);
        assert_eq!(split(tile, 3).k_each(1000), "328 or 336 of K each, in slices of 16");
        // Three depths: 1000 in 5 is 12 or 13 slices, the last 12 cut short.
        assert_eq!(split(tile, 5).k_shares(1000), [192, 208, 192, 208, 200]);
        assert_eq!(split(tile, 5).k_each(1000), "192 to 208 of K each, in slices of 16");
        // The short side's kernels cut at multiples of 4.
        assert_eq!(split(Way::FewRows, 3).k_each(100), "32 or 36 of K each, in multiples of 4");
        for (way, k, s) in [(tile, 4000, 7), (tile, 17, 2), (Way::FewCols, 4001, 9)] {
            let shares = split(way, s).k_shares(k);
            assert_eq!(shares.iter().sum::<usize>(), k, "{k} in {s}");
            let grain = split(way, s).k_grain();
            assert!(shares[..shares.len() - 1].iter().all(|d| d % grain == 0), "{shares:?}");
        }
    }
}

//! Step 10: step 06's kernel with the problem cut per shape: the block tile, a split of K, and
//! Stream-K, chosen on the host for each shape; and, with `--param PATH`, kernels for a product
//! with a short side, which the rule does not choose yet (they are not yet measured).

use common::gpu::Limits;
use common::step::{Choice, Launch, PATH, SHARE, SPLIT};
use common::{GpuStep, Param, Params, Precision, Schedule, Shape};
use step06_prefetch as step06;

// ANCHOR: params
/// Step 06's parameters, then SPLIT and SHARE, which only the launch reads, and PATH: the tiles,
/// or a kernel for a short side. The defaults are step 06's; `choose` replaces them for each
/// shape, and `--param` replaces the choice.
pub const PARAMS: &[Param] = &[
    step06::PARAMS[0],
    step06::PARAMS[1],
    step06::PARAMS[2],
    step06::PARAMS[3],
    step06::PARAMS[4],
    step06::PARAMS[5],
    step06::PARAMS[6],
    step06::PARAMS[7],
    SPLIT,
    SHARE,
    PATH,
];
// ANCHOR_END: params

/// The values the tuner tries (`--tune`); the parameters a run fixes with `--param` stay fixed,
/// so `--tune --param BM=64 --param BN=64 …` searches the split alone. SHARE keeps the rule's
/// value (1) unless given: the launch ignores it where K is split.
pub const SEARCH: &[(&str, &[u32])] = &[
    ("BM", &[16, 64, 128]),
    ("BN", &[64, 128, 256]),
    ("WM", &[16, 32, 64, 128]),
    ("WN", &[16, 32, 64]),
    ("TM", &[4, 8]),
    ("TN", &[4, 8]),
    ("SPLIT", &[1, 2, 4, 8, 16, 32, 64, 128, 256]),
];

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

/// The flat tile, taken for products of up to [`FLAT_ROWS`] rows.
pub const FLAT: Tile = TILES[3];
// ANCHOR_END: tiles

impl Tile {
    /// Tiles of C at `shape`.
    pub fn count(&self, s: Shape) -> u64 {
        (s.m as u64).div_ceil(u64::from(self.bm)) * (s.n as u64).div_ceil(u64::from(self.bn))
    }

    fn name(&self) -> String {
        format!("{}×{}", self.bm, self.bn)
    }
}

/// The rows of C up to which the flat tile is taken.
pub const FLAT_ROWS: usize = 16;

/// The depth of K a block of a split keeps at least: 128 columns, or an eighth of K for short
/// products, and never less than one slice (BK = 16).
pub fn min_depth(k: usize) -> usize {
    (k / 8).clamp(16, 128)
}

/// How a tile would run at a shape: its split and the blocks it gives.
#[derive(Clone, Copy, Debug)]
struct Plan {
    tile: Tile,
    split: u32,
    blocks: u64,
    slots: u64,
}

impl Plan {
    /// The largest power-of-two split, at most SPLIT_MAX (256), that still fits every block in
    /// one round of the SMs' slots and leaves each at least `min_depth` of K.
    fn of(tile: Tile, s: Shape, sms: u32) -> Self {
        let (tiles, slots) = (tile.count(s), u64::from(sms) * u64::from(tile.per_sm));
        let mut split = 1u32;
        while tiles * u64::from(2 * split) <= slots
            && s.k / (2 * split as usize) >= min_depth(s.k)
            && 2 * split <= common::step::SPLIT_MAX
        {
            split *= 2;
        }
        Self { tile, split, blocks: tiles * u64::from(split), slots }
    }

    /// The share of the SMs' slots its blocks fill in their first round (at most 1).
    fn fill(&self) -> f64 {
        (self.blocks as f64 / self.slots as f64).min(1.0)
    }
}

// ANCHOR: short
/// The most rows (PATH=1) or columns (PATH=2) of C the short side's kernels take. The rule does
/// not choose them yet: `--param PATH=1` or `PATH=2` runs them.
pub const SHORT: usize = 8;

/// Threads in a block of the short side's kernels: 8 warps, which take turns down K over 128
/// columns of C (few rows), or each take a row (few columns).
pub const SHORT_THREADS: u32 = 256;

/// The grid of the short side's kernel on `path` at `s`, before K is split: blocks of 128
/// columns (few rows) or of 8 rows (few columns).
fn short_blocks(path: u32, s: Shape) -> u32 {
    if path == 1 { (s.n as u32).div_ceil(128) } else { (s.m as u32).div_ceil(SHORT_THREADS / 32) }
}

/// The launch: step 06's for the tiles, else the short side's grid.
pub fn launch(p: &Params, s: Shape) -> Launch {
    match p.get(PATH.name) {
        0 => step06::launch(p, s),
        path => Launch {
            grid: (short_blocks(path, s), 1, 1),
            block: (SHORT_THREADS, 1, 1),
            dynamic_smem: 0,
            whole_rows: None,
        },
    }
}

/// Step 06's checks (the tile's parameters are compiled on every path), and a short side's
/// kernel only where the side is short.
pub fn check(p: &Params, s: Shape, limits: &Limits) -> Result<(), String> {
    step06::check(p, s, limits)?;
    match p.get(PATH.name) {
        0 => Ok(()),
        1 if s.m <= SHORT => Ok(()),
        2 if s.n <= SHORT => Ok(()),
        1 => Err(format!("PATH=1 serves products of at most {SHORT} rows of C, and {s} has {}", s.m)),
        2 => Err(format!("PATH=2 serves products of at most {SHORT} columns of C, and {s} has {}", s.n)),
        v => Err(format!("PATH is 0 (tiles), 1 (few rows) or 2 (few columns), not {v}")),
    }
}
// ANCHOR_END: short

// ANCHOR: choose
/// The rule. A few rows take the flat tile. Otherwise each tile no larger than C gets the split
/// that fills the SMs' slots once without cutting K below `min_depth`; the largest tile whose
/// blocks fill at least 90% as many slots as the best one's wins (a large tile reads fewer
/// bytes per FLOP). Stream-K's layout (SHARE=1) is offered where K is not split; its own model
/// takes it or not.
pub fn choose(s: Shape, sms: u32) -> Choice {
    let fits = |t: &&Tile| t.bm as usize <= s.m.max(64) && t.bn as usize <= s.n.max(64);
    let plan = if s.m <= FLAT_ROWS {
        Plan::of(FLAT, s, sms)
    } else {
        let plans: Vec<Plan> = TILES[..3].iter().filter(fits).map(|&t| Plan::of(t, s, sms)).collect();
        let best = plans.iter().map(Plan::fill).fold(0.0, f64::max);
        *plans.iter().find(|p| p.fill() >= 0.9 * best).expect("the 64×64 tile always fits")
    };
    let Plan { tile, split, blocks, slots } = plan;
    let why = format!(
        "tile {}{}: {} tiles{} = {blocks} blocks for {slots} slots ({sms} SMs × {}){}",
        tile.name(),
        if s.m <= FLAT_ROWS { " (a few rows)" } else { "" },
        tile.count(s),
        if split > 1 { format!(" × split {split}") } else { String::new() },
        tile.per_sm,
        if split > 1 { format!(", {} of K each", s.k.div_ceil(split as usize)) } else { String::new() },
    );
    Choice {
        set: vec![
            ("BM", tile.bm),
            ("BN", tile.bn),
            ("WM", tile.wm),
            ("WN", tile.wn),
            ("TM", tile.tm),
            ("TN", tile.tn),
            ("SPLIT", split),
            // Stream-K's layout is offered wherever K is not split, also where `--param SPLIT=1`
            // replaces a split; a split launch ignores it.
            ("SHARE", 1),
            ("PATH", 0),
        ],
        why,
    }
}
// ANCHOR_END: choose

pub const STEP: GpuStep = GpuStep {
    name: "step10_any_shape",
    idea: "the problem cut per shape: the block tile, a split of K summed in order, and Stream-K, chosen on the host",
    file: "step10_any_shape/src/kernel.cu",
    source: include_str!("kernel.cu"),
    params: PARAMS,
    search: SEARCH,
    // Step 06's launch (a block per tile; common adds the split's z and Stream-K's rows) and checks
    // for the tiles, the short side's grid otherwise.
    launch,
    check,
    default_shape: |_| Shape { m: 4096, n: 4096, k: 4096 },
    precision: Precision::Fp32,
    b_transposed: |_| false,
    intensity: step06::intensity,
    min_compute: (7, 5),
    extension: common::Extension::None,
    schedule: Schedule::PerShape(choose),
    stages: &[],
    pads_rows: true,
    variants: &[],
};

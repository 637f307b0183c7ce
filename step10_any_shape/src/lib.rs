//! Step 10: step 06's kernel with the problem cut per shape: the block tile, a split of K, and
//! Stream-K, chosen on the host for each shape.

use common::gpu::Limits;
use common::step::{Choice, SHARE, SPLIT};
use common::{GpuStep, Intensity, Launch, Param, Params, Precision, Schedule, Shape};

// ANCHOR: params
/// Step 06's parameters, then SPLIT and SHARE, which only the launch reads. The defaults are step
/// 06's; `choose` replaces them for each shape, and `--param` replaces the choice.
pub const PARAMS: &[Param] = &[
    Param { name: "BM", default: 128, help: "rows of C per block" },
    Param { name: "BN", default: 256, help: "columns of C per block" },
    Param { name: "BK", default: 16, help: "depth of the K slice staged in shared memory (a multiple of 4)" },
    Param { name: "WM", default: 128, help: "rows of C per warp" },
    Param { name: "WN", default: 16, help: "columns of C per warp" },
    Param { name: "TM", default: 8, help: "rows of C per thread" },
    Param { name: "TN", default: 8, help: "columns of C per thread (1: the one-dimensional thread tile)" },
    Param {
        name: "MINB",
        default: 1,
        help: "blocks per SM the register budget must allow (__launch_bounds__)",
    },
    SPLIT,
    SHARE,
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
        ],
        why,
    }
}
// ANCHOR_END: choose

/// One warp per WM×WN region of the block tile.
fn threads(p: &Params) -> u32 {
    (p.get("BM") / p.get("WM")) * (p.get("BN") / p.get("WN")) * 32
}

/// Bytes of the staged A and B slices, twice: one buffer computed on, one being filled.
fn smem_bytes(p: &Params) -> u32 {
    2 * 4 * p.get("BK") * (p.get("BM") + p.get("BN"))
}

fn launch(p: &Params, s: Shape) -> Launch {
    Launch {
        grid: ((s.n as u32).div_ceil(p.get("BN")), (s.m as u32).div_ceil(p.get("BM")), 1),
        block: (threads(p), 1, 1),
        dynamic_smem: smem_bytes(p),
        whole_rows: None,
    }
}

fn check(p: &Params, _: Shape, limits: &Limits) -> Result<(), String> {
    let [bm, bn, bk, wm, wn, tm, tn, minb] =
        ["BM", "BN", "BK", "WM", "WN", "TM", "TN", "MINB"].map(|n| p.get(n));
    if [bm, bn, bk, wm, wn, tm, tn, minb].contains(&0) || [bm, bn, bk].iter().any(|&v| v > 1024) {
        return Err(format!("{p}: every parameter must be at least 1, and BM, BN, BK at most 1024"));
    }
    if minb > 32 {
        return Err(format!("{p}: MINB is a number of blocks per SM, at most 32"));
    }
    if bm % wm != 0 || bn % wn != 0 || wm % tm != 0 || wn % tn != 0 {
        return Err(format!(
            "{p}: the block tile must be a whole number of warp regions and a warp region a whole number of \
             thread tiles (WM divides BM, WN divides BN, TM divides WM, TN divides WN)"
        ));
    }
    if (wm / tm) * (wn / tn) != 32 {
        return Err(format!(
            "{p}: a warp region must hold exactly 32 thread tiles, but (WM/TM)·(WN/TN) = {}",
            (wm / tm) * (wn / tn)
        ));
    }
    if bm % 4 != 0 || bn % 4 != 0 || bk % 4 != 0 {
        return Err(format!("{p}: BM, BN and BK must be multiples of 4, the width of the 16-byte loads"));
    }
    limits.check_warp_tiled_block(p, threads(p), smem_bytes(p))
}

pub const STEP: GpuStep = GpuStep {
    name: "step10_any_shape",
    idea: "the problem cut per shape: the block tile, a split of K summed in order, and Stream-K, chosen on the host",
    file: "step10_any_shape/src/kernel.cu",
    source: include_str!("kernel.cu"),
    params: PARAMS,
    search: SEARCH,
    launch,
    check,
    default_shape: |_| Shape { m: 4096, n: 4096, k: 4096 },
    precision: Precision::Fp32,
    b_transposed: |_| false,
    intensity,
    min_compute: (7, 5),
    extension: common::Extension::None,
    schedule: Schedule::PerShape(choose),
    stages: &[],
    pads_rows: true,
    variants: &[],
};

/// The thread-tile model (see `Intensity::thread_tile`), as for steps 05 and 06.
fn intensity(p: &Params) -> Intensity {
    Intensity::thread_tile(p.get("BM"), p.get("BN"), p.get("WN"), p.get("TM"), p.get("TN"))
}

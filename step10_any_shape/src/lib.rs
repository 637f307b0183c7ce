//! Step 10: step 06's kernel with the problem cut per shape: the block tile, a split of K and
//! Stream-K, or a kernel for a product with a short side, chosen on the host for each shape by a
//! model of their time ([`model`]) from a few times measured once per GPU.

use std::fmt::Write as _;

use common::gpu::Limits;
use common::step::{Choice, Launch, PAD, PATH, SHARE, SPLIT};
use common::{GpuStep, Param, Params, Precision, Schedule, Shape};
use step06_prefetch as step06;

pub mod model;
pub use model::Way;

// ANCHOR: params
/// Step 06's parameters, then SPLIT, SHARE and PAD, which only the launch reads, and PATH: the
/// tiles, or a kernel for a short side or a short K. The defaults are step 06's; `choose` replaces them for each
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
    PAD,
];
// ANCHOR_END: params

/// The values the tuner tries (`--tune`); the parameters a run fixes with `--param` stay fixed,
/// so `--tune --param BM=64 --param BN=64 …` searches the split alone. A short side's kernel
/// (PATH 1 or 2, where the side is short) is timed once per split, its tile unread. SHARE and PAD
/// keep the rule's values unless given: the launch ignores SHARE where K is split.
pub const SEARCH: &[(&str, &[u32])] = &[
    ("BM", &[16, 64, 128]),
    ("BN", &[64, 128, 256]),
    ("WM", &[16, 32, 64, 128]),
    ("WN", &[16, 32, 64]),
    ("TM", &[4, 8]),
    ("TN", &[4, 8]),
    ("SPLIT", &[1, 2, 4, 8, 16, 32, 64, 128, 256]),
    ("PATH", &[0, 1, 2, 3]),
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

// ANCHOR_END: tiles

impl Tile {
    /// Tiles of C at `shape`.
    pub fn count(&self, s: Shape) -> u64 {
        (s.m as u64).div_ceil(u64::from(self.bm)) * (s.n as u64).div_ceil(u64::from(self.bn))
    }
}

// ANCHOR: short
/// The most rows (PATH=1) or columns (PATH=2) of C the short side's kernels take.
pub const SHORT: usize = 8;

/// Threads in a block of the short side's kernels: 8 warps, which take turns down K over 128
/// columns of C (few rows), or each take 1 or 4 rows of it (few columns).
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

/// Rows of C a warp of few columns takes at `n` columns (the kernel's `warp_rows`): 4 from 4
/// columns on, so that a block's copy of B serves 32 rows of A, else 1.
pub fn few_cols_warp_rows(n: usize) -> usize {
    if n >= 4 { 4 } else { 1 }
}

/// The most entries of K the short K kernel (PATH=3) takes.
pub const SHORT_K: usize = 16;

/// Rows and columns of C a block of short K takes.
pub const SHORT_K_ROWS: usize = 64;
pub const SHORT_K_COLUMNS: usize = 128;

/// The grid of the short side's kernel on `path` at `s`, before K is split: blocks of 128
/// columns (few rows) or of 8 warps' rows (few columns); for short K, blocks of 64 rows and 128
/// columns, at most 65535 rows of them (the kernel's blocks go round again below that).
fn short_grid(path: u32, s: Shape) -> (u32, u32, u32) {
    match path {
        1 => (Way::FewRows.units(s) as u32, 1, 1),
        2 => (Way::FewCols.units(s) as u32, 1, 1),
        _ => (s.n.div_ceil(SHORT_K_COLUMNS) as u32, s.m.div_ceil(SHORT_K_ROWS).min(GRID_ROWS_MAX) as u32, 1),
    }
}

/// The launch: step 06's for the tiles, else the grid of the short side or short K, which the
/// model counts too (`Way::units`); past 65535 rows of short K's blocks (M over 4 194 240) the
/// model still counts every 64-row block, which the launched blocks then take in turn.
pub fn launch(p: &Params, s: Shape) -> Launch {
    match p.get(PATH.name) {
        0 => step06::launch(p, s),
        path => Launch {
            grid: short_grid(path, s),
            block: (SHORT_THREADS, 1, 1),
            dynamic_smem: 0,
            whole_rows: None,
        },
    }
}

/// Step 06's checks (the tile's parameters are compiled on every path), a short side's kernel
/// only where the side is short, and short K's only where K is, whole (SPLIT=1).
pub fn check(p: &Params, s: Shape, limits: &Limits) -> Result<(), String> {
    step06::check(p, s, limits)?;
    if p.get(PAD.name) > 1 {
        return Err(format!(
            "PAD is 1 (rows padded to 16 bytes by copies) or 0 (read as they are), not {}",
            p.get(PAD.name)
        ));
    }
    match p.get(PATH.name) {
        0 => Ok(()),
        1 if s.m <= SHORT => Ok(()),
        2 if s.n <= SHORT => Ok(()),
        3 if s.k <= SHORT_K && p.get(SPLIT.name) == 1 => Ok(()),
        1 => Err(format!("PATH=1 serves products of at most {SHORT} rows of C, and {s} has {}", s.m)),
        2 => Err(format!("PATH=2 serves products of at most {SHORT} columns of C, and {s} has {}", s.n)),
        3 if s.k > SHORT_K => {
            Err(format!("PATH=3 serves products of K at most {SHORT_K}, and {s} has {}", s.k))
        }
        3 => {
            Err(format!("PATH=3 keeps K whole (at most {SHORT_K}), so SPLIT is 1, not {}", p.get(SPLIT.name)))
        }
        v => Err(format!("PATH is 0 (tiles), 1 (few rows), 2 (few columns) or 3 (short K), not {v}")),
    }
}
// ANCHOR_END: short

// ANCHOR: choose
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

    fn name(&self, s: Shape) -> String {
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
        for split in 1..=common::step::SPLIT_MAX {
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

/// The rule: the cut with the least time the model predicts (see [`model`]), from the
/// calibration the rule reads; ties go to the cut listed first (larger tiles, smaller splits,
/// padded rows). Stream-K's layout (SHARE=1) is offered where unsplit tiles fill the SMs at least
/// once; its own model takes it or not.
pub fn choose(s: Shape, sms: u32) -> Result<Choice, String> {
    let cal = model::calibration().as_ref().map_err(Clone::clone)?;
    let mut ranked: Vec<(f64, Cut)> = cuts(s).into_iter().map(|c| (cal.predict(c, s, sms), c)).collect();
    ranked.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (predicted, cut) = ranked[0];
    let padded = common::pad::padded_shape(s).filter(|_| cut.pad && cut.way.path() == 0);
    let blocks = cut.way.units(padded.unwrap_or(s)) * u64::from(cut.split);
    let mut why = format!(
        "{}: {blocks} blocks on {sms} SMs{}, predicted {predicted:.1} µs by the model ({})",
        cut.name(s),
        if cut.split > 1 {
            format!(", {} of K each", s.k.div_ceil(cut.split as usize))
        } else {
            String::new()
        },
        cal.device,
    );
    if let Some(&(next, c)) = ranked.iter().find(|r| r.1.way != cut.way) {
        let _ = write!(why, "; next {}, {next:.1} µs", c.name(s));
    }
    // Stream-K's layout is offered where unsplit tiles fill the SMs at least once (see
    // `model::stream_k_end`), also where `--param SPLIT=1` replaces a split; a split launch
    // ignores it.
    let shares = model::stream_k_end(cut.way, 1, padded.unwrap_or(s), sms).is_some();
    Ok(Choice { set: cut.params(shares), why, predicted_us: Some(predicted) })
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

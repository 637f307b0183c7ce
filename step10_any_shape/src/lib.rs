//! Step 10: step 06's kernel with the problem cut per shape: the block tile, a split of K and
//! Stream-K, or a kernel for a product with a short side, chosen on the host for each shape by a
//! model of their time ([`model`]) from a few times measured once per GPU.

use common::gpu::LaunchLimits;
use common::includes::Include;
use common::paths::{PathCase, Reach};
use common::step::Geometry;
use common::stream_k::SHARE;
use common::{GpuStep, Param, Params, Precision, Schedule, Shape};
use step06_prefetch as step06;

pub mod calibration;
pub mod model;
pub mod split;
pub mod tiles;
// The tiles, the cuts, the rule and the launch's parameters are at the crate's root too.
pub use model::choose;
pub use split::{FEW_ELEMENTS, PAD, PATH, SPLIT, SPLIT_MAX, on_tiles};
pub use tiles::{
    Cut, GRID_ROWS_MAX, MIN_DEPTH, SHORT, SHORT_COLS, SHORT_K, SHORT_K_COLUMNS, SHORT_K_ROWS, SHORT_THREADS,
    TILES, Tile, Way, cuts, few_cols_lanes, few_cols_warp_rows, few_rows_lanes,
};

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

// ANCHOR: short
/// The grid of the short side's kernel on `path` at `s`, before K is split: blocks of 128
/// columns (few rows) or of 8 warps' rows (few columns); for short K, blocks of 64 rows and 128
/// columns, at most 65535 rows of them (the kernel's blocks go round again below that).
fn short_grid(path: u32, s: Shape, split: u32) -> (u32, u32, u32) {
    match path {
        1 => (Way::FewRows.units(s, split) as u32, 1, 1),
        2 => (Way::FewCols.units(s, split) as u32, 1, 1),
        _ => (s.n.div_ceil(SHORT_K_COLUMNS) as u32, s.m.div_ceil(SHORT_K_ROWS).min(GRID_ROWS_MAX) as u32, 1),
    }
}

/// The launch: step 06's for the tiles, else the grid of the short side or short K, which the
/// model counts too (`Way::units`); past 65535 rows of short K's blocks (M over 4 194 240) the
/// model still counts every 64-row block, which the launched blocks then take in turn.
pub fn geometry(p: &Params, s: Shape) -> Geometry {
    let mut geometry = match p.get(PATH.name) {
        0 => step06::geometry(p, s),
        path => Geometry {
            grid: short_grid(path, s, p.get(SPLIT.name)),
            block: (SHORT_THREADS, 1, 1),
            dynamic_smem: 0,
            whole_rows: None,
        },
    };
    // SPLIT blocks in z share each tile's K (the hooks add their slices).
    geometry.grid.2 = p.get(SPLIT.name);
    geometry
}

/// Step 06's checks (the tile's parameters are compiled on every path), a short side's kernel
/// only where the side is short, and short K's only where K is, whole (SPLIT=1).
pub fn check(p: &Params, s: Shape, limits: &LaunchLimits) -> Result<(), String> {
    if !(1..=SPLIT_MAX).contains(&p.get(SPLIT.name)) {
        return Err(format!(
            "{p}: SPLIT is the number of blocks that split K for each tile, from 1 to {SPLIT_MAX}"
        ));
    }
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
        2 if s.n <= SHORT_COLS => Ok(()),
        3 if s.k <= SHORT_K && p.get(SPLIT.name) == 1 => Ok(()),
        1 => Err(format!("PATH=1 serves products of at most {SHORT} rows of C, and {s} has {}", s.m)),
        2 => Err(format!("PATH=2 serves products of at most {SHORT_COLS} columns of C, and {s} has {}", s.n)),
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

/// What the kernel and the hands-on starting file include: the kernels of a short side and of a
/// short K.
pub const INCLUDES: &[Include] =
    &[Include { name: "short.cuh", file: "step10_any_shape/src/short.cuh", text: include_str!("short.cuh") }];

/// The shape and parameters of the forced Stream-K cases: 4 tile rows of 64×64 over 100 columns
/// (the last row and column cut by the edges), 19 slices of K.
const SHARED: &[&str] = &[
    "-m", "200", "-n", "100", "-k", "300", "--param", "BM=64", "--param", "BN=64", "--param", "SHARE=1",
    "--param", "SPLIT=1",
];

/// `--every-path`: the rule's choices at odd and default shapes, padded rows and rows as they
/// are, a split of K (the rule's and a forced three-way one), Stream-K under two forced layouts
/// (`STREAM_K_LAYOUT`: some tile rows shared, then all), the kernels off the tiles (few rows, few
/// columns on long rows and on short ones, short K), and NaN and infinities.
pub const EVERY_PATH: &[PathCase] = &[
    PathCase {
        path: "odd shape, rows as they are",
        args: &["-m", "67", "-n", "45", "-k", "129"],
        env: None,
        made: None,
        reach: Reach::Both(&Reach::Says("split", "K cut"), &Reach::Padded(false)),
    },
    PathCase {
        path: "odd shape, rows padded",
        args: &["-m", "67", "-n", "45", "-k", "129", "--param", "PAD=1"],
        env: None,
        made: None,
        reach: Reach::Padded(true),
    },
    PathCase { path: "default shape", args: &[], env: None, made: None, reach: Reach::Param("PATH", 0) },
    PathCase {
        path: "split K in three",
        args: &["-m", "200", "-n", "100", "-k", "300", "--param", "SPLIT=3", "--param", "SHARE=0"],
        env: None,
        made: None,
        reach: Reach::Says("split", "between 3 blocks"),
    },
    PathCase {
        path: "Stream-K, rows 1-3 shared",
        args: SHARED,
        env: Some(("STREAM_K_LAYOUT", "1,5")),
        made: None,
        reach: Reach::Shared,
    },
    PathCase {
        path: "Stream-K, every tile shared",
        args: SHARED,
        env: Some(("STREAM_K_LAYOUT", "0,6")),
        made: None,
        reach: Reach::Shared,
    },
    PathCase {
        path: "few rows (PATH=1)",
        args: &["-m", "5", "-n", "300", "-k", "200", "--param", "PATH=1"],
        env: None,
        made: None,
        reach: Reach::Param("PATH", 1),
    },
    PathCase {
        path: "few columns (PATH=2)",
        args: &["-m", "300", "-n", "6", "-k", "200"],
        env: None,
        made: None,
        reach: Reach::Param("PATH", 2),
    },
    PathCase {
        path: "few columns on short rows, 4 lanes a row",
        args: &["-m", "3001", "-n", "13", "-k", "14", "--param", "PATH=2"],
        env: None,
        made: None,
        reach: Reach::Param("PATH", 2),
    },
    PathCase {
        path: "short K (PATH=3)",
        args: &["-m", "200", "-n", "200", "-k", "12", "--param", "PATH=3"],
        env: None,
        made: None,
        reach: Reach::Param("PATH", 3),
    },
    PathCase {
        path: "NaN and infinities",
        args: &["-m", "67", "-n", "45", "-k", "129", "--inputs", "nonfinite"],
        env: None,
        made: None,
        reach: Reach::Kernel,
    },
];

pub const STEP: GpuStep = GpuStep {
    name: "step10_any_shape",
    idea: "the problem cut per shape: the block tile, a split of K summed in order, and Stream-K, chosen on the host",
    file: "step10_any_shape/src/kernel.cu",
    source: include_str!("kernel.cu"),
    includes: INCLUDES,
    params: PARAMS,
    search: SEARCH,
    // Step 06's launch (a block per tile, SPLIT of them in z; common adds Stream-K's rows) and checks
    // for the tiles, the short side's grid otherwise.
    geometry,
    check,
    precision: Precision::Fp32,
    intensity: step06::intensity,
    schedule: Schedule::PerShape(choose),
    pads_rows: true,
    hooks: &split::SplitHooks,
    ..GpuStep::DEFAULT
};

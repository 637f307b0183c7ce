//! The step contract: what a GPU step's `lib.rs` declares, and how common turns it into a launch.

use std::fmt;

use anyhow::{Result, anyhow, bail};
use cudarc::driver::{CudaSlice, LaunchConfig, PushKernelArg};

use crate::gpu::{self, Compiled, DeviceInfo, Gpu, Kernel, Limits, Resources};
use crate::matrix::Shape;
use crate::pad::Padding;
use crate::residues::Residues;
use crate::tma::{Apart, Prologue, Tma, TmaBox};
pub use crate::tma::{SPLIT_ENTRY, TRANSPOSE_ENTRY};
use crate::verify::Precision;

/// A compile-time constant of a kernel, passed to NVRTC as `-D NAME=value`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Param {
    pub name: &'static str,
    pub default: u32,
    pub help: &'static str,
}

/// The values of a step's parameters, in the order the step declares them.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Params(Vec<(&'static str, u32)>);

impl Params {
    pub fn defaults(decl: &[Param]) -> Self {
        Self(decl.iter().map(|p| (p.name, p.default)).collect())
    }

    /// The defaults with `overrides` applied; an unknown name is an error that lists the known ones.
    pub fn with_overrides(decl: &[Param], overrides: &[(String, u32)]) -> Result<Self> {
        let mut params = Self::defaults(decl);
        for (name, value) in overrides {
            match params.0.iter_mut().find(|(n, _)| n == name) {
                Some(slot) => slot.1 = *value,
                None if decl.is_empty() => {
                    bail!("--param {name}: this step has no tunable parameters")
                }
                None => bail!(
                    "--param {name}: this step's parameters are {}",
                    decl.iter().map(|p| p.name).collect::<Vec<_>>().join(", ")
                ),
            }
        }
        Ok(params)
    }

    /// The value of `name`, None when the set does not declare it (a variant's parameter).
    pub fn find(&self, name: &str) -> Option<u32> {
        self.0.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
    }

    /// The value of `name`. Steps ask only for the parameters they declare.
    pub fn get(&self, name: &str) -> u32 {
        self.0
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| *v)
            .unwrap_or_else(|| panic!("the step declares no parameter {name}"))
    }

    pub fn defines(&self) -> Vec<(String, u32)> {
        self.0.iter().map(|(n, v)| ((*n).to_owned(), *v)).collect()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The command-line flags that reproduce this set.
    pub fn to_flags(&self) -> String {
        self.0.iter().map(|(n, v)| format!("--param {n}={v}")).collect::<Vec<_>>().join(" ")
    }
}

impl fmt::Display for Params {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.0.iter().map(|(n, v)| format!("{n}={v}")).collect();
        f.write_str(&parts.join(" "))
    }
}

/// More rows, columns or depth than any step's tile has in any direction.
const TILE_ROOM: usize = 1024;

/// Refuses a shape whose rows, columns or depth come within a tile of i32::MAX: kernels step
/// row0 + BM, col0 + BN and k0 + BK in 32-bit ints, which would overflow.
fn check_tile_room(s: Shape) -> Result<()> {
    if [s.m, s.n, s.k].iter().any(|&d| d + TILE_ROOM > i32::MAX as usize) {
        bail!("the shape {s} comes within a tile of the 32-bit index limit; choose a smaller shape");
    }
    Ok(())
}

/// Grid, block and dynamic shared memory of one launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Launch {
    pub grid: (u32, u32, u32),
    pub block: (u32, u32, u32),
    pub dynamic_smem: u32,
    /// For a [`Schedule::StreamK`] kernel, the rows of the grid whose blocks each take one whole
    /// tile (the kernel's seventh argument; see [`stream_k_layout`]); None for every other launch.
    pub whole_rows: Option<u32>,
}

impl Launch {
    pub fn threads(&self) -> u32 {
        self.block.0 * self.block.1 * self.block.2
    }
}

/// Everything that differs between GPU steps; each step's `lib.rs` defines one as `STEP`.
pub struct GpuStep {
    /// The crate name, e.g. `step04_tiled`.
    pub name: &'static str,
    /// One line: the idea this step adds.
    pub idea: &'static str,
    /// The kernel's path in the workspace, for compiler diagnostics.
    pub file: &'static str,
    /// The kernel source, embedded with `include_str!`.
    pub source: &'static str,
    pub params: &'static [Param],
    /// The values the tuner tries for each parameter (empty: nothing to tune).
    pub search: &'static [(&'static str, &'static [u32])],
    pub launch: fn(&Params, Shape) -> Launch,
    /// Rejects shapes or parameters the kernel cannot serve, with a sentence that says why.
    pub check: fn(&Params, Shape, &Limits) -> Result<(), String>,
    /// The shape a run without size arguments uses.
    pub default_shape: fn(&Limits) -> Shape,
    /// The arithmetic the kernel claims to perform: verification holds it to that
    /// precision's limits.
    pub precision: Precision,
    /// Whether the kernel expects B transposed (Bᵀ, N×K row-major), which the host then
    /// prepares before the timed launches.
    pub b_transposed: fn(&Params) -> bool,
    /// FLOPs per byte at large sizes, counted as the step's chapter counts them: the roofline
    /// places the step with these.
    pub intensity: fn(&Params) -> Intensity,
    /// The oldest compute capability whose instructions the kernel uses, e.g. (8, 0) for TF32
    /// tensor cores; older GPUs are refused with a sentence before anything is compiled.
    pub min_compute: (i32, i32),
    /// What the kernel takes beyond the six standard arguments.
    pub extension: Extension,
    /// Earlier kernels of the same step, each one idea short of the next, the last one short of
    /// the step's kernel: runnable with `--stage NAME` (empty for most steps).
    pub stages: &'static [Stage],
    /// How the kernel's blocks are laid over the tiles of C.
    pub schedule: Schedule,
    /// Whether the launch pads rows to 16 bytes (see [`crate::pad`]): for a kernel whose fast
    /// path reads 16 bytes at a time, a product whose K or N is not a multiple of 4 runs on
    /// padded copies of A, B and C, copied in the launch.
    pub pads_rows: bool,
    /// Measured alternatives beside the kernel that need a launch of their own (empty for most
    /// steps); see [`LaunchVariant`].
    pub variants: &'static [LaunchVariant],
}

/// How a step's blocks are laid over the tiles of C.
#[derive(Clone, Copy, Debug)]
pub enum Schedule {
    /// One block per tile: the grid `launch` gives.
    Tiles,
    /// `launch`'s grid is one block per tile, `tiles_n` wide. The launch keeps its width but
    /// chooses its rows ([`stream_k_layout`]): the first `whole` take a tile per block, the others
    /// share the last tile rows slice by slice (Stream-K), so that a part-filled last wave leaves
    /// no SM idle. The kernel takes `whole` as a seventh argument,
    /// `matmul(M, N, K, A, B, C, int whole)`, and is compiled with `-D SHARED_TILES_MAX=…`, the size
    /// of the table through which the blocks sharing a tile take turns. The step declares the
    /// parameter [`SHARE`]; with SHARE=0 every tile is whole (`whole = tiles_m`). It also declares
    /// BK, the depth of a slice, which the layout's model counts in.
    StreamK,
    /// The step's rule chooses the parameters for each shape (see [`Choice`]; `--param` still
    /// overrides them), among them [`SPLIT`] and [`SHARE`]. With SPLIT=1 the launch is
    /// [`Schedule::StreamK`]'s. With SPLIT=S>1, K is split: the grid has S blocks in z for each
    /// tile, block z multiplies its own share of the tile's slices of K into slice z of a
    /// workspace of S·M·N floats, and the step's `sum_slices(partials, C, M·N, S)` adds the slices
    /// into C in order of z (timing counts it), on 256-thread blocks, a thread per element; for a C
    /// of fewer than [`FEW_ELEMENTS`] elements `sum_few(partials, C, M·N, S)` adds them in a fixed
    /// order, G threads an element (G the largest power of two not over S, at most 8: the groups
    /// the kernel splits the slices into). The kernel takes `whole` and the workspace after the
    /// six, `matmul(M, N, K, A, B, C, int whole, float* partials)`.
    PerShape(Choose),
}

impl Schedule {
    /// Whether the kernel takes a Stream-K layout (`whole`, the table of turns).
    pub fn shares(self) -> bool {
        matches!(self, Schedule::StreamK | Schedule::PerShape(_))
    }
}

/// How a [`Schedule::PerShape`] step chooses its parameters for a shape on a GPU of `sms` SMs.
/// A rule that cannot choose (its calibration cannot be read) says why in one sentence.
pub type Choose = fn(Shape, u32) -> Result<Choice, String>;

/// The parameters a step's rule sets for one shape, and why, in one line for the report; and the
/// time the rule's model predicts for them, which the report prints beside the measured one.
#[derive(Clone, Debug, PartialEq)]
pub struct Choice {
    pub set: Vec<(&'static str, u32)>,
    pub why: String,
    pub predicted_us: Option<f64>,
}

/// The parameter of a [`Schedule::PerShape`] step that splits K between that many blocks per tile
/// (1: no split). The kernel does not read it: only the launch changes.
pub const SPLIT: Param = Param {
    name: "SPLIT",
    default: 1,
    help: "blocks that split K for each tile, each into its own slice of a workspace summed in order (1: no split)",
};

/// The parameter of a [`Schedule::PerShape`] step that chooses between its block tiles (0) and
/// its kernels for a product with a short side (1: few rows of C, 2: few columns) or a short K (3).
/// The launch of those kernels keeps its grid (no Stream-K layout) and pads nothing.
pub const PATH: Param = Param {
    name: "PATH",
    default: 0,
    help: "0: block tiles; 1: few rows of C (at most 8), B read once down its rows; 2: few columns of C (at most 8), a warp along each row of A; 3: short K (at most 16), C written straight, 128 contiguous bytes a store",
};

/// Whether a parameter set runs the block tiles (no [`PATH`], or PATH=0).
pub fn on_tiles(params: &Params) -> bool {
    params.find(PATH.name).unwrap_or(0) == 0
}

/// The parameter of a step whose launch pads rows ([`GpuStep::pads_rows`]) and whose kernel also
/// reads rows that are not 16-byte multiples as they are: pad them (1, 16-byte loads after the
/// copies) or not (0, no copies, 4-byte loads on such rows).
pub const PAD: Param = Param {
    name: "PAD",
    default: 1,
    help: "1: rows that are not 16-byte multiples are copied into padded workspaces first (16-byte loads); 0: read as they are, 4 bytes at a time (no copies)",
};

/// The SMs a [`Schedule::PerShape`] step's choice assumes before a GPU is opened (an H100's), for
/// the checks that run first and for `--compile-only`.
pub const SMS_BEFORE_OPENING: u32 = 132;

/// The most blocks a [`Schedule::PerShape`] launch splits K between.
pub const SPLIT_MAX: u32 = 256;

/// The parameter of an [`Extension::Residues`] step: how many of the kernel's moduli it takes,
/// and so how many INT8 products it runs.
pub const MODULI: Param = Param {
    name: "MODULI",
    default: 7,
    help: "moduli, one INT8 product each: their product bounds the integers the product can hold (2 to 8)",
};

/// The entry point that adds a split product's slices into C (see [`Schedule::PerShape`]).
pub const SUM_ENTRY: &str = "sum_slices";

/// The entry point of a split step's sum for a C of fewer than [`FEW_ELEMENTS`] elements.
pub const SUM_FEW_ENTRY: &str = "sum_few";

/// Elements of C under which a split's slices are added by [`SUM_FEW_ENTRY`], up to 8 threads an
/// element, rather than one thread an element.
pub const FEW_ELEMENTS: usize = 4096;

/// The parameter of a [`Schedule::StreamK`] step that turns the sharing off (0) or on (1). The
/// kernel does not read it: only the launch's layout changes.
pub const SHARE: Param = Param {
    name: "SHARE",
    default: 1,
    help: "1: blocks share the last tile rows slice by slice (Stream-K) where that ends sooner; 0: a block per tile",
};

/// The most tiles a [`Schedule::StreamK`] launch shares between blocks: the size of the kernel's
/// table of turns (`summed_to`), one entry per shared tile.
pub const SHARED_TILES_MAX: u32 = 4096;

/// One of a step's staged kernels: a full kernel taking the step's parameters and launch.
#[derive(Clone, Copy, Debug)]
pub struct Stage {
    /// What `--stage` takes, e.g. `4_transposed_a`.
    pub name: &'static str,
    /// One line: the idea this stage adds to the one before.
    pub idea: &'static str,
    /// The kernel's path in the workspace, for compiler diagnostics.
    pub file: &'static str,
    /// The kernel source, embedded with `include_str!`.
    pub source: &'static str,
}

/// A measured alternative kept beside a step's kernel that needs a launch of its own (another
/// schedule, padded rows, parameters the kernel does not have). It runs with `--kernel` on its file
/// in the step's `variants/`, or on an edited copy with the same file name; a file is taken for
/// the variant only if it also uses the variant's `mark` (see [`GpuStep::variant_of`]).
#[derive(Clone, Copy, Debug)]
pub struct LaunchVariant {
    /// The kernel's path in the workspace, e.g. `step06_prefetch/variants/stream_k.cu`.
    pub file: &'static str,
    /// One line: what it changes and why it is kept.
    pub idea: &'static str,
    /// The kernel source, embedded with `include_str!`.
    pub source: &'static str,
    pub params: &'static [Param],
    pub search: &'static [(&'static str, &'static [u32])],
    pub schedule: Schedule,
    pub pads_rows: bool,
    /// A name the variant's source uses and the step's kernel does not (e.g. `SHARED_TILES_MAX`):
    /// a copy of the variant carries it, so a kernel file is matched by its content as well.
    pub mark: &'static str,
}

/// The contract's one extension: arguments a kernel takes after `matmul(M, N, K, A, B, C)`.
#[derive(Clone, Copy, Debug)]
pub enum Extension {
    /// The six standard arguments and nothing more (steps 02 to 07).
    None,
    /// Tensor maps of A and of B for Hopper's copy engine, built on the host for each launch
    /// (see [`crate::tma`]), copied in the boxes these functions give. The kernel is compiled
    /// for the architecture-specific target (sm_90a), which runs on compute capability 9.0 only.
    /// A kernel that also defines `transpose_b` (see [`crate::tma::Prologue`]) gets a map of Bᵀ
    /// in B's place, written by that kernel in front of every launch (timing counts it): how
    /// step08 measures a transposing prologue.
    TensorMaps { a: fn(&Params) -> TmaBox, b: fn(&Params) -> TmaBox },
    /// As `TensorMaps`, but A first goes through the step's own `split_a(const float* A,
    /// float* parts, int M, int K, int pitch)` (with `int* marks, int* exps` after, for a step
    /// with an [`crate::tma::Apart`]), queued on 1024 blocks in front of every launch (timing
    /// counts it), which writes two M×K parts whose sum is A, or A's rows scaled by powers of two;
    /// A's map has a third coordinate, the part (see [`crate::tma`]).
    SplitTensorMaps { a: fn(&Params) -> TmaBox, b: fn(&Params) -> TmaBox },
    /// The product from residues (step 11, see [`crate::residues`]): the step's own kernels scale
    /// A's rows and B's columns to integers and write their residues modulo [`MODULI`] moduli as
    /// bytes, `matmul` multiplies them with one z of its grid per modulus, reading them through
    /// tensor maps of bytes in these boxes (columns counted in bytes), and `reconstruct` rebuilds
    /// C. Compiled for sm_90a, as `TensorMaps`.
    Residues { a: fn(&Params) -> TmaBox, b: fn(&Params) -> TmaBox },
}

/// How a step sizes the boxes of one operand's tensor map from its parameters.
pub type BoxOf = fn(&Params) -> TmaBox;

impl Extension {
    /// The boxes of A and B, for an extension with tensor maps.
    pub fn boxes(self) -> Option<(BoxOf, BoxOf)> {
        match self {
            Extension::None => None,
            Extension::TensorMaps { a, b }
            | Extension::SplitTensorMaps { a, b }
            | Extension::Residues { a, b } => Some((a, b)),
        }
    }
}

/// Where a [`Schedule::StreamK`] launch over `tiles_m`×`tiles_n` tiles of `slices` slices of K
/// each puts its blocks, with `resident` blocks on the GPU at once: `(whole, rows)`, a grid of `tiles_n`×`rows` blocks whose
/// first `whole` rows take one tile each, and whose other `rows − whole` rows share the tile rows
/// from `whole` on, slice by slice. Blocks start in order as others finish, so the choice is made
/// on that model: a whole tile costs 1, a shared block its share of the slices plus a fixed number
/// of slices' time for its second prologue and its turn at the sum, and the layout that ends soonest wins, with whole
/// tiles alone (`whole = rows = tiles_m`) unless sharing ends more than 0.5% sooner. The variable
/// [`LAYOUT_VAR`] overrides the choice.
pub fn stream_k_layout(tiles_m: u32, tiles_n: u32, slices: u32, resident: u32) -> (u32, u32) {
    let (_, whole, rows) = stream_k_plan(tiles_m, tiles_n, slices, resident);
    (whole, rows)
}

/// [`stream_k_layout`]'s layout, with when its last block ends on that model, in units of one
/// whole tile's time.
pub fn stream_k_plan(tiles_m: u32, tiles_n: u32, slices: u32, resident: u32) -> (f64, u32, u32) {
    // Fitted to step06's forced layouts at 4096³ (256 slices of 16) on an H200 (the layouts
    // record): a share's slices run 4% slower (the loop reads its tile's place from shared
    // memory), and a sharer pays about 13 slices' time for its second prologue and its turn at
    // the sum, which is why short products share little or not at all.
    const SHARED_SLOWER: f64 = 1.04;
    const SHARED_EXTRA_SLICES: f64 = 13.0;
    let extra_cost = SHARED_EXTRA_SLICES / f64::from(slices.max(1));
    let p = resident.clamp(1, SHARED_TILES_MAX) as usize;
    let (tm, tn) = (tiles_m as usize, tiles_n as usize);
    let plain = (tm * tn).div_ceil(p) as f64;
    let mut best = (plain / 1.005, tiles_m, tiles_m);
    let shared_rows = (p.div_ceil(tn) + 1).min(tm);
    for whole in tm - shared_rows..tm {
        let units = ((tm - whole) * tn) as f64;
        // At least as many sharers as shared tiles: no share is longer than a tile, so none
        // holds more than the end of one tile and the start of the next.
        for extra in tm - whole..=(2 * p).div_ceil(tn).max(tm - whole) {
            let sharers = extra * tn;
            // Nor a share shorter than what taking part costs: its turn would wait on turns.
            let too_short = (units * f64::from(slices)) < sharers as f64 * SHARED_EXTRA_SLICES;
            if sharers > 2 * p
                || whole + extra > 65_535
                || (tm - whole) * tn > SHARED_TILES_MAX as usize
                || too_short
            {
                break;
            }
            let end = makespan(whole * tn, sharers, units / sharers as f64 * SHARED_SLOWER + extra_cost, p);
            if end < best.0 {
                best = (end, whole as u32, (whole + extra) as u32);
            }
        }
    }
    let end = if best.1 == tiles_m { plain } else { best.0 };
    (end, best.1, best.2)
}

/// The environment variable that overrides [`stream_k_layout`]'s choice, as `WHOLE,ROWS`: to
/// measure other layouts than the one the model picks.
pub const LAYOUT_VAR: &str = "STREAM_K_LAYOUT";

/// The layout [`LAYOUT_VAR`] asks for over `tiles_m` tile rows, checked; None when it is unset.
fn forced_layout(tiles_m: u32, tiles_n: u32) -> Result<Option<(u32, u32)>> {
    match std::env::var_os(LAYOUT_VAR) {
        None => Ok(None),
        Some(value) => parse_layout(&value.to_string_lossy(), tiles_m, tiles_n).map(Some),
    }
}

/// `WHOLE,ROWS` over `tiles_m`×`tiles_n` tiles: a layout the kernel can serve, or why not.
fn parse_layout(value: &str, tiles_m: u32, tiles_n: u32) -> Result<(u32, u32)> {
    let parsed = value
        .split_once(',')
        .and_then(|(w, r)| Some((w.trim().parse::<u32>().ok()?, r.trim().parse::<u32>().ok()?)));
    let Some((whole, rows)) = parsed else {
        bail!("{LAYOUT_VAR}={value}: give the whole-tile rows and the grid rows as two numbers, e.g. 24,33");
    };
    let sharing = whole < tiles_m;
    if whole > tiles_m || rows > 65_535 || (sharing && rows < tiles_m) || (!sharing && rows != tiles_m) {
        bail!(
            "{LAYOUT_VAR}={value}: with {tiles_m} tile rows, WHOLE must be at most {tiles_m} and ROWS at least {tiles_m} (a sharer for every shared tile), at most 65535, and exactly {tiles_m} when WHOLE is"
        );
    }
    let shared = u64::from(tiles_m - whole) * u64::from(tiles_n);
    if shared > u64::from(SHARED_TILES_MAX) {
        bail!(
            "{LAYOUT_VAR}={value}: it shares {shared} tiles, more than the {SHARED_TILES_MAX} the kernel's table of turns holds; raise WHOLE"
        );
    }
    Ok((whole, rows))
}

/// When the last block ends, if `whole` blocks of length 1 and then `shared` of length `each`
/// start in order on `p` slots, each on the slot free first. Slots free at the same time take
/// their blocks together, so the blocks are dealt out a group of slots at a time.
fn makespan(whole: usize, shared: usize, each: f64, p: usize) -> f64 {
    let (rounds, rest) = (whole / p, whole % p);
    // Groups of slots free at the same time: (when, how many).
    let mut groups: Vec<(f64, usize)> =
        [(rounds as f64, p - rest), (rounds as f64 + 1.0, rest)].into_iter().filter(|g| g.1 > 0).collect();
    let mut end = if rest > 0 { rounds as f64 + 1.0 } else { rounds as f64 };
    let mut left = shared;
    while left > 0 {
        let first = if groups.len() > 1 && groups[1].0 < groups[0].0 { 1 } else { 0 };
        let (when, slots) = groups[first];
        end = end.max(when + each);
        if left < slots {
            break;
        }
        groups[first].0 += each;
        left -= slots;
    }
    end
}

/// A kernel's arithmetic intensity, in FLOPs per byte, at sizes where edges do not matter.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Intensity {
    /// Per byte the kernel's loads request from global memory (caches may serve some of them).
    pub global: f64,
    /// Per byte that the shared-memory pipe delivers (128 per wavefront); None without shared
    /// memory.
    pub shared: Option<f64>,
}

impl Intensity {
    /// The thread-tile kernels of steps 05 and 06, from their BM, BN, WN, TM, TN. Global
    /// memory: a BK-deep slice brings BK·(BM + BN) floats for 2·BM·BN·BK FLOPs. Shared memory:
    /// per k a warp issues TM/VM loads of A and TN/VN of B; each needs a wavefront per 128
    /// bytes of distinct addresses (THREADS_N threads across the warp's region, 32/THREADS_N
    /// down), and a 16-byte load at least two, one per half-warp. A lower bound: Nsight Compute
    /// counts exactly this for step 06's default and more (3 per load, not 2) for step 05's.
    pub fn thread_tile(bm: u32, bn: u32, wn: u32, tm: u32, tn: u32) -> Self {
        let [bm, bn, wn, tm, tn] = [bm, bn, wn, tm, tn].map(f64::from);
        let threads_n = wn / tn;
        let threads_m = 32.0 / threads_n;
        let width = |t: f64| if t % 4.0 == 0.0 { 4.0 } else { 1.0 };
        let cost = |v: f64, threads: f64| {
            let wavefronts = (threads * v * 4.0 / 128.0).ceil();
            if v == 4.0 { wavefronts.max(2.0) } else { wavefronts }
        };
        let (vm, vn) = (width(tm), width(tn));
        let wavefronts = (tm / vm) * cost(vm, threads_m) + (tn / vn) * cost(vn, threads_n);
        Self {
            global: bm * bn / (2.0 * (bm + bn)),
            shared: Some(2.0 * 32.0 * tm * tn / (128.0 * wavefronts)),
        }
    }
}

impl GpuStep {
    /// The shape the kernel multiplies for `shape` when the launch pads rows (see
    /// [`crate::pad`]), None when it multiplies `shape` itself (also on a [`PATH`] other than
    /// the tiles, whose kernels read rows as they are, and with [`PAD`]=0).
    pub fn padded_shape(&self, params: &Params, shape: Shape) -> Option<Shape> {
        let pads = self.pads_rows && on_tiles(params) && params.find(PAD.name).unwrap_or(1) == 1;
        if pads { crate::pad::padded_shape(shape) } else { None }
    }

    /// Refuses a device of compute capability `cc` (named `device`) older than the step needs.
    pub fn check_compute(&self, cc: (i32, i32), device: &str) -> Result<()> {
        let (major, minor) = self.min_compute;
        if self.extension.boxes().is_some() && cc != self.min_compute {
            bail!(
                "{} needs a GPU of compute capability {major}.{minor} exactly (H100, H200: wgmma and the copy engine \
                 are theirs alone), and {device} is {}.{}; `--compile-only --arch sm_{major}{minor}` still shows \
                 what the compiler makes of the kernel",
                self.name,
                cc.0,
                cc.1
            );
        }
        if cc < self.min_compute {
            bail!(
                "{} needs a GPU of compute capability {major}.{minor} or newer, and {device} is {}.{}",
                self.name,
                cc.0,
                cc.1
            );
        }
        Ok(())
    }

    /// The step with stage `name`'s kernel in place of its own.
    pub fn stage(&self, name: &str) -> Result<GpuStep> {
        if self.stages.is_empty() {
            bail!("{} has no stages; step05_thread_tile has (see its --help)", self.name);
        }
        match self.stages.iter().find(|s| s.name == name) {
            Some(s) => Ok(GpuStep { file: s.file, source: s.source, ..*self }),
            None => bail!(
                "{} has no stage {name}; its stages are {}",
                self.name,
                self.stages.iter().map(|s| s.name).collect::<Vec<_>>().join(", ")
            ),
        }
    }

    /// The step with `variant`'s kernel, parameters and launch in place of its own.
    pub fn with_variant(&self, variant: &LaunchVariant, source: &'static str, file: &'static str) -> GpuStep {
        GpuStep {
            file,
            source,
            params: variant.params,
            search: variant.search,
            schedule: variant.schedule,
            pads_rows: variant.pads_rows,
            variants: &[],
            ..*self
        }
    }

    /// Which launch a kernel file read for `--kernel` gets: a declared variant's when the file
    /// has that variant's file name and uses its mark, the step's own when it has neither, and a
    /// one-sentence refusal when name and content disagree.
    pub fn variant_of(&self, path: &std::path::Path, source: &str) -> Result<Option<&'static LaunchVariant>> {
        let name = path.file_name();
        for v in self.variants {
            let file_name = std::path::Path::new(v.file).file_name();
            match (name == file_name, source.contains(v.mark)) {
                (true, true) => return Ok(Some(v)),
                (true, false) => bail!(
                    "{} is named like the variant {} but does not use its `{}`: a copy of the step's own kernel \
                     needs another name",
                    path.display(),
                    v.file,
                    v.mark
                ),
                (false, true) => bail!(
                    "{} uses `{}`, as the variant {} does: name the copy {} so that it gets that variant's launch",
                    path.display(),
                    v.mark,
                    v.file,
                    file_name.map(|f| f.to_string_lossy().into_owned()).unwrap_or_default()
                ),
                (false, false) => {}
            }
        }
        Ok(None)
    }

    /// The `--help` text after the options: the step's idea, its parameters, its default shape
    /// and its chapter.
    pub fn help(&self) -> String {
        let mut s = format!("{}: {}\n", self.name, self.idea);
        if !self.params.is_empty() {
            s += "\nKernel parameters (--param NAME=VALUE):\n";
            for p in self.params {
                s += &format!("  {:<6} {} (default {})\n", p.name, p.help, p.default);
            }
        }
        if !self.variants.is_empty() {
            s += "\nVariants beside the kernel, each with its own launch (--kernel FILE):\n";
            for v in self.variants {
                s += &format!("  {}\n    {}\n", v.file, v.idea);
            }
        }
        if let Schedule::PerShape(_) = self.schedule {
            s += "\nThe defaults above are replaced for each shape by the step's rule (the report's `choice` line says\nwhat it chose and why); --param replaces the rule's choice, --tune searches from it.\n";
        }
        if !self.stages.is_empty() {
            s += "\nStages (--stage NAME): the kernel built up one idea at a time, each stage adding one to\nthe stage before it; the step's own kernel adds the last:\n";
            for st in self.stages {
                s += &format!("  {:<18} {}\n", st.name, st.idea);
            }
        }
        let Shape { m, n, k } = (self.default_shape)(&Limits::LARGEST);
        s += &format!(
            "\nDefault shape: {m}×{n}×{k}{}.\nChapter: {} (read the book with `mdbook serve docs`).",
            if (self.default_shape)(&Limits::SM80) == (Shape { m, n, k }) {
                ""
            } else {
                " on an H100 or H200"
            },
            chapter(self.name)
        );
        s
    }

    /// The parameters for `shape` on a GPU of `sms` SMs: the defaults, then the step's choice for
    /// the shape ([`Schedule::PerShape`]), then `overrides` (`--param`); with the choice, whose
    /// reason names what `overrides` changed (and whose prediction is dropped where they changed
    /// anything: it was made for the rule's parameters).
    pub fn params_for(
        &self,
        shape: Shape,
        sms: u32,
        overrides: &[(String, u32)],
    ) -> Result<(Params, Option<Choice>)> {
        let Schedule::PerShape(choose) = self.schedule else {
            return Ok((Params::with_overrides(self.params, overrides)?, None));
        };
        let choice = choose(shape, sms).map_err(|e| anyhow!("{e}"))?;
        let mut all: Vec<(String, u32)> = choice.set.iter().map(|(n, v)| ((*n).to_owned(), *v)).collect();
        all.extend_from_slice(overrides);
        let params = Params::with_overrides(self.params, &all)?;
        let forced: Vec<String> = overrides
            .iter()
            .filter(|(n, v)| choice.set.iter().find(|(c, _)| c == n).is_none_or(|(_, cv)| cv != v))
            .map(|(n, v)| format!("{n}={v}"))
            .collect();
        let choice = if forced.is_empty() {
            choice
        } else {
            Choice {
                why: format!("{}; --param sets {}", choice.why, forced.join(" ")),
                predicted_us: None,
                ..choice
            }
        };
        Ok((params, Some(choice)))
    }

    /// Compiles the kernel with `params` for `arch` (no GPU needed).
    pub fn compile(&self, params: &Params, arch: &str) -> Result<Compiled> {
        let mut defines = params.defines();
        if self.schedule.shares() {
            defines.push(("SHARED_TILES_MAX".to_owned(), SHARED_TILES_MAX));
        }
        gpu::compile(self.source, self.file, &self.target(arch), &defines)
    }

    /// The NVRTC target for `arch`: the architecture-specific one (`sm_90a`) for a kernel with
    /// tensor maps, whose instructions exist on that architecture alone.
    pub fn target(&self, arch: &str) -> String {
        match self.extension.boxes() {
            Some(_) if !arch.ends_with('a') => format!("{arch}a"),
            _ => arch.to_owned(),
        }
    }

    /// Checks `params` and `shape` against the step's own rules and the device's grid limits.
    pub fn validate(&self, params: &Params, shape: Shape, limits: &Limits) -> Result<Launch> {
        check_tile_room(shape)?;
        (self.check)(params, shape, limits).map_err(|why| anyhow!("{why}"))?;
        if self.schedule.shares() && params.get(SHARE.name) > 1 {
            bail!("{params}: SHARE is 0 (a block per tile) or 1 (the last tile rows shared)");
        }
        if let Schedule::PerShape(_) = self.schedule
            && !(1..=SPLIT_MAX).contains(&params.get(SPLIT.name))
        {
            bail!(
                "{params}: SPLIT is the number of blocks that split K for each tile, from 1 to {SPLIT_MAX}"
            );
        }
        let launch = (self.launch)(params, shape);
        if launch.threads() > limits.max_threads_per_block {
            bail!(
                "{params} gives blocks of {} threads, more than the {} a block may have",
                launch.threads(),
                limits.max_threads_per_block
            );
        }
        let mut launch = launch;
        if let Schedule::PerShape(_) = self.schedule {
            launch.grid.2 = params.get(SPLIT.name);
        }
        let (_, gy, gz) = launch.grid;
        if gy > 65_535 || gz > 65_535 {
            bail!("the shape {shape} needs a grid of {gy} blocks in y, more than the 65535 a launch allows");
        }
        Ok(launch)
    }
}

/// A step's kernel compiled for the present GPU with one parameter set.
pub struct Prepared<'a> {
    pub step: &'a GpuStep,
    pub params: Params,
    pub kernel: Kernel,
    /// The tensor maps and workspaces of a step with that extension (unused by the others).
    tma: Tma,
    /// The kernel that splits A, for a step with split tensor maps, or that transposes B, for
    /// a tensor-map kernel that defines one.
    prologue: Option<Prologue>,
    /// The padded copies of a step whose launch pads rows (unused by the others).
    padding: Padding,
    /// A [`Schedule::PerShape`] step's `sum_slices` and the workspace of its split products.
    split: Option<Split>,
    /// An [`Extension::Residues`] step's other kernels and workspaces.
    residues: Option<Residues>,
    /// A split step's kernels for what its split cannot carry ([`Apart`]), where it has them.
    apart: Option<Apart>,
}

/// What a launch that splits K keeps: the kernels that add the slices, and their workspace.
struct Split {
    sum: cudarc::driver::CudaFunction,
    few: cudarc::driver::CudaFunction,
    partials: std::sync::Mutex<Option<CudaSlice<f32>>>,
}

impl<'a> Prepared<'a> {
    /// Compiles and loads; a set that spills registers is refused, since local-memory traffic
    /// would dominate whatever the parameters were meant to show.
    pub fn new(gpu: &Gpu, step: &'a GpuStep, params: Params) -> Result<Self> {
        step.check_compute(gpu.info.compute_capability, &gpu.info.name)?;
        let kernel = Kernel::load(gpu, step.compile(&params, &gpu.info.arch())?)?;
        let spilled = kernel.spill_bytes()?;
        if spilled > 0 {
            bail!(
                "with {params} the kernel spills {spilled} bytes of registers to local memory; choose smaller per-thread tiles"
            );
        }
        Self::with_kernel(step, params, kernel)
    }

    /// The step compiled with its parameters for `shape` on this GPU ([`GpuStep::params_for`]:
    /// the step's choice for the shape, where it chooses, then `overrides`), and why.
    pub fn for_shape(
        gpu: &Gpu,
        step: &'a GpuStep,
        shape: Shape,
        overrides: &[(String, u32)],
    ) -> Result<(Self, Option<String>)> {
        let (params, choice) = step.params_for(shape, gpu.info.sms, overrides)?;
        Ok((Self::new(gpu, step, params)?, choice.map(|c| c.why)))
    }

    /// For a step that chooses its parameters per shape, the step compiled again with its choice
    /// for `shape` (None for every other step: this one serves every shape).
    pub fn chosen_for(&self, gpu: &Gpu, shape: Shape) -> Result<Option<Prepared<'a>>> {
        match self.step.schedule {
            Schedule::PerShape(_) => Ok(Some(Self::for_shape(gpu, self.step, shape, &[])?.0)),
            _ => Ok(None),
        }
    }

    /// Wraps a kernel already compiled and loaded for `step` with `params` (and finds the entry
    /// point that splits A, for a step that has one, or that transposes B, where the kernel
    /// defines one).
    pub fn with_kernel(step: &'a GpuStep, params: Params, kernel: Kernel) -> Result<Self> {
        let prologue = match step.extension {
            Extension::SplitTensorMaps { .. } => Some(Prologue::SplitA(kernel.entry(SPLIT_ENTRY)?)),
            Extension::TensorMaps { .. } if kernel.has_entry(TRANSPOSE_ENTRY) => {
                Some(Prologue::TransposeB(kernel.entry(TRANSPOSE_ENTRY)?))
            }
            Extension::TensorMaps { .. } | Extension::Residues { .. } | Extension::None => None,
        };
        let residues = match step.extension {
            Extension::Residues { .. } => Some(Residues::new(&kernel)?),
            _ => None,
        };
        let apart = match step.extension {
            Extension::SplitTensorMaps { .. } => Apart::find(&kernel)?,
            _ => None,
        };
        let split = match step.schedule {
            Schedule::PerShape(_) => Some(Split {
                sum: kernel.entry(SUM_ENTRY)?,
                few: kernel.entry(SUM_FEW_ENTRY)?,
                partials: std::sync::Mutex::new(None),
            }),
            _ => None,
        };
        Ok(Self {
            step,
            params,
            kernel,
            tma: Tma::default(),
            prologue,
            padding: Padding::default(),
            split,
            residues,
            apart,
        })
    }

    /// The launch for `shape` on this device and its resource cost.
    pub fn plan(&self, info: &DeviceInfo, shape: Shape) -> Result<(Launch, Resources)> {
        let mut launch = self.step.validate(&self.params, shape, &info.limits)?;
        let resources = self.kernel.prepare(info, launch.threads(), launch.dynamic_smem)?;
        if resources.blocks_per_sm == 0 {
            bail!(
                "with {} the kernel cannot fit one block on an SM ({} registers × {} threads, {} bytes of shared memory)",
                self.params,
                resources.registers,
                launch.threads(),
                resources.static_smem + resources.dynamic_smem
            );
        }
        if launch.grid.2 > 1 || !on_tiles(&self.params) {
            // A split product: every tile is whole within its slice of K; a short side's kernel
            // has no tiles to share.
            launch.whole_rows = Some(launch.grid.1);
        } else if self.step.schedule.shares() {
            let forced = forced_layout(launch.grid.1, launch.grid.0)?;
            let (whole, rows) = if let Some(f) = forced {
                f
            } else if self.params.get(SHARE.name) == 1 {
                let slices = (shape.k as u32).div_ceil(self.params.get("BK"));
                stream_k_layout(launch.grid.1, launch.grid.0, slices, info.sms * resources.blocks_per_sm)
            } else {
                (launch.grid.1, launch.grid.1)
            };
            launch.grid.1 = rows;
            launch.whole_rows = Some(whole);
        }
        Ok((launch, resources))
    }

    /// Queues one launch computing C = A·B (asynchronous: errors may surface at the next sync):
    /// for a step that pads rows and a shape that needs it, the padding copies and the kernel on
    /// the padded shape, whose grid and layout are those `plan` gave for `shape` (BN and BK are
    /// multiples of 4, so padding K and N to multiples of 4 adds no tile and no slice).
    pub fn launch(
        &self,
        gpu: &Gpu,
        launch: Launch,
        shape: Shape,
        a: &CudaSlice<f32>,
        b: &CudaSlice<f32>,
        c: &mut CudaSlice<f32>,
    ) -> Result<()> {
        if a.len() < shape.m * shape.k || b.len() < shape.k * shape.n || c.len() < shape.m * shape.n {
            bail!("device buffers are smaller than the shape {shape} needs");
        }
        let padded = self.step.padded_shape(&self.params, shape);
        self.padding.run(gpu, shape, padded, (a, b, c), |shape, a, b, c| {
            self.kernel_launch(gpu, launch, shape, a, b, c)
        })
    }

    /// Queues the kernel itself on buffers that hold `shape` (checked by `launch`).
    fn kernel_launch(
        &self,
        gpu: &Gpu,
        launch: Launch,
        shape: Shape,
        a: &CudaSlice<f32>,
        b: &CudaSlice<f32>,
        c: &mut CudaSlice<f32>,
    ) -> Result<()> {
        let (m, n, k) = (shape.m as i32, shape.n as i32, shape.k as i32);
        let cfg = LaunchConfig {
            grid_dim: launch.grid,
            block_dim: launch.block,
            shared_mem_bytes: launch.dynamic_smem,
        };
        if let (Some(residues), Some((a_box, b_box))) = (&self.residues, self.step.extension.boxes()) {
            let moduli = self.params.get(MODULI.name) as usize;
            let boxes = (a_box(&self.params), b_box(&self.params));
            return residues.launch(gpu, &self.kernel.func, cfg, shape, moduli, (a, b, c), boxes);
        }
        let marks = match &self.apart {
            Some(apart) => Some(apart.before(gpu, b, shape)?),
            None => None,
        };
        let maps = match self.step.extension.boxes() {
            None => None,
            Some((a_box, b_box)) => Some(self.tma.maps(
                gpu,
                shape,
                (a, b),
                (a_box(&self.params), b_box(&self.params)),
                self.prologue.as_ref(),
                marks,
            )?),
        };
        let whole = launch.whole_rows.map(|w| w as i32);
        let mut slots = match &self.split {
            Some(split) => {
                Some(split.partials.lock().map_err(|_| anyhow!("the split workspace's lock was poisoned"))?)
            }
            None => None,
        };
        let slices = launch.grid.2 as usize;
        let partials = match slots.as_deref_mut() {
            // One float stands in for the workspace of an unsplit launch, which never reads it.
            Some(slot) => Some(crate::pad::workspace(
                gpu,
                slot,
                if slices > 1 { slices * shape.m * shape.n } else { 1 },
            )?),
            None => None,
        };
        let mut builder = gpu.stream.launch_builder(&self.kernel.func);
        builder.arg(&m).arg(&n).arg(&k).arg(a).arg(b).arg(&mut *c);
        if let Some(whole) = &whole {
            builder.arg(whole);
        }
        if let Some(partials) = &partials {
            builder.arg(&**partials);
        }
        if let Some([a_map, b_map]) = &maps {
            builder.arg(a_map).arg(b_map);
        }
        if let Some(marks) = &marks {
            builder.arg(&marks.exps);
        }
        // SAFETY: the arguments match `matmul(int, int, int, const float*, const float*, float*)`,
        // followed for the tensor-map extension by two 128-byte `CUtensorMap`s of buffers that
        // outlive the launch (A and B, or their workspaces, which are only freed when a later
        // launch needs larger ones, after this one in stream order), and for a step with an
        // `Apart` by its exponents (M + N ints, made above); the buffers hold at least the
        // elements the shape addresses (checked by `launch`, or padded copies of that size).
        unsafe { builder.launch(cfg) }.map_err(|e| anyhow!("the kernel failed to launch: {e:?}"))?;
        if let (Some(split), Some(partials)) = (&self.split, &partials)
            && slices > 1
        {
            let elements = shape.m * shape.n;
            let few = elements < FEW_ELEMENTS;
            // A thread per element, and at most 4096 blocks, which go round; for a C of few
            // elements, a thread per element and group of slices: `sum_few` splits an element's
            // slices between the largest power of two of groups, at most 8, that the slices and
            // the grid allow, so a grid sized by that power leaves no block without work.
            let groups = if few { 1 << slices.clamp(1, 8).ilog2() } else { 1 };
            let threads = elements * groups;
            let (count, slices) = (elements as i64, slices as i32);
            let mut sum = gpu.stream.launch_builder(if few { &split.few } else { &split.sum });
            sum.arg(&**partials).arg(&mut *c).arg(&count).arg(&slices);
            let blocks = threads.div_ceil(256).clamp(1, 4 * 1024) as u32;
            let cfg = LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
            // SAFETY: the arguments match `sum_slices` and `sum_few` (both `const float*, float*,
            // long long, int`); the workspace holds `slices` products of M×N floats and C holds M×N.
            unsafe { sum.launch(cfg) }
                .map_err(|e| anyhow!("the sum of the split slices failed to launch: {e:?}"))?;
        }
        if let Some(apart) = &self.apart {
            apart.after(gpu, (a, b, c), shape)?;
        }
        Ok(())
    }
}

impl Prepared<'_> {
    /// The FP32 path of a step that has one (steps 09 and 11): what its last launch sent there.
    pub fn fp32_path(&self) -> Option<&crate::fp32_path::Fp32Path> {
        match (&self.residues, &self.apart) {
            (Some(r), _) => Some(r.fp32_path()),
            (_, Some(a)) => Some(a.fp32_path()),
            _ => None,
        }
    }

    /// The moduli the last product took, for a step that multiplies residues (step 11).
    pub fn moduli_taken(&self, gpu: &Gpu) -> Result<Option<usize>> {
        match &self.residues {
            Some(r) => r.moduli(gpu),
            None => Ok(None),
        }
    }
}

/// The chapter of the book that teaches `step` (a crate named `stepNN_…`).
pub fn chapter(step: &str) -> String {
    format!("docs/src/{}.md", step.split('_').next().unwrap_or(step))
}

#[cfg(test)]
mod tests {
    use super::{SHARED_TILES_MAX, makespan, parse_layout, stream_k_layout};

    /// The same schedule, block by block: each block on the slot free first.
    fn makespan_one_by_one(whole: usize, shared: usize, each: f64, p: usize) -> f64 {
        let mut free = vec![0.0f64; p];
        let mut end: f64 = 0.0;
        for len in std::iter::repeat_n(1.0, whole).chain(std::iter::repeat_n(each, shared)) {
            let slot = (0..p).min_by(|&a, &b| free[a].total_cmp(&free[b])).unwrap();
            free[slot] += len;
            end = end.max(free[slot]);
        }
        end
    }

    #[test]
    fn the_makespan_by_groups_is_the_makespan_block_by_block() {
        for (whole, shared, each, p) in [
            (384, 144, 0.94, 132),
            (0, 33, 0.3, 132),
            (1952, 160, 0.65, 132),
            (7, 40, 0.5, 3),
            (5, 0, 1.0, 2),
            (0, 7, 2.0, 7),
        ] {
            let (a, b) = (makespan(whole, shared, each, p), makespan_one_by_one(whole, shared, each, p));
            assert!((a - b).abs() < 1e-9, "{whole} {shared} {each} {p}: {a} against {b}");
        }
    }

    #[test]
    fn a_forced_layout_is_checked() {
        assert_eq!(parse_layout("24,33", 32, 16).unwrap(), (24, 33));
        assert_eq!(parse_layout(" 32 , 32", 32, 16).unwrap(), (32, 32));
        for (bad, says) in [
            ("24", "two numbers"),
            ("a,b", "two numbers"),
            ("33,40", "at most 32"),
            ("24,31", "at least 32"),
            ("32,33", "exactly 32"),
            ("0,70000", "65535"),
        ] {
            let err = parse_layout(bad, 32, 16).unwrap_err().to_string();
            assert!(err.contains(says) && err.starts_with("STREAM_K_LAYOUT="), "{bad}: {err}");
        }
        // 128 tile rows of 64 tiles: sharing them all would overflow the table of turns.
        let err = parse_layout("0,129", 128, 64).unwrap_err().to_string();
        assert!(err.contains("table of turns") && err.starts_with("STREAM_K_LAYOUT="), "{err}");
    }

    #[test]
    fn the_makespan_model_fills_the_slots_in_order() {
        assert_eq!(makespan(264, 0, 0.0, 132), 2.0);
        assert_eq!(makespan(265, 0, 0.0, 132), 3.0);
        // 12 slots free after two rounds take the first shared blocks, the rest wait for the third.
        assert_eq!(makespan(384, 144, 0.5, 132), 3.5);
    }

    #[test]
    fn tiles_that_fill_their_waves_are_not_shared() {
        // 33×16 = 528 tiles are exactly 4 waves of 132.
        assert_eq!(stream_k_layout(33, 16, 256, 132), (33, 33));
        assert_eq!(stream_k_layout(1, 1, 256, 1), (1, 1));
    }

    #[test]
    fn a_short_product_is_not_shared() {
        // 256³ in 128×256 tiles: two tiles of 16 slices, one part-filled wave; sharing them
        // would cost more in turns than it saves.
        assert_eq!(stream_k_layout(2, 1, 16, 132), (2, 2));
    }

    #[test]
    fn a_part_filled_last_wave_is_shared() {
        // 4097³ in 128×256 tiles: 33×17 = 561 tiles, 4.25 waves of 132.
        let (whole, rows) = stream_k_layout(33, 17, 257, 132);
        assert!(whole < 33 && rows > whole, "{whole} {rows}");
        // 4096³: 512 tiles, 3.88 waves.
        let (whole, rows) = stream_k_layout(32, 16, 256, 132);
        assert!(whole < 32 && rows > whole, "{whole} {rows}");
    }

    #[test]
    fn the_layout_stays_within_the_grid_and_the_turn_table() {
        for (tm, tn, p) in [
            (512, 1, 132),
            (1, 1024, 132),
            (3, 4096, 4096),
            (65_535, 1, 7),
            (40, 40, 10_000),
            (4096, 1, 4096),
        ] {
            let (whole, rows) = stream_k_layout(tm, tn, 256, p);
            assert!(whole <= tm && rows >= whole && rows <= 65_535, "{tm}×{tn}/{p}: {whole} {rows}");
            assert!(whole == tm || (tm - whole) * tn <= SHARED_TILES_MAX, "{tm}×{tn}/{p}: {whole} {rows}");
            assert_eq!(whole == rows, whole == tm, "{tm}×{tn}/{p}: {whole} {rows}");
        }
    }
}

//! The step contract: what a GPU step's `lib.rs` declares (its kernel, parameters, launch shape,
//! checks, extension and hooks), and the checks common makes of it; a compiled step kernel is `step_kernel.rs`.

use anyhow::{Result, anyhow, bail};

use crate::gpu::{self, Compiled, LaunchLimits};
use crate::hooks::Hooks;
use crate::includes::{self, Include};
use crate::matrix::Shape;
use crate::params::{Param, Params, WIDE};
use crate::stream_k::{SHARE, SHARED_TILES_MAX};
use crate::tma::TmaBox;
use crate::verify::Precision;

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

/// The geometry of one launch: grid, block and dynamic shared memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Geometry {
    pub grid: (u32, u32, u32),
    pub block: (u32, u32, u32),
    pub dynamic_smem: u32,
    /// For a [`Schedule::StreamK`] kernel, the rows of the grid whose blocks each take one whole
    /// tile (the kernel's seventh argument; see [`stream_k_layout`](crate::stream_k::stream_k_layout)); None for every other launch.
    pub whole_rows: Option<u32>,
}

impl Geometry {
    pub fn threads(&self) -> u32 {
        self.block.0 * self.block.1 * self.block.2
    }

    /// The blocks of the grid.
    pub fn blocks(&self) -> u64 {
        u64::from(self.grid.0) * u64::from(self.grid.1) * u64::from(self.grid.2)
    }
}

// ANCHOR: gpu_step
/// Everything that differs between GPU steps; each step's `lib.rs` defines one as `STEP`, naming
/// the fields of the first group and ending with `..GpuStep::DEFAULT` for the rest (see
/// [`GpuStep::DEFAULT`]).
pub struct GpuStep {
    // Named by every step.
    /// The crate name, e.g. `step04_tiled`.
    pub name: &'static str,
    /// One line: the idea this step adds.
    pub idea: &'static str,
    /// The kernel's path in the workspace, for compiler diagnostics.
    pub file: &'static str,
    /// The kernel source, embedded with `include_str!`.
    pub source: &'static str,
    /// The files of CUDA code the kernel, its copies and its hands-on starting files include by
    /// name (`#include "NAME"`), embedded with `include_str!` (see [`crate::includes`]).
    pub includes: &'static [Include],
    /// The kernel's compile-time constants, passed to NVRTC as `-D NAME=value`.
    pub params: &'static [Param],
    /// The grid, block and shared memory the kernel is launched with for these parameters
    /// and shape.
    pub geometry: fn(&Params, Shape) -> Geometry,
    /// Rejects shapes or parameters the kernel cannot serve, with a sentence that says why.
    pub check: fn(&Params, Shape, &LaunchLimits) -> Result<(), String>,
    /// The arithmetic the kernel claims to perform: verification holds it to that
    /// precision's limits.
    pub precision: Precision,
    /// FLOPs per byte at large sizes, counted as the step's chapter counts them: the roofline
    /// places the step with these.
    pub intensity: fn(&Params) -> Intensity,

    // Named where a step differs from `GpuStep::DEFAULT`.
    /// The values the tuner tries for each parameter (empty: nothing to tune).
    pub search: &'static [(&'static str, &'static [u32])],
    /// The shape a run without size arguments uses.
    pub default_shape: fn(&LaunchLimits) -> Shape,
    /// Whether the kernel expects B transposed (Bᵀ, N×K row-major), which the host then
    /// prepares before the timed launches.
    pub b_transposed: fn(&Params) -> bool,
    /// The oldest compute capability whose instructions the kernel uses, e.g. (8, 0) for TF32
    /// tensor cores; older GPUs are refused with a sentence before anything is compiled.
    pub min_compute: (i32, i32),
    /// What the kernel takes beyond the six standard arguments.
    pub extension: Extension,
    /// Earlier kernels of the same step, each one idea short of the next, the last one short
    /// of the step's kernel: runnable with `--stage NAME`.
    pub stages: &'static [Stage],
    /// How the kernel's blocks are laid over the tiles of C.
    pub schedule: Schedule,
    /// Whether the launch pads rows to 16 bytes (see [`crate::pad`]): for a kernel whose fast
    /// path reads 16 bytes at a time, a product whose K or N is not a multiple of 4 runs on
    /// padded copies of A, B and C, copied in the launch.
    pub pads_rows: bool,
    /// Measured alternatives beside the kernel that need a launch of their own; see
    /// [`LaunchVariant`].
    pub variants: &'static [LaunchVariant],
    /// What the step adds to common's launch: its own kernels, workspaces and arguments
    /// ([`crate::hooks::Plain`] for a step that adds nothing).
    pub hooks: &'static dyn Hooks,
    /// Entry points whose spills a run accepts, up to the bytes given (stored and loaded by
    /// spill code): a twin's few words of bookkeeping, never accumulators. Any other spill, in
    /// any entry point, is refused ([`crate::spills`]).
    pub spill_allowance: &'static [(&'static str, u32)],
}
// ANCHOR_END: gpu_step

/// How a step's blocks are laid over the tiles of C.
#[derive(Clone, Copy, Debug)]
pub enum Schedule {
    /// One block per tile: the grid `geometry` gives.
    Tiles,
    /// `geometry`'s grid is one block per tile, `tiles_n` wide. The launch keeps its width but
    /// chooses its rows ([`stream_k_layout`](crate::stream_k::stream_k_layout)): the first `whole` take a tile per block, the others
    /// share the last tile rows slice by slice (Stream-K), so that a part-filled last wave leaves
    /// no SM idle. The kernel takes `whole` as a seventh argument,
    /// `matmul(M, N, K, A, B, C, int whole)`, and is compiled with `-D SHARED_TILES_MAX=…`, the size
    /// of the table through which the blocks sharing a tile take turns. The step declares the
    /// parameter [`SHARE`]; with SHARE=0 every tile is whole (`whole = tiles_m`). It also declares
    /// BK, the depth of a slice, which the layout's model counts in.
    StreamK,
    /// The step's rule chooses the parameters for each shape (see [`Choice`]; `--param` still
    /// overrides them), among them [`SHARE`]. A grid of one block in z, on the block tiles
    /// ([`Hooks::on_tiles`]), takes [`Schedule::StreamK`]'s layout; a grid of more splits K
    /// between its z blocks, every tile whole within its share of K, and the step's own product
    /// ([`Hooks::own_product`]) adds the shares (step 10).
    PerShape(Choose),
    /// One block per tile, as [`Schedule::Tiles`], with the parameters the step's rule chooses
    /// for each shape (see [`Choice`]; `--param` still overrides them): step 12's tile height.
    Chosen(Choose),
}

impl Schedule {
    /// Whether the kernel takes a Stream-K layout (`whole`, the table of turns).
    pub fn shares(self) -> bool {
        matches!(self, Schedule::StreamK | Schedule::PerShape(_))
    }

    /// The rule of a step that chooses its parameters for each shape, None for the others.
    pub fn rule(self) -> Option<Choose> {
        match self {
            Schedule::PerShape(choose) | Schedule::Chosen(choose) => Some(choose),
            Schedule::Tiles | Schedule::StreamK => None,
        }
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
/// in the step's `variants/` (or its `.diff` beside it), or on an edited copy with the same name; a
/// file is taken for the variant only if it also uses the variant's `mark` (see
/// [`GpuStep::variant_of`]).
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

/// The tensor maps a kernel takes after `matmul(M, N, K, A, B, C)` (and after what its schedule
/// and hooks add).
#[derive(Clone, Copy, Debug)]
pub enum Extension {
    /// No tensor maps (steps 02 to 07 and 10).
    None,
    /// Tensor maps of A and of B for Hopper's copy engine, built on the host for each launch
    /// (see [`crate::tma`]), copied in the boxes these functions give. The kernel is compiled
    /// for the architecture-specific target (sm_90a), which runs on compute capability 9.0 only.
    /// A kernel that also defines `transpose_b` (see [`crate::product::maps`]) gets a map of Bᵀ
    /// in B's place, written by that kernel in front of every launch (timing counts it): how
    /// step08 measures a transposing prologue.
    TensorMaps { a: fn(&Params) -> TmaBox, b: fn(&Params) -> TmaBox },
    /// As `TensorMaps`, but A first goes through the step's own `split_a(const float* A,
    /// float* parts, int M, int K, int pitch)` (with `int* marks, int* exps, const int* col_least` after, for a step
    /// that marks rows apart, see [`crate::tma::Marks`]), queued on 1024 blocks in front of every launch (timing
    /// counts it), which writes two M×K parts whose sum is A, or A's rows scaled by powers of two;
    /// A's map has a third coordinate, the part (see [`crate::tma`]).
    PartTensorMaps { a: fn(&Params) -> TmaBox, b: fn(&Params) -> TmaBox },
    /// Tensor maps of the step's own workspaces, which its own product ([`Hooks::own_product`])
    /// builds in boxes of these sizes (step 11: maps of residue bytes, columns counted in bytes);
    /// common builds none. Compiled for sm_90a, as `TensorMaps`.
    OwnMaps { a: fn(&Params) -> TmaBox, b: fn(&Params) -> TmaBox },
}

/// How a step sizes the boxes of one operand's tensor map from its parameters.
pub type BoxOf = fn(&Params) -> TmaBox;

impl Extension {
    /// The boxes of A and B, for an extension with tensor maps.
    pub fn boxes(self) -> Option<(BoxOf, BoxOf)> {
        match self {
            Extension::None => None,
            Extension::TensorMaps { a, b }
            | Extension::PartTensorMaps { a, b }
            | Extension::OwnMaps { a, b } => Some((a, b)),
        }
    }
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

/// [`GpuStep::DEFAULT`]'s launch: a grid of no blocks, which [`GpuStep::validate`] refuses.
fn no_geometry(_: &Params, _: Shape) -> Geometry {
    Geometry { grid: (0, 0, 0), block: (0, 0, 0), dynamic_smem: 0, whole_rows: None }
}

/// [`GpuStep::DEFAULT`]'s check: every run refused.
fn no_check(_: &Params, _: Shape, _: &LaunchLimits) -> Result<(), String> {
    Err("the step declares no `check`: GpuStep::DEFAULT's refuses every run".to_owned())
}

impl GpuStep {
    // ANCHOR: default
    /// What a step's declaration leaves out: `..GpuStep::DEFAULT` after the fields it names.
    ///
    /// The second group of fields holds what most steps share: the course's 4096³ problem, B as
    /// it is, the oldest GPU the course runs on (compute capability 7.5), the six standard
    /// arguments, one block per tile of C, rows read as they are, and nothing added to the launch
    /// (no stages, variants, search or hooks) and no spills allowed. A step names the fields it
    /// changes.
    ///
    /// The first group every step names itself. DEFAULT holds values that declare nothing there:
    /// no name, kernel or parameters, a launch of no threads and a check that refuses every run
    /// (so a declaration that forgets one stops at its first run, in one sentence), FP32 and an
    /// intensity of zero. What a run cannot catch, compare's tests do: every lab there must name
    /// itself, its kernel and a positive intensity.
    pub const DEFAULT: GpuStep = GpuStep {
        name: "",
        idea: "",
        file: "",
        source: "",
        includes: &[],
        params: &[],
        geometry: no_geometry,
        check: no_check,
        precision: Precision::Fp32,
        intensity: |_| Intensity { global: 0.0, shared: None },
        search: &[],
        default_shape: |_| Shape { m: 4096, n: 4096, k: 4096 },
        b_transposed: |_| false,
        min_compute: (7, 5),
        extension: Extension::None,
        stages: &[],
        schedule: Schedule::Tiles,
        pads_rows: false,
        variants: &[],
        hooks: &crate::hooks::Plain,
        spill_allowance: &[],
    };
    // ANCHOR_END: default

    /// The shape the kernel multiplies for `shape` when the launch pads rows (see
    /// [`crate::pad`]), None when it multiplies `shape` itself (also off the block tiles, whose
    /// kernels read rows as they are, and where the step's hooks say `params` pad nothing).
    pub fn padded_shape(&self, params: &Params, shape: Shape) -> Option<Shape> {
        let pads = self.pads_rows && self.hooks.on_tiles(params) && self.hooks.pads(params);
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
            bail!("{} has no stages: a step that has them lists them under --help", self.name);
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
    /// has that variant's name (its `.cu`, or a `.diff` of the step's kernel) and its source uses
    /// the variant's mark, the step's own when it has neither, and a one-sentence refusal when
    /// name and content disagree.
    pub fn variant_of(&self, path: &std::path::Path, source: &str) -> Result<Option<&'static LaunchVariant>> {
        let stem = path.file_stem();
        for v in self.variants {
            let v_stem = std::path::Path::new(v.file).file_stem();
            match (stem == v_stem, source.contains(v.mark)) {
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
                    std::path::Path::new(v_stem.unwrap_or_default())
                        .with_extension(path.extension().unwrap_or_default())
                        .display()
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
            let width = self.params.iter().map(|p| p.name.len()).max().unwrap_or(0).max(6);
            for p in self.params {
                s += &format!("  {:<width$} {} (default {})\n", p.name, p.help, p.default);
            }
        }
        if !self.variants.is_empty() {
            s += "\nVariants beside the kernel, each with its own geometry or product (--kernel FILE):\n";
            for v in self.variants {
                s += &format!("  {}\n    {}\n", v.file, v.idea);
            }
        }
        if self.schedule.rule().is_some() {
            s += "\nThe defaults above are replaced for each shape by the step's rule (the report's `choice` line says\nwhat it chose and why); --param replaces the rule's choice, --tune searches from it.\n";
        }
        if !self.stages.is_empty() {
            s += "\nStages (--stage NAME): the kernel built up one idea at a time, each stage adding one to\nthe stage before it; the step's own kernel adds the last:\n";
            for st in self.stages {
                s += &format!("  {:<18} {}\n", st.name, st.idea);
            }
        }
        let Shape { m, n, k } = (self.default_shape)(&LaunchLimits::LARGEST);
        s += &format!(
            "\nDefault shape: {m}×{n}×{k}{}.\nChapter: {} (read the book with `mdbook serve docs`).",
            if (self.default_shape)(&LaunchLimits::SM80) == (Shape { m, n, k }) {
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
        let Some(choose) = self.schedule.rule() else {
            return Ok((
                self.widened(Params::with_overrides(self.params, overrides)?, shape, overrides)?,
                None,
            ));
        };
        let choice = choose(shape, sms).map_err(|e| anyhow!("{e}"))?;
        let mut all: Vec<(String, u32)> = choice.set.iter().map(|(n, v)| ((*n).to_owned(), *v)).collect();
        all.extend_from_slice(overrides);
        let params = self.widened(Params::with_overrides(self.params, &all)?, shape, overrides)?;
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

    /// `params` compiled [`WIDE`] where a matrix of `shape`, or of the padded shape the launch
    /// multiplies, passes 2³¹ − 1 elements (or where `--param WIDE=1` asks), refused where
    /// `--param WIDE=0` asks for 32-bit offsets that cannot reach the shape's last elements.
    pub fn widened(&self, params: Params, shape: Shape, overrides: &[(String, u32)]) -> Result<Params> {
        let needs = shape.wide() || self.padded_shape(&params, shape).is_some_and(|p| p.wide());
        let asked = overrides.iter().rev().find(|(n, _)| n == WIDE.name).map(|(_, v)| *v);
        if needs && asked == Some(0) {
            bail!(
                "--param WIDE=0 asks for 32-bit offsets, but a matrix of {shape} has {} elements, \
                 past the 2147483647 they reach",
                shape.largest_matrix()
            );
        }
        Ok(if needs { params.widened(true) } else { params })
    }

    // ANCHOR: compile
    /// Compiles the kernel with `params` for `arch` (no GPU needed).
    pub fn compile(&self, params: &Params, arch: &str) -> Result<Compiled> {
        gpu::compile(&self.expanded()?, self.file, &self.target(arch), &self.defines(params))
    }

    /// The kernel as NVRTC reads it: its source with its include files put in
    /// ([`includes::expand`]).
    pub fn expanded(&self) -> Result<std::borrow::Cow<'static, str>> {
        includes::expand(self.source, self.file, self.includes)
    }

    /// Compiles the kernel with `params` to PTX for the emulator: Ampere's
    /// ([`crate::emulated::PTX_ARCH`]), or Hopper's own for a kernel that needs it.
    pub fn ptx(&self, params: &Params) -> Result<String> {
        crate::emulated::ptx(&self.expanded()?, self.file, self.ptx_arch(), &self.defines(params))
    }

    /// For a Hopper kernel: the PTX for the emulator and the log of its compile for an H100
    /// (`sm_90a`), in one compile ([`crate::emulated::hopper_ptx_and_log`]).
    pub fn hopper_ptx_and_log(&self, params: &Params) -> Result<(String, String)> {
        crate::emulated::hopper_ptx_and_log(&self.expanded()?, self.file, &self.defines(params))
    }

    /// The architecture of the PTX the emulator runs for this step.
    pub fn ptx_arch(&self) -> &'static str {
        if self.min_compute >= (9, 0) || self.extension.boxes().is_some() {
            crate::emulated::HOPPER_PTX_ARCH
        } else {
            crate::emulated::PTX_ARCH
        }
    }

    /// The `-D NAME=value` defines of a compile with `params`.
    fn defines(&self, params: &Params) -> Vec<(String, u32)> {
        let mut defines = params.defines();
        if self.schedule.shares() {
            defines.push(("SHARED_TILES_MAX".to_owned(), SHARED_TILES_MAX));
        }
        defines
    }

    /// The NVRTC target for `arch`: the architecture-specific one (`sm_90a`) for a kernel with
    /// tensor maps, whose instructions exist on that architecture alone.
    pub fn target(&self, arch: &str) -> String {
        match self.extension.boxes() {
            Some(_) if !arch.ends_with('a') => format!("{arch}a"),
            _ => arch.to_owned(),
        }
    }
    // ANCHOR_END: compile

    /// Checks `params` and `shape` against the step's own rules and the device's grid limits.
    pub fn validate(&self, params: &Params, shape: Shape, limits: &LaunchLimits) -> Result<Geometry> {
        check_tile_room(shape)?;
        (self.check)(params, shape, limits).map_err(|why| anyhow!("{why}"))?;
        if self.schedule.shares() && params.get(SHARE.name) > 1 {
            bail!("{params}: SHARE is 0 (a block per tile) or 1 (the last tile rows shared)");
        }
        let geometry = (self.geometry)(params, shape);
        let Geometry { grid, block, .. } = geometry;
        if [grid.0, grid.1, grid.2, block.0, block.1, block.2].contains(&0) {
            bail!(
                "{}'s launch gives a grid of {grid:?} blocks of {block:?} threads: none may be 0",
                self.name
            );
        }
        if geometry.threads() > limits.max_threads_per_block {
            bail!(
                "{params} gives blocks of {} threads, more than the {} a block may have",
                geometry.threads(),
                limits.max_threads_per_block
            );
        }
        let (_, gy, gz) = geometry.grid;
        if gy > 65_535 || gz > 65_535 {
            bail!("the shape {shape} needs a grid of {gy} blocks in y, more than the 65535 a launch allows");
        }
        Ok(geometry)
    }
}

/// The chapter of the book that teaches `step` (a crate named `stepNN_…`).
pub fn chapter(step: &str) -> String {
    format!("docs/src/{}.md", step.split('_').next().unwrap_or(step))
}

#[cfg(test)]
#[path = "step_tests.rs"]
mod tests;

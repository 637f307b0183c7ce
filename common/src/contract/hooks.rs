//! What a step adds to common's product, behind one interface. Most steps add nothing: their
//! kernel takes the six standard arguments (and tensor maps, or a Stream-K layout, which common
//! builds). A step whose product needs more declares [`Hooks`] in its own crate:
//!
//! - step 09 marks the rows and columns its split cannot carry and sends them down the FP32 path;
//! - step 10 splits K between blocks, chooses its kernel per shape and adds the slices after;
//! - step 11 queues its residue kernels, the INT8 product and the rebuild;
//! - step 12 adds C's tensor map, its schedule's sharing and the kernel that cuts units.
//!
//! A step's product ([`Hooks::product`]) is written once, against [`Queue`]: common hands it a
//! queue on the GPU or on the PTX emulator, and a [`Product`] with the shape, the parameters, the
//! kernel's launch and the operands.

use anyhow::Result;

use crate::matrix::Shape;
use crate::params::{Param, Params};
pub use crate::paths::{EVERY_STEP, PathCase, Paths, Reach};
pub use crate::product::Product;
pub use crate::queue::{CudaSource, KernelArg, LaunchShape, Queue};

/// What a step's launch adds to the report: a label and one line, or None.
pub type ReportLine = Option<(&'static str, String)>;

/// An option of a step's own on the command line (step 11's `--moduli N`): a whole number in
/// `range` that sets some of the step's parameters.
#[derive(Clone, Copy, Debug)]
pub struct StepOption {
    /// The long name, without the dashes.
    pub long: &'static str,
    pub value_name: &'static str,
    pub help: &'static str,
    pub range: (u32, u32),
    /// The value given, made into parameter overrides around those of `--param` (`overrides`).
    pub apply: fn(u32, &mut Vec<(String, u32)>),
}

/// A step's additions to common's launch; every method has the plain launch as its default.
pub trait Hooks: Sync {
    /// The step's own command-line option, if it has one.
    fn option(&self) -> Option<StepOption> {
        None
    }

    // ANCHOR: product
    /// One product C = A·B on either device: common's plain launch by default.
    fn product(&self, q: &mut dyn Queue, product: &Product) -> Result<()> {
        product.plain(q)
    }

    /// What the last product of `shape` with `params` sent down each path, read after it has
    /// finished, for a step whose product has more than one (None for the others).
    fn paths(&self, _q: &mut dyn Queue, _shape: Shape, _params: &Params) -> Result<Option<Paths>> {
        Ok(None)
    }
    // ANCHOR_END: product

    /// The cases `--every-path` runs: one or more for each path of the step's product (common's
    /// [`EVERY_STEP`] by default: an odd shape, the default shape and two input families).
    fn every_path(&self) -> &'static [PathCase] {
        EVERY_STEP
    }

    /// Device bytes the step's launches need besides A, B and C (the run's budget), for `shape`,
    /// the shape the kernel multiplies: padded where the launch pads rows, as the step's own
    /// launch sees it ([`KernelCall::shape`]).
    fn workspace_bytes(&self, _params: &Params, _shape: Shape) -> u64 {
        0
    }

    /// Whether `params` run the step's block tiles. A kernel off them keeps the grid its step
    /// gives (no Stream-K layout) and reads rows as they are (nothing padded).
    fn on_tiles(&self, _params: &Params) -> bool {
        true
    }

    /// Whether a launch with `params` pads rows, for a step whose launch pads them
    /// ([`crate::step::GpuStep::pads_rows`]) and where `params` run the block tiles.
    fn pads(&self, _params: &Params) -> bool {
        true
    }

    /// The grid of a step whose schedule shares no tiles ([`crate::step::Schedule::Tiles`]), for
    /// `shape` on a device that holds `slots` blocks at once: `grid` as the step's `geometry` gives
    /// it by default; step 09 adds blocks in z that split K where the tiles are fewer than the
    /// slots.
    fn grid(&self, _params: &Params, _shape: Shape, grid: (u32, u32, u32), _slots: u32) -> (u32, u32, u32) {
        grid
    }

    /// What the launch with `params` on `grid` adds for `shape`, for the report: its label and one
    /// line (step 10's split of K, step 11's moduli, step 12's schedule and cut); None where it
    /// adds nothing worth a line.
    fn report_line(&self, _params: &Params, _shape: Shape, _grid: (u32, u32, u32)) -> ReportLine {
        None
    }

    /// The depth of the kernel's k-tile with `params`, where no parameter `BK` or `TILE` gives
    /// it (step 12's 32-deep tiles): a scaled run of a long K emulates two of them at least.
    /// None: the parameters' (or 128).
    fn k_tile(&self, _params: &Params) -> Option<u32> {
        None
    }

    /// Why the launch on `grid` at the shorter depth `short` cannot stand for the launch at
    /// `whole` (a scaled run of a long K emulates the first for the second; see
    /// `run/depth.rs`): None where it can. Step 12 cuts the last round along K at some depths
    /// and not at others.
    fn shorter_depth(
        &self,
        _params: &Params,
        _whole: Shape,
        _short: Shape,
        _grid: (u32, u32, u32),
    ) -> Option<String> {
        None
    }

    /// Why a scaled run of the launch on `grid` at `shape` would have to run every block of a
    /// side longer than a scaled run takes (blocks that take unequal shares of the work, which
    /// the launch cannot name): a scaled run is then refused before it emulates anything. None
    /// where a few blocks can stand for the rest, or where only the emulation can tell.
    fn unequal_shares(&self, _params: &Params, _shape: Shape, _grid: (u32, u32, u32)) -> Option<String> {
        None
    }

    /// The set the tuner times for `params`, of a step that declares `decl`: `params` itself, or
    /// one set for all those that compile the same kernel and launch it the same way.
    fn tuned_as(&self, _decl: &[Param], params: Params) -> Result<Params> {
        Ok(params)
    }
}

/// The hooks of a step that adds nothing to common's launch.
pub struct Plain;

impl Hooks for Plain {}

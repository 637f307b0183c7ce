//! What a step adds to common's product, behind one interface. Most steps add nothing: their
//! kernel takes the six standard arguments (and tensor maps, or a Stream-K layout, which common
//! builds). A step whose product needs more declares [`Hooks`] in its own crate:
//!
//! - step 09 marks the rows and columns its split cannot carry and sends them down the FP32 path;
//! - step 10 splits K between blocks, chooses its kernel per shape and adds the slices after;
//! - step 11 queues its residue kernels, the INT8 product and the rebuild.
//!
//! Common's step kernel ([`crate::step_kernel::StepKernel`]) asks the hooks once, when a kernel is
//! loaded, for the step's own product ([`OwnProduct`]), and hands that a [`KernelCall`] on every
//! product: the compiled kernel, its grid and the standard arguments, with the tensor maps common
//! builds.

use anyhow::{Result, anyhow, bail};
use cudarc::driver::{CudaFunction, CudaSlice, LaunchArgs, LaunchConfig, PushKernelArg};

pub use crate::emulated_call::{EmulatedCall, EmulatedOperands};
use crate::gpu::{Gpu, Kernel};
use crate::matrix::Shape;
use crate::params::{Param, Params};
pub use crate::paths::Paths;
use crate::tma::{Marks, Prologue, TensorMap, Tma, TmaBox};

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

    /// The step's own product for a compiled kernel (its entry points found in the kernel's
    /// module; each launch brings its parameters in the [`KernelCall`]); None: common's plain
    /// launch.
    fn own_product(&self, _kernel: &Kernel) -> Result<Option<Box<dyn OwnProduct>>> {
        Ok(None)
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

    /// The set the tuner times for `params`, of a step that declares `decl`: `params` itself, or
    /// one set for all those that compile the same kernel and launch it the same way.
    fn tuned_as(&self, _decl: &[Param], params: Params) -> Result<Params> {
        Ok(params)
    }

    /// One product on the emulator: the kernels and arguments [`Hooks::own_product`]'s launch
    /// queues on a GPU, run on the CPU (the plain launch by default).
    fn emulate(&self, call: &mut EmulatedCall, operands: EmulatedOperands) -> Result<()> {
        call.plain(operands)
    }

    /// Whether [`Hooks::emulate`] runs what the step's launch runs on a GPU; if not, why not, in
    /// words that follow "needs an H100 or H200: ".
    fn emulated(&self) -> Result<(), &'static str> {
        Ok(())
    }
}

/// The hooks of a step that adds nothing to common's launch.
pub struct Plain;

impl Hooks for Plain {}

// ANCHOR: own_product
/// A step's own product for one step kernel, with what it keeps between launches.
pub trait OwnProduct: Send + Sync {
    /// Queues one product C = A·B (asynchronous: errors may surface at the next sync).
    fn enqueue(&self, call: &KernelCall, operands: Operands) -> Result<()>;

    /// Times the next product's FP32 path apart, for a product that has one (false: it has
    /// none).
    fn time_paths_next(&self, _gpu: &Gpu) -> Result<bool> {
        Ok(false)
    }

    /// What the last product sent down each path, read after it has finished (None without an
    /// FP32 path).
    fn paths(&self, _gpu: &Gpu) -> Result<Option<Paths>> {
        Ok(None)
    }
}
// ANCHOR_END: own_product

/// A, B and C of one launch.
pub type Operands<'o> = (&'o CudaSlice<f32>, &'o CudaSlice<f32>, &'o mut CudaSlice<f32>);

/// Common's tensor maps and the step's prologue, where common builds a kernel's maps.
pub(crate) type CommonMaps<'c> = Option<(&'c Tma, Option<&'c Prologue>)>;

/// One launch of a step's compiled kernel, as common's launch hands it to the step: the kernel, its
/// grid (from [`crate::step_kernel::StepKernel::fit`]), the shape the buffers hold and the tensor maps.
pub struct KernelCall<'c> {
    pub gpu: &'c Gpu,
    pub kernel: &'c Kernel,
    pub cfg: LaunchConfig,
    pub shape: Shape,
    pub params: &'c Params,
    /// The boxes of A's and B's tensor maps, for a kernel that reads through them.
    pub boxes: Option<(TmaBox, TmaBox)>,
    dims: [i32; 3],
    whole: Option<i32>,
    maps: CommonMaps<'c>,
}

impl<'c> KernelCall<'c> {
    /// The call of `kernel` on `cfg` for `shape`; `whole` the rows of whole tiles of a Stream-K
    /// layout, `boxes` those of the kernel's tensor maps, and `maps` common's tensor maps and the
    /// step's prologue, where common builds the maps.
    pub(crate) fn new(
        gpu: &'c Gpu,
        kernel: &'c Kernel,
        (cfg, whole): (LaunchConfig, Option<u32>),
        shape: Shape,
        params: &'c Params,
        (boxes, maps): (Option<(TmaBox, TmaBox)>, CommonMaps<'c>),
    ) -> Self {
        let dims = [shape.m, shape.n, shape.k].map(|v| v as i32);
        KernelCall { gpu, kernel, cfg, shape, params, boxes, dims, whole: whole.map(|w| w as i32), maps }
    }

    /// The kernel's launch with its standard arguments pushed: `M, N, K, A, B, C`, and `whole`
    /// for a launch with a Stream-K layout. The step pushes its own after them.
    pub fn args<'a>(&'a self, operands: Operands<'a>) -> LaunchArgs<'a> {
        self.args_of(&self.kernel.func, operands)
    }

    /// As [`KernelCall::args`], for another entry point of the kernel's module that takes the
    /// same arguments (a step's variant of `matmul`).
    pub fn args_of<'a>(&'a self, func: &'a CudaFunction, (a, b, c): Operands<'a>) -> LaunchArgs<'a> {
        let mut builder = self.gpu.stream.launch_builder(func);
        let [m, n, k] = &self.dims;
        builder.arg(m).arg(n).arg(k).arg(a).arg(b).arg(c);
        if let Some(whole) = &self.whole {
            builder.arg(whole);
        }
        builder
    }

    /// The tensor maps of A and B (A first through the step's prologue, which takes `marks` where
    /// the step marks rows apart), queued on the stream with any padding copies they need.
    pub fn maps(
        &self,
        (a, b): (&CudaSlice<f32>, &CudaSlice<f32>),
        marks: Option<Marks>,
    ) -> Result<[TensorMap; 2]> {
        let (Some((tma, prologue)), Some(boxes)) = (self.maps, self.boxes) else {
            bail!("common builds no tensor maps for this step's kernel");
        };
        tma.maps(self.gpu, self.shape, (a, b), boxes, prologue, marks)
    }

    /// Whether the launch has a Stream-K layout (`whole` follows the six standard arguments).
    pub fn has_layout(&self) -> bool {
        self.whole.is_some()
    }

    /// Queues the plain launch: the standard arguments, then the tensor maps where the kernel
    /// reads through them.
    pub fn plain(&self, (a, b, c): Operands) -> Result<()> {
        if self.boxes.is_some() && self.maps.is_none() {
            bail!(
                "this kernel reads tensor maps of the step's own workspaces, and the step's hooks gave no product that builds them"
            );
        }
        let maps = match self.maps {
            Some(_) => Some(self.maps((a, b), None)?),
            None => None,
        };
        let mut builder = self.args((a, b, c));
        if let Some([a_map, b_map]) = &maps {
            builder.arg(a_map).arg(b_map);
        }
        // SAFETY: the arguments match `matmul(int, int, int, const float*, const float*, float*)`,
        // with `int whole` after for a Stream-K layout, and two 128-byte `CUtensorMap`s of buffers
        // that outlive the launch for a kernel with tensor maps (A and B, or their workspaces, only
        // freed when a later launch needs larger ones, after this one in stream order); the buffers
        // hold at least the elements the shape addresses (checked by common's launch).
        unsafe { builder.launch(self.cfg) }.map_err(|e| anyhow!("the kernel failed to launch: {e:?}"))?;
        Ok(())
    }
}

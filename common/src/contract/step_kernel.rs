//! A step kernel: a step's kernel compiled for the present GPU with one parameter set
//! ([`StepKernel`]), its geometry fitted to this device, and the queueing of one product.

use std::sync::Mutex;

use anyhow::{Result, anyhow, bail};
use cudarc::driver::{CudaSlice, DevicePtr};

use crate::gpu::{Gpu, GpuFacts, Kernel, Resources};
use crate::gpu_queue::{GpuQueue, GpuState};
use crate::hooks::Paths;
use crate::matrix::{Inputs, Shape, transpose};
use crate::params::Params;
use crate::product::Product;
use crate::queue::{LaunchShape, Queue};
use crate::step::{Extension, Geometry, GpuStep};
use crate::stream_k::{SHARE, forced_layout, stream_k_layout};

/// A step's kernel compiled for the present GPU with one parameter set.
pub struct StepKernel<'a> {
    pub step: &'a GpuStep,
    pub params: Params,
    pub kernel: Kernel,
    /// What the step's launch keeps from product to product (its workspaces, its entry points).
    state: Mutex<GpuState>,
    /// The shape the last product's kernel multiplied (padded where the launch pads rows), for
    /// reading what it sent down each path.
    last: Mutex<Option<Shape>>,
}

impl<'a> StepKernel<'a> {
    /// Compiles and loads. A set whose entry points spill registers runs: the report names the
    /// spill ([`crate::spills`]).
    pub fn new(gpu: &Gpu, step: &'a GpuStep, params: Params) -> Result<Self> {
        step.check_compute(gpu.info.compute_capability, &gpu.info.name)?;
        let kernel = Kernel::load(gpu, step.compile(&params, &gpu.info.arch())?)?;
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
    pub fn chosen_for(&self, gpu: &Gpu, shape: Shape) -> Result<Option<StepKernel<'a>>> {
        match self.step.schedule.rule() {
            Some(_) => Ok(Some(Self::for_shape(gpu, self.step, shape, &[])?.0)),
            None => Ok(None),
        }
    }

    /// Wraps a kernel already compiled and loaded for `step` with `params`.
    pub fn with_kernel(step: &'a GpuStep, params: Params, kernel: Kernel) -> Result<Self> {
        let state = Mutex::new(GpuState::compiled_wide(params.wide()));
        Ok(Self { step, params, kernel, state, last: Mutex::default() })
    }

    /// The geometry for `shape` on this device (the parameters checked at that shape first), and
    /// its resource cost.
    pub fn fit(&self, info: &GpuFacts, shape: Shape) -> Result<(Geometry, Resources)> {
        self.fit_validated(info, shape, self.step.validate(&self.params, shape, &info.limits)?)
    }

    /// [`StepKernel::fit`] for a `geometry` that [`GpuStep::validate`] gave at `shape` on this
    /// device.
    pub fn fit_validated(
        &self,
        info: &GpuFacts,
        shape: Shape,
        geometry: Geometry,
    ) -> Result<(Geometry, Resources)> {
        let resources = self.kernel.resources(info, geometry.threads(), geometry.dynamic_smem)?;
        if resources.blocks_per_sm == 0 {
            bail!(
                "with {} the kernel cannot fit one block on an SM ({} registers × {} threads, {} bytes of shared memory)",
                self.params,
                resources.registers,
                geometry.threads(),
                resources.static_smem + resources.dynamic_smem
            );
        }
        let geometry = layout(self.step, &self.params, shape, geometry, resources.resident_blocks)?;
        Ok((geometry, resources))
    }

    /// Queues one launch computing C = A·B on this GPU's stream (asynchronous: errors may
    /// surface at the next sync): [`product`] on buffers that hold `shape`.
    pub fn enqueue(
        &self,
        gpu: &Gpu,
        geometry: Geometry,
        shape: Shape,
        a: &CudaSlice<f32>,
        b: &CudaSlice<f32>,
        c: &mut CudaSlice<f32>,
    ) -> Result<()> {
        if a.len() < shape.m * shape.k || b.len() < shape.k * shape.n || c.len() < shape.m * shape.n {
            bail!("device buffers are smaller than the shape {shape} needs");
        }
        let poisoned = || anyhow!("the launch's state was poisoned by a failed launch");
        let mut state = self.state.lock().map_err(|_| poisoned())?;
        let ptr = |s: &CudaSlice<f32>| s.device_ptr(&gpu.stream).0;
        let mut q = GpuQueue::new(gpu, &self.kernel, &mut state);
        let ran = product(&mut q, self.step, &self.params, geometry, shape, (ptr(a), ptr(b), ptr(c)));
        state.end_product();
        *self.last.lock().map_err(|_| poisoned())? = Some(ran?);
        Ok(())
    }
}

// ANCHOR: product
/// One product on `q`, the one launch both devices run: for a step that pads rows at a shape
/// that needs it, the padding copies around the kernel ([`crate::pad::around`]); the [`Product`]
/// of the step's kernel on the shape it multiplies, with `geometry` (the grid and layout planned
/// for `shape`: BN and BK are multiples of 4, so padding K and N to multiples of 4 adds no tile
/// and no slice); then the step's hooks. What the hooks forked joins the product's stream before
/// C is copied back, even where a launch failed. Returns the shape the kernel multiplied.
pub fn product(
    q: &mut dyn Queue,
    step: &GpuStep,
    params: &Params,
    geometry: Geometry,
    shape: Shape,
    operands: (u64, u64, u64),
) -> Result<Shape> {
    let padded = step.padded_shape(params, shape);
    let mut ran = shape;
    let (grid, block, smem) = (geometry.grid, geometry.block, geometry.dynamic_smem);
    let launch = LaunchShape { grid, block, smem };
    crate::pad::around(q, shape, padded, operands, |q, shape, operands| {
        ran = shape;
        let product = Product {
            shape,
            params,
            launch,
            whole: geometry.whole_rows,
            boxes: step.extension.boxes().map(|(a, b)| (a(params), b(params))),
            common_maps: matches!(
                step.extension,
                Extension::TensorMaps { .. } | Extension::PartTensorMaps { .. }
            ),
            parts: matches!(step.extension, Extension::PartTensorMaps { .. }),
            operands,
        };
        let queued = step.hooks.product(q, &product);
        queued.and(q.join())
    })?;
    Ok(ran)
}
// ANCHOR_END: product

/// One product of `inputs` on `q` from the host's memory: A, B (Bᵀ where the kernel takes it)
/// and C poisoned with NaN uploaded, [`product`] queued, C read back at the problem's shape, the
/// buffers freed (also where the product failed). Returns C and the shape the kernel multiplied.
pub fn multiply(
    q: &mut dyn Queue,
    step: &GpuStep,
    params: &Params,
    geometry: Geometry,
    inputs: &Inputs,
) -> Result<(Vec<f32>, Shape)> {
    let shape = inputs.shape;
    let transposed = (step.b_transposed)(params);
    if transposed && step.padded_shape(params, shape).is_some() {
        bail!("{}: a kernel that takes Bᵀ does not pad its rows", step.name);
    }
    let a = q.upload("A", &inputs.a.data)?;
    let b = match transposed {
        true => q.upload("Bᵀ", &transpose(&inputs.b.data, shape.k, shape.n)),
        false => q.upload("B", &inputs.b.data),
    };
    let ran = b.and_then(|b| {
        let c = q.upload("C", &vec![f32::from_bits(u32::MAX); shape.m * shape.n]);
        let ran = c.and_then(|c| {
            let ran = product(q, step, params, geometry, shape, (a, b, c));
            let out = ran.and_then(|ran| Ok((q.download(c, shape.m * shape.n)?, ran)));
            q.free(c).and(out)
        });
        q.free(b).and(ran)
    });
    q.free(a).and(ran)
}

/// The grid of a step whose schedule shares tiles, laid out for a device that holds `slots`
/// blocks at once (its SMs times the blocks each holds): the rows of whole tiles and the rows
/// that share the last tiles slice by slice (Stream-K), or every tile whole. Other schedules keep
/// the step's grid as its hooks lay it out ([`Hooks::grid`](crate::hooks::Hooks::grid)): a grid
/// of more than one block in z is then a split of K, and any other step's z is its own (step 11's
/// one product per modulus).
pub fn layout(
    step: &GpuStep,
    params: &Params,
    shape: Shape,
    mut geometry: Geometry,
    slots: u32,
) -> Result<Geometry> {
    if !step.schedule.shares() {
        geometry.grid = step.hooks.grid(params, shape, geometry.grid, slots);
        return Ok(geometry);
    }
    if geometry.grid.2 > 1 || !step.hooks.on_tiles(params) {
        // A split product: every tile is whole within its slice of K; a short side's kernel has
        // no tiles to share.
        geometry.whole_rows = Some(geometry.grid.1);
        return Ok(geometry);
    }
    let forced = forced_layout(geometry.grid.1, geometry.grid.0)?;
    let (whole, rows) = if let Some(f) = forced {
        f
    } else if params.get(SHARE.name) == 1 {
        let slices = (shape.k as u32).div_ceil(params.get("BK"));
        stream_k_layout(geometry.grid.1, geometry.grid.0, slices, slots)
    } else {
        (geometry.grid.1, geometry.grid.1)
    };
    geometry.grid.1 = rows;
    geometry.whole_rows = Some(whole);
    Ok(geometry)
}

impl StepKernel<'_> {
    /// Times the next product's FP32 path apart (steps 09 and 11 time the part between
    /// `time_from` and `time_to`).
    pub fn time_paths_next(&self) -> Result<()> {
        self.state
            .lock()
            .map_err(|_| anyhow!("the launch's state was poisoned by a failed launch"))?
            .time_next();
        Ok(())
    }

    /// What the last product sent down each path, for a step whose launch has more than one
    /// (read after the product has finished), with the time of its part timed apart, if any.
    pub fn paths(&self, gpu: &Gpu) -> Result<Option<Paths>> {
        let poisoned = || anyhow!("the launch's state was poisoned by a failed launch");
        let Some(shape) = *self.last.lock().map_err(|_| poisoned())? else { return Ok(None) };
        let mut state = self.state.lock().map_err(|_| poisoned())?;
        let mut q = GpuQueue::new(gpu, &self.kernel, &mut state);
        let paths = self.step.hooks.paths(&mut q, shape, &self.params)?;
        let ms = q.timed_ms()?;
        Ok(paths.map(|p| Paths { ms: ms.or(p.ms), ..p }))
    }
}

//! The one measuring recipe: the buffers of a shape, a step kernel's geometry fitted, its first
//! product run on a poisoned C and kept, the timed products, the product after them kept, cuBLAS
//! measured the same way, and the f64 reference. A step's run, `--tune`, the benches, `compare`
//! and the tests all measure through [`measure`].

use anyhow::{Result, anyhow};
use cudarc::driver::{CudaSlice, DevicePtrMut};

use crate::cublas::Blas;
use crate::gpu::{Gpu, Resources};
use crate::hooks::Paths;
use crate::matrix::{Inputs, Shape};
use crate::params::Params;
use crate::reference::{self, Reference};
use crate::report::NextProduct;
use crate::step::{Geometry, GpuStep};
use crate::step_kernel::StepKernel;
use crate::timing::{self, Sampling, Stats};
use crate::verify::{self, Precision, Verdict};

/// The compiling part of the recipe: a step's kernels for the shapes it is measured at, one
/// parameter set, or, for a step that chooses per shape ([`crate::Schedule::rule`]), the set
/// it chooses at each shape, each set compiled once.
pub struct StepKernels<'a> {
    step: &'a GpuStep,
    /// None: the step's choice at each shape.
    fixed: Option<Params>,
    compiled: std::cell::RefCell<Vec<std::rc::Rc<StepKernel<'a>>>>,
}

impl<'a> StepKernels<'a> {
    /// `params` at every shape.
    pub fn fixed(gpu: &Gpu, step: &'a GpuStep, params: Params) -> Result<Self> {
        let step_kernel = StepKernel::new(gpu, step, params.clone())?;
        Ok(Self { step, fixed: Some(params), compiled: std::cell::RefCell::new(vec![step_kernel.into()]) })
    }

    /// The step's defaults, or its choice at each shape where it chooses.
    pub fn defaults(gpu: &Gpu, step: &'a GpuStep) -> Result<Self> {
        match step.schedule.rule() {
            Some(_) => Ok(Self { step, fixed: None, compiled: std::cell::RefCell::new(Vec::new()) }),
            None => Self::fixed(gpu, step, Params::defaults(step.params)),
        }
    }

    /// The step whose kernels these are.
    pub fn step(&self) -> &'a GpuStep {
        self.step
    }

    /// The parameters at `shape`.
    pub fn params(&self, gpu: &Gpu, shape: Shape) -> Result<Params> {
        match &self.fixed {
            Some(p) => self.step.widened(p.clone(), shape, &[]),
            None => Ok(self.step.params_for(shape, gpu.info.sms, &[])?.0),
        }
    }

    /// The kernel for `shape`, compiled on first use.
    pub fn at(&self, gpu: &Gpu, shape: Shape) -> Result<std::rc::Rc<StepKernel<'a>>> {
        let params = self.params(gpu, shape)?;
        if let Some(p) = self.compiled.borrow().iter().find(|p| p.params == params) {
            return Ok(p.clone());
        }
        let p = std::rc::Rc::new(StepKernel::new(gpu, self.step, params)?);
        self.compiled.borrow_mut().push(p.clone());
        Ok(p)
    }
}

/// A, B and C on the device for one shape, and Bᵀ once a step that wants it has run.
pub struct Buffers {
    pub a: CudaSlice<f32>,
    pub b: CudaSlice<f32>,
    pub bt: Option<CudaSlice<f32>>,
    pub c: CudaSlice<f32>,
    pub shape: Shape,
}

pub use crate::matrix::transpose;

impl Buffers {
    pub fn upload(gpu: &Gpu, inputs: &Inputs) -> Result<Self> {
        let s = &gpu.stream;
        let err = |e| anyhow!("copying the inputs to the GPU failed: {e:?}");
        Ok(Self {
            a: s.clone_htod(&inputs.a.data).map_err(err)?,
            b: s.clone_htod(&inputs.b.data).map_err(err)?,
            bt: None,
            c: s.alloc_zeros(inputs.shape.m * inputs.shape.n).map_err(err)?,
            shape: inputs.shape,
        })
    }

    /// Makes Bᵀ (N×K) on the host, outside any timing, if `step_kernel`'s kernel expects it.
    pub fn transpose_b_for(&mut self, gpu: &Gpu, step_kernel: &StepKernel) -> Result<()> {
        if self.bt.is_some() || !(step_kernel.step.b_transposed)(&step_kernel.params) {
            return Ok(());
        }
        let b = gpu
            .stream
            .clone_dtoh(&self.b)
            .map_err(|e| anyhow!("copying B back from the GPU failed: {e:?}"))?;
        let bt = transpose(&b, self.shape.k, self.shape.n);
        drop(b);
        self.bt =
            Some(gpu.stream.clone_htod(&bt).map_err(|e| anyhow!("copying Bᵀ to the GPU failed: {e:?}"))?);
        Ok(())
    }

    /// A, the B that `step_kernel`'s kernel expects (B or Bᵀ), and C.
    pub fn operands(
        &mut self,
        step_kernel: &StepKernel,
    ) -> Result<(&CudaSlice<f32>, &CudaSlice<f32>, &mut CudaSlice<f32>)> {
        let b = if (step_kernel.step.b_transposed)(&step_kernel.params) {
            self.bt.as_ref().ok_or_else(|| anyhow!("Bᵀ was not made for {}", step_kernel.step.name))?
        } else {
            &self.b
        };
        Ok((&self.a, b, &mut self.c))
    }
}

/// Fills `c` with NaN (every byte 0xFF).
pub fn poison(gpu: &Gpu, c: &mut CudaSlice<f32>) -> Result<()> {
    let bytes = c.num_bytes();
    let (ptr, _record) = c.device_ptr_mut(&gpu.stream);
    // SAFETY: `ptr` addresses `bytes` bytes of a live allocation on this stream.
    unsafe { cudarc::driver::result::memset_d8_async(ptr, 0xFF, bytes, gpu.stream.cu_stream()) }
        .map_err(|e| anyhow!("poisoning the output failed: {e:?}"))
}

fn download(gpu: &Gpu, c: &CudaSlice<f32>) -> Result<Vec<f32>> {
    gpu.stream.clone_dtoh(c).map_err(|e| anyhow!("copying C back from the GPU failed: {e:?}"))
}

/// Waits for the queued work; a fault inside the kernel surfaces here.
pub fn sync(gpu: &Gpu) -> Result<()> {
    crate::hardware::watchdog::wait(gpu, 1).map_err(|e| {
        anyhow!("the kernel failed while running ({e}); if you edited it, look for an out-of-bounds access")
    })
}

// ANCHOR: recipe
/// What one measurement does after its first product, which always runs on output poisoned with
/// NaN and is kept for verification.
#[derive(Clone, Copy, Debug)]
pub struct Recipe {
    /// How the timed products are sampled; None: the first product alone, untimed.
    pub sampling: Option<Sampling>,
    /// One more product after the timed ones, on output poisoned again, kept to set beside the
    /// first: what a product leaves behind for the next (a count never reset) shows there.
    pub next: bool,
    /// For a step with an FP32 path: one more product, with that path timed apart.
    pub paths: bool,
}

impl Recipe {
    /// A run's recipe: timed, the next product kept where `verify`, the FP32 path timed apart.
    pub fn timed(sampling: Sampling, verify: bool) -> Recipe {
        Recipe { sampling: Some(sampling), next: verify, paths: true }
    }

    /// Untimed: the first product and the next, each on poisoned output (a test's check).
    pub fn checked() -> Recipe {
        Recipe { sampling: None, next: true, paths: false }
    }
}

/// The product after the timed ones set beside the first (None where the recipe ran none).
pub type Next = Option<NextProduct>;

/// What one measurement gave.
pub struct Measured {
    pub shape: Shape,
    pub geometry: Geometry,
    pub resources: Resources,
    /// C of the first product, on output poisoned with NaN.
    pub c: Vec<f32>,
    /// C of the product after the timed ones (on output poisoned again), where the recipe asks.
    pub c_next: Option<Vec<f32>>,
    pub time: Option<Stats>,
    /// What the FP32 path took and the whole time of the product that timed it apart.
    pub paths: Option<(Paths, f64)>,
}

impl Measured {
    /// C held to `precision`'s limits against `reference`, and the next product beside it.
    pub fn verify(&self, reference: &Reference, precision: Precision) -> (Verdict, Next) {
        let judge = |c: &[f32]| verify::verify(self.shape, c, reference, precision);
        NextProduct::judge_both(&self.c, self.c_next.as_deref(), judge)
    }

    /// The verdict that decides: the first product's, or the next's where that one differs and
    /// fails.
    pub fn decisive(&self, reference: &Reference, precision: Precision) -> Verdict {
        match self.verify(reference, precision) {
            (_, Some(NextProduct::Differs { verdict, .. })) if !verdict.passed() => *verdict,
            (first, _) => first,
        }
    }

    /// The time of the timed products (an error for a recipe that timed none).
    pub fn stats(&self) -> Result<Stats> {
        self.time.ok_or_else(|| anyhow!("the measurement timed no products"))
    }
}

/// [`measure`] with the geometry already fitted (by [`StepKernel::fit`]) for `bufs`'s shape.
pub fn measure_fitted(
    gpu: &Gpu,
    step_kernel: &StepKernel,
    (geometry, resources): (Geometry, Resources),
    bufs: &mut Buffers,
    recipe: Recipe,
) -> Result<Measured> {
    let shape = bufs.shape;
    bufs.transpose_b_for(gpu, step_kernel)?;
    let (a, b, c) = bufs.operands(step_kernel)?;
    let mut product = |c: &mut CudaSlice<f32>| step_kernel.enqueue(gpu, geometry, shape, a, b, c);
    let (first, time, next) = recipe_on(gpu, c, &mut product, recipe)?;
    let paths = match recipe.paths {
        true => paths_run(gpu, step_kernel, geometry, shape, bufs)?,
        false => None,
    };
    Ok(Measured { shape, geometry, resources, c: first, c_next: next, time, paths })
}
// ANCHOR_END: recipe

/// The course's one measuring recipe, for a step kernel on the inputs `bufs` hold: its geometry
/// for the shape on this GPU, Bᵀ made where the kernel expects it, one product on poisoned
/// output kept, then what `recipe` asks: the timed products, one more product on poisoned output,
/// the FP32 path timed apart.
pub fn measure(gpu: &Gpu, step_kernel: &StepKernel, bufs: &mut Buffers, recipe: Recipe) -> Result<Measured> {
    let shape = bufs.shape;
    let (geometry, resources) = step_kernel.fit(&gpu.info, shape)?;
    measure_fitted(gpu, step_kernel, (geometry, resources), bufs, recipe)
}

/// cuBLAS (SGEMM, or TF32 for a handle made so) on the inputs `bufs` hold, into a C of its own,
/// by the same recipe as a step kernel: its first C, and its time where the recipe times.
pub fn measure_cublas(
    gpu: &Gpu,
    blas: &Blas,
    bufs: &Buffers,
    recipe: Recipe,
) -> Result<(Vec<f32>, Option<Stats>)> {
    let shape = bufs.shape;
    let mut c = gpu
        .stream
        .alloc_zeros::<f32>(shape.m * shape.n)
        .map_err(|e| anyhow!("allocating cuBLAS's C: {e:?}"))?;
    let mut product = |c: &mut CudaSlice<f32>| blas.sgemm(shape, &bufs.a, &bufs.b, c);
    let (first, time, _) = recipe_on(gpu, &mut c, &mut product, Recipe { next: false, ..recipe })?;
    Ok((first, time))
}

/// A product that writes `c`.
type ProductFn<'p> = dyn FnMut(&mut CudaSlice<f32>) -> Result<()> + 'p;

/// What the recipe's steps gave: the first C, the time, the next C.
type RecipeResult = (Vec<f32>, Option<Stats>, Option<Vec<f32>>);

/// The recipe's steps on any product: the first on poisoned output, read back; the timed ones;
/// the next on poisoned output, read back.
fn recipe_on(
    gpu: &Gpu,
    c: &mut CudaSlice<f32>,
    product: &mut ProductFn,
    recipe: Recipe,
) -> Result<RecipeResult> {
    let poisoned = |c: &mut CudaSlice<f32>, product: &mut ProductFn| -> Result<Vec<f32>> {
        poison(gpu, c)?;
        product(c)?;
        sync(gpu)?;
        download(gpu, c)
    };
    let first = poisoned(c, product)?;
    let time = match recipe.sampling {
        Some(sampling) => Some(timing::time_gpu(gpu, sampling, || product(c))?),
        None => None,
    };
    let next = if recipe.next { Some(poisoned(c, product)?) } else { None };
    Ok((first, time, next))
}

/// For a step with an FP32 path (steps 09 and 11): one more product, outside the timed ones, with
/// that path timed apart; what it sent there and the product's whole time in milliseconds.
fn paths_run(
    gpu: &Gpu,
    step_kernel: &StepKernel,
    geometry: Geometry,
    shape: Shape,
    bufs: &mut Buffers,
) -> Result<Option<(Paths, f64)>> {
    // The products so far sent nothing down a path of their own: nothing to time apart.
    if step_kernel.paths(gpu)?.is_none() {
        return Ok(None);
    }
    step_kernel.time_paths_next()?;
    let event = || {
        gpu.ctx
            .new_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(|e| anyhow!("creating an event: {e:?}"))
    };
    let (start, stop) = (event()?, event()?);
    let (a, b, c) = bufs.operands(step_kernel)?;
    start.record(&gpu.stream).map_err(|e| anyhow!("recording an event: {e:?}"))?;
    step_kernel.enqueue(gpu, geometry, shape, a, b, c)?;
    stop.record(&gpu.stream).map_err(|e| anyhow!("recording an event: {e:?}"))?;
    sync(gpu)?;
    let total = f64::from(start.elapsed_ms(&stop).map_err(|e| anyhow!("reading an event: {e:?}"))?);
    Ok(step_kernel.paths(gpu)?.map(|p| (p, total)))
}

/// The reference: cuBLAS DGEMM on the device when there is room, else the CPU.
pub fn reference(gpu: &Gpu, blas: Option<&Blas>, inputs: &Inputs) -> Result<Reference> {
    let s = inputs.shape;
    let f64_bytes = 8 * (s.m * s.k + s.k * s.n + s.m * s.n);
    let free = gpu.ctx.mem_get_info().map(|(free, _)| free).unwrap_or(0);
    match blas {
        Some(blas) if f64_bytes < free => blas.reference(inputs),
        _ => Ok(reference::cpu(inputs)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transpose_puts_b_kj_at_bt_jk() {
        // B is 2×3: rows [1 2 3] and [4 5 6]; Bᵀ is 3×2.
        assert_eq!(transpose(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], 2, 3), vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
        assert_eq!(transpose(&[7.0], 1, 1), vec![7.0]);
        let (k, n) = (5, 7);
        let b: Vec<f32> = (0..k * n).map(|x| x as f32).collect();
        assert_eq!(transpose(&transpose(&b, k, n), n, k), b, "twice is the identity");
    }
}

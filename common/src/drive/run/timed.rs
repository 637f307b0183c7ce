//! The run's device when it is a GPU: the products timed by the measuring recipe, cuBLAS's
//! baselines timed on the same buffers, and the f64 reference by cuBLAS DGEMM where it fits.

use std::ops::ControlFlow;

use anyhow::{Result, bail};

use super::ask::{check_compile_only_options, check_host, chosen, files_of};
use super::budget::{check_memory, device_workspace_bytes};
use super::device::{Device, Products};
use super::judge::step_label;
use crate::cli::Args;
use crate::compile_only;
use crate::cublas::Blas;
use crate::gpu::{self, Gpu, LaunchLimits, Resources};
use crate::hardware::watchdog::WaitWatch;
use crate::matrix::{Inputs, Shape};
use crate::measure::{self, Buffers, Recipe, reference};
use crate::params::Params;
use crate::reference::Reference;
use crate::report::{RanOn, Report};
use crate::step::{Choice, Geometry, GpuStep};
use crate::step_kernel::StepKernel;
use crate::timing::{Sampling, Stats};
use crate::verify::{self, Precision};

/// A GPU run: the GPU, the step kernel compiled for it, and cuBLAS's results kept beside the
/// step's to show their errors.
pub(super) struct GpuRun<'a> {
    /// Declared before `gpu`, so dropped before it: the kernel goes before the context it was
    /// loaded in.
    step_kernel: Option<StepKernel<'a>>,
    fitted: Option<(Geometry, Resources)>,
    gpu: Gpu,
    /// Whether cuBLAS runs: asked for and found.
    with_cublas: bool,
    /// Whether cuBLAS was asked for (a note says so where it was not found).
    asked_cublas: bool,
    blas: Option<Blas>,
    /// cuBLAS SGEMM's and TF32's times, and each one's C where kept.
    times: (Option<Stats>, Option<Stats>),
    results: [(&'static str, Option<Vec<f32>>); 2],
}

impl<'a> GpuRun<'a> {
    /// The GPU the command line names; or, with --compile-only, the outcome of that run in the
    /// measured run's place. Without the GPU, a problem in the command line is named first.
    pub(super) fn open(step: &GpuStep, args: &Args, cublas_found: bool) -> Result<ControlFlow<bool, Self>> {
        if args.picture_access.is_some() || args.picture_to.is_some() {
            bail!("--picture-access draws what the emulator saw of a warp's access, so it needs --emulate");
        }
        if args.compile_only {
            let (asked, params, choice) = before_opening(step, args)?;
            let why = choice.as_ref().map(|c| c.why.as_str());
            return compile_only::run(step, args, &params, asked, why).map(ControlFlow::Break);
        }
        check_compile_only_options(args)?;
        let gpu = match open_gpu(step, args) {
            Ok(gpu) => gpu,
            // A machine without the GPU still hears of a problem in the command line first.
            Err(no_gpu) => return Err(without_gpu(step, args, cublas_found).err().unwrap_or(no_gpu)),
        };
        Ok(ControlFlow::Continue(GpuRun {
            step_kernel: None,
            fitted: None,
            gpu,
            with_cublas: !args.no_cublas && cublas_found,
            asked_cublas: !args.no_cublas,
            blas: None,
            times: (None, None),
            results: [("cuBLAS SGEMM", None), ("cuBLAS TF32", None)],
        }))
    }

    fn step_kernel(&self) -> Result<(&StepKernel<'a>, (Geometry, Resources))> {
        match (&self.step_kernel, self.fitted) {
            (Some(k), Some(fitted)) => Ok((k, fitted)),
            _ => bail!("the run multiplied before its kernel was compiled"),
        }
    }

    /// cuBLAS SGEMM timed on the run's buffers, and cuBLAS TF32 too for a step that uses the
    /// tensor cores; each one's C kept where `keep` (to show its error beside the step's).
    fn baselines(&mut self, bufs: &Buffers, recipe: Recipe, tensor_cores: bool, keep: bool) -> Result<()> {
        if !self.with_cublas {
            return Ok(());
        }
        let gpu = &self.gpu;
        let blas = Blas::new(gpu.stream.clone())?;
        let (c, sgemm) = measure::measure_cublas(gpu, &blas, bufs, recipe)?;
        self.results[0].1 = keep.then_some(c);
        self.times.0 = sgemm;
        // A step that uses the tensor cores is also set against cuBLAS allowed to do the same.
        if tensor_cores {
            let tf32 = Blas::tf32(gpu.stream.clone())?;
            let (c, t) = measure::measure_cublas(gpu, &tf32, bufs, recipe)?;
            self.results[1].1 = keep.then_some(c);
            self.times.1 = t;
        }
        self.blas = Some(blas);
        Ok(())
    }
}

impl<'a> Device<'a> for GpuRun<'a> {
    fn default_shape(&self, step: &GpuStep) -> Shape {
        (step.default_shape)(&self.gpu.info.limits)
    }

    fn sms(&self) -> u32 {
        self.gpu.info.sms
    }

    fn with_cublas(&self) -> bool {
        self.with_cublas
    }

    fn prepare(
        &mut self,
        step: &'a GpuStep,
        args: &'a Args,
        params: Params,
        inputs: &Inputs,
    ) -> Result<ControlFlow<bool, (Geometry, Resources)>> {
        let shape = inputs.shape;
        check_memory(&self.gpu, shape, self.with_cublas, device_workspace_bytes(step, &params, shape))?;
        if args.tune {
            return crate::tune::run(step, args, &self.gpu, inputs).map(ControlFlow::Break);
        }
        // The one check of the parameters at this shape on this GPU, before the (slower) compile.
        let geometry = step.validate(&params, shape, &self.gpu.info.limits)?;
        let step_kernel = StepKernel::new(&self.gpu, step, params)?;
        let (geometry, resources) = step_kernel.fit_validated(&self.gpu.info, shape, geometry)?;
        let kernel = format!("{} of {}", gpu::ENTRY, step_label(step, args));
        crate::hardware::watchdog::set(Some(match args.timeout {
            Some(seconds) => WaitWatch::given(&kernel, seconds),
            None => WaitWatch::expected(&kernel, shape.flops()),
        }));
        self.step_kernel = Some(step_kernel);
        self.fitted = Some((geometry, resources));
        Ok(ControlFlow::Continue((geometry, resources)))
    }

    fn products(&mut self, args: &Args, inputs: &Inputs, next: bool) -> Result<Products> {
        let mut bufs = Buffers::upload(&self.gpu, inputs)?;
        let recipe = Recipe::timed(Sampling::new(args.reps), next);
        let (step_kernel, fitted) = self.step_kernel()?;
        let tensor_cores = step_kernel.step.precision.tensor_cores();
        let measured = measure::measure_fitted(&self.gpu, step_kernel, fitted, &mut bufs, recipe)?;
        self.baselines(&bufs, recipe, tensor_cores, next)?;
        Ok(Products {
            time: measured.stats()?,
            first: measured.c,
            next: measured.c_next,
            device: RanOn::Gpu(self.gpu.info.clone()),
            paths: measured.paths,
        })
    }

    fn reference(&mut self, inputs: &Inputs) -> Result<Reference> {
        reference(&self.gpu, self.blas.as_ref(), inputs)
    }

    fn finish(&mut self, report: Report, r: Option<&Reference>) -> Result<Report> {
        let shape = report.shape;
        let errors = match r {
            Some(r) => self
                .results
                .iter()
                .filter_map(|(name, c)| c.as_ref().map(|c| (*name, c)))
                .map(|(name, c)| (name, verify::verify(shape, c, r, Precision::Fp32).normwise.relative()))
                .collect(),
            None => Vec::new(),
        };
        let mut report = report.with_baselines(self.times, errors);
        // The other entry points that spill (the report's `spills` line names `matmul`'s).
        if let Ok((k, _)) = self.step_kernel() {
            for note in crate::spills::notes(&k.kernel.compiled) {
                report = report.with_note(note);
            }
        }
        if self.asked_cublas && !self.with_cublas {
            let note =
                "cuBLAS (libcublas) was not found: no baseline column, and the reference runs on the CPU";
            report = report.with_note(note.to_owned());
        }
        Ok(report)
    }
}

/// The GPU the command line names, refused when the step cannot run on it or NVRTC is missing.
fn open_gpu(step: &GpuStep, args: &Args) -> Result<Gpu> {
    let gpu = gpu::open(step.name, args.ordinal())?;
    step.check_compute(gpu.info.compute_capability, &gpu.info.name)?;
    if !gpu::nvrtc_present() {
        bail!("{}", gpu::NO_NVRTC);
    }
    Ok(gpu)
}

/// What a machine without the GPU refuses of the command line: a parameter set the step cannot
/// take at the shape asked for (against the most any GPU allows), and a shape beyond the host's
/// memory.
fn without_gpu(step: &GpuStep, args: &Args, cublas_found: bool) -> Result<()> {
    let (shape, params, _) = before_opening(step, args)?;
    if !args.tune {
        step.validate(&params, shape, &LaunchLimits::LARGEST)?;
    }
    check_host(step, &params, shape, (!args.no_cublas && cublas_found, !args.no_verify, false))
}

/// The shape and the step's choice for it before a GPU is open: as for the largest GPU and the
/// SMs of the command line's profile ([`Args::profile`]).
fn before_opening(step: &GpuStep, args: &Args) -> Result<(Shape, Params, Option<Choice>)> {
    let files = files_of(args)?;
    let default = (step.default_shape)(&LaunchLimits::LARGEST);
    chosen(step, args, files.as_ref(), default, args.profile().machine.sms)
}

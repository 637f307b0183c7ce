//! What a GPU step's `main` does, in its order: resolve the step, the shape and the parameters
//! from the command line, measure the kernel, run the cuBLAS baselines, verify, report. The
//! memory budget is in `run/memory.rs` and a CPU step's run in `run/cpu.rs`.

use std::ops::ControlFlow;
use std::process::ExitCode;

use anyhow::{Result, anyhow, bail};

use crate::cli::Args;
use crate::compile_only;
use crate::cublas::{self, Blas};
use crate::device::watch::Watch;
use crate::files;
use crate::gpu::{self, Gpu, Limits, Resources};
use crate::matrix::{Inputs, Shape};
use crate::measure::{self, Buffers, Measured, Recipe, reference};
use crate::params::Params;
use crate::report::{Device, KernelFacts, LastLaunch, Report};
use crate::step::{Choice, Geometry, GpuStep};
use crate::step_kernel::StepKernel;
use crate::timing::{Sampling, Stats};
use crate::verify::{self, Precision, Verdict};

mod cpu;
mod emulate;
mod memory;
mod predict;

pub use cpu::{CpuMatmul, cpu_estimate, cpu_main, cpu_product, run_cpu};
pub use emulate::{CallTraffic, Emulated, SMALL_SIDE, no_gpu, run_emulated};
pub use memory::{check_fits, check_host_fits, host_memory_available, host_memory_needed, memory_needed};
use memory::{check_memory, device_workspace_bytes, transposed_b_bytes};
pub use predict::{Prediction, WHOLE_UP_TO, predict};

/// The `main` of every GPU step.
pub fn gpu_main(step: &GpuStep) -> ExitCode {
    // A step without parameters refuses --param and --tune: its help does not offer them.
    let hidden: &[&str] = if step.params.is_empty() { &["params", "tune"] } else { &[] };
    let option = step.hooks.option();
    let mut args = Args::parse_for(step.idea, step.help(), hidden, option);
    if let (Some(option), Some(value)) = (option, args.step_option) {
        (option.apply)(value, &mut args.params);
    }
    exit_code(run_gpu(step, &args))
}

/// The whole run of a GPU step. Returns whether verification passed (true when skipped).
pub fn run_gpu(step: &GpuStep, args: &Args) -> Result<bool> {
    run_gpu_with(step, args, cublas::present())
}

// ANCHOR: run_gpu
/// [`run_gpu`] with the answer to "could libcublas be loaded?" given, so that a test can take
/// the path of a machine without cuBLAS: no baseline, the reference on the CPU, and a note.
pub fn run_gpu_with(step: &GpuStep, args: &Args, cublas_found: bool) -> Result<bool> {
    let edited = edited(step, args)?;
    let step = edited.as_ref().unwrap_or(step);
    if args.emulate {
        return run_emulated(step, args, None);
    }
    // Without a GPU the lab is emulated, and says so.
    if !args.compile_only && !args.tune {
        if let Some(why) = no_gpu() {
            return run_emulated(step, args, Some(&why));
        }
    }
    let run = match resolve(step, args, cublas_found)? {
        ControlFlow::Continue(run) => run,
        // --compile-only or --tune ran in the measured run's place.
        ControlFlow::Break(outcome) => return Ok(outcome),
    };

    let kernel = format!("{} of {}", gpu::ENTRY, step_label(step, args));
    crate::device::watch::set(Some(match args.timeout {
        Some(seconds) => Watch::given(&kernel, seconds),
        None => Watch::expected(&kernel, run.shape.flops()),
    }));
    let mut bufs = Buffers::upload(&run.gpu, &run.inputs)?;
    let recipe = Recipe::timed(Sampling::new(args.reps), !args.no_verify);
    let fitted = (run.geometry, run.resources);
    let measured = measure::measure_fitted(&run.gpu, &run.step_kernel, fitted, &mut bufs, recipe)?;
    save_c(args, run.shape, &measured.c)?;
    let Baselines { blas, sgemm_time, tf32_time, results } = baselines(&run, &bufs, recipe)?;
    drop(bufs);
    let (verdict, last, baseline_errors) = verify_results(&run, &measured, blas.as_ref(), results)?;
    let outcome = outcome(verdict.as_ref(), last.as_ref());
    let times = (sgemm_time, tf32_time);
    crate::emit::emit(&report(&run, measured, times, (verdict, last), baseline_errors)?, args)?;
    outcome
}
// ANCHOR_END: run_gpu

/// A GPU run resolved from its command line: the step on the GPU, compiled and its geometry fitted to the
/// shape, and the inputs it runs on.
struct GpuRun<'a> {
    step: &'a GpuStep,
    args: &'a Args,
    /// Declared before `gpu`, so dropped before it: the kernel goes before the context it was
    /// loaded in.
    step_kernel: StepKernel<'a>,
    gpu: Gpu,
    shape: Shape,
    inputs: Inputs,
    /// Why the step chose its parameters, for a step that chooses per shape.
    choice: Option<Choice>,
    geometry: Geometry,
    resources: Resources,
    /// Whether cuBLAS runs: asked for and found.
    with_cublas: bool,
}

/// The step with the kernel of --kernel or the stage of --stage in place of its own (None
/// without either).
fn edited(step: &GpuStep, args: &Args) -> Result<Option<GpuStep>> {
    Ok(match (&args.kernel, &args.stage) {
        (Some(path), _) => Some(compile_only::with_kernel(step, path)?),
        (None, Some(name)) => Some(step.stage(name)?),
        (None, None) => None,
    })
}

/// The run the command line asks for, ready to measure; or, with --compile-only or --tune, the
/// outcome of that run instead.
fn resolve<'a>(
    step: &'a GpuStep,
    args: &'a Args,
    cublas_found: bool,
) -> Result<ControlFlow<bool, GpuRun<'a>>> {
    if args.picture_access.is_some() || args.picture_to.is_some() {
        bail!("--picture-access draws what the emulator saw of a warp's access, so it needs --emulate");
    }
    let files = files_of(args)?;
    if args.compile_only {
        // No GPU: the shape and the step's choice as for the largest GPU and an H100's SMs.
        let asked = shape_of(args, files.as_ref(), (step.default_shape)(&Limits::LARGEST))?;
        let (params, choice) = step.params_for(asked, crate::step::SMS_BEFORE_OPENING, &args.params)?;
        let why = choice.as_ref().map(|c| c.why.as_str());
        return compile_only::run(step, args, &params, asked, why).map(ControlFlow::Break);
    }
    check_compile_only_options(args)?;
    let gpu = match open_gpu(step, args) {
        Ok(gpu) => gpu,
        // A machine without the GPU still hears of a problem in the command line first.
        Err(no_gpu) => {
            return Err(without_gpu(step, args, files.as_ref(), cublas_found).err().unwrap_or(no_gpu));
        }
    };
    let default = (step.default_shape)(&gpu.info.limits);
    let (shape, params, choice) = asked(step, args, files.as_ref(), default, gpu.info.sms)?;
    let with_cublas = !args.no_cublas && cublas_found;
    check_host(step, &params, shape, (with_cublas, !args.no_verify))?;
    check_memory(&gpu, shape, with_cublas, device_workspace_bytes(step, &params, shape))?;
    let inputs = inputs_of(args, files, shape);
    if args.tune {
        return crate::tune::run(step, args, &gpu, &inputs).map(ControlFlow::Break);
    }
    // The one check of the parameters at this shape on this GPU, before the (slower) compile.
    let geometry = step.validate(&params, shape, &gpu.info.limits)?;
    let step_kernel = StepKernel::new(&gpu, step, params)?;
    let (geometry, resources) = step_kernel.fit_validated(&gpu.info, shape, geometry)?;
    Ok(ControlFlow::Continue(GpuRun {
        step,
        args,
        step_kernel,
        gpu,
        shape,
        inputs,
        choice,
        geometry,
        resources,
        with_cublas,
    }))
}

/// What a machine without the GPU refuses of the command line: a parameter set the step cannot
/// take at the shape asked for (against the most any GPU allows), and a shape beyond the host's
/// memory.
fn without_gpu(step: &GpuStep, args: &Args, files: Option<&Inputs>, cublas_found: bool) -> Result<()> {
    let default = (step.default_shape)(&Limits::LARGEST);
    let (shape, params, _) = asked(step, args, files, default, crate::step::SMS_BEFORE_OPENING)?;
    if !args.tune {
        step.validate(&params, shape, &Limits::LARGEST)?;
    }
    check_host(step, &params, shape, (!args.no_cublas && cublas_found, !args.no_verify))
}

/// The shape the command line asks for (the files' where A and B come from files; `default` for
/// what it leaves out), and the parameters for it on a device of `sms` SMs, with why the step
/// chose them where it chooses per shape.
pub(crate) fn asked(
    step: &GpuStep,
    args: &Args,
    files: Option<&Inputs>,
    default: Shape,
    sms: u32,
) -> Result<(Shape, Params, Option<Choice>)> {
    let shape = shape_of(args, files, default)?;
    let (params, choice) = step.params_for(shape, sms, &args.params)?;
    Ok((shape, params, choice))
}

/// Whether the host holds what the run keeps of `shape`: the inputs, Bᵀ where the kernel wants
/// it, and, where it `verifies`, the reference and the baselines' results (SGEMM's, and TF32's
/// for a tensor-core step, where it runs cuBLAS), kept to show their errors beside the step's.
pub(crate) fn check_host(
    step: &GpuStep,
    params: &Params,
    shape: Shape,
    (with_cublas, verifies): (bool, bool),
) -> Result<()> {
    let baselines = match (!verifies || !with_cublas, step.precision.tensor_cores()) {
        (true, _) => 0,
        (false, tf32) => 1 + u64::from(tf32),
    };
    check_host_fits(
        shape,
        verifies,
        2 * transposed_b_bytes(step, params, shape) + baselines * 4 * (shape.m * shape.n) as u64,
        host_memory_available(),
    )
}

/// The options that go with --compile-only alone, refused on a run.
fn check_compile_only_options(args: &Args) -> Result<()> {
    if args.arch.is_some() {
        bail!("--arch goes with --compile-only; a run compiles for the GPU it runs on");
    }
    if args.cubin.is_some() {
        bail!("--cubin goes with --compile-only: add --compile-only to write the machine code");
    }
    Ok(())
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

/// The shape asked for: the files' when A and B come from files, else the command line's, with
/// `default` for what it leaves out.
pub(crate) fn shape_of(args: &Args, files: Option<&Inputs>, default: Shape) -> Result<Shape> {
    if let Some(x) = files {
        return Ok(x.shape);
    }
    let (m, n, k) = args.shape((default.m, default.n, default.k));
    Shape::new(m, n, k).map_err(|e| anyhow!(e))
}

/// A and B read from the files of --a and --b (None without them). The files give the shape; a
/// dimension given on the command line as well must agree with them.
pub fn files_of(args: &Args) -> Result<Option<Inputs>> {
    let (Some(a_spec), Some(b_spec)) = (&args.a, &args.b) else { return Ok(None) };
    let (a, b) = (files::read_matrix(a_spec, "A")?, files::read_matrix(b_spec, "B")?);
    let source = format!("A from {}, B from {}", a.named(a_spec), b.named(b_spec));
    let x = Inputs::from_matrices(a.matrix, b.matrix, source).map_err(|e| anyhow!(e))?;
    let s = x.shape;
    for (dim, flag, given, have) in [
        ("M", "-m", args.m.or(args.size), s.m),
        ("N", "-n", args.n.or(args.size), s.n),
        ("K", "-k", args.k.or(args.size), s.k),
    ] {
        if given.is_some_and(|g| g != have) {
            bail!(
                "the files give {dim} = {have}, but {flag} or --size asks for {}; leave the shape out when A and B come from files",
                given.unwrap_or_default()
            );
        }
    }
    Ok(Some(x))
}

/// The run's inputs: the files', or the family asked for drawn at `shape`.
pub(crate) fn inputs_of(args: &Args, files: Option<Inputs>, shape: Shape) -> Inputs {
    files.unwrap_or_else(|| Inputs::family(shape, args.seed, args.family()))
}

/// Writes C where --save-c asks.
pub(crate) fn save_c(args: &Args, shape: Shape, c: &[f32]) -> Result<()> {
    match &args.save_c {
        Some(path) => files::write_npy(path, shape.m, shape.n, c),
        None => Ok(()),
    }
}

/// cuBLAS on the same inputs: SGEMM's handle (the reference's DGEMM runs on it too), the times,
/// and each baseline's C when verifying.
struct Baselines {
    blas: Option<Blas>,
    sgemm_time: Option<Stats>,
    tf32_time: Option<Stats>,
    results: Results,
}

/// SGEMM's C, then TF32's, each named (None where not kept or not run).
type Results = [(&'static str, Option<Vec<f32>>); 2];

/// Each baseline's name and ‖ΔC‖/‖C‖.
type Errors = Vec<(&'static str, f64)>;

/// cuBLAS SGEMM timed on the run's buffers, and cuBLAS TF32 too for a step that uses the tensor
/// cores; nothing without cuBLAS.
fn baselines(run: &GpuRun, bufs: &Buffers, recipe: Recipe) -> Result<Baselines> {
    let gpu = &run.gpu;
    // The baselines' results are kept when verifying, to show their own errors beside the step's.
    let keep = !run.args.no_verify;
    let blas = if run.with_cublas { Some(Blas::new(gpu.stream.clone())?) } else { None };
    let (sgemm_c, sgemm_time) = match &blas {
        Some(blas) => {
            let (c, t) = measure::measure_cublas(gpu, blas, bufs, recipe)?;
            (keep.then_some(c), t)
        }
        None => (None, None),
    };
    // A step that uses the tensor cores is also set against cuBLAS allowed to do the same.
    let (tf32_c, tf32_time) = if run.with_cublas && run.step.precision.tensor_cores() {
        let tf32 = Blas::tf32(gpu.stream.clone())?;
        let (c, t) = measure::measure_cublas(gpu, &tf32, bufs, recipe)?;
        (keep.then_some(c), t)
    } else {
        (None, None)
    };
    let results = [("cuBLAS SGEMM", sgemm_c), ("cuBLAS TF32", tf32_c)];
    Ok(Baselines { blas, sgemm_time, tf32_time, results })
}

/// The step's C held to its claimed precision's limits against the f64 reference, and each
/// baseline's ‖ΔC‖/‖C‖ against the same reference; nothing with --no-verify.
fn verify_results(
    run: &GpuRun,
    measured: &Measured,
    blas: Option<&Blas>,
    baselines: Results,
) -> Result<(Option<Verdict>, Option<LastLaunch>, Errors)> {
    let mut baseline_errors = Vec::new();
    if run.args.no_verify {
        return Ok((None, None, baseline_errors));
    }
    let r = reference(&run.gpu, blas, &run.inputs)?;
    for (name, c) in baselines {
        if let Some(c) = c {
            baseline_errors
                .push((name, verify::verify(run.shape, &c, &r, Precision::Fp32).normwise.relative()));
        }
    }
    let (verdict, last) = measured.verify(&r, run.step.precision);
    Ok((Some(verdict), last, baseline_errors))
}

/// The printed block: the step (with the kernel or stage it ran), the GPU, the kernel's facts,
/// the times beside cuBLAS's (SGEMM's, TF32's), the verdict and the baselines' errors.
fn report(
    run: &GpuRun,
    measured: Measured,
    cublas: (Option<Stats>, Option<Stats>),
    (verdict, last_launch): (Option<Verdict>, Option<LastLaunch>),
    baseline_errors: Errors,
) -> Result<Report> {
    let (step, args, params) = (run.step, run.args, &run.step_kernel.params);
    let facts =
        KernelFacts::of(step, params, (run.geometry, run.resources), run.shape, (run.choice.as_ref(), true));
    let time = measured.stats()?;
    let mut report = Report::new(
        step_label(step, args),
        Device::Gpu(run.gpu.info.clone()),
        &run.inputs,
        step.precision,
        time,
        verdict,
    )
    .with_kernel(facts)
    .with_baselines(cublas, baseline_errors)
    .with_last_launch(last_launch)
    .with_paths(measured.paths);
    if !args.no_cublas && !run.with_cublas {
        let note = "cuBLAS (libcublas) was not found: no baseline column, and the reference runs on the CPU";
        report = report.with_note(note.to_owned());
    }
    Ok(report)
}

/// The step as the report names it, with the kernel or stage it ran.
pub(crate) fn step_label(step: &GpuStep, args: &Args) -> String {
    match (&args.kernel, &args.stage) {
        (Some(path), _) => format!("{} (kernel from {})", step.name, path.display()),
        (None, Some(name)) => format!("{} (stage {name})", step.name),
        (None, None) => step.name.to_owned(),
    }
}

/// What a run that printed its report returns: Ok(true) where every check passed (or none ran),
/// Ok(false) where the first C failed (the verify line says how), and an error naming the next
/// launch's line where only the next launch's C failed.
pub(crate) fn outcome(verdict: Option<&Verdict>, last: Option<&LastLaunch>) -> Result<bool> {
    if !verdict.is_none_or(Verdict::passed) {
        return Ok(false);
    }
    if !last.is_none_or(LastLaunch::passed) {
        bail!(
            "the next launch's C is wrong though the first's passed: it reads something the first launch left behind, or races (see the next launch line above)"
        );
    }
    Ok(true)
}

/// Ok(true): all good; Ok(false): the report was printed and verification failed; Err: one sentence.
fn exit_code(outcome: Result<bool>) -> ExitCode {
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("error: the result is wrong (see the verify line above)");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

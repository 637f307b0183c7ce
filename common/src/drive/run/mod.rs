//! What a GPU step's `main` does, in its order, once for either device: resolve the step, the
//! shape and the parameters from the command line, multiply (the first product, and the next on
//! C poisoned again), verify both, report. The device is a GPU, which times the products beside
//! cuBLAS (`run/timed.rs`), or the PTX emulator, which counts what they move and predicts an
//! H100's time (`run/emulate.rs`): each is a [`Device`] the run is handed. The memory budget is in
//! `run/memory.rs` and a CPU step's run in `run/cpu.rs`.

use std::ops::ControlFlow;
use std::process::ExitCode;

use anyhow::{Result, anyhow, bail};

use crate::cli::Args;
use crate::compile_only;
use crate::cublas;
use crate::files;
use crate::gpu::Resources;
use crate::hooks::Paths;
use crate::matrix::{Inputs, Shape};
use crate::params::Params;
use crate::reference::Reference;
use crate::report::{Device as ReportDevice, KernelFacts, LastLaunch, Report};
use crate::step::{Choice, Geometry, GpuStep};
use crate::timing::Stats;
use crate::verify::{self, Verdict};

mod cpu;
mod emulate;
mod memory;
mod predict;
mod timed;

pub use cpu::{CpuMatmul, cpu_estimate, cpu_main, cpu_product, run_cpu};
pub use emulate::{CallTraffic, Emulated, SMALL_SIDE};
use memory::transposed_b_bytes;
pub use memory::{check_fits, check_host_fits, host_memory_available, host_memory_needed, memory_needed};
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
    exit_code(crate::emit::guarding_json_to(args.json_to.as_deref(), || run_gpu(step, &args)))
}

/// The whole run of a GPU step. Returns whether verification passed (true when skipped).
pub fn run_gpu(step: &GpuStep, args: &Args) -> Result<bool> {
    run_gpu_with(step, args, cublas::present)
}

// ANCHOR: run_gpu
/// [`run_gpu`] with the question "could libcublas be loaded?" given, so that a test can take
/// the path of a machine without cuBLAS: no baseline, the reference on the CPU, and a note. Only
/// a run on a GPU asks it: the emulator has no cuBLAS to look for.
pub fn run_gpu_with(step: &GpuStep, args: &Args, cublas_found: fn() -> bool) -> Result<bool> {
    let edited = edited(step, args)?;
    let step = edited.as_ref().unwrap_or(step);
    // Without a GPU the lab is emulated, and says so.
    let looks = !args.emulate && !args.compile_only && !args.tune;
    let no_gpu = looks.then(|| crate::gpu::count().err()).flatten();
    if args.emulate || no_gpu.is_some() {
        return run(step, args, &mut emulate::Counted::open(args, no_gpu)?);
    }
    match timed::Timed::open(step, args, cublas_found())? {
        ControlFlow::Continue(mut gpu) => run(step, args, &mut gpu),
        // --compile-only ran in the measured run's place.
        ControlFlow::Break(outcome) => Ok(outcome),
    }
}
// ANCHOR_END: run_gpu

/// What the run needs of the device it multiplies on: a GPU ([`timed::Timed`]) or the PTX
/// emulator ([`emulate::Counted`]).
trait Device<'a> {
    /// The shape a run takes where the command line leaves a side out.
    fn default_shape(&self, step: &GpuStep) -> Shape;

    /// The SMs a step that chooses its parameters per shape plans for.
    fn sms(&self) -> u32;

    /// Whether the run keeps cuBLAS's results beside its own (the host memory they take).
    fn with_cublas(&self) -> bool;

    /// Everything this device checks of the run before it compiles, the compile and the
    /// geometry fitted to the shape; or the outcome of what ran in the run's place (--tune).
    fn prepare(
        &mut self,
        step: &'a GpuStep,
        args: &'a Args,
        params: Params,
        inputs: &Inputs,
    ) -> Result<ControlFlow<bool, (Geometry, Resources)>>;

    /// The first product, on C poisoned with NaN, and, where `next`, one more on C poisoned
    /// again, which reads what the first left in the step's workspaces; with what the device
    /// measured of them.
    fn products(&mut self, args: &Args, inputs: &Inputs, next: bool) -> Result<Products>;

    /// The f64 reference the products are verified against.
    fn reference(&mut self, inputs: &Inputs) -> Result<Reference>;

    /// The report with the device's own parts added: the baselines, beside `reference`.
    fn finish(&mut self, report: Report, reference: Option<&Reference>) -> Result<Report> {
        let _ = reference;
        Ok(report)
    }

    /// The run's outcome, once its report is printed, as the device judges it.
    fn outcome(&mut self, outcome: Result<bool>) -> Result<bool> {
        outcome
    }
}

/// What a device's products gave: the two C's, the time (untimed on the emulator), the device's
/// part of the report, and what the FP32 path took.
struct Products {
    first: Vec<f32>,
    next: Option<Vec<f32>>,
    time: Stats,
    device: ReportDevice,
    paths: Option<(Paths, f64)>,
}

// ANCHOR: run
/// The one run, on either device: resolve, multiply, verify both products, report.
fn run<'a>(step: &'a GpuStep, args: &'a Args, device: &mut dyn Device<'a>) -> Result<bool> {
    let files = files_of(args)?;
    let (shape, params, choice) =
        asked(step, args, files.as_ref(), device.default_shape(step), device.sms())?;
    let verifies = !args.no_verify && !args.scaled;
    check_host(step, &params, shape, (device.with_cublas(), verifies))?;
    let inputs = inputs_of(args, files, shape);
    let fitted = match device.prepare(step, args, params.clone(), &inputs)? {
        ControlFlow::Continue(fitted) => fitted,
        ControlFlow::Break(outcome) => return Ok(outcome),
    };
    let products = device.products(args, &inputs, verifies)?;
    save_c(args, shape, &products.first)?;
    let reference = if verifies { Some(device.reference(&inputs)?) } else { None };
    let (verdict, last) = match &reference {
        Some(r) => {
            let judge = |c: &[f32]| verify::verify(shape, c, r, step.precision);
            let (first, next) = (&products.first, products.next.as_deref());
            let (verdict, last) = LastLaunch::judge_both(first, next, judge);
            (Some(verdict), last)
        }
        None => (None, None),
    };
    let timed = products.time.samples > 0;
    let facts = KernelFacts::of(step, &params, fitted, shape, (choice.as_ref(), timed));
    let (label, time) = (step_label(step, args), products.time);
    let report = Report::new(label, products.device, &inputs, step.precision, time, verdict)
        .with_kernel(facts)
        .with_last_launch(last)
        .with_paths(products.paths);
    let report = device.finish(report, reference.as_ref())?;
    crate::emit::emit(&report, args)?;
    let outcome = outcome(report.verdict.as_ref(), report.last_launch.as_ref());
    device.outcome(outcome)
}
// ANCHOR_END: run

/// The step with the kernel of --kernel or the stage of --stage in place of its own (None
/// without either).
fn edited(step: &GpuStep, args: &Args) -> Result<Option<GpuStep>> {
    Ok(match (&args.kernel, &args.stage) {
        (Some(path), _) => Some(compile_only::with_kernel(step, path)?),
        (None, Some(name)) => Some(step.stage(name)?),
        (None, None) => None,
    })
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

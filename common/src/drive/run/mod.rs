//! What a GPU step's `main` does, in its order, once for either device: resolve the step, the
//! shape and the parameters from the command line, multiply (the first product, and the next on
//! C poisoned again), verify both, report. The device is a GPU, which times the products beside
//! cuBLAS (`run/timed.rs`), or the PTX emulator, which counts what they move and predicts an
//! H100's time (`run/emulate.rs`): each is a [`Device`] the run is handed (`run/device.rs`).
//! What every run does before its device multiplies is in `run/ask.rs`, what it does after in
//! `run/judge.rs`; the memory budget is in `run/memory.rs` and a CPU step's run in `run/cpu.rs`.

use std::ops::ControlFlow;
use std::process::ExitCode;

use anyhow::Result;

use crate::cli::Args;
use crate::compile_only;
use crate::cublas;
use crate::report::{KernelFacts, Report};
use crate::step::GpuStep;

mod ask;
mod budget;
mod cpu;
mod depth;
mod device;
mod emulate;
mod emulator_step;
mod judge;
mod predict_only;
mod timed;

pub use ask::files_of;
pub use budget::{check_fits, check_host_fits, host_memory_available, host_memory_needed, memory_needed};
pub use cpu::{CpuMatmul, cpu_estimate, cpu_main, cpu_product, run_cpu};
pub use emulate::SMALL_SIDE;
pub use emulator_step::{CallTraffic, EmulatorStep, WHOLE_UP_TO};
pub use predict_only::{StepPrediction, predict};

use ask::Asked;
use device::Device;

/// The `main` of every GPU step.
pub fn gpu_main(step: &GpuStep) -> ExitCode {
    // A step without parameters refuses --param and --tune: its help does not offer them.
    let hidden: &[&str] = if step.params.is_empty() { &["params", "tune"] } else { &[] };
    let option = step.hooks.option();
    let mut args = Args::parse_for(step.idea, step.help(), hidden, option);
    if let (Some(option), Some(value)) = (option, args.step_option) {
        (option.apply)(value, &mut args.params);
    }
    if args.every_path {
        return judge::exit_code(crate::every_path::run(step, &args));
    }
    judge::exit_code(crate::emit::guarding_json_to(args.json_to.as_deref(), || run_gpu(step, &args)))
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
        return run(step, args, &mut emulate::EmulatorRun::open(args, no_gpu)?);
    }
    match timed::GpuRun::open(step, args, cublas_found())? {
        ControlFlow::Continue(mut gpu) => run(step, args, &mut gpu),
        // --compile-only ran in the measured run's place.
        ControlFlow::Break(outcome) => Ok(outcome),
    }
}
// ANCHOR_END: run_gpu

// ANCHOR: run
/// The one run, on either device, top to bottom: what the command line asks for (`run/ask.rs`),
/// the device's products, C saved, the reference, both products judged and the report printed
/// (`run/judge.rs`, its functions in this order).
fn run<'a>(step: &'a GpuStep, args: &'a Args, device: &mut dyn Device<'a>) -> Result<bool> {
    let Asked { shape, params, choice, inputs, verifies } = ask::ask(step, args, device)?;
    let fitted = match device.prepare(step, args, params.clone(), &inputs)? {
        ControlFlow::Continue(fitted) => fitted,
        ControlFlow::Break(outcome) => return Ok(outcome),
    };
    let products = device.products(args, &inputs, verifies)?;
    judge::save_c(args, shape, &products.first)?;
    let reference = if verifies { Some(device.reference(&inputs)?) } else { None };
    let both = (products.first.as_slice(), products.next.as_deref());
    let (verdict, last) = judge::judge(step, shape, both, reference.as_ref());
    let timed = products.time.samples > 0;
    let facts = KernelFacts::of(step, &params, fitted, shape, (choice.as_ref(), timed));
    let (label, time) = (judge::step_label(step, args), products.time);
    let report = Report::new(label, products.device, &inputs, step.precision, time, verdict)
        .with_kernel(facts)
        .with_next_product(last)
        .with_paths(products.paths);
    let report = device.finish(report, reference.as_ref())?;
    crate::emit::emit(&report, args)?;
    device.outcome(judge::outcome(report.verdict.as_ref(), report.next_product.as_ref()))
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

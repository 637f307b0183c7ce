//! What every run does around its device, whatever the device: the shape and inputs the
//! command line asks for, the host memory they take, the options a run refuses, C saved, the
//! step's label, and the outcome and exit code.

use std::process::ExitCode;

use anyhow::{Result, anyhow, bail};

use crate::cli::Args;
use crate::files;
use crate::matrix::{Inputs, Shape};
use crate::params::Params;
use crate::report::LastLaunch;
use crate::step::{Choice, GpuStep};
use crate::verify::Verdict;

use super::memory::{check_host_fits, host_memory_available, transposed_b_bytes};

/// The shape the command line asks for (the files' where A and B come from files; `default` for
/// what it leaves out), and the parameters for it on a device of `sms` SMs, with why the step
/// chose them where it chooses per shape.
pub(super) fn asked(
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
pub(super) fn check_host(
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
pub(super) fn check_compile_only_options(args: &Args) -> Result<()> {
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
pub(super) fn shape_of(args: &Args, files: Option<&Inputs>, default: Shape) -> Result<Shape> {
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
pub(super) fn inputs_of(args: &Args, files: Option<Inputs>, shape: Shape) -> Inputs {
    files.unwrap_or_else(|| Inputs::family(shape, args.seed, args.family()))
}

/// Writes C where --save-c asks.
pub(super) fn save_c(args: &Args, shape: Shape, c: &[f32]) -> Result<()> {
    match &args.save_c {
        Some(path) => files::write_npy(path, shape.m, shape.n, c),
        None => Ok(()),
    }
}

/// The step as the report names it, with the kernel or stage it ran.
pub(super) fn step_label(step: &GpuStep, args: &Args) -> String {
    match (&args.kernel, &args.stage) {
        (Some(path), _) => format!("{} (kernel from {})", step.name, path.display()),
        (None, Some(name)) => format!("{} (stage {name})", step.name),
        (None, None) => step.name.to_owned(),
    }
}

/// What a run that printed its report returns: Ok(true) where every check passed (or none ran),
/// Ok(false) where the first C failed (the verify line says how), and an error naming the next
/// launch's line where only the next launch's C failed.
pub(super) fn outcome(verdict: Option<&Verdict>, last: Option<&LastLaunch>) -> Result<bool> {
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
pub(super) fn exit_code(outcome: Result<bool>) -> ExitCode {
    // The record, where --record asks for one, is written as the run ends.
    crate::record::exit(match outcome {
        Ok(true) => None,
        Ok(false) => Some("the result is wrong (see the verify line above)".to_owned()),
        Err(e) => Some(e.to_string()),
    })
}

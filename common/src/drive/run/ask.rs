//! The run's first stage, whatever the device: what the command line asks for. The shape (the
//! files' where A and B come from files), the parameters for it and why the step chose them,
//! whether the host holds what the run keeps, and the inputs; and the options a run refuses.

use anyhow::{Result, anyhow, bail};

use crate::cli::Args;
use crate::files;
use crate::matrix::{Inputs, Shape};
use crate::params::Params;
use crate::step::{Choice, GpuStep};

use super::budget::{check_host_fits, device_workspace_bytes, host_memory_available, transposed_b_bytes};
use super::device::Device;

/// What a run was asked for: its shape, the parameters and the step's reason where it chooses
/// them per shape, the inputs, and whether it verifies.
pub(super) struct Asked {
    pub shape: Shape,
    pub params: Params,
    pub choice: Option<Choice>,
    pub inputs: Inputs,
    pub verifies: bool,
}

/// What the command line asks `device` to run: the files read, the shape and parameters chosen
/// for the device's SMs, the host's memory checked, the inputs drawn (at the shape the device
/// draws them at: a scaled emulation of a long K multiplies at a shorter depth).
pub(super) fn ask<'a>(step: &GpuStep, args: &Args, device: &mut dyn Device<'a>) -> Result<Asked> {
    let files = files_of(args)?;
    let (shape, params, choice) =
        chosen(step, args, files.as_ref(), device.default_shape(step), device.sms())?;
    let verifies = !args.no_verify && !args.scaled;
    // A scaled emulation of a long K draws its inputs, and holds them, at a shorter depth.
    let drawn = device.drawn_shape(args, shape)?;
    check_host(step, &params, drawn, (device.with_cublas(), verifies, device.memory_is_the_hosts()))?;
    let inputs = inputs_of(args, files, drawn);
    Ok(Asked { shape, params, choice, inputs, verifies })
}

/// The shape the command line asks for (the files' where A and B come from files; `default` for
/// what it leaves out), and the parameters for it on a device of `sms` SMs, with why the step
/// chose them where it chooses per shape.
pub(super) fn chosen(
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

/// The shape asked for: the files' when A and B come from files, else the command line's, with
/// `default` for what it leaves out.
pub(super) fn shape_of(args: &Args, files: Option<&Inputs>, default: Shape) -> Result<Shape> {
    if let Some(x) = files {
        return Ok(x.shape);
    }
    let (m, n, k) = args.shape((default.m, default.n, default.k));
    Shape::new(m, n, k).map_err(|e| anyhow!(e))
}

/// Whether the host holds what the run keeps of `shape`: the inputs, Bᵀ where the kernel wants
/// it, and, where it `verifies`, the reference and the baselines' results (SGEMM's, and TF32's
/// for a tensor-core step, where it runs cuBLAS), kept to show their errors beside the step's;
/// and, where the device's memory is the host's (`emulated`), A, B, C and the step's workspaces
/// once more.
pub(super) fn check_host(
    step: &GpuStep,
    params: &Params,
    shape: Shape,
    (with_cublas, verifies, emulated): (bool, bool, bool),
) -> Result<()> {
    let baselines = match (!verifies || !with_cublas, step.precision.tensor_cores()) {
        (true, _) => 0,
        (false, tf32) => 1 + u64::from(tf32),
    };
    let device = if emulated { shape.f32_bytes() + device_workspace_bytes(step, params, shape) } else { 0 };
    check_host_fits(
        shape,
        verifies,
        (
            2 * transposed_b_bytes(step, params, shape) + baselines * 4 * (shape.m * shape.n) as u64 + device,
            emulated,
        ),
        host_memory_available(),
    )
}

/// The run's inputs: the files', or the family asked for drawn at `shape`.
pub(super) fn inputs_of(args: &Args, files: Option<Inputs>, shape: Shape) -> Inputs {
    files.unwrap_or_else(|| Inputs::family(shape, args.seed, args.family()))
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

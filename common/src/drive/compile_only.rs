//! `--compile-only`: compile a step's kernel with NVRTC and print what the compiler made of it,
//! with no GPU. `--kernel PATH` swaps in an edited copy of the kernel for this and for a run, or
//! the kernel changed by a diff (`PATH.diff`).

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Result, anyhow, bail};

use crate::cli::Args;
use crate::emulated;
use crate::gpu::{self, LaunchLimits};
use crate::matrix::Shape;
use crate::params::Params;
use crate::patch;
use crate::spills;
use crate::step::GpuStep;

/// The architecture `--compile-only` uses when none is named: the GPU present, else sm_90.
pub const DEFAULT_ARCH: &str = "sm_90";

/// `step` with its kernel read from `path` (named by that path in compiler messages). A path that
/// ends in `.diff` holds a change to the step's kernel instead (see [`with_diff`]). A copy of one
/// of the step's launch variants, or that variant's diff, keeps the variant's launch.
pub fn with_kernel(step: &GpuStep, path: &Path) -> Result<GpuStep> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        anyhow!(
            "could not read the kernel {}: {e}; give the path of a .cu file, or of a variant's .diff",
            path.display()
        )
    })?;
    let shown = path.display().to_string();
    let edited = if path.extension().is_some_and(|e| e == "diff") {
        with_diff(step, &shown, &text)?
    } else {
        GpuStep { source: String::leak(text), file: String::leak(shown), ..*step }
    };
    Ok(match step.variant_of(path, edited.source)? {
        Some(v) => step.with_variant(v, edited.source, edited.file),
        None => edited,
    })
}

/// `step` with its kernel changed by `diff`, a unified diff of that kernel (`diff -u KERNEL
/// COPY`) read from `diff_file`: a variant kept as its change alone. Compiler messages name it
/// `KERNEL+DIFF_FILE` and count the lines of the changed kernel. A diff that does not fit the
/// kernel exactly is refused in one sentence.
pub fn with_diff(step: &GpuStep, diff_file: &str, diff: &str) -> Result<GpuStep> {
    let source = patch::apply(step.source, diff).map_err(|e| {
        // Name the file the diff was made from when it is not this kernel.
        let other = patch::old_label(diff).filter(|l| !l.ends_with(step.file) && !step.file.ends_with(l));
        anyhow!(
            "{diff_file} does not apply to the step's kernel {}{}: {e}; make the diff with `diff -u {} COPY.cu`",
            step.file,
            other.map(|l| format!(" (it is a diff of {l})")).unwrap_or_default(),
            step.file
        )
    })?;
    let file = format!("{}+{diff_file}", step.file);
    Ok(GpuStep { source: String::leak(source), file: String::leak(file), ..*step })
}

/// The architecture of GPU `ordinal`, if a driver and that GPU can be found.
fn present_arch(ordinal: usize) -> Option<String> {
    if !gpu::driver_present() {
        return None;
    }
    gpu::open("compile", ordinal).ok().map(|g| g.info.arch())
}

/// Compiles `step` with `params` for `arch` and returns the report a learner reads. The step's
/// own checks come first, against `arch`'s limits; then NVRTC.
pub fn report(step: &GpuStep, params: &Params, arch: &str, shape: Shape) -> Result<String> {
    Ok(compile_and_report(step, params, arch, shape)?.0)
}

/// [`report`], with the compiled code.
fn compile_and_report(
    step: &GpuStep,
    params: &Params,
    arch: &str,
    shape: Shape,
) -> Result<(String, gpu::Compiled)> {
    let limits = LaunchLimits::for_arch(arch).ok_or_else(|| anyhow!("no limits are known for {arch}"))?;
    step.check_compute(gpu::compute_capability_of(arch).unwrap_or((0, 0)), arch)?;
    let geometry = step.validate(params, shape, &limits)?;
    let compiled = step.compile(params, arch)?;
    let (major, minor) = gpu::nvrtc_version().unwrap_or((0, 0));
    let mut r = format!(
        "{} ({}) compiled for {} by NVRTC {major}.{minor} (no GPU used)\n",
        step.name,
        step.file,
        step.target(arch)
    );
    if !params.is_empty() {
        let _ = writeln!(r, "  params   {params}");
    }
    let _ = writeln!(
        r,
        "  launch   at {shape}: grid {}×{}×{} · block {} threads · {} bytes of dynamic shared memory",
        geometry.grid.0,
        geometry.grid.1,
        geometry.grid.2,
        geometry.threads(),
        geometry.dynamic_smem
    );
    match compiled.ptxas {
        Some(p) => {
            let spills = spills_of(&p);
            let _ = writeln!(
                r,
                "  kernel   {} registers/thread · {} bytes static shared memory · {} bytes stack frame · spills: {spills}",
                p.registers, p.static_smem, p.stack_frame
            );
            // The other entry points a launch may queue (prologues, the step's own kernels, twins).
            let others: Vec<(String, gpu::PtxasInfo)> =
                gpu::PtxasInfo::entries(&compiled.log).into_iter().filter(|(n, _)| n != gpu::ENTRY).collect();
            for (name, e) in &others {
                let _ = writeln!(
                    r,
                    "  entry    {name}: {} registers/thread · {} bytes static shared memory · {} bytes stack frame · spills: {}",
                    e.registers,
                    e.static_smem,
                    e.stack_frame,
                    spills_of(e)
                );
            }
            // Every entry point's spills: a run runs the set and names them; the tuner leaves it out.
            let spilling = spills::reported(&compiled).unwrap_or_default();
            if let Err(e) = spills::refuse(step, params, &spilling) {
                let _ = writeln!(r, "  note     a run runs this set and its report names the spill: {e}");
            }
            for (entry, spill) in spilling.iter().filter(|(n, s)| s.bytes() <= spills::allowance(step, n)) {
                let allowed = spills::allowance(step, entry);
                let _ = writeln!(
                    r,
                    "  note     `{entry}` spills {spill}, within the {allowed} bytes stored and loaded that the step allows it"
                );
            }
            if let Some(why) = emulated::too_many_registers(p.registers, geometry.threads()) {
                let _ = writeln!(r, "  note     {why}");
            }
        }
        None => {
            r += "  kernel   NVRTC returned no ptxas report (a cached compile: set CUDA_CACHE_DISABLE=1)\n"
        }
    }
    r += "ptxas says:\n";
    // Its compile time changes from run to run and says nothing about the kernel.
    for line in compiled.log.lines().filter(|l| l.contains("ptxas") && !l.contains("Compile time")) {
        let _ = writeln!(r, "  {}", line.trim_end());
    }
    Ok((r, compiled))
}

/// An entry point's spills in words: "none", or the bytes its spill code stores and loads.
fn spills_of(p: &gpu::PtxasInfo) -> String {
    match p.spill_bytes() {
        0 => "none".to_owned(),
        _ => format!("{} bytes stored and {} loaded by spill code", p.spill_stores, p.spill_loads),
    }
}

/// The whole of `--compile-only` for a GPU step: for --arch, else the GPU present (--device),
/// else DEFAULT_ARCH.
/// `why`: the step's choice for the shape, where it chooses (made for the SMs of the command line's profile, [`Args::profile`]).
pub fn run(step: &GpuStep, args: &Args, params: &Params, shape: Shape, why: Option<&str>) -> Result<bool> {
    if args.tune {
        bail!("--compile-only and --tune do not go together: --tune runs every set on the GPU");
    }
    let arch =
        args.arch.clone().or_else(|| present_arch(args.ordinal())).unwrap_or_else(|| DEFAULT_ARCH.to_owned());
    let (report, compiled) = compile_and_report(step, params, &arch, shape)?;
    print!("{report}");
    if let Some(why) = why {
        let gpu = args.profile();
        println!("  choice   {why} (for the {}'s {} SMs)", gpu.name, gpu.machine.sms);
    }
    if let Some(path) = &args.cubin {
        std::fs::write(path, &compiled.cubin)
            .map_err(|e| anyhow!("could not write the machine code to {}: {e}", path.display()))?;
        println!(
            "machine code ({} bytes) written to {}: read it with `cuobjdump -sass {}`",
            compiled.cubin.len(),
            path.display(),
            path.display()
        );
    }
    Ok(true)
}

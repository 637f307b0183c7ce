//! Compiling a step with NVRTC, no GPU needed: the architectures the tests compile for, the
//! refusal of those a step does not run on, ptxas's report of one compile, and the check that the
//! host and the kernel agree on the numbers they share.

use std::fmt::Display;

use anyhow::{Result, anyhow};

use crate::gpu::{self, LaunchLimits, PtxasInfo};
use crate::matrix::Shape;
use crate::params::Params;
use crate::step::GpuStep;

/// The architectures the NVRTC tests compile for, each step from its oldest (limits:
/// [`LaunchLimits::for_arch`]).
pub const ARCHS: &[&str] = &["sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_120"];

/// The architectures of [`ARCHS`] that `step` runs on, with their limits; the others it refuses
/// (see [`assert_archs_refused_or_served`]).
pub fn archs(step: &GpuStep) -> Vec<(&'static str, LaunchLimits)> {
    ARCHS
        .iter()
        .filter(|&&arch| step.check_compute(cc(arch), arch).is_ok())
        .map(|&arch| (arch, LaunchLimits::for_arch(arch).expect("the architectures of ARCHS have limits")))
        .collect()
}

fn cc(arch: &str) -> (i32, i32) {
    gpu::compute_capability_of(arch).expect("the architectures of ARCHS are sm_XY")
}

/// Every architecture of [`ARCHS`] is either served by `step` or refused in one sentence that
/// names the compute capability it needs.
pub fn assert_archs_refused_or_served(step: &GpuStep) {
    for &arch in ARCHS {
        if let Err(e) = step.check_compute(cc(arch), arch) {
            let e = e.to_string();
            assert!(!e.contains('\n') && e.contains("compute capability"), "{arch}: {e}");
        }
    }
    assert!(!archs(step).is_empty(), "{}: no architecture served", step.name);
}

/// Compiles `step` with `params` for `arch` and returns ptxas's report; the whole NVRTC log
/// is in the error when the report cannot be read. On a machine with a CUDA driver, run these
/// tests with `CUDA_CACHE_DISABLE=1`: a cached compile skips ptxas and leaves no report.
pub fn nvrtc_check(step: &GpuStep, params: &Params, arch: &str) -> Result<PtxasInfo> {
    let c = step.compile(params, arch)?;
    PtxasInfo::parse(&c.log)
        .ok_or_else(|| anyhow!(
            "no ptxas report for {params} on {arch} (a cached compile? set CUDA_CACHE_DISABLE=1); NVRTC's log:\n{}",
            c.log
        ))
}

/// Compiles `step` with `params` for `arch`, its kernel followed by one `static_assert` for each
/// number the host shares with it: `(the kernel's expression, where the host keeps it, its value
/// there)`. A number that differs stops the compile, and the panic carries NVRTC's message, which
/// names it. The host sizes grids, boxes and shared memory with these numbers, so a kernel edited
/// alone would be launched wrong.
pub fn assert_kernel_agrees<K: Display, H: Display, V: Display>(
    step: &GpuStep,
    params: &Params,
    arch: &str,
    shared: impl IntoIterator<Item = (K, H, V)>,
) {
    let file = step.file.rsplit('/').next().unwrap_or(step.file);
    let mut source = format!("{}\n", step.source);
    for (kernel, host, value) in shared {
        source += &format!(
            "static_assert({kernel} == {value}, \"{file}'s {kernel} differs from {host} = {value}\");\n"
        );
    }
    let step = GpuStep { source: String::leak(source), ..*step };
    if let Err(e) = step.compile(params, arch) {
        panic!("{e:#}");
    }
}

/// The sets of `step` that differ from its defaults in `name` alone, one for each value its tuner
/// tries, that the step accepts on `arch` at 4096³.
pub fn tuner_sets(step: &GpuStep, name: &str, arch: &str) -> Vec<Params> {
    let limits = LaunchLimits::for_arch(arch).expect("an architecture with limits");
    let shape = Shape::square(4096).expect("a valid shape");
    let values = step.search.iter().find(|(n, _)| *n == name).map_or(&[][..], |(_, values)| values);
    values
        .iter()
        .map(|&v| Params::with_overrides(step.params, &[(name.to_owned(), v)]).expect("a declared parameter"))
        .filter(|params| (step.check)(params, shape, &limits).is_ok())
        .collect()
}

/// [`assert_kernel_agrees`] at each of `step`'s [`tuner_sets`] for `name` on `arch`, of which
/// there must be two at least, with the numbers `shared` gives for that set.
pub fn assert_kernel_agrees_at_tuner_sets<K: Display, H: Display, V: Display, I>(
    step: &GpuStep,
    name: &str,
    arch: &str,
    shared: impl Fn(&Params) -> I,
) where
    I: IntoIterator<Item = (K, H, V)>,
{
    let sets = tuner_sets(step, name, arch);
    assert!(sets.len() >= 2, "{} of the tuner's values of {name} checked", sets.len());
    for params in sets {
        assert_kernel_agrees(step, &params, arch, shared(&params));
    }
}

//! The picture of one warp's access (`--emulate --picture-access`) taken in a test: the accesses
//! the emulator kept for it, the data the SVG is drawn from, so that a test pins what the picture
//! shows rather than its pixels. Needs NVRTC for the PTX.

use anyhow::{Result, anyhow};

use crate::emulated;
use crate::matrix::{Family, Inputs, Shape};
use crate::run::EmulatorStep;
use crate::step::GpuStep;

pub use ptx_emulator::recording::warp_access::{PictureKind, Request, WarpAccess};

/// The accesses `spec` (`FILE.cu:LINE[:block=X,Y,Z][:warp=W]`) asks for, from one product of
/// `step` at `(m, n, k)` with `overrides` on its parameters; or the sentence that refuses it.
pub fn picture(
    step: &GpuStep,
    overrides: &[(&str, u32)],
    shape: (usize, usize, usize),
    spec: &str,
) -> Result<Vec<WarpAccess>> {
    picture_counted(step, overrides, shape, spec).map(|(accesses, _)| accesses)
}

/// [`picture`] without the sanitizer: for a kernel whose planted edit the sanitizer would stop at
/// (an operand read from the wrong element) where the test pictures another effect of the same
/// edit (the banks it reads). The accesses' elements are then not named.
pub fn picture_unsanitized(
    step: &GpuStep,
    overrides: &[(&str, u32)],
    shape: (usize, usize, usize),
    spec: &str,
) -> Result<Vec<WarpAccess>> {
    watched(step, overrides, shape, spec, false).map(|(accesses, _)| accesses)
}

/// [`picture`], with the traffic the step's kernel moved in the same run.
pub fn picture_counted(
    step: &GpuStep,
    overrides: &[(&str, u32)],
    shape: (usize, usize, usize),
    spec: &str,
) -> Result<(Vec<WarpAccess>, emulated::Traffic)> {
    // With the sanitizer, as a run asked for a picture does: it knows what each copy put where.
    watched(step, overrides, shape, spec, true)
}

/// One product of `step` with `spec`'s access watched, the sanitizer on or off.
fn watched(
    step: &GpuStep,
    overrides: &[(&str, u32)],
    (m, n, k): (usize, usize, usize),
    spec: &str,
    sanitize: bool,
) -> Result<(Vec<WarpAccess>, emulated::Traffic)> {
    let shape = Shape { m, n, k };
    let overrides: Vec<(String, u32)> = overrides.iter().map(|(n, v)| ((*n).to_owned(), *v)).collect();
    let (params, _) = step.params_for(shape, emulated::profile::H100.machine.sms, &overrides)?;
    let mut run = EmulatorStep::new(step, params, shape, false, &emulated::profile::H100)?;
    let request = Request::parse(spec).map_err(|e| anyhow!("{e}"))?;
    run.machine.watch(request).map_err(|e| anyhow!("{e}"))?;
    let (_, (traffic, _)) = run.multiply(&Inputs::family(shape, 7, Family::Uniform), sanitize)?;
    Ok((run.machine.watched(), traffic))
}

/// The `.cu` line of the first line of `source` that contains `text` (counted from 1), so that a
/// test follows the kernel's edits.
pub fn line_of(source: &str, text: &str) -> usize {
    source.lines().position(|l| l.contains(text)).unwrap_or_else(|| panic!("no line has `{text}`")) + 1
}

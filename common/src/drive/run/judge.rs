//! The run's last stage, whatever the device: C saved where asked, both products verified, the
//! report made, and the outcome and the program's exit code.

use std::process::ExitCode;

use anyhow::{Result, bail};

use crate::cli::Args;
use crate::files;
use crate::matrix::Shape;
use crate::report::NextProduct;
use crate::step::GpuStep;
use crate::verify::{self, Verdict};

/// Writes C where --save-c asks.
pub(super) fn save_c(args: &Args, shape: Shape, c: &[f32]) -> Result<()> {
    match &args.save_c {
        Some(path) => files::write_npy(path, shape.m, shape.n, c),
        None => Ok(()),
    }
}

/// The verdicts of the first product and the next, against `reference` (None where the run does
/// not verify).
pub(super) fn judge(
    step: &GpuStep,
    shape: Shape,
    (first, next): (&[f32], Option<&[f32]>),
    reference: Option<&crate::reference::Reference>,
) -> (Option<Verdict>, Option<NextProduct>) {
    let Some(r) = reference else { return (None, None) };
    let (verdict, last) =
        NextProduct::judge_both(first, next, |c: &[f32]| verify::verify(shape, c, r, step.precision));
    (Some(verdict), last)
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
/// product's line where only the next product's C failed.
pub(super) fn outcome(verdict: Option<&Verdict>, last: Option<&NextProduct>) -> Result<bool> {
    if !verdict.is_none_or(Verdict::passed) {
        return Ok(false);
    }
    if !last.is_none_or(NextProduct::passed) {
        bail!(
            "the next product's C is wrong though the first's passed: it reads something the first product left behind, or races (see the next product line above)"
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

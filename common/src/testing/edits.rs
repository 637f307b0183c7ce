//! Text edits of a kernel's source: a step with some edits made (a planted fault, or a change a
//! test makes to see it caught).

use anyhow::{Result, anyhow};

use crate::step::GpuStep;

/// The text edits apply to: `step`'s kernel with its include files put in (`#line`
/// directives keep a fault's file and line those of the file it lies in).
pub fn whole(step: &GpuStep) -> String {
    step.expanded().unwrap_or_else(|e| panic!("{}: {e}", step.name)).into_owned()
}

/// `step` with `edits` made to its kernel (a planted fault or a variant built in a test), in
/// whichever of its files the edited text lies.
pub fn edited(step: &GpuStep, edits: &[(&str, &str)]) -> GpuStep {
    let source = apply_edits(&whole(step), edits).unwrap_or_else(|e| panic!("{}: {e}", step.name));
    GpuStep { source: Box::leak(source.into_boxed_str()), ..*step }
}

/// `source` with each edit made in turn, or which edit does not match exactly once.
pub fn apply_edits(source: &str, edits: &[(&str, &str)]) -> Result<String> {
    let mut edited = source.to_owned();
    for (find, replace) in edits {
        match edited.matches(find).count() {
            1 => edited = edited.replacen(find, replace, 1),
            0 => return Err(anyhow!("edit no longer matches the kernel: `{find}`")),
            n => return Err(anyhow!("edit matches {n} places in the kernel, not one: `{find}`")),
        }
    }
    Ok(edited)
}

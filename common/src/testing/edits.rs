//! Text edits of a kernel's source: a step with some edits made, and the check that a kept
//! variant is its step's kernel with its edits and nothing else.

use anyhow::{Result, anyhow};

use crate::step::GpuStep;

/// Text edits of a kernel: each `(find, replace)` matches exactly once.
pub type Edits = &'static [(&'static str, &'static str)];

/// A measured alternative kept in a step's `variants/`, runnable with `--kernel FILE`: the
/// step's kernel with some edits, so that its time and error mean something only as long as
/// everything else is the kernel's own.
pub struct Variant {
    pub file: &'static str,
    pub source: &'static str,
    pub edits: &'static [Edits],
}

impl Variant {
    /// The step with this variant in place of its kernel.
    pub fn of(&self, step: &GpuStep) -> GpuStep {
        GpuStep { file: self.file, source: self.source, ..*step }
    }
}

/// `step` with `edits` made to its kernel (a planted fault or a variant built in a test).
pub fn edited(step: &GpuStep, edits: &[(&str, &str)]) -> GpuStep {
    let source = apply_edits(step.source, edits).unwrap_or_else(|e| panic!("{}: {e}", step.name));
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

/// Each variant is the step's kernel with its edits made, one after another, and nothing else.
pub fn assert_variants_are_edits(step: &GpuStep, variants: &[Variant]) {
    for v in variants {
        let edits: Vec<_> = v.edits.iter().flat_map(|e| e.iter().copied()).collect();
        let edited = apply_edits(step.source, &edits).unwrap_or_else(|e| panic!("{}: {e}", v.file));
        if edited != v.source {
            let at = edited.lines().zip(v.source.lines()).position(|(a, b)| a != b);
            let at = at.unwrap_or_else(|| edited.lines().count().min(v.source.lines().count()));
            let line = |text: &str| text.lines().nth(at).unwrap_or("(the end)").to_owned();
            panic!(
                "{} is not the kernel with its edits: at line {} the edits give `{}`, the file has `{}`",
                v.file,
                at + 1,
                line(&edited),
                line(v.source)
            );
        }
    }
}

//! Text edits of a kernel's source: a step with some edits made (a planted fault, or a change a
//! test makes to see it caught), and the lines two sources differ by.

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

/// The lines the change from `a` to `b` removes and adds, as `diff` counts them: the longest
/// common subsequence of lines stays, every other line of `a` is removed and of `b` added.
pub fn lines_removed_and_added(a: &str, b: &str) -> (usize, usize) {
    let (a, b): (Vec<_>, Vec<_>) = (a.lines().collect(), b.lines().collect());
    // The longest common subsequence, row by row.
    let mut row = vec![0usize; b.len() + 1];
    for x in &a {
        let mut diag = 0;
        for (j, y) in b.iter().enumerate() {
            let up = row[j + 1];
            row[j + 1] = if x == y { diag + 1 } else { up.max(row[j]) };
            diag = up;
        }
    }
    (a.len() - row[b.len()], b.len() - row[b.len()])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_counted_as_diff_counts_them() {
        assert_eq!(lines_removed_and_added("a\nb\nc\n", "a\nx\nc\nd\n"), (1, 2));
        assert_eq!(lines_removed_and_added("a\nb\n", "a\nb\n"), (0, 0));
        assert_eq!(lines_removed_and_added("", "a\n"), (0, 1));
    }
}

//! The labs' hands-on exercises: a starting kernel with `TODO`s in `stepNN_…/exercises/`, and
//! its solution as a unified diff beside it. A test applies the diff and checks that the result
//! is the file it names as the answer (the step's kernel, or a variant), so that a solution
//! cannot drift from the code the chapter teaches; another compiles every starting file.

use anyhow::{Result, anyhow, bail};

use crate::params::Params;
use crate::step::GpuStep;

/// One exercise of a lab.
pub struct Exercise {
    /// The starting file, from the repository's root: `step06_prefetch/exercises/NAME.cu`.
    pub file: &'static str,
    /// Its text.
    pub start: &'static str,
    /// The solution: `diff -u exercises/NAME.cu src/kernel.cu`, run in the step's folder.
    pub solution: &'static str,
    /// What the solution must turn the starting file into.
    pub answer: &'static str,
}

/// `text` with the unified diff `patch` applied. Every hunk must match where it says, context
/// and removed lines exactly, as `patch` with no fuzz would demand.
pub fn apply_diff(text: &str, patch: &str) -> Result<String> {
    let old: Vec<&str> = text.split_inclusive('\n').collect();
    let mut out = String::with_capacity(text.len());
    let mut next = 0; // the first line of `old` not yet copied
    let mut lines = patch.lines().peekable();
    let mut hunks = 0;
    while let Some(line) = lines.next() {
        let Some(header) = line.strip_prefix("@@ -") else { continue };
        hunks += 1;
        let start = header.split([',', ' ']).next().and_then(|s| s.parse::<usize>().ok());
        let start =
            start.ok_or_else(|| anyhow!("hunk {hunks}: its header `{line}` is not `@@ -N,M +N,M @@`"))?;
        // An empty file's hunk starts at line 0; any other at its 1-based line.
        let at = start.saturating_sub(1).max(next);
        if at > old.len() {
            bail!("hunk {hunks} starts at line {start}, past the end of the file");
        }
        out.extend(old[next..at].iter().copied());
        next = at;
        while let Some(&body) = lines.peek() {
            if body.starts_with("@@ ") || body.starts_with("--- ") || body.starts_with("diff ") {
                break;
            }
            lines.next();
            let (mark, rest) = body.split_at(body.len().min(1));
            let ends_file = lines.peek().is_some_and(|l| l.starts_with("\\ No newline"));
            let with_newline = if ends_file { rest.to_owned() } else { format!("{rest}\n") };
            match mark {
                " " | "-" | "" => {
                    let have = old.get(next).copied().unwrap_or_default();
                    if have != with_newline {
                        bail!(
                            "hunk {hunks}: line {} of the starting file is `{}`, the solution expects `{rest}`",
                            next + 1,
                            have.trim_end_matches('\n')
                        );
                    }
                    next += 1;
                    if mark != "-" {
                        out.push_str(&with_newline);
                    }
                }
                "+" => out.push_str(&with_newline),
                "\\" => {}
                _ => bail!("hunk {hunks}: `{body}` is not a line of a unified diff"),
            }
        }
    }
    if hunks == 0 {
        bail!("the solution holds no hunk (`@@ -N,M +N,M @@`): is it a unified diff?");
    }
    out.extend(old[next..].iter().copied());
    Ok(out)
}

/// Each solution, applied to its starting file, gives its answer exactly; and each starting
/// file is not already the answer and marks its work with `TODO`.
pub fn assert_solutions_apply(exercises: &[Exercise]) {
    assert!(!exercises.is_empty(), "a lab with no exercise");
    for e in exercises {
        assert!(e.start.contains("TODO"), "{}: the starting file marks no place to change with TODO", e.file);
        assert!(e.start != e.answer, "{}: the starting file is already the answer", e.file);
        let solved = apply_diff(e.start, e.solution).unwrap_or_else(|why| panic!("{}: {why}", e.file));
        if solved != e.answer {
            let line = solved.lines().zip(e.answer.lines()).position(|(a, b)| a != b);
            let line = line.unwrap_or_else(|| solved.lines().count().min(e.answer.lines().count()));
            panic!(
                "{}: the solution does not give the answer; they first differ at line {}",
                e.file,
                line + 1
            );
        }
    }
}

/// Each starting file compiles with NVRTC for sm_90 at the step's default parameters, as
/// `--kernel FILE` would compile it.
pub fn assert_starting_files_compile(step: &GpuStep, exercises: &[Exercise]) {
    for e in exercises {
        let started = GpuStep { file: e.file, source: e.start, ..*step };
        started
            .compile(&Params::defaults(step.params), "sm_90")
            .unwrap_or_else(|why| panic!("{}: {why}", e.file));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const START: &str = "a\nb\nc\nd\ne\nf\ng\nh\n";

    #[test]
    fn a_diff_is_applied_hunk_by_hunk() {
        let patch = "--- a\n+++ b\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n@@ -6,3 +6,4 @@\n f\n g\n+g2\n h\n";
        assert_eq!(apply_diff(START, patch).unwrap(), "a\nB\nc\nd\ne\nf\ng\ng2\nh\n");
    }

    #[test]
    fn a_file_without_a_last_newline() {
        let patch =
            "@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n";
        assert_eq!(apply_diff("a\nb", patch).unwrap(), "a\nc");
    }

    #[test]
    fn a_diff_that_does_not_match_is_refused() {
        let wrong_context = "@@ -1,3 +1,3 @@\n a\n-x\n+B\n c\n";
        let e = apply_diff(START, wrong_context).unwrap_err().to_string();
        assert!(e.contains("line 2 of the starting file is `b`, the solution expects `x`"), "{e}");
        assert!(apply_diff(START, "no hunks here").unwrap_err().to_string().contains("no hunk"));
        let past = apply_diff(START, "@@ -40,1 +40,1 @@\n-x\n+y\n").unwrap_err().to_string();
        assert!(past.contains("past the end"), "{past}");
    }

    #[test]
    #[should_panic(expected = "does not give the answer")]
    fn a_solution_that_gives_another_file_fails() {
        let e = Exercise {
            file: "x.cu",
            start: "// TODO\nb\n",
            solution: "@@ -1,2 +1,2 @@\n-// TODO\n+a\n b\n",
            answer: "a\nc\n",
        };
        assert_solutions_apply(&[e]);
    }

    #[test]
    #[should_panic(expected = "marks no place to change")]
    fn a_starting_file_without_todo_fails() {
        let e = Exercise { file: "x.cu", start: "a\n", solution: "@@ -1 +1 @@\n-a\n+b\n", answer: "b\n" };
        assert_solutions_apply(&[e]);
    }
}

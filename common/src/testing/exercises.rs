//! The labs' hands-on exercises: a starting kernel with `TODO`s in `stepNN_…/exercises/`, and
//! its solution as a unified diff beside it. A test applies the diff and checks that the result
//! is the file it names as the answer (the step's kernel, or a variant), so that a solution
//! cannot drift from the code the chapter teaches; another compiles every starting file.

use crate::params::Params;
use crate::patch;
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

/// Each solution, applied to its starting file, gives its answer exactly; and each starting
/// file is not already the answer and marks its work with `TODO`.
pub fn assert_solutions_apply(exercises: &[Exercise]) {
    assert!(!exercises.is_empty(), "a lab with no exercise");
    for e in exercises {
        assert!(e.start.contains("TODO"), "{}: the starting file marks no place to change with TODO", e.file);
        assert!(e.start != e.answer, "{}: the starting file is already the answer", e.file);
        let solved = patch::apply(e.start, e.solution)
            .unwrap_or_else(|why| panic!("{}: its solution does not apply: {why}", e.file));
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

//! The labs' hands-on exercises: a starting kernel with `TODO`s in `stepNN_…/exercises/`, and
//! its solution as a unified diff beside it. A test applies the diff and checks that the result
//! is the file it names as the answer (the step's kernel, or a variant), so that a solution
//! cannot drift from the code the chapter teaches; another compiles every starting file.

use crate::params::Params;
use crate::patch;
use crate::step::GpuStep;

/// The most lines a starting file may have: what a learner is handed is mostly what they write
/// and what they read to write it; the rest of the kernel is the step's include files, which
/// the file pulls in (see [`crate::includes`]).
pub const MOST_LINES: usize = 500;

/// Every starting file in the workspace (`step*/exercises/*.cu`) longer than `most` lines, with
/// its line count, in the order of their paths.
pub fn longer_than(most: usize) -> Vec<(String, usize)> {
    let root = crate::testing::copies::root();
    let mut long = Vec::new();
    let mut steps: Vec<_> = std::fs::read_dir(&root).expect("the workspace's root").flatten().collect();
    steps.sort_by_key(|e| e.file_name());
    for step in steps.iter().filter(|e| e.file_name().to_string_lossy().starts_with("step")) {
        let Ok(files) = std::fs::read_dir(step.path().join("exercises")) else { continue };
        let mut files: Vec<_> = files.flatten().map(|e| e.path()).collect();
        files.sort();
        for file in files.iter().filter(|f| f.extension().is_some_and(|e| e == "cu")) {
            let lines = std::fs::read_to_string(file).expect("a starting file").lines().count();
            if lines > most {
                long.push((file.strip_prefix(&root).unwrap_or(file).display().to_string(), lines));
            }
        }
    }
    long
}

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

/// Through the program `bin`: a copy of each starting file placed in a folder of its own, far
/// from the step's, compiles with `--compile-only --kernel COPY`, its includes resolved from the
/// include files built into the program; and the same copy with an include's name misspelt is refused in
/// one sentence that names it, with a non-zero exit and no panic. Needs NVRTC, not a GPU.
pub fn assert_copies_elsewhere_compile(bin: &str, exercises: &[Exercise]) {
    for e in exercises {
        let name = std::path::Path::new(e.file).file_name().expect("a file name").to_string_lossy();
        let dir = std::env::temp_dir().join(format!("matmul-course-elsewhere-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let copy = dir.join(&*name);
        std::fs::write(&copy, e.start).unwrap();
        let path = copy.to_str().unwrap();
        let (code, out, err) =
            crate::testing::run_for_output(bin, &["--compile-only", "--arch", "sm_90", "--kernel", path]);
        assert_eq!(code, Some(0), "{}, copied to {path}:\n{out}{err}", e.file);
        assert!(out.contains(path), "the report names the copy {path}:\n{out}");
        let included = e.start.lines().find_map(|l| l.strip_prefix("#include \"")).expect("an #include");
        let name = included.trim_end_matches('"');
        let wrong = e.start.replacen(&format!("#include \"{name}\""), "#include \"no_such_file.cuh\"", 1);
        std::fs::write(&copy, wrong).unwrap();
        let (code, _, err) = crate::testing::run_for_output(bin, &["--compile-only", "--kernel", path]);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(code, Some(1), "{err}");
        let says = "includes \"no_such_file.cuh\", which is not one of the step's include files";
        assert!(err.starts_with(&format!("error: {path}:")) && err.contains(says), "{err}");
        assert_eq!(err.trim_end().lines().count(), 1, "one sentence, no backtrace: {err}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_starting_file_is_longer_than_most_lines() {
        let long = longer_than(MOST_LINES);
        let named: Vec<String> = long.iter().map(|(f, n)| format!("{f} ({n} lines)")).collect();
        assert!(
            long.is_empty(),
            "starting files over {MOST_LINES} lines: {}; move what the exercise does not ask for into the \
             step's include files and include them",
            named.join(", ")
        );
        // The count itself: the longest starting file is over a line long.
        assert!(!longer_than(1).is_empty(), "no starting file found under step*/exercises/");
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

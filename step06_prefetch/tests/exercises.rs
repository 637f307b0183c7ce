//! The hands-on exercise: its solution turns the starting file into the step's kernel, and the
//! starting file compiles.
use common::testing::exercises::{self, Exercise};

const EXERCISES: &[Exercise] = &[Exercise {
    file: "step06_prefetch/exercises/prefetch.cu",
    start: include_str!("../exercises/prefetch.cu"),
    solution: include_str!("../exercises/prefetch.diff"),
    answer: include_str!("../src/kernel.cu"),
}];

#[test]
fn each_solution_turns_its_starting_file_into_its_answer() {
    exercises::assert_solutions_apply(EXERCISES);
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_each_starting_file_compiles() {
    exercises::assert_starting_files_compile(&step06_prefetch::STEP, EXERCISES);
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_the_starting_file_waits_twice_a_slice_on_the_emulator() {
    // The exercise is about time, not correctness: the starting file verifies, but its block
    // passes two barriers a slice where the answer passes one (and one before its loop).
    use common::testing::emulator;
    let shape = common::Shape { m: 128, n: 256, k: 160 };
    let e = &EXERCISES[0];
    let started = emulator::with_source(&step06_prefetch::STEP, e.file, e.start.to_owned());
    let (_, verdict, before) = emulator::emulate_counted(&started, &[], shape).unwrap();
    let (_, _, after) = emulator::emulate_counted(&step06_prefetch::STEP, &[], shape).unwrap();
    assert!(verdict.passed(), "the starting file is step 05's loop, which verifies");
    let slices = 160 / 16;
    assert_eq!((before.barriers, after.barriers), (2 * slices, slices + 1), "one block, BK = 16");
}

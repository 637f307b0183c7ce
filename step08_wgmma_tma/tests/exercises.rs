//! The hands-on exercise: its solution turns the starting file into the step's kernel, and the
//! starting file compiles.
use common::testing::exercises::{self, Exercise};

const EXERCISES: &[Exercise] = &[Exercise {
    file: "step08_wgmma_tma/exercises/descriptor.cu",
    start: include_str!("../exercises/descriptor.cu"),
    solution: include_str!("../exercises/descriptor.diff"),
    answer: include_str!("../src/kernel.cu"),
}];

#[test]
fn each_solution_turns_its_starting_file_into_its_answer() {
    exercises::assert_solutions_apply(EXERCISES);
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_each_starting_file_compiles() {
    exercises::assert_starting_files_compile(&step08_wgmma_tma::STEP, EXERCISES);
}

/// On the emulator the starting file fails too: its descriptor reads other elements of A's tile
/// than the copy engine put there, which the sanitizer names (on a GPU, `verify FAIL` with most
/// of C outside its bound); the solution, the step's kernel, passes the emulator's own tests.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_starting_file_fails() {
    common::testing::emulator::assert_starting_files_fail(&step08_wgmma_tma::STEP, EXERCISES, (67, 45, 129));
}

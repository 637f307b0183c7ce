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

/// On the emulator, as on a GPU: the starting file's wrong descriptor reads other elements of
/// A's tile (most of C outside its bound, `verify FAIL`), and the solution (the step's kernel,
/// checked by the emulator's own tests) passes.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_starting_file_fails() {
    common::testing::emulator::assert_starting_files_fail(&step08_wgmma_tma::STEP, EXERCISES, (67, 45, 129));
}

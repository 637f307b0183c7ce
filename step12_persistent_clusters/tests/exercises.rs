//! The hands-on exercise: its solution turns the starting file into the step's kernel, and the
//! starting file compiles.
use common::testing::exercises::{self, Exercise};

const EXERCISES: &[Exercise] = &[Exercise {
    file: "step12_persistent_clusters/exercises/tile_order.cu",
    start: include_str!("../exercises/tile_order.cu"),
    solution: include_str!("../exercises/tile_order.diff"),
    answer: include_str!("../src/kernel.cu"),
}];

#[test]
fn each_solution_turns_its_starting_file_into_its_answer() {
    exercises::assert_solutions_apply(EXERCISES);
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_each_starting_file_compiles() {
    exercises::assert_starting_files_compile(&step12_persistent_clusters::STEP, EXERCISES);
}

#[test]
#[ignore = "needs NVRTC"]
fn nvrtc_a_copy_elsewhere_compiles_and_a_wrong_include_is_refused() {
    exercises::assert_copies_elsewhere_compile(env!("CARGO_BIN_EXE_step12_persistent_clusters"), EXERCISES);
}

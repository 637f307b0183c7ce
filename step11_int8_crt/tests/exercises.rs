//! The hands-on exercise: its solution turns the starting file into the step's kernel, and the
//! starting file compiles.
use common::testing::exercises::{self, Exercise};

const EXERCISES: &[Exercise] = &[Exercise {
    file: "step11_int8_crt/exercises/residues.cu",
    start: include_str!("../exercises/residues.cu"),
    solution: include_str!("../exercises/residues.diff"),
    answer: include_str!("../src/kernel.cu"),
}];

#[test]
fn each_solution_turns_its_starting_file_into_its_answer() {
    exercises::assert_solutions_apply(EXERCISES);
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_each_starting_file_compiles() {
    exercises::assert_starting_files_compile(&step11_int8_crt::STEP, EXERCISES);
}

#[test]
#[ignore = "needs NVRTC"]
fn nvrtc_a_copy_elsewhere_compiles_and_a_wrong_include_is_refused() {
    exercises::assert_copies_elsewhere_compile(env!("CARGO_BIN_EXE_step11_int8_crt"), EXERCISES);
}

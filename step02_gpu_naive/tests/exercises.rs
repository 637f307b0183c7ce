//! The hands-on exercise: its solution turns the starting file into the step's kernel, and the
//! starting file compiles. Also the chapter's program without the framework, on a GPU.
use common::testing::exercises::{self, Exercise};

const EXERCISES: &[Exercise] = &[Exercise {
    file: "step02_gpu_naive/exercises/mapping.cu",
    start: include_str!("../exercises/mapping.cu"),
    solution: include_str!("../exercises/mapping.diff"),
    answer: include_str!("../src/kernel.cu"),
}];

#[test]
fn each_solution_turns_its_starting_file_into_its_answer() {
    exercises::assert_solutions_apply(EXERCISES);
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_each_starting_file_compiles() {
    exercises::assert_starting_files_compile(&step02_gpu_naive::STEP, EXERCISES);
}

/// The chapter's program without the framework, `examples/bare.rs`, compiled into this test.
#[allow(dead_code)] // its `main`
#[path = "../examples/bare.rs"]
mod bare;

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_bare_example_passes() {
    assert!(bare::run().unwrap(), "the bare program's product is outside its tolerance");
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_each_starting_file_fails_on_the_emulator() {
    common::testing::emulator::assert_starting_files_fail(&step02_gpu_naive::STEP, EXERCISES, (67, 45, 129));
}

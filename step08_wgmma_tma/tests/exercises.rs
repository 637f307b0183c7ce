//! The hands-on exercise: its solution turns the starting file into the step's kernel, and the
//! starting file compiles.
use common::testing::emulator;
use common::testing::exercises::{self, Exercise};
use step08_wgmma_tma::STEP;

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

/// The pipeline exercise: lab 08's kernel without its mbarrier bookkeeping, and with a consumer
/// that keeps one wgmma group in flight, so that its answer is a kernel of its own.
const PIPELINE: &str = include_str!("../exercises/pipeline.cu");
const PIPELINE_FILE: &str = "step08_wgmma_tma/exercises/pipeline.cu";

fn pipeline_solved() -> String {
    common::patch::apply(PIPELINE, include_str!("../exercises/pipeline.diff"))
        .unwrap_or_else(|why| panic!("{PIPELINE_FILE}: its solution does not apply: {why}"))
}

/// The step's kernel with one edit of the solved pipeline, the text `find` replaced by `replace`.
fn pipeline_planted(find: &str, replace: &str) -> common::GpuStep {
    let solved = pipeline_solved();
    assert!(solved.contains(find), "`{find}` is not in the solved pipeline");
    emulator::with_source(&STEP, PIPELINE_FILE, solved.replacen(find, replace, 1))
}

#[test]
fn the_pipelines_solution_applies_and_is_not_the_labs_kernel() {
    assert!(PIPELINE.contains("TODO"), "{PIPELINE_FILE}: no TODO");
    let solved = pipeline_solved();
    assert!(!solved.contains("TODO"), "the solved pipeline keeps a TODO");
    assert_ne!(solved, include_str!("../src/kernel.cu"), "the solution is the lab's own kernel");
    assert!(solved.contains("wgmma_wait_one();"), "the solved consumer keeps no group in flight");
}

/// As given, the starting file stops at its first use of a barrier no one initialised; solved,
/// it passes with 4, 3 and 2 stages (the phases of every barrier wrap) and at an odd shape.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_pipeline_fails_as_given_and_passes_solved() {
    let started = emulator::with_source(&STEP, PIPELINE_FILE, PIPELINE.to_owned());
    emulator::assert_fault_named(&started, &[], (64, 128, 256), &["before any mbarrier.init"]);
    let solved = emulator::with_source(&STEP, PIPELINE_FILE, pipeline_solved());
    emulator::assert_emulated_pass(&solved, &[], &[(64, 128, 256), (67, 45, 300)]);
    for stages in [2, 3] {
        emulator::assert_emulated_pass(&solved, &[("STAGES", stages)], &[(64, 128, 256)]);
    }
}

/// The wrong answers the chapter shows are each named: the stage of the group still in flight
/// freed, a wait on the wrong parity, fewer bytes announced than the copies carry.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_pipeline_wrong_answers_are_named() {
    let shape = (64, 128, 256);
    let freed_early = pipeline_planted(
        "if (kt > 0 && lane == 0) mbar_arrive(&empty[(kt - 1) % STAGES]);",
        "if (lane == 0) mbar_arrive(&empty[s]);",
    );
    emulator::assert_fault_named(&freed_early, &[], shape, &["the copy engine overwrites", "wgmma"]);
    let parity = pipeline_planted("mbar_wait(&full[s], (kt / STAGES) % 2);", "mbar_wait(&full[s], kt % 2);");
    emulator::assert_fault_named(&parity, &[], shape, &["deadlock"]);
    let bytes = pipeline_planted(
        "mbar_expect_bytes(&full[s], STAGE_BYTES);",
        "mbar_expect_bytes(&full[s], 4 * A_TILE);",
    );
    emulator::assert_fault_named(&bytes, &[], shape, &["announced 16384 bytes fewer"]);
}

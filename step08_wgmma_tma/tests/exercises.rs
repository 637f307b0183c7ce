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

/// The pipeline exercise: lab 08's kernel without its mbarrier bookkeeping, walking the ring of
/// buffers with a running buffer index and phase bit, so that its answer is a kernel of its own.
const PIPELINE: &str = include_str!("../exercises/pipeline.cu");
const PIPELINE_FILE: &str = "step08_wgmma_tma/exercises/pipeline.cu";

fn pipeline_solved() -> String {
    common::patch::apply(PIPELINE, include_str!("../exercises/pipeline.diff"))
        .unwrap_or_else(|why| panic!("{PIPELINE_FILE}: its solution does not apply: {why}"))
}

/// The solved pipeline with one edit, the text `find` replaced by `replace`.
fn pipeline_planted(find: &str, replace: &str) -> common::GpuStep {
    let solved = pipeline_solved();
    assert!(solved.contains(find), "`{find}` is not in the solved pipeline");
    emulator::with_source(&STEP, PIPELINE_FILE, solved.replacen(find, replace, 1))
}

/// The solution is not the lab's kernel: both walk the ring with a phase bit. Its consumer waits
/// for each tile's wgmma group in full before the next tile: a group still in flight may read
/// its B fragments, registers the next tile writes again (undefined in the PTX ISA, and a wrong
/// C on an H100, while the emulator runs it to a PASS).
#[test]
fn the_pipelines_solution_applies_and_is_not_the_labs_kernel() {
    assert!(PIPELINE.contains("TODO"), "{PIPELINE_FILE}: no TODO");
    let solved = pipeline_solved();
    assert!(!solved.contains("TODO"), "the solved pipeline keeps a TODO");
    assert_ne!(solved, include_str!("../src/kernel.cu"), "the solution is the lab's own kernel");
    for (name, text) in [("the starting file", PIPELINE), ("the solution", solved.as_str())] {
        assert_eq!(
            text.matches("phase ^= 1; }").count(),
            2,
            "{name}: the producer and the consumers each flip a phase bit"
        );
        assert!(!text.contains("% STAGES"), "{name} takes the buffer from kt");
        let commits: Vec<_> = text.match_indices("wgmma_commit();").collect();
        assert_eq!(commits.len(), 1, "{name}: one wgmma_commit");
        let after = text[commits[0].0..].lines().nth(1).unwrap_or_default().trim();
        assert_eq!(
            after, "wgmma_wait_all();",
            "{name}: the line after wgmma_commit() must wait for the group"
        );
        assert!(!text.contains("wait_group.sync.aligned 1"), "{name} keeps a wgmma group in flight");
    }
}

/// As given, the starting file stops at its first use of a barrier no one initialised; solved,
/// it passes with 4, 3 and 2 buffers (the phases of every barrier wrap) and at an odd shape.
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

/// The wrong answers the chapter shows are each named: the arrival before the wait for the
/// wgmma, the producer's first wait on parity `phase` (a fresh barrier's phase 0, which only the
/// consumers can end), a consumer's wait on parity 0 every time, no `expect_tx`, one short of
/// the copies' bytes, and an `empty` count one short of the consumer warps.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_pipeline_wrong_answers_are_named() {
    let shape = (64, 128, 256);
    let early = pipeline_planted(
        "wgmma_wait_all();\n            if (lane == 0) mbar_arrive(&empty[s]);",
        "if (lane == 0) mbar_arrive(&empty[s]);\n            wgmma_wait_all();",
    );
    emulator::assert_fault_named(
        &early,
        &[],
        shape,
        &["the copy engine overwrites", "in wgmma_wait_all at", "arrive after the wait"],
    );
    let parity = pipeline_planted("mbar_wait(&empty[s], phase ^ 1);", "mbar_wait(&empty[s], phase);");
    emulator::assert_fault_named(
        &parity,
        &[],
        shape,
        &[
            "deadlock",
            "for the phase of parity 0 of the mbarrier `empty[0]` (phase 0 is under way and still waits for 8 of 8",
        ],
    );
    let full = pipeline_planted("mbar_wait(&full[s], phase);", "mbar_wait(&full[s], 0);");
    emulator::assert_fault_named(
        &full,
        &[],
        shape,
        &["`full[0]` passed on phase 0 again", "a wait on the wrong parity (it needed phase 1, of parity 1)"],
    );
    let no_bytes = pipeline_planted("                mbar_expect_bytes(&full[s], STAGE_BYTES);\n", "");
    emulator::assert_fault_named(
        &no_bytes,
        &[],
        shape,
        &["deadlock", "`full[0]` (phase 0 is under way and still waits for 1 of 1"],
    );
    let short = pipeline_planted(
        "mbar_expect_bytes(&full[s], STAGE_BYTES);",
        "mbar_expect_bytes(&full[s], 4 * A_TILE);",
    );
    emulator::assert_fault_named(&short, &[], shape, &["announced 16384 bytes fewer"]);
    let count =
        pipeline_planted("mbar_init(&empty[s], 4 * CONSUMERS);", "mbar_init(&empty[s], 4 * CONSUMERS - 1);");
    emulator::assert_fault_named(&count, &[], shape, &["gets 8 arrivals on a phase that counts 7"]);
}

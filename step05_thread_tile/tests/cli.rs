//! Bad inputs: each gets one clear sentence and a non-zero exit, never a panic.

use common::testing;

const BIN: &str = env!("CARGO_BIN_EXE_step05_thread_tile");

common::program_tests!(BIN);

#[test]
fn invalid_parameter_sets_are_refused_without_a_gpu() {
    testing::thread_tile::assert_bad_sets_refused_without_a_gpu(BIN);
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_a_spilling_set_is_refused() {
    testing::thread_tile::assert_spilling_set_refused_by_program(BIN);
}

#[test]
fn help_names_the_default_shape_and_the_chapter() {
    testing::assert_help(
        BIN,
        &[
            "Default shape: 4096×4096×4096",
            "Chapter: docs/src/step05.md",
            "--tune",
            "--stage",
            "4_transposed_a",
        ],
        &[],
    );
}

#[test]
fn an_unknown_stage_is_refused_with_the_list() {
    let (code, out) = testing::run_program(BIN, &["--stage", "9_nothing", "--compile-only"], &[]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("has no stage 9_nothing; its stages are 1_column_tile, 2_outer_products"), "{out}");
    let (code, out) = testing::run_program(BIN, &["--stage", "3_warp_regions", "--kernel", "x.cu"], &[]);
    assert_eq!(code, Some(2), "{out}");
}

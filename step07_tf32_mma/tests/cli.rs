//! Bad inputs: each gets one clear sentence and a non-zero exit, never a panic.

use common::testing;

const BIN: &str = env!("CARGO_BIN_EXE_step07_tf32_mma");

common::program_tests!(BIN);

#[test]
fn invalid_parameter_sets_are_refused_without_a_gpu() {
    testing::assert_bad_sets_refused_without_a_gpu(
        BIN,
        &[
            (&["--param", "WM=24"], "multiples of 16"),
            (&["--param", "WM=48"], "whole number of warp regions"),
            (&["--param", "BK=24"], "BK/4 and BN/4 must divide"),
        ],
    );
}

#[test]
fn help_names_the_default_shape_and_the_chapter() {
    testing::assert_help(BIN, &["Default shape: 4096×4096×4096", "Chapter: docs/src/step07.md", "WN"], &[]);
}

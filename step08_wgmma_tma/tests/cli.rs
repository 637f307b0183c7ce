//! Bad inputs: each gets one clear sentence and a non-zero exit, never a panic.

use common::testing;

const BIN: &str = env!("CARGO_BIN_EXE_step08_wgmma_tma");

common::program_tests!(BIN);

#[test]
fn invalid_parameter_sets_are_refused_without_a_gpu() {
    testing::assert_bad_sets_refused_without_a_gpu(
        BIN,
        &[
            (&["--param", "BM=64"], "written for 128 or 256"),
            (&["--param", "STAGES=1"], "STAGES must be 2 to 8"),
            (&["--param", "BN=192"], "do not fit in an SM's registers"),
        ],
    );
}

#[test]
fn help_names_the_default_shape_and_the_chapter() {
    testing::assert_help(
        BIN,
        &["Default shape: 4096×4096×4096", "Chapter: docs/src/step08.md", "STAGES"],
        &[],
    );
}

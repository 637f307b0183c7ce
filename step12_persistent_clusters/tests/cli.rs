//! Bad inputs: each gets one clear sentence and a non-zero exit, never a panic.

use common::testing;

const BIN: &str = env!("CARGO_BIN_EXE_step12_persistent_clusters");

common::program_tests!(BIN);

#[test]
fn invalid_parameter_sets_are_refused_without_a_gpu() {
    testing::assert_bad_sets_refused_without_a_gpu(
        BIN,
        &[
            (&["--param", "BM=64"], "written for 128 or 256"),
            (&["--param", "STAGES=1"], "STAGES must be 2 to 8"),
            // 256-row tiles: at the test's 256³ the rule would choose 128 rows, which fit.
            (&["--param", "BM=256", "--param", "BN=192"], "do not fit in an SM's registers"),
            (&["--param", "CLUSTER=3"], "CLUSTER must be 1, 2 or 4"),
        ],
    );
}

#[test]
fn help_names_the_default_shape_and_the_chapter() {
    testing::assert_help(
        BIN,
        &["Default shape: 4096×4096×4096", "Chapter: docs/src/step12.md", "STAGES", "CLUSTER"],
        &[],
    );
}

//! Bad inputs: each gets one clear sentence and a non-zero exit, never a panic.

use common::testing;

const BIN: &str = env!("CARGO_BIN_EXE_step03_single_block");

common::program_tests!(BIN);

#[test]
fn shapes_beyond_one_block_are_refused_without_a_gpu() {
    let no_gpu = [("CUDA_VISIBLE_DEVICES", "")];
    testing::assert_clear_error(BIN, &["--size", "33"], &no_gpu, "step04_tiled lifts this limit");
    testing::assert_clear_error(BIN, &["-m", "8", "-n", "8", "-k", "5000"], &no_gpu, "shared memory");
}

#[test]
fn help_names_the_default_shape_and_the_chapter() {
    testing::assert_help(
        BIN,
        &["Default shape: 32×32×32", "Chapter: docs/src/step03.md", "--device"],
        &["--param", "--tune"],
    );
}

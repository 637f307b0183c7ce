//! Bad inputs: each gets one clear sentence and a non-zero exit, never a panic.

use common::testing;

const BIN: &str = env!("CARGO_BIN_EXE_step04_tiled");

common::program_tests!(BIN);

#[test]
fn impossible_tiles_and_shapes_are_refused_without_a_gpu() {
    let no_gpu = [("CUDA_VISIBLE_DEVICES", "")];
    testing::assert_clear_error(BIN, &["--param", "TILE=64"], &no_gpu, "TILE must be from 1 to 32");
    testing::assert_clear_error(BIN, &["--param", "UNROLL=0"], &no_gpu, "UNROLL must be at least 1");
    // 50000² floats are 10 GB a matrix: a GPU of enough memory multiplies them (compiled wide),
    // the emulator refuses them by its own limit, a day of emulation.
    testing::assert_clear_error(BIN, &["--size", "50000"], &no_gpu, "past the day an emulated run may take");
}

#[test]
fn help_names_the_default_shape_and_the_chapter() {
    testing::assert_help(BIN, &["Default shape: 4096×4096×4096", "Chapter: docs/src/step04.md", "TILE"], &[]);
}

use common::Params;
use common::testing::thread_tile::{self, FAULTS};
use common::testing::{self, DEEP, SHAPES};
use step06_prefetch::STEP;

#[test]
fn documented_sets_are_valid_and_bad_ones_refused() {
    thread_tile::assert_sets_checked(&STEP);
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_compiles_documented_sets_without_spills() {
    thread_tile::assert_sets_compile(&STEP);
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_an_edit_that_does_not_compile_shows_the_log() {
    thread_tile::assert_broken_edit_reported(&STEP);
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_matches_the_reference_on_many_shapes() {
    testing::assert_defaults_pass(&STEP, SHAPES);
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_documented_sets_match_the_reference() {
    thread_tile::assert_sets_correct_on_gpu(&STEP);
}

#[test]
fn the_shapes_of_the_overwrite_fault_are_shared() {
    thread_tile::assert_shared_shapes_share(&STEP);
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_a_shared_tile_piece_that_overwrites_the_sum_fails() {
    thread_tile::assert_overwrite_caught_on_gpu(&STEP);
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_random_shapes_match_the_reference() {
    testing::gpu_property(&STEP, Params::defaults(STEP.params), 500, testing::random_shapes());
}

common::planted_fault_tests!(STEP, FAULTS, &[SHAPES, DEEP].concat(), env!("CARGO_BIN_EXE_step06_prefetch"));

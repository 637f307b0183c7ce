//! Helpers for the steps' tests, a file for each kind: the shapes every kernel must get right
//! (`shapes.rs`), text edits of a kernel (`edits.rs`), the checks that run a step on the GPU
//! (`checker.rs`) or compile it with NVRTC (`nvrtc.rs`), those that run its program
//! (`command_line.rs`), the inputs drawn for them (`inputs.rs`), a step's documented parameter
//! sets checked, compiled and run (`sets.rs`), the check that each variant or stage is its base
//! with its recorded change (`copies.rs`), and those that run a kernel on the PTX emulator
//! (`emulator.rs`) or draw one warp's access there (`picture.rs`), and the checks of a kernel
//! compiled wide (`wide_offsets.rs`). Every helper is at
//! `common::testing::` whichever file holds it.

pub mod access_picture;
mod checker;
mod command_line;
pub mod copies;
mod edits;
pub mod emulator;
pub mod exercises;
pub mod faults;
mod inputs;
mod nvrtc;
mod sets;
mod shapes;
pub mod thread_tile;
pub mod wide_offsets;

pub use checker::{
    Beside, Checker, assert_all_pass, assert_defaults_pass, assert_exact, beside_sgemm, class_mismatches,
    errors_beside_sgemm, gpu_check, gpu_property, gpu_property_with, verified_run,
};
pub use command_line::{
    Ran, assert_bad_sets_refused_without_a_gpu, assert_clear_error, assert_clear_outcome,
    assert_common_bad_inputs_refused, assert_compile_only, assert_every_path_catches,
    assert_every_path_reached, assert_file_round_trip, assert_help, assert_kernel_option,
    assert_needs_nvrtc_without_a_gpu, assert_npy_inputs_pass, assert_runs_on_the_emulator_without_a_gpu,
    every_path_lines, program, run_every_path, run_for_output, run_for_report, run_program,
    run_program_limited, scratch_file,
};
pub use edits::{apply_edits, edited, lines_removed_and_added, whole};
pub use inputs::{random_shapes, real_looking_inputs, special_inputs};
pub use nvrtc::{
    ARCHS, archs, assert_archs_refused_or_served, assert_kernel_agrees, assert_kernel_agrees_at_tuner_sets,
    nvrtc_check, tuner_sets,
};
pub use sets::Sets;
pub use shapes::{DEEP, SHAPES, named_params};

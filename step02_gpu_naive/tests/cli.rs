//! Bad inputs: each gets one clear sentence and a non-zero exit, never a panic.

use common::testing;

const BIN: &str = env!("CARGO_BIN_EXE_step02_gpu_naive");

common::program_tests!(BIN);

#[test]
fn bad_parameters_are_named_without_a_gpu() {
    let no_gpu = [("CUDA_VISIBLE_DEVICES", "")];
    testing::assert_clear_error(BIN, &["--param", "BLOCK=0"], &no_gpu, "BLOCK must be from 1 to 32");
    testing::assert_clear_error(BIN, &["--param", "COALESCED=2"], &no_gpu, "COALESCED=2 must be 1");
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_tune_holds_given_parameters_and_can_skip_verification() {
    let args = ["--size", "256", "--tune", "--param", "COALESCED=1", "--no-verify", "--reps", "3"];
    let out = std::process::Command::new(testing::program(BIN)).args(args).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    // BLOCK alone is searched: 3 sets, none with COALESCED=0, none verified.
    assert!(stdout.contains(": 3 combinations"), "{stdout}");
    assert!(!stdout.contains("COALESCED=0") && stdout.contains("not verified"), "{stdout}");
}

#[test]
fn help_names_the_default_shape_and_the_chapter() {
    testing::assert_help(
        BIN,
        &["Default shape: 4096×4096×4096", "Chapter: docs/src/step02.md", "COALESCED"],
        &[],
    );
}

/// A and B from files (an f64 `.npy` in Fortran order, a bf16 `.safetensors` tensor), run on the
/// GPU, C saved and compared; the files' errors refused in one sentence.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_files_in_and_c_out_round_trip() {
    testing::assert_file_round_trip(BIN);
}

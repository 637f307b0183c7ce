//! Bad inputs: each gets one clear sentence and a non-zero exit, never a panic.

use common::testing;

const BIN: &str = env!("CARGO_BIN_EXE_step11_int8_crt");

common::program_tests!(BIN);

#[test]
fn invalid_parameter_sets_are_refused_without_a_gpu() {
    testing::assert_bad_sets_refused_without_a_gpu(
        BIN,
        &[
            (&["--param", "MODULI=9"], "MODULI must be 2 to 8"),
            (&["--param", "STAGES=5"], "STAGES must be 2 to 4"),
            (&["--param", "GROUP=0"], "GROUP must be 1 to 64"),
            // The depth's refusals at 8 rows and columns: a run draws its inputs before the
            // step checks its set, and 256 rows of 200000 terms take seconds unoptimised.
            (&["-m", "8", "-n", "8", "-k", "200000"], "deeper than the 131072 terms"),
            (&["--param", "MODULI=2", "-m", "8", "-n", "8", "-k", "131072"], "raise MODULI"),
            (&["--param", "COUNT=5"], "COUNT must be 0 (the data chooses) or 7 to 16"),
        ],
    );
}

#[test]
fn help_names_the_default_shape_and_the_chapter() {
    testing::assert_help(
        BIN,
        &["Default shape: 4096×4096×4096", "Chapter: docs/src/step11.md", "MODULI", "--moduli <N>"],
        &[],
    );
}

/// Inputs with the features that once cost this step FP32's accuracy, brought as `.npy` files.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_real_looking_inputs_from_npy_files_pass() {
    testing::assert_npy_inputs_pass(BIN);
}

/// `--moduli` takes 2 to 16: clap refuses the rest in one line.
#[test]
fn the_forced_count_is_checked_and_is_step_elevens_alone() {
    for bad in ["1", "17", "x"] {
        let (code, err) = testing::run_program(BIN, &["--moduli", bad], &[]);
        assert_eq!(code, Some(2), "--moduli {bad}: {err}");
        assert!(err.contains("--moduli"), "--moduli {bad}: {err}");
    }
}

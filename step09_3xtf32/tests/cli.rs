//! Bad inputs: each gets one clear sentence and a non-zero exit, never a panic.

use common::testing;

const BIN: &str = env!("CARGO_BIN_EXE_step09_3xtf32");

common::program_tests!(BIN);

#[test]
fn invalid_parameter_sets_are_refused_without_a_gpu() {
    testing::assert_bad_sets_refused_without_a_gpu(
        BIN,
        &[
            (&["--param", "BN=192"], "BN must be 64 or 128"),
            (&["--param", "GROUP=0"], "GROUP must be 1 to 64"),
            (&["--param", "STAGES=5"], "lower STAGES or BN"),
        ],
    );
}

#[test]
fn help_names_the_default_shape_and_the_chapter() {
    testing::assert_help(
        BIN,
        &["Default shape: 4096×4096×4096", "Chapter: docs/src/step09.md", "STAGES"],
        &[],
    );
}

/// A variant kept as its diff alone, written where a learner's checkout has it.
fn checkout_with(diff_name: &str, diff: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("step09-{}-{}", diff_name, std::process::id()));
    std::fs::create_dir_all(dir.join("step09_3xtf32/variants")).unwrap();
    std::fs::write(dir.join("step09_3xtf32/variants").join(diff_name), diff).unwrap();
    dir
}

/// `--kernel step09_3xtf32/variants/no_flush.diff` compiles the step's kernel with the variant's
/// change applied, named by the kernel and the diff, with the step's launch.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_compile_only_takes_a_variant_kept_as_its_diff() {
    let dir = checkout_with("no_flush.diff", include_str!("../variants/no_flush.diff"));
    let out = std::process::Command::new(testing::program(BIN))
        .args(["--kernel", "step09_3xtf32/variants/no_flush.diff", "--compile-only", "--arch", "sm_90"])
        .current_dir(&dir)
        .env("CUDA_CACHE_DISABLE", "1")
        .output()
        .unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{stdout}{stderr}");
    let compiled = "step09_3xtf32 (step09_3xtf32/src/kernel.cu+step09_3xtf32/variants/no_flush.diff) compiled for sm_90a";
    for says in [compiled, "grid 32×32×1 · block 384 threads", "spills: none"] {
        assert!(stdout.contains(says), "`{says}` missing:\n{stdout}");
    }
}

/// A diff that does not fit the step's kernel is refused in one sentence that names the hunk and
/// the line, before anything is compiled; so is the exercise's solution, a diff of another file.
#[test]
fn a_diff_that_does_not_apply_is_refused_in_one_sentence() {
    let edited = include_str!("../variants/no_flush.diff").replace(
        " #pragma unroll\n             for (int i = 0; i < BM / 2; ++i) acc[i] += part[i];",
        " #pragma unroll 4\n             for (int i = 0; i < BM / 2; ++i) acc[i] += part[i];",
    );
    assert_ne!(edited, include_str!("../variants/no_flush.diff"));
    let dir = checkout_with("stale.diff", &edited);
    let stale = dir.join("step09_3xtf32/variants/stale.diff");
    let solution = concat!(env!("CARGO_MANIFEST_DIR"), "/exercises/split.diff");
    for args in [&["--compile-only"][..], &["--size", "64"], &["--emulate", "--size", "64"]] {
        let mut with = vec!["--kernel", stale.to_str().unwrap()];
        with.extend_from_slice(args);
        testing::assert_clear_error(
            BIN,
            &with,
            &[("CUDA_VISIBLE_DEVICES", "")],
            &format!(
                "{} does not apply to the step's kernel step09_3xtf32/src/kernel.cu: hunk 2 expects line 347 \
                 to be `#pragma unroll 4`, and it is `#pragma unroll`",
                stale.display()
            ),
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
    testing::assert_clear_error(
        BIN,
        &["--kernel", solution, "--compile-only"],
        &[],
        "(it is a diff of exercises/split.cu): hunk 1 expects line",
    );
    let not_a_diff = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    let copy = std::env::temp_dir().join(format!("step09-not-a-diff-{}.diff", std::process::id()));
    std::fs::copy(not_a_diff, &copy).unwrap();
    let (code, err) = testing::run_program(BIN, &["--kernel", copy.to_str().unwrap(), "--compile-only"], &[]);
    std::fs::remove_file(&copy).unwrap();
    testing::assert_clear_outcome(&[], (code, err), "holds no hunk");
}

/// Inputs with the features that once cost this step FP32's accuracy, brought as `.npy` files.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_real_looking_inputs_from_npy_files_pass() {
    testing::assert_npy_inputs_pass(BIN);
}

//! `--every-path`: the step's cases each reach their path with the step's kernel, and a kernel
//! with one wrong line fails the case that exists for its path.

use common::testing;

const BIN: &str = env!("CARGO_BIN_EXE_step09_3xtf32");

#[test]
#[ignore = "needs NVRTC"]
fn nvrtc_every_path_reaches_each_declared_path() {
    testing::assert_every_path_reached(BIN, step09_3xtf32::EVERY_PATH);
}

/// The planted fault: a flush that never resets (acc kept after it is added to the total).
#[test]
#[ignore = "needs NVRTC"]
fn nvrtc_every_path_fails_a_planted_fault() {
    let source = include_str!("../../step09_3xtf32/src/kernel.cu");
    testing::assert_every_path_catches(
        BIN,
        source,
        (
            "                    total[i] += acc[i];\n                    acc[i] = 0.0f;\n",
            "                    total[i] += acc[i];\n",
        ),
        "a flush after 32 slices",
    );
}

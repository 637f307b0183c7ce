//! `--every-path`: the step's cases each reach their path with the step's kernel, and a kernel
//! with one wrong line fails the case that exists for its path.

use common::testing;

const BIN: &str = env!("CARGO_BIN_EXE_step12_persistent_clusters");

#[test]
#[ignore = "needs NVRTC"]
fn nvrtc_every_path_reaches_each_declared_path() {
    testing::assert_every_path_reached(BIN, step12_persistent_clusters::EVERY_PATH);
}

/// The planted fault: the adder of a cut tile keeping its own sums when it adds the pieces.
#[test]
#[ignore = "needs NVRTC"]
fn nvrtc_every_path_fails_a_planted_fault() {
    let source = include_str!("../../step12_persistent_clusters/src/kernel.cu");
    testing::assert_every_path_catches(
        BIN,
        source,
        ("                for (int i = 0; i < BM / 2; ++i) acc[i] = 0.0f;\n", ""),
        "cut tiles, boxed stores",
    );
}

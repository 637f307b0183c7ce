//! `--every-path`: the step's cases each reach their path with the step's kernel, and a kernel
//! with one wrong line fails the case that exists for its path.

use common::testing;

const BIN: &str = env!("CARGO_BIN_EXE_step10_any_shape");

#[test]
#[ignore = "needs NVRTC"]
fn nvrtc_every_path_reaches_each_declared_path() {
    testing::assert_every_path_reached(BIN, step10_any_shape::EVERY_PATH);
}

/// The planted fault: a Stream-K turn taken without waiting for the pieces before it.
#[test]
#[ignore = "needs NVRTC"]
fn nvrtc_every_path_fails_a_planted_fault() {
    let source = include_str!("../../step10_any_shape/src/kernel.cu");
    testing::assert_every_path_catches(
        BIN,
        source,
        ("            while (atomicAdd(&summed_to[p.shared], 0) != p.k_lo) {}\n", ""),
        "Stream-K, rows 1-3 shared",
    );
}

//! Bad inputs: each gets one clear sentence and a non-zero exit, never a panic.

use common::testing;

const BIN: &str = env!("CARGO_BIN_EXE_step06_prefetch");

#[test]
fn bad_inputs_are_refused_in_one_sentence() {
    testing::assert_common_bad_inputs_refused(BIN);
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_invalid_parameter_sets_are_refused() {
    for (params, says) in [
        (&["--param", "TM=3"][..], "whole number of warp regions"),
        (&["--param", "WN=64"][..], "exactly 32 thread tiles"),
        (&["--param", "BK=6"][..], "multiples of 4"),
        (&["--param", "BK=512", "--param", "BM=256", "--param", "BN=256"][..], "shared memory"),
        (&["--param", "WM=64", "--param", "WN=128", "--param", "TM=16", "--param", "TN=16"][..], "spills"),
    ] {
        let mut args = vec!["--size", "256"];
        args.extend_from_slice(params);
        testing::assert_clear_error(BIN, &args, &[], says);
    }
}

//! Step 03 on the PTX emulator: the one block right at the shapes it serves, and its shared
//! loads as the GPU counts them.

use common::Shape;
use common::testing::emulator;
use step03_single_block::STEP;

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_kernel_matches_the_reference() {
    emulator::assert_emulated_pass(&STEP, &[], &[(32, 32, 32), (7, 5, 3), (1, 1, 1), (20, 40, 33)]);
}

/// The chapter's count at 32×32×908, Nsight Compute's on an H100
/// (`docs/src/results/ncu-h100/step03_single_block.csv`): 32 warps × 908 steps × 2 loads =
/// 58 112. At this K every thread's row of A starts 16-byte aligned, but ptxas cannot prove it
/// (the row starts row·K floats in, and K is an argument), so it joins none of the four loads of
/// A an unrolled trip makes, and neither does the emulator: it decides as ptxas does, not from
/// the addresses of the run.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_shared_loads_are_the_gpus() {
    let (_, verdict, t) = emulator::emulate_counted(&STEP, &[], Shape { m: 32, n: 32, k: 908 }).unwrap();
    assert!(verdict.passed());
    assert_eq!(t.shared_load_requests, 58_112, "shared load instructions at 32×32×908");
}

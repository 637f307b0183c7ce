//! Step 05's kernel with its thread-tile loops left rolled (the held-out set's, twelve times the
//! instructions of step 05's) predicted at 4096³ within a minute: a scaled run emulates it at two
//! depths of K as shallow as its work asks. A file of its own, so that no other test shares the
//! machine while it is timed.

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_rolled_loops_at_4096_are_predicted_within_a_minute() {
    let bin = env!("CARGO_BIN_EXE_step05_thread_tile");
    let kernel =
        concat!(env!("CARGO_MANIFEST_DIR"), "/../ptx_emulator/heldout/kernels/step05_rolled_loops.cu");
    let args = ["--size", "4096", "--gpu", "H200", "--kernel", kernel];
    common::testing::emulator::assert_predicts_within_a_minute(bin, &args, None);
}

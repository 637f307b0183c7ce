//! Lab 10 predicted at 8192³ within a minute: its Stream-K layout's sharing blocks wait for one
//! another, so a scaled run emulates the launch without sharing, says so, and labels its
//! prediction. A file of its own, so that no other test shares the machine while it is timed.

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_lab_10_at_8192_is_predicted_within_a_minute() {
    let bin = env!("CARGO_BIN_EXE_step10_any_shape");
    let label = Some("the launch without Stream-K's sharing");
    common::testing::emulator::assert_predicts_within_a_minute(
        bin,
        &["--size", "8192", "--gpu", "H200"],
        label,
    );
}

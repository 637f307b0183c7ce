//! Lab 12 predicted at 4096³ within a minute: a scaled run emulates one cluster of each share of
//! the persistent schedule (whole units, the first clusters one more) at two shorter depths of K.
//! A file of its own, so that no other test shares the machine while it is timed.

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_lab_12_at_4096_is_predicted_within_a_minute() {
    let bin = env!("CARGO_BIN_EXE_step12_persistent_clusters");
    common::testing::emulator::assert_predicts_within_a_minute(
        bin,
        &["--size", "4096", "--gpu", "H200"],
        None,
    );
}

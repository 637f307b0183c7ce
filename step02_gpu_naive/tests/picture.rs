//! The picture of one warp's load (`--emulate --picture-access`) on step 02's inner loop: with
//! threadIdx.x along a row of C a warp reads B's row in 4 sectors of one line and A's element as
//! a broadcast; with it down a column, A's 32 rows take 32 sectors in 32 lines. A line without a
//! load, and an argument that names no line, are refused with a sentence.

use common::testing::access_picture::{PictureKind, line_of, picture, picture_counted};
use common::testing::{self, assert_clear_error};
use step02_gpu_naive::STEP;

const BIN: &str = env!("CARGO_BIN_EXE_step02_gpu_naive");

fn inner_loop() -> String {
    format!(
        "kernel.cu:{}",
        line_of(STEP.source, "sum += A[(offset_t)row * K + k] * B[(offset_t)k * N + col];")
    )
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_a_coalesced_warp_reads_four_sectors_of_one_line() {
    let (accesses, traffic) = picture_counted(&STEP, &[], (64, 64, 64), &inner_loop()).expect("a picture");
    assert_eq!(accesses.len(), 2, "B's row and A's element: {accesses:?}");
    // Every warp's loads are these two, over and over: the picture's sectors a request are the
    // run's.
    let drawn: u64 = accesses.iter().map(|a| a.sectors).sum();
    assert_eq!(drawn * traffic.global_load_requests, 2 * traffic.global_load_sectors);
    let row = accesses.iter().find(|a| a.sectors == 4).expect("B's row");
    assert_eq!((row.kind, row.requests, row.lines, row.lanes.len()), (PictureKind::Global, 1, 1, 32));
    assert_eq!(row.sector_list().len(), 4);
    let broadcast = accesses.iter().find(|a| a.sectors == 1).expect("A's element, one for the warp");
    assert!(broadcast.lanes.iter().all(|l| l.1 == broadcast.lanes[0].1));
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_an_uncoalesced_warp_reads_thirty_two_sectors_in_thirty_two_lines() {
    let accesses = picture(&STEP, &[("COALESCED", 0)], (64, 64, 64), &inner_loop()).expect("a picture");
    let column = accesses.iter().find(|a| a.sectors > 1).expect("A's column");
    assert_eq!((column.sectors, column.lines, column.sector_list().len()), (32, 32, 32));
    assert_eq!(column.line_list().len(), 32);
    // Another warp of another block draws the same pattern from its own rows.
    let other =
        picture(&STEP, &[("COALESCED", 0)], (64, 64, 64), &format!("{}:block=1,1,0:warp=3", inner_loop()))
            .expect("a picture");
    assert!(other.iter().any(|a| a.block == [1, 1, 0] && a.warp == 3 && a.sectors == 32));
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_a_line_without_a_load_and_a_warp_that_never_reaches_it_are_named() {
    let guard = line_of(STEP.source, "if (row < M && col < N) {");
    let refused =
        picture(&STEP, &[], (64, 64, 64), &format!("kernel.cu:{guard}")).expect_err("no load there");
    assert!(
        refused.to_string().starts_with(&format!("kernel.cu:{guard} has no global or shared load or store")),
        "{refused}"
    );
    let spec = format!("{}:block=5,5,0", inner_loop());
    assert_clear_error(BIN, &["--emulate", "--size", "64", "--picture-access", &spec], &[], "never executed");
    assert_clear_error(
        BIN,
        &["--emulate", "--size", "64", "--picture-access", &format!("kernel.cu:{guard}")],
        &[],
        "has no global or shared load or store for --picture-access to draw",
    );
}

#[test]
fn a_picture_argument_that_names_no_line_is_refused() {
    for bad in ["kernel.cu", "kernel.cu:line", "kernel.cu:35:lane=3"] {
        let args = ["--emulate", "--size", "64", "--picture-access", bad];
        assert_clear_error(BIN, &args, &[], "--picture-access wants FILE.cu:LINE");
    }
    let to = ["--emulate", "--size", "64", "--picture-to", "x.svg"];
    testing::assert_clear_error(BIN, &to, &[], "no --picture-access was given");
}

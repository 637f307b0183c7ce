//! The picture of one warp's fragment loads (`--emulate --picture-access`) in step 07: ldmatrix
//! takes 32 row addresses of 16 bytes, four 8×8 matrices in four wavefronts with no bank
//! conflict thanks to the padded rows of As; B's pairs are 8-byte loads in two.

use common::testing::access_picture::{PictureKind, line_of, picture};
use common::testing::emulator::planted;
use step07_tf32_mma::STEP;

fn ldmatrix(source: &str) -> String {
    format!("kernel.cu:{}", line_of(source, ": \"r\"(address));"))
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_ldmatrix_reads_four_matrices_without_a_conflict() {
    let accesses = picture(&STEP, &[], (128, 128, 128), &ldmatrix(STEP.source)).expect("a picture");
    let a = &accesses[0];
    assert_eq!((a.kind, a.lanes.len(), a.bytes, a.wavefronts), (PictureKind::Matrix, 32, 16, 4));
    assert_eq!(a.ways(), 4, "128 words, four to a bank: {a:?}");
    let b =
        format!("kernel.cu:{}", line_of(STEP.source, "float2 lo = *reinterpret_cast<const float2*>(row);"));
    let b = picture(&STEP, &[], (128, 128, 128), &b).expect("a picture");
    assert_eq!((b[0].kind, b[0].bytes, b[0].wavefronts, b[0].ways()), (PictureKind::Shared, 8, 2, 2));
}

/// Rows of As without their padding put the eight rows of each matrix in the same banks.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_unpadded_rows_make_ldmatrix_conflict() {
    let src = STEP.source;
    let pad = src.lines().find(|l| l.starts_with("constexpr int AS")).expect("AS's definition");
    let unpadded = planted(&STEP, pad, "constexpr int AS = BK;");
    let accesses = picture(&unpadded, &[], (128, 128, 128), &ldmatrix(src)).expect("a picture");
    assert!(accesses[0].ways() > 4, "{:?}", accesses[0]);
}

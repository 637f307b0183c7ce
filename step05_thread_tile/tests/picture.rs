//! The picture of one warp's 16-byte shared load (`--emulate --picture-access`) of B's tile in
//! step 05: the banks serve a quarter of the warp a pass, and each quarter's 8 lanes read 4
//! distinct 16-byte pieces (lanes 4 apart read the same), so 4 passes of one wavefront each.

use common::testing::access_picture::{PictureKind, line_of, picture};
use step05_thread_tile::STEP;

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_bs_load_is_served_a_quarter_warp_a_pass() {
    let spec = format!("kernel.cu:{}", line_of(STEP.source, "(&Bs[k][tile_col(j, c0)])"));
    let accesses = picture(&STEP, &[], (256, 256, 256), &spec).expect("a picture");
    let a = accesses.iter().find(|a| a.bytes == 16).expect("B's 16-byte load");
    assert_eq!((a.kind, a.named.matrix.as_str()), (PictureKind::Shared, "B"), "{:?}", a.named);
    assert_eq!(a.named.variable, "Bs[k][tile_col(j, c0)]");
    let passes: Vec<(u32, u32, u64)> = a.passes().iter().map(|p| (p.from, p.to, p.wavefronts)).collect();
    assert_eq!(passes, [(0, 8, 1), (8, 16, 1), (16, 24, 1), (24, 32, 1)]);
    assert_eq!(a.wavefronts, 4);
    // Lanes 4 apart read the same four columns of B's row k.
    let cols: Vec<i64> = a.places.iter().map(|p| p.element.expect("B's element").1).collect();
    assert!(cols.iter().enumerate().all(|(l, c)| *c == cols[l % 4]), "{cols:?}");
}

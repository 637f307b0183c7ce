//! The picture of one consumer warp's fragment read (`--emulate --picture-access`) in step 08:
//! the B pairs it reads from the swizzled buffer are 8-byte shared loads in two wavefronts, no
//! bank conflict; read without the swizzle, the same lanes pile into a few banks. (A reaches the
//! tensor cores through wgmma's descriptor, with no load of the warp's own to draw.)

use common::testing::access_picture::{PictureKind, line_of, picture, picture_unsanitized};
use common::testing::emulator::planted;
use step08_wgmma_tma::STEP;

/// The line NVRTC gives the first pair's load (the first use of what it loaded), of warp 4: the
/// first consumer warp (warps 0–3 are the producer's warpgroup).
fn pair_read() -> String {
    format!("kernel.cu:{}:warp=4", line_of(STEP.source, "frag[k8][0] = __float_as_uint(lo.x);"))
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_the_swizzled_pairs_have_no_conflict() {
    let accesses = picture(&STEP, &[], (256, 256, 64), &pair_read()).expect("a picture");
    let a = &accesses[0];
    assert_eq!((a.kind, a.warp, a.lanes.len(), a.bytes), (PictureKind::Shared, 4, 32, 8));
    assert_eq!((a.wavefronts, a.ways()), (2, 2), "{a:?}");
    // The box of B the copy engine wrote: each lane's element, and the column the swizzle moved it to.
    assert_eq!(a.named.matrix, "B", "{:?}", a.named);
    assert!(a.named.memory.contains("with the 128-byte swizzle"), "{}", a.named.memory);
    let moved = a.places.iter().filter(|p| p.array.map(|s| s.1) != p.unswizzled).count();
    assert!(moved > 0 && a.places.iter().all(|p| p.element.is_some() && p.unswizzled.is_some()), "{a:?}");
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_pairs_read_without_the_swizzle_conflict() {
    let plain = planted(&STEP, "4 * ((col / 4) ^ (row % 8))", "4 * (col / 4)");
    // The sanitizer stops this edit at its first fragment holding the wrong element of B
    // (tests/emulator_pipeline.rs names it); pictured without it, the same edit's reads conflict.
    let accesses = picture_unsanitized(&plain, &[], (256, 256, 64), &pair_read()).expect("a picture");
    assert!(accesses[0].ways() > 2 && accesses[0].wavefronts > 2, "{:?}", accesses[0]);
}

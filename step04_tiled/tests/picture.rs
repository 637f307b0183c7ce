//! The picture of one warp's shared load (`--emulate --picture-access`) on step 04's inner loop
//! with B transposed: unpadded, the warp's column of Bs lies in one bank, a 32-way conflict in 32
//! wavefronts; padded by one float, the lanes spread over the 32 banks.

use common::testing::access_picture::{PictureKind, line_of, picture, picture_counted};
use step04_tiled::STEP;

fn column_read() -> String {
    format!("kernel.cu:{}", line_of(STEP.source, "sum += As[ty][k] * Bs[tx][k];"))
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_an_unpadded_column_is_a_thirty_two_way_conflict() {
    let (accesses, traffic) =
        picture_counted(&STEP, &[("BT", 1), ("PAD", 0)], (64, 64, 64), &column_read()).expect("a picture");
    // The inner loop's loads are the kernel's shared loads: the same wavefronts a request.
    let drawn: u64 = accesses.iter().map(|a| a.wavefronts).sum();
    let (requests, wavefronts) = (traffic.shared_load_requests, traffic.shared_load_wavefronts);
    assert_eq!(drawn * requests, accesses.len() as u64 * wavefronts, "{accesses:?}");
    let column = accesses.iter().find(|a| a.ways() > 1).expect("the column of Bs");
    assert_eq!(
        (column.kind, column.lanes.len(), column.ways(), column.wavefronts),
        (PictureKind::Shared, 32, 32, 32)
    );
    // Every lane's first word in the same bank.
    let banks: Vec<u32> = column.lanes.iter().map(|&(_, off)| column.banks_of(off)[0]).collect();
    assert!(banks.iter().all(|&b| b == banks[0]), "{banks:?}");
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_a_padded_column_has_no_conflict() {
    let accesses = picture(&STEP, &[("BT", 1), ("PAD", 1)], (64, 64, 64), &column_read()).expect("a picture");
    assert!(!accesses.is_empty());
    for a in &accesses {
        let words: usize = a.bank_words().iter().map(Vec::len).sum();
        assert_eq!(a.ways(), words.div_ceil(32), "{a:?}");
    }
    let column = accesses.iter().find(|a| a.bytes == 4).expect("the column of Bs, a float a lane");
    assert_eq!((column.ways(), column.wavefronts), (1, 1));
    let mut banks: Vec<u32> = column.lanes.iter().map(|&(_, off)| column.banks_of(off)[0]).collect();
    banks.sort_unstable();
    banks.dedup();
    assert_eq!(banks.len(), 32, "each lane its own bank");
}

/// Each panel names its matrix, the shared array and the line's expression, and places each
/// lane in both: the lane of thread (tx, ty) reads row tx of `Bs`, which holds row tx of Bᵀ (a
/// column of B), with TILE = 16.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_each_panel_names_its_matrix_and_places_its_lanes() {
    let overrides = [("BT", 1), ("PAD", 1), ("TILE", 16)];
    let accesses = picture(&STEP, &overrides, (64, 64, 64), &column_read()).expect("a picture");
    let names: Vec<(&str, &str, &str)> = accesses
        .iter()
        .map(|a| (a.named.matrix.as_str(), a.named.array.as_str(), a.named.variable.as_str()))
        .collect();
    assert!(names.contains(&("A", "As", "As[ty][k]")), "{names:?}");
    assert!(names.contains(&("Bᵀ", "Bs", "Bs[tx][k]")), "{names:?}");
    let column = accesses.iter().find(|a| a.named.array == "Bs").expect("the column of Bs");
    assert!(column.named.memory.starts_with("the shared array `Bs[16][17]`"), "{}", column.named.memory);
    for (&(lane, _), place) in column.lanes.iter().zip(&column.places) {
        let (row, col) = place.array.expect("each lane's place in Bs");
        let (b_row, _) = place.element.expect("each lane's element of Bᵀ");
        let tx = i64::from(lane % 16);
        assert_eq!((row, b_row), (tx, tx), "lane {lane}, column {col}");
    }
}

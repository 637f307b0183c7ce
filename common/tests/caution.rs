//! The verdict's caution line: where a step's own accuracy depends on the data, it says so. For
//! step 11 it is a bound on what its scaling to integers may lose, set against FP32's
//! per-element bound; for step 09, the subnormal and non-finite inputs its split does not carry.

use common::matrix::Family;
use common::testing::{DEEP, SHAPES};
use common::verify::{Verdict, verify};
use common::{Inputs, Precision, Shape, reference, residues};

/// The H100 run of every family × every GPU step at the class and deep shapes.
const FAMILIES_RECORD: &str =
    include_str!("../../docs/src/results/runs/2026-11-23-nvidia-h100-80gb-hbm3-families-2.log");

/// The verdict of step 11's claim on the inputs the families test draws (seed 500 + the shape's
/// place in the list), with C all zero: only its caution is looked at.
fn verdict(family: Family, (m, n, k): (usize, usize, usize)) -> Verdict {
    let shapes: Vec<_> = SHAPES.iter().chain(DEEP).copied().collect();
    let place = shapes.iter().position(|&s| s == (m, n, k)).expect("a shape of the families test");
    let x = Inputs::family(Shape::new(m, n, k).unwrap(), 500 + place as u64, family);
    verify(x.shape, &vec![0.0; m * n], &reference::cpu(&x), Precision::Int8Crt)
}

fn caution(family: Family, shape: (usize, usize, usize)) -> Option<String> {
    verdict(family, shape).caution(shape.2, Some(residues::room(7, shape.2)))
}

/// Every shape where step 11 failed per element on the H100 gets the caution (the larger shapes
/// left to the GPU: their references take long on the CPU of a debug build).
#[test]
fn step_11s_caution_speaks_wherever_it_failed_on_the_h100() {
    let mut checked = 0;
    for line in FAMILIES_RECORD.lines().filter(|l| l.starts_with("step11_int8_crt, ")) {
        let mut parts = line.splitn(3, ", ");
        let (_, family, rest) = (parts.next(), parts.next().unwrap(), parts.next().unwrap());
        let shape: Vec<usize> =
            rest.split(':').next().unwrap().split('×').map(|d| d.parse().unwrap()).collect();
        let (m, n, k) = (shape[0], shape[1], shape[2]);
        if m * n * k > 1 << 24 {
            continue;
        }
        let family = Family::parse(family).unwrap();
        let why = caution(family, (m, n, k));
        assert!(why.is_some(), "{family} {m}×{n}×{k}: step 11 failed there, and no caution");
        checked += 1;
    }
    assert!(checked >= 20, "only {checked} of the record's failures checked");
}

/// On the families step 11 carries, the line stays silent at every class shape but one: at
/// 17×1000×3 a few small terms can meet large norms, and the bound speaks there for uniform and
/// positive inputs (the H100 failed one element of `normal` inputs at that shape).
#[test]
fn step_11s_caution_is_silent_where_the_rows_are_not_spread_out() {
    for family in [Family::Uniform, Family::Positive, Family::Gram, Family::Integers] {
        for &shape in SHAPES.iter().filter(|s| s.0 * s.1 * s.2 <= 1 << 24) {
            let why = caution(family, shape);
            if shape == (17, 1000, 3) && matches!(family, Family::Uniform | Family::Positive) {
                assert!(why.is_some(), "{family} {shape:?}");
            } else {
                assert_eq!(why, None, "{family} {shape:?}");
            }
        }
    }
    // With the moduli not known (a kernel without them), no caution for step 11.
    let v = verdict(Family::IdentityNoise(0.001), (64, 64, 64));
    assert!(v.caution(64, Some(residues::room(7, 64))).is_some() && v.caution(64, None).is_none());
}

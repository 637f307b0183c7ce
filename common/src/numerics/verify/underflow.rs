//! The check on products that fall among FP32's subnormals: a correct product passes both
//! limits, and the faults the check exists for still fail there.

use super::*;
use crate::matrix::{Family, Inputs, Shape};
use crate::reference::{self, tf32};

/// C summed one term after another in f32, fused or not, after passing each operand through
/// `round`, leaving out term `skip` of every dot product.
fn product(x: &Inputs, fma: bool, round: fn(f32) -> f32, skip: Option<usize>) -> Vec<f32> {
    let Shape { m, n, k } = x.shape;
    let mut c = vec![0.0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut acc = 0.0f32;
            for p in (0..k).filter(|&p| Some(p) != skip) {
                let (a, b) = (round(x.a.at(i, p)), round(x.b.at(p, j)));
                acc = if fma { a.mul_add(b, acc) } else { acc + a * b };
            }
            c[i * n + j] = acc;
        }
    }
    c
}

/// Shapes from K = 256, where the tiny family's C becomes normal, to K = 4096.
const SHAPES: &[(usize, usize, usize)] = &[(24, 24, 256), (9, 33, 1000), (6, 5, 4096)];

/// Uniform in [−1, 1] times 2⁻⁶⁶: products among the subnormals, and C too, its sums cancelling.
fn tiny_mean_zero(shape: Shape, seed: u64) -> Inputs {
    let mut x = Inputs::random(shape, seed);
    let scale = 2f32.powi(-66);
    x.a.data.iter_mut().chain(x.b.data.iter_mut()).for_each(|v| *v *= scale);
    x
}

fn cases() -> Vec<Inputs> {
    SHAPES
        .iter()
        .flat_map(|&(m, n, k)| {
            let s = Shape::new(m, n, k).unwrap();
            [Inputs::family(s, 3, Family::Tiny(66)), tiny_mean_zero(s, 4)]
        })
        .collect()
}

/// Every product below 2⁻¹²⁶, and the tiny family's C above it: the inputs are what they claim.
#[test]
fn the_tiny_familys_products_are_subnormal_and_its_c_normal() {
    let x = Inputs::family(Shape::new(8, 8, 512).unwrap(), 1, Family::Tiny(66));
    let r = reference::cpu(&x);
    assert!(
        x.a.data.iter().all(|&a| x.b.data.iter().all(|&b| f64::from(a) * f64::from(b) < 2f64.powi(-126)))
    );
    assert!(r.c.iter().all(|&c| c > 2f64.powi(-126)), "C is not normal");
}

/// Products in the subnormal range, summed fused or not, pass both limits as FP32 with the
/// room a correct kernel needs, at every shape; without the underflow term the normwise limit
/// would fail them.
#[test]
fn products_in_the_subnormal_range_pass_as_fp32() {
    for x in cases() {
        let r = reference::cpu(&x);
        for fma in [true, false] {
            let c = product(&x, fma, |v| v, None);
            let v = verify(x.shape, &c, &r, Precision::Fp32);
            assert!(
                v.passed() && v.normwise.ratio() <= ROOM,
                "{} {} fma {fma}: {}",
                x.source,
                x.shape,
                v.summary()
            );
        }
    }
}

/// The faults the check exists for still fail in the subnormal range: the last term dropped, or
/// the operands rounded to TF32.
#[test]
fn a_dropped_term_or_tf32_operands_fail_among_the_subnormals() {
    for x in cases() {
        let r = reference::cpu(&x);
        let k = x.shape.k;
        for (fault, c) in [
            ("last term dropped", product(&x, true, |v| v, Some(k - 1))),
            ("first term dropped", product(&x, true, |v| v, Some(0))),
            ("TF32 operands", product(&x, true, tf32, None)),
        ] {
            let v = verify(x.shape, &c, &r, Precision::Fp32);
            assert!(!v.passed(), "{} {} {fault}: {}", x.source, x.shape, v.summary());
        }
    }
}

/// The underflow term is what the per-element bound allows, counted normwise: (2K + 2)
/// roundings of mean square η²/3 an element, and nothing where the data holds no element.
#[test]
fn the_underflow_term_counts_the_per_element_bounds_roundings() {
    let eta = 2f64.powi(-150);
    let got = underflow_sq(Sums::Nearest, 1, 100, 6.0);
    assert!((got / (6.0 * 202.0 * eta * eta / 3.0) - 1.0).abs() < 1e-12, "{got:e}");
    assert!(underflow_sq(Sums::Nearest, 3, 100, 6.0) > 2.9 * got);
    assert!(underflow_sq(Sums::TensorCores, 1, 100, 6.0) > got);
    assert_eq!(underflow_sq(Sums::Nearest, 1, 100, 0.0), 0.0);
    assert!((underflow(100) / (202.0 * eta) - 1.0).abs() < 1e-12);
}

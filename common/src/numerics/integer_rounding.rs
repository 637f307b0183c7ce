//! What rounding step 11's operands to integers costs: the scale its rows and columns are
//! rounded at, and the error that rounding adds to C in expectation. The reference measures it
//! on the data ([`crate::reference::Growth`]); the error model adds it to step 11's limit.

use crate::matrix::{Inputs, Shape};

/// P, the product of the seven moduli step 11 takes at least (256, 255, 253, 251, 247, 241 and
/// 239): its rows and columns are scaled to integers whose length stays below √(P/2).
pub const INT8_CRT_PRODUCT: u64 = 256 * 255 * 253 * 251 * 247 * 241 * 239;

/// The exponent step 11 scales a vector of K entries with Σx² = `norm2` by at seven moduli:
/// the largest e with 2^e·‖x‖ + √K ≤ √(P/2)·(1 − 2⁻²⁰); 0 for a vector of zeros.
pub fn integer_exponent(norm2: f64, k: usize) -> i32 {
    if norm2 == 0.0 {
        return 0;
    }
    let room = (INT8_CRT_PRODUCT as f64 / 2.0).sqrt() * (1.0 - 1.0 / 1_048_576.0) - (k as f64).sqrt();
    let x = room / norm2.sqrt();
    ((x.to_bits() >> 52) & 0x7ff) as i32 - 1023
}

/// The expected ‖ΔC‖² of rounding every row of A and column of B to integers at step 11's
/// scale (seven moduli; more only shrink it), each entry up or down with a chance that makes its
/// error's mean zero: an error below one unit, 2^−e of its row, whose variance f·(1 − f) for a
/// fraction f is at most ¼. Independent from entry to entry, the errors add in squares:
///
/// E‖ΔC‖² ≤ ¼·(Σᵢ 4^−eᵢ·‖B‖² + ‖A‖²·Σⱼ 4^−fⱼ) + K/16·Σᵢ 4^−eᵢ·Σⱼ 4^−fⱼ
///
/// (the last term the product of the two errors). O(MK + KN). Vectors of zeros, and those with
/// NaN or infinity (the FP32 path), round nothing.
pub fn integer_rounding_sq(inputs: &Inputs) -> f64 {
    let Shape { m, n, k } = inputs.shape;
    let (mut a_sq, mut b_sq, mut units_a, mut units_b) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
    let mut col_sq = vec![0.0f64; n];
    for i in 0..m {
        let row = &inputs.a.data[i * k..(i + 1) * k];
        let norm2: f64 = row.iter().map(|&v| f64::from(v) * f64::from(v)).sum();
        if norm2 > 0.0 && norm2.is_finite() {
            a_sq += norm2;
            units_a += 4f64.powi(-integer_exponent(norm2, k));
        }
    }
    for row in inputs.b.data.chunks(n.max(1)) {
        for (s, &v) in col_sq.iter_mut().zip(row) {
            *s += f64::from(v) * f64::from(v);
        }
    }
    for &norm2 in &col_sq {
        if norm2 > 0.0 && norm2.is_finite() {
            b_sq += norm2;
            units_b += 4f64.powi(-integer_exponent(norm2, k));
        }
    }
    0.25 * (units_a * b_sq + a_sq * units_b) + k as f64 / 16.0 * units_a * units_b
}

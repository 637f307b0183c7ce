//! The f64 reference result that every kernel is checked against.
//!
//! It is computed by implementations that share no code with the kernels: the `matrixmultiply`
//! crate's DGEMM on the CPU (threaded over row bands here), or cuBLAS DGEMM on the device
//! (see [`crate::cublas`]). Besides C = A·B it computes |A|·|B|, the magnitude that the
//! per-element bound scales with, and S² = Σ_ij Σ_p (a_ip·b_pj)², the one the normwise limit
//! scales with (see [`crate::verify`]).

use std::sync::Mutex;

use crate::matrix::{Inputs, Shape};
use crate::progress;

/// C = A·B and |A|·|B|, both accumulated in f64 from the f32 inputs.
#[derive(Clone, Debug)]
pub struct Reference {
    pub c: Vec<f64>,
    pub abs: Vec<f64>,
    /// Σ_ij Σ_p (a_ip·b_pj)², the sum of every squared term of every dot product.
    pub terms_sq: f64,
    /// The inputs were small integers: C must be matched exactly.
    pub exact: bool,
    /// Which implementation produced it, for the report.
    pub source: &'static str,
}

/// Σ_ij Σ_p (a_ip·b_pj)² = Σ_p ‖column p of A‖²·‖row p of B‖², in O(MK + KN).
pub fn terms_sq(inputs: &Inputs) -> f64 {
    let Shape { m: _, n, k } = inputs.shape;
    let mut col_a = vec![0.0f64; k];
    for row in inputs.a.data.chunks(k) {
        for (s, &v) in col_a.iter_mut().zip(row) {
            *s += f64::from(v) * f64::from(v);
        }
    }
    inputs
        .b
        .data
        .chunks(n)
        .zip(&col_a)
        .map(|(row, ca)| ca * row.iter().map(|&v| f64::from(v).powi(2)).sum::<f64>())
        .sum()
}

/// Rows of C each worker computes per call: small enough for a smooth progress bar,
/// large enough to keep DGEMM efficient.
const BAND_ROWS: usize = 64;

/// The reference on the CPU, on every core.
pub fn cpu(inputs: &Inputs) -> Reference {
    let Shape { m, n, k } = inputs.shape;
    let a: Vec<f64> = inputs.a.data.iter().map(|&v| f64::from(v)).collect();
    let b: Vec<f64> = inputs.b.data.iter().map(|&v| f64::from(v)).collect();
    let a_abs: Vec<f64> = a.iter().map(|v| v.abs()).collect();
    let b_abs: Vec<f64> = b.iter().map(|v| v.abs()).collect();
    let mut c = vec![0.0f64; m * n];
    let mut abs = vec![0.0f64; m * n];

    let bands = m.div_ceil(BAND_ROWS);
    let bar = progress::bar("reference", bands as u64, 2.0 * inputs.shape.flops());
    // Each band of C is written by exactly one worker: hand out disjoint row ranges.
    let c_bands: Vec<(&mut [f64], &mut [f64])> =
        c.chunks_mut(BAND_ROWS * n).zip(abs.chunks_mut(BAND_ROWS * n)).collect();
    let c_bands = Mutex::new(c_bands.into_iter().enumerate().collect::<Vec<_>>());
    let workers = std::thread::available_parallelism().map_or(1, |p| p.get());
    std::thread::scope(|scope| {
        for _ in 0..workers.min(bands) {
            scope.spawn(|| {
                while let Some((band, (c_band, abs_band))) = c_bands.lock().ok().and_then(|mut v| v.pop()) {
                    let row0 = band * BAND_ROWS;
                    let rows = c_band.len() / n;
                    dgemm_rows(rows, n, k, &a[row0 * k..], &b, c_band);
                    dgemm_rows(rows, n, k, &a_abs[row0 * k..], &b_abs, abs_band);
                    bar.inc(1);
                }
            });
        }
    });
    bar.finish_and_clear();
    Reference { c, abs, terms_sq: terms_sq(inputs), exact: inputs.exact, source: "CPU DGEMM" }
}

/// `c[..rows×n] = a[..rows×k] · b[k×n]`, all row-major.
fn dgemm_rows(rows: usize, n: usize, k: usize, a: &[f64], b: &[f64], c: &mut [f64]) {
    assert!(a.len() >= rows * k && b.len() >= k * n && c.len() >= rows * n);
    // SAFETY: the assertion above keeps every access of the row-major strides in bounds.
    unsafe {
        matrixmultiply::dgemm(
            rows,
            k,
            n,
            1.0,
            a.as_ptr(),
            k as isize,
            1,
            b.as_ptr(),
            n as isize,
            1,
            0.0,
            c.as_mut_ptr(),
            n as isize,
            1,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plain f64 triple loop, the definition of the product.
    fn by_definition(inputs: &Inputs) -> Vec<f64> {
        let Shape { m, n, k } = inputs.shape;
        let mut c = vec![0.0; m * n];
        for i in 0..m {
            for j in 0..n {
                c[i * n + j] =
                    (0..k).map(|p| f64::from(inputs.a.at(i, p)) * f64::from(inputs.b.at(p, j))).sum();
            }
        }
        c
    }

    #[test]
    fn cpu_reference_matches_the_definition_across_bands() {
        for (m, n, k) in [(1, 1, 1), (7, 3, 5), (130, 33, 17), (65, 1, 129)] {
            let inputs = Inputs::random(Shape::new(m, n, k).unwrap(), 3);
            let r = cpu(&inputs);
            let want = by_definition(&inputs);
            for (got, want) in r.c.iter().zip(&want) {
                assert!((got - want).abs() <= 1e-12 * (1.0 + want.abs()), "{got} vs {want}");
            }
            for (i, abs) in r.abs.iter().enumerate() {
                assert!(*abs >= r.c[i].abs() - 1e-12);
            }
            let squares: f64 = (0..m * n)
                .map(|e| {
                    let (i, j) = (e / n, e % n);
                    (0..k)
                        .map(|p| (f64::from(inputs.a.at(i, p)) * f64::from(inputs.b.at(p, j))).powi(2))
                        .sum::<f64>()
                })
                .sum();
            assert!((r.terms_sq - squares).abs() <= 1e-12 * squares, "{} vs {squares}", r.terms_sq);
        }
    }
}

//! Checking a kernel's C against the f64 reference, element by element.
//!
//! # The bound
//!
//! A dot product of length K summed in f32 (in any order, with or without fused multiply-adds)
//! satisfies the classical forward error bound
//!
//! ```text
//! |ĉ_ij − c_ij| ≤ γ_K · (|A|·|B|)_ij,    γ_K = K·u / (1 − K·u),   u = 2⁻²⁴
//! ```
//!
//! where u is the unit roundoff of f32. The bound depends on K and on the magnitudes of the terms,
//! not on |c_ij|: when terms cancel, c_ij can be tiny while its rounding error is not, so a relative
//! tolerance on c_ij would reject correct kernels, and a fixed absolute one would either reject
//! large K or wave through real bugs at small K. The reference itself carries the same bound with
//! the f64 unit roundoff, which is added so the check is rigorous. Every correct f32 kernel passes;
//! a wrong index, a missed tile or an unwritten element lands far outside it.
//!
//! NaN and infinity always fail (`approx`'s comparison is false for them), which is why the output
//! is filled with NaN before the verified launch: an element no thread wrote cannot pass.

use approx::AbsDiffEq;

use crate::matrix::Shape;
use crate::reference::Reference;

/// Unit roundoff of f32.
pub const U32: f64 = f32::EPSILON as f64 / 2.0;
/// Unit roundoff of f64.
pub const U64: f64 = f64::EPSILON / 2.0;

/// γ_K for unit roundoff `u`; infinite once K·u reaches 1 (no bound exists).
pub fn gamma(k: usize, u: f64) -> f64 {
    let ku = k as f64 * u;
    if ku < 1.0 { ku / (1.0 - ku) } else { f64::INFINITY }
}

/// The element that came closest to, or went furthest past, its bound.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Worst {
    pub row: usize,
    pub col: usize,
    pub got: f32,
    pub want: f64,
    pub bound: f64,
}

impl Worst {
    /// |error| / bound: at most 1 for a passing element, infinite for NaN or infinity.
    pub fn ratio(&self) -> f64 {
        ratio(f64::from(self.got), self.want, self.bound)
    }
}

fn ratio(got: f64, want: f64, bound: f64) -> f64 {
    let err = (got - want).abs();
    if err.is_nan() { f64::INFINITY } else { err / bound.max(f64::MIN_POSITIVE) }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Verdict {
    pub checked: usize,
    pub failed: usize,
    pub worst: Worst,
    /// ‖C − C_ref‖_F / ‖C_ref‖_F, the usual single-number summary.
    pub rel_frobenius: f64,
    pub source: &'static str,
}

impl Verdict {
    pub fn passed(&self) -> bool {
        self.failed == 0
    }
}

/// Compares `got` (row-major M×N) with the reference; every element is checked.
pub fn verify(shape: Shape, got: &[f32], reference: &Reference) -> Verdict {
    assert_eq!(got.len(), shape.m * shape.n, "C has the wrong number of elements");
    let scale = gamma(shape.k, U32) + gamma(shape.k, U64);
    let mut failed = 0;
    let mut worst = None::<(f64, usize)>;
    let (mut diff2, mut ref2) = (0.0f64, 0.0f64);
    for (i, (&g, (&want, &abs))) in got.iter().zip(reference.c.iter().zip(&reference.abs)).enumerate() {
        let bound = scale * abs;
        let g64 = f64::from(g);
        if !g64.abs_diff_eq(&want, bound) {
            failed += 1;
        }
        let r = ratio(g64, want, bound);
        if worst.is_none_or(|(w, _)| r > w) {
            worst = Some((r, i));
        }
        let err = (g64 - want).abs();
        diff2 += if err.is_finite() { err * err } else { f64::INFINITY };
        ref2 += want * want;
    }
    let i = worst.map_or(0, |(_, i)| i);
    Verdict {
        checked: got.len(),
        failed,
        worst: Worst {
            row: i / shape.n,
            col: i % shape.n,
            got: got[i],
            want: reference.c[i],
            bound: scale * reference.abs[i],
        },
        rel_frobenius: if ref2 > 0.0 { (diff2 / ref2).sqrt() } else { diff2.sqrt() },
        source: reference.source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::Inputs;
    use crate::reference;

    /// C computed the way a GPU kernel does: f32 accumulation with fused multiply-adds.
    fn fp32_product(inputs: &Inputs) -> Vec<f32> {
        let Shape { m, n, k } = inputs.shape;
        let mut c = vec![0.0f32; m * n];
        for i in 0..m {
            for j in 0..n {
                let mut acc = 0.0f32;
                for p in 0..k {
                    acc = inputs.a.at(i, p).mul_add(inputs.b.at(p, j), acc);
                }
                c[i * n + j] = acc;
            }
        }
        c
    }

    fn case(m: usize, n: usize, k: usize) -> (Shape, Vec<f32>, Reference) {
        let shape = Shape::new(m, n, k).unwrap();
        let inputs = Inputs::random(shape, 11);
        let c = fp32_product(&inputs);
        (shape, c, reference::cpu(&inputs))
    }

    /// The index of the element with the largest |c|, where 1e-3 relative is largest too.
    fn largest(c: &[f32]) -> usize {
        (0..c.len()).max_by(|&x, &y| c[x].abs().total_cmp(&c[y].abs())).unwrap()
    }

    #[test]
    fn correct_fp32_results_pass() {
        let (shape, c, r) = case(37, 29, 300);
        let v = verify(shape, &c, &r);
        assert!(v.passed(), "{v:?}");
        assert_eq!(v.checked, 37 * 29);
        assert!(v.worst.ratio() <= 1.0);
        assert!(v.rel_frobenius < 1e-5);
    }

    #[test]
    fn correct_fp32_results_pass_at_k_8192() {
        let (shape, c, r) = case(4, 5, 8192);
        let v = verify(shape, &c, &r);
        assert!(v.passed(), "{v:?}");
    }

    #[test]
    fn one_element_off_by_1e_3_relative_fails() {
        let (shape, mut c, r) = case(64, 48, 64);
        let i = largest(&c);
        c[i] *= 1.0 + 1e-3;
        let v = verify(shape, &c, &r);
        assert_eq!(v.failed, 1);
        assert_eq!((v.worst.row, v.worst.col), (i / 48, i % 48));
        assert!(v.worst.ratio() > 1.0);
    }

    #[test]
    fn one_nan_fails_and_is_the_worst_element() {
        let (shape, mut c, r) = case(20, 30, 40);
        c[7 * 30 + 3] = f32::NAN;
        let v = verify(shape, &c, &r);
        assert_eq!(v.failed, 1);
        assert_eq!((v.worst.row, v.worst.col), (7, 3));
        assert!(v.worst.got.is_nan());
    }

    #[test]
    fn infinity_fails() {
        let (shape, mut c, r) = case(5, 6, 7);
        c[0] = f32::INFINITY;
        assert_eq!(verify(shape, &c, &r).failed, 1);
    }

    #[test]
    fn an_unwritten_element_of_a_poisoned_output_fails() {
        let (shape, c, r) = case(17, 19, 23);
        // A kernel that skips the last element leaves the NaN poison in place.
        let mut out = vec![f32::NAN; c.len()];
        out[..c.len() - 1].copy_from_slice(&c[..c.len() - 1]);
        let v = verify(shape, &out, &r);
        assert_eq!(v.failed, 1);
        assert_eq!((v.worst.row, v.worst.col), (16, 18));
    }

    #[test]
    fn a_transposed_result_fails() {
        let (shape, c, r) = case(24, 24, 24);
        let mut t = vec![0.0f32; c.len()];
        for i in 0..24 {
            for j in 0..24 {
                t[j * 24 + i] = c[i * 24 + j];
            }
        }
        let v = verify(shape, &t, &r);
        assert!(v.failed > 24 * 23 / 2, "{v:?}");
        assert!(v.rel_frobenius > 0.5);
    }

    #[test]
    fn gamma_grows_with_k_and_has_no_bound_past_one_over_u() {
        assert!(gamma(1, U32) > 0.0);
        assert!(gamma(8192, U32) > gamma(4096, U32));
        let ku = 1000.0 * U32;
        assert!(gamma(1000, U32) > ku && (gamma(1000, U32) - ku) / ku < 1e-4);
        assert_eq!(gamma(1 << 25, U32), f64::INFINITY);
    }
}

//! Checking a kernel's C against the f64 reference: two limits and, for exact inputs, equality.
//!
//! # Per element: the worst case, always sound
//!
//! A dot product of length K summed in f32, in any order and with or without fused
//! multiply-adds, satisfies the classical forward error bound
//!
//! ```text
//! |ĉ_ij − c_ij| ≤ γ_K · (|A|·|B|)_ij,    γ_K = K·u / (1 − K·u),   u = 2⁻²⁴
//! ```
//!
//! When the operands are first rounded to a narrower format with unit roundoff v (TF32: v = 2⁻¹¹),
//! each product gains a relative error of at most (1 + v)² − 1, and the factor becomes
//! (1 + v)²·(1 + γ_K) − 1. The f64 reference's own bound, γ_K(2⁻⁵³), is added so the check is
//! rigorous. No correct kernel can fail it; but for the course's inputs (independent, zero-mean,
//! uniform in [−1, 1]) (|A|·|B|)_ij ≈ K/4 grows like K while c_ij and its real rounding error
//! grow like √K, so the bound lets many wrong results through at large K.
//!
//! # Normwise: the size real rounding errors have
//!
//! Every way of summing K terms rounds a series of partial sums s, each by a relative error δ
//! with |δ| ≤ u; the error of the result is Σ δ·s over those roundings. Modelling the δ as
//! independent with mean zero (Higham and Mary's model), its variance is at most u²·Σ s². For
//! independent zero-mean terms t_p, a partial sum of n of them has E[s²] = n·E[t²], and the
//! order with the largest Σ s² is recursive summation (one term after another), which is what
//! the course's kernels do: partial sums of 2, 3, …, K terms. With one more rounding per
//! product (no fused multiply-add), E[Δ²] ≤ u²·(K + 3)/2 · q with q = Σ_p t_p². Rounding the
//! operands to unit roundoff v adds at most (2v² + v⁴)·q. Summed over C:
//!
//! ```text
//! E‖ΔC‖²_F ≤ σ²·S²,   σ² = u²·(K + 3)/2 + 2v² + v⁴,   S² = Σ_ij Σ_p (a_ip·b_pj)² = Σ_p ‖A_:p‖²·‖B_p:‖²
//! ```
//!
//! S is what ‖C‖_F is on average for such inputs, computed in O(MK + KN) without cancellation
//! (for 1×1 products c itself can be near zero by chance). The limit is ‖ΔC‖_F ≤ λ·σ·S, so the
//! limit on ‖ΔC‖/‖C‖ is about λ·√(K/2)·u, and λ = [`LAMBDA`] = 8. Measured on simulated
//! recursive f32 sums, the real error is 0.43·σ·S on average (the δ are not all at their
//! bound), so λ = 8 leaves a factor of 18. At 8192³ the 6.7·10⁷ squared element errors average
//! out: Chebyshev's inequality with their simulated fourth moment (0.23·σ⁴) puts the chance of a
//! correct result exceeding the limit below 10⁻¹². For a single element (M = N = 1), where
//! nothing averages, the simulated tail falls about tenfold per σ beyond 2.6·σ; extrapolated,
//! the chance of passing 8·σ is about 10⁻⁹. The chapter "Measuring correctly" shows the
//! planted faults against this limit.
//!
//! # Exact inputs
//!
//! With small-integer inputs ([`crate::matrix::Inputs::integers`]), every product and partial
//! sum is an integer below 2²⁴ and f32 arithmetic is exact in any order: C must equal the
//! reference bit for bit, so a misplaced or missing term fails at any K.
//!
//! NaN and infinity always fail, which is why the output is filled with NaN before the verified
//! launch: an element no thread wrote cannot pass.

use std::fmt;

use crate::matrix::Shape;
use crate::reference::Reference;

/// Unit roundoff of f32.
pub const U32: f64 = f32::EPSILON as f64 / 2.0;
/// Unit roundoff of f64.
pub const U64: f64 = f64::EPSILON / 2.0;
/// Unit roundoff of TF32 (10 stored mantissa bits, rounded to nearest).
pub const UTF32: f64 = 1.0 / 2048.0;
/// The relative error of truncating to TF32 (dropping the 13 low mantissa bits): below one unit
/// in the last place, twice the unit roundoff.
pub const UTF32_TRUNCATED: f64 = 1.0 / 1024.0;
/// The relative error of one product a·b computed as three TF32 products from split operands
/// (a = a_big + a_small, each part rounded to nearest TF32; the same for b): a_big·b_big +
/// a_big·b_small + a_small·b_big. They miss a·b by exactly a·r_b + r_a·b − r_a·r_b +
/// a_small·b_small, where rounding each small part (12 significant bits) to TF32's 11 leaves
/// |r| ≤ 2⁻²³ of its operand and |a_small| ≤ 2⁻¹¹·|a|: at most 2⁻²¹·(1 + 2⁻²⁵)·|ab|, eight units
/// of FP32 roundoff, here rounded up to 2⁻²¹·(1 + 2⁻¹²).
pub const SPLIT_TF32: f64 = (1.0 + 1.0 / 4096.0) / 2_097_152.0;
/// How many model standard deviations the normwise error may reach (see the module docs).
pub const LAMBDA: f64 = 8.0;

/// The arithmetic a step claims to perform, and so the limits it is held to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precision {
    /// f32 operands, products and sums: steps 01–06 and cuBLAS SGEMM.
    Fp32,
    /// Operands rounded to TF32 (round to nearest), products and sums in f32: the tensor
    /// cores' TF32 mode.
    Tf32,
    /// Operands truncated to TF32 (their 13 low mantissa bits ignored), products and sums in
    /// f32: what the tensor cores do with FP32 bits they read without a conversion.
    Tf32Truncated,
    /// FP32 accuracy from the tensor cores: each operand split into two TF32 parts and three
    /// TF32 products summed in f32 (see [`SPLIT_TF32`]). Held to FP32's normwise limit, the
    /// accuracy it claims; its per-element bound adds the split's error and sums of 3K terms.
    Tf32x3,
}

impl Precision {
    /// Unit roundoff of the conversion the operands go through (0: none).
    pub fn operand_u(self) -> f64 {
        match self {
            Precision::Fp32 => 0.0,
            Precision::Tf32 => UTF32,
            Precision::Tf32Truncated => UTF32_TRUNCATED,
            Precision::Tf32x3 => 0.0,
        }
    }

    /// Whether the result is held to TF32's limits (and its share is of cuBLAS TF32).
    pub fn is_tf32(self) -> bool {
        matches!(self, Precision::Tf32 | Precision::Tf32Truncated)
    }

    /// Whether the products run on the tensor cores (the step is set against cuBLAS TF32 too).
    pub fn tensor_cores(self) -> bool {
        self.is_tf32() || self == Precision::Tf32x3
    }

    /// The compute roof a step of this precision is measured against: its name and GFLOP/s, from
    /// the GPU's FP32 peak and its dense TF32 peak (None where the TF32 peak is not known).
    pub fn roof(self, fp32_peak: f64, tf32_peak: Option<f64>) -> (&'static str, Option<f64>) {
        match self {
            p if p.is_tf32() => ("TF32 peak", tf32_peak),
            Precision::Tf32x3 => ("a third of TF32 peak", tf32_peak.map(|p| p / 3.0)),
            _ => ("FP32 peak", Some(fp32_peak)),
        }
    }

    /// Unit roundoff of products and sums.
    pub fn sum_u(self) -> f64 {
        U32
    }

    /// The per-element factor: |ĉ − c| ≤ factor·(|A|·|B|), the f64 reference's share included.
    pub fn elementwise_factor(self, k: usize) -> f64 {
        if self == Precision::Tf32x3 {
            // |Σ a·b − Σ of the 3K products| ≤ SPLIT_TF32·(|A|·|B|), and f32 sums of the 3K
            // products, whose magnitudes add up to at most (1 + 2⁻⁹)·(|A|·|B|), err by γ_3K,
            // here for adds that may round toward zero (the tensor cores'): twice the unit.
            return SPLIT_TF32 + (1.0 + 1.0 / 512.0) * gamma(3 * k, 2.0 * self.sum_u()) + gamma(k, U64);
        }
        let v = self.operand_u();
        (1.0 + v).powi(2) * (1.0 + gamma(k, self.sum_u())) - 1.0 + gamma(k, U64)
    }

    /// σ of the normwise model: E‖ΔC‖² ≤ σ²·S².
    pub fn normwise_sigma(self, k: usize) -> f64 {
        let (u, v) = (self.sum_u(), self.operand_u());
        (u * u * (k as f64 + 3.0) / 2.0 + 2.0 * v * v + v.powi(4)).sqrt()
    }
}

impl fmt::Display for Precision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Precision::Fp32 => "FP32",
            Precision::Tf32 => "TF32",
            Precision::Tf32Truncated => "TF32 (truncated)",
            Precision::Tf32x3 => "FP32 (3×TF32)",
        })
    }
}

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

/// The normwise check: ‖ΔC‖_F against λ·σ·S.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Normwise {
    /// ‖C − C_ref‖_F (infinite when an element is NaN or infinite).
    pub error: f64,
    /// ‖C_ref‖_F.
    pub norm: f64,
    /// The largest ‖ΔC‖_F that passes: λ·σ·S.
    pub limit: f64,
}

impl Normwise {
    /// ‖ΔC‖/‖C‖, the usual single-number summary.
    pub fn relative(&self) -> f64 {
        self.error / self.norm.max(f64::MIN_POSITIVE)
    }

    /// The limit expressed on ‖ΔC‖/‖C‖.
    pub fn relative_limit(&self) -> f64 {
        self.limit / self.norm.max(f64::MIN_POSITIVE)
    }

    /// error / limit: at most 1 to pass.
    pub fn ratio(&self) -> f64 {
        if self.error.is_nan() { f64::INFINITY } else { self.error / self.limit.max(f64::MIN_POSITIVE) }
    }

    pub fn passed(&self) -> bool {
        self.error <= self.limit
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Verdict {
    /// The arithmetic the limits were derived for.
    pub precision: Precision,
    pub checked: usize,
    /// Elements outside the per-element bound; NaN and infinity count here.
    pub outside: usize,
    pub worst: Worst,
    pub normwise: Normwise,
    /// With exact (small-integer) inputs: elements that differ from the reference at all.
    pub mismatched: Option<usize>,
    pub source: &'static str,
}

impl Verdict {
    pub fn passed(&self) -> bool {
        self.outside == 0 && self.normwise.passed() && self.mismatched.unwrap_or(0) == 0
    }

    /// One line naming what failed, for test messages and tables.
    pub fn summary(&self) -> String {
        let exact = self.mismatched.map_or(String::new(), |m| format!(", {m} not exact"));
        format!(
            "{} · {} of {} outside the per-element bound (worst {:.2} of it at [{},{}]) · ‖ΔC‖/‖C‖ {:.1e} at {:.2} of its limit{exact}",
            if self.passed() { "PASS" } else { "FAIL" },
            self.outside,
            self.checked,
            self.worst.ratio().min(9.99e9),
            self.worst.row,
            self.worst.col,
            self.normwise.relative(),
            self.normwise.ratio().min(9.99e9),
        )
    }
}

/// Compares `got` (row-major M×N) with the reference under the limits of `precision`; every
/// element is checked.
pub fn verify(shape: Shape, got: &[f32], reference: &Reference, precision: Precision) -> Verdict {
    assert_eq!(got.len(), shape.m * shape.n, "C has the wrong number of elements");
    assert_eq!(reference.c.len(), got.len(), "the reference has the wrong number of elements");
    let factor = precision.elementwise_factor(shape.k);
    let mut outside = 0;
    let mut mismatched = 0;
    let mut worst = None::<(f64, usize)>;
    let (mut diff2, mut ref2) = (0.0f64, 0.0f64);
    for (i, (&g, (&want, &abs))) in got.iter().zip(reference.c.iter().zip(&reference.abs)).enumerate() {
        let g64 = f64::from(g);
        let r = ratio(g64, want, factor * abs);
        // NaN and infinity give an infinite ratio.
        if r > 1.0 {
            outside += 1;
        }
        if g64 != want {
            mismatched += 1;
        }
        if worst.is_none_or(|(w, _)| r > w) {
            worst = Some((r, i));
        }
        let err = (g64 - want).abs();
        diff2 += if err.is_finite() { err * err } else { f64::INFINITY };
        ref2 += want * want;
    }
    let i = worst.map_or(0, |(_, i)| i);
    Verdict {
        precision,
        checked: got.len(),
        outside,
        worst: Worst {
            row: i / shape.n,
            col: i % shape.n,
            got: got[i],
            want: reference.c[i],
            bound: factor * reference.abs[i],
        },
        normwise: Normwise {
            error: diff2.sqrt(),
            norm: ref2.sqrt(),
            limit: LAMBDA * precision.normwise_sigma(shape.k) * reference.terms_sq.sqrt(),
        },
        mismatched: reference.exact.then_some(mismatched),
        source: reference.source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::Inputs;
    use crate::reference;

    /// C summed the way the kernels do, one term after another in f32, with or without fused
    /// multiply-adds, after passing each operand through `round`.
    fn product(inputs: &Inputs, fma: bool, round: fn(f32) -> f32) -> Vec<f32> {
        let Shape { m, n, k } = inputs.shape;
        let mut c = vec![0.0f32; m * n];
        for i in 0..m {
            for j in 0..n {
                let mut acc = 0.0f32;
                for p in 0..k {
                    let (a, b) = (round(inputs.a.at(i, p)), round(inputs.b.at(p, j)));
                    acc = if fma { a.mul_add(b, acc) } else { acc + a * b };
                }
                c[i * n + j] = acc;
            }
        }
        c
    }

    fn fp32(inputs: &Inputs) -> Vec<f32> {
        product(inputs, true, |x| x)
    }

    /// Round to nearest (ties away) keeping `bits` stored mantissa bits.
    fn keep_bits(x: f32, bits: u32) -> f32 {
        let drop = 23 - bits;
        let half = 1u32 << (drop - 1);
        f32::from_bits((x.to_bits() + half) & !((1u32 << drop) - 1))
    }

    fn tf32(x: f32) -> f32 {
        keep_bits(x, 10)
    }

    fn bf16(x: f32) -> f32 {
        keep_bits(x, 7)
    }

    fn inputs(m: usize, n: usize, k: usize) -> Inputs {
        Inputs::random(Shape::new(m, n, k).unwrap(), 11)
    }

    fn check(inputs: &Inputs, c: &[f32], precision: Precision) -> Verdict {
        verify(inputs.shape, c, &reference::cpu(inputs), precision)
    }

    /// Shapes from K = 1 to K = 2²⁰, each about a million terms or fewer.
    const DEPTHS: &[(usize, usize, usize)] =
        &[(3, 5, 1), (7, 6, 16), (24, 24, 300), (8, 8, 4096), (2, 2, 65536), (1, 1, 1 << 20)];

    #[test]
    fn correct_fp32_sums_pass_both_limits_with_room_from_k_1_to_2_20() {
        for &(m, n, k) in DEPTHS {
            let x = inputs(m, n, k);
            for fma in [true, false] {
                let v = check(&x, &product(&x, fma, |x| x), Precision::Fp32);
                assert!(v.passed(), "{m}×{n}×{k} fma={fma}: {v:?}");
                // The worst-case bound is attained by one rounding at K = 1; the normwise limit
                // is the one that sits close to real errors, and it keeps its distance.
                assert!(v.normwise.ratio() < 0.5, "{m}×{n}×{k} fma={fma}: {}", v.summary());
                if k >= 16 {
                    assert!(v.worst.ratio() < 0.5, "{m}×{n}×{k} fma={fma}: {}", v.summary());
                }
            }
        }
    }

    #[test]
    fn a_sum_in_f32_across_several_orders_passes() {
        // Pairwise-like: eight partial sums over interleaved terms, then added together.
        let x = inputs(9, 7, 20_000);
        let Shape { m, n, k } = x.shape;
        let mut c = vec![0.0f32; m * n];
        for i in 0..m {
            for j in 0..n {
                let mut part = [0.0f32; 8];
                for p in 0..k {
                    part[p % 8] = x.a.at(i, p).mul_add(x.b.at(p, j), part[p % 8]);
                }
                c[i * n + j] = part.iter().sum();
            }
        }
        assert!(check(&x, &c, Precision::Fp32).passed());
    }

    #[test]
    fn operands_rounded_to_tf32_or_bf16_fail_as_fp32_and_tf32_passes_as_tf32() {
        for &(m, n, k) in &[(3, 5, 1), (7, 6, 16), (24, 24, 300), (32, 32, 1024), (4, 4, 16384)] {
            let x = inputs(m, n, k);
            let t = product(&x, true, tf32);
            let fp32 = check(&x, &t, Precision::Fp32);
            assert!(!fp32.passed(), "{m}×{n}×{k}: TF32 passed as FP32: {}", fp32.summary());
            let v = check(&x, &t, Precision::Tf32);
            assert!(v.passed() && v.normwise.ratio() < 0.5, "{m}×{n}×{k}: {}", v.summary());
            let b = product(&x, true, bf16);
            assert!(!check(&x, &b, Precision::Fp32).passed(), "{m}×{n}×{k}: bf16 as FP32");
        }
    }

    #[test]
    fn operands_truncated_to_tf32_pass_as_truncated_tf32_and_not_as_rounded() {
        let chop = |x: f32| f32::from_bits(x.to_bits() & !0x1FFF);
        for &(m, n, k) in &[(3, 5, 1), (7, 6, 16), (24, 24, 300), (32, 32, 1024), (4, 4, 16384)] {
            let x = inputs(m, n, k);
            let t = product(&x, true, chop);
            let v = check(&x, &t, Precision::Tf32Truncated);
            assert!(v.passed() && v.normwise.ratio() < 0.5, "{m}×{n}×{k}: {}", v.summary());
            assert!(!check(&x, &t, Precision::Fp32).passed(), "{m}×{n}×{k}: truncated TF32 as FP32");
        }
        // One product of two truncated operands can err by almost 2⁻⁹ of itself, beyond the
        // rounded format's per-element bound.
        let mut x = inputs(1, 1, 1);
        let v = f32::from_bits(0x3F80_1FFF); // 1 + 2⁻¹⁰ − 2⁻²³: truncates to 1
        (x.a.data[0], x.b.data[0]) = (v, v);
        assert!(!check(&x, &product(&x, true, chop), Precision::Tf32).passed());
        assert!(check(&x, &product(&x, true, chop), Precision::Tf32Truncated).passed());
    }

    /// A and B split into TF32 parts, three products per term, summed one after another in f32
    /// (with `small` false, only big·big: the split forgotten).
    fn split_product(x: &Inputs, small: bool) -> Vec<f32> {
        let Shape { m, n, k } = x.shape;
        let split = |v: f32| (tf32(v), tf32(v - tf32(v)));
        let mut c = vec![0.0f32; m * n];
        for i in 0..m {
            for j in 0..n {
                let mut s = 0.0f32;
                for p in 0..k {
                    let ((ab, as_), (bb, bs)) = (split(x.a.at(i, p)), split(x.b.at(p, j)));
                    if small {
                        s += ab * bs;
                        s += as_ * bb;
                    }
                    s += ab * bb;
                }
                c[i * n + j] = s;
            }
        }
        c
    }

    #[test]
    fn three_tf32_products_pass_fp32s_normwise_limit_and_one_does_not() {
        for &(m, n, k) in &DEPTHS[..5] {
            let x = inputs(m, n, k);
            let v = check(&x, &split_product(&x, true), Precision::Tf32x3);
            assert!(v.passed() && v.normwise.ratio() < 0.5, "{m}×{n}×{k}: {}", v.summary());
            let fp32 = check(&x, &split_product(&x, true), Precision::Fp32);
            assert!(fp32.normwise.passed(), "{m}×{n}×{k}: {}", fp32.summary());
            let one = check(&x, &split_product(&x, false), Precision::Tf32x3);
            assert!(!one.passed(), "{m}×{n}×{k}: big·big alone passed: {}", one.summary());
        }
        // A single product loses up to eight units of roundoff in the split: FP32's per-element
        // bound (one unit at K = 1) is out of reach, and the split's own bound holds.
        let x = inputs(64, 64, 1);
        let c = split_product(&x, true);
        assert!(check(&x, &c, Precision::Fp32).outside > 0);
        assert_eq!(check(&x, &c, Precision::Tf32x3).outside, 0);
    }

    /// C with the terms `skip` (a range of k) left out of every dot product.
    fn without(x: &Inputs, skip: std::ops::Range<usize>) -> Vec<f32> {
        let mut y = x.clone();
        let k = x.shape.k;
        for i in 0..x.shape.m {
            for p in skip.clone() {
                y.a.data[i * k + p] = 0.0;
            }
        }
        fp32(&y)
    }

    #[test]
    fn a_dropped_term_fails_from_k_1_to_2_16() {
        for &(m, n, k) in &DEPTHS[..5] {
            let x = inputs(m, n, k);
            let v = check(&x, &without(&x, k - 1..k), Precision::Fp32);
            assert!(!v.passed(), "{m}×{n}×{k}: {}", v.summary());
        }
    }

    #[test]
    fn a_dropped_slice_of_16_fails_from_k_1_to_2_20() {
        for &(m, n, k) in DEPTHS {
            let x = inputs(m, n, k);
            let v = check(&x, &without(&x, k.saturating_sub(16)..k), Precision::Fp32);
            assert!(!v.passed(), "{m}×{n}×{k}: {}", v.summary());
            // At K = 2²⁰ only the normwise limit sees it: the per-element bound is too wide.
            if k == 1 << 20 {
                assert_eq!(v.outside, 0);
            }
        }
    }

    #[test]
    fn an_all_zero_result_fails_from_k_1_to_2_20() {
        for &(m, n, k) in DEPTHS {
            let x = inputs(m, n, k);
            let v = check(&x, &vec![0.0; m * n], Precision::Fp32);
            assert!(!v.passed() && v.normwise.ratio() > 10.0, "{m}×{n}×{k}: {}", v.summary());
        }
    }

    #[test]
    fn an_unwritten_row_or_column_of_a_poisoned_output_fails() {
        for &(m, n, k) in &[(17, 33, 9), (8, 8, 4096), (2, 2, 65536)] {
            let x = inputs(m, n, k);
            let c = fp32(&x);
            let mut row = c.clone();
            row[(m - 1) * n..].fill(f32::NAN);
            let v = check(&x, &row, Precision::Fp32);
            assert_eq!(v.outside, n, "{m}×{n}×{k}");
            assert_eq!(v.worst.row, m - 1);
            let mut col = c.clone();
            for i in 0..m {
                col[i * n + n - 1] = f32::NAN;
            }
            let v = check(&x, &col, Precision::Fp32);
            assert_eq!((v.outside, v.worst.col), (m, n - 1), "{m}×{n}×{k}");
            assert!(!v.passed() && !v.normwise.passed());
        }
    }

    #[test]
    fn one_element_off_by_1e_3_relative_fails_per_element() {
        let x = inputs(64, 48, 64);
        let mut c = fp32(&x);
        // The element with the largest |c|, where 1e-3 relative is largest too.
        let i = (0..c.len()).max_by(|&p, &q| c[p].abs().total_cmp(&c[q].abs())).unwrap();
        c[i] *= 1.0 + 1e-3;
        let v = check(&x, &c, Precision::Fp32);
        assert_eq!(v.outside, 1);
        assert_eq!((v.worst.row, v.worst.col), (i / 48, i % 48));
        assert!(v.worst.ratio() > 1.0 && !v.passed());
    }

    #[test]
    fn nan_and_infinity_fail() {
        let x = inputs(20, 30, 40);
        let mut c = fp32(&x);
        c[7 * 30 + 3] = f32::NAN;
        let v = check(&x, &c, Precision::Fp32);
        assert_eq!((v.outside, v.worst.row, v.worst.col), (1, 7, 3));
        assert!(v.worst.got.is_nan() && !v.normwise.passed());
        c[7 * 30 + 3] = f32::INFINITY;
        assert!(!check(&x, &c, Precision::Fp32).passed());
    }

    #[test]
    fn a_transposed_result_fails() {
        let x = inputs(24, 24, 24);
        let c = fp32(&x);
        let mut t = vec![0.0f32; c.len()];
        for i in 0..24 {
            for j in 0..24 {
                t[j * 24 + i] = c[i * 24 + j];
            }
        }
        let v = check(&x, &t, Precision::Fp32);
        assert!(v.outside > 24 * 23 / 2, "{v:?}");
        assert!(v.normwise.relative() > 0.5);
    }

    #[test]
    fn exact_inputs_must_match_bit_for_bit() {
        for &(m, n, k) in &[(5, 3, 1), (9, 9, 1000), (1, 1, 1 << 20)] {
            let x = Inputs::integers(Shape::new(m, n, k).unwrap(), 5);
            let r = reference::cpu(&x);
            let mut c = fp32(&x);
            let v = verify(x.shape, &c, &r, Precision::Fp32);
            assert_eq!(v.mismatched, Some(0), "{m}×{n}×{k}");
            assert!(v.passed() && v.normwise.error == 0.0);
            // One unit off in one element is within both limits at this K, but not exact.
            c[0] += 1.0;
            let v = verify(x.shape, &c, &r, Precision::Fp32);
            assert_eq!(v.mismatched, Some(1));
            assert!(!v.passed(), "{}", v.summary());
        }
    }

    #[test]
    fn random_inputs_are_not_held_to_exactness() {
        let x = inputs(9, 9, 1000);
        assert_eq!(check(&x, &fp32(&x), Precision::Fp32).mismatched, None);
    }

    #[test]
    fn limits_grow_with_k_and_with_the_operands_rounding() {
        assert!(gamma(1, U32) > 0.0);
        assert!(gamma(8192, U32) > gamma(4096, U32));
        let ku = 1000.0 * U32;
        assert!(gamma(1000, U32) > ku && (gamma(1000, U32) - ku) / ku < 1e-4);
        assert_eq!(gamma(1 << 25, U32), f64::INFINITY);
        let (f, t) = (Precision::Fp32, Precision::Tf32);
        assert!(f.elementwise_factor(4096) < t.elementwise_factor(4096));
        assert!(f.normwise_sigma(4096) > f.normwise_sigma(1024));
        // √((K + 3)/2)·u at K = 4096: 45.3·u.
        assert!((f.normwise_sigma(4096) / U32 - (4099.0f64 / 2.0).sqrt()).abs() < 1e-9);
        assert!(t.normwise_sigma(4096) > 10.0 * f.normwise_sigma(4096));
        // Three TF32 products are held to FP32's normwise limit; per element a single product
        // may miss by the split's eight units, far below TF32's rounding.
        let x3 = Precision::Tf32x3;
        assert_eq!(x3.normwise_sigma(4096), f.normwise_sigma(4096));
        assert!(
            x3.elementwise_factor(1) > 8.0 * U32
                && x3.elementwise_factor(1) < t.elementwise_factor(1) / 100.0
        );
    }
}

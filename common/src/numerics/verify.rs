//! Checking a kernel's C against the f64 reference: two limits and, for exact inputs, equality.
//! The book's appendix "The error model" (`docs/src/error-model.md`) derives both limits and the
//! constants below; the tests in `verify/tests.rs` simulate what it claims. In short:
//!
//! - **Per element**, always sound: |ĉᵢⱼ − cᵢⱼ| ≤ γ_K·(|A|·|B|)ᵢⱼ with γ_K = K·w/(1 − K·w), w the
//!   largest relative error of one add (u = 2⁻²⁴ to nearest, 2u for the tensor cores' adds toward
//!   zero), widened for operands first rounded to a narrower format, plus the f64 reference's own
//!   bound. No correct kernel can fail it; at large K it lets much through.
//! - **Normwise**, the error the claimed arithmetic is *expected* to make: ‖ΔC‖_F ≤ λ(n)·ρ·S, with
//!   S² = Σᵢⱼ Σₚ (aᵢₚ·bₚⱼ)², ρ the expected relative error of the claimed precision (operand
//!   rounding, the sums' rounding: [`C_RN`], [`C_RZ`], the tensor cores' bias β_TC, and
//!   [`SPLIT_RHO`] for three TF32 products), and λ(n) = max(κ·√(1 + 6·√(6/n)), 18/√n), κ =
//!   [`KAPPA`], n the number of independent pieces of the smallest family the error is made of.
//! - **What it can tell apart**: [`Verdict::separates`] says whether the next lower precision's
//!   expected error is at least twice the limit at the shape checked.
//!
//! # Exact inputs
//!
//! With small-integer inputs ([`crate::matrix::Inputs::integers`]), every product and partial
//! sum is an integer below 2²⁴ and f32 arithmetic is exact in any order: C must equal the
//! reference bit for bit, so a misplaced or missing term fails at any K.
//!
//! # NaN and infinity
//!
//! Where the reference is finite, a NaN or infinite result fails, which is why the output is
//! filled with NaN before the verified launch: an element no thread wrote cannot pass. Where the
//! inputs hold NaN or ±∞, the reference (f64, of the same inputs) is NaN or ±∞ in the elements they
//! reach, and a result passes there only with the same class ([`Class`]: an f64 beyond f32's
//! largest value counts as the infinity of its sign), as cuBLAS SGEMM gives; the normwise error
//! and its limit are taken over the finite part (the reference's growth is measured on the inputs
//! with their NaN and infinities set to zero, which leaves the finite elements unchanged).
//!
//! # Underflow
//!
//! Near zero FP32's errors are absolute, not relative: a product or a sum that falls among the
//! subnormals (below 2⁻¹²⁶) rounds by up to half the smallest one, η = 2⁻¹⁵⁰, whatever its size,
//! and one below 2⁻¹⁵⁰ becomes zero. The per-element bound therefore adds (K + 1)·2⁻¹⁴⁹
//! ([`underflow`]): room for 2K + 2 such roundings, which no result of normal size notices.

use std::fmt;

use crate::matrix::Shape;
pub use crate::reference::GROUP;
use crate::reference::{Growth, Reference};

/// Unit roundoff of f32.
pub const U32: f64 = f32::EPSILON as f64 / 2.0;
/// Unit roundoff of f64.
pub const U64: f64 = f64::EPSILON / 2.0;
/// Unit roundoff of TF32 (10 stored fraction bits, rounded to nearest).
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
/// The model's constant for f32 sums rounded to nearest: ρ_sum = C_RN·u·√((K + 3)/2).
pub const C_RN: f64 = 0.45;
/// The model's constant for the tensor cores' sums, rounded toward zero after every group of 8
/// products: ρ_sum = C_RZ·u·√((g + 1)(2g + 1)/6), g = ⌈K/8⌉.
pub const C_RZ: f64 = 0.8;
/// The expected error of three TF32 products beyond that of f32 sums, relative: what the split
/// leaves out (simulated: 1.1·u) and the tensor cores' truncating adds within one 32-deep stage
/// (simulated: 4.7·u), 5·u together.
pub const SPLIT_RHO: f64 = 5.0 * U32;
/// The normwise limit's margin over the expected error, for a large C (see the module docs).
pub const KAPPA: f64 = 1.5;
/// The share of its limit that a correct result may reach in the course's tests: at most 1/κ
/// of it is expected, and a little more is left for kernels whose sums are kinder or harsher
/// than the model's in small ways.
pub const ROOM: f64 = 0.75;

/// How one operand is rounded before the products, as the products weight it (module docs):
/// `square` = E[a²δ²]/E[a²] and `mean` = E[a²δ]/E[a²], for the course's inputs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rounding {
    pub square: f64,
    pub mean: f64,
}

impl Rounding {
    /// Not rounded: the f32 value as it is.
    pub const NONE: Rounding = Rounding { square: 0.0, mean: 0.0 };

    /// Rounded to nearest, keeping `bits` fraction bits.
    pub fn nearest(bits: i32) -> Rounding {
        let h = 2f64.powi(-bits - 1);
        Rounding { square: h * h / 7.0, mean: 0.0 }
    }

    /// Truncated (rounded toward zero), keeping `bits` fraction bits.
    pub fn truncated(bits: i32) -> Rounding {
        let h = 2f64.powi(-bits - 1);
        Rounding { square: 4.0 * h * h / 7.0, mean: -9.0 * h / 14.0 }
    }

    pub fn tf32() -> Rounding {
        Rounding::nearest(10)
    }

    pub fn bf16() -> Rounding {
        Rounding::nearest(7)
    }
}

/// How the products are summed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sums {
    /// f32 adds rounded to nearest (the FMA units, or the stage sums of step 09).
    Nearest,
    /// The tensor cores' adds: a group of [`GROUP`] products at a time, rounded toward zero.
    TensorCores,
}

/// The expected ‖ΔC‖_F of an arithmetic on the data `g` describes: operands `a` and `b` rounded
/// so, `terms` products per term summed by `sums`, and `extra` (relative, per term and on the
/// whole sum) besides; module docs.
pub fn expected_error(a: Rounding, b: Rounding, sums: Sums, extra: f64, terms: usize, g: &Growth) -> f64 {
    let s2 = g.terms_sq;
    let bias = a.mean + b.mean;
    // Roundings of the operands: independent from term to term, but a bias toward zero adds up
    // over the terms of a sum that does not cancel (‖C‖² above S²).
    let op = (a.square + b.square + 2.0 * a.mean * b.mean) * s2 + bias * bias * (g.norm_sq - s2).max(0.0);
    let (sum, together) = match sums {
        // Each partial sum rounds by about C_RN·u of itself, independently; each product once;
        // and where the data makes the adds lose terms in one direction, β·u·Σ_k s_k besides
        // (Σ_k s_k ≈ GROUP·H).
        Sums::Nearest => (
            (C_RN * U32).powi(2) * (terms as f64 * g.partial_sq + s2)
                + (g.bias * U32 * GROUP as f64).powi(2) * g.coherent_sq,
            0.0,
        ),
        // Each group's add shrinks the partial sum toward zero: −C_RZ·u·H, in the direction an
        // operand's bias toward zero points too.
        // Where a sample of the data, summed as the tensor cores sum, loses more than that
        // (products that share the sum's sign, cut as they are lined up), the sample's β_TC.
        Sums::TensorCores => {
            let c = C_RZ.max(g.tc_bias);
            ((c * U32).powi(2) * g.coherent_sq, -2.0 * c * U32 * bias * g.coherent_dot)
        }
    };
    (op + sum + together + extra * extra * s2.max(g.norm_sq)).max(0.0).sqrt()
}

/// The expected ‖ΔC‖/S for independent inputs of mean zero and dot products of length k: the
/// model of [`expected_error`] at the expectation of every measured quantity.
pub fn expected(a: Rounding, b: Rounding, sums: Sums, extra: f64, k: usize) -> f64 {
    let g = Growth::mean_zero(Shape { m: 1, n: 1, k });
    expected_error(a, b, sums, extra, 1, &g)
}

/// The normwise limit's factor over the expected error when the smallest family of independent
/// roundings has `n` members (module docs).
pub fn lambda(n: f64) -> f64 {
    let n = n.max(1.0);
    (KAPPA * (1.0 + 6.0 * (6.0 / n).sqrt()).sqrt()).max(18.0 / n.sqrt())
}

/// n = min(MN, MK, KN): how many independent pieces the smallest family has.
pub fn independent(shape: Shape) -> f64 {
    let Shape { m, n, k } = shape;
    (m as f64 * n as f64).min(m as f64 * k as f64).min(k as f64 * n as f64)
}

/// The arithmetic a step claims to perform, and so the limits it is held to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precision {
    /// f32 operands, products and sums: steps 01–06 and cuBLAS SGEMM.
    Fp32,
    /// Operands rounded to TF32 (round to nearest), products summed by the tensor cores: their
    /// TF32 mode as step 07 and cuBLAS use it.
    Tf32,
    /// Operands truncated to TF32 (their 13 low mantissa bits ignored), summed by the tensor
    /// cores: what they do with FP32 bits they read without a conversion.
    Tf32Truncated,
    /// FP32 accuracy from the tensor cores: each operand split into two TF32 parts and three
    /// TF32 products summed, the sums kept in f32 rounded to nearest (see [`SPLIT_TF32`]). Held to
    /// the normwise model of 3K terms summed in f32, plus what the split leaves out
    /// ([`SPLIT_RHO`]).
    Tf32x3,
    /// FP32 accuracy from the INT8 tensor cores (step 11): rows of A and columns of B scaled to
    /// integers, whose product is computed exactly from residues and rebuilt. Its claim is
    /// FP32's, so it is held to FP32's limits, per element and normwise.
    Int8Crt,
}

impl Precision {
    /// Relative error bound of one operand's conversion (0: none), for the per-element bound.
    pub fn operand_u(self) -> f64 {
        match self {
            Precision::Fp32 => 0.0,
            Precision::Tf32 => UTF32,
            Precision::Tf32Truncated => UTF32_TRUNCATED,
            Precision::Tf32x3 | Precision::Int8Crt => 0.0,
        }
    }

    /// Whether the result is held to TF32's limits (and its share is of cuBLAS TF32).
    pub fn is_tf32(self) -> bool {
        matches!(self, Precision::Tf32 | Precision::Tf32Truncated)
    }

    /// Whether the products run on the tensor cores (the step is set against cuBLAS TF32 too).
    pub fn tensor_cores(self) -> bool {
        self.is_tf32() || matches!(self, Precision::Tf32x3 | Precision::Int8Crt)
    }

    /// The compute roof a step of this precision is measured against: its name and GFLOP/s, from
    /// the GPU's FP32 peak and its dense TF32 peak (None where the TF32 peak is not known).
    pub fn roof(self, fp32_peak: f64, tf32_peak: Option<f64>) -> (&'static str, Option<f64>) {
        match self {
            p if p.is_tf32() => ("TF32 peak", tf32_peak),
            Precision::Tf32x3 => ("a third of TF32 peak", tf32_peak.map(|p| p / 3.0)),
            // The INT8 peak is four times the TF32 one on Hopper; seven products per result (the
            // step's default).
            Precision::Int8Crt => ("a seventh of INT8 peak", tf32_peak.map(|p| 4.0 * p / 7.0)),
            _ => ("FP32 peak", Some(fp32_peak)),
        }
    }

    /// Largest relative error of one add: f32 rounded to nearest, or toward zero on the tensor
    /// cores.
    pub fn sum_u(self) -> f64 {
        if self.is_tf32() { 2.0 * U32 } else { U32 }
    }

    /// The per-element factor: |ĉ − c| ≤ factor·(|A|·|B|), the f64 reference's share included.
    pub fn elementwise_factor(self, k: usize) -> f64 {
        if self == Precision::Tf32x3 {
            // |Σ a·b − Σ of the 3K products| ≤ SPLIT_TF32·(|A|·|B|), and f32 sums of the 3K
            // products, whose magnitudes add up to at most (1 + 2⁻⁹)·(|A|·|B|), err by γ_3K,
            // here for adds that may round toward zero (the tensor cores'): twice the unit.
            return SPLIT_TF32 + (1.0 + 1.0 / 512.0) * gamma(3 * k, 2.0 * U32) + gamma(k, U64);
        }
        let v = self.operand_u();
        (1.0 + v).powi(2) * (1.0 + gamma(k, self.sum_u())) - 1.0 + gamma(k, U64)
    }

    /// How each operand is rounded, how the products are summed, what else errs, and how many
    /// products stand in for each term (three for the split: 3K terms to sum).
    fn arithmetic(self) -> (Rounding, Sums, f64, usize) {
        match self {
            Precision::Fp32 | Precision::Int8Crt => (Rounding::NONE, Sums::Nearest, 0.0, 1),
            Precision::Tf32 => (Rounding::tf32(), Sums::TensorCores, 0.0, 1),
            Precision::Tf32Truncated => (Rounding::truncated(10), Sums::TensorCores, 0.0, 1),
            Precision::Tf32x3 => (Rounding::NONE, Sums::Nearest, SPLIT_RHO, 3),
        }
    }

    /// The expected ‖ΔC‖/S of a correct result on inputs of mean zero (module docs).
    pub fn expected(self, k: usize) -> f64 {
        self.expected_for(&Growth::mean_zero(Shape { m: 1, n: 1, k }))
    }

    /// The expected ‖ΔC‖_F of a correct result on the data `g` describes.
    pub fn expected_for(self, g: &Growth) -> f64 {
        let (r, sums, extra, terms) = self.arithmetic();
        expected_error(r, r, sums, extra, terms, g)
    }

    /// The next lower precision: its name, and how one operand is rounded in it (the other
    /// keeps this precision's rounding).
    pub fn lower(self) -> (&'static str, Rounding) {
        match self {
            Precision::Fp32 | Precision::Int8Crt => ("TF32 operands", Rounding::tf32()),
            Precision::Tf32 => ("bf16 operands", Rounding::bf16()),
            Precision::Tf32Truncated => ("bf16 operands", Rounding::truncated(7)),
            Precision::Tf32x3 => ("one TF32 part", Rounding::tf32()),
        }
    }

    /// The expected ‖ΔC‖/S when one operand is in the next lower precision (inputs of mean zero).
    pub fn lower_expected(self, k: usize) -> f64 {
        self.lower_expected_for(&Growth::mean_zero(Shape { m: 1, n: 1, k }))
    }

    /// The expected ‖ΔC‖_F when one operand is in the next lower precision, on the data `g`
    /// describes.
    pub fn lower_expected_for(self, g: &Growth) -> f64 {
        let (r, sums, extra, terms) = self.arithmetic();
        expected_error(self.lower().1, r, sums, extra, terms, g)
    }

    /// The normwise limit on ‖ΔC‖/S at `shape` for inputs of mean zero: λ(n)·ρ.
    pub fn relative_limit(self, shape: Shape) -> f64 {
        self.limit_for(shape, &Growth::mean_zero(shape))
    }

    /// The normwise limit on ‖ΔC‖_F at `shape` on the data `g` describes: λ(n)·ρ·S, n the
    /// smaller of the independent pieces and the elements that share the error evenly.
    pub fn limit_for(self, shape: Shape, g: &Growth) -> f64 {
        lambda(independent(shape).min(g.spread)) * self.expected_for(g)
    }

    /// Whether the normwise limit at `shape` fails the next lower precision by a margin of two
    /// (inputs of mean zero).
    pub fn separates(self, shape: Shape) -> bool {
        self.separates_for(shape, &Growth::mean_zero(shape))
    }

    /// Whether the normwise limit fails the next lower precision by a margin of two on the data.
    pub fn separates_for(self, shape: Shape, g: &Growth) -> bool {
        self.lower_expected_for(g) >= 2.0 * self.limit_for(shape, g)
    }
}

impl fmt::Display for Precision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Precision::Fp32 => "FP32",
            Precision::Tf32 => "TF32",
            Precision::Tf32Truncated => "TF32 (truncated)",
            Precision::Tf32x3 => "FP32 (3×TF32)",
            Precision::Int8Crt => "FP32 (INT8 residues)",
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
    /// |error| / bound: at most 1 for a passing element, infinite for a NaN or infinity of another
    /// class than the reference's.
    pub fn ratio(&self) -> f64 {
        ratio(f64::from(self.got), self.want, self.bound)
    }
}

/// The class of a value as an f32 result: NaN, +∞ or −∞ (an f64 beyond f32's largest finite
/// value is the infinity f32 arithmetic reaches), or finite.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    Finite,
    Nan,
    PlusInfinity,
    MinusInfinity,
}

impl Class {
    pub fn of(x: f64) -> Class {
        if x.is_nan() {
            Class::Nan
        } else if x.abs() > f64::from(f32::MAX) {
            if x > 0.0 { Class::PlusInfinity } else { Class::MinusInfinity }
        } else {
            Class::Finite
        }
    }
}

/// |error| / bound: at most 1 for a passing element. Where the reference is NaN or beyond f32's
/// range, the result must be of the same class (0 when it is, infinite when not), or, for a sum
/// that only just passes f32's largest value, finite within the bound; a NaN or infinite result
/// where the reference is finite is infinitely far.
fn ratio(got: f64, want: f64, bound: f64) -> f64 {
    let (g, w) = (Class::of(got), Class::of(want));
    if w != Class::Finite && g == w {
        return 0.0;
    }
    let err = (got - want).abs();
    if !err.is_finite() || g != Class::Finite { f64::INFINITY } else { err / bound.max(f64::MIN_POSITIVE) }
}

/// The normwise check: ‖ΔC‖_F against λ(n)·ρ·S.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Normwise {
    /// ‖C − C_ref‖_F (infinite when an element is NaN or infinite).
    pub error: f64,
    /// ‖C_ref‖_F.
    pub norm: f64,
    /// The ‖ΔC‖_F a correct result is expected to have: ρ·S.
    pub expected: f64,
    /// The largest ‖ΔC‖_F that passes: λ(n)·ρ·S.
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

    /// The expected error expressed on ‖ΔC‖/‖C‖.
    pub fn relative_expected(&self) -> f64 {
        self.expected / self.norm.max(f64::MIN_POSITIVE)
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
    /// Whether the normwise limit at this shape fails the next lower precision by a margin of
    /// two ([`Precision::separates`]); when it does not, the report says so.
    pub separates: bool,
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

/// What a dot product of K terms in FP32 may lose to underflow, whatever its terms' size:
/// (K + 1)·2⁻¹⁴⁹, twice the K products' and K + 1 sums' half-units of the smallest subnormal.
pub fn underflow(k: usize) -> f64 {
    (k as f64 + 1.0) * f64::from(f32::from_bits(1))
}

/// Compares `got` (row-major M×N) with the reference under the limits of `precision`; every
/// element is checked.
pub fn verify(shape: Shape, got: &[f32], reference: &Reference, precision: Precision) -> Verdict {
    assert_eq!(got.len(), shape.m * shape.n, "C has the wrong number of elements");
    assert_eq!(reference.c.len(), got.len(), "the reference has the wrong number of elements");
    let factor = precision.elementwise_factor(shape.k);
    let floor = underflow(shape.k);
    let mut outside = 0;
    let mut mismatched = 0;
    let mut worst = None::<(f64, usize)>;
    let (mut diff2, mut ref2) = (0.0f64, 0.0f64);
    for (i, (&g, (&want, &abs))) in got.iter().zip(reference.c.iter().zip(&reference.abs)).enumerate() {
        let g64 = f64::from(g);
        let r = ratio(g64, want, factor * abs + floor);
        // A NaN or an infinity of another class than the reference's gives an infinite ratio.
        if r > 1.0 {
            outside += 1;
        }
        let class = Class::of(want);
        if g64 != want && !(class != Class::Finite && Class::of(g64) == class) {
            mismatched += 1;
        }
        if worst.is_none_or(|(w, _)| r > w) {
            worst = Some((r, i));
        }
        // The normwise error is over the finite part of C; a result that is not finite there
        // makes it infinite.
        if class == Class::Finite {
            let err = (g64 - want).abs();
            diff2 += if err.is_finite() { err * err } else { f64::INFINITY };
            ref2 += want * want;
        }
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
            bound: factor * reference.abs[i] + floor,
        },
        normwise: Normwise {
            error: diff2.sqrt(),
            norm: ref2.sqrt(),
            expected: precision.expected_for(&reference.growth),
            limit: precision.limit_for(shape, &reference.growth),
        },
        separates: precision.separates_for(shape, &reference.growth),
        mismatched: reference.exact.then_some(mismatched),
        source: reference.source,
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod chapter {
    use super::*;

    /// The table of separations in the book's appendix "The error model" is the model's: the limit on
    /// ‖ΔC‖/S and the next lower precision's expected error over it, at three shapes.
    #[test]
    fn the_chapters_table_of_separations_is_the_models() {
        let table: [(Precision, [(f64, f64); 3]); 4] = [
            (Precision::Fp32, [(1.8e-6, 101.0), (8.1e-6, 23.0), (1.03e-6, 179.0)]),
            (Precision::Tf32, [(3.9e-4, 3.8), (5.7e-4, 2.6), (4.7e-4, 3.2)]),
            (Precision::Tf32Truncated, [(1.05e-3, 3.1), (1.46e-3, 2.3), (1.25e-3, 2.6)]),
            (Precision::Tf32x3, [(3.2e-6, 58.0), (1.4e-5, 13.0), (1.87e-6, 99.0)]),
        ];
        let shapes = [(4096, 4096, 4096), (64, 64, 65536), (32, 32, 900)];
        for (p, row) in table {
            for (&(m, n, k), (limit, over)) in shapes.iter().zip(row) {
                let s = Shape::new(m, n, k).unwrap();
                let (l, o) = (p.relative_limit(s), p.lower_expected(k) / p.relative_limit(s));
                assert!(
                    (l / limit - 1.0).abs() < 0.03 && (o / over - 1.0).abs() < 0.03,
                    "{p} {s}: {l:.3e}, {o:.2}"
                );
            }
        }
    }
}

//! The error model: what a correct result may differ from the f64 reference by, per element and
//! normwise, for the arithmetic a step claims (the book's appendix "The error model" derives it).

use super::precision::Precision;
use crate::matrix::Shape;
pub use crate::reference::GROUP;
use crate::reference::Growth;

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
/// leaves out (simulated: 1.1·u) and the tensor cores' truncating adds within one 32-deep slice
/// (simulated: 4.7·u), 5·u together.
pub const SPLIT_RHO: f64 = 5.0 * U32;
/// The normwise limit's margin over the expected error, for a large C (see the module docs).
pub const KAPPA: f64 = 1.5;
/// The share of its limit that a correct result may reach in the course's tests: at most 1/κ
/// of it is expected, and a little more is left for kernels whose sums are kinder or harsher
/// than the model's in small ways.
pub const ROOM: f64 = 0.75;

/// How one operand is rounded before the products, as the products weight it (module docs):
/// `square` = E\[a²δ²\]/E\[a²\] and `mean` = E\[a²δ\]/E\[a²\], for the course's inputs.
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
    /// f32 adds rounded to nearest (the FMA units, or the slice sums of step 09).
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
    let under = underflow_sq(sums, terms, g.k, g.elements);
    (op + sum + together + extra * extra * s2.max(g.norm_sq) + under).max(0.0).sqrt()
}

/// What FP32's underflow may add to ‖ΔC‖² in expectation over `elements` elements of C, each a
/// dot product of `k` terms of `terms` products each, summed by `sums`: the normwise twin of the
/// per-element bound's [`underflow`]. That bound allows each element 2·terms·K + 2 roundings in
/// the subnormal range (every product and every partial sum, and the result), each erring by an
/// absolute amount of up to η = 2⁻¹⁵⁰ whatever its size. Rounded to nearest, such an error is
/// spread evenly over [−η, η]: of mean zero and mean square η²/3, independent from rounding to
/// rounding, so they add in squares. The tensor cores' adds round toward zero, by up to 2η each
/// in the direction of the sum: their ⌈K/8⌉ + 1 adds may add up, a mean of η each.
pub fn underflow_sq(sums: Sums, terms: usize, k: usize, elements: f64) -> f64 {
    let eta = f64::from(f32::from_bits(1)) / 2.0;
    let roundings = (2 * terms * k + 2) as f64;
    let coherent = match sums {
        Sums::Nearest => 0.0,
        Sums::TensorCores => ((k.div_ceil(GROUP) + 1) as f64 * eta).powi(2),
    };
    elements * (roundings * eta * eta / 3.0 + coherent)
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

/// The limits of the arithmetic a step claims: its roundings, the per-element factor, the
/// expected error and the normwise limit.
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
        self.with_integers(expected_error(r, r, sums, extra, terms, g), g)
    }

    /// Step 11 rounds its operands to integers where FP32 rounds none: the error of that
    /// rounding, independent of the sums', adds to theirs in squares.
    fn with_integers(self, expected: f64, g: &Growth) -> f64 {
        match self {
            Precision::Int8Crt => expected.hypot(g.integer_rounding_sq.sqrt()),
            _ => expected,
        }
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
        self.with_integers(expected_error(self.lower().1, r, sums, extra, terms, g), g)
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

/// γ_K for unit roundoff `u`; infinite once K·u reaches 1 (no bound exists).
pub fn gamma(k: usize, u: f64) -> f64 {
    let ku = k as f64 * u;
    if ku < 1.0 { ku / (1.0 - ku) } else { f64::INFINITY }
}

/// What a dot product of K terms in FP32 may lose to underflow, whatever its terms' size:
/// (K + 1)·2⁻¹⁴⁹, twice the K products' and K + 1 sums' half-units of the smallest subnormal.
pub fn underflow(k: usize) -> f64 {
    (k as f64 + 1.0) * f64::from(f32::from_bits(1))
}

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

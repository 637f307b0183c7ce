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
//!   [`SPLIT_RHO`] for three TF32 products, and for step 11 its operands' unbiased rounding to
//!   integers, [`integer_rounding_sq`]), and λ(n) = max(κ·√(1 + 6·√(6/n)), 18/√n), κ =
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
//! reach, and a result passes there only with the same class ([`ValueClass`]: an f64 beyond f32's
//! largest value counts as the infinity of its sign), as cuBLAS SGEMM gives; the normwise error
//! and its limit are taken over the finite part (the reference's growth is measured on the inputs
//! with their NaN and infinities set to zero, which leaves the finite elements unchanged).
//!
//! # Underflow
//!
//! Near zero FP32's errors are absolute, not relative: a product or a sum that falls among the
//! subnormals (below 2⁻¹²⁶) rounds by up to half the smallest one, η = 2⁻¹⁵⁰, whatever its size,
//! and one below 2⁻¹⁵⁰ becomes zero. The per-element bound therefore adds (K + 1)·2⁻¹⁴⁹
//! ([`underflow`]): room for 2K + 2 such roundings, which no result of normal size notices. The
//! normwise limit carries the same roundings ([`underflow_sq`]): each of mean square η²/3 when
//! rounded to nearest, independent, so that M·N·(2K + 2)·η²/3 joins the expected ‖ΔC‖². Where
//! every product is subnormal (A and B near 10⁻²⁰), it is most of what a correct product errs by.
//!
//! # Where each part is
//!
//! `verify/error_model.rs` holds the limits (the constants, the expected error, λ(n), the
//! per-element factor), `verify/verdict.rs` the comparison with the reference and what it
//! found, and `verify/precision.rs` the claims themselves.

mod error_model;
mod precision;
mod verdict;

pub use crate::numerics::integer_rounding::{INT8_CRT_PRODUCT, integer_exponent, integer_rounding_sq};
pub use error_model::{
    C_RN, C_RZ, GROUP, KAPPA, ROOM, Rounding, SPLIT_RHO, SPLIT_TF32, Sums, U32, U64, UTF32, UTF32_TRUNCATED,
    expected, expected_error, gamma, independent, lambda, underflow, underflow_sq,
};
pub use precision::{Precision, shared_roof};
pub use verdict::{Normwise, ValueClass, Verdict, Worst, share, verify};

#[cfg(test)]
mod tests;
#[cfg(test)]
mod underflow;

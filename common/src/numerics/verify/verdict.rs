//! The verdict: a kernel's C compared element by element with the f64 reference under the
//! claimed precision's limits, NaN, infinities and unwritten elements included, and what the
//! comparison found (the worst element, the normwise error).

use super::error_model::underflow;
use super::precision::Precision;
use crate::matrix::Shape;
use crate::reference::Reference;

/// The element that came closest to, or went furthest past, its bound.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
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
pub enum ValueClass {
    Finite,
    Nan,
    PlusInfinity,
    MinusInfinity,
}

impl ValueClass {
    pub fn of(x: f64) -> ValueClass {
        if x.is_nan() {
            ValueClass::Nan
        } else if x.abs() > f64::from(f32::MAX) {
            if x > 0.0 { ValueClass::PlusInfinity } else { ValueClass::MinusInfinity }
        } else {
            ValueClass::Finite
        }
    }
}

/// |error| / bound: at most 1 for a passing element. Where the reference is NaN or beyond f32's
/// range, the result must be of the same class (0 when it is, infinite when not), or, for a sum
/// that only just passes f32's largest value, finite within the bound; a NaN or infinite result
/// where the reference is finite is infinitely far.
/// An error's share of its bound or limit ([`Worst::ratio`], [`Normwise::ratio`]) for a report,
/// to `digits` decimals and followed by `of` ("0.238 of it"), in powers of ten from a million on;
/// "not finite" where the error is not (a NaN or an infinity in C), never a number.
pub fn share(ratio: f64, digits: usize, of: &str) -> String {
    if !ratio.is_finite() {
        "not finite".to_owned()
    } else if ratio >= 1e6 {
        format!("{ratio:.2e} {of}")
    } else {
        format!("{ratio:.digits$} {of}")
    }
}

fn ratio(got: f64, want: f64, bound: f64) -> f64 {
    let (g, w) = (ValueClass::of(got), ValueClass::of(want));
    if w != ValueClass::Finite && g == w {
        return 0.0;
    }
    let err = (got - want).abs();
    if !err.is_finite() || g != ValueClass::Finite {
        f64::INFINITY
    } else {
        err / bound.max(f64::MIN_POSITIVE)
    }
}

/// The normwise check: ‖ΔC‖_F against λ(n)·ρ·S.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
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

#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Verdict {
    /// The arithmetic the step claims; its limits are those of [`Precision::held_to`].
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
    /// Elements where the reference is NaN and C is NaN too, and where it is infinite and C is
    /// the same infinity (each passes, and is no measure of accuracy).
    pub not_finite: (usize, usize),
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
            "{} · {} of {} outside the per-element bound (worst {} at [{},{}]) · ‖ΔC‖/‖C‖ {:.1e}{}{exact}",
            if self.passed() { "PASS" } else { "FAIL" },
            self.outside,
            self.checked,
            share(self.worst.ratio(), 2, "of it"),
            self.worst.row,
            self.worst.col,
            self.normwise.relative(),
            match share(self.normwise.ratio(), 2, "of its limit") {
                s if self.normwise.ratio().is_finite() => format!(" at {s}"),
                s => format!(", {s}"),
            },
        )
    }
}

/// Compares `got` (row-major M×N) with the reference under the limits `precision` is held to
/// ([`Precision::held_to`]: FP32's for any claim of FP32's accuracy); every element is checked.
pub fn verify(shape: Shape, got: &[f32], reference: &Reference, precision: Precision) -> Verdict {
    let claim = precision;
    let precision = claim.held_to();
    assert_eq!(got.len(), shape.m * shape.n, "C has the wrong number of elements");
    assert_eq!(reference.c.len(), got.len(), "the reference has the wrong number of elements");
    let factor = precision.elementwise_factor(shape.k);
    let floor = underflow(shape.k);
    let mut outside = 0;
    let mut mismatched = 0;
    let (mut nan, mut infinite) = (0, 0);
    let mut worst = None::<(f64, usize)>;
    let (mut diff2, mut ref2) = (0.0f64, 0.0f64);
    for (i, (&g, (&want, &abs))) in got.iter().zip(reference.c.iter().zip(&reference.abs)).enumerate() {
        let g64 = f64::from(g);
        let r = ratio(g64, want, factor * abs + floor);
        // A NaN or an infinity of another class than the reference's gives an infinite ratio.
        if r > 1.0 {
            outside += 1;
        }
        let class = ValueClass::of(want);
        if g64 != want && !(class != ValueClass::Finite && ValueClass::of(g64) == class) {
            mismatched += 1;
        }
        match (class, ValueClass::of(g64) == class) {
            (ValueClass::Nan, true) => nan += 1,
            (ValueClass::PlusInfinity | ValueClass::MinusInfinity, true) => infinite += 1,
            _ => {}
        }
        if worst.is_none_or(|(w, _)| r > w) {
            worst = Some((r, i));
        }
        // The normwise error is over the finite part of C; a result that is not finite there
        // makes it infinite.
        if class == ValueClass::Finite {
            let err = (g64 - want).abs();
            diff2 += if err.is_finite() { err * err } else { f64::INFINITY };
            ref2 += want * want;
        }
    }
    let i = worst.map_or(0, |(_, i)| i);
    Verdict {
        precision: claim,
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
        not_finite: (nan, infinite),
        source: reference.source,
    }
}

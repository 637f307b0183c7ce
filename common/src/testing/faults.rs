//! Planted faults: small text edits that make a step's kernel wrong in the ways verification
//! must catch, compiled with NVRTC and run through the step's own checks.
//!
//! A check is only as good as the wrong result it catches. Each step's tests list, for every
//! class of fault below, the edit that plants it in that step's kernel; [`assert_caught`] runs
//! each edited kernel at the class's shapes and asserts that verification fails, and runs the
//! unedited kernel at the same shapes and asserts that it passes. An edit that no longer
//! matches the source is an error, so the list cannot silently go stale.

use std::collections::BTreeMap;

use anyhow::{Result, anyhow};

use crate::cublas::Blas;
use crate::gpu::{self, Gpu};
use crate::matrix::{Inputs, Shape};
use crate::reference::Reference;
use crate::run;
use crate::step::{GpuStep, Params, Prepared};
use crate::verify::Verdict;

/// What a planted fault does to the result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Class {
    /// Both operands rounded to TF32 (10 mantissa bits) before each multiply.
    Tf32,
    /// Both operands rounded to bf16 (7 mantissa bits) before each multiply.
    Bf16,
    /// The last term of every dot product left out.
    DropTerm,
    /// The last slice of K (BK or TILE terms; 16 where the kernel has no slices) left out.
    DropSlice,
    /// Every element of C written as zero.
    Zero,
    /// The last row of C never written.
    Row,
    /// The last column of C never written.
    Column,
}

const S4096: (usize, usize, usize) = (4096, 4096, 4096);

impl Class {
    /// The shapes the class is run at; a step runs those it serves. Besides the large and deep
    /// shapes, each class has shapes that one block of step 03 can hold.
    pub fn shapes(self) -> &'static [(usize, usize, usize)] {
        match self {
            Class::Tf32 | Class::Bf16 => &[S4096, (1024, 1024, 1024), (256, 256, 16384), (32, 32, 900)],
            Class::DropTerm => &[S4096, (64, 64, 65536), (32, 32, 900)],
            Class::DropSlice => {
                &[S4096, (64, 64, 65536), (2, 2, 65536), (1, 1, 1 << 20), (2, 2, 14528), (1, 1, 29056)]
            }
            Class::Zero => &[
                S4096,
                (1024, 1024, 1024),
                (256, 256, 16384),
                (64, 64, 65536),
                (2, 2, 65536),
                (1, 1, 1 << 20),
                (4097, 4097, 4097),
                (17, 33, 9),
                (32, 32, 900),
                (1, 1, 29056),
            ],
            Class::Row | Class::Column => &[S4096, (4097, 4097, 4097), (17, 33, 9), (32, 32, 900)],
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            Class::Tf32 => "operands rounded to TF32",
            Class::Bf16 => "operands rounded to bf16",
            Class::DropTerm => "last term dropped",
            Class::DropSlice => "last slice dropped",
            Class::Zero => "C all zero",
            Class::Row => "last row not written",
            Class::Column => "last column not written",
        }
    }

    pub const ALL: [Class; 7] =
        [Class::Tf32, Class::Bf16, Class::DropTerm, Class::DropSlice, Class::Zero, Class::Row, Class::Column];

    /// The classes a step of `precision` must catch. A TF32 step rounds its operands to TF32 by
    /// design, and its limits (for TF32's unit roundoff) leave bf16's eightfold larger rounding
    /// within reach, so it plants only the faults that change what is summed or written.
    pub fn for_precision(precision: crate::verify::Precision) -> &'static [Class] {
        match precision {
            crate::verify::Precision::Fp32 | crate::verify::Precision::Tf32x3 => &Self::ALL,
            crate::verify::Precision::Tf32 | crate::verify::Precision::Tf32Truncated => {
                &[Class::DropTerm, Class::DropSlice, Class::Zero, Class::Row, Class::Column]
            }
        }
    }
}

/// One planted fault: text edits (find, replace), each of which must match the source.
#[derive(Clone, Copy, Debug)]
pub struct Fault {
    pub class: Class,
    pub edits: &'static [(&'static str, &'static str)],
}

/// Device functions the precision faults call, put in front of the kernel: round to nearest
/// (ties away from zero) keeping 10 (TF32) or 7 (bf16) stored mantissa bits.
pub const PRELUDE: &str = "\
__device__ __forceinline__ float fault_tf32(float x) { return __uint_as_float((__float_as_uint(x) + 0x1000u) & 0xffffe000u); }
__device__ __forceinline__ float fault_bf16(float x) { return __uint_as_float((__float_as_uint(x) + 0x8000u) & 0xffff0000u); }
";

/// `source` with the fault's edits made, or which edit no longer matches.
pub fn apply(source: &str, fault: &Fault) -> Result<String> {
    let edited = super::apply_edits(source, fault.edits).map_err(|e| anyhow!("the {:?} {e}", fault.class))?;
    Ok(format!("{PRELUDE}{edited}"))
}

/// Every class has an edit, and every edit matches the step's kernel (no GPU needed).
pub fn assert_faults_apply(step: &GpuStep, faults: &[Fault]) {
    for &class in Class::for_precision(step.precision) {
        assert!(
            faults.iter().any(|f| f.class == class),
            "{}: no planted fault of class {class:?}",
            step.name
        );
    }
    for f in faults {
        let edited = apply(step.source, f).unwrap_or_else(|e| panic!("{}: {e}", step.name));
        assert_ne!(edited, format!("{PRELUDE}{}", step.source));
    }
}

/// Every edited kernel compiles for sm_90 (no GPU needed, only NVRTC).
pub fn assert_faults_compile(step: &GpuStep, faults: &[Fault]) {
    for f in faults {
        edited(step, f)
            .compile(&Params::defaults(step.params), "sm_90")
            .unwrap_or_else(|e| panic!("{:?}: {e}", f.class));
    }
}

fn edited(step: &GpuStep, fault: &Fault) -> GpuStep {
    let source = apply(step.source, fault).unwrap_or_else(|e| panic!("{}: {e}", step.name));
    GpuStep { source: Box::leak(source.into_boxed_str()), ..*step }
}

/// One run: which kernel, at which shape, on which inputs, and the verdict.
pub struct Outcome {
    pub fault: Option<Class>,
    pub shape: Shape,
    /// Small-integer inputs, whose product must come out exact.
    pub exact: bool,
    pub verdict: Verdict,
}

impl Outcome {
    /// A Markdown table row: step, fault, shape, verdict, per-element and normwise ratios.
    pub fn row(&self, step: &str) -> String {
        let v = &self.verdict;
        let Shape { m, n, k } = self.shape;
        format!(
            "| {step} | {} | {m}×{n}×{k}{} | {} | {} | {:.2e} | {} |",
            self.fault.map_or("none (correct kernel)", Class::describe),
            if self.exact { " (exact inputs)" } else { "" },
            if v.passed() { "PASS" } else { "FAIL" },
            ratio(v.worst.ratio()),
            v.normwise.relative(),
            ratio(v.normwise.ratio()),
        )
    }
}

fn ratio(r: f64) -> String {
    if r.is_finite() { format!("{r:.3}") } else { "NaN".to_owned() }
}

/// The header of [`Outcome::row`]'s table.
pub const TABLE_HEADER: &str = "| step | planted fault | shape | verdict | worst element / its bound | ‖ΔC‖/‖C‖ | ‖ΔC‖ / normwise limit |\n|---|---|---|---|---|---|---|";

/// Whether `class` is checked at `shape` on exact inputs rather than random ones. TF32's limits
/// are wide enough for its 10-bit operands, and some faults fit inside them: one dropped term at
/// K = 65 536, and the 32 terms of a dropped slice in a single dot product of K = 29 056 or 2²⁰
/// (at 2²⁰ they are smaller than the product's own rounding error). On small integers the
/// product is exact, and the missing terms show.
pub fn exact_only(
    precision: crate::verify::Precision,
    class: Class,
    (m, n, k): (usize, usize, usize),
) -> bool {
    precision.is_tf32()
        && match class {
            Class::DropSlice => m * n == 1,
            Class::DropTerm => k >= 65_536,
            _ => false,
        }
}

/// Runs every fault at the shapes of its class that the step serves, and the correct kernel at
/// all of them. Panics unless every fault fails verification at every shape and the correct
/// kernel passes at every shape with room (under half the normwise limit). Prints the table.
pub fn assert_caught(step: &GpuStep, faults: &[Fault]) -> Vec<Outcome> {
    assert_faults_apply(step, faults);
    let gpu = gpu::open(step.name, 0).unwrap();
    let blas = crate::cublas::present().then(|| Blas::new(gpu.stream.clone()).unwrap());
    let params = Params::defaults(step.params);
    let serves = |s: (usize, usize, usize)| {
        let shape = Shape::new(s.0, s.1, s.2).unwrap();
        step.validate(&params, shape, &gpu.info.limits).is_ok()
    };
    let mut cases = Cases { gpu: &gpu, blas: blas.as_ref(), inputs: BTreeMap::new() };
    let mut outcomes = Vec::new();
    let mut all_shapes = Vec::new();
    for f in faults {
        let shapes: Vec<_> = f.class.shapes().iter().copied().filter(|&s| serves(s)).collect();
        assert!(!shapes.is_empty(), "{}: no shape of {:?} is served", step.name, f.class);
        let faulty = edited(step, f);
        let prepared = Prepared::new(&gpu, &faulty, params.clone()).unwrap();
        for s in shapes {
            let exact = exact_only(step.precision, f.class, s);
            let v = if exact {
                super::Checker::new(&faulty, params.clone()).unwrap().check(s, 900, true).unwrap()
            } else {
                cases.verify(&prepared, s).unwrap()
            };
            outcomes.push(Outcome { fault: Some(f.class), shape: v.0, exact, verdict: v.1 });
            if !exact && !all_shapes.contains(&s) {
                all_shapes.push(s);
            }
        }
    }
    let prepared = Prepared::new(&gpu, step, params.clone()).unwrap();
    for s in all_shapes {
        let v = cases.verify(&prepared, s).unwrap();
        outcomes.push(Outcome { fault: None, shape: v.0, exact: false, verdict: v.1 });
    }

    println!("{TABLE_HEADER}");
    for o in &outcomes {
        println!("{}", o.row(step.name));
    }
    let missed: Vec<String> = outcomes
        .iter()
        .filter(|o| match o.fault {
            Some(_) => o.verdict.passed(),
            None => !o.verdict.passed() || o.verdict.normwise.ratio() > 0.5,
        })
        .map(|o| o.row(step.name))
        .collect();
    assert!(
        missed.is_empty(),
        "{}: faults not caught, or correct results without room:\n{}",
        step.name,
        missed.join("\n")
    );
    outcomes
}

/// Inputs and references, made once per shape and shared by every kernel run at that shape.
struct Cases<'a> {
    gpu: &'a Gpu,
    blas: Option<&'a Blas>,
    inputs: BTreeMap<(usize, usize, usize), (Inputs, Reference)>,
}

impl Cases<'_> {
    fn verify(&mut self, prepared: &Prepared, s: (usize, usize, usize)) -> Result<(Shape, Verdict)> {
        if !self.inputs.contains_key(&s) {
            let shape = Shape::new(s.0, s.1, s.2).map_err(|e| anyhow!(e))?;
            let inputs = Inputs::random(shape, 42);
            let reference = run::reference(self.gpu, self.blas, &inputs)?;
            self.inputs.insert(s, (inputs, reference));
        }
        let (inputs, reference) = &self.inputs[&s];
        Ok((inputs.shape, super::verified_run(self.gpu, prepared, inputs, reference)?))
    }
}

/// The tests every GPU step runs on its planted faults, on exact inputs and on edited copies of
/// its kernel, written once: `planted_fault_tests!(STEP, FAULTS, shapes for exact mode, BIN);`
/// in the step's `tests/kernel.rs`.
#[macro_export]
macro_rules! planted_fault_tests {
    ($step:expr, $faults:expr, $exact_shapes:expr, $bin:expr) => {
        #[test]
        fn planted_faults_apply_to_the_kernel() {
            $crate::testing::faults::assert_faults_apply(&$step, $faults);
        }

        #[test]
        #[ignore = "needs libnvrtc"]
        fn nvrtc_planted_faults_compile() {
            $crate::testing::faults::assert_faults_compile(&$step, $faults);
        }

        #[test]
        #[ignore = "needs an NVIDIA GPU"]
        fn gpu_planted_faults_are_caught() {
            $crate::testing::faults::assert_caught(&$step, $faults);
        }

        #[test]
        #[ignore = "needs an NVIDIA GPU"]
        fn gpu_exact_inputs_give_the_exact_product() {
            $crate::testing::assert_exact(&$step, $exact_shapes);
        }

        #[test]
        #[ignore = "needs libnvrtc"]
        fn nvrtc_compile_only_needs_no_gpu_and_shows_broken_edits() {
            $crate::testing::assert_compile_only($bin, &$step);
        }

        #[test]
        #[ignore = "needs an NVIDIA GPU"]
        fn gpu_an_edited_copy_of_the_kernel_runs_through_the_program() {
            let zero = $faults.iter().find(|f| f.class == $crate::testing::faults::Class::Zero).unwrap();
            $crate::testing::assert_kernel_option($bin, &$step, zero);
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::Precision;

    #[test]
    fn only_tf32_faults_within_tf32_limits_go_to_exact_inputs() {
        assert!(exact_only(Precision::Tf32, Class::DropSlice, (1, 1, 1 << 20)));
        assert!(!exact_only(Precision::Tf32, Class::DropSlice, (2, 2, 65_536)));
        assert!(exact_only(Precision::Tf32, Class::DropTerm, (64, 64, 65_536)));
        assert!(!exact_only(Precision::Tf32, Class::DropTerm, (4096, 4096, 4096)));
        assert!(!exact_only(Precision::Fp32, Class::DropSlice, (1, 1, 1 << 20)));
        assert!(!exact_only(Precision::Tf32, Class::Zero, (1, 1, 1 << 20)));
        assert!(!Class::for_precision(Precision::Tf32).contains(&Class::Tf32));
        assert_eq!(Class::for_precision(Precision::Fp32), &Class::ALL);
    }
}

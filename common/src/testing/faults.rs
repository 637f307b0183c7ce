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
use crate::measure;
use crate::params::Params;
use crate::reference::Reference;
use crate::step::GpuStep;
use crate::step_kernel::StepKernel;
use crate::verify::{ROOM, Verdict};

/// What a planted fault does to the result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum FaultClass {
    /// Both operands rounded to TF32 (10 fraction bits), or, for FP32 from three TF32 products,
    /// both kept in one TF32 part.
    Tf32,
    /// A alone kept in one TF32 part (FP32 from three TF32 products).
    Tf32A,
    /// B alone kept in one TF32 part.
    Tf32B,
    /// Both operands rounded to bf16 (7 fraction bits), as the step rounds to TF32: to nearest,
    /// or truncated where the step truncates.
    Bf16,
    /// A alone in bf16, B as the step has it.
    Bf16A,
    /// B alone in bf16, A as the step has it.
    Bf16B,
    /// Operands truncated to TF32 where the step claims rounding to nearest.
    Truncated,
    /// Of three TF32 products, A's small part times B's big part left out.
    DropASmall,
    /// Of three TF32 products, A's big part times B's small part left out.
    DropBSmall,
    /// Of three TF32 products, the leading one (big times big) left out.
    DropLeading,
    /// The last term of every dot product left out.
    DropTerm,
    /// The last slice of K (BK or TILE terms; 16 where the kernel has no slices) left out.
    DropSlice,
    /// Of a product whose K is split between blocks, one block's slice left out of the sum.
    SplitDropped,
    /// Of a product whose K is split between blocks, one block's slice added twice.
    SplitDoubled,
    /// Every element of C written as zero.
    Zero,
    /// The last row of C never written.
    Row,
    /// Of a product from residues, the integers kept 6 bits short of what the moduli can hold.
    ScaleTruncated,
    /// Of a product from residues, the last modulus's product left out of the reconstruction.
    DropModulus,
    /// Of a product from residues, one modulus's reconstruction weight wrong.
    WrongWeight,
    /// The last column of C never written.
    Column,
    /// Of a persistent kernel's schedule, the last tile never handed out.
    TileSkipped,
    /// Of a persistent kernel's schedule, one tile handed out twice and the tile it stands in
    /// for never.
    TileTwice,
    /// Of a cluster that shares a tile by multicast, a block refilling a buffer without waiting
    /// for its peers to be done with it.
    PeerNotAwaited,
}

const S4096: (usize, usize, usize) = (4096, 4096, 4096);

/// Where the precision faults run: every shape has at least 2¹⁸ terms, one has K = 65536, one
/// is a single 32-deep slice (where step 09's tensor-core sums weigh most), and one fits in a
/// block of step 03. At each, every precision's limit fails the next lower precision by a
/// margin of two (`verify`'s tests check the model says so).
const PRECISION_SHAPES: &[(usize, usize, usize)] =
    &[S4096, (1024, 1024, 1024), (256, 256, 16384), (64, 64, 65536), (1024, 1024, 32), (32, 32, 900)];

/// Shapes whose K step 10's rule splits between blocks on 114 to 144 SMs (its tests check it).
pub const SPLIT_SHAPES: &[(usize, usize, usize)] = &[
    (64, 64, 65536),
    (128, 128, 16384),
    (16, 4096, 4096),
    (2, 2, 65536),
    (33, 17, 100_003),
    (1, 4096, 4096),
];

impl FaultClass {
    /// The shapes the class is run at; a step runs those it serves. Besides the large and deep
    /// shapes, each class has shapes that one block of step 03 can hold.
    pub fn shapes(self) -> &'static [(usize, usize, usize)] {
        match self {
            FaultClass::DropTerm => &[S4096, (64, 64, 65536), (32, 32, 900)],
            FaultClass::DropSlice => {
                &[S4096, (64, 64, 65536), (2, 2, 65536), (1, 1, 1 << 20), (2, 2, 14528), (1, 1, 29056)]
            }
            // Shapes whose K step 10 splits between blocks on an H100 or H200.
            FaultClass::SplitDropped | FaultClass::SplitDoubled => SPLIT_SHAPES,
            FaultClass::Zero => &[
                S4096,
                (1024, 1024, 1024),
                (256, 256, 16384),
                (64, 64, 65536),
                (2, 2, 65536),
                (1, 1, 1 << 20),
                (4097, 4097, 4097),
                (17, 33, 257),
                (32, 32, 900),
                (1, 1, 29056),
            ],
            // The small shapes' K is 256 or more: below it step 09's FP32 path computes every row,
            // around the kernel these faults are planted in (Zero's too).
            FaultClass::Row | FaultClass::Column => {
                &[S4096, (4097, 4097, 4097), (17, 33, 257), (32, 32, 900)]
            }
            FaultClass::TileSkipped => {
                &[S4096, (4097, 4097, 4097), (1024, 1024, 4096), (300, 700, 129), (17, 33, 9)]
            }
            // A tile done twice in place of another needs two tiles.
            FaultClass::TileTwice => &[S4096, (4097, 4097, 4097), (1024, 1024, 4096), (300, 700, 129)],
            // Deep products, where blocks drift apart over many slices. (At 2048×2048×8192 the
            // blocks of a cluster stayed in step on every run on an H100: no shape there.)
            FaultClass::PeerNotAwaited => &[S4096, (1024, 1024, 32768), (4097, 4097, 4097)],
            FaultClass::DropModulus | FaultClass::WrongWeight => {
                &[S4096, (1024, 1024, 1024), (64, 64, 65536), (4097, 4097, 4097), (17, 33, 9), (32, 32, 900)]
            }
            // Every other class computes in a precision below the claim.
            _ => PRECISION_SHAPES,
        }
    }

    /// Whether the fault computes in a precision below the step's claim, rather than summing or
    /// writing the wrong thing.
    pub fn is_precision(self) -> bool {
        !Self::WRITES.contains(&self)
            && !matches!(
                self,
                FaultClass::DropModulus
                    | FaultClass::WrongWeight
                    | FaultClass::TileSkipped
                    | FaultClass::TileTwice
                    | FaultClass::PeerNotAwaited
            )
    }

    pub fn describe(self) -> &'static str {
        match self {
            FaultClass::Tf32 => "operands rounded to TF32",
            FaultClass::Tf32A => "A in one TF32 part",
            FaultClass::Tf32B => "B in one TF32 part",
            FaultClass::Bf16 => "operands rounded to bf16",
            FaultClass::Bf16A => "A in bf16",
            FaultClass::Bf16B => "B in bf16",
            FaultClass::Truncated => "TF32 truncated, not rounded",
            FaultClass::DropASmall => "product A small·B big dropped",
            FaultClass::DropBSmall => "product A big·B small dropped",
            FaultClass::DropLeading => "product A big·B big dropped",
            FaultClass::DropTerm => "last term dropped",
            FaultClass::DropSlice => "last slice dropped",
            FaultClass::SplitDropped => "a split's slice dropped",
            FaultClass::SplitDoubled => "a split's slice doubled",
            FaultClass::Zero => "C all zero",
            FaultClass::Row => "last row not written",
            FaultClass::Column => "last column not written",
            FaultClass::ScaleTruncated => "integers 6 bits short",
            FaultClass::DropModulus => "a modulus left out",
            FaultClass::WrongWeight => "a wrong reconstruction weight",
            FaultClass::TileSkipped => "a tile never scheduled",
            FaultClass::TileTwice => "a tile scheduled twice",
            FaultClass::PeerNotAwaited => "a buffer refilled before the peer is done",
        }
    }

    /// How far past its limit the fault must land: twice for a lower precision (the margin the
    /// limits are built for), once for the rest. Truncation where rounding to nearest is
    /// claimed costs 2.6 times the error, which no limit with room for correct results can
    /// turn into a margin of two: it must fail, by less (the book's appendix "The error model").
    pub fn margin(self) -> f64 {
        if self.is_precision() && self != FaultClass::Truncated { 2.0 } else { 1.0 }
    }

    const WRITES: [FaultClass; 5] =
        [FaultClass::DropTerm, FaultClass::DropSlice, FaultClass::Zero, FaultClass::Row, FaultClass::Column];

    /// The classes a step of `precision` must catch: what it sums and writes, and the
    /// precisions just below its claim.
    pub fn for_precision(precision: crate::verify::Precision) -> Vec<FaultClass> {
        use crate::verify::Precision;
        let lower: &[FaultClass] = match precision {
            Precision::Fp32 => &[FaultClass::Tf32, FaultClass::Bf16],
            Precision::Tf32 => {
                &[FaultClass::Bf16A, FaultClass::Bf16B, FaultClass::Bf16, FaultClass::Truncated]
            }
            Precision::Tf32Truncated => &[FaultClass::Bf16A, FaultClass::Bf16B, FaultClass::Bf16],
            Precision::Tf32x3 => &[
                FaultClass::Tf32A,
                FaultClass::Tf32B,
                FaultClass::Tf32,
                FaultClass::Bf16,
                FaultClass::DropASmall,
                FaultClass::DropBSmall,
                FaultClass::DropLeading,
            ],
            Precision::Int8Crt => {
                &[FaultClass::ScaleTruncated, FaultClass::DropModulus, FaultClass::WrongWeight]
            }
        };
        lower.iter().chain(&Self::WRITES).copied().collect()
    }
}

/// One planted fault: text edits (find, replace), each of which must match the source.
#[derive(Clone, Copy, Debug)]
pub struct PlantedFault {
    pub class: FaultClass,
    pub edits: &'static [(&'static str, &'static str)],
}

/// Device functions the precision faults call, put in front of the kernel: round to nearest
/// (ties away from zero) keeping 10 (TF32) or 7 (bf16) stored mantissa bits.
pub const PRELUDE: &str = "\
__device__ __forceinline__ float fault_tf32(float x) { return __uint_as_float((__float_as_uint(x) + 0x1000u) & 0xffffe000u); }
__device__ __forceinline__ float fault_bf16(float x) { return __uint_as_float((__float_as_uint(x) + 0x8000u) & 0xffff0000u); }
";

/// `source` with the fault's edits made, or which edit no longer matches.
pub fn apply(source: &str, fault: &PlantedFault) -> Result<String> {
    let edited = super::apply_edits(source, fault.edits).map_err(|e| anyhow!("the {:?} {e}", fault.class))?;
    Ok(format!("{PRELUDE}{edited}"))
}

/// Every class has an edit, and every edit matches the step's kernel (no GPU needed).
pub fn assert_faults_apply(step: &GpuStep, faults: &[PlantedFault]) {
    for class in FaultClass::for_precision(step.precision) {
        assert!(
            faults.iter().any(|f| f.class == class),
            "{}: no planted fault of class {class:?}",
            step.name
        );
    }
    for f in faults {
        let edited = apply(&super::whole(step), f).unwrap_or_else(|e| panic!("{}: {e}", step.name));
        assert_ne!(edited, format!("{PRELUDE}{}", super::whole(step)));
    }
}

/// Every edited kernel compiles for sm_90 (no GPU needed, only NVRTC).
pub fn assert_faults_compile(step: &GpuStep, faults: &[PlantedFault]) {
    for f in faults {
        edited(step, f)
            .compile(&Params::defaults(step.params), "sm_90")
            .unwrap_or_else(|e| panic!("{:?}: {e}", f.class));
    }
}

fn edited(step: &GpuStep, fault: &PlantedFault) -> GpuStep {
    let source = apply(&super::whole(step), fault).unwrap_or_else(|e| panic!("{}: {e}", step.name));
    GpuStep { source: Box::leak(source.into_boxed_str()), ..*step }
}

/// One run: which kernel, at which shape, on which inputs, and the verdict.
pub struct FaultRun {
    pub fault: Option<FaultClass>,
    pub shape: Shape,
    /// Small-integer inputs, whose product must come out exact.
    pub exact: bool,
    pub verdict: Verdict,
}

impl FaultRun {
    /// A Markdown table row: step, fault, shape, verdict, per-element and normwise ratios.
    pub fn row(&self, step: &str) -> String {
        let v = &self.verdict;
        let Shape { m, n, k } = self.shape;
        format!(
            "| {step} | {} | {m}×{n}×{k}{} | {} | {} | {:.2e} | {} |",
            self.fault.map_or("none (correct kernel)", FaultClass::describe),
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

/// The header of [`FaultRun::row`]'s table.
pub const TABLE_HEADER: &str = "| step | planted fault | shape | verdict | worst element / its bound | ‖ΔC‖/‖C‖ | ‖ΔC‖ / normwise limit |\n|---|---|---|---|---|---|---|";

/// Whether `class` is among the classes `only` names (every class when it names none).
fn chosen(only: Option<&str>, class: FaultClass) -> bool {
    only.is_none_or(|o| o.split(',').any(|name| name.trim() == format!("{class:?}")))
}

/// Whether `class` is checked at `shape` on exact inputs rather than random ones: a dropped slice
/// in a single dot product. Its error is a random sum of the slice's terms, and for a single
/// element the limit must allow for an unlucky rounding (18 times the expected error): for one
/// seed in twenty or so the missing terms of an FP32 product cancel below it, and under TF32's
/// wider limits far more often (at K = 2²⁰ they weigh less than the product's own rounding
/// error). On small integers the product is exact, and the missing terms show at any K.
pub fn exact_only(class: FaultClass, (m, n, _): (usize, usize, usize)) -> bool {
    class == FaultClass::DropSlice && m * n == 1
}

/// Runs every fault at the shapes of its class that the step serves, and the correct kernel at
/// all of them. Panics unless every fault fails verification at every shape (a lower precision
/// by twice its normwise limit) and the correct kernel passes at every shape with room (under
/// [`ROOM`] of the normwise limit). Prints the table.
///
/// `PLANTED_FAULTS=TileSkipped,PeerNotAwaited` (the classes' names, comma-separated) runs those
/// classes alone, for a device whose calls are too short for a step's every fault at once.
pub fn assert_caught(step: &GpuStep, faults: &[PlantedFault]) -> Vec<FaultRun> {
    assert_faults_apply(step, faults);
    let only = std::env::var("PLANTED_FAULTS").ok();
    let faults: Vec<PlantedFault> =
        faults.iter().copied().filter(|f| chosen(only.as_deref(), f.class)).collect();
    assert!(!faults.is_empty(), "PLANTED_FAULTS={only:?} names none of {}'s faults", step.name);
    let faults = faults.as_slice();
    let gpu = gpu::open(step.name, 0).unwrap();
    let blas = crate::cublas::present().then(|| Blas::new(gpu.stream.clone()).unwrap());
    // A step that chooses per shape runs at its choice for each shape.
    let kernels = crate::measure::StepKernels::defaults(&gpu, step).unwrap();
    let serves = |s: (usize, usize, usize)| {
        let shape = Shape::new(s.0, s.1, s.2).unwrap();
        step.validate(&kernels.params(&gpu, shape).unwrap(), shape, &gpu.info.limits).is_ok()
    };
    let mut cases = Cases { gpu: &gpu, blas: blas.as_ref(), inputs: BTreeMap::new() };
    let mut outcomes = Vec::new();
    let mut all_shapes = Vec::new();
    for f in faults {
        let shapes: Vec<_> = f.class.shapes().iter().copied().filter(|&s| serves(s)).collect();
        assert!(!shapes.is_empty(), "{}: no shape of {:?} is served", step.name, f.class);
        let faulty = edited(step, f);
        let faulty_kernels = crate::measure::StepKernels::defaults(&gpu, &faulty).unwrap();
        for s in shapes {
            let exact = exact_only(f.class, s);
            let v = if exact {
                super::Checker::defaults(&faulty).unwrap().check(s, 900, true).unwrap()
            } else {
                let shape = Shape::new(s.0, s.1, s.2).unwrap();
                cases.verify(&faulty_kernels.at(&gpu, shape).unwrap(), s).unwrap()
            };
            outcomes.push(FaultRun { fault: Some(f.class), shape: v.0, exact, verdict: v.1 });
            if !exact && !all_shapes.contains(&s) {
                all_shapes.push(s);
            }
        }
    }
    for s in all_shapes {
        let shape = Shape::new(s.0, s.1, s.2).unwrap();
        let v = cases.verify(&kernels.at(&gpu, shape).unwrap(), s).unwrap();
        outcomes.push(FaultRun { fault: None, shape: v.0, exact: false, verdict: v.1 });
    }

    println!("{TABLE_HEADER}");
    for o in &outcomes {
        println!("{}", o.row(step.name));
    }
    let missed: Vec<String> = outcomes
        .iter()
        .filter(|o| match o.fault {
            Some(class) => o.verdict.passed() || (!o.exact && o.verdict.normwise.ratio() < class.margin()),
            None => !o.verdict.passed() || o.verdict.normwise.ratio() > ROOM,
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
    fn verify(&mut self, step_kernel: &StepKernel, s: (usize, usize, usize)) -> Result<(Shape, Verdict)> {
        if !self.inputs.contains_key(&s) {
            let shape = Shape::new(s.0, s.1, s.2).map_err(|e| anyhow!(e))?;
            let inputs = Inputs::random(shape, 42);
            let reference = measure::reference(self.gpu, self.blas, &inputs)?;
            self.inputs.insert(s, (inputs, reference));
        }
        let (inputs, reference) = &self.inputs[&s];
        Ok((inputs.shape, super::verified_run(self.gpu, step_kernel, inputs, reference)?))
    }
}

/// The tests every GPU step runs on its planted faults, on exact inputs and on edited copies of
/// its kernel, written once: `planted_fault_tests!(STEP, FAULTS, shapes for exact mode, BIN);`
/// in the step's `tests/kernel.rs`.
#[macro_export]
macro_rules! planted_fault_tests {
    ($step:expr, $faults:expr, $exact_shapes:expr, $bin:expr) => {
        #[test]
        fn every_architecture_is_served_or_refused_in_one_sentence() {
            $crate::testing::assert_archs_refused_or_served(&$step);
        }

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
            let zero = $faults.iter().find(|f| f.class == $crate::testing::faults::FaultClass::Zero).unwrap();
            $crate::testing::assert_kernel_option($bin, &$step, zero);
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::Precision;

    /// Every precision a step can claim.
    const ALL: [Precision; 5] =
        [Precision::Fp32, Precision::Tf32, Precision::Tf32Truncated, Precision::Tf32x3, Precision::Int8Crt];

    #[test]
    fn planted_faults_chosen_by_name() {
        assert!(chosen(None, FaultClass::Zero));
        assert!(chosen(Some("TileSkipped, PeerNotAwaited"), FaultClass::PeerNotAwaited));
        assert!(!chosen(Some("TileSkipped,PeerNotAwaited"), FaultClass::TileTwice));
        assert!(!chosen(Some("Tile"), FaultClass::TileSkipped));
    }

    #[test]
    fn only_single_dot_products_missing_a_slice_go_to_exact_inputs() {
        assert!(exact_only(FaultClass::DropSlice, (1, 1, 1 << 20)));
        assert!(exact_only(FaultClass::DropSlice, (1, 1, 29_056)));
        assert!(!exact_only(FaultClass::DropSlice, (2, 2, 65_536)));
        assert!(!exact_only(FaultClass::DropTerm, (64, 64, 65_536)));
        assert!(!exact_only(FaultClass::Zero, (1, 1, 1 << 20)));
    }

    #[test]
    fn every_claim_plants_the_precisions_below_it() {
        assert_eq!(FaultClass::for_precision(Precision::Fp32)[..2], [FaultClass::Tf32, FaultClass::Bf16]);
        let tf32 = FaultClass::for_precision(Precision::Tf32);
        assert!(
            tf32.contains(&FaultClass::Bf16A)
                && tf32.contains(&FaultClass::Bf16B)
                && tf32.contains(&FaultClass::Truncated)
        );
        assert!(!tf32.contains(&FaultClass::Tf32));
        assert!(!FaultClass::for_precision(Precision::Tf32Truncated).contains(&FaultClass::Truncated));
        let x3 = FaultClass::for_precision(Precision::Tf32x3);
        for c in [
            FaultClass::Tf32A,
            FaultClass::Tf32B,
            FaultClass::DropASmall,
            FaultClass::DropBSmall,
            FaultClass::DropLeading,
        ] {
            assert!(x3.contains(&c), "{c:?}");
        }
        let crt = FaultClass::for_precision(Precision::Int8Crt);
        for c in [FaultClass::ScaleTruncated, FaultClass::DropModulus, FaultClass::WrongWeight] {
            assert!(crt.contains(&c), "{c:?}");
        }
        assert!(FaultClass::ScaleTruncated.is_precision());
        assert!(!FaultClass::DropModulus.is_precision() && !FaultClass::WrongWeight.is_precision());
        for p in ALL {
            assert!(FaultClass::for_precision(p).ends_with(&FaultClass::WRITES));
        }
    }

    /// Every precision fault runs where each claim separates from the next lower precision,
    /// with K = 65536 among the shapes and at least 2¹⁸ terms in each.
    #[test]
    fn precision_faults_run_where_the_limits_separate() {
        assert!(PRECISION_SHAPES.iter().any(|&(_, _, k)| k >= 65_536));
        for &(m, n, k) in PRECISION_SHAPES {
            assert!(m * n * k >= 1 << 18);
            let shape = crate::Shape::new(m, n, k).unwrap();
            for p in ALL {
                assert!(p.separates(shape), "{p} at {shape}");
            }
        }
    }
}

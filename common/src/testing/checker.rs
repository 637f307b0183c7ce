//! The GPU checker: a step compiled once per parameter set, run on output poisoned with NaN and
//! verified against the f64 reference, shape by shape, beside cuBLAS SGEMM, or over shapes drawn
//! by a property test.

use anyhow::{Result, anyhow};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

use crate::cublas::{self, Blas};
use crate::gpu::{self, Gpu};
use crate::matrix::{Inputs, Shape};
use crate::measure::{self, Buffers, Recipe, StepKernels};
use crate::params::Params;
use crate::reference::Reference;
use crate::step::GpuStep;
use crate::step_kernel::StepKernel;
use crate::verify::{self, Verdict};

/// A step compiled on the GPU, ready to check any number of shapes.
pub struct Checker<'a> {
    kernels: StepKernels<'a>,
    blas: Option<Blas>,
    gpu: Gpu,
}

impl<'a> Checker<'a> {
    pub fn new(step: &'a GpuStep, params: Params) -> Result<Self> {
        let gpu = gpu::open(step.name, 0)?;
        let blas = if cublas::present() { Some(Blas::new(gpu.stream.clone())?) } else { None };
        let kernels = StepKernels::fixed(&gpu, step, params)?;
        Ok(Self { kernels, blas, gpu })
    }

    /// The step at its defaults, or at its choice for each shape where it chooses.
    pub fn defaults(step: &'a GpuStep) -> Result<Self> {
        let gpu = gpu::open(step.name, 0)?;
        let blas = if cublas::present() { Some(Blas::new(gpu.stream.clone())?) } else { None };
        let kernels = StepKernels::defaults(&gpu, step)?;
        Ok(Self { kernels, blas, gpu })
    }

    /// Runs the step on output poisoned with NaN and verifies C against the f64 reference
    /// (cuBLAS DGEMM when present, else the CPU), under the step's claimed precision; `exact`
    /// takes small-integer inputs, whose result must match exactly.
    pub fn check(
        &self,
        (m, n, k): (usize, usize, usize),
        seed: u64,
        exact: bool,
    ) -> Result<(Shape, Verdict)> {
        let shape = Shape::new(m, n, k).map_err(|e| anyhow!(e))?;
        let inputs = Inputs::new(shape, seed, exact);
        let reference = measure::reference(&self.gpu, self.blas.as_ref(), &inputs)?;
        let step_kernel = self.kernels.at(&self.gpu, shape)?;
        Ok((shape, verified_run(&self.gpu, &step_kernel, &inputs, &reference)?))
    }

    /// Runs the step on `inputs` (output poisoned with NaN) and verifies C against `reference`
    /// under the step's claimed precision; None where the step does not serve the shape.
    pub fn check_inputs(&self, inputs: &Inputs, reference: &Reference) -> Result<Option<Verdict>> {
        let shape = inputs.shape;
        let Ok(params) = self.kernels.params(&self.gpu, shape) else { return Ok(None) };
        if self.kernels.step().validate(&params, shape, &self.gpu.info.limits).is_err() {
            return Ok(None);
        }
        let step_kernel = self.kernels.at(&self.gpu, shape)?;
        Ok(Some(verified_run(&self.gpu, &step_kernel, inputs, reference)?))
    }

    /// Whether the step serves `shape` (at its parameters there).
    pub fn serves(&self, shape: Shape) -> bool {
        self.kernels
            .params(&self.gpu, shape)
            .is_ok_and(|p| self.kernels.step().validate(&p, shape, &self.gpu.info.limits).is_ok())
    }

    /// cuBLAS SGEMM's C on `inputs`.
    pub fn sgemm(&self, inputs: &Inputs) -> Result<Vec<f32>> {
        let blas = self.blas.as_ref().ok_or_else(|| anyhow!("cuBLAS is needed"))?;
        let bufs = Buffers::upload(&self.gpu, inputs)?;
        Ok(measure::measure_cublas(&self.gpu, blas, &bufs, Recipe::checked())?.0)
    }

    /// The f64 reference of `inputs` (cuBLAS DGEMM when present, else the CPU).
    pub fn reference(&self, inputs: &Inputs) -> Result<Reference> {
        measure::reference(&self.gpu, self.blas.as_ref(), inputs)
    }

    /// C from one launch on random inputs drawn with `seed`, the output poisoned with NaN first.
    pub fn result(&self, (m, n, k): (usize, usize, usize), seed: u64) -> Result<Vec<f32>> {
        let shape = Shape::new(m, n, k).map_err(|e| anyhow!(e))?;
        let inputs = Inputs::new(shape, seed, false);
        let step_kernel = self.kernels.at(&self.gpu, shape)?;
        Ok(poisoned_result(&self.gpu, &step_kernel, &inputs)?.0)
    }

    /// The GPU this checker runs on.
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }
}

/// `step_kernel` on poisoned output, its first product and the next, verified against
/// `reference` under the step's claimed precision (the next's verdict where it differs and
/// fails).
pub fn verified_run(
    gpu: &Gpu,
    step_kernel: &StepKernel,
    inputs: &Inputs,
    reference: &Reference,
) -> Result<Verdict> {
    let mut bufs = Buffers::upload(gpu, inputs)?;
    let measured = measure::measure(gpu, step_kernel, &mut bufs, Recipe::checked())?;
    Ok(measured.decisive(reference, step_kernel.step.precision))
}

/// C from one launch of `step_kernel` on `inputs` with the output poisoned with NaN, and the
/// buffers it ran on.
fn poisoned_result(gpu: &Gpu, step_kernel: &StepKernel, inputs: &Inputs) -> Result<(Vec<f32>, Buffers)> {
    let mut bufs = Buffers::upload(gpu, inputs)?;
    let recipe = Recipe { next: false, ..Recipe::checked() };
    let c = measure::measure(gpu, step_kernel, &mut bufs, recipe)?.c;
    Ok((c, bufs))
}

/// Runs `step` with `params` on each shape, on output poisoned with NaN, and verifies each
/// against the f64 reference (cuBLAS DGEMM when present, else the CPU).
pub fn gpu_check(
    step: &GpuStep,
    params: Params,
    shapes: &[(usize, usize, usize)],
) -> Result<Vec<(Shape, Verdict)>> {
    let checker = Checker::new(step, params)?;
    shapes.iter().enumerate().map(|(i, &s)| checker.check(s, 1000 + i as u64, false)).collect()
}

/// For each shape, on the same random inputs and against the same f64 reference (cuBLAS
/// DGEMM): the step's result (default parameters) held to FP32's limits, and cuBLAS SGEMM's
/// ‖ΔC‖/‖C‖.
pub fn errors_beside_sgemm(
    step: &GpuStep,
    shapes: &[(usize, usize, usize)],
) -> Result<Vec<(Shape, Verdict, f64)>> {
    let checker = Checker::defaults(step)?;
    let mut out = Vec::new();
    for &(m, n, k) in shapes {
        let shape = Shape::new(m, n, k).map_err(|e| anyhow!(e))?;
        let b = beside_sgemm(&checker, &Inputs::random(shape, 7))?;
        out.push((shape, b.verdict, b.sgemm.normwise.relative()));
    }
    Ok(out)
}

/// A step's result and cuBLAS SGEMM's on the same inputs, both held to FP32's limits against the
/// same f64 reference (cuBLAS DGEMM).
pub struct Beside {
    pub verdict: Verdict,
    pub sgemm: Verdict,
    pub c: Vec<f32>,
    pub sgemm_c: Vec<f32>,
}

/// The checker's step and cuBLAS SGEMM on `inputs` (any values: special ones too), each launch on
/// output poisoned with NaN.
pub fn beside_sgemm(checker: &Checker, inputs: &Inputs) -> Result<Beside> {
    let (gpu, blas) = (&checker.gpu, checker.blas.as_ref().ok_or_else(|| anyhow!("cuBLAS is needed"))?);
    let shape = inputs.shape;
    let reference = measure::reference(gpu, Some(blas), inputs)?;
    let step_kernel = checker.kernels.at(gpu, shape)?;
    let (c, bufs) = poisoned_result(gpu, &step_kernel, inputs)?;
    let verdict = verify::verify(shape, &c, &reference, verify::Precision::Fp32);
    let (sgemm_c, _) = measure::measure_cublas(gpu, blas, &bufs, Recipe::checked())?;
    let sgemm = verify::verify(shape, &sgemm_c, &reference, verify::Precision::Fp32);
    Ok(Beside { verdict, sgemm, c, sgemm_c })
}

/// The elements of C whose class (NaN, +∞, −∞, finite) differs from cuBLAS SGEMM's, each named,
/// and how many of SGEMM's elements are not finite.
pub fn class_mismatches(c: &[f32], sgemm_c: &[f32], n: usize) -> (Vec<String>, usize) {
    let class = |x: f32| verify::ValueClass::of(f64::from(x));
    let wrong = c
        .iter()
        .zip(sgemm_c)
        .enumerate()
        .filter(|(_, (g, w))| class(**g) != class(**w))
        .map(|(e, (g, w))| format!("C[{},{}] = {g}, cuBLAS SGEMM {w}", e / n.max(1), e % n.max(1)))
        .collect();
    (wrong, sgemm_c.iter().filter(|v| !v.is_finite()).count())
}

/// The step with its default parameters gives right answers on at least 20 awkward shapes.
pub fn assert_defaults_pass(step: &GpuStep, shapes: &[(usize, usize, usize)]) {
    assert!(shapes.len() >= 20, "check at least 20 shapes");
    let checker = Checker::defaults(step).unwrap();
    let results: Vec<_> =
        shapes.iter().enumerate().map(|(i, &s)| checker.check(s, 1000 + i as u64, false).unwrap()).collect();
    assert_all_pass(&results);
}

/// The step with its default parameters, on small-integer inputs at every shape of `shapes` it
/// serves, gives the reference bit for bit.
pub fn assert_exact(step: &GpuStep, shapes: &[(usize, usize, usize)]) {
    let checker = Checker::defaults(step).unwrap();
    let limits = checker.gpu().info.limits;
    let mut checked = 0;
    for (i, &(m, n, k)) in shapes.iter().enumerate() {
        let shape = Shape::new(m, n, k).unwrap();
        let params = checker.kernels.params(checker.gpu(), shape).unwrap();
        if step.validate(&params, shape, &limits).is_err() {
            continue;
        }
        let (s, v) = checker.check((m, n, k), 500 + i as u64, true).unwrap();
        assert_eq!(v.mismatched, Some(0), "{}: {s}: {}", step.name, v.summary());
        assert!(v.passed(), "{}: {s}: {}", step.name, v.summary());
        checked += 1;
    }
    assert!(checked >= 20, "{}: only {checked} shapes served", step.name);
}

/// Panics with every failing shape named.
pub fn assert_all_pass(results: &[(Shape, Verdict)]) {
    let failed: Vec<String> =
        results.iter().filter(|(_, v)| !v.passed()).map(|(s, v)| format!("{s}: {}", v.summary())).collect();
    assert!(failed.is_empty(), "wrong results:\n{}", failed.join("\n"));
}

/// Runs a property test: `cases` shapes drawn from `shapes`, each against the reference.
pub fn gpu_property(
    step: &GpuStep,
    params: Params,
    cases: u32,
    shapes: impl Strategy<Value = (usize, usize, usize)>,
) {
    let checker = Checker::new(step, params).expect("the GPU and the step's kernel are available");
    gpu_property_with(&checker, cases, shapes);
}

/// [`gpu_property`] with a checker made beforehand (e.g. [`Checker::defaults`]).
pub fn gpu_property_with(
    checker: &Checker,
    cases: u32,
    shapes: impl Strategy<Value = (usize, usize, usize)>,
) {
    let mut runner = TestRunner::new(Config { cases, failure_persistence: None, ..Config::default() });
    let seed = std::cell::Cell::new(0u64);
    runner
        .run(&shapes, |shape| {
            seed.set(seed.get() + 1);
            let (s, v) =
                checker.check(shape, seed.get(), false).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert!(v.passed(), "{s}: {}", v.summary());
            Ok(())
        })
        .unwrap();
}

/// The GPU tests of a step's defaults that most steps run alike, written once:
/// `common::reference_tests!(STEP);` in the step's `tests/kernel.rs`. It adds
/// `gpu_matches_the_reference_on_many_shapes` ([`assert_defaults_pass`] at [`SHAPES`]) and
/// `gpu_random_shapes_match_the_reference` ([`gpu_property`] on 500 random shapes).
///
/// [`SHAPES`]: super::SHAPES
#[macro_export]
macro_rules! reference_tests {
    ($step:expr) => {
        #[test]
        #[ignore = "needs an NVIDIA GPU"]
        fn gpu_matches_the_reference_on_many_shapes() {
            $crate::testing::assert_defaults_pass(&$step, $crate::testing::SHAPES);
        }

        #[test]
        #[ignore = "needs an NVIDIA GPU"]
        fn gpu_random_shapes_match_the_reference() {
            let defaults = $crate::Params::defaults($step.params);
            $crate::testing::gpu_property(&$step, defaults, 500, $crate::testing::random_shapes());
        }
    };
}

//! Helpers for the steps' tests: the shapes every kernel must get right, and the checks
//! that run a step on the GPU or compile it with NVRTC.

use anyhow::{Result, anyhow};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

use crate::cublas::{self, Blas};
use crate::gpu::{self, Gpu, Limits, PtxasInfo};
use crate::matrix::{Inputs, Shape};
use crate::reference::Reference;
use crate::session::{self, Buffers};
use crate::step::{GpuStep, Params, Prepared};
use crate::verify::{self, Verdict};

pub mod copies;
pub mod exercises;
pub mod faults;
pub mod thread_tile;

/// Shapes that break kernels: ones, primes, thin and flat, one past a power of two, and
/// sizes no tile divides. (M, N, K).
pub const SHAPES: &[(usize, usize, usize)] = &[
    (1, 1, 1),
    (1, 1, 7),
    (7, 3, 5),
    (2, 3, 1),
    (13, 17, 19),
    (31, 37, 41),
    (33, 65, 17),
    (64, 64, 64),
    (127, 129, 131),
    (128, 128, 128),
    (1000, 17, 1),
    (17, 1000, 3),
    (1, 1, 1000),
    (1, 513, 257),
    (257, 1, 129),
    (255, 257, 253),
    (511, 513, 509),
    (1000, 1000, 1000),
    (1024, 1024, 1024),
    (4097, 33, 129),
    (33, 4097, 129),
    (2049, 2047, 97),
    (4097, 4097, 1),
    (3, 5, 200_000),
    (1, 1, 1 << 20),
];

/// Deep shapes, K up to 2²⁰: where a per-element bound alone would miss a dropped slice.
pub const DEEP: &[(usize, usize, usize)] =
    &[(64, 64, 65536), (2, 2, 65536), (1, 1, 1 << 20), (33, 17, 100_003)];

/// `step`'s parameters with `names` set to `values` (a test's documented set).
pub fn named_params<const N: usize>(step: &GpuStep, names: [&str; N], values: [u32; N]) -> Params {
    let overrides: Vec<(String, u32)> = names.iter().zip(values).map(|(n, v)| ((*n).to_owned(), v)).collect();
    Params::with_overrides(step.params, &overrides).expect("the step declares these parameters")
}

/// Text edits of a kernel: each `(find, replace)` matches exactly once.
pub type Edits = &'static [(&'static str, &'static str)];

/// A measured alternative kept in a step's `variants/`, runnable with `--kernel FILE`: the
/// step's kernel with some edits, so that its time and error mean something only as long as
/// everything else is the kernel's own.
pub struct Variant {
    pub file: &'static str,
    pub source: &'static str,
    pub edits: &'static [Edits],
}

impl Variant {
    /// The step with this variant in place of its kernel.
    pub fn of(&self, step: &GpuStep) -> GpuStep {
        GpuStep { file: self.file, source: self.source, ..*step }
    }
}

/// `step` with `edits` made to its kernel (a planted fault or a variant built in a test).
pub fn edited(step: &GpuStep, edits: &[(&str, &str)]) -> GpuStep {
    let source = apply_edits(step.source, edits).unwrap_or_else(|e| panic!("{}: {e}", step.name));
    GpuStep { source: Box::leak(source.into_boxed_str()), ..*step }
}

/// `source` with each edit made in turn, or which edit does not match exactly once.
pub fn apply_edits(source: &str, edits: &[(&str, &str)]) -> Result<String> {
    let mut edited = source.to_owned();
    for (find, replace) in edits {
        match edited.matches(find).count() {
            1 => edited = edited.replacen(find, replace, 1),
            0 => return Err(anyhow!("edit no longer matches the kernel: `{find}`")),
            n => return Err(anyhow!("edit matches {n} places in the kernel, not one: `{find}`")),
        }
    }
    Ok(edited)
}

/// Each variant is the step's kernel with its edits made, one after another, and nothing else.
pub fn assert_variants_are_edits(step: &GpuStep, variants: &[Variant]) {
    for v in variants {
        let edits: Vec<_> = v.edits.iter().flat_map(|e| e.iter().copied()).collect();
        let edited = apply_edits(step.source, &edits).unwrap_or_else(|e| panic!("{}: {e}", v.file));
        if edited != v.source {
            let at = edited.lines().zip(v.source.lines()).position(|(a, b)| a != b);
            let at = at.unwrap_or_else(|| edited.lines().count().min(v.source.lines().count()));
            let line = |text: &str| text.lines().nth(at).unwrap_or("(the end)").to_owned();
            panic!(
                "{} is not the kernel with its edits: at line {} the edits give `{}`, the file has `{}`",
                v.file,
                at + 1,
                line(&edited),
                line(v.source)
            );
        }
    }
}

/// A step's kernels for the shapes it is checked at: one parameter set, or, for a step that
/// chooses per shape ([`crate::Schedule::PerShape`]) checked at its choice, the set it chooses
/// at each shape, each set compiled once.
pub struct Kernels<'a> {
    step: &'a GpuStep,
    /// None: the step's choice at each shape.
    fixed: Option<Params>,
    compiled: std::cell::RefCell<Vec<std::rc::Rc<Prepared<'a>>>>,
}

impl<'a> Kernels<'a> {
    /// `params` at every shape.
    pub fn fixed(gpu: &Gpu, step: &'a GpuStep, params: Params) -> Result<Self> {
        let prepared = Prepared::new(gpu, step, params.clone())?;
        Ok(Self { step, fixed: Some(params), compiled: std::cell::RefCell::new(vec![prepared.into()]) })
    }

    /// The step's defaults, or its choice at each shape where it chooses.
    pub fn defaults(gpu: &Gpu, step: &'a GpuStep) -> Result<Self> {
        match step.schedule {
            crate::Schedule::PerShape(_) => {
                Ok(Self { step, fixed: None, compiled: std::cell::RefCell::new(Vec::new()) })
            }
            _ => Self::fixed(gpu, step, Params::defaults(step.params)),
        }
    }

    /// The parameters at `shape`.
    pub fn params(&self, gpu: &Gpu, shape: Shape) -> Result<Params> {
        match &self.fixed {
            Some(p) => Ok(p.clone()),
            None => Ok(self.step.params_for(shape, gpu.info.sms, &[])?.0),
        }
    }

    /// The kernel for `shape`, compiled on first use.
    pub fn at(&self, gpu: &Gpu, shape: Shape) -> Result<std::rc::Rc<Prepared<'a>>> {
        let params = self.params(gpu, shape)?;
        if let Some(p) = self.compiled.borrow().iter().find(|p| p.params == params) {
            return Ok(p.clone());
        }
        let p = std::rc::Rc::new(Prepared::new(gpu, self.step, params)?);
        self.compiled.borrow_mut().push(p.clone());
        Ok(p)
    }
}

/// A step compiled on the GPU, ready to check any number of shapes.
pub struct Checker<'a> {
    kernels: Kernels<'a>,
    blas: Option<Blas>,
    gpu: Gpu,
}

impl<'a> Checker<'a> {
    pub fn new(step: &'a GpuStep, params: Params) -> Result<Self> {
        let gpu = gpu::open(step.name, 0)?;
        let blas = if cublas::present() { Some(Blas::new(gpu.stream.clone())?) } else { None };
        let kernels = Kernels::fixed(&gpu, step, params)?;
        Ok(Self { kernels, blas, gpu })
    }

    /// The step at its defaults, or at its choice for each shape where it chooses.
    pub fn defaults(step: &'a GpuStep) -> Result<Self> {
        let gpu = gpu::open(step.name, 0)?;
        let blas = if cublas::present() { Some(Blas::new(gpu.stream.clone())?) } else { None };
        let kernels = Kernels::defaults(&gpu, step)?;
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
        let reference = session::reference(&self.gpu, self.blas.as_ref(), &inputs)?;
        let prepared = self.kernels.at(&self.gpu, shape)?;
        Ok((shape, verified_run(&self.gpu, &prepared, &inputs, &reference)?))
    }

    /// Runs the step on `inputs` (output poisoned with NaN) and verifies C against `reference`
    /// under the step's claimed precision; None where the step does not serve the shape.
    pub fn check_inputs(&self, inputs: &Inputs, reference: &Reference) -> Result<Option<Verdict>> {
        let shape = inputs.shape;
        let Ok(params) = self.kernels.params(&self.gpu, shape) else { return Ok(None) };
        if self.kernels.step.validate(&params, shape, &self.gpu.info.limits).is_err() {
            return Ok(None);
        }
        let prepared = self.kernels.at(&self.gpu, shape)?;
        Ok(Some(verified_run(&self.gpu, &prepared, inputs, reference)?))
    }

    /// Whether the step serves `shape` (at its parameters there).
    pub fn serves(&self, shape: Shape) -> bool {
        self.kernels
            .params(&self.gpu, shape)
            .is_ok_and(|p| self.kernels.step.validate(&p, shape, &self.gpu.info.limits).is_ok())
    }

    /// cuBLAS SGEMM's C on `inputs`.
    pub fn sgemm(&self, inputs: &Inputs) -> Result<Vec<f32>> {
        let blas = self.blas.as_ref().ok_or_else(|| anyhow!("cuBLAS is needed"))?;
        let bufs = Buffers::upload(&self.gpu, inputs)?;
        let plan = crate::timing::Plan::new(Some(1));
        let (c, _) = session::cublas_run(&self.gpu, blas, inputs.shape, &bufs, plan, true)?;
        c.ok_or_else(|| anyhow!("cuBLAS's result was not kept"))
    }

    /// The f64 reference of `inputs` (cuBLAS DGEMM when present, else the CPU).
    pub fn reference(&self, inputs: &Inputs) -> Result<Reference> {
        session::reference(&self.gpu, self.blas.as_ref(), inputs)
    }

    /// C from one launch on random inputs drawn with `seed`, the output poisoned with NaN first.
    pub fn result(&self, (m, n, k): (usize, usize, usize), seed: u64) -> Result<Vec<f32>> {
        let shape = Shape::new(m, n, k).map_err(|e| anyhow!(e))?;
        let inputs = Inputs::new(shape, seed, false);
        let prepared = self.kernels.at(&self.gpu, shape)?;
        Ok(poisoned_result(&self.gpu, &prepared, &inputs)?.0)
    }

    /// The GPU this checker runs on.
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }
}

/// One launch of `prepared` on poisoned output, verified against `reference` under the step's
/// claimed precision.
pub fn verified_run(
    gpu: &Gpu,
    prepared: &Prepared,
    inputs: &Inputs,
    reference: &Reference,
) -> Result<Verdict> {
    let (c, _) = poisoned_result(gpu, prepared, inputs)?;
    Ok(verify::verify(inputs.shape, &c, reference, prepared.step.precision))
}

/// C from one launch of `prepared` on `inputs` with the output poisoned with NaN, and the
/// buffers it ran on.
fn poisoned_result(gpu: &Gpu, prepared: &Prepared, inputs: &Inputs) -> Result<(Vec<f32>, Buffers)> {
    let (launch, _) = prepared.plan(&gpu.info, inputs.shape)?;
    let mut bufs = Buffers::upload(gpu, inputs)?;
    let c = session::poisoned_run(gpu, prepared, launch, inputs.shape, &mut bufs)?;
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
    let reference = session::reference(gpu, Some(blas), inputs)?;
    let prepared = checker.kernels.at(gpu, shape)?;
    let (c, bufs) = poisoned_result(gpu, &prepared, inputs)?;
    let verdict = verify::verify(shape, &c, &reference, verify::Precision::Fp32);
    let (sgemm_c, _) = session::cublas_run(gpu, blas, shape, &bufs, crate::timing::Plan::new(Some(1)), true)?;
    let sgemm_c = sgemm_c.ok_or_else(|| anyhow!("cuBLAS's result was not kept"))?;
    let sgemm = verify::verify(shape, &sgemm_c, &reference, verify::Precision::Fp32);
    Ok(Beside { verdict, sgemm, c, sgemm_c })
}

/// Random inputs of `shape` with NaN, +∞ and −∞ planted in A and in B, placed so that each
/// kind reaches C alone, an infinity meets a zero (∞·0 = NaN) and +∞ meets −∞ (NaN), at any
/// shape (positions wrap around small sides).
pub fn special_inputs(shape: Shape, seed: u64) -> Inputs {
    let Shape { m, n, k } = shape;
    let mut x = Inputs::random(shape, seed);
    let a = |i: usize, p: usize| (i % m) * k + p % k;
    let b = |p: usize, j: usize| (p % k) * n + j % n;
    x.a.data[a(m / 2, 1)] = f32::NAN;
    x.a.data[a(m / 3, k / 2)] = f32::INFINITY;
    x.a.data[a(m / 4, k / 2)] = f32::NEG_INFINITY;
    x.a.data[a(m.saturating_sub(1), 0)] = f32::INFINITY;
    x.a.data[a(m.saturating_sub(1), k.saturating_sub(1))] = f32::NEG_INFINITY;
    x.b.data[b(k / 2, n / 3)] = 0.0;
    x.b.data[b(3, n / 2)] = f32::INFINITY;
    x.b.data[b(5, n / 4)] = f32::NAN;
    x.b.data[b(k.saturating_sub(2), n.saturating_sub(1))] = f32::NEG_INFINITY;
    x
}

/// The elements of C whose class (NaN, +∞, −∞, finite) differs from cuBLAS SGEMM's, each named,
/// and how many of SGEMM's elements are not finite.
pub fn class_mismatches(c: &[f32], sgemm_c: &[f32], n: usize) -> (Vec<String>, usize) {
    let class = |x: f32| verify::Class::of(f64::from(x));
    let wrong = c
        .iter()
        .zip(sgemm_c)
        .enumerate()
        .filter(|(_, (g, w))| class(**g) != class(**w))
        .map(|(e, (g, w))| format!("C[{},{}] = {g}, cuBLAS SGEMM {w}", e / n.max(1), e % n.max(1)))
        .collect();
    (wrong, sgemm_c.iter().filter(|v| !v.is_finite()).count())
}

/// Inputs with the features that once cost the FP32 steps their accuracy, as a user would bring
/// them: the identity plus noise of 2⁻²⁰, log-normal magnitudes, rows of A like a softmax with one
/// dominant entry against a B of one-hot columns, a row of A in subnormals, and NaN and ±∞.
pub fn real_looking_inputs() -> Vec<(&'static str, Inputs)> {
    use crate::matrix::{Family, Matrix};
    use rand::{Rng, SeedableRng};
    let shape = |m, n, k| Shape::new(m, n, k).expect("a valid shape");
    let mut subnormal = Inputs::random(shape(256, 256, 256), 31);
    subnormal.a.data[..256].iter_mut().for_each(|v| *v *= 1e-39);
    let (m, n, k) = (192, 160, 1024);
    let mut rng = rand::rngs::StdRng::seed_from_u64(32);
    let mut a = Matrix { rows: m, cols: k, data: vec![0.0; m * k] };
    for i in 0..m {
        let logits: Vec<f64> =
            (0..k).map(|p| if p == i % k { 20.0 } else { rng.random_range(-3.0..3.0) }).collect();
        let total: f64 = logits.iter().map(|z| z.exp()).sum();
        for (v, z) in a.data[i * k..(i + 1) * k].iter_mut().zip(&logits) {
            *v = (z.exp() / total) as f32;
        }
    }
    let mut b = Matrix { rows: k, cols: n, data: vec![0.0; k * n] };
    for j in 0..n {
        b.data[(j * 7 % k) * n + j] = 1.0;
    }
    let softmax =
        Inputs::from_matrices(a, b, "softmax rows, one-hot columns".to_owned()).expect("matching shapes");
    vec![
        (
            "identity+noise 2⁻²⁰",
            Inputs::family(shape(256, 256, 1024), 33, Family::IdentityNoise(f64::powi(2.0, -20))),
        ),
        ("log-normal σ = 2", Inputs::family(shape(256, 256, 256), 34, Family::LogNormal(2.0))),
        ("softmax rows, one-hot columns", softmax),
        ("a row of A subnormal", subnormal),
        ("NaN and ±∞", special_inputs(shape(200, 136, 300), 35)),
    ]
}

/// Each of [`real_looking_inputs`] written to `.npy` files and given to the step's program with
/// `--a` and `--b`: the program verifies C and passes (every element within FP32's bound, or of
/// the reference's class where it is not finite), and exits with 0.
pub fn assert_npy_inputs_pass(bin: &str) {
    let dir = std::env::temp_dir().join(format!("matmul-course-npy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (i, (name, x)) in real_looking_inputs().into_iter().enumerate() {
        let (a, b) = (dir.join(format!("a{i}.npy")), dir.join(format!("b{i}.npy")));
        crate::files::write_npy(&a, x.a.rows, x.a.cols, &x.a.data).unwrap();
        crate::files::write_npy(&b, x.b.rows, x.b.cols, &x.b.data).unwrap();
        let (a, b) = (a.to_str().unwrap().to_owned(), b.to_str().unwrap().to_owned());
        let (code, out, err) = run_for_output(bin, &["--a", &a, "--b", &b, "--reps", "1", "--no-cublas"]);
        println!("{name}:\n{out}{err}");
        assert_eq!(code, Some(0), "{name}: {err}");
        assert!(out.contains("verify   PASS"), "{name}: {out}");
    }
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

/// The architectures the NVRTC tests compile for, each step from its oldest (limits:
/// [`Limits::for_arch`]).
pub const ARCHS: &[&str] = &["sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_120"];

/// The architectures of [`ARCHS`] that `step` runs on, with their limits; the others it refuses
/// (see [`assert_archs_refused_or_served`]).
pub fn archs(step: &GpuStep) -> Vec<(&'static str, Limits)> {
    ARCHS
        .iter()
        .filter(|&&arch| step.check_compute(cc(arch), arch).is_ok())
        .map(|&arch| (arch, Limits::for_arch(arch).expect("the architectures of ARCHS have limits")))
        .collect()
}

fn cc(arch: &str) -> (i32, i32) {
    gpu::compute_capability_of(arch).expect("the architectures of ARCHS are sm_XY")
}

/// Every architecture of [`ARCHS`] is either served by `step` or refused in one sentence that
/// names the compute capability it needs.
pub fn assert_archs_refused_or_served(step: &GpuStep) {
    for &arch in ARCHS {
        if let Err(e) = step.check_compute(cc(arch), arch) {
            let e = e.to_string();
            assert!(!e.contains('\n') && e.contains("compute capability"), "{arch}: {e}");
        }
    }
    assert!(!archs(step).is_empty(), "{}: no architecture served", step.name);
}

/// Compiles `step` with `params` for `arch` and returns ptxas's report; the whole NVRTC log
/// is in the error when the report cannot be read. On a machine with a CUDA driver, run these
/// tests with `CUDA_CACHE_DISABLE=1`: a cached compile skips ptxas and leaves no report.
pub fn nvrtc_check(step: &GpuStep, params: &Params, arch: &str) -> Result<PtxasInfo> {
    let c = step.compile(params, arch)?;
    PtxasInfo::parse(&c.log)
        .ok_or_else(|| anyhow!(
            "no ptxas report for {params} on {arch} (a cached compile? set CUDA_CACHE_DISABLE=1); NVRTC's log:\n{}",
            c.log
        ))
}

/// Random shapes for property tests: mostly 1 to 300 in each dimension, one case in twenty up
/// to 2048.
pub fn random_shapes() -> impl Strategy<Value = (usize, usize, usize)> {
    let small = (1usize..=300, 1usize..=300, 1usize..=300);
    let large = (1usize..=2048, 1usize..=2048, 1usize..=2048);
    prop_oneof![19 => small, 1 => large]
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

/// The program at `bin` (the path Cargo gave the test at build time), or, when the tests were
/// moved to another machine as `gpu-bundle` does, the program of that name in `../bin` beside
/// the running test binary.
pub fn program(bin: &str) -> std::path::PathBuf {
    let built = std::path::PathBuf::from(bin);
    if built.exists() {
        return built;
    }
    let name = built.file_name().unwrap_or_default();
    std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.join("bin").join(name)))
        .filter(|p| p.exists())
        .unwrap_or(built)
}

/// Runs a step's program with `args` and extra environment; returns its exit code and stderr.
pub fn run_program(bin: &str, args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String) {
    let (code, _, stderr) = run_command(std::process::Command::new(program(bin)).args(args), env);
    (code, stderr)
}

/// Runs a step's program under an address-space limit of `kib` KiB (`ulimit -v`).
pub fn run_program_limited(bin: &str, kib: u64, args: &[&str]) -> (Option<i32>, String) {
    let script = format!("ulimit -v {kib} && exec \"$0\" \"$@\"");
    let mut command = std::process::Command::new("sh");
    command.arg("-c").arg(script).arg(program(bin)).args(args);
    let (code, _, stderr) = run_command(&mut command, &[]);
    (code, stderr)
}

/// Runs `bin` with `args` and NVRTC's cache off; returns its exit code, standard output and
/// standard error.
pub fn run_for_output(bin: &str, args: &[&str]) -> (Option<i32>, String, String) {
    run_command(std::process::Command::new(program(bin)).args(args), &[("CUDA_CACHE_DISABLE", "1")])
}

fn run_command(command: &mut std::process::Command, env: &[(&str, &str)]) -> (Option<i32>, String, String) {
    let out = command
        .envs(env.iter().copied())
        .env("RUST_BACKTRACE", "1")
        .output()
        .unwrap_or_else(|e| panic!("could not start {command:?}: {e}"));
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

/// Asserts the program refuses `args` the way a learner can act on: a non-zero exit that is
/// not a panic's, a first line `error: …` that says `says`, and no panic message or backtrace.
pub fn assert_clear_error(bin: &str, args: &[&str], env: &[(&str, &str)], says: &str) {
    assert_clear_outcome(args, run_program(bin, args, env), says);
}

/// Through the program, with no GPU visible: each parameter set is refused with its sentence,
/// before anything needs a GPU.
pub fn assert_bad_sets_refused_without_a_gpu(bin: &str, cases: &[(&[&str], &str)]) {
    for (params, says) in cases {
        let mut args = vec!["--size", "256"];
        args.extend_from_slice(params);
        assert_clear_error(bin, &args, &[("CUDA_VISIBLE_DEVICES", "")], says);
    }
}

/// [`assert_clear_error`] on the outcome of a run already made.
pub fn assert_clear_outcome(args: &[&str], (code, stderr): (Option<i32>, String), says: &str) {
    let first = stderr.lines().next().unwrap_or_default();
    assert!(matches!(code, Some(c) if c != 0 && c != 101), "{args:?}: exit code {code:?}\n{stderr}");
    assert!(first.starts_with("error: ") && first.contains(says), "{args:?}: expected `{says}` in\n{stderr}");
    assert!(!stderr.contains("panicked") && !stderr.contains("backtrace"), "{args:?}: a panic\n{stderr}");
    // One sentence: clap may add a blank line and a pointer to --help, nothing more.
    let extra: Vec<&str> = stderr.lines().skip(1).filter(|l| !l.trim().is_empty()).collect();
    assert!(extra.iter().all(|l| l.contains("--help")), "{args:?}: more than one sentence\n{stderr}");
}

/// Through the program: A written by the test as f64 in Fortran order (`.npy`), B as a bf16
/// tensor of a `.safetensors` file, both read by the step, C saved with --save-c and compared
/// with the f64 product of what the step read; and the files' errors refused in one sentence.
pub fn assert_file_round_trip(bin: &str) {
    use npyz::WriterBuilder;
    let (m, n, k) = (37usize, 29usize, 53usize);
    let a: Vec<f64> = (0..m * k).map(|i| ((i * 7919) % 1000) as f64 / 500.0 - 1.0).collect();
    let b: Vec<f32> = (0..k * n).map(|i| ((i * 104_729) % 997) as f32 / 100.0 - 5.0).collect();
    let a_path = scratch_file("a.npy", "");
    // Fortran order: column c of A holds a[r·k + c] for every r.
    let columns: Vec<f64> =
        (0..k).flat_map(|c| (0..m).map(move |r| (r, c))).map(|(r, c)| a[r * k + c]).collect();
    let mut w = npyz::WriteOptions::new()
        .default_dtype()
        .shape(&[m as u64, k as u64])
        .order(npyz::Order::Fortran)
        .writer(std::io::BufWriter::new(std::fs::File::create(&a_path).unwrap()))
        .begin_nd()
        .unwrap();
    w.extend(columns).unwrap();
    w.finish().unwrap();
    let b_path = scratch_file("b.safetensors", "");
    let bytes: Vec<u8> = b.iter().flat_map(|&v| half::bf16::from_f32(v).to_le_bytes()).collect();
    let view = safetensors::tensor::TensorView::new(safetensors::Dtype::BF16, vec![k, n], &bytes).unwrap();
    safetensors::serialize_to_file([("w", view)], None, &b_path).unwrap();
    let c_path = scratch_file("c.npy", "");
    let (a_arg, b_arg, c_arg) =
        (a_path.display().to_string(), format!("{}:w", b_path.display()), c_path.display().to_string());
    let out = std::process::Command::new(program(bin))
        .args(["--a", &a_arg, "--b", &b_arg, "--save-c", &c_arg, "--reps", "1"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains(&format!("M={m} N={n} K={k}")) && stdout.contains("inputs A from"), "{stdout}");
    let c = crate::files::read_matrix(&c_arg, "C").unwrap();
    assert_eq!((c.rows, c.cols), (m, n));
    for i in 0..m {
        for j in 0..n {
            let (mut want, mut abs) = (0.0f64, 0.0f64);
            for p in 0..k {
                let t =
                    f64::from(a[i * k + p] as f32) * f64::from(half::bf16::from_f32(b[p * n + j]).to_f32());
                want += t;
                abs += t.abs();
            }
            let got = f64::from(c.at(i, j));
            assert!((got - want).abs() <= 1e-5 * abs, "C[{i},{j}] = {got}, want {want}");
        }
    }
    let none = [("CUDA_VISIBLE_DEVICES", "")];
    assert_clear_error(bin, &["--a", "/nonexistent/a.npy", "--b", &b_arg], &none, "cannot be opened");
    assert_clear_error(bin, &["--a", &a_arg, "--b", &a_arg], &none, "must equal B's rows");
    assert_clear_error(
        bin,
        &["--a", &a_arg, "--b", &format!("{}:x", b_path.display())],
        &none,
        "no tensor of that name",
    );
    assert_clear_error(bin, &["--a", &a_arg, "--b", &b_arg, "-k", "7"], &none, "the files give K = 53");
    assert_clear_error(bin, &["--inputs", "cauchy"], &none, "not a family of inputs");
}

/// A scratch file for a test: `name` under the system's temporary folder, unique to this process.
pub fn scratch_file(name: &str, contents: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("matmul-course-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, contents).unwrap();
    path
}

/// `--compile-only` compiles the step for sm_80 and sm_90 and prints its resources and ptxas's
/// output; an edited kernel given with `--kernel` that does not compile gets NVRTC's log, under
/// the edited file's name. Needs NVRTC, not a GPU.
pub fn assert_compile_only(bin: &str, step: &GpuStep) {
    for (arch, cc) in [("sm_80", (8, 0)), ("sm_90", (9, 0))] {
        let (code, out, err) = run_for_output(bin, &["--compile-only", "--arch", arch]);
        if step.check_compute(cc, arch).is_err() {
            // A step for one architecture alone (sm_90a) refuses the others in one sentence.
            assert_eq!(code, Some(1), "{out}");
            assert!(
                err.starts_with(&format!("error: {} needs a GPU of compute capability", step.name)),
                "{err}"
            );
            continue;
        }
        assert_eq!(code, Some(0), "{err}");
        let compiled = format!("{} ({}) compiled for {}", step.name, step.file, step.target(arch));
        for says in [compiled.as_str(), "registers/thread", "spills: none", "ptxas says:"] {
            assert!(out.contains(says), "`{says}` missing:\n{out}");
        }
    }
    // The machine code, for cuobjdump: an ELF file that holds the kernel's entry point.
    let cubin = std::env::temp_dir().join(format!("{}-{}.cubin", step.name, std::process::id()));
    let target = if step.check_compute((9, 0), "sm_90").is_ok() { "sm_90" } else { "sm_80" };
    let (code, out, err) =
        run_for_output(bin, &["--compile-only", "--arch", target, "--cubin", cubin.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("written to") && out.contains("cuobjdump -sass"), "{out}");
    let code = std::fs::read(&cubin).unwrap();
    std::fs::remove_file(&cubin).unwrap();
    let compiled = gpu::Compiled { arch: target.to_owned(), cubin: code, ptxas: None, log: String::new() };
    assert!(
        compiled.cubin.starts_with(b"\x7fELF") && compiled.has_function("matmul"),
        "not a cubin with matmul"
    );
    let broken = step.source.replacen("__global__", "__global__ oops", 1);
    let broken = scratch_file(&format!("{}-broken.cu", step.name), &broken);
    let path = broken.to_str().unwrap();
    let (code, _, err) = run_for_output(bin, &["--compile-only", "--kernel", path]);
    std::fs::remove_file(&broken).unwrap();
    assert_eq!(code, Some(1), "{err}");
    assert!(err.starts_with(&format!("error: the kernel {path} does not compile for")), "{err}");
    assert!(err.contains("oops"), "NVRTC's log is shown:\n{err}");
}

/// Through the program on the GPU: `--kernel` runs an edited copy of the kernel; a copy with a
/// comment added passes and names its file, and the same copy with `fault` planted fails.
pub fn assert_kernel_option(bin: &str, step: &GpuStep, fault: &faults::Fault) {
    // 32³: a shape every step serves, step03's one block included.
    let same = format!("// a learner's copy\n{}", step.source);
    let same = scratch_file(&format!("{}-same.cu", step.name), &same);
    let (code, out, err) = run_for_output(bin, &["--size", "32", "--kernel", same.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        out.contains("verify   PASS") && out.contains(&format!("kernel from {}", same.display())),
        "{out}"
    );
    let wrong = scratch_file(&format!("{}-wrong.cu", step.name), &faults::apply(step.source, fault).unwrap());
    let (code, out, err) = run_for_output(bin, &["--size", "32", "--kernel", wrong.to_str().unwrap()]);
    for file in [same, wrong] {
        std::fs::remove_file(file).unwrap();
    }
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(out.contains("verify   FAIL") && err.starts_with("error: the result is wrong"), "{out}{err}");
}

/// `bin --help` names everything in `says` and lists none of the options in `absent`.
pub fn assert_help(bin: &str, says: &[&str], absent: &[&str]) {
    let out = std::process::Command::new(program(bin)).arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{help}");
    for s in says {
        assert!(help.contains(s), "`{s}` missing from --help:\n{help}");
    }
    for a in absent {
        assert!(!help.contains(&format!("{a} ")), "--help lists {a}, which the step refuses:\n{help}");
    }
}

/// The bad inputs every GPU step must refuse without a GPU (so CI checks them too). Hiding the
/// devices (`CUDA_VISIBLE_DEVICES=`) makes a GPU machine look like one without a GPU.
pub fn assert_common_bad_inputs_refused(bin: &str) {
    let no_gpu = [("CUDA_VISIBLE_DEVICES", "")];
    for (args, says) in [
        (&["--size", "0"][..], "at least 1"),
        (&["--size", "-5"][..], "at least 1"),
        (&["-m", "12", "-n", "abc"][..], "not a whole number"),
        (&["-k", "99999999"][..], "larger than"),
        (&["--reps", "0"][..], "repetition"),
        (&["--param", "TILE"][..], "NAME=VALUE"),
        (&["--param", "=3"][..], "names no parameter"),
        (&["--param", "TILE=99999999999"][..], "outside 0 to 4294967295"),
        (&["--seed", "-1"][..], "the seed must be a whole number"),
        (&["--param", "NOPE=4"][..], "--param NOPE"),
        (&["--kernel", "/no/such/kernel.cu"][..], "could not read the kernel /no/such/kernel.cu"),
        (&["--arch", "sm_90"][..], "--arch goes with --compile-only"),
        (&["--cubin", "k.cubin"][..], "--cubin goes with --compile-only"),
        (&["--compile-only", "--arch", "90"][..], "not an architecture this course compiles for"),
        (&[][..], "needs an NVIDIA GPU"),
    ] {
        assert_clear_error(bin, args, &no_gpu, says);
    }
}

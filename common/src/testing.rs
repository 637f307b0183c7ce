//! Helpers for the steps' tests: the shapes every kernel must get right, and the checks
//! that run a step on the GPU or compile it with NVRTC.

use anyhow::{Result, anyhow};

use crate::cublas::{self, Blas};
use crate::gpu::{self, Limits, PtxasInfo};
use crate::matrix::{Inputs, Shape};
use crate::run::{self, Buffers};
use crate::step::{GpuStep, Params, Prepared};
use crate::verify::{self, Verdict};

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
];

/// Runs `step` with `params` on each shape, on output poisoned with NaN, and verifies each
/// against the f64 reference (cuBLAS DGEMM when present, else the CPU).
pub fn gpu_check(
    step: &GpuStep,
    params: Params,
    shapes: &[(usize, usize, usize)],
) -> Result<Vec<(Shape, Verdict)>> {
    let gpu = gpu::open(step.name, 0)?;
    let blas = if cublas::present() { Some(Blas::new(gpu.stream.clone())?) } else { None };
    let prepared = Prepared::new(&gpu, step, params)?;
    let mut out = Vec::new();
    for (i, &(m, n, k)) in shapes.iter().enumerate() {
        let shape = Shape::new(m, n, k).map_err(|e| anyhow!(e))?;
        let (launch, _) = prepared.plan(&gpu.info, shape)?;
        let inputs = Inputs::random(shape, 1000 + i as u64);
        let mut bufs = Buffers::upload(&gpu, &inputs)?;
        let c = run::poisoned_run(&gpu, &prepared, launch, shape, &mut bufs)?;
        let reference = run::reference(&gpu, blas.as_ref(), &inputs)?;
        out.push((shape, verify::verify(shape, &c, &reference)));
    }
    Ok(out)
}

/// Panics with every failing shape named.
pub fn assert_all_pass(results: &[(Shape, Verdict)]) {
    let failed: Vec<String> = results
        .iter()
        .filter(|(_, v)| !v.passed())
        .map(|(s, v)| format!("{s}: {} wrong, worst {:?}", v.failed, v.worst))
        .collect();
    assert!(failed.is_empty(), "wrong results:\n{}", failed.join("\n"));
}

/// The architectures every kernel must compile for, with their limits.
pub const ARCHS: &[(&str, Limits)] = &[("sm_80", Limits::SM80), ("sm_90", Limits::SM90)];

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

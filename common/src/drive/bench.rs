//! Criterion benches of GPU steps and cuBLAS, timed with CUDA events.
//!
//! Every step crate's `cargo bench` and the `compare` crate's bench call [`run`], so their
//! numbers come from the same code. Criterion's throughput is set to 2·M·N·K "elements", so the
//! rate it prints is FLOP/s.

use std::time::Duration;

use anyhow::{Result, anyhow, bail};
use criterion::{BenchmarkId, Criterion, Throughput};

use crate::cublas::{self, Blas};
use crate::gpu::{self, Gpu};
use crate::matrix::{Family, Inputs, Shape};
use crate::measure::{self, Buffers, Recipe, StepKernels};
use crate::step::GpuStep;
use crate::timing;

/// The square sizes benchmarked; `MATMUL_BENCH_LARGE=1` adds 8192.
pub fn sizes() -> Vec<usize> {
    let mut sizes = vec![256, 512, 1024, 2048, 4096];
    if std::env::var_os("MATMUL_BENCH_LARGE").is_some_and(|v| v == "1") {
        sizes.push(8192);
    }
    sizes
}

/// The family of inputs benchmarked: `MATMUL_BENCH_INPUTS=KIND` (as `--inputs` takes it), else
/// uniform.
pub fn family() -> Result<Family> {
    match std::env::var("MATMUL_BENCH_INPUTS") {
        Ok(kind) => Family::parse(&kind).map_err(|e| anyhow!("MATMUL_BENCH_INPUTS: {e}")),
        Err(_) => Ok(Family::Uniform),
    }
}

/// The `main` of a bench binary: one criterion group, `matmul`, with each step (at the sizes
/// it serves) and, if `with_cublas`, cuBLAS SGEMM, and cuBLAS TF32 as well when a step computes
/// in TF32. Without a GPU it names the command that predicts the same table on the CPU and
/// returns; a step the GPU is too old for is left out.
pub fn run(steps: &[&GpuStep], with_cublas: bool) {
    let gpu = match usable_gpu() {
        Ok(gpu) => gpu,
        Err(why) => {
            println!("{}", without_a_gpu(&why.to_string()));
            return;
        }
    };
    let mut c = Criterion::default().configure_from_args();
    if let Err(e) = bench_group(&mut c, &gpu, steps, with_cublas) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
    c.final_summary();
}

/// What a bench prints where it cannot time: why, and the command that gives the labs' table
/// without a GPU.
pub fn without_a_gpu(why: &str) -> String {
    format!(
        "bench: nothing to time here ({why}). Without a GPU, `cargo run --release -p compare -- --predicted` \
         runs every lab on the PTX emulator and prints the same table, each rate the H100's as the \
         emulator's time model predicts it."
    )
}

fn usable_gpu() -> Result<Gpu> {
    let gpu = gpu::open("the bench", 0)?;
    if !gpu::nvrtc_present() {
        return Err(anyhow!("{}", gpu::NO_NVRTC));
    }
    Ok(gpu)
}

/// `iters` launches back to back between two events, behind a hold as [`timing::time_gpu`]
/// queues them. `host_ms` carries the host's time per launch call from one sample to the next.
fn time_iters(
    gpu: &Gpu,
    host_ms: &mut f64,
    iters: u64,
    launch: impl FnMut() -> Result<()>,
) -> Result<Duration> {
    let b = timing::time_launches(gpu, *host_ms, iters as usize, launch)?;
    *host_ms = b.host_ms / iters.max(1) as f64;
    Ok(Duration::from_secs_f64(b.gpu_ms / 1e3))
}

fn bench_group(c: &mut Criterion, gpu: &Gpu, steps: &[&GpuStep], with_cublas: bool) -> Result<()> {
    // Each step at its defaults, or its choice at each shape where it chooses.
    let mut kernels = Vec::new();
    for step in steps {
        match step.check_compute(gpu.info.compute_capability, &gpu.info.name) {
            Ok(()) => kernels.push(StepKernels::defaults(gpu, step)?),
            Err(why) => println!("bench: {why}: left out"),
        }
    }
    let with_cublas = with_cublas && cublas::present();
    let blas = if with_cublas { Some(Blas::new(gpu.stream.clone())?) } else { None };
    let tf32 = kernels.iter().any(|k| k.step().precision.tensor_cores());
    let blas_tf32 = if with_cublas && tf32 { Some(Blas::tf32(gpu.stream.clone())?) } else { None };
    let mut group = c.benchmark_group("matmul");
    group.sample_size(20).warm_up_time(Duration::from_millis(300)).measurement_time(Duration::from_secs(1));
    let family = family()?;
    for size in sizes() {
        let shape = Shape::square(size).map_err(|e| anyhow!(e))?;
        let inputs = Inputs::family(shape, 42, family);
        let reference = measure::reference(gpu, blas.as_ref(), &inputs)?;
        let mut bufs = Buffers::upload(gpu, &inputs)?;
        group.throughput(Throughput::Elements(shape.flops() as u64));
        for kernels in &kernels {
            let step = kernels.step();
            // Each step only at the shapes it serves.
            if kernels.params(gpu, shape).is_err() {
                continue;
            }
            let k = kernels.at(gpu, shape)?;
            let Ok(fitted) = k.fit(&gpu.info, shape) else { continue };
            // The recipe's first and next products verified before criterion times, and again
            // after criterion's products, which a count left wrong would show in.
            let verified = |when: &str, bufs: &mut Buffers| -> Result<measure::Measured> {
                let m = measure::measure_fitted(gpu, &k, fitted, bufs, Recipe::checked())?;
                let verdict = m.decisive(&reference, step.precision);
                if !verdict.passed() {
                    bail!("{} at {shape}, {when}: {}", step.name, verdict.summary());
                }
                Ok(m)
            };
            let geometry = verified("before timing", &mut bufs)?.geometry;
            let (a, b, c) = bufs.operands(&k)?;
            bench_one(&mut group, BenchmarkId::new(step.name, size), gpu, || {
                k.enqueue(gpu, geometry, shape, a, b, c)
            })?;
            verified("after criterion's products", &mut bufs)?;
        }
        for (name, blas) in [("cublas_sgemm", &blas), ("cublas_tf32", &blas_tf32)] {
            let Some(blas) = blas else { continue };
            let (a, b, c) = (&bufs.a, &bufs.b, &mut bufs.c);
            bench_one(&mut group, BenchmarkId::new(name, size), gpu, || blas.sgemm(shape, a, b, c))?;
        }
    }
    group.finish();
    Ok(())
}

/// One criterion benchmark of `launch`; the first error stops it and is returned.
fn bench_one(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    id: BenchmarkId,
    gpu: &Gpu,
    mut launch: impl FnMut() -> Result<()>,
) -> Result<()> {
    let mut failed = None;
    // A generous first guess at the host's time per launch call; measured from then on.
    let mut host_ms = 0.02;
    group.bench_function(id, |b| {
        b.iter_custom(|iters| {
            time_iters(gpu, &mut host_ms, iters, &mut launch).unwrap_or_else(|e| {
                failed = Some(e);
                Duration::ZERO
            })
        })
    });
    failed.map_or(Ok(()), Err)
}

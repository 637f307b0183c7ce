//! What a step's `main` does: parse the command line, run, verify, time, compare, report.

use std::process::ExitCode;

use anyhow::{Result, anyhow, bail};
use cudarc::driver::{CudaSlice, DevicePtrMut};

use crate::cli::Args;
use crate::cublas::{self, Blas};
use crate::gpu::{self, Gpu};
use crate::matrix::{Inputs, Shape};
use crate::reference::{self, Reference};
use crate::report::{Device, KernelFacts, Report};
use crate::step::{GpuStep, Launch, Params, Prepared};
use crate::timing::{self, Plan, Stats};
use crate::verify::{self, Verdict};

/// A CPU step's kernel: `matmul(m, n, k, a, b, c)` computes row-major C = A·B.
pub type CpuMatmul = fn(usize, usize, usize, &[f32], &[f32], &mut [f32]);

/// The `main` of every GPU step.
pub fn gpu_main(step: &GpuStep) -> ExitCode {
    let args = Args::parse_for(step.idea, step.params_help());
    exit_code(run_gpu(step, &args))
}

/// The `main` of a CPU step: `matmul(m, n, k, a, b, c)` computes row-major C = A·B.
pub fn cpu_main(name: &str, idea: &str, default_size: usize, matmul: CpuMatmul) -> ExitCode {
    let args = Args::parse_for(idea, format!("{name}: {idea}"));
    exit_code(run_cpu(name, default_size, matmul, &args))
}

/// Ok(true): all good; Ok(false): the report was printed and verification failed; Err: one sentence.
fn exit_code(outcome: Result<bool>) -> ExitCode {
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("error: the result is wrong (see the verify line above)");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn shape_of(args: &Args, default: Shape) -> Result<Shape> {
    let (m, n, k) = args.shape((default.m, default.n, default.k));
    Shape::new(m, n, k).map_err(|e| anyhow!(e))
}

/// A, B and C on the device.
pub struct Buffers {
    pub a: CudaSlice<f32>,
    pub b: CudaSlice<f32>,
    pub c: CudaSlice<f32>,
}

impl Buffers {
    pub fn upload(gpu: &Gpu, inputs: &Inputs) -> Result<Self> {
        let s = &gpu.stream;
        let err = |e| anyhow!("copying the inputs to the GPU failed: {e:?}");
        Ok(Self {
            a: s.clone_htod(&inputs.a.data).map_err(err)?,
            b: s.clone_htod(&inputs.b.data).map_err(err)?,
            c: s.alloc_zeros(inputs.shape.m * inputs.shape.n).map_err(err)?,
        })
    }

    /// Fills C with NaN (every byte 0xFF), so that an element no thread writes fails verification.
    pub fn poison(&mut self, gpu: &Gpu) -> Result<()> {
        let bytes = self.c.num_bytes();
        let (ptr, _record) = self.c.device_ptr_mut(&gpu.stream);
        // SAFETY: `ptr` addresses `bytes` bytes of a live allocation on this stream.
        unsafe { cudarc::driver::result::memset_d8_async(ptr, 0xFF, bytes, gpu.stream.cu_stream()) }
            .map_err(|e| anyhow!("poisoning the output failed: {e:?}"))
    }

    pub fn download_c(&self, gpu: &Gpu) -> Result<Vec<f32>> {
        gpu.stream.clone_dtoh(&self.c).map_err(|e| anyhow!("copying C back from the GPU failed: {e:?}"))
    }
}

/// Waits for the queued work; a fault inside the kernel surfaces here.
pub fn sync(gpu: &Gpu) -> Result<()> {
    gpu.stream.synchronize().map_err(|e| {
        anyhow!("the kernel failed while running ({e:?}); if you edited it, look for an out-of-bounds access")
    })
}

/// Runs one launch on poisoned output and returns C.
pub fn poisoned_run(
    gpu: &Gpu,
    prepared: &Prepared,
    launch: Launch,
    shape: Shape,
    bufs: &mut Buffers,
) -> Result<Vec<f32>> {
    bufs.poison(gpu)?;
    prepared.launch(gpu, launch, shape, &bufs.a, &bufs.b, &mut bufs.c)?;
    sync(gpu)?;
    bufs.download_c(gpu)
}

/// One launch on poisoned output (its C is returned for verification), then the timed launches.
pub fn run_and_time(
    gpu: &Gpu,
    prepared: &Prepared,
    launch: Launch,
    shape: Shape,
    bufs: &mut Buffers,
    plan: Plan,
) -> Result<(Vec<f32>, Stats)> {
    let c = poisoned_run(gpu, prepared, launch, shape, bufs)?;
    let time = timing::time_gpu(&gpu.stream, plan, || {
        prepared.launch(gpu, launch, shape, &bufs.a, &bufs.b, &mut bufs.c)
    })?;
    Ok((c, time))
}

/// cuBLAS SGEMM on the same inputs, timed the same way, into a C of its own.
pub fn time_cublas(gpu: &Gpu, blas: &Blas, shape: Shape, bufs: &Buffers, plan: Plan) -> Result<Stats> {
    let mut c = gpu
        .stream
        .alloc_zeros::<f32>(shape.m * shape.n)
        .map_err(|e| anyhow!("allocating cuBLAS's C: {e:?}"))?;
    timing::time_gpu(&gpu.stream, plan, || blas.sgemm(shape, &bufs.a, &bufs.b, &mut c))
}

/// The reference: cuBLAS DGEMM on the device when there is room, else the CPU.
pub fn reference(gpu: &Gpu, blas: Option<&Blas>, inputs: &Inputs) -> Result<Reference> {
    let s = inputs.shape;
    let f64_bytes = 8 * (s.m * s.k + s.k * s.n + s.m * s.n);
    let free = gpu.ctx.mem_get_info().map(|(free, _)| free).unwrap_or(0);
    match blas {
        Some(blas) if f64_bytes < free => blas.reference(inputs),
        _ => Ok(reference::cpu(inputs)),
    }
}

/// Device memory the run needs: A, B and C, and a second C for cuBLAS.
pub fn memory_needed(shape: Shape, with_cublas: bool) -> u64 {
    shape.f32_bytes() + if with_cublas { 4 * (shape.m * shape.n) as u64 } else { 0 }
}

/// Refuses a shape whose buffers do not fit in `free` bytes, before any allocation fails.
pub fn check_fits(shape: Shape, with_cublas: bool, free: u64, device: &str) -> Result<()> {
    let need = memory_needed(shape, with_cublas);
    if need > free {
        let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
        bail!(
            "the shape {shape} needs {:.2} GiB of GPU memory but {device} has {:.2} GiB free; choose a smaller shape",
            gib(need),
            gib(free)
        );
    }
    Ok(())
}

fn check_memory(gpu: &Gpu, shape: Shape, with_cublas: bool) -> Result<()> {
    let free = gpu.ctx.mem_get_info().map(|(free, _)| free as u64).unwrap_or(gpu.info.total_mem as u64);
    check_fits(shape, with_cublas, free, &gpu.info.name)
}

/// The whole run of a GPU step. Returns whether verification passed (true when skipped).
pub fn run_gpu(step: &GpuStep, args: &Args) -> Result<bool> {
    run_gpu_with(step, args, cublas::present())
}

/// [`run_gpu`] with the answer to "could libcublas be loaded?" given, so that a test can take
/// the path of a machine without cuBLAS: no baseline, the reference on the CPU, and a note.
pub fn run_gpu_with(step: &GpuStep, args: &Args, cublas_found: bool) -> Result<bool> {
    let params = Params::with_overrides(step.params, &args.params)?;
    let gpu = gpu::open(step.name, args.device)?;
    if !gpu::nvrtc_present() {
        bail!("{}", gpu::NO_NVRTC);
    }
    let shape = shape_of(args, (step.default_shape)(&gpu.info.limits))?;
    let mut notes = Vec::new();
    let with_cublas = !args.no_cublas && cublas_found;
    if !args.no_cublas && !with_cublas {
        notes.push(
            "cuBLAS (libcublas) was not found: no baseline column, and the reference runs on the CPU"
                .to_owned(),
        );
    }
    check_memory(&gpu, shape, with_cublas)?;
    if args.tune {
        return crate::tune::run(step, args, &gpu, shape);
    }
    // Reject the shape before the (slower) compile when the step cannot serve it.
    step.validate(&params, shape, &gpu.info.limits)?;
    let prepared = Prepared::new(&gpu, step, params)?;
    let (launch, resources) = prepared.plan(&gpu.info, shape)?;

    let inputs = Inputs::random(shape, args.seed);
    let mut bufs = Buffers::upload(&gpu, &inputs)?;
    let plan = Plan::new(args.reps);
    let (c, time) = run_and_time(&gpu, &prepared, launch, shape, &mut bufs, plan)?;

    let blas = if with_cublas { Some(Blas::new(gpu.stream.clone())?) } else { None };
    let cublas_time = blas.as_ref().map(|blas| time_cublas(&gpu, blas, shape, &bufs, plan)).transpose()?;
    drop(bufs);

    let verdict = if args.no_verify {
        None
    } else {
        let r = reference(&gpu, blas.as_ref(), &inputs)?;
        Some(verify::verify(shape, &c, &r))
    };
    let report = Report {
        step: step.name.to_owned(),
        device: Device::Gpu(gpu.info.clone()),
        shape,
        kernel: Some(KernelFacts { params: prepared.params.clone(), launch, resources }),
        time,
        cublas: cublas_time,
        verdict,
        notes,
    };
    print!("{report}");
    Ok(verdict.is_none_or(|v| v.passed()))
}

/// Runs the CPU `matmul` over bands of rows, so a progress bar can follow a long run. A row of
/// C depends only on the same row of A, so the bands compute exactly what one call would.
pub fn cpu_product(shape: Shape, inputs: &Inputs, c: &mut [f32], matmul: CpuMatmul) {
    let Shape { m: _, n, k } = shape;
    const BAND: usize = 16;
    let bar = crate::progress::bar("matmul", shape.m.div_ceil(BAND) as u64, shape.flops());
    for (band, c_band) in c.chunks_mut(BAND * n).enumerate() {
        let rows = c_band.len() / n;
        let a_band = &inputs.a.data[band * BAND * k..(band * BAND + rows) * k];
        matmul(rows, n, k, a_band, &inputs.b.data, c_band);
        bar.inc(1);
    }
    bar.finish_and_clear();
}

/// The whole run of a CPU step.
pub fn run_cpu(name: &str, default_size: usize, matmul: CpuMatmul, args: &Args) -> Result<bool> {
    if !args.params.is_empty() || args.tune {
        bail!("{name} runs on the CPU and has no kernel parameters to set or tune");
    }
    let shape = shape_of(args, Shape::square(default_size).map_err(|e| anyhow!(e))?)?;
    let inputs = Inputs::random(shape, args.seed);
    let mut c = vec![f32::NAN; shape.m * shape.n];
    let time = timing::time_cpu(Plan::new(args.reps), || cpu_product(shape, &inputs, &mut c, matmul));
    let verdict: Option<Verdict> =
        (!args.no_verify).then(|| verify::verify(shape, &c, &reference::cpu(&inputs)));
    let report = Report {
        step: name.to_owned(),
        device: Device::Cpu,
        shape,
        kernel: None,
        time,
        cublas: None,
        verdict,
        notes: vec![],
    };
    print!("{report}");
    Ok(verdict.is_none_or(|v| v.passed()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_beyond_free_memory_are_refused_before_allocating() {
        let s = Shape::square(1024).unwrap();
        assert_eq!(memory_needed(s, false), 3 * 4 * 1024 * 1024);
        assert_eq!(memory_needed(s, true), 4 * 4 * 1024 * 1024);
        assert!(check_fits(s, true, 16 << 20, "GPU").is_ok());
        let err = check_fits(s, true, (16 << 20) - 1, "Test GPU").unwrap_err().to_string();
        assert!(err.contains("needs 0.02 GiB of GPU memory but Test GPU has 0.02 GiB free"), "{err}");
    }
}

//! Measuring one launch on the device: the buffers of a shape, a kernel run on a poisoned C
//! and timed, cuBLAS run the same way, and the f64 reference. `run` (a step's program) and
//! `tune` (the search over parameters) both measure through these.

use anyhow::{Result, anyhow};
use cudarc::driver::{CudaSlice, DevicePtrMut};

use crate::cublas::Blas;
use crate::fp32_path::Paths;
use crate::gpu::Gpu;
use crate::matrix::{Inputs, Shape};
use crate::reference::{self, Reference};
use crate::step::Geometry;
use crate::step_kernel::StepKernel;
use crate::timing::{self, Sampling, Stats};

/// A, B and C on the device for one shape, and Bᵀ once a step that wants it has run.
pub struct Buffers {
    pub a: CudaSlice<f32>,
    pub b: CudaSlice<f32>,
    pub bt: Option<CudaSlice<f32>>,
    pub c: CudaSlice<f32>,
    pub shape: Shape,
}

/// Bᵀ (N×K, row-major) of a row-major K×N matrix `b`.
pub fn transpose(b: &[f32], k: usize, n: usize) -> Vec<f32> {
    assert_eq!(b.len(), k * n, "B must hold K·N elements");
    let mut bt = vec![0.0f32; k * n];
    for (p, row) in b.chunks_exact(n.max(1)).enumerate() {
        for (j, &v) in row.iter().enumerate() {
            bt[j * k + p] = v;
        }
    }
    bt
}

impl Buffers {
    pub fn upload(gpu: &Gpu, inputs: &Inputs) -> Result<Self> {
        let s = &gpu.stream;
        let err = |e| anyhow!("copying the inputs to the GPU failed: {e:?}");
        Ok(Self {
            a: s.clone_htod(&inputs.a.data).map_err(err)?,
            b: s.clone_htod(&inputs.b.data).map_err(err)?,
            bt: None,
            c: s.alloc_zeros(inputs.shape.m * inputs.shape.n).map_err(err)?,
            shape: inputs.shape,
        })
    }

    /// Makes Bᵀ (N×K) on the host, outside any timing, if `step_kernel`'s kernel expects it.
    pub fn transpose_b_for(&mut self, gpu: &Gpu, step_kernel: &StepKernel) -> Result<()> {
        if self.bt.is_some() || !(step_kernel.step.b_transposed)(&step_kernel.params) {
            return Ok(());
        }
        let b = gpu
            .stream
            .clone_dtoh(&self.b)
            .map_err(|e| anyhow!("copying B back from the GPU failed: {e:?}"))?;
        let bt = transpose(&b, self.shape.k, self.shape.n);
        drop(b);
        self.bt =
            Some(gpu.stream.clone_htod(&bt).map_err(|e| anyhow!("copying Bᵀ to the GPU failed: {e:?}"))?);
        Ok(())
    }

    /// A, the B that `step_kernel`'s kernel expects (B or Bᵀ), and C.
    pub fn operands(
        &mut self,
        step_kernel: &StepKernel,
    ) -> Result<(&CudaSlice<f32>, &CudaSlice<f32>, &mut CudaSlice<f32>)> {
        let b = if (step_kernel.step.b_transposed)(&step_kernel.params) {
            self.bt.as_ref().ok_or_else(|| anyhow!("Bᵀ was not step_kernel for {}", step_kernel.step.name))?
        } else {
            &self.b
        };
        Ok((&self.a, b, &mut self.c))
    }

    /// Fills C with NaN, so that an element no thread writes fails verification.
    pub fn poison(&mut self, gpu: &Gpu) -> Result<()> {
        poison(gpu, &mut self.c)
    }

    pub fn download_c(&self, gpu: &Gpu) -> Result<Vec<f32>> {
        download(gpu, &self.c)
    }
}

/// Fills `c` with NaN (every byte 0xFF).
pub fn poison(gpu: &Gpu, c: &mut CudaSlice<f32>) -> Result<()> {
    let bytes = c.num_bytes();
    let (ptr, _record) = c.device_ptr_mut(&gpu.stream);
    // SAFETY: `ptr` addresses `bytes` bytes of a live allocation on this stream.
    unsafe { cudarc::driver::result::memset_d8_async(ptr, 0xFF, bytes, gpu.stream.cu_stream()) }
        .map_err(|e| anyhow!("poisoning the output failed: {e:?}"))
}

fn download(gpu: &Gpu, c: &CudaSlice<f32>) -> Result<Vec<f32>> {
    gpu.stream.clone_dtoh(c).map_err(|e| anyhow!("copying C back from the GPU failed: {e:?}"))
}

/// Waits for the queued work; a fault inside the kernel surfaces here.
pub fn sync(gpu: &Gpu) -> Result<()> {
    crate::device::watch::wait(gpu, 1).map_err(|e| {
        anyhow!("the kernel failed while running ({e}); if you edited it, look for an out-of-bounds access")
    })
}

// ANCHOR: run_and_time
/// Runs one launch on poisoned output and returns C.
pub fn poisoned_run(
    gpu: &Gpu,
    step_kernel: &StepKernel,
    geometry: Geometry,
    shape: Shape,
    bufs: &mut Buffers,
) -> Result<Vec<f32>> {
    bufs.transpose_b_for(gpu, step_kernel)?;
    bufs.poison(gpu)?;
    let (a, b, c) = bufs.operands(step_kernel)?;
    step_kernel.enqueue(gpu, geometry, shape, a, b, c)?;
    sync(gpu)?;
    bufs.download_c(gpu)
}

/// One launch on poisoned output (its C is returned for verification), then the timed launches.
pub fn run_and_time(
    gpu: &Gpu,
    step_kernel: &StepKernel,
    geometry: Geometry,
    shape: Shape,
    bufs: &mut Buffers,
    sampling: Sampling,
) -> Result<(Vec<f32>, Stats)> {
    let c = poisoned_run(gpu, step_kernel, geometry, shape, bufs)?;
    let (a, b, c_dev) = bufs.operands(step_kernel)?;
    let product = || step_kernel.enqueue(gpu, geometry, shape, a, b, c_dev);
    let time = timing::time_gpu(gpu, sampling, product)?;
    Ok((c, time))
}
// ANCHOR_END: run_and_time

/// For a step with an FP32 path (steps 09 and 11): one more launch, outside the timed ones, with
/// that path timed apart; what it sent there and the launch's whole time in milliseconds.
pub fn paths_run(
    gpu: &Gpu,
    step_kernel: &StepKernel,
    geometry: Geometry,
    shape: Shape,
    bufs: &mut Buffers,
) -> Result<Option<(Paths, f64)>> {
    let Some(path) = step_kernel.fp32_path() else { return Ok(None) };
    let event = || {
        gpu.ctx
            .new_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(|e| anyhow!("creating an event: {e:?}"))
    };
    let (start, stop) = (event()?, event()?);
    path.time_next(gpu)?;
    let (a, b, c) = bufs.operands(step_kernel)?;
    start.record(&gpu.stream).map_err(|e| anyhow!("recording an event: {e:?}"))?;
    step_kernel.enqueue(gpu, geometry, shape, a, b, c)?;
    stop.record(&gpu.stream).map_err(|e| anyhow!("recording an event: {e:?}"))?;
    sync(gpu)?;
    let total = f64::from(start.elapsed_ms(&stop).map_err(|e| anyhow!("reading an event: {e:?}"))?);
    Ok(step_kernel.paths(gpu)?.map(|p| (p, total)))
}

/// cuBLAS SGEMM on the same inputs, into a C of its own, timed the same way as the kernel; with
/// `keep`, first one launch on poisoned output whose C is returned for verification.
pub fn cublas_run(
    gpu: &Gpu,
    blas: &Blas,
    shape: Shape,
    bufs: &Buffers,
    sampling: Sampling,
    keep: bool,
) -> Result<(Option<Vec<f32>>, Stats)> {
    let mut c = gpu
        .stream
        .alloc_zeros::<f32>(shape.m * shape.n)
        .map_err(|e| anyhow!("allocating cuBLAS's C: {e:?}"))?;
    let result = if keep {
        poison(gpu, &mut c)?;
        blas.sgemm(shape, &bufs.a, &bufs.b, &mut c)?;
        sync(gpu)?;
        Some(download(gpu, &c)?)
    } else {
        None
    };
    let time = timing::time_gpu(gpu, sampling, || blas.sgemm(shape, &bufs.a, &bufs.b, &mut c))?;
    Ok((result, time))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transpose_puts_b_kj_at_bt_jk() {
        // B is 2×3: rows [1 2 3] and [4 5 6]; Bᵀ is 3×2.
        assert_eq!(transpose(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], 2, 3), vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
        assert_eq!(transpose(&[7.0], 1, 1), vec![7.0]);
        let (k, n) = (5, 7);
        let b: Vec<f32> = (0..k * n).map(|x| x as f32).collect();
        assert_eq!(transpose(&transpose(&b, k, n), n, k), b, "twice is the identity");
    }
}

//! cuBLAS: the SGEMM baseline every step is measured against, and DGEMM for the reference.
//!
//! cuBLAS is column-major. A row-major M×N matrix is the same memory as a column-major N×M one,
//! its transpose, so row-major C = A·B is computed as column-major Cᵀ = Bᵀ·Aᵀ: call GEMM with
//! B first, m = N, n = M, and leading dimensions N (B), K (A), N (C). No data moves.

use std::sync::Arc;

use anyhow::{Result, anyhow};
use cudarc::cublas::sys::{cublasMath_t, cublasOperation_t};
use cudarc::cublas::{CudaBlas, Gemm, GemmConfig};
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr};

use crate::matrix::{Inputs, Shape};
use crate::reference::{Engine, Reference};

/// True when libcublas can be loaded (cudarc panics on first use otherwise).
pub fn present() -> bool {
    // SAFETY: only tries to open the shared library.
    unsafe { cudarc::cublas::sys::is_culib_present() }
}

pub struct Blas {
    blas: CudaBlas,
    stream: Arc<CudaStream>,
}

/// The GEMM arguments for row-major C = A·B.
pub fn row_major<T>(shape: Shape, one: T, zero: T) -> GemmConfig<T> {
    let Shape { m, n, k } = shape;
    GemmConfig {
        transa: cublasOperation_t::CUBLAS_OP_N,
        transb: cublasOperation_t::CUBLAS_OP_N,
        m: n as i32,
        n: m as i32,
        k: k as i32,
        alpha: one,
        lda: n as i32,
        ldb: k as i32,
        beta: zero,
        ldc: n as i32,
    }
}

impl Blas {
    /// A handle in the default math mode: strict FP32, no TF32 tensor cores, so the baseline
    /// computes what the course's kernels compute.
    pub fn new(stream: Arc<CudaStream>) -> Result<Self> {
        Self::with_math(stream, cublasMath_t::CUBLAS_DEFAULT_MATH)
    }

    /// A handle that lets SGEMM round its operands to TF32 and use the tensor cores: the
    /// baseline of a step that computes in TF32.
    pub fn tf32(stream: Arc<CudaStream>) -> Result<Self> {
        Self::with_math(stream, cublasMath_t::CUBLAS_TF32_TENSOR_OP_MATH)
    }

    fn with_math(stream: Arc<CudaStream>, math: cublasMath_t) -> Result<Self> {
        let blas = CudaBlas::new(stream.clone()).map_err(|e| anyhow!("could not start cuBLAS: {e:?}"))?;
        // SAFETY: the handle is live.
        unsafe { cudarc::cublas::sys::cublasSetMathMode(*blas.handle(), math) }
            .result()
            .map_err(|e| anyhow!("could not set cuBLAS's math mode: {e:?}"))?;
        Ok(Self { blas, stream })
    }

    /// Asks cuBLAS to spread its kernels over at most `sms` SMs (0: all of them), leaving the
    /// rest to work that runs beside it.
    pub fn set_sm_count_target(&self, sms: u32) -> Result<()> {
        // SAFETY: the handle is live.
        unsafe { cudarc::cublas::sys::cublasSetSmCountTarget(*self.blas.handle(), sms as i32) }
            .result()
            .map_err(|e| anyhow!("cuBLAS would not take an SM count target of {sms}: {e:?}"))
    }

    /// Row-major C = A·B in f32.
    pub fn sgemm(
        &self,
        shape: Shape,
        a: &CudaSlice<f32>,
        b: &CudaSlice<f32>,
        c: &mut CudaSlice<f32>,
    ) -> Result<()> {
        check_lengths(shape, a.len(), b.len(), c.len())?;
        // SAFETY: the lengths were checked against the shape.
        unsafe { self.blas.gemm(row_major(shape, 1.0f32, 0.0), b, a, c) }
            .map_err(|e| anyhow!("cuBLAS SGEMM failed: {e:?}"))
    }

    /// The f64 reference (C, |A|·|B| and the growth of the partial sums) by cuBLAS DGEMM on the
    /// device: seconds on the CPU become milliseconds.
    pub fn reference(&self, inputs: &Inputs) -> Result<Reference> {
        let s = inputs.shape;
        let c = self
            .stream
            .alloc_zeros::<f64>(s.m * s.n)
            .map_err(|e| anyhow!("allocating the reference on the GPU: {e:?}"))?;
        let mut engine = DgemmEngine { blas: self, shape: s, operands: None, c };
        crate::reference::compute(&mut engine, inputs, "cuBLAS DGEMM")
    }
}

/// The reference's products by cuBLAS DGEMM on the GPU (see [`crate::reference::Engine`]).
struct DgemmEngine<'a> {
    blas: &'a Blas,
    shape: Shape,
    operands: Option<(CudaSlice<f64>, CudaSlice<f64>)>,
    c: CudaSlice<f64>,
}

impl Engine for DgemmEngine<'_> {
    fn load(&mut self, a: Vec<f64>, b: Vec<f64>) -> Result<()> {
        let s = &self.blas.stream;
        self.operands = None;
        let up = |v: Vec<f64>| {
            s.clone_htod(&v).map_err(|e| anyhow!("copying the reference inputs to the GPU: {e:?}"))
        };
        self.operands = Some((up(a)?, up(b)?));
        s.memset_zeros(&mut self.c).map_err(|e| anyhow!("clearing the reference on the GPU: {e:?}"))
    }

    fn accumulate(&mut self, range: std::ops::Range<usize>) -> Result<()> {
        let Shape { m, n, k } = self.shape;
        let (a, b) = self.operands.as_ref().ok_or_else(|| anyhow!("no reference operands loaded"))?;
        // Row-major C += A[:, range]·B[range, :] is column-major Cᵀ += B[range, :]ᵀ·A[:, range]ᵀ,
        // A's slice starting at column range.start with its rows K apart.
        let mut cfg = row_major(Shape { m, n, k: range.len() }, 1.0f64, 1.0);
        cfg.ldb = k as i32;
        let b_rows = b.slice(range.start * n..);
        let a_cols = a.slice(range.start..);
        // SAFETY: B's slice holds range.len() rows of N, A's slice M rows K apart of which the
        // first range.len() columns are read, and C holds M×N.
        unsafe { self.blas.blas.gemm(cfg, &b_rows, &a_cols, &mut self.c) }
            .map_err(|e| anyhow!("cuBLAS DGEMM failed: {e:?}"))
    }

    fn norm_sq(&mut self) -> Result<f64> {
        let s = &self.blas.stream;
        let (ptr, _sync) = self.c.device_ptr(s);
        // DNRM2 counts elements in an int: a C past 2³¹ − 1 elements is measured in parts.
        let (elements, part) = (self.shape.m * self.shape.n, 1usize << 30);
        let mut sum_sq = 0.0f64;
        for start in (0..elements).step_by(part) {
            let mut norm = 0.0f64;
            let len = part.min(elements - start);
            // SAFETY: the handle is live, C holds M·N doubles of which this part reads `len` from
            // `start`, and the result goes to host memory (cuBLAS's default pointer mode),
            // written before the call returns.
            unsafe {
                cudarc::cublas::sys::cublasDnrm2_v2(
                    *self.blas.blas.handle(),
                    len as i32,
                    (ptr as *const f64).add(start),
                    1,
                    &mut norm,
                )
            }
            .result()
            .map_err(|e| anyhow!("cuBLAS DNRM2 failed: {e:?}"))?;
            sum_sq += norm * norm;
        }
        Ok(sum_sq)
    }

    fn result(&mut self) -> Result<Vec<f64>> {
        self.blas.stream.clone_dtoh(&self.c).map_err(|e| anyhow!("copying the reference back: {e:?}"))
    }
}

fn check_lengths(shape: Shape, a: usize, b: usize, c: usize) -> Result<()> {
    if a < shape.m * shape.k || b < shape.k * shape.n || c < shape.m * shape.n {
        return Err(anyhow!("GEMM buffers are smaller than the shape {shape} needs"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_major_maps_to_the_transposed_column_major_problem() {
        let cfg = row_major(Shape::new(3, 5, 7).unwrap(), 1.0f32, 0.0);
        assert_eq!((cfg.m, cfg.n, cfg.k), (5, 3, 7));
        assert_eq!((cfg.lda, cfg.ldb, cfg.ldc), (5, 7, 5));
    }
}

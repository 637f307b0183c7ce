//! cuBLAS: the SGEMM baseline every step is measured against, and DGEMM for the reference.
//!
//! cuBLAS is column-major. A row-major M×N matrix is the same memory as a column-major N×M one,
//! its transpose, so row-major C = A·B is computed as column-major Cᵀ = Bᵀ·Aᵀ: call GEMM with
//! B first, m = N, n = M, and leading dimensions N (B), K (A), N (C). No data moves.

use std::sync::Arc;

use anyhow::{Result, anyhow};
use cudarc::cublas::sys::{cublasMath_t, cublasOperation_t};
use cudarc::cublas::{CudaBlas, Gemm, GemmConfig};
use cudarc::driver::{CudaSlice, CudaStream};

use crate::matrix::{Inputs, Shape};
use crate::reference::Reference;

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

    fn dgemm(
        &self,
        shape: Shape,
        a: &CudaSlice<f64>,
        b: &CudaSlice<f64>,
        c: &mut CudaSlice<f64>,
    ) -> Result<()> {
        check_lengths(shape, a.len(), b.len(), c.len())?;
        // SAFETY: the lengths were checked against the shape.
        unsafe { self.blas.gemm(row_major(shape, 1.0f64, 0.0), b, a, c) }
            .map_err(|e| anyhow!("cuBLAS DGEMM failed: {e:?}"))
    }

    /// The f64 reference (C and |A|·|B|) by cuBLAS DGEMM on the device: seconds on the CPU
    /// become milliseconds.
    pub fn reference(&self, inputs: &Inputs) -> Result<Reference> {
        let shape = inputs.shape;
        let s = &self.stream;
        let up = |m: &[f32], abs: bool| -> Result<CudaSlice<f64>> {
            let v: Vec<f64> =
                m.iter().map(|&x| if abs { f64::from(x.abs()) } else { f64::from(x) }).collect();
            s.clone_htod(&v).map_err(|e| anyhow!("copying the reference inputs to the GPU: {e:?}"))
        };
        let run = |abs: bool| -> Result<Vec<f64>> {
            let a = up(&inputs.a.data, abs)?;
            let b = up(&inputs.b.data, abs)?;
            let mut c = s
                .alloc_zeros::<f64>(shape.m * shape.n)
                .map_err(|e| anyhow!("allocating the reference on the GPU: {e:?}"))?;
            self.dgemm(shape, &a, &b, &mut c)?;
            s.clone_dtoh(&c).map_err(|e| anyhow!("copying the reference back: {e:?}"))
        };
        Ok(Reference {
            c: run(false)?,
            abs: run(true)?,
            terms_sq: crate::reference::terms_sq(inputs),
            exact: inputs.exact,
            source: "cuBLAS DGEMM",
        })
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

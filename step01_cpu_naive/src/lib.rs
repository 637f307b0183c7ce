//! Step 01: the textbook triple loop on the CPU.
//!
//! C[i][j] is the dot product of row i of A with column j of B. Each term is one multiply and
//! one add, so the product costs 2·M·N·K floating-point operations; this loop performs them one
//! at a time on one core, accumulating in f32 as the GPU kernels will. It is the baseline every
//! later step is measured against, and the definition the kernels must agree with.

// ANCHOR: matmul
/// Row-major C = A·B: A is m×k, B is k×n, C is m×n.
pub fn matmul(m: usize, n: usize, k: usize, a: &[f32], b: &[f32], c: &mut [f32]) {
    for i in 0..m {
        for j in 0..n {
            let mut sum = 0.0f32;
            for p in 0..k {
                sum += a[i * k + p] * b[p * n + j];
            }
            c[i * n + j] = sum;
        }
    }
}
// ANCHOR_END: matmul

/// The size a run uses when none is given: a few seconds at most on a laptop.
pub const DEFAULT_SIZE: usize = 512;

pub const IDEA: &str = "the textbook triple loop on one CPU core, the baseline and the definition";

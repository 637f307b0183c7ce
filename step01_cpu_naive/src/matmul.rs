// Lab 01's loop. lib.rs includes this file, or a learner's copy of it in its place (build.rs).

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

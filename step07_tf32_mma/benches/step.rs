//! `cargo bench -p step07_tf32_mma`: this step, cuBLAS TF32 and cuBLAS SGEMM, timed with CUDA events.

fn main() {
    common::bench::run(&[&step07_tf32_mma::STEP], true);
}

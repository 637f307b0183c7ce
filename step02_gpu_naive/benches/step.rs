//! `cargo bench -p step02_gpu_naive`: this step and cuBLAS SGEMM, timed with CUDA events.

fn main() {
    common::bench::run(&[&step02_gpu_naive::STEP], true);
}

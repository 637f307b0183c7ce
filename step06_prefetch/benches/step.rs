//! `cargo bench -p step06_prefetch`: this step and cuBLAS SGEMM, timed with CUDA events.

fn main() {
    common::bench::run(&[&step06_prefetch::STEP], true);
}

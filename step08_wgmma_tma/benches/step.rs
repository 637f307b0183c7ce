//! `cargo bench -p step08_wgmma_tma`: this step, cuBLAS TF32 and cuBLAS SGEMM, timed with CUDA events.

fn main() {
    common::bench::run(&[&step08_wgmma_tma::STEP], true);
}

//! `cargo bench -p step12_persistent_clusters`: this step, cuBLAS TF32 and cuBLAS SGEMM, timed with CUDA events.

fn main() {
    common::bench::run(&[&step12_persistent_clusters::STEP], true);
}

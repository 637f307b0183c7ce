//! `cargo bench -p step09_3xtf32`: this step, cuBLAS TF32 and cuBLAS SGEMM, timed with CUDA events.

fn main() {
    common::bench::run(&[&step09_3xtf32::STEP], true);
}

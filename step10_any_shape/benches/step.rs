//! `cargo bench -p step10_any_shape`: this step and cuBLAS SGEMM, timed with CUDA events.

fn main() {
    common::bench::run(&[&step10_any_shape::STEP], true);
}

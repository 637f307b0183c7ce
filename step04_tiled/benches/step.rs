//! `cargo bench -p step04_tiled`: this step and cuBLAS SGEMM, timed with CUDA events.

fn main() {
    common::bench::run(&[&step04_tiled::STEP], true);
}

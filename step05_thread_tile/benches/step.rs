//! `cargo bench -p step05_thread_tile`: this step and cuBLAS SGEMM, timed with CUDA events.

fn main() {
    common::bench::run(&[&step05_thread_tile::STEP], true);
}

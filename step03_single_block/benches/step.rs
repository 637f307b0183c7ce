//! `cargo bench -p step03_single_block`: this step and cuBLAS SGEMM, timed with CUDA events.

fn main() {
    common::bench::run(&[&step03_single_block::STEP], true);
}

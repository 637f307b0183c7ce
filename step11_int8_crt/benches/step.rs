//! `cargo bench -p step11_int8_crt`: this step, cuBLAS SGEMM and cuBLAS TF32, timed with CUDA events.

fn main() {
    common::bench::run(&[&step11_int8_crt::STEP], true);
}

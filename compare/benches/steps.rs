//! `cargo bench -p compare`: every GPU step and cuBLAS (SGEMM and TF32) in one criterion group, so the
//! report sets them side by side (`MATMUL_BENCH_LARGE=1` adds 8192³).

fn main() {
    common::bench::run(&compare::GPU_STEPS, true);
}

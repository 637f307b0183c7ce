use std::process::ExitCode;

fn main() -> ExitCode {
    common::run::gpu_main(&step07_tf32_mma::STEP)
}

use std::process::ExitCode;

fn main() -> ExitCode {
    common::run::gpu_main(&step02_gpu_naive::STEP)
}

use std::process::ExitCode;

fn main() -> ExitCode {
    common::run::gpu_main(&step06_prefetch::STEP)
}

use std::process::ExitCode;

fn main() -> ExitCode {
    common::run::gpu_main(&step09_3xtf32::STEP)
}

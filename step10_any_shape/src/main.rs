use std::process::ExitCode;

fn main() -> ExitCode {
    common::run::gpu_main(&step10_any_shape::STEP)
}

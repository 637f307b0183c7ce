use std::process::ExitCode;

fn main() -> ExitCode {
    common::run::gpu_main(&step04_tiled::STEP)
}

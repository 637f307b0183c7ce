use std::process::ExitCode;

fn main() -> ExitCode {
    common::run::gpu_main(&step05_thread_tile::STEP)
}

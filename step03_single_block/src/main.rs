use std::process::ExitCode;

fn main() -> ExitCode {
    common::run::gpu_main(&step03_single_block::STEP)
}

use std::process::ExitCode;

fn main() -> ExitCode {
    common::run::gpu_main(&step11_int8_crt::STEP)
}

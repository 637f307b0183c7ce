use std::process::ExitCode;

fn main() -> ExitCode {
    common::run::gpu_main(&step08_wgmma_tma::STEP)
}

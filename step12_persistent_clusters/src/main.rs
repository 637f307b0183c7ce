use std::process::ExitCode;

fn main() -> ExitCode {
    common::run::gpu_main(&step12_persistent_clusters::STEP)
}

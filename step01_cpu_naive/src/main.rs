use std::process::ExitCode;

fn main() -> ExitCode {
    common::run::cpu_main(
        "step01_cpu_naive",
        step01_cpu_naive::IDEA,
        step01_cpu_naive::DEFAULT_SIZE,
        step01_cpu_naive::matmul,
    )
}

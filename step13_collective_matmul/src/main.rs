use std::process::ExitCode;

fn main() -> ExitCode {
    step13_collective_matmul::main()
}

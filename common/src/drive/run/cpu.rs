//! A CPU step's run: its `main`, the product over bands of rows behind a progress bar, the
//! warning before a long one, and the report.

use std::process::ExitCode;

use anyhow::{Result, anyhow, bail};

use super::ask::{files_of, inputs_of, shape_of};
use super::budget::{check_host_fits, host_memory_available};
use super::judge::{exit_code, save_c};
use crate::cli::Args;
use crate::matrix::{Inputs, Shape};
use crate::reference;
use crate::report::{RanOn, Report};
use crate::step::chapter;
use crate::timing::{self, Sampling};
use crate::verify::{self, Precision, Verdict};

/// A CPU step's kernel: `matmul(m, n, k, a, b, c)` computes row-major C = A·B.
pub type CpuMatmul = fn(usize, usize, usize, &[f32], &[f32], &mut [f32]);

/// The `main` of a CPU step: `matmul(m, n, k, a, b, c)` computes row-major C = A·B.
pub fn cpu_main(name: &str, idea: &str, default_size: usize, matmul: CpuMatmul) -> ExitCode {
    let help = format!(
        "{name}: {idea}\n\nDefault shape: {default_size}×{default_size}×{default_size}.\nChapter: {} (read the book with `mdbook serve docs`).",
        chapter(name)
    );
    let args = Args::parse_for(idea, help, &Args::GPU_ONLY.map(|(id, _)| id), None);
    exit_code(crate::emit::guarding_json_to(args.json_to.as_deref(), || {
        run_cpu(name, default_size, matmul, &args)
    }))
}

/// Runs the CPU `matmul` over bands of rows, so a progress bar can follow a long run. A row of
/// C depends only on the same row of A, so the bands compute exactly what one call would. With
/// `announce`, a run whose first band predicts over a minute says so before going on.
pub fn cpu_product(shape: Shape, inputs: &Inputs, c: &mut [f32], matmul: CpuMatmul, announce: bool) {
    let Shape { m, n, k } = shape;
    // Up to 16 rows, about 10⁸ multiply-adds a band: the first band comes back within a second.
    let band = (100_000_000 / (n * k).max(1)).clamp(1, 16);
    let bar = crate::progress::bar("matmul", m.div_ceil(band) as u64, shape.flops());
    let started = std::time::Instant::now();
    for (i, c_band) in c.chunks_mut(band * n).enumerate() {
        let rows = c_band.len() / n;
        let a_band = &inputs.a.data[i * band * k..(i * band + rows) * k];
        matmul(rows, n, k, a_band, &inputs.b.data, c_band);
        bar.inc(1);
        if announce && i == 0 && rows < m {
            let whole = started.elapsed().as_secs_f64() * m as f64 / rows as f64;
            if let Some(said) = cpu_estimate(whole, rows) {
                bar.suspend(|| eprintln!("{said}"));
            }
        }
    }
    bar.finish_and_clear();
}

/// What a learner is told before a CPU run of `seconds` (measured on its first `rows` rows),
/// when that is over a minute.
pub fn cpu_estimate(seconds: f64, rows: usize) -> Option<String> {
    (seconds > 60.0).then(|| {
        format!(
            "note: this product will take about {} on one core (timed on its first {rows} rows); a smaller size finishes sooner",
            humantime::format_duration(std::time::Duration::from_secs(seconds as u64))
        )
    })
}

/// The whole run of a CPU step.
pub fn run_cpu(name: &str, default_size: usize, matmul: CpuMatmul, args: &Args) -> Result<bool> {
    let gpu_only = args.gpu_only_given();
    if !gpu_only.is_empty() {
        bail!(
            "{name} runs on the CPU and has no kernel to set, tune or compile: {} {} for the GPU steps only",
            gpu_only.join(", "),
            if gpu_only.len() == 1 { "is" } else { "are" }
        );
    }
    let files = files_of(args)?;
    let shape = shape_of(args, files.as_ref(), Shape::square(default_size).map_err(|e| anyhow!(e))?)?;
    check_host_fits(shape, !args.no_verify, (0, false), host_memory_available())?;
    let inputs = inputs_of(args, files, shape);
    let mut c = vec![f32::NAN; shape.m * shape.n];
    let mut first = true;
    let time = timing::time_cpu(Sampling::new(args.reps), || {
        cpu_product(shape, &inputs, &mut c, matmul, std::mem::take(&mut first));
    });
    save_c(args, shape, &c)?;
    let verdict: Option<Verdict> =
        (!args.no_verify).then(|| verify::verify(shape, &c, &reference::cpu(&inputs), Precision::Fp32));
    let report = Report::new(name.to_owned(), RanOn::Cpu, &inputs, Precision::Fp32, time, verdict);
    crate::emit::emit(&report, args)?;
    Ok(verdict.is_none_or(|v| v.passed()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_cpu_runs_are_announced() {
        assert_eq!(cpu_estimate(59.0, 16), None);
        let said = cpu_estimate(137.4, 16).unwrap();
        assert!(said.contains("about 2m 17s") && said.contains("first 16 rows"), "{said}");
    }
}

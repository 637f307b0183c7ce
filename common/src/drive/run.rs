//! What a step's `main` does: parse the command line, run, verify, time, compare, report.

use std::process::ExitCode;

use anyhow::{Result, anyhow, bail};

use crate::cli::Args;
use crate::compile_only;
use crate::cublas::{self, Blas};
use crate::files;
use crate::gpu::{self, Gpu, Limits};
use crate::launch::Prepared;
use crate::matrix::{Inputs, Shape};
use crate::reference;
use crate::report::{Device, KernelFacts, Report};
use crate::session::{Buffers, cublas_run, paths_run, reference, run_and_time};
use crate::step::{GpuStep, Params, chapter};
use crate::timing::{self, Plan};
use crate::verify::{self, Precision, Verdict};

/// A CPU step's kernel: `matmul(m, n, k, a, b, c)` computes row-major C = A·B.
pub type CpuMatmul = fn(usize, usize, usize, &[f32], &[f32], &mut [f32]);

/// The `main` of every GPU step.
pub fn gpu_main(step: &GpuStep) -> ExitCode {
    // A step without parameters refuses --param and --tune: its help does not offer them.
    let hidden: &[&str] = if step.params.is_empty() { &["params", "tune"] } else { &[] };
    let args = Args::parse_for(step.idea, step.help(), hidden);
    exit_code(run_gpu(step, &args))
}

/// The `main` of a CPU step: `matmul(m, n, k, a, b, c)` computes row-major C = A·B.
pub fn cpu_main(name: &str, idea: &str, default_size: usize, matmul: CpuMatmul) -> ExitCode {
    let help = format!(
        "{name}: {idea}\n\nDefault shape: {default_size}×{default_size}×{default_size}.\nChapter: {} (read the book with `mdbook serve docs`).",
        chapter(name)
    );
    let args = Args::parse_for(idea, help, &Args::GPU_ONLY.map(|(id, _)| id));
    exit_code(run_cpu(name, default_size, matmul, &args))
}

/// Ok(true): all good; Ok(false): the report was printed and verification failed; Err: one sentence.
fn exit_code(outcome: Result<bool>) -> ExitCode {
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("error: the result is wrong (see the verify line above)");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The shape asked for: the files' when A and B come from files, else the command line's, with
/// `default` for what it leaves out.
fn shape_of(args: &Args, files: Option<&Inputs>, default: Shape) -> Result<Shape> {
    if let Some(x) = files {
        return Ok(x.shape);
    }
    let (m, n, k) = args.shape((default.m, default.n, default.k));
    Shape::new(m, n, k).map_err(|e| anyhow!(e))
}

/// A and B read from the files of --a and --b (None without them). The files give the shape; a
/// dimension given on the command line as well must agree with them.
pub fn files_of(args: &Args) -> Result<Option<Inputs>> {
    let (Some(a_spec), Some(b_spec)) = (&args.a, &args.b) else { return Ok(None) };
    let a = files::read_matrix(a_spec, "A")?;
    let b = files::read_matrix(b_spec, "B")?;
    let x =
        Inputs::from_matrices(a, b, format!("A from {a_spec}, B from {b_spec}")).map_err(|e| anyhow!(e))?;
    let s = x.shape;
    for (dim, flag, given, have) in [
        ("M", "-m", args.m.or(args.size), s.m),
        ("N", "-n", args.n.or(args.size), s.n),
        ("K", "-k", args.k.or(args.size), s.k),
    ] {
        if given.is_some_and(|g| g != have) {
            bail!(
                "the files give {dim} = {have}, but {flag} or --size asks for {}; leave the shape out when A and B come from files",
                given.unwrap_or_default()
            );
        }
    }
    Ok(Some(x))
}

/// The run's inputs: the files', or the family asked for drawn at `shape`.
fn inputs_of(args: &Args, files: Option<Inputs>, shape: Shape) -> Inputs {
    files.unwrap_or_else(|| Inputs::family(shape, args.seed, args.family()))
}

/// Writes C where --save-c asks.
fn save_c(args: &Args, shape: Shape, c: &[f32]) -> Result<()> {
    match &args.save_c {
        Some(path) => files::write_npy(path, shape.m, shape.n, c),
        None => Ok(()),
    }
}

/// Device memory the run needs: A, B and C, and a second C for cuBLAS.
pub fn memory_needed(shape: Shape, with_cublas: bool) -> u64 {
    shape.f32_bytes() + if with_cublas { 4 * (shape.m * shape.n) as u64 } else { 0 }
}

/// Refuses a shape whose buffers, and `extra` bytes a step needs besides them (Bᵀ), do not fit
/// in `free` bytes, before any allocation fails.
pub fn check_fits(shape: Shape, with_cublas: bool, extra: u64, free: u64, device: &str) -> Result<()> {
    let need = memory_needed(shape, with_cublas).saturating_add(extra);
    if need > free {
        bail!(
            "the shape {shape} needs {:.2} GiB of GPU memory but {device} has {:.2} GiB free; choose a smaller shape",
            gib(need),
            gib(free)
        );
    }
    Ok(())
}

fn gib(bytes: u64) -> f64 {
    bytes as f64 / (1u64 << 30) as f64
}

/// Bytes of Bᵀ a kernel that wants it needs besides A, B and C (on the device, and twice on the
/// host while it is made: B copied back and Bᵀ).
fn transposed_b_bytes(step: &GpuStep, params: &Params, shape: Shape) -> u64 {
    if (step.b_transposed)(params) { 4 * (shape.k * shape.n) as u64 } else { 0 }
}

/// Device bytes a step's launch needs besides A, B and C: Bᵀ, the padded copies of a step whose
/// launch pads rows, and what the step's own launch adds (step 10's slices of a split product,
/// step 11's residues).
fn device_workspace_bytes(step: &GpuStep, params: &Params, shape: Shape) -> u64 {
    (transposed_b_bytes(step, params, shape) + crate::pad::workspace_bytes(step.padded_shape(params, shape)))
        .saturating_add(step.hooks.workspace_bytes(params, shape))
}

fn check_memory(gpu: &Gpu, shape: Shape, with_cublas: bool, extra: u64) -> Result<()> {
    let free = gpu.ctx.mem_get_info().map(|(free, _)| free as u64).unwrap_or(gpu.info.total_mem as u64);
    check_fits(shape, with_cublas, extra, free, &gpu.info.name)
}

/// Host memory a run needs at its peak: A and B in f32, the result, and with verification the
/// f64 reference (C and |A|·|B|) with its work arrays (A, B, |A| and |B| in f64).
pub fn host_memory_needed(shape: Shape, verify: bool) -> u64 {
    let (ab, c) = ((shape.m * shape.k + shape.k * shape.n) as u64, (shape.m * shape.n) as u64);
    // Verifying: the reference's C and |A|·|B| and one more M×N product at a time, in f64, and
    // two pairs of f64 operands while one replaces the other.
    4 * ab + 4 * c + if verify { 16 * ab + 24 * c } else { 0 }
}

/// Host memory this program can still take: the kernel's MemAvailable, or what is left under
/// the process's address-space limit (`ulimit -v`) when that is lower; None when neither can be
/// read.
pub fn host_memory_available() -> Option<u64> {
    let field = |text: &str, name: &str, col: usize| -> Option<u64> {
        text.lines().find(|l| l.starts_with(name))?.split_whitespace().nth(col)?.parse().ok()
    };
    let read = |path: &str| std::fs::read_to_string(path).ok();
    let available = read("/proc/meminfo").and_then(|t| field(&t, "MemAvailable:", 1)).map(|kib| kib * 1024);
    // "Max address space   <soft> <hard> bytes"; "unlimited" does not parse. What is mapped
    // already (VmSize, in KiB) counts against it.
    let limit = read("/proc/self/limits").and_then(|t| field(&t, "Max address space", 3));
    let mapped = read("/proc/self/status").and_then(|t| field(&t, "VmSize:", 1)).map(|kib| kib * 1024);
    let left = limit.map(|l| l.saturating_sub(mapped.unwrap_or(0)));
    match (available, left) {
        (Some(a), Some(l)) => Some(a.min(l)),
        (a, l) => a.or(l),
    }
}

/// Refuses, before anything is allocated, a shape whose host buffers, and `extra` bytes a step
/// needs besides them, exceed `available` bytes.
pub fn check_host_fits(shape: Shape, verify: bool, extra: u64, available: Option<u64>) -> Result<()> {
    let need = host_memory_needed(shape, verify) + extra;
    match available {
        Some(free) if need > free => bail!(
            "the shape {shape} needs {:.1} GiB of host memory for {} but this machine has {:.1} GiB available; \
             choose a smaller shape{}",
            gib(need),
            if verify { "the inputs, the result and the f64 reference" } else { "the inputs and the result" },
            gib(free),
            if verify { " or add --no-verify" } else { "" }
        ),
        _ => Ok(()),
    }
}

/// The whole run of a GPU step. Returns whether verification passed (true when skipped).
pub fn run_gpu(step: &GpuStep, args: &Args) -> Result<bool> {
    run_gpu_with(step, args, cublas::present())
}

/// [`run_gpu`] with the answer to "could libcublas be loaded?" given, so that a test can take
/// the path of a machine without cuBLAS: no baseline, the reference on the CPU, and a note.
pub fn run_gpu_with(step: &GpuStep, args: &Args, cublas_found: bool) -> Result<bool> {
    let edited = match (&args.kernel, &args.stage) {
        (Some(path), _) => Some(compile_only::with_kernel(step, path)?),
        (None, Some(name)) => Some(step.stage(name)?),
        (None, None) => None,
    };
    let step = edited.as_ref().unwrap_or(step);
    // Everything that needs no GPU is checked first, so that a machine without one still names
    // the real problem: parameters, the shape (against the most any GPU allows), host memory.
    let files = files_of(args)?;
    let asked = shape_of(args, files.as_ref(), (step.default_shape)(&Limits::LARGEST))?;
    // A step that chooses per shape chooses here as for an H100's SMs, and again once the GPU is open.
    let (params, choice) = step.params_for(asked, crate::step::SMS_BEFORE_OPENING, &args.params)?;
    if args.compile_only {
        return compile_only::run(step, args, &params, asked, choice.as_ref().map(|c| c.why.as_str()));
    }
    if args.arch.is_some() {
        bail!("--arch goes with --compile-only; a run compiles for the GPU it runs on");
    }
    if args.cubin.is_some() {
        bail!("--cubin goes with --compile-only: add --compile-only to write the machine code");
    }
    if !args.tune {
        step.validate(&params, asked, &Limits::LARGEST)?;
    }
    // Verifying keeps the baselines' results too (SGEMM's, and TF32's for a tensor-core step),
    // to show their errors beside the step's.
    let baselines = match (args.no_verify || args.no_cublas || !cublas_found, step.precision.tensor_cores()) {
        (true, _) => 0,
        (false, tf32) => 1 + u64::from(tf32),
    };
    check_host_fits(
        asked,
        !args.no_verify,
        2 * transposed_b_bytes(step, &params, asked) + baselines * 4 * (asked.m * asked.n) as u64,
        host_memory_available(),
    )?;

    let gpu = gpu::open(step.name, args.ordinal())?;
    step.check_compute(gpu.info.compute_capability, &gpu.info.name)?;
    if !gpu::nvrtc_present() {
        bail!("{}", gpu::NO_NVRTC);
    }
    let shape = shape_of(args, files.as_ref(), (step.default_shape)(&gpu.info.limits))?;
    let (params, choice) = step.params_for(shape, gpu.info.sms, &args.params)?;
    let mut notes = Vec::new();
    let with_cublas = !args.no_cublas && cublas_found;
    if !args.no_cublas && !with_cublas {
        notes.push(
            "cuBLAS (libcublas) was not found: no baseline column, and the reference runs on the CPU"
                .to_owned(),
        );
    }
    check_memory(&gpu, shape, with_cublas, device_workspace_bytes(step, &params, shape))?;
    let inputs = inputs_of(args, files, shape);
    if args.tune {
        return crate::tune::run(step, args, &gpu, &inputs);
    }
    // Reject the shape before the (slower) compile when the step cannot serve it here.
    step.validate(&params, shape, &gpu.info.limits)?;
    let prepared = Prepared::new(&gpu, step, params)?;
    let (launch, resources) = prepared.plan(&gpu.info, shape)?;

    let mut bufs = Buffers::upload(&gpu, &inputs)?;
    let plan = Plan::new(args.reps);
    let (c, time) = run_and_time(&gpu, &prepared, launch, shape, &mut bufs, plan)?;
    let paths = paths_run(&gpu, &prepared, launch, shape, &mut bufs)?;
    save_c(args, shape, &c)?;

    // The baselines' results are kept when verifying, to show their own errors beside the step's.
    let keep = !args.no_verify;
    let blas = if with_cublas { Some(Blas::new(gpu.stream.clone())?) } else { None };
    let (sgemm_c, cublas_time) = match &blas {
        Some(blas) => {
            let (c, t) = cublas_run(&gpu, blas, shape, &bufs, plan, keep)?;
            (c, Some(t))
        }
        None => (None, None),
    };
    // A step that uses the tensor cores is also set against cuBLAS allowed to do the same.
    let (tf32_c, cublas_tf32_time) = if with_cublas && step.precision.tensor_cores() {
        let tf32 = Blas::tf32(gpu.stream.clone())?;
        let (c, t) = cublas_run(&gpu, &tf32, shape, &bufs, plan, keep)?;
        (c, Some(t))
    } else {
        (None, None)
    };
    drop(bufs);

    let mut baseline_errors = Vec::new();
    let verdict = if args.no_verify {
        None
    } else {
        let r = reference(&gpu, blas.as_ref(), &inputs)?;
        for (name, c) in [("cuBLAS SGEMM", sgemm_c), ("cuBLAS TF32", tf32_c)] {
            if let Some(c) = c {
                baseline_errors
                    .push((name, verify::verify(shape, &c, &r, Precision::Fp32).normwise.relative()));
            }
        }
        Some(verify::verify(shape, &c, &r, step.precision))
    };
    let report = Report {
        step: match (&args.kernel, &args.stage) {
            (Some(path), _) => format!("{} (kernel from {})", step.name, path.display()),
            (None, Some(name)) => format!("{} (stage {name})", step.name),
            (None, None) => step.name.to_owned(),
        },
        device: Device::Gpu(gpu.info.clone()),
        shape,
        inputs: inputs.source.clone(),
        kernel: Some(KernelFacts {
            params: prepared.params.clone(),
            launch,
            resources,
            padded: step.padded_shape(&prepared.params, shape),
            why: choice.as_ref().map(|c| c.why.clone()),
            predicted_us: choice.and_then(|c| c.predicted_us),
            adds: step.hooks.report_line(&prepared.params, launch.grid),
        }),
        time,
        cublas: cublas_time,
        cublas_tf32: cublas_tf32_time,
        precision: step.precision,
        verdict,
        baseline_errors,
        notes,
        paths,
    };
    print!("{report}");
    Ok(verdict.is_none_or(|v| v.passed()))
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
    check_host_fits(shape, !args.no_verify, 0, host_memory_available())?;
    let inputs = inputs_of(args, files, shape);
    let mut c = vec![f32::NAN; shape.m * shape.n];
    let mut first = true;
    let time = timing::time_cpu(Plan::new(args.reps), || {
        cpu_product(shape, &inputs, &mut c, matmul, std::mem::take(&mut first));
    });
    save_c(args, shape, &c)?;
    let verdict: Option<Verdict> =
        (!args.no_verify).then(|| verify::verify(shape, &c, &reference::cpu(&inputs), Precision::Fp32));
    let report = Report {
        step: name.to_owned(),
        device: Device::Cpu,
        shape,
        inputs: inputs.source.clone(),
        kernel: None,
        time,
        cublas: None,
        cublas_tf32: None,
        precision: Precision::Fp32,
        verdict,
        baseline_errors: vec![],
        notes: vec![],
        paths: None,
    };
    print!("{report}");
    Ok(verdict.is_none_or(|v| v.passed()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_beyond_free_memory_are_refused_before_allocating() {
        let s = Shape::square(1024).unwrap();
        assert_eq!(memory_needed(s, false), 3 * 4 * 1024 * 1024);
        assert_eq!(memory_needed(s, true), 4 * 4 * 1024 * 1024);
        assert!(check_fits(s, true, 0, 16 << 20, "GPU").is_ok());
        assert!(check_fits(s, true, 1, 16 << 20, "GPU").is_err(), "Bᵀ's bytes count too");
        let err = check_fits(s, true, 0, (16 << 20) - 1, "Test GPU").unwrap_err().to_string();
        assert!(err.contains("needs 0.02 GiB of GPU memory but Test GPU has 0.02 GiB free"), "{err}");
    }

    #[test]
    fn host_memory_counts_inputs_result_and_reference() {
        let s = Shape::new(2, 3, 5).unwrap();
        // A and B: 10 + 15 elements; C: 6.
        assert_eq!(host_memory_needed(s, false), 4 * 25 + 4 * 6);
        assert_eq!(host_memory_needed(s, true), 20 * 25 + 28 * 6);
    }

    #[test]
    fn shapes_beyond_host_memory_are_refused_in_one_sentence() {
        let s = Shape::new(46_340, 46_340, 1).unwrap();
        let err = check_host_fits(s, true, 0, Some(24 << 30)).unwrap_err().to_string();
        assert!(err.starts_with("the shape M=46340 N=46340 K=1 needs 56.0 GiB of host memory"), "{err}");
        assert!(err.contains("24.0 GiB available") && err.contains("--no-verify"), "{err}");
        assert!(check_host_fits(s, false, 0, Some(24 << 30)).is_ok());
        assert!(check_host_fits(s, false, 24 << 30, Some(24 << 30)).is_err(), "extra bytes count too");
        assert!(check_host_fits(s, true, 0, None).is_ok(), "no figure to check against");
    }

    #[test]
    fn long_cpu_runs_are_announced() {
        assert_eq!(cpu_estimate(59.0, 16), None);
        let said = cpu_estimate(137.4, 16).unwrap();
        assert!(said.contains("about 2m 17s") && said.contains("first 16 rows"), "{said}");
    }
}

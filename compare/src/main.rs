//! `cargo run --release -p compare`: every step and cuBLAS over a range of sizes, verified,
//! with a table on standard output and a results page, chart and roofline written for the book.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, anyhow, bail};
use clap::Parser;
use common::cli::{parse_dim, parse_reps};
use common::cublas::{self, Blas};
use common::gpu::Gpu;
use common::matrix::Family;
use common::measure::{self, Buffers};
use common::measure::{Measured, Recipe, StepKernels};
use common::run;
use common::timing::{self, Sampling};
use common::{GpuStep, Inputs, Intensity, Params, Precision, Shape, gpu, verify};
use compare::{CUBLAS, CUBLAS_TF32, Cell, GPU_STEPS, Results, command_line, dram, slug};

mod families_run;
mod gate_run;
mod predicted_run;
mod tables_run;

#[derive(Parser, Debug)]
#[command(group = clap::ArgGroup::new("shapes").args(["suite", "held_out", "chosen"]).multiple(false))]
// A group of one for --seed to require: with a plain `requires = "held_out"`, `--suite --seed N`
// was accepted (the test below refuses it).
#[command(group = clap::ArgGroup::new("held").args(["held_out"]))]
// What --steps restricts: a run of shapes, or the gate.
#[command(group = clap::ArgGroup::new("stepped").args(["suite", "held_out", "chosen", "gate"]).multiple(true))]
#[command(
    allow_negative_numbers = true,
    args_conflicts_with_subcommands = true,
    about = "Runs every step and cuBLAS (SGEMM, and TF32 where the GPU has it) over square sizes, verifies each, and \
             writes a table and a chart"
)]
struct CompareArgs {
    /// Square sizes to run, comma-separated (run in increasing order).
    #[arg(long, value_delimiter = ',', default_value = "256,512,1024,2048,4096", value_parser = parse_dim)]
    sizes: Vec<usize>,
    /// Add 8192³ (0.75 GiB of A, B and C).
    #[arg(long)]
    large: bool,
    /// The CPU step runs only up to this size (at about 0.5 GFLOP/s, 1024³ takes about five seconds).
    #[arg(long, default_value_t = 1024)]
    cpu_max: usize,
    /// Timed samples per step and size (default: at least 20, about half a second).
    #[arg(long, value_parser = parse_reps)]
    reps: Option<usize>,
    /// Where the results page and charts go. The default is under `target/`, so that a run never
    /// writes over the book's records; a run the book quotes is copied to docs/src/results/runs/
    /// under its date.
    #[arg(long, default_value = "target/compare")]
    out: PathBuf,
    /// Which GPU to use.
    #[arg(long, default_value_t = 0)]
    device: usize,
    /// The family of random inputs (as a step's --inputs takes it): uniform (the default),
    /// normal, positive, lognormal:σ, wide:E, gram, identity+noise:ε or integers.
    #[arg(long, value_name = "KIND", default_value = "uniform", value_parser = Family::parse)]
    inputs: Family,
    /// Run the suite of shapes instead of square sizes (small and odd squares, a transformer
    /// layer's products, a matrix–vector product, deep and thin products): the GPU steps, step06's
    /// variants and cuBLAS, written as `<device>-suite.md` and a chart of share against shape.
    #[arg(long, conflicts_with_all = ["sizes", "large", "cpu_max"])]
    suite: bool,
    /// Run the held-out shapes instead: 48 shapes with M, N and K each log-uniform over
    /// [1, 16384] and M·N·K ≤ 2³⁶, from a fixed seed: a validation set, which no rule is fitted
    /// on but step 10's model was checked against while it was built; written as
    /// `<device>-held-out.md` with its chart.
    #[arg(long, conflicts_with_all = ["sizes", "large", "cpu_max", "suite"])]
    held_out: bool,
    /// Run these shapes instead of square sizes, comma-separated, each `S` (S³) or `MxNxK`
    /// (e.g. `--shapes 4096,1024x1024x4096`): the GPU steps (or --steps) beside cuBLAS, as
    /// --suite does, on the --inputs family; written as `<device>-shapes-<family>.md`.
    #[arg(long = "shapes", id = "chosen", value_delimiter = ',', value_parser = parse_shape,
          conflicts_with_all = ["sizes", "large", "cpu_max", "suite", "held_out"])]
    chosen: Vec<Shape>,
    /// With --held-out: draw the 48 shapes from this seed instead (decimal, or hex after 0x): a
    /// fresh set that nothing was tuned or looked at on, written as `<device>-held-out-0x<seed in hex>.md`.
    #[arg(long, requires = "held", value_parser = parse_seed)]
    seed: Option<u64>,
    /// With --suite, --held-out or --shapes: only these steps (and their variants) beside cuBLAS, by name
    /// or number, comma-separated (e.g. `--steps 10` or `--steps step06_prefetch,step10`). With
    /// --gate: only these labs, and only their entries of the record.
    #[arg(long, value_delimiter = ',', requires = "stepped")]
    steps: Vec<String>,
    /// Run steps 09 and 11 (FP32 from the tensor cores) and cuBLAS SGEMM on every input family
    /// at --size³, and on each --pair of files: per input the verdict, the worst element's share
    /// of its bound and the rate as a share of SGEMM's; written as `<device>-families.md`.
    #[arg(long, conflicts_with_all = ["sizes", "large", "cpu_max", "suite", "held_out", "inputs"])]
    families: bool,
    /// With --families: the size of the families' square products.
    #[arg(long, default_value_t = 4096, requires = "families", value_parser = parse_dim)]
    size: usize,
    /// With --families: M×K by K×N products in place of --size's square ones, M, N and K
    /// given together (e.g. -m 1024 -n 1024 -k 4096).
    #[arg(short, requires_all = ["families", "n", "k"], conflicts_with = "size", value_parser = parse_dim)]
    m: Option<usize>,
    /// With --families: see -m.
    #[arg(short, requires_all = ["families", "m", "k"], conflicts_with = "size", value_parser = parse_dim)]
    n: Option<usize>,
    /// With --families: see -m.
    #[arg(short, requires_all = ["families", "m", "n"], conflicts_with = "size", value_parser = parse_dim)]
    k: Option<usize>,
    /// With --families: A and B read from files (`.npy`, or `.safetensors:TENSOR`), as `A,B`;
    /// repeat for more pairs. The files give the shape.
    #[arg(long, value_name = "A,B", requires = "families")]
    pair: Vec<String>,
    /// Without a GPU: every lab at --sizes on the PTX emulator, its time on the GPU --gpu names
    /// predicted by the emulator's time model, in the same table and chart as a GPU run's, each
    /// rate marked predicted and set beside the share the GPU measured where its reference run
    /// is recorded (minutes on two cores; 4096³ and beyond take longest). Written as
    /// `h100-predicted-on-the-cpu.md` (for the H100) with its chart.
    #[arg(long, conflicts_with_all = ["suite", "held_out", "chosen", "families", "reps", "inputs", "device", "cpu_max"])]
    predicted: bool,
    /// With --predicted: the GPU the labs' launches copy and whose time the model predicts, by
    /// its profile's name (the H100 unless named).
    #[arg(long, value_name = "NAME", requires = "predicted", value_parser = common::cli::parse_gpu)]
    gpu: Option<&'static common::emulated::profile::Profile>,
    /// Draw the charts of a results record (a `.md` page this program wrote) again from the
    /// record alone, beside it, without a GPU: e.g. after the charts' drawing changed.
    #[arg(
        long,
        value_name = "RECORD",
        conflicts_with_all = ["sizes", "large", "suite", "held_out", "families", "out", "steps", "reps", "inputs", "predicted"]
    )]
    redraw: Option<PathBuf>,
    /// The gate, before a change to a kernel, a host path or a launch lands: every lab at its
    /// headline shapes beside its cuBLAS baseline (each lab that serves it at 4096³; steps 08, 09,
    /// 11 and 12 at 8192³, 2048³, 1024³ and 1024×1024×4096 too; step 10 on the suite's shapes;
    /// steps 09 and 11 on every family), each share set against this GPU's committed record
    /// (docs/src/results/gate/). A share more than 3% below its record is measured again, and
    /// fails if it is again; a wrong result, or an entry of the record not measured, fails too
    /// (exit status 1). Sampled alike every time (30 samples; --reps does not apply).
    #[arg(long, conflicts_with_all = [
        "sizes", "large", "cpu_max", "suite", "held_out", "chosen", "families", "predicted", "redraw",
        "inputs", "reps", "seed", "size", "m", "n", "k", "pair",
    ])]
    gate: bool,
    /// With --gate: measure a new record of this GPU instead of comparing with it, written as
    /// JSON and a table under --out's gate/ (every lab: not with --steps).
    #[arg(long, requires = "gate", conflicts_with = "steps")]
    record: bool,
    /// With --gate: compare with the record in this file (a JSON `--gate --record` wrote, for
    /// one just made and not yet committed) instead of the one this program carries.
    #[arg(long, value_name = "FILE", requires = "gate", conflicts_with = "record")]
    against: Option<PathBuf>,
    /// Without a GPU: the gate record whose every entry is the lowest share these records
    /// (JSON that `--gate --record` wrote on one GPU, comma-separated) measured, written under
    /// --out's gate/ as `--gate --record` writes one: a record a run of the same code meets.
    #[arg(long, value_name = "FILES", value_delimiter = ',', num_args = 1.., conflicts_with_all = ["gate", "redraw", "predicted"])]
    lower_of: Vec<PathBuf>,
    /// A table of the time model's, from records alone, without a GPU.
    #[command(subcommand)]
    table: Option<tables_run::Tables>,
}

/// Whether `name` (a step's, or a variant's `step (variant)`) is one of `wanted` (names or
/// numbers); every step when `wanted` is empty.
fn wanted(name: &str, wanted: &[String]) -> bool {
    let step = name.split(' ').next().unwrap_or(name);
    wanted.is_empty()
        || wanted.iter().any(|w| {
            step == w || step.strip_prefix("step").is_some_and(|s| s.starts_with(&format!("{w:0>2}_")))
        })
}

fn main() -> ExitCode {
    // The predictions compare makes read each kernel's registers from ptxas's report.
    common::gpu::keep_ptxas_reports();
    let command = command_line(
        &std::env::args_os().skip(1).map(|a| a.to_string_lossy().into_owned()).collect::<Vec<_>>(),
    );
    let args = CompareArgs::parse();
    let gate = args.gate;
    let result = if let Some(table) = &args.table {
        tables_run::run(table).map(|()| true)
    } else if let Some(record) = &args.redraw {
        compare::redraw(record).map(|written| {
            written.iter().for_each(|p| println!("wrote {}", p.display()));
            true
        })
    } else if !args.lower_of.is_empty() {
        gate_run::lower_of(&args).map(|()| true)
    } else if args.gate {
        gate_run::run(&args, command)
    } else if args.predicted {
        predicted_run::run(&args, command)
    } else if args.families {
        families_run::run(&args, command)
    } else if args.suite || args.held_out || !args.chosen.is_empty() {
        run_suite(&args, command)
    } else {
        run(args, command)
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) if gate => ExitCode::FAILURE, // the gate named each failure
        Ok(false) => {
            eprintln!("error: some results were wrong (FAILED in the table)");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: CompareArgs, command: String) -> Result<bool> {
    let sizes = sizes(&args);
    let gpu = open_gpu(args.device)?;
    let step_kernels = compile_steps(&gpu, GPU_STEPS.iter().map(|s| (s.name, *s)))?;
    let baselines = if cublas::present() { baselines(&gpu)? } else { Vec::new() };
    let sampling = Sampling::new(args.reps);
    let recipe = Recipe { paths: false, ..Recipe::timed(sampling, true) };

    // The DRAM roof, measured once before the steps allocate their buffers.
    let dram_gbs = dram::measure(&gpu, sampling)?;
    match dram_gbs {
        Some(gbs) => println!("DRAM bandwidth (copy kernel): {gbs:.0} GB/s"),
        None => println!(
            "DRAM bandwidth not measured: too little free memory to copy more than the L2 cache holds"
        ),
    }

    // A row per step, then per baseline: its name, intensity (GPU steps) and whether it is TF32.
    let heads: Vec<(&str, Option<Intensity>, Precision)> =
        std::iter::once(("step01_cpu_naive", None, Precision::Fp32))
            .chain(
                GPU_STEPS
                    .iter()
                    .map(|s| (s.name, Some((s.intensity)(&Params::defaults(s.params))), s.precision)),
            )
            .chain(baselines.iter().map(|&(name, _, precision)| (name, None, precision)))
            .collect();
    let mut rows: Vec<(String, Vec<Option<Cell>>)> = heads.iter().map(|h| (h.0.to_owned(), vec![])).collect();
    let intensities = heads.iter().map(|h| h.1).collect();
    let precision = heads.iter().map(|h| h.2).collect();
    let bar = common::progress::bar("compare", (sizes.len() * rows.len()) as u64, f64::INFINITY);

    for &size in &sizes {
        let shape = Shape::square(size).map_err(|e| anyhow!(e))?;
        bar.set_message(format!("{size}³"));
        let inputs = Inputs::family(shape, 42, args.inputs);
        let reference = measure::reference(&gpu, baselines.first().map(|b| &b.1), &inputs)?;
        let cell = |c: &[f32], t: timing::Stats, precision: Precision| Cell {
            gflops: t.gflops(shape.flops()),
            passed: verify::verify(shape, c, &reference, precision).passed(),
            held: t.held,
        };

        // The CPU step, where it finishes in reasonable time.
        rows[0].1.push((size <= args.cpu_max).then(|| {
            let mut c = vec![f32::NAN; size * size];
            let t = timing::time_cpu(Sampling::new(Some(1)), || {
                run::cpu_product(shape, &inputs, &mut c, step01_cpu_naive::matmul, false)
            });
            cell(&c, t, Precision::Fp32)
        }));
        bar.inc(1);

        let kernels = step_kernels.iter().map(Option::as_ref);
        let measured = measure(&gpu, &inputs, &reference, kernels, &baselines, recipe, &bar, false)?;
        for (row, cell) in rows[1..].iter_mut().zip(measured) {
            row.1.push(cell);
        }
    }
    bar.finish_and_clear();

    let (driver, nvrtc, date) = versions(&gpu);
    let results = Results {
        device: gpu.info.name.clone(),
        driver,
        nvrtc,
        date,
        command,
        predicted: false,
        sizes,
        rows,
        intensities,
        precision,
        peak_gflops: gpu.info.peak_gflops(),
        tf32_peak_gflops: gpu.info.tf32_peak_gflops(),
        dram_gbs,
        smem_gbs: compare::smem_gbs(gpu.info.sms, gpu.info.clock_mhz),
    };
    println!("{}", results.table());
    if let Some((size, x)) = results.speedup() {
        println!("step01_cpu_naive → the last FP32 step: {x:.0}× faster at {size}³");
    }

    let stem = slug(&results.device);
    std::fs::create_dir_all(&args.out).with_context(|| format!("creating {}", args.out.display()))?;
    let chart_file = format!("{stem}.svg");
    let md = args.out.join(format!("{stem}.md"));
    std::fs::write(&md, results.markdown(&chart_file))
        .with_context(|| format!("writing {}", md.display()))?;
    // The charts are drawn from the page just written, as `--redraw` draws them again later.
    let charts = compare::redraw(&md)?;
    let charts: Vec<String> = charts.iter().map(|p| p.display().to_string()).collect();
    println!("wrote {} and {}", md.display(), charts.join(" and "));
    Ok(results.rows.iter().flat_map(|(_, r)| r.iter().flatten()).all(|c| c.passed))
}

/// `--suite` (or `--held-out`): every GPU step at its defaults, step06's variants beside it, and
/// the cuBLAS baselines at each shape of [`compare::suite::SHAPES`] (or of
/// [`common::matrix::held_out`]).
fn run_suite(args: &CompareArgs, command: String) -> Result<bool> {
    let gpu = open_gpu(args.device)?;
    if !cublas::present() {
        bail!("the suite measures shares of cuBLAS, and libcublas could not be loaded");
    }
    let variants = GPU_STEPS.iter().flat_map(|s| s.variants.iter().map(move |v| (s, v))).map(|(s, v)| {
        let name = std::path::Path::new(v.file).file_stem().and_then(|s| s.to_str()).unwrap_or("variant");
        (format!("{} ({name})", s.name), s.with_variant(v, v.source, v.file))
    });
    let steps: Vec<(String, common::GpuStep)> = GPU_STEPS
        .iter()
        .map(|s| (s.name.to_owned(), common::GpuStep { ..**s }))
        .chain(variants)
        .filter(|(name, _)| wanted(name, &args.steps))
        .collect();
    if steps.is_empty() {
        bail!(
            "--steps {} names no step of the course (give names like step10_any_shape or numbers like 10)",
            args.steps.join(",")
        );
    }
    let step_kernels = compile_steps(&gpu, steps.iter().map(|(name, s)| (name.as_str(), s)))?;
    let baselines = baselines(&gpu)?;
    let recipe = Recipe { paths: false, ..Recipe::timed(Sampling::new(args.reps), true) };
    let (title, list, kind) = if !args.chosen.is_empty() {
        let list = args.chosen.iter().map(|s| (s.m, s.n, s.k)).collect();
        (format!("Chosen shapes, {} inputs", args.inputs), list, format!("shapes-{}", args.inputs))
    } else if args.held_out {
        let seed = args.seed.unwrap_or(common::matrix::HELD_OUT_SEED);
        let title = format!(
            "The held-out shapes (M, N and K log-uniform over [1, 16384], M·N·K ≤ 2³⁶, seed {seed:#x})"
        );
        let kind = match args.seed {
            Some(seed) => format!("held-out-{seed:#x}"),
            None => "held-out".to_owned(),
        };
        (title, common::matrix::held_out_from(seed, compare::suite::HELD_OUT), kind)
    } else {
        ("The suite of shapes".to_owned(), compare::suite::SHAPES.to_vec(), "suite".to_owned())
    };
    let shapes: Vec<Shape> =
        list.iter().map(|&(m, n, k)| Shape::new(m, n, k).map_err(|e| anyhow!(e))).collect::<Result<_>>()?;
    let mut rows: Vec<(String, Vec<Option<Cell>>)> = steps
        .iter()
        .map(|(name, _)| (name.clone(), vec![]))
        .chain(baselines.iter().map(|b| (b.0.to_owned(), vec![])))
        .collect();
    let precision: Vec<Precision> =
        steps.iter().map(|(_, s)| s.precision).chain(baselines.iter().map(|b| b.2)).collect();
    let bar = common::progress::bar(&kind, (shapes.len() * rows.len()) as u64, f64::INFINITY);
    for &shape in &shapes {
        bar.set_message(compare::suite::label(shape));
        let inputs = Inputs::family(shape, 42, args.inputs);
        let reference = measure::reference(&gpu, Some(&baselines[0].1), &inputs)?;
        let kernels = step_kernels.iter().map(Option::as_ref);
        let measured = measure(&gpu, &inputs, &reference, kernels, &baselines, recipe, &bar, true)?;
        for (row, cell) in rows.iter_mut().zip(measured) {
            row.1.push(cell);
        }
    }
    bar.finish_and_clear();
    let (driver, nvrtc, date) = versions(&gpu);
    let suite = compare::suite::Suite {
        title,
        device: gpu.info.name.clone(),
        driver,
        nvrtc,
        date,
        command,
        shapes,
        rows,
        precision,
    };
    println!("{}\n{}", suite.table(), suite.summary());
    let stem = format!("{}-{kind}", slug(&suite.device));
    std::fs::create_dir_all(&args.out).with_context(|| format!("creating {}", args.out.display()))?;
    let chart_file = format!("{stem}.svg");
    let svg = args.out.join(&chart_file);
    suite.chart(&svg)?;
    let md = args.out.join(format!("{stem}.md"));
    std::fs::write(&md, suite.markdown(&chart_file)).with_context(|| format!("writing {}", md.display()))?;
    println!("wrote {} and {}", md.display(), svg.display());
    Ok(suite.rows.iter().flat_map(|(_, r)| r.iter().flatten()).all(|c| c.passed))
}

/// The GPU, with NVRTC to compile the steps.
fn open_gpu(device: usize) -> Result<Gpu> {
    let gpu = gpu::open("compare", device)?;
    if !gpu::nvrtc_present() {
        bail!("{}", gpu::NO_NVRTC);
    }
    Ok(gpu)
}

/// Each step's kernels (its defaults, or its choice at each shape where it chooses); a step that
/// needs a newer GPU gets a row of –.
fn compile_steps<'a>(
    gpu: &Gpu,
    steps: impl Iterator<Item = (&'a str, &'a GpuStep)>,
) -> Result<Vec<Option<StepKernels<'a>>>> {
    let cc = gpu.info.compute_capability;
    steps
        .map(|(name, s)| match s.check_compute(cc, &gpu.info.name) {
            Ok(()) => StepKernels::defaults(gpu, s).map(Some),
            Err(why) => {
                println!("{why}: the row of {name} stays empty");
                Ok(None)
            }
        })
        .collect()
}

/// A step's kernel at `shape` measured by the recipe, or why it does not serve the shape here
/// (Ok(Err(why))).
pub fn measure_step(
    gpu: &Gpu,
    kernels: &StepKernels,
    bufs: &mut Buffers,
    recipe: Recipe,
) -> Result<std::result::Result<Measured, String>> {
    let shape = bufs.shape;
    let kernel = match kernels.params(gpu, shape) {
        Ok(_) => kernels.at(gpu, shape)?,
        Err(why) => return Ok(Err(why.to_string())),
    };
    match kernel.fit(&gpu.info, shape) {
        Ok(fitted) => Ok(Ok(measure::measure_fitted(gpu, &kernel, fitted, bufs, recipe)?)),
        Err(why) => Ok(Err(why.to_string())),
    }
}

/// The cuBLAS baselines: strict SGEMM, and TF32 on GPUs whose tensor cores take it (sm_80+).
fn baselines(gpu: &Gpu) -> Result<Vec<(&'static str, Blas, Precision)>> {
    let mut baselines = vec![(CUBLAS, Blas::new(gpu.stream.clone())?, Precision::Fp32)];
    if gpu.info.compute_capability >= (8, 0) {
        baselines.push((CUBLAS_TF32, Blas::tf32(gpu.stream.clone())?, Precision::Tf32));
    }
    Ok(baselines)
}

/// Each compiled step given, then each baseline given, on `inputs`: a verified, timed cell each, or None
/// where a step does not serve the GPU or the shape (`say_why`: print the reason for a shape).
#[allow(clippy::too_many_arguments)]
fn measure<'k, 's: 'k>(
    gpu: &Gpu,
    inputs: &Inputs,
    reference: &common::reference::Reference,
    step_kernels: impl IntoIterator<Item = Option<&'k StepKernels<'s>>>,
    baselines: impl IntoIterator<Item = &'k (&'static str, Blas, Precision)>,
    recipe: Recipe,
    bar: &indicatif::ProgressBar,
    say_why: bool,
) -> Result<Vec<Option<Cell>>> {
    let shape = inputs.shape;
    let mut bufs = Buffers::upload(gpu, inputs)?;
    let mut cells = Vec::new();
    for kernels in step_kernels {
        cells.push(match kernels {
            Some(kernels) => match measure_step(gpu, kernels, &mut bufs, recipe)? {
                Ok(m) => Some(Cell {
                    gflops: m.stats()?.gflops(shape.flops()),
                    passed: m.decisive(reference, kernels.step().precision).passed(),
                    held: m.stats()?.held,
                }),
                Err(why) => {
                    if say_why {
                        let (name, at) = (kernels.step().name, compare::suite::label(shape));
                        bar.suspend(|| println!("{name} at {at}: {why}"));
                    }
                    None
                }
            },
            None => None, // a GPU the step does not serve
        });
        bar.inc(1);
    }
    for (_, blas, precision) in baselines {
        let (c, t) = measure::measure_cublas(gpu, blas, &bufs, recipe)?;
        let t = t.context("cuBLAS was not timed")?;
        let passed = verify::verify(shape, &c, reference, *precision).passed();
        cells.push(Some(Cell { gflops: t.gflops(shape.flops()), passed, held: t.held }));
        bar.inc(1);
    }
    Ok(cells)
}

/// The driver (with its CUDA version), NVRTC's version and today's date, for a record's header.
fn versions(gpu: &Gpu) -> (String, String, String) {
    let (major, minor) = gpu::nvrtc_version().unwrap_or((0, 0));
    let d = gpu.info.driver_version;
    let driver =
        format!("{} (CUDA {}.{})", driver_release().unwrap_or_else(|| "?".into()), d / 1000, d % 1000 / 10);
    let date = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()[..10].to_owned();
    (driver, format!("{major}.{minor}"), date)
}

/// The sizes to run, smallest first, each once; --large adds 8192.
fn sizes(args: &CompareArgs) -> Vec<usize> {
    let mut sizes = args.sizes.clone();
    if args.large {
        sizes.push(8192);
    }
    sizes.sort_unstable();
    sizes.dedup();
    sizes
}

/// The driver's release, e.g. "580.159.04", as the kernel module reports it.
fn driver_release() -> Option<String> {
    let text = std::fs::read_to_string("/proc/driver/nvidia/version").ok()?;
    let line = text.lines().next()?;
    line.split_whitespace()
        .find(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()) && w.contains('.'))
        .map(str::to_owned)
}

/// `S` for S³, or `MxNxK`.
fn parse_shape(s: &str) -> Result<Shape, String> {
    let dims: Vec<usize> = s.split(['x', '×']).map(parse_dim).collect::<Result<_, _>>()?;
    match dims[..] {
        [d] => Shape::square(d),
        [m, n, k] => Shape::new(m, n, k),
        _ => Err(format!("'{s}' is not a shape: give S for S³ or MxNxK, e.g. 1024x1024x4096")),
    }
}

/// A seed for `--held-out --seed`: a whole number from 0 to 2⁶⁴ − 1, decimal or hex after 0x.
fn parse_seed(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let v = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(&hex.replace('_', ""), 16),
        None => t.replace('_', "").parse(),
    };
    v.map_err(|_| format!("'{s}' is not a seed; give a whole number from 0 to 2^64 - 1, or hex after 0x"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<CompareArgs, clap::Error> {
        CompareArgs::try_parse_from(std::iter::once("compare").chain(args.iter().copied()))
    }

    #[test]
    fn the_command_a_bench_without_a_gpu_names_is_one_compare_takes() {
        let said = common::bench::without_a_gpu("no NVIDIA driver was found");
        let command = said.split('`').nth(1).expect("a command in backquotes");
        let args: Vec<&str> = command.split(" -- ").nth(1).expect("compare's arguments").split(' ').collect();
        assert!(command.starts_with("cargo run --release -p compare -- "), "{command}");
        assert!(parse(&args).unwrap().predicted, "{command}");
        for other in [&["--suite"][..], &["--shapes", "4096"], &["--families"], &["--reps", "5"]] {
            let args: Vec<&str> = ["--predicted"].iter().chain(other).copied().collect();
            assert!(parse(&args).is_err(), "{args:?}: --predicted is the square sizes' table");
        }
    }

    #[test]
    fn sizes_run_smallest_first_and_once() {
        let a = parse(&["--sizes", "4096,256,1024,256", "--large"]).unwrap();
        assert_eq!(sizes(&a), vec![256, 1024, 4096, 8192]);
        assert_eq!(sizes(&parse(&[]).unwrap()), vec![256, 512, 1024, 2048, 4096]);
    }

    #[test]
    fn bad_sizes_and_reps_are_refused_in_one_sentence() {
        for (args, says) in [
            (&["--sizes", "-1"][..], "a dimension must be at least 1, not -1"),
            (&["--sizes", "256,0"][..], "a dimension must be at least 1, not 0"),
            (&["--sizes", "x"][..], "'x' is not a whole number"),
            (&["--reps", "0"][..], "the repetition count must be from 1 to 1000000, not 0"),
            (&["--reps", "-3"][..], "the repetition count must be from 1 to 1000000, not -3"),
        ] {
            let err = parse(args).unwrap_err().to_string();
            assert!(err.starts_with("error: ") && err.contains(says), "{args:?}: {err}");
        }
    }

    #[test]
    fn steps_are_picked_by_name_or_number_and_only_with_shapes() {
        let a = parse(&["--held-out", "--steps", "10,step06_prefetch"]).unwrap();
        assert!(wanted("step10_any_shape", &a.steps) && wanted("step06_prefetch (stream_k)", &a.steps));
        assert!(!wanted("step01_cpu_naive", &a.steps) && !wanted("step11_int8_crt", &a.steps));
        assert!(wanted("step11_int8_crt", &[]), "no --steps: every step");
        assert!(!wanted("step10_any_shape", &["1".to_owned()]), "1 is step 01, not a prefix of 10");
        let err = parse(&["--steps", "10"]).unwrap_err().to_string();
        assert!(
            err.starts_with("error: ") && err.contains("required") && err.contains("--suite|--held-out"),
            "{err}"
        );
    }

    #[test]
    fn the_families_are_their_own_run_at_one_size() {
        let a = parse(&["--families", "--size", "1024", "--pair", "a.npy,b.npy", "--pair", "c.npy,d.npy"])
            .unwrap();
        assert!(a.families && a.size == 1024 && a.pair.len() == 2);
        assert_eq!(parse(&["--families"]).unwrap().size, 4096);
        let r = parse(&["--families", "-m", "1024", "-n", "512", "-k", "4096"]).unwrap();
        assert_eq!((r.m, r.n, r.k), (Some(1024), Some(512), Some(4096)));
        for (args, says) in [
            (&["--families", "--sizes", "1024"][..], "cannot be used with"),
            (&["--families", "--suite"][..], "cannot be used with"),
            (&["--families", "--inputs", "normal"][..], "cannot be used with"),
            (&["--size", "1024"][..], "--families"),
            (&["--pair", "a.npy,b.npy"][..], "--families"),
            (&["--families", "--size", "0"][..], "a dimension must be at least 1, not 0"),
            (&["--families", "-m", "1024", "-n", "1024"][..], "-k <K>"),
            (&["--families", "--size", "1024", "-m", "8", "-n", "8", "-k", "8"][..], "cannot be used with"),
            (&["-m", "8", "-n", "8", "-k", "8"][..], "--families"),
        ] {
            let err = parse(args).unwrap_err().to_string();
            assert!(err.starts_with("error: ") && err.contains(says), "{args:?}: {err}");
        }
    }

    #[test]
    fn chosen_shapes_are_cubes_or_m_n_k_and_take_steps_and_inputs() {
        let a = parse(&["--shapes", "4096,1024x1024x4096", "--steps", "8,12", "--inputs", "normal"]).unwrap();
        let dims: Vec<_> = a.chosen.iter().map(|s| (s.m, s.n, s.k)).collect();
        assert_eq!(dims, vec![(4096, 4096, 4096), (1024, 1024, 4096)]);
        assert!(wanted("step12_persistent_clusters", &a.steps) && !wanted("step10_any_shape", &a.steps));
        for (args, says) in [
            (&["--shapes", "12x3"][..], "'12x3' is not a shape"),
            (&["--shapes", "0x4x4"][..], "a dimension must be at least 1, not 0"),
            (&["--shapes", "64", "--suite"][..], "cannot be used with"),
            (&["--shapes", "64", "--sizes", "64"][..], "cannot be used with"),
        ] {
            let err = parse(args).unwrap_err().to_string();
            assert!(err.starts_with("error: ") && err.contains(says), "{args:?}: {err}");
        }
    }

    #[test]
    fn a_seed_parses_and_needs_held_out() {
        assert_eq!(parse(&["--held-out", "--seed", "20261125"]).unwrap().seed, Some(20261125));
        assert_eq!(parse(&["--held-out", "--seed", "0x6e1d0075"]).unwrap().seed, Some(0x6e1d_0075));
        assert_eq!(parse(&["--held-out"]).unwrap().seed, None);
        let err = parse(&["--suite", "--seed", "7"]).unwrap_err().to_string();
        assert!(err.starts_with("error: ") && err.contains("--held-out"), "{err}");
        let err = parse(&["--held-out", "--seed", "x7"]).unwrap_err().to_string();
        assert!(err.starts_with("error: ") && err.contains("'x7' is not a seed"), "{err}");
    }

    #[test]
    fn the_held_out_shapes_are_their_own_run() {
        let a = parse(&["--held-out"]).unwrap();
        assert!(a.held_out && !a.suite);
        for other in [
            &["--held-out", "--suite"][..],
            &["--held-out", "--sizes", "256"][..],
            &["--held-out", "--large"][..],
        ] {
            let err = parse(other).unwrap_err().to_string();
            assert!(err.starts_with("error: ") && err.contains("cannot be used with"), "{other:?}: {err}");
        }
    }

    #[test]
    fn a_redraw_takes_a_record_and_no_run() {
        assert_eq!(parse(&["--redraw", "r.md"]).unwrap().redraw, Some(PathBuf::from("r.md")));
        for other in [&["--redraw", "r.md", "--suite"][..], &["--redraw", "r.md", "--large"][..]] {
            let err = parse(other).unwrap_err().to_string();
            assert!(err.contains("cannot be used with"), "{other:?}: {err}");
        }
    }
}

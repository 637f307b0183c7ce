//! `compare --families`: steps 09 and 11 and cuBLAS SGEMM on every input family and on pairs of
//! files, at one shape (the page is written by [`compare::families`]).

use anyhow::{Context, Result, anyhow, bail};
use common::cublas::{self, Blas};
use common::matrix::{Family, Inputs, Shape};
use common::measure::{self, Buffers};
use common::timing::Sampling;
use common::{Precision, files, verify};
use compare::families::{Entry, Families, Row};
use compare::{GPU_STEPS, slug};

use super::{Args, compile_steps, open_gpu, versions};

/// The steps whose claim is FP32 from the tensor cores.
const STEPS: [&str; 2] = ["step09_3xtf32", "step11_int8_crt"];

/// Every family at `--size`³, or at `-m/-n/-k` (seed 42), then each `--pair A,B` read from its
/// files.
fn inputs(args: &Args) -> Result<Vec<Inputs>> {
    let shape = match (args.m, args.n, args.k) {
        (Some(m), Some(n), Some(k)) => Shape::new(m, n, k),
        _ => Shape::square(args.size),
    }
    .map_err(|e| anyhow!(e))?;
    let mut all: Vec<Inputs> = Family::ALL.iter().map(|&f| Inputs::family(shape, 42, f)).collect();
    for pair in &args.pair {
        let (a, b) = pair.rsplit_once(',').with_context(|| {
            format!("--pair {pair}: give the two files as A,B (for example --pair a.npy,b.npy)")
        })?;
        let (ma, mb) = (files::read_matrix(a, "A")?, files::read_matrix(b, "B")?);
        all.push(Inputs::from_matrices(ma, mb, format!("{a}, {b}")).map_err(|e| anyhow!(e))?);
    }
    Ok(all)
}

/// What a run names an input by: the family, or the files.
fn name(inputs: &Inputs) -> String {
    inputs.source.split(", seed").next().unwrap_or(&inputs.source).to_owned()
}

pub fn run(args: &Args, command: String) -> Result<bool> {
    let gpu = open_gpu(args.device)?;
    if !cublas::present() {
        bail!("--families measures shares of cuBLAS SGEMM, and libcublas could not be loaded");
    }
    let steps: Vec<_> = GPU_STEPS.iter().filter(|s| STEPS.contains(&s.name)).map(|s| (s.name, *s)).collect();
    let step_kernels = compile_steps(&gpu, steps.iter().copied())?;
    let blas = Blas::new(gpu.stream.clone())?;
    let sampling = Sampling::new(args.reps);
    let all = inputs(args)?;
    let bar = common::progress::bar("families", (all.len() * (steps.len() + 1)) as u64, f64::INFINITY);
    let mut rows = Vec::new();
    for inputs in &all {
        let shape = inputs.shape;
        bar.set_message(name(inputs));
        let reference = measure::reference(&gpu, Some(&blas), inputs)?;
        let entry = |c: &[f32],
                     t: common::timing::Stats,
                     precision: Precision,
                     paths: Option<common::fp32_path::Paths>| {
            let v = verify::verify(shape, c, &reference, precision);
            if !v.passed() {
                bar.suspend(|| println!("{}, {precision}: {}", name(inputs), v.summary()));
            }
            Entry {
                passed: v.passed(),
                element: v.worst.ratio(),
                normwise: v.normwise.ratio(),
                gflops: t.gflops(shape.flops()),
                fp32: paths.as_ref().map(|p| (p.rows, p.cols)),
                moduli: paths.and_then(|p| p.moduli),
            }
        };
        let mut bufs = Buffers::upload(&gpu, inputs)?;
        let mut cells = Vec::new();
        for p in &step_kernels {
            cells.push(match p.as_ref().map(|p| (p, p.fit(&gpu.info, shape))) {
                Some((p, Ok((launch, _)))) => {
                    let (c, t) = measure::run_and_time(&gpu, p, launch, shape, &mut bufs, sampling)?;
                    let paths = measure::paths_run(&gpu, p, launch, shape, &mut bufs)?;
                    Some(entry(&c, t, p.step.precision, paths.map(|(p, _)| p)))
                }
                _ => None,
            });
            bar.inc(1);
        }
        let (c, t) = measure::cublas_run(&gpu, &blas, shape, &bufs, sampling, true)?;
        let sgemm = entry(&c.context("cuBLAS's result was not kept")?, t, Precision::Fp32, None);
        bar.inc(1);
        rows.push(Row { input: name(inputs), steps: cells, sgemm });
    }
    bar.finish_and_clear();
    let (driver, nvrtc, date) = versions(&gpu);
    let s = all.first().map(|i| i.shape).context("no inputs")?;
    let families = Families {
        device: gpu.info.name.clone(),
        driver,
        nvrtc,
        date,
        command,
        shape: format!("{}×{}×{}", s.m, s.n, s.k),
        steps: steps.iter().map(|s| s.0.to_owned()).collect(),
        rows,
    };
    let md = families.markdown();
    println!("{md}");
    std::fs::create_dir_all(&args.out).with_context(|| format!("creating {}", args.out.display()))?;
    let path = args.out.join(format!("{}-families.md", slug(&families.device)));
    std::fs::write(&path, &md).with_context(|| format!("writing {}", path.display()))?;
    println!("wrote {}", path.display());
    Ok(families.rows.iter().all(|r| r.sgemm.passed && r.steps.iter().flatten().all(|e| e.passed)))
}

//! `compare --families`: the steps that claim FP32 from the tensor cores (09 and 11) and cuBLAS
//! SGEMM on every input family and on pairs of files, at one shape (the page is written by
//! [`compare::families`]).

use anyhow::{Context, Result, anyhow, bail};
use common::cublas::{self, Blas};
use common::hooks::Paths;
use common::matrix::{Family, Inputs, Shape};
use common::measure::{self, Buffers, Recipe};
use common::timing::Sampling;
use common::{Precision, files, verify};
use compare::families::{Families, FamilyEntry, FamilyRow, fp32_from_tensor_cores};
use compare::{GPU_STEPS, slug};

use super::{CompareArgs, compile_steps, measure_step, open_gpu, versions};

/// Every family at `--size`³, or at `-m/-n/-k` (seed 42), then each `--pair A,B` read from its
/// files.
fn inputs(args: &CompareArgs) -> Result<Vec<Inputs>> {
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
        let source = format!("{}, {}", ma.named(a), mb.named(b));
        all.push(Inputs::from_matrices(ma.matrix, mb.matrix, source).map_err(|e| anyhow!(e))?);
    }
    Ok(all)
}

/// What a run names an input by: the family, or the files.
fn name(inputs: &Inputs) -> String {
    inputs.source.split(", seed").next().unwrap_or(&inputs.source).to_owned()
}

pub fn run(args: &CompareArgs, command: String) -> Result<bool> {
    let gpu = open_gpu(args.device)?;
    if !cublas::present() {
        bail!("--families measures shares of cuBLAS SGEMM, and libcublas could not be loaded");
    }
    let steps: Vec<_> =
        GPU_STEPS.iter().filter(|s| fp32_from_tensor_cores(s.precision)).map(|s| (s.name, *s)).collect();
    let step_kernels = compile_steps(&gpu, steps.iter().copied())?;
    let blas = Blas::new(gpu.stream.clone())?;
    let recipe = Recipe::timed(Sampling::new(args.reps), true);
    let all = inputs(args)?;
    let bar = common::progress::bar("families", (all.len() * (steps.len() + 1)) as u64, f64::INFINITY);
    let mut rows = Vec::new();
    for inputs in &all {
        let shape = inputs.shape;
        bar.set_message(name(inputs));
        let reference = measure::reference(&gpu, Some(&blas), inputs)?;
        let entry = |verdict: verify::Verdict, t: common::timing::Stats, paths: Option<Paths>| {
            if !verdict.passed() {
                bar.suspend(|| println!("{}, {}: {}", name(inputs), verdict.precision, verdict.summary()));
            }
            FamilyEntry {
                passed: verdict.passed(),
                element: verdict.worst.ratio(),
                normwise: verdict.normwise.ratio(),
                gflops: t.gflops(shape.flops()),
                fp32: paths.as_ref().map(|p| (p.rows, p.cols)),
                moduli: paths.and_then(|p| p.products),
            }
        };
        let mut bufs = Buffers::upload(&gpu, inputs)?;
        let mut cells = Vec::new();
        for kernels in &step_kernels {
            cells.push(match kernels {
                Some(kernels) => match measure_step(&gpu, kernels, &mut bufs, recipe)? {
                    Ok(m) => {
                        let verdict = m.decisive(&reference, kernels.step().precision);
                        Some(entry(verdict, m.stats()?, m.paths.map(|(p, _)| p)))
                    }
                    Err(_) => None,
                },
                None => None,
            });
            bar.inc(1);
        }
        let (c, t) = measure::measure_cublas(&gpu, &blas, &bufs, recipe)?;
        let sgemm = verify::verify(shape, &c, &reference, Precision::Fp32);
        let sgemm = entry(sgemm, t.context("cuBLAS was not timed")?, None);
        bar.inc(1);
        rows.push(FamilyRow { input: name(inputs), steps: cells, sgemm });
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

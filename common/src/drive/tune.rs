//! `--tune`: every valid parameter set of a step's search space, compiled, verified, timed and
//! ranked, with the command line that reproduces the best.

use anyhow::{Result, anyhow, bail};

use crate::cli::Args;
use crate::cublas::{self, Blas};
use crate::gpu::{Gpu, Kernel};
use crate::matrix::Inputs;
use crate::measure::{self, Buffers, Recipe};
use crate::params::Params;
use crate::step::GpuStep;
use crate::step_kernel::StepKernel;
use crate::timing::Sampling;

/// Every combination of the search space's values, in order, with the parameters in `fixed`
/// (from `--param`) held at their given values and the others outside the search space at
/// `base`'s values or their defaults; a name the step does not declare is an error.
pub fn candidates(step: &GpuStep, base: &[(&str, u32)], fixed: &[(String, u32)]) -> Result<Vec<Params>> {
    Params::with_overrides(step.params, fixed)?;
    let mut sets: Vec<Vec<(&'static str, u32)>> = vec![vec![]];
    for &(name, values) in step.search.iter().filter(|(name, _)| fixed.iter().all(|(f, _)| f != name)) {
        sets = sets
            .into_iter()
            .flat_map(|set| {
                values.iter().map(move |&v| {
                    let mut s = set.clone();
                    s.push((name, v));
                    s
                })
            })
            .collect();
    }
    // Parameters outside the search space keep their defaults.
    let (mut all, mut seen) = (Vec::new(), std::collections::HashSet::new());
    for set in sets {
        let mut overrides: Vec<(String, u32)> =
            base.iter().chain(set.iter()).map(|(n, v)| ((*n).to_owned(), *v)).collect();
        overrides.extend_from_slice(fixed);
        let p = step.hooks.tuned_as(step.params, Params::with_overrides(step.params, &overrides)?)?;
        if seen.insert(p.clone()) {
            all.push(p);
        }
    }
    Ok(all)
}

/// One measured candidate.
struct Candidate {
    params: Params,
    registers: u32,
    smem: u32,
    blocks_per_sm: u32,
    median_ms: f64,
    /// The SM clock and power it held while timed, where NVML read them.
    held: Option<crate::clock::Held>,
    /// None: not verified (--no-verify).
    passed: Option<bool>,
}

pub fn run(step: &GpuStep, args: &Args, gpu: &Gpu, inputs: &Inputs) -> Result<bool> {
    let shape = inputs.shape;
    if step.search.is_empty() {
        bail!("{} has no parameters to tune", step.name);
    }
    // A step that chooses per shape starts from its choice for this shape.
    let base = match step.schedule.rule() {
        Some(choose) => choose(shape, gpu.info.sms).map_err(|e| anyhow!("{e}"))?.set,
        None => Vec::new(),
    };
    let all: Vec<Params> = candidates(step, &base, &args.params)?
        .into_iter()
        .map(|p| step.widened(p, shape, &args.params))
        .collect::<Result<_>>()?;
    let valid: Vec<Params> =
        all.iter().filter(|p| step.validate(p, shape, &gpu.info.limits).is_ok()).cloned().collect();
    if valid.is_empty() {
        // Say why in the step's own words: first for the parameters as given (a value out of
        // range), else for the first set searched.
        let (given, _) = step.params_for(shape, gpu.info.sms, &args.params)?;
        step.validate(&given, shape, &gpu.info.limits)?;
        if let Some(first) = all.first() {
            step.validate(first, shape, &gpu.info.limits)?;
        }
    }
    println!(
        "tuning {} at {shape} on {}: {} combinations, {} valid for this device",
        step.name,
        gpu.info.name,
        all.len(),
        valid.len()
    );

    // NVRTC is thread-safe: compile on every core, then measure one at a time.
    let arch = gpu.info.arch();
    let bar = crate::progress::bar("compiling", valid.len() as u64, f64::INFINITY);
    let workers = std::thread::available_parallelism().map_or(1, |p| p.get()).min(valid.len().max(1));
    let compiled: Vec<_> = std::thread::scope(|scope| {
        let chunks: Vec<_> = valid.chunks(valid.len().div_ceil(workers).max(1)).collect();
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|chunk| {
                let (arch, bar) = (&arch, &bar);
                scope.spawn(move || {
                    chunk
                        .iter()
                        .map(|p| {
                            let c = step.compile(p, arch);
                            bar.inc(1);
                            (p.clone(), c)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap_or_default()).collect()
    });
    bar.finish_and_clear();

    let mut bufs = Buffers::upload(gpu, inputs)?;
    let blas = if !args.no_cublas && cublas::present() { Some(Blas::new(gpu.stream.clone())?) } else { None };
    let reference = if args.no_verify { None } else { Some(measure::reference(gpu, blas.as_ref(), inputs)?) };
    let recipe = Recipe::timed(Sampling::new(Some(args.reps.unwrap_or(10))), !args.no_verify);
    let recipe = Recipe { paths: false, ..recipe };

    let mut rows = Vec::new();
    let mut skipped = Vec::new();
    let bar = crate::progress::bar("timing", compiled.len() as u64, f64::INFINITY);
    for (params, c) in compiled {
        bar.inc(1);
        let kernel = match c.and_then(|c| Kernel::load(gpu, c)) {
            Ok(k) => k,
            Err(e) => {
                skipped.push(format!("{params}: {e}"));
                continue;
            }
        };
        if let Err(e) = crate::spills::check(step, &params, &kernel) {
            skipped.push(format!("{params}: {e}"));
            continue;
        }
        let step_kernel = StepKernel::with_kernel(step, params.clone(), kernel)?;
        // A set that does not fit here, or whose product cannot run here (a split's workspace
        // beyond the free memory), is skipped, not the end of the search.
        let measured = match measure::measure(gpu, &step_kernel, &mut bufs, recipe) {
            Ok(m) => m,
            Err(e) => {
                skipped.push(format!("{params}: {e}"));
                continue;
            }
        };
        let (t, res) = (measured.stats()?, measured.resources);
        let passed = reference.as_ref().map(|r| measured.decisive(r, step.precision).passed());
        rows.push(Candidate {
            params,
            registers: res.registers,
            smem: res.static_smem + res.dynamic_smem,
            blocks_per_sm: res.blocks_per_sm,
            median_ms: t.median_ms,
            held: t.held,
            passed,
        });
    }
    bar.finish_and_clear();

    // The baseline a step is set against: cuBLAS TF32 for a TF32 step, SGEMM otherwise.
    let (baseline, tf32) = match &blas {
        Some(_) if step.precision.is_tf32() => {
            (("%TF32", "cuBLAS TF32"), Some(Blas::tf32(gpu.stream.clone())?))
        }
        _ => (("%SGEMM", "cuBLAS SGEMM"), None),
    };
    let cublas = tf32
        .as_ref()
        .or(blas.as_ref())
        .map(|b| measure::measure_cublas(gpu, b, &bufs, recipe))
        .transpose()?
        .and_then(|(_, t)| t);
    let cublas_ms = cublas.map(|t| t.median_ms);

    // Verified sets first (then unverified ones), each group fastest first.
    let rank = |r: &Candidate| match r.passed {
        Some(true) => 0,
        None => 1,
        Some(false) => 2,
    };
    rows.sort_by(|x, y| rank(x).cmp(&rank(y)).then(x.median_ms.total_cmp(&y.median_ms)));
    // Skipped sets first: the ranked table is what a reader looks for, so it comes last.
    for s in &skipped {
        println!("      skipped {s}");
    }
    println!(
        "{:>4}  {:<36} {:>5} {:>9} {:>7} {:>10} {:>10} {:>8} {:>6} {:>8} {:>8}  verify",
        "rank",
        "parameters",
        "regs",
        "smem",
        "blk/SM",
        "ms",
        "GFLOP/s",
        baseline.0,
        "MHz",
        "%/clock",
        "J/TFLOP"
    );
    let per_tflop = |h: Option<crate::clock::Held>| {
        h.and_then(|h| h.joules_per_tflop(shape.flops())).map_or("-".to_owned(), |j| format!("{j:.2}"))
    };
    for (i, r) in rows.iter().enumerate() {
        let share = cublas_ms.map(|c| 100.0 * c / r.median_ms);
        let mhz = r.held.map_or("-".to_owned(), |h| format!("{:.0}", h.sm_mhz));
        let per_clock = match (share, r.held, cublas.and_then(|c| c.held)) {
            (Some(share), Some(mine), Some(theirs)) => {
                format!("{:.1}", crate::clock::per_clock(share, mine, theirs))
            }
            _ => "-".to_owned(),
        };
        let share = share.map_or("-".to_owned(), |s| format!("{s:.1}"));
        println!(
            "{:>4}  {:<36} {:>5} {:>9} {:>7} {:>10.3} {:>10.0} {:>8} {:>6} {:>8} {:>8}  {}",
            i + 1,
            r.params.to_string(),
            r.registers,
            r.smem,
            r.blocks_per_sm,
            r.median_ms,
            shape.flops() / (r.median_ms * 1e-3) / 1e9,
            share,
            mhz,
            per_clock,
            per_tflop(r.held),
            match r.passed {
                Some(true) => "PASS",
                Some(false) => "FAIL",
                None => "not verified",
            }
        );
    }
    if let Some(c) = cublas {
        let held = c.held.map_or(String::new(), |h| {
            let energy =
                h.joules_per_tflop(shape.flops()).map_or(String::new(), |j| format!(", {j:.2} J/TFLOP"));
            format!(" at {:.0} MHz, {:.0} W{energy}", h.sm_mhz, h.watts)
        });
        let gflops = shape.flops() / (c.median_ms * 1e-3) / 1e9;
        println!("      {}: {:.3} ms, {gflops:.0} GFLOP/s{held}", baseline.1, c.median_ms);
    }
    let best = rows
        .iter()
        .find(|r| r.passed != Some(false))
        .ok_or_else(|| anyhow!("no parameter set produced a verified result"))?;
    println!(
        "best: {} — reproduce with: cargo run --release -p {} -- {} {}",
        best.params,
        step.name,
        args.inputs_flags(shape),
        best.params.to_flags()
    );
    Ok(rows.iter().all(|r| r.passed != Some(false)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::Param;

    const PARAMS: &[Param] = &[
        Param { name: "X", default: 1, help: "" },
        Param { name: "Y", default: 2, help: "" },
        Param { name: "Z", default: 3, help: "" },
    ];

    const STEP: GpuStep = GpuStep {
        name: "test",
        params: PARAMS,
        search: &[("X", &[1, 2]), ("Y", &[5, 6, 7])],
        ..GpuStep::DEFAULT
    };

    #[test]
    fn candidates_cover_the_search_space_and_keep_other_defaults() {
        let c = candidates(&STEP, &[], &[]).unwrap();
        assert_eq!(c.len(), 6);
        assert!(c.iter().all(|p| p.get("Z") == 3));
        assert_eq!((c[0].get("X"), c[0].get("Y")), (1, 5));
        assert_eq!((c[5].get("X"), c[5].get("Y")), (2, 7));
    }

    /// Hooks under which X is not read where PATH is 1: such sets keep PATH and SPLIT alone.
    struct XOffTiles;

    impl crate::hooks::Hooks for XOffTiles {
        fn tuned_as(&self, decl: &[Param], p: Params) -> Result<Params> {
            if p.get("PATH") == 0 {
                return Ok(p);
            }
            Params::with_overrides(
                decl,
                &[("PATH".to_owned(), p.get("PATH")), ("SPLIT".to_owned(), p.get("SPLIT"))],
            )
        }
    }

    #[test]
    fn sets_the_hooks_call_the_same_are_searched_once() {
        const WITH_PATH: &[Param] = &[
            Param { name: "X", default: 1, help: "" },
            Param { name: "SPLIT", default: 1, help: "" },
            Param { name: "PATH", default: 0, help: "" },
        ];
        let step = GpuStep {
            params: WITH_PATH,
            search: &[("X", &[1, 2, 3]), ("PATH", &[0, 1]), ("SPLIT", &[1, 8])],
            hooks: &XOffTiles,
            ..STEP
        };
        let c = candidates(&step, &[], &[]).unwrap();
        // On the tiles, X × SPLIT = 6 sets; off them, X is not read: SPLIT's 2 sets, X at its default.
        assert_eq!(c.len(), 8, "{c:?}");
        let off: Vec<&Params> = c.iter().filter(|p| p.get("PATH") == 1).collect();
        assert_eq!(off.len(), 2);
        assert!(off.iter().all(|p| p.get("X") == 1), "{off:?}");
    }

    #[test]
    fn a_search_space_naming_an_undeclared_parameter_is_refused() {
        let step = GpuStep { search: &[("NOPE", &[1])], ..STEP };
        let err = candidates(&step, &[], &[]).unwrap_err().to_string();
        assert!(err.contains("--param NOPE"), "{err}");
    }

    #[test]
    fn parameters_given_with_param_stay_fixed() {
        let c = candidates(&STEP, &[], &[("Y".to_owned(), 9)]).unwrap();
        assert_eq!(c.len(), 2, "only X is searched");
        assert!(c.iter().all(|p| p.get("Y") == 9 && p.get("Z") == 3));
        let c = candidates(&STEP, &[], &[("Z".to_owned(), 4)]).unwrap();
        assert!(c.len() == 6 && c.iter().all(|p| p.get("Z") == 4));
        let err = candidates(&STEP, &[], &[("W".to_owned(), 1)]).unwrap_err().to_string();
        assert!(err.contains("--param W"), "{err}");
    }
}

//! `compare --gate`: every lab at its headline shapes beside its cuBLAS baseline, measured by the
//! same machinery as `--shapes`, `--suite` and `--families`, and set against this GPU's committed
//! record (`--gate --record`: a new record instead). What it measures, the record and the
//! decision are [`compare::gate`]; this is the run on the GPU.

use std::time::Instant;

use anyhow::{Context, Result, anyhow, bail};
use common::cublas::{self, Blas};
use common::gpu::Gpu;
use common::measure::{Recipe, StepKernels};
use common::timing::Sampling;
use common::{GpuStep, Inputs, Precision, Shape};
use compare::gate::plan::{self, Group};
use compare::gate::{self, Entry, GateRecord, records};
use compare::{GPU_STEPS, slug};

use super::{CompareArgs, baselines, compile_steps, measure, open_gpu, versions, wanted};

/// The labs a run compiles, with their kernels (None: a lab this GPU does not serve).
struct Labs<'a> {
    steps: Vec<&'static GpuStep>,
    kernels: Vec<Option<StepKernels<'a>>>,
}

impl<'a> Labs<'a> {
    fn kernels(&self, step: &GpuStep) -> Option<&StepKernels<'a>> {
        let at = self.steps.iter().position(|s| s.name == step.name)?;
        self.kernels[at].as_ref()
    }
}

pub fn run(args: &CompareArgs, command: String) -> Result<bool> {
    let started = Instant::now();
    // Each of --steps names a lab of the gate's, before the GPU is opened.
    let names_none = |w: &String| plan::plan(|lab| wanted(lab, std::slice::from_ref(w))).is_empty();
    if let Some(w) = args.steps.iter().find(|w| names_none(w)) {
        bail!(
            "--steps {w} names no lab the gate measures (every GPU lab but {}: give names like \
             step11_int8_crt or numbers like 11)",
            plan::ONE_BLOCK
        );
    }
    let groups = plan::plan(|lab| wanted(lab, &args.steps));
    let gpu = open_gpu(args.device)?;
    // Before anything is compiled or measured: the record to compare with.
    let record = match (&args.record, &args.against) {
        (true, _) => None,
        (false, Some(file)) => {
            let text = std::fs::read_to_string(file)
                .with_context(|| format!("cannot read the gate record {}", file.display()))?;
            let record = GateRecord::parse(&text, &file.display().to_string())?;
            if record.device != gpu.info.name {
                bail!(
                    "the gate record {} was measured on the {}, not on this {}: shares compare only on one GPU",
                    file.display(),
                    record.device,
                    gpu.info.name
                );
            }
            Some(record)
        }
        (false, None) => Some(records::for_device(&gpu.info.name)?),
    };
    if !cublas::present() {
        bail!("the gate measures shares of cuBLAS, and libcublas could not be loaded");
    }
    let steps: Vec<&'static GpuStep> = GPU_STEPS
        .iter()
        .copied()
        .filter(|s| groups.iter().any(|g| g.labs.iter().any(|l| l.name == s.name)))
        .collect();
    let kernels = compile_steps(&gpu, steps.iter().map(|s| (s.name, *s)))?;
    let labs = Labs { steps, kernels };
    let baselines = baselines(&gpu)?;
    let recipe = Recipe { paths: false, ..Recipe::timed(Sampling::new(Some(plan::REPS)), true) };
    let measurements: usize = groups.iter().map(Group::measurements).sum();
    println!(
        "gate: {} entries of {} labs in {} products of {} shapes and inputs, {} samples each",
        groups.iter().map(|g| g.labs.len()).sum::<usize>(),
        labs.steps.len(),
        measurements,
        groups.len(),
        plan::REPS
    );
    let entries = measure_groups(&gpu, &groups, &labs, &baselines, recipe, "gate")?;
    let elapsed = || format!("gate: {:.0} s of wall time", started.elapsed().as_secs_f64());

    let Some(record) = record else {
        let (driver, nvrtc, date) = versions(&gpu);
        let device = gpu.info.name.clone();
        let made = GateRecord { device, driver, nvrtc, date, command, reps: plan::REPS, entries };
        write(args, &made)?;
        println!("{}", elapsed());
        return Ok(true);
    };

    if record.reps != plan::REPS {
        println!(
            "gate: note: the record took {} samples a measurement, this run {}",
            record.reps,
            plan::REPS
        );
    }
    let low = gate::to_confirm(&record, &entries);
    let second = if low.is_empty() {
        Vec::new()
    } else {
        println!(
            "gate: {} more than 3% below their record: measuring each, with its baseline, once more",
            low.len()
        );
        measure_groups(&gpu, &plan::regroup(&low), &labs, &baselines, recipe, "again")?
    };
    let outcome = gate::judge(&record, &entries, &second, |lab| wanted(lab, &args.steps));
    outcome.failures().iter().for_each(|l| println!("{l}"));
    println!(
        "\nThe gate on {} against its record of {} ({}, driver {}): each lab's rate as a share of its \
         cuBLAS baseline in the same run.\n",
        gpu.info.name, record.date, record.command, record.driver
    );
    println!("{}", outcome.table());
    outcome.unrecorded().iter().for_each(|l| println!("{l}"));
    println!("{}", outcome.summary());
    println!("{}", elapsed());
    Ok(outcome.passed())
}

/// Each group's labs and baselines, measured: an entry per lab the GPU serves at the shape.
fn measure_groups(
    gpu: &Gpu,
    groups: &[Group],
    labs: &Labs,
    baselines: &[(&'static str, Blas, Precision)],
    recipe: Recipe,
    label: &str,
) -> Result<Vec<Entry>> {
    let units = groups.iter().map(Group::measurements).sum::<usize>();
    let bar = common::progress::bar(label, units as u64, f64::INFINITY);
    let mut entries = Vec::new();
    for group in groups {
        let (m, n, k) = group.shape;
        let shape = Shape::new(m, n, k).map_err(|e| anyhow!(e))?;
        bar.set_message(format!("{} {}", compare::suite::label(shape), group.inputs));
        let inputs = Inputs::family(shape, plan::SEED, group.inputs);
        let reference = common::measure::reference(gpu, Some(&baselines[0].1), &inputs)?;
        let names = group.baselines();
        let bases: Vec<_> = baselines.iter().filter(|b| names.contains(&b.0)).collect();
        let kernels = group.labs.iter().map(|s| labs.kernels(s));
        let cells = measure(gpu, &inputs, &reference, kernels, bases.iter().copied(), recipe, &bar, true)?;
        let (lab_cells, base_cells) = cells.split_at(group.labs.len());
        for (step, cell) in group.labs.iter().zip(lab_cells) {
            let baseline = plan::baseline(step.precision);
            let base = bases.iter().position(|b| b.0 == baseline).and_then(|i| base_cells[i]);
            let (Some(cell), Some(base)) = (cell, base) else { continue };
            if !base.passed {
                bar.suspend(|| {
                    println!(
                        "gate: {baseline}'s own result at {m}×{n}×{k} {} failed verification",
                        group.inputs
                    )
                });
            }
            let rates = (cell.gflops, base.gflops);
            let passed = cell.passed && base.passed;
            entries.push(Entry::measured(step.name, group.shape, group.inputs, baseline, rates, passed));
        }
    }
    bar.finish_and_clear();
    Ok(entries)
}

/// `--lower-of`: the record of the lowest shares of several, written as a new one (no GPU).
pub fn lower_of(args: &CompareArgs) -> Result<()> {
    let runs = args
        .lower_of
        .iter()
        .map(|file| {
            let text = std::fs::read_to_string(file)
                .with_context(|| format!("cannot read the gate record {}", file.display()))?;
            GateRecord::parse(&text, &file.display().to_string())
        })
        .collect::<Result<Vec<_>>>()?;
    write(args, &gate::lower::lower_of(&runs)?)
}

/// A new record: its table printed, its JSON and page written under `--out`'s gate/, unless a
/// result failed verification.
fn write(args: &CompareArgs, made: &GateRecord) -> Result<()> {
    let md = made.markdown();
    println!("{md}");
    let failed = made.entries.iter().filter(|e| !e.passed).count();
    if failed > 0 {
        bail!("{failed} results failed verification (FAIL in the table above), so no record was written");
    }
    // What is written must read back, as the gate will read it.
    let stem = slug(&made.device);
    GateRecord::parse(&made.to_json(), &records::path(&stem)).context("so no record was written")?;
    let dir = args.out.join("gate");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let (json, page) = (dir.join(format!("{stem}.json")), dir.join(format!("{stem}.md")));
    std::fs::write(&json, made.to_json()).with_context(|| format!("writing {}", json.display()))?;
    std::fs::write(&page, md).with_context(|| format!("writing {}", page.display()))?;
    println!(
        "wrote {} and {}: commit the JSON as {} (a GPU without a record yet is also listed in \
         compare/src/gate/records.rs)",
        json.display(),
        page.display(),
        records::path(&stem)
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    fn parse(args: &[&str]) -> Result<CompareArgs, clap::Error> {
        CompareArgs::try_parse_from(std::iter::once("compare").chain(args.iter().copied()))
    }

    #[test]
    fn the_gate_takes_steps_device_out_and_record_and_nothing_that_changes_what_it_measures() {
        let a = parse(&["--gate"]).unwrap();
        assert!(a.gate && !a.record && a.steps.is_empty());
        let a = parse(&["--gate", "--steps", "11,step08_wgmma_tma", "--device", "1"]).unwrap();
        assert!(wanted("step11_int8_crt", &a.steps) && !wanted("step10_any_shape", &a.steps));
        let a = parse(&["--gate", "--record", "--out", "/tmp/x"]).unwrap();
        assert!(a.record && a.out == std::path::Path::new("/tmp/x"));
        let a = parse(&["--gate", "--against", "/tmp/r.json", "--steps", "11"]).unwrap();
        assert!(!a.record && a.against.as_deref() == Some(std::path::Path::new("/tmp/r.json")));
        assert!(parse(&["--against", "/tmp/r.json"]).is_err(), "--against needs --gate");
        assert!(parse(&["--gate", "--record", "--against", "/tmp/r.json"]).is_err());
        for (args, says) in [
            (&["--record"][..], "--gate"),
            (&["--gate", "--record", "--steps", "11"][..], "cannot be used with"),
            (&["--gate", "--reps", "5"][..], "cannot be used with"),
            (&["--gate", "--suite"][..], "cannot be used with"),
            (&["--gate", "--shapes", "4096"][..], "cannot be used with"),
            (&["--gate", "--families"][..], "cannot be used with"),
            (&["--gate", "--inputs", "normal"][..], "cannot be used with"),
            (&["--gate", "--sizes", "1024"][..], "cannot be used with"),
            (&["--gate", "--predicted"][..], "cannot be used with"),
            (&["--gate", "--redraw", "r.md"][..], "cannot be used with"),
            (&["--gate", "--size", "1024"][..], "cannot be used with"),
            (&["--gate", "--pair", "a.npy,b.npy"][..], "cannot be used with"),
            (&["--gate", "-m", "8", "-n", "8", "-k", "8"][..], "cannot be used with"),
            (&["--gate", "--seed", "7"][..], "cannot be used with"),
        ] {
            let err = parse(args).unwrap_err().to_string();
            assert!(err.starts_with("error: ") && err.contains(says), "{args:?}: {err}");
        }
    }
}

//! The `predicted` lines of an emulated run: the emulator's time model
//! ([`ptx_model::predict`]) applied to the counts of the step's kernel and of the other
//! kernels of its launch for the GPU asked for (`--gpu`, a profile of
//! [`ptx_model::profile`]), set beside cuBLAS's rate recorded on that GPU.

use std::fmt::Write;

use ptx_emulator::Traffic;
use ptx_emulator::recording::Recorded;
use ptx_model::predict::{self, Bottleneck, Prediction};
use ptx_model::profile::{self, Profile};

use crate::matrix::Shape;
use crate::numbers::duration;

/// The recorded square nearest `shape` in FLOPs (on a log scale), and whether it is the shape;
/// None for a GPU without a cuBLAS record.
fn nearest_square(profile: &Profile, shape: Shape) -> Option<(usize, f64, f64, bool)> {
    let side = (shape.m as f64 * shape.n as f64 * shape.k as f64).cbrt();
    let &(s, sgemm, tf32) = profile
        .cublas?
        .rates
        .iter()
        .min_by(|a, b| (side / a.0 as f64).ln().abs().total_cmp(&(side / b.0 as f64).ln().abs()))?;
    Some((s, sgemm, tf32, shape.m == s && shape.n == s && shape.k == s))
}

/// What a prediction for a GPU without a cuBLAS record says where its share would be.
pub fn no_cublas(profile: &Profile) -> String {
    format!("no cuBLAS run on the {} is recorded, so the prediction is set beside none", profile.name)
}

/// The prediction for a launch: the step's kernel (`blocks`, `resident` a SM) and the other
/// kernels it launches, predicted with all their blocks resident (the model knows only their
/// counts). Returns the step kernel's prediction and the launch's whole time.
/// `serialized`: ptxas serialised the step kernel's wgmma.
pub fn launch(
    profile: &Profile,
    (step, recorded): (&Traffic, &[Recorded]),
    (resident, registers, serialized): (u32, u32, bool),
    shape: Shape,
    others: &[(String, Traffic)],
) -> (Prediction, f64) {
    let compulsory = shape.f32_bytes();
    let main = profile.predict_replayed(
        step,
        predict::LaunchFacts { blocks: step.blocks, resident, registers, compulsory_bytes: compulsory },
        recorded,
        serialized,
    );
    let rest: f64 = others
        .iter()
        .map(|(_, t)| {
            profile
                .predict(
                    t,
                    predict::LaunchFacts {
                        blocks: t.blocks,
                        resident: u32::MAX,
                        registers: 0,
                        compulsory_bytes: 0,
                    },
                )
                .seconds
        })
        .sum();
    let whole = main.seconds + rest;
    (main, whole)
}

/// The predicted times of an emulated launch, as the run computed them: what the report's
/// `predicted` lines show, and its JSON carries.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Predicted {
    /// The GPU predicted for (its profile's name), and the prediction for the step's kernel: its
    /// time, the bottleneck that sets it, every bottleneck's time, and what the replay of the busiest SM
    /// found. Its `unchecked` holds every reason the figure is outside what the model was
    /// checked on, a thread's local memory included.
    pub gpu: &'static str,
    pub prediction: Prediction,
    /// The bottleneck that sets the kernel's time, named as the report names it.
    pub bottleneck: &'static str,
    /// The whole launch (the step's kernel and the other kernels it launches) on each GPU the
    /// model has a profile of, in seconds, by the GPU's name.
    pub seconds: std::collections::BTreeMap<&'static str, f64>,
    /// The launch's rate on the GPU predicted for, in GFLOP/s.
    pub gflops: f64,
    /// The cuBLAS rate it is set beside: recorded on that GPU at a square size; None (and
    /// `no_baseline` saying so) for a GPU without a cuBLAS record.
    pub baseline: Option<Baseline>,
    /// `gflops` as a share of the baseline's rate, in percent.
    pub share: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_baseline: Option<String>,
    /// How many other kernels the launch has (their time is the launch's less the kernel's).
    pub others: usize,
    /// What a scaled run emulated in the launch's place, where a few blocks cannot stand for it:
    /// the prediction is that launch's, so labelled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stand_in: Option<&'static str>,
}

/// cuBLAS's rate recorded on the GPU ([`Profile::cublas`]) that a prediction is set beside.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Baseline {
    /// "cuBLAS SGEMM", or "cuBLAS TF32" for a step held to TF32.
    pub name: &'static str,
    /// The recorded square's side, its rate (GFLOP/s), and whether it is the shape itself
    /// (otherwise the square nearest in FLOPs).
    pub side: usize,
    pub gflops: f64,
    pub exact: bool,
}

impl Predicted {
    /// The model applied to an emulated launch: the step's kernel's counts and recorded launches
    /// (`step`), a block's residency, registers and serialised wgmma, a thread's local memory
    /// and spills (`local`), the product's shape, the launch's other kernels, and whether the
    /// step is held to TF32 (which cuBLAS it is set beside).
    pub fn of(
        profile: &'static Profile,
        step: (&Traffic, &[Recorded]),
        facts: (u32, u32, bool),
        local: (u32, u32),
        shape: Shape,
        others: &[(String, Traffic)],
        tf32: bool,
    ) -> Predicted {
        let each = each_gpu(profile, step, facts, shape, others);
        Predicted::assemble(each, local, shape, others.len(), tf32)
    }

    /// The prediction from each GPU's launch, the GPU predicted for first ([`each_gpu`]), with
    /// the caveat of a thread's local memory and spills (`local`), at `shape`, the launch's
    /// `others` kernels counted, set beside cuBLAS TF32 where `tf32`.
    pub fn assemble(
        each: Vec<(&'static Profile, (Prediction, f64))>,
        (local, spilled): (u32, u32),
        shape: Shape,
        others: usize,
        tf32: bool,
    ) -> Predicted {
        let seconds = each.iter().map(|(g, (_, whole))| (g.name, *whole)).collect();
        let (profile, (mut prediction, whole)) = each.into_iter().next().expect("the GPU predicted for");
        let gflops = 2.0 * shape.m as f64 * shape.n as f64 * shape.k as f64 / whole / 1e9;
        let baseline = nearest_square(profile, shape).map(|(side, sgemm, tf32_rate, exact)| {
            let (name, gflops) = if tf32 { ("cuBLAS TF32", tf32_rate) } else { ("cuBLAS SGEMM", sgemm) };
            Baseline { name, side, gflops, exact }
        });
        if local > 0 {
            prediction.unchecked.push(local_caveat(local, spilled));
        }
        Predicted {
            gpu: profile.name,
            bottleneck: prediction.bottleneck.name(),
            prediction,
            seconds,
            gflops,
            share: baseline.as_ref().map(|b| 100.0 * gflops / b.gflops),
            no_baseline: baseline.is_none().then(|| no_cublas(profile)),
            baseline,
            others,
            stand_in: None,
        }
    }
}

/// [`launch`] on every GPU the model has a profile of, `profile` first: each GPU's replay on a
/// thread of its own (they share nothing but what they read).
pub fn each_gpu(
    profile: &'static Profile,
    step: (&Traffic, &[Recorded]),
    facts: (u32, u32, bool),
    shape: Shape,
    others: &[(String, Traffic)],
) -> Vec<(&'static Profile, (Prediction, f64))> {
    let order =
        std::iter::once(profile).chain(profile::PROFILES.iter().copied().filter(|g| g.name != profile.name));
    std::thread::scope(|scope| {
        let handles: Vec<_> =
            order.map(|g| (g, scope.spawn(move || launch(g, step, facts, shape, others)))).collect();
        handles
            .into_iter()
            .map(|(g, h)| (g, h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))))
            .collect()
    })
}

/// The lines the report prints: the GPU's time and rate, its share of cuBLAS's recorded rate,
/// the bottleneck that sets it and every bottleneck's time, the other GPUs' times, what the replay of the
/// busiest SM found (where the launch was recorded), and what the model was not checked on.
pub fn lines(predicted: &Predicted) -> String {
    let Predicted {
        gpu,
        prediction: p,
        bottleneck,
        seconds,
        gflops,
        baseline,
        share,
        no_baseline,
        others,
        stand_in,
    } = predicted;
    let whole = &seconds.get(gpu).copied().unwrap_or(p.seconds);
    let beside = match (baseline, share) {
        (Some(Baseline { name, side, exact: true, .. }), Some(share)) => {
            format!("{share:.0}% of {name}'s recorded rate at {side}³")
        }
        (Some(Baseline { name, side, .. }), Some(share)) => {
            format!("{share:.0}% of {name}'s recorded rate at {side}³, the recorded square nearest in FLOPs")
        }
        _ => no_baseline.clone().unwrap_or_default(),
    };
    let mut out = String::new();
    let _ = write!(
        out,
        "  predicted {gpu} {}{} · {gflops:.0} GFLOP/s · {beside} · set by {bottleneck}",
        duration(*whole),
        stand_in.map(|s| format!(" for {s}")).unwrap_or_default()
    );
    if p.bottleneck == Bottleneck::Issue {
        let _ = write!(out, " ({:.0}% of it FP32)", 100.0 * p.fp32_share);
    }
    let _ = write!(out, " at {:.0} MHz", p.clock_mhz);
    for (name, s) in seconds.iter().filter(|(n, _)| *n != gpu) {
        let _ = write!(out, " · {name} {}", duration(*s));
    }
    let _ = writeln!(out);
    // Where the replay ran, its line below shows what the warps waited for; the counts' latency
    // term is printed only where the time comes from the counts alone.
    let terms: Vec<String> = p
        .terms
        .iter()
        .filter(|(l, s)| *s > 0.0 && *l != Bottleneck::Launch)
        .filter(|(l, _)| *l != Bottleneck::Latency || p.replay.is_none())
        .map(|(l, s)| match l {
            Bottleneck::Latency => latency_term(*s, p),
            Bottleneck::L2 => format!(
                "L2 {} ({} sectors read, {} written)",
                duration(*s),
                crate::numbers::count(p.l2_read_sectors),
                crate::numbers::count(p.l2_written_sectors)
            ),
            _ => format!("{} {}", short(*l), duration(*s)),
        })
        .collect();
    let _ = write!(out, "            each term: {}", terms.join(" · "));
    if p.wave_fill < 0.95 {
        let _ = write!(out, " · the busiest SM's blocks keep {:.0}% of the SMs busy", 100.0 * p.wave_fill);
    }
    if *others > 0 {
        let _ = write!(out, " · the other kernels add {}", duration(whole - p.seconds));
    }
    let _ = writeln!(out);
    if let Some(r) = &p.replay {
        let w = &r.waits;
        let all = (w.memory + w.shared + w.arithmetic + w.barrier + w.asynchronous).max(1e-9);
        let share = |v: f64| format!("{:.0}%", 100.0 * v / all);
        let _ = writeln!(
            out,
            "            replayed {} of the busiest SM's {} {} in cycles ({:.1} s): issue {:.0}% busy · L1 {:.0}% · tensor cores {:.0}% · L2 share {:.0}%; its warps waited on global and local memory {}, shared memory {}, arithmetic {}, barriers {}, copies and mbarriers {}; a load waited {:.0} cycles in the L2, {:.0} from DRAM ({:.0}% of its sectors)",
            r.replayed,
            r.clusters.max(r.replayed),
            match (r.cluster > 1, r.clusters.max(r.replayed) == 1) {
                (true, true) => "cluster",
                (true, false) => "clusters",
                (false, true) => "block",
                (false, false) => "blocks",
            },
            r.seconds,
            100.0 * r.issue_busy,
            100.0 * r.l1_busy,
            100.0 * r.tensor_busy,
            100.0 * r.l2_busy,
            share(w.memory),
            share(w.shared),
            share(w.arithmetic),
            share(w.barrier),
            share(w.asynchronous),
            r.l2_latency,
            r.dram_latency,
            100.0 * r.l2_miss
        );
    }
    if p.floor {
        let _ = writeln!(
            out,
            "            a floor sets this time: the whole GPU's {} for this launch's bytes; a change inside the SM (buffers, registers, the order of its work) moves it only if it makes the SM slower than the floor, so the model cannot rank changes that keep it faster; fewer bytes (larger tiles, multicast) or another size can",
            if p.bottleneck == Bottleneck::Dram { "DRAM bandwidth" } else { "L2 bandwidth" }
        );
    }
    let _ = writeln!(
        out,
        "            instructions neither FP32, memory nor tensor-core: {:.0}%",
        100.0 * p.other_share
    );
    if !p.unchecked.is_empty() {
        let _ =
            writeln!(out, "            outside what the model was checked on: {}", p.unchecked.join("; "));
    }
    out
}

/// The counts' latency term, in words: the stretches between a block's barriers that load global
/// memory (each waits for memory at least once), those with work issued after their first load
/// (work that can hide the wait), and the blocks an SM holds at once.
fn latency_term(seconds: f64, p: &predict::Prediction) -> String {
    let plural = |n: f64, one: &str, many: &str| if n == 1.0 { one.to_owned() } else { many.to_owned() };
    let blocks = plural(f64::from(p.resident), "block", "blocks");
    if p.phases == 0.0 {
        return format!(
            "latency {} (no global loads between barriers: the tiles come by copies; {} {blocks} an SM at once)",
            duration(seconds),
            p.resident
        );
    }
    format!(
        "latency {} (a block's {:.0} {} between barriers that load global memory, {:.0} with work issued after the first load; {} {blocks} an SM at once; {:.0} cycles a load)",
        duration(seconds),
        p.phases,
        plural(p.phases, "stretch", "stretches"),
        p.overlapped,
        p.resident,
        p.load_latency
    )
}

/// The caveat for a kernel whose threads keep local memory: the replay times its accesses
/// through the L1 and, past the L1's room, the L2, but was checked on one such kernel only, and
/// was too fast there.
fn local_caveat(local: u32, spilled: u32) -> String {
    let what = match (local > spilled, spilled > 0) {
        (true, true) => format!(
            "{} of arrays and {} of spills",
            crate::numbers::bytes(u64::from(local - spilled)),
            crate::numbers::bytes(u64::from(spilled))
        ),
        (true, false) => "arrays the compiler could not keep in registers".to_owned(),
        _ => "spilled registers".to_owned(),
    };
    format!(
        "its threads keep {} each in local memory ({what}), which the model was checked on in one kernel only, and predicted too fast there",
        crate::numbers::bytes(u64::from(local))
    )
}

fn short(l: Bottleneck) -> &'static str {
    match l {
        Bottleneck::Issue => "issue",
        Bottleneck::TensorCores => "tensor cores",
        Bottleneck::L1 => "L1 wavefronts",
        Bottleneck::L2 => "L2",
        Bottleneck::Dram => "DRAM",
        Bottleneck::Latency => "latency",
        Bottleneck::Launch => "launch",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each profile's cuBLAS rates are its record's: each rate read back from the record.
    #[test]
    fn recorded_rates_are_each_gpus_reference_run() {
        for profile in profile::PROFILES {
            let Some(cublas) = profile.cublas else { continue };
            let path = format!("{}/../docs/src/results/{}", env!("CARGO_MANIFEST_DIR"), cublas.record);
            let record = std::fs::read_to_string(&path).expect("the reference record");
            let row = |name: &str| -> Vec<f64> {
                let line = record.lines().find(|l| l.starts_with(&format!("| {name} |"))).expect("a row");
                line.split('|')
                    .skip(2)
                    .filter(|c| !c.trim().is_empty())
                    .map(|c| c.trim().parse().expect("a rate"))
                    .collect()
            };
            let (sgemm, tf32) = (row("cublas_sgemm"), row("cublas_tf32"));
            assert_eq!(cublas.rates.len(), sgemm.len(), "{}", profile.name);
            for (i, &(_, s, t)) in cublas.rates.iter().enumerate() {
                assert_eq!((s, t), (sgemm[i], tf32[i]), "{}, size {i}", profile.name);
            }
        }
    }

    /// A kernel with local memory is named in the caveat with its bytes a thread, arrays told
    /// from spills.
    #[test]
    fn local_memory_is_a_caveat_with_its_bytes() {
        let arrays = local_caveat(320, 0);
        assert!(arrays.starts_with("its threads keep 320 B each in local memory (arrays"), "{arrays}");
        let both = local_caveat(1024, 64);
        assert!(
            both.contains("1.0 KiB each") && both.contains("960 B of arrays and 64 B of spills"),
            "{both}"
        );
        assert!(local_caveat(64, 64).contains("(spilled registers)"));
    }

    #[test]
    fn a_shape_off_the_squares_is_set_beside_the_nearest() {
        let (side, ..) = nearest_square(&profile::H100, Shape { m: 1024, n: 1024, k: 4096 }).unwrap();
        assert_eq!(side, 2048, "1024·1024·4096 is 1625³, nearer 2048 than 1024 by ratio");
        assert!(nearest_square(&profile::H200, Shape { m: 4096, n: 4096, k: 4096 }).unwrap().3);
        assert!(nearest_square(&profile::H100_PCIE, Shape { m: 4096, n: 4096, k: 4096 }).is_none());
    }
}

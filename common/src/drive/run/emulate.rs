//! A GPU step's run on the PTX emulator: the same step, parameters, launch and verdict as on a
//! GPU, with the kernel compiled to PTX and run on the CPU. Instead of a time it reports what the
//! kernel moved through memory (the `traffic` line), and a race, an out-of-bounds access or a
//! barrier some threads miss stops the run with one sentence naming the `.cu` line.

use std::ops::ControlFlow;
use std::time::Instant;

use anyhow::{Result, anyhow, bail};

use super::ask::check_compile_only_options;
use super::budget::check_emulator_fits;
use super::depth;
use super::device::{Device, Products};
use super::emulator_step::{EmulatorStep, StandIn};

use crate::advisories;
use crate::cli::Args;
use crate::emulated::profile::Profile;
use crate::emulated::{self, Emulator, ReplayRecorded, TimelinePicture};
use crate::gpu::{ENTRY, LaunchLimits, Resources};
use crate::matrix::{Inputs, Shape};
use crate::params::Params;
use crate::reference;
use crate::reference::Reference;
use crate::report::{EmulatorInfo, RanOn, Report};
use crate::step::{Geometry, GpuStep};
use crate::timing::Stats;
use ptx_emulator::recording::warp_access::{Request, WarpAccess};

/// The largest side of the shape an emulated run takes when none is given: small enough that
/// every lab runs in a second or two.
pub const SMALL_SIDE: usize = 256;

/// An emulated run: the step compiled to PTX and loaded in the emulator once the run knows its
/// parameters; `reason` says why it emulates where it was not asked to (it then takes a small
/// default shape, and says so). `gpu`: the GPU the run copies and predicts for, chosen once
/// from the command line (`--gpu`, else the default profile) and handed to all below.
pub(super) struct EmulatorRun<'a> {
    emulated: Option<EmulatorStep<'a>>,
    reason: Option<String>,
    gpu: &'static Profile,
    /// A scaled run of a long K: the whole shape, and the products at the two shorter depths it
    /// emulates in its place (`run/depth.rs`).
    depth: Option<(Shape, depth::Depths)>,
    runs: Option<[depth::DepthRun; 2]>,
    /// What a scaled run emulates in the launch's place where a few blocks cannot stand for it,
    /// as its prediction is labelled.
    stand_in: Option<StandIn>,
}

impl<'a> EmulatorRun<'a> {
    /// Refuses what an emulated run cannot do.
    pub(super) fn open(args: &Args, reason: Option<String>) -> Result<Self> {
        if args.reps.is_some() {
            bail!("--reps sets how often a GPU run is timed; an emulated run is not timed");
        }
        if args.device.is_some() {
            bail!("--device chooses a GPU; an emulated run uses none");
        }
        check_compile_only_options(args)?;
        if args.scaled && args.save_c.is_some() {
            bail!("--scaled computes only a few blocks of C, so there is no whole C to save");
        }
        if args.picture_to.is_some() && args.picture_access.is_none() {
            bail!("--picture-to says where --picture-access writes, and no --picture-access was given");
        }
        Ok(EmulatorRun {
            emulated: None,
            reason,
            gpu: args.profile(),
            depth: None,
            runs: None,
            stand_in: None,
        })
    }

    fn emulated(&mut self) -> Result<&mut EmulatorStep<'a>> {
        match &mut self.emulated {
            Some(e) => Ok(e),
            None => bail!("the run multiplied before its kernel was compiled"),
        }
    }
}

impl<'a> Device<'a> for EmulatorRun<'a> {
    /// Every side of the step's default shape at most [`SMALL_SIDE`]: a second or two for any lab.
    fn default_shape(&self, step: &GpuStep) -> Shape {
        let default = (step.default_shape)(&LaunchLimits::LARGEST);
        Shape { m: default.m.min(SMALL_SIDE), n: default.n.min(SMALL_SIDE), k: default.k.min(SMALL_SIDE) }
    }

    fn sms(&self) -> u32 {
        self.gpu.machine.sms
    }

    fn with_cublas(&self) -> bool {
        false
    }

    fn memory_is_the_hosts(&self) -> bool {
        true
    }

    /// A shape beyond the emulator is refused ([`check_emulator_fits`]: a whole emulation at
    /// the fastest lab's rate on every thread). A scaled run of a long K on drawn inputs,
    /// drawing no pictures, draws its inputs at the deeper of the two depths it emulates.
    fn drawn_shape(&mut self, args: &Args, shape: Shape) -> Result<Shape> {
        let rate = FALLBACK_FLOPS_PER_THREAD * super::emulator_step::workers() as f64;
        check_emulator_fits(shape, !args.scaled, rate)?;
        let pictures = args.picture_access.is_some() || args.picture_timeline.is_some();
        if !args.scaled || args.a.is_some() || pictures {
            return Ok(shape);
        }
        Ok(match depth::depths(shape)? {
            Some(depths) => {
                self.depth = Some((shape, depths));
                depth::at_depth(shape, depths.first())
            }
            None => shape,
        })
    }

    fn prepare(
        &mut self,
        step: &'a GpuStep,
        args: &'a Args,
        params: Params,
        inputs: &Inputs,
    ) -> Result<ControlFlow<bool, (Geometry, Resources)>> {
        let shape = inputs.shape;
        if let Some(why) = &self.reason {
            let given = args.shape_given() || args.a.is_some();
            let size = if given { String::new() } else { format!(", at a small {shape}") };
            let note = format!("note: {why}, so {} runs on the PTX emulator on the CPU{size}", step.name);
            crate::emit::aside(args, &note);
        }
        // The parameters are checked at this shape once, before the compile, by EmulatorStep::new.
        let mut emulated = EmulatorStep::new(step, params.clone(), shape, true, self.gpu)?;
        emulated.machine.scale = args.scaled;
        if args.scaled {
            self.stand_in = emulated.scaled_stand_in(self.depth.map(|d| d.0))?;
            if let Some(s) = self.stand_in {
                crate::emit::aside(args, &format!("note: {}", s.why));
            }
        }
        for a in &emulated.advisories {
            crate::emit::aside(args, &a.sentence());
        }
        if let Some(request) = &args.picture_access {
            emulated.machine.watch(request.clone()).map_err(|e| anyhow!("{e}"))?;
        }
        let block = args.timeline_block.unwrap_or([0; 3]);
        emulated.machine.timeline = args.picture_timeline.as_ref().map(|_| (ENTRY.to_owned(), block));
        if !args.scaled && shape.flops() > TIME_FIRST_FLOPS {
            warn_if_long(step, &params, inputs, !args.no_verify, args, self.gpu)?;
        }
        let fitted = (emulated.geometry, emulated.resources);
        self.emulated = Some(emulated);
        Ok(ControlFlow::Continue(fitted))
    }

    fn products(&mut self, args: &Args, inputs: &Inputs, next: bool) -> Result<Products> {
        if let Some((whole, depths)) = self.depth {
            return self.depth_products(args, inputs, whole, depths);
        }
        let gpu = self.gpu;
        let emulated = self.emulated()?;
        let started = Instant::now();
        // The first product is recorded for the time model's replay; the second (the check of a
        // second launch) is not.
        emulated.machine.record = true;
        let (first, call_traffic) = emulated.multiply(inputs, true)?;
        emulated.machine.record = false;
        let recorded = std::sync::Arc::new(std::mem::take(&mut emulated.recorded));
        let seconds = started.elapsed().as_secs_f64();
        let rounds = draw_timeline(args, &mut emulated.machine)?;
        let serialized = advisories::serialized(&emulated.advisories);
        let resources = (emulated.resources.blocks_per_sm, emulated.resources.registers);
        draw_cycles(args, gpu, &recorded, resources, (serialized, rounds))?;
        if let Some(request) = &args.picture_access {
            picture(request, &emulated.machine.watched(), args.picture_to.as_deref())?;
        }
        let paths = emulated.paths.take().map(|p| (p, 0.0));
        // As a GPU run does: one more launch on C poisoned again, which reads what the first left
        // in the step's workspaces.
        let next = match next {
            true => Some(emulated.multiply(inputs, true).map_err(|e| anyhow!("the second launch: {e}"))?.0),
            false => None,
        };
        let device = RanOn::Emulated(Box::new(EmulatorInfo {
            traffic: call_traffic.0,
            others: call_traffic.1,
            seconds,
            workers: emulated.machine.workers,
            arch: emulated.step.ptx_arch(),
            gpu,
            serialized_wgmma: serialized,
            recorded,
            depths: None,
        }));
        Ok(Products { first, next, time: Stats::UNTIMED, device, paths })
    }

    fn reference(&mut self, inputs: &Inputs) -> Result<Reference> {
        Ok(reference::cpu(inputs))
    }

    /// The report with the chosen GPU's time the model predicts from what the products moved
    /// (carried from the two depths a scaled run of a long K emulated, at the whole shape).
    fn finish(&mut self, report: Report, _: Option<&Reference>) -> Result<Report> {
        let report = match (&self.runs, self.depth) {
            (Some(runs), Some((whole, _))) => {
                let predicted = match (&report.device, &report.kernel) {
                    (RanOn::Emulated(e), Some(kernel)) => {
                        let r = &kernel.resources;
                        let facts = (r.blocks_per_sm, r.registers, e.serialized_wgmma);
                        let model = (facts, (r.local_bytes, r.spill_bytes), report.precision.is_tf32());
                        Some(depth::predicted(e.gpu, model, runs, whole))
                    }
                    _ => None,
                };
                Report { shape: whole, predicted, ..report }
            }
            _ => report.with_prediction(),
        };
        let mut report = report;
        if let Some(p) = &mut report.predicted {
            p.stand_in = self.stand_in.map(|s| s.label);
        }
        Ok(report)
    }

    /// A workspace word a launch left for the next one, named at the read, beside the outcome.
    fn outcome(&mut self, outcome: Result<bool>) -> Result<bool> {
        match (self.emulated()?.machine.take_finding(), outcome) {
            (Some(finding), Ok(true)) => Err(anyhow!("{finding}")),
            (Some(finding), other) => {
                eprintln!("error: {finding}");
                other
            }
            (None, other) => other,
        }
    }
}

impl EmulatorRun<'_> {
    /// A scaled run's products of a long K: the launch planned for `whole`, emulated at the two
    /// shorter `depths` (`inputs` drawn at the deeper), its counts carried to `whole`'s K.
    fn depth_products(
        &mut self,
        args: &Args,
        inputs: &Inputs,
        whole: Shape,
        depths: depth::Depths,
    ) -> Result<Products> {
        let gpu = self.gpu;
        let emulated = self.emulated()?;
        let (runs, seconds) =
            super::emulator_step::at_depths(emulated, depths, inputs, (args.seed, args.family()))?;
        let (traffic, others) = depth::counts(&runs, whole.k)?;
        let device = RanOn::Emulated(Box::new(EmulatorInfo {
            traffic,
            others,
            seconds,
            workers: emulated.machine.workers,
            arch: emulated.step.ptx_arch(),
            gpu,
            serialized_wgmma: advisories::serialized(&emulated.advisories),
            recorded: runs[1].recorded.clone(),
            depths: Some([runs[0].k, runs[1].k]),
        }));
        let paths = emulated.paths.take().map(|p| (p, 0.0));
        self.runs = Some(runs);
        // A scaled run computes a few blocks of C: none is kept, and none is judged.
        Ok(Products { first: Vec::new(), next: None, time: Stats::UNTIMED, device, paths })
    }
}

/// Writes the picture of the accesses `--picture-access` asked for and prints what it shows; a
/// warp that never executed the line is named.
fn picture(request: &Request, accesses: &[WarpAccess], to: Option<&std::path::Path>) -> Result<()> {
    if accesses.is_empty() {
        bail!(
            "{} never executed its global or shared access there in this run, so there is no picture \
             (pick another warp or block with :warp=W or :block=X,Y,Z)",
            request.place()
        );
    }
    // By default the picture goes to the system's scratch folder, never into the checkout.
    let scratch = std::env::temp_dir().join("access.svg");
    let to = to.unwrap_or(&scratch);
    std::fs::write(to, ptx_pictures::access_svg::draw(accesses))
        .map_err(|e| anyhow!("--picture-to could not write {}: {e}", to.display()))?;
    for a in accesses {
        for (i, line) in a.summary().iter().enumerate() {
            println!("{} {line}", if i == 0 { "picture " } else { "        " });
        }
    }
    println!("         drawn to {}", to.display());
    Ok(())
}

/// With --picture-timeline: the block's timeline the run recorded, drawn to the file, and its
/// summary printed; recording stops for the launches that follow.
fn draw_timeline(args: &Args, machine: &mut Emulator) -> Result<bool> {
    let Some(file) = &args.picture_timeline else { return Ok(false) };
    machine.timeline = None;
    let [x, y, z] = args.timeline_block.unwrap_or([0; 3]);
    let Some(timeline) = machine.take_timeline() else {
        bail!(
            "block ({x}, {y}, {z}) did not run in this emulation (a scaled run runs a few blocks), so it has no timeline to draw"
        );
    };
    if let Err(why) = timeline.check() {
        // A kernel without a pipeline (labs 02–07) has its warps drawn in cycles alone.
        println!("  timeline {why}: its warps are drawn in the time model's clocks instead");
        return Ok(false);
    }
    let window = timeline.window(args.timeline_rounds).map_err(|why| anyhow!(why))?;
    std::fs::write(file, timeline.svg(window))
        .map_err(|e| anyhow!("could not write the timeline to {}: {e}", file.display()))?;
    print!("{}", timeline.summary());
    println!("  rounds {} to {} drawn to {}", window.0, window.1 - 1, file.display());
    Ok(true)
}

/// The most clocks the picture in cycles shows: a few rounds of a lab's main loop.
const PICTURE_CLOCKS: f64 = 20_000.0;

/// With --picture-timeline: the busiest block's warps in the time model's clocks, from the replay
/// of its first quarter or [`PICTURE_CLOCKS`], the fewer, and what its warps did in one line;
/// beside the picture in rounds (`NAME-cycles.svg` beside `NAME.svg`) where one was drawn
/// (`rounds`), else in the file asked for.
fn draw_cycles(
    args: &Args,
    gpu: &Profile,
    recorded: &[emulated::Recorded],
    (resident, registers): (u32, u32),
    (serialized, rounds): (bool, bool),
) -> Result<()> {
    let (Some(file), Some(rec)) = (&args.picture_timeline, recorded.first()) else { return Ok(()) };
    // The picture's loads all hit the L2: it shows the order of the warps' work, not DRAM's draws.
    let whole = rec.replay(gpu, (resident, registers), (serialized, 0.0), (f64::MAX, 0.0, 1.0));
    let one = whole.replayed_cycles / whole.replayed.max(1) as f64;
    let clocks = (one / 4.0).clamp(1.0, PICTURE_CLOCKS).round();
    let o = rec.replay(gpu, (resident, registers), (serialized, clocks), (f64::MAX, 0.0, 1.0));
    let to = match rounds {
        true => file.with_file_name(format!(
            "{}-cycles.svg",
            file.file_stem().map_or("timeline".into(), |s| s.to_string_lossy())
        )),
        false => file.clone(),
    };
    let title = format!(
        "{}: the busiest block's warps, its first {clocks:.0} clocks as the time model replays them",
        rec.kernel
    );
    std::fs::write(&to, ptx_pictures::cycles::svg(&o.spans, &title, clocks))
        .map_err(|e| anyhow!("could not write the picture in cycles to {}: {e}", to.display()))?;
    println!("  cycles   {}", ptx_pictures::cycles::summary(&o.spans));
    println!(
        "           the busiest block's first {clocks:.0} clocks of the replay drawn to {}",
        to.display()
    );
    Ok(())
}

/// A whole emulation of more FLOPs than this (1024³ and a little more) is timed first on a
/// scaled run, to say before it starts how long it will take.
const TIME_FIRST_FLOPS: f64 = 2.2e9;

/// A whole emulation expected to take longer than this is announced, with its estimate.
const LONG_SECONDS: f64 = 60.0;

/// A whole emulation that takes longer than this even at the fastest lab's rate is announced from
/// its FLOPs alone, without a scaled run first.
const SURE_SECONDS: f64 = 600.0;

/// Estimates how long the whole emulation of `inputs` will take on this machine from a scaled run
/// of the same launch (one block of each kind, a second or two), and, where it is more than a
/// minute, says so before it starts, with the faster choices. `verifies`: a second product follows.
fn warn_if_long(
    step: &GpuStep,
    params: &Params,
    inputs: &Inputs,
    verifies: bool,
    args: &Args,
    gpu: &'static Profile,
) -> Result<()> {
    let mut probe = EmulatorStep::new(step, params.clone(), inputs.shape, false, gpu)?;
    probe.machine.scale = true;
    let workers = probe.machine.workers;
    // At the fastest lab's rate, the least it can take: far beyond a minute, the probe itself
    // (a persistent block does a whole SM's share of the work) would keep the learner waiting.
    let at_least = inputs.shape.flops() / (FALLBACK_FLOPS_PER_THREAD * workers as f64);
    let started = Instant::now();
    let scaled = (at_least <= SURE_SECONDS).then(|| probe.multiply(inputs, true));
    let seconds = started.elapsed().as_secs_f64();
    let (whole, how) = match scaled {
        // The step's own kernel scaled up; what runs whole around it (copies, uploads) as it was.
        Some(Ok((_, (own, _)))) if own.scaled_ran > 0 => (
            seconds + probe.own_seconds * (own.scaled_of as f64 / own.scaled_ran as f64 - 1.0),
            format!("a scaled run of {} of its {} blocks took {seconds:.1} s", own.scaled_ran, own.scaled_of),
        ),
        // A launch the scaled run cannot take (a side whose clusters all differ): from its FLOPs.
        _ => (
            at_least,
            format!("at least, from its FLOPs at {:.0} MFLOP/s a thread", FALLBACK_FLOPS_PER_THREAD / 1e6),
        ),
    };
    let total = if verifies { 2.0 * whole } else { whole };
    if total > LONG_SECONDS {
        let launches = if verifies { ", for each of the two launches a verifying run makes" } else { "" };
        let note = format!(
            "note: emulating {} whole takes about {} on {workers} threads here{launches} ({how}); --scaled predicts the {}'s time in seconds where it can, and a smaller shape (--size 512) verifies in seconds",
            inputs.shape,
            duration(whole),
            gpu.name,
        );
        crate::emit::aside(args, &note);
    }
    Ok(())
}

/// The emulator's rate on lab 12, whose launch a scaled run cannot always take: 2048×2048×1024
/// in 46.6 s on two threads (the rates of labs 04 to 12 run from 13 to 92 MFLOP/s a thread).
const FALLBACK_FLOPS_PER_THREAD: f64 = 92e6;

/// `seconds` in words: "40 s", "7 min", "2 h 10 min".
fn duration(seconds: f64) -> String {
    let minutes = (seconds / 60.0).round() as u64;
    match seconds {
        s if s < 90.0 => format!("{s:.0} s"),
        _ if minutes < 120 => format!("{minutes} min"),
        _ => format!("{} h {} min", minutes / 60, minutes % 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_in_the_unit_that_suits_them() {
        assert_eq!(duration(40.4), "40 s");
        assert_eq!(duration(420.0), "7 min");
        assert_eq!(duration(7800.0), "2 h 10 min");
    }
}

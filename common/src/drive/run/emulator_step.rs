//! A step compiled to PTX for one parameter set and shape and loaded in the emulator
//! ([`EmulatorStep`]): what an emulated run, a prediction and the tests drive; and its products at
//! two shorter depths of K for a scaled run of a long K (`depth.rs` carries them to K).

use std::time::Instant;

use anyhow::{Result, anyhow, bail};

use super::depth::{self, DepthRun, Depths, at_depth, choose, floor, probe};

use crate::advisories::{self, Advisory};
use crate::emulated::profile::Profile;
use crate::emulated::{self, Emulator, EmulatorError, Recorded};
use crate::emulator_queue::{EmulatorQueue, EmulatorState};
use crate::gpu::{ENTRY, LaunchLimits, PtxasInfo, Resources};
use crate::hooks::Paths;
use crate::matrix::{Family, Inputs, Shape};
use crate::params::Params;
use crate::step::{Geometry, GpuStep};
use crate::step_kernel::{layout, multiply};

/// The host threads that run blocks: `PTX_EMULATOR_THREADS`, or every core.
pub(super) fn workers() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    std::env::var("PTX_EMULATOR_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(cores)
}

/// What the kernel's compile for Hopper says it costs on `gpu`: its SMs' residency and occupancy.
fn resources(
    gpu: &Profile,
    ptxas: Option<PtxasInfo>,
    threads: u32,
    static_smem: u32,
    dynamic_smem: u32,
) -> Resources {
    let registers = ptxas.map_or(0, |p| p.registers);
    let blocks_per_sm = emulated::blocks_per_sm(gpu, registers, threads, static_smem + dynamic_smem);
    Resources {
        registers,
        static_smem,
        dynamic_smem,
        local_bytes: ptxas.map_or(0, |p| p.stack_frame),
        spill_bytes: ptxas.map_or(0, |p| p.spill_bytes()),
        spill_stores: ptxas.map_or(0, |p| p.spill_stores),
        spill_loads: ptxas.map_or(0, |p| p.spill_loads),
        threads_per_block: threads,
        blocks_per_sm,
        occupancy: f64::from(blocks_per_sm * threads.div_ceil(32)) / f64::from(gpu.sm.warps),
        resident_blocks: gpu.machine.sms * blocks_per_sm,
    }
}

/// The largest product (in multiply-adds, M·N·K) a prediction emulates whole where a scaled run is
/// refused (`predict`), and up to which a Stream-K layout is refused rather than stood in for:
/// 1024³ takes the labs a minute or less on two cores.
pub const WHOLE_UP_TO: u64 = 1 << 30;

/// What the step's launches moved: its own kernel's traffic, and each other kernel's.
pub type CallTraffic = (emulated::Traffic, Vec<(String, emulated::Traffic)>);

/// A step compiled to PTX for one parameter set and shape, loaded in the emulator with the
/// launch it takes there.
pub struct EmulatorStep<'a> {
    pub step: &'a GpuStep,
    /// The GPU the launch copies: its SMs (the layout, the per-SM counts) and its SM's limits.
    pub gpu: &'static Profile,
    pub params: Params,
    pub machine: Emulator,
    pub geometry: Geometry,
    /// What the kernel costs on `gpu`, from its compile for sm_90 (registers 0 where that
    /// compile was not asked for).
    pub resources: Resources,
    /// What ptxas said, in that compile, about wgmma code it had to change (Hopper kernels).
    pub advisories: Vec<Advisory>,
    /// What the last product sent down each path, for a step with an FP32 path.
    pub paths: Option<Paths>,
    /// The step kernel's launches of the last product as the emulator recorded them for the
    /// time model, where `machine.record` was set.
    pub recorded: Vec<emulated::Recorded>,
    /// The seconds the last product's own kernel took to emulate (its copies and uploads apart).
    pub own_seconds: f64,
    /// The shape the launch was laid out for.
    pub shape: Shape,
    /// What the step's launch keeps from product to product.
    state: EmulatorState,
}

/// What a scaled run emulates in a launch's place, where a few of its blocks cannot stand for
/// it: why, in the sentence the run prints, and the label its prediction carries.
#[derive(Clone, Copy, Debug)]
pub struct StandIn {
    pub why: &'static str,
    pub label: &'static str,
}

/// Stream-K's stand-in: the launch without sharing.
pub const STREAM_K: StandIn = StandIn {
    why: "Stream-K's sharing blocks each wait for the one before them to add its slices of a tile, so a few of them cannot run alone and stand for the rest: this scaled run emulates the launch without sharing (a tile a block, as SHARE=0 lays it out) and predicts that launch's time",
    label: "the launch without Stream-K's sharing",
};

impl<'a> EmulatorStep<'a> {
    /// Compiles and loads `step` with `params` for `shape`, launched as on `gpu`. `h100_compile`
    /// also compiles it for sm_90, for the registers the report shows; a schedule that shares
    /// tiles always does, since its layout is cut for the blocks `gpu` holds at once.
    pub fn new(
        step: &'a GpuStep,
        params: Params,
        shape: Shape,
        h100_compile: bool,
        gpu: &'static Profile,
    ) -> Result<Self> {
        let geometry = step.validate(&params, shape, &LaunchLimits::LARGEST)?;
        let h100_compile = h100_compile || step.schedule.shares();
        // A Hopper kernel's PTX and its H100 machine code come from one compile, whose log also
        // holds what ptxas changed in its wgmma code; where that compile fails, the two below.
        let hopper = (h100_compile && step.ptx_arch() == emulated::HOPPER_PTX_ARCH)
            .then(|| step.hopper_ptx_and_log(&params).ok())
            .flatten();
        let (ptx, ptxas, advisories) = match hopper {
            Some((ptx, log)) => {
                let advisories = advisories::parse(&log, &ptx);
                (ptx, PtxasInfo::parse(&log), advisories)
            }
            None => {
                // The two compiles run side by side: the PTX to emulate, and the H100's machine code.
                let (ptx, ptxas) = std::thread::scope(|scope| {
                    let h100 = h100_compile
                        .then(|| scope.spawn(|| step.compile(&params, "sm_90").ok().and_then(|c| c.ptxas)));
                    let ptx = step.ptx(&params);
                    (ptx, h100.and_then(|h| h.join().ok().flatten()))
                });
                (ptx?, ptxas, Vec::new())
            }
        };
        let mut machine = Emulator::new(&ptx, gpu.machine).map_err(|e| anyhow!("{e}"))?;
        // The source lets a fault name an mbarrier as the kernel does, and a picture an array.
        for (file, text) in crate::includes::by_file(&step.expanded()?, step.file) {
            machine.source(&file, &text);
        }
        machine.defines(&params.defines());
        machine.workers = workers();
        if let Some(refusal) = machine.refusal(ENTRY) {
            bail!(
                "{} cannot run here: {}; it runs on an NVIDIA GPU",
                step.name,
                emulated::EmulatorError::Refused(refusal.clone())
            );
        }
        let static_smem = machine.static_shared(ENTRY).unwrap_or(0) as u32;
        let resources = resources(gpu, ptxas, geometry.threads(), static_smem, geometry.dynamic_smem);
        // Where the H100's compile was asked for, a kernel no SM could hold does not run here either.
        if let Some(why) = ptxas.and_then(|p| emulated::too_many_registers(p.registers, geometry.threads())) {
            bail!("{}: {why}", step.file);
        }
        // At least a block per SM, where the estimate of the registers fits none.
        let resident = resources.resident_blocks.max(gpu.machine.sms);
        let geometry = layout(step, &params, shape, geometry, resident)?;
        let wide = params.wide();
        Ok(EmulatorStep {
            step,
            gpu,
            params,
            machine,
            geometry,
            resources,
            advisories,
            paths: None,
            shape,
            state: EmulatorState::compiled_wide(wide),
            own_seconds: 0.0,
            recorded: Vec::new(),
        })
    }

    /// For a scaled run: what it emulates in the launch's place where a few blocks cannot stand
    /// for the launch (None where they can). A Stream-K layout that shares tiles (step 10's, where
    /// the last wave would leave SMs idle) has blocks that wait for one another's turns: beyond
    /// 1024³ the run emulates the launch without sharing (up to it, the scaled run is refused,
    /// and the launch emulates whole in a minute). `whole`: the shape whose launch a run at a
    /// shorter depth stands for, whose grid must be this one's.
    pub fn scaled_stand_in(&mut self, whole: Option<Shape>) -> Result<Option<StandIn>> {
        let (step, params) = (self.step, &self.params);
        let shares = |g: &Geometry| g.whole_rows.is_some_and(|w| w < g.grid.1);
        let plain = |shape: Shape| -> Result<Geometry> {
            let g = step.validate(params, shape, &LaunchLimits::LARGEST)?;
            Ok(Geometry { whole_rows: Some(g.grid.1), ..g })
        };
        let resident = self.resources.resident_blocks.max(self.gpu.machine.sms);
        let laid_out = match whole {
            Some(w) => {
                Some(layout(step, params, w, step.validate(params, w, &LaunchLimits::LARGEST)?, resident)?)
            }
            None => None,
        };
        // Up to 1024³ the launch emulates whole in a minute or less (what a refused scaled run
        // says to do, and what `predict` does): the stand-in is for the products beyond.
        let w = whole.unwrap_or(self.shape);
        let long = w.m as u64 * w.n as u64 * w.k as u64 > WHOLE_UP_TO;
        let shares = shares(&self.geometry) || laid_out.as_ref().is_some_and(shares);
        if shares && !long {
            return Err(EmulatorError::NotScalable(format!(
                "{}'s Stream-K layout at {w} has blocks that wait for one another's turns on the tiles they share, so a few of them cannot run alone: emulate it whole (without --scaled), which takes under a minute at this size",
                step.name
            ))
            .into());
        }
        let grid = laid_out.as_ref().map_or(self.geometry.grid, |g| g.grid);
        if let Some(why) = step.hooks.unequal_shares(params, w, grid) {
            return Err(EmulatorError::NotScalable(format!(
                "{why}: a scaled run would have to run every one of them, more than the {} it takes; emulate it whole (without --scaled), or choose such a shape",
                emulated::FULL_SIDE
            ))
            .into());
        }
        let stand_in = (shares && long).then_some(STREAM_K);
        if stand_in.is_some() {
            self.geometry = plain(self.shape)?;
        }
        if let (Some(w), Some(laid_out)) = (whole, laid_out) {
            let g = if stand_in.is_some() { plain(w)? } else { laid_out };
            if let Some(why) = step.hooks.shorter_depth(params, w, self.shape, g.grid) {
                bail!(
                    "{why}, so a scaled run cannot carry its counts from K = {} to K = {}; emulate a K of {} or less",
                    self.shape.k,
                    w.k,
                    depth::LONG_K
                );
            }
            if (g.grid, g.block, g.dynamic_smem)
                != (self.geometry.grid, self.geometry.block, self.geometry.dynamic_smem)
            {
                bail!(
                    "{}'s launch at K = {} (grid {:?}) is not its launch at K = {} (grid {:?}), so a scaled run cannot carry its counts from the shorter depth; emulate a K of {} or less",
                    step.name,
                    self.shape.k,
                    self.geometry.grid,
                    w.k,
                    g.grid,
                    depth::LONG_K
                );
            }
        }
        Ok(stand_in)
    }

    /// One product on the emulator ([`multiply`]): C comes back at the problem's shape, with what
    /// the launches moved. `sanitize` watches shared memory for races.
    pub fn multiply(&mut self, inputs: &Inputs, sanitize: bool) -> Result<(Vec<f32>, CallTraffic)> {
        let (step, params) = (self.step, &self.params);
        let state = &mut self.state;
        (state.traffic, state.others, state.recorded, state.own_seconds) = Default::default();
        let mut q = EmulatorQueue::new(&mut self.machine, state, sanitize);
        let ran = multiply(&mut q, step, params, self.geometry, inputs);
        let paths = match &ran {
            Ok((_, shape)) => step.hooks.paths(&mut q, *shape, params),
            Err(_) => Ok(None),
        };
        let traffic = (std::mem::take(&mut state.traffic), std::mem::take(&mut state.others));
        self.recorded = std::mem::take(&mut state.recorded);
        self.own_seconds = state.own_seconds;
        let (c, _) = ran?;
        self.paths = paths?;
        Ok((c, traffic))
    }
}

/// The products of `emulated` (compiled and laid out for the whole K) at two depths, scaled,
/// each recorded for the replay, as `depths` says: on `first` (drawn at [`Depths::first`]) at
/// its depth, on inputs of `family` drawn from `seed` at the others. With the seconds
/// they took.
pub fn at_depths(
    emulated: &mut EmulatorStep,
    depths: Depths,
    first: &Inputs,
    (seed, family): (u64, Family),
) -> Result<([DepthRun; 2], f64)> {
    let started = Instant::now();
    let drawn = |k: usize| Inputs::family(at_depth(first.shape, k), seed, family);
    let at = |emulated: &mut EmulatorStep, k: usize| match first.shape.k == k {
        true => run(emulated, first),
        false => run(emulated, &drawn(k)),
    };
    let floor = floor(emulated.step, &emulated.params);
    let measured = match depths {
        Depths::Chosen => probe(floor).map(|k| at(emulated, k)).transpose()?,
        Depths::Given(_) => None,
    };
    let [d1, d2] = match (depths, &measured) {
        (Depths::Given(given), _) => given,
        (Depths::Chosen, None) => [floor, 2 * floor],
        (Depths::Chosen, Some(probe)) => {
            let t = &probe.traffic;
            let flops = t.most_block_mma_sync_flops
                + t.most_block_wgmma_tf32_flops
                + t.most_block_wgmma_16bit_flops
                + t.most_block_wgmma_int8_ops;
            let d = choose(
                (t.most_block_instructions as f64 / probe.k as f64, flops as f64 / probe.k as f64),
                probe.traffic.scaled_ran.max(1),
                replayed(&probe.recorded, emulated),
                floor,
            );
            [d, 2 * d]
        }
    };
    let mut by_depth = |k: usize, probe: &mut Option<DepthRun>| -> Result<DepthRun> {
        match probe.take_if(|p| p.k == k) {
            Some(p) => Ok(p),
            None => at(emulated, k),
        }
    };
    let mut measured = measured;
    let runs = [by_depth(d1, &mut measured)?, by_depth(d2, &mut measured)?];
    Ok((runs, started.elapsed().as_secs_f64()))
}

/// One scaled product of `emulated` on `inputs`, recorded for the replay.
fn run(emulated: &mut EmulatorStep, inputs: &Inputs) -> Result<DepthRun> {
    emulated.machine.scale = true;
    emulated.machine.record = true;
    let ran = emulated.multiply(inputs, true);
    emulated.machine.record = false;
    let (_, (traffic, others)) = ran?;
    let recorded = std::sync::Arc::new(std::mem::take(&mut emulated.recorded));
    Ok(DepthRun { k: inputs.shape.k, traffic, others, recorded })
}

/// The blocks the replay runs of a launch `recorded`: the busiest SM's clusters, at most four
/// rounds of those it holds at once (`ptx_model`'s replay), each of its blocks.
fn replayed(recorded: &[Recorded], emulated: &EmulatorStep) -> u64 {
    let sms = u64::from(emulated.gpu.machine.sms);
    let resident = u64::from(emulated.resources.blocks_per_sm.max(1));
    recorded
        .iter()
        .map(|r| {
            let cluster = u64::from(r.cluster.max(1));
            let per_sm = r.blocks.div_ceil(cluster).div_ceil((sms / cluster).max(1));
            per_sm.clamp(1, 4 * resident) * cluster
        })
        .sum()
}

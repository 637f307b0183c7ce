//! A step's time on a GPU without that GPU: its launch emulated (one block of each kind, or whole where
//! a few blocks cannot stand for the grid and the product is small; at two shorter depths where K is
//! long, `run/depth.rs`) and its counts given to the emulator's time model. `compare --predicted`
//! builds its table from these.

use std::time::Instant;

use anyhow::{Result, anyhow};

use crate::emulated;
use crate::emulated::profile::Profile;
use crate::matrix::{Family, Inputs, Shape};
use crate::predicted;
use crate::step::GpuStep;

use super::depth;
use super::emulator_step::WHOLE_UP_TO;

/// One prediction.
#[derive(Clone, Debug)]
pub struct StepPrediction {
    /// The launch's predicted time, and the bottleneck that sets its kernel's.
    pub seconds: f64,
    pub bottleneck: &'static str,
    /// How long the emulation took, and whether it ran every block.
    pub emulated_seconds: f64,
    pub whole: bool,
    /// What was emulated in the launch's place, where a few blocks cannot stand for it (the
    /// label of [`super::emulator_step::StandIn`]).
    pub stand_in: Option<&'static str>,
}

/// `gpu`'s predicted time for `step` at its defaults for `shape` (or the parameters it chooses
/// for the shape on `gpu`'s SMs), on uniform inputs.
pub fn predict(step: &GpuStep, shape: Shape, gpu: &'static Profile) -> Result<StepPrediction> {
    let (params, _) = step.params_for(shape, gpu.machine.sms, &[])?;
    let (seed, family) = (42, Family::Uniform);
    let depths = depth::depths(shape)?;
    let run = |scaled: bool| -> Result<StepPrediction> {
        let depths = depths.filter(|_| scaled);
        let drawn = depths.map_or(shape, |d| depth::at_depth(shape, d.first()));
        let inputs = Inputs::family(drawn, seed, family);
        let mut e = super::EmulatorStep::new(step, params.clone(), drawn, true, gpu)?;
        let stand_in = match scaled {
            true => e.scaled_stand_in(depths.map(|_| shape))?,
            false => None,
        };
        let r = e.resources;
        let facts = (r.blocks_per_sm, r.registers, crate::advisories::serialized(&e.advisories));
        let started = Instant::now();
        let (p, whole) = match depths {
            Some(d) => {
                let (runs, _) = super::emulator_step::at_depths(&mut e, d, &inputs, (seed, family))?;
                let p = depth::predicted(gpu, (facts, (0, 0), false), &runs, shape);
                let whole = p.seconds.get(gpu.name).copied().unwrap_or(p.prediction.seconds);
                (p.prediction, whole)
            }
            None => {
                e.machine.scale = scaled;
                e.machine.record = true;
                let (_, (traffic, others)) = e.multiply(&inputs, false)?;
                predicted::launch(gpu, (&traffic, &e.recorded), facts, shape, &others)
            }
        };
        Ok(StepPrediction {
            seconds: whole,
            bottleneck: p.bottleneck.name(),
            emulated_seconds: started.elapsed().as_secs_f64(),
            whole: !scaled,
            stand_in: stand_in.map(|s| s.label),
        })
    };
    match run(true) {
        Err(e) if matches!(e.downcast_ref(), Some(emulated::EmulatorError::NotScalable(_))) => {
            let size = shape.m as u64 * shape.n as u64 * shape.k as u64;
            if size <= WHOLE_UP_TO {
                run(false)
            } else {
                Err(anyhow!("{e}; at {shape} a whole emulation would take too long"))
            }
        }
        other => other,
    }
}

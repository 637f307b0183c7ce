//! A step's time on a GPU without that GPU: its launch emulated (one block of each kind, or whole where
//! a few blocks cannot stand for the grid and the product is small) and its counts given to the
//! emulator's time model. `compare --predicted` builds its table from these.

use std::time::Instant;

use anyhow::{Result, anyhow};

use crate::emulated;
use crate::emulated::profile::Profile;
use crate::matrix::{Family, Inputs, Shape};
use crate::predicted;
use crate::step::GpuStep;

/// The largest product (in multiply-adds, M·N·K) [`predict`] emulates whole where a scaled run is
/// refused: 1024³ takes the labs a minute or less on two cores.
pub const WHOLE_UP_TO: u64 = 1 << 30;

/// One prediction.
#[derive(Clone, Debug)]
pub struct StepPrediction {
    /// The launch's predicted time, and the bottleneck that sets its kernel's.
    pub seconds: f64,
    pub bottleneck: &'static str,
    /// How long the emulation took, and whether it ran every block.
    pub emulated_seconds: f64,
    pub whole: bool,
}

/// `gpu`'s predicted time for `step` at its defaults for `shape` (or the parameters it chooses
/// for the shape on `gpu`'s SMs), on uniform inputs.
pub fn predict(step: &GpuStep, shape: Shape, gpu: &'static Profile) -> Result<StepPrediction> {
    let (params, _) = step.params_for(shape, gpu.machine.sms, &[])?;
    let inputs = Inputs::family(shape, 42, Family::Uniform);
    let run = |scaled: bool| -> Result<StepPrediction> {
        let mut e = super::EmulatorStep::new(step, params.clone(), shape, true, gpu)?;
        e.machine.scale = scaled;
        e.machine.record = true;
        let started = Instant::now();
        let (_, (traffic, others)) = e.multiply(&inputs, false)?;
        let emulated_seconds = started.elapsed().as_secs_f64();
        let (p, whole) = predicted::launch(
            gpu,
            (&traffic, &e.recorded),
            (e.resources.blocks_per_sm, e.resources.registers, crate::advisories::serialized(&e.advisories)),
            shape,
            &others,
        );
        Ok(StepPrediction {
            seconds: whole,
            bottleneck: p.bottleneck.name(),
            emulated_seconds,
            whole: !scaled,
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

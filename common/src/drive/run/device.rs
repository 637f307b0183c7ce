//! What a run needs of the device it multiplies on, GPU or emulator, and what the device's
//! products give back. The run (`run/mod.rs`) is handed one; `run/timed.rs` and
//! `run/emulate.rs` are the two.

use std::ops::ControlFlow;

use anyhow::Result;

use crate::cli::Args;
use crate::gpu::Resources;
use crate::hooks::Paths;
use crate::matrix::{Inputs, Shape};
use crate::params::Params;
use crate::reference::Reference;
use crate::report::{RanOn, Report};
use crate::step::{Geometry, GpuStep};
use crate::timing::Stats;

/// What the run needs of the device it multiplies on: a GPU ([`timed::GpuRun`]) or the PTX
/// emulator ([`emulate::EmulatorRun`]).
pub(super) trait Device<'a> {
    /// The shape a run takes where the command line leaves a side out.
    fn default_shape(&self, step: &GpuStep) -> Shape;

    /// The SMs a step that chooses its parameters per shape plans for.
    fn sms(&self) -> u32;

    /// Whether the run keeps cuBLAS's results beside its own (the host memory they take).
    fn with_cublas(&self) -> bool;

    /// Whether the device's memory is the host's (the emulator's): A, B, C and the step's
    /// workspaces then take host memory once more.
    fn memory_is_the_hosts(&self) -> bool {
        false
    }

    /// The shape whose inputs the run draws for `shape`: `shape`, unless the device multiplies
    /// at a shorter depth of K in its place (a scaled emulation of a long K).
    fn drawn_shape(&mut self, args: &Args, shape: Shape) -> Result<Shape> {
        let _ = args;
        Ok(shape)
    }

    /// Everything this device checks of the run before it compiles, the compile and the
    /// geometry fitted to the shape; or the outcome of what ran in the run's place (--tune).
    fn prepare(
        &mut self,
        step: &'a GpuStep,
        args: &'a Args,
        params: Params,
        inputs: &Inputs,
    ) -> Result<ControlFlow<bool, (Geometry, Resources)>>;

    /// The first product, on C poisoned with NaN, and, where `next`, one more on C poisoned
    /// again, which reads what the first left in the step's workspaces; with what the device
    /// measured of them.
    fn products(&mut self, args: &Args, inputs: &Inputs, next: bool) -> Result<Products>;

    /// The f64 reference the products are verified against.
    fn reference(&mut self, inputs: &Inputs) -> Result<Reference>;

    /// The report with the device's own parts added: the baselines, beside `reference`.
    fn finish(&mut self, report: Report, reference: Option<&Reference>) -> Result<Report> {
        let _ = reference;
        Ok(report)
    }

    /// The run's outcome, once its report is printed, as the device judges it.
    fn outcome(&mut self, outcome: Result<bool>) -> Result<bool> {
        outcome
    }
}

/// What a device's products gave: the two C's, the time (untimed on the emulator), the device's
/// part of the report, and what the FP32 path took.
pub(super) struct Products {
    pub first: Vec<f32>,
    pub next: Option<Vec<f32>>,
    pub time: Stats,
    pub device: RanOn,
    pub paths: Option<(Paths, f64)>,
}

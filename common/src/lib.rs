//! Host code shared by every step of the matmul course.
//!
//! A step crate holds only what makes it different (its kernel and launch shape); everything
//! else lives here, in layers: each folder is a layer (`data/` 0, `device/` 1, `numerics/` 2,
//! `contract/` 3, `present/` 4, `drive/` 5, `testing/` 6), and a module uses only modules of its
//! own layer and those below. `ARCHITECTURE.md`, at the repository's root, maps every module and
//! a run's path through them; the test `layers` holds the rule and the map to the code.
//!
//! `testing` and `bench` are built with the `testing` feature alone, which every crate of the
//! workspace turns on in its `[dev-dependencies]`: a step's program needs neither, nor the
//! proptest and criterion crates they use.
//!
//! Every public module is also at the crate's root (`common::gpu`, `common::verify`, …), so a
//! path does not change when a module's layer does.

mod contract;
mod data;
mod drive;
mod hardware;
mod numerics;
mod present;
#[cfg(feature = "testing")]
pub mod testing;

#[cfg(test)]
mod layers;

pub use contract::{
    emulator_queue, gpu_queue, hooks, includes, pad, params, paths, product, queue, spills, step,
    step_kernel, stream_k, tile_checks, tma,
};
pub use data::{files, matrix, patch, progress};
#[cfg(feature = "testing")]
pub use drive::bench;
pub use drive::{compile_only, every_path, measure, run, tune};
pub use hardware::{advisories, clock, emulated, gpu, stream_hold, timing, watchdog};
pub use numerics::{cublas, integer_rounding, reference, verify};
pub use present::{carried, cli, emit, numbers, predicted, record, report};

pub use matrix::{Inputs, Matrix, Shape};
pub use params::{Param, Params};
pub use step::{Choice, Extension, Geometry, GpuStep, Intensity, LaunchVariant, Schedule, Stage};
pub use tma::TmaBox;
pub use verify::Precision;

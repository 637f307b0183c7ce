//! Host code shared by every step of the matmul course.
//!
//! A step crate holds only what makes it different (its kernel and launch shape); everything
//! else lives here, in layers. Each folder is a layer, and a module uses only modules of the
//! layers below it (a test, `layers`, checks that, and that no two modules use each other):
//!
//! | layer | folder | modules |
//! |---|---|---|
//! | 0 data | `data/` | [`matrix`] (shape, row-major matrices, families of seeded inputs), [`files`] (`.npy` and `.safetensors`), [`patch`] (a unified diff applied to a kernel), [`progress`] |
//! | 1 device | `device/` | [`gpu`] (context, device facts, NVRTC, resources), [`stream_hold`] (a kernel that holds the stream while a timed batch is queued), [`timing`] (CUDA events, statistics), [`clock`] (the SM clock, power and energy through NVML, loaded at run time), [`emulated`] (the device without a GPU: PTX for the emulator, the occupancy it copies), [`advisories`] (what ptxas says it changed in a Hopper kernel's wgmma code) |
//! | 2 numerics | `numerics/` | [`reference`](mod@reference) (the f64 result), [`verify`] (the error model's limits in `verify/error_model.rs`, the verdict in `verify/verdict.rs`), [`cublas`] (baselines, DGEMM) |
//! | 3 step contract | `contract/` | [`params`] (a kernel's `-D` constants), [`step`] (what a step's `lib.rs` fills in), [`stream_k`] (the Stream-K plan), [`step_kernel`] (a compiled step kernel, its geometry on this GPU and the queueing of one product), [`hooks`] (the kernel call that pushes the arguments and queues the kernel on a GPU, and what a step adds to it), [`paths`] (what a step reports of rows and columns sent down a path of their own), [`queue`] (where one product's kernels are queued, on either device: [`gpu_queue`], [`emulator_queue`]), [`product`] (one product as the hooks get it, and the tensor maps of A and B common builds for it), [`tma`] (tensor maps), [`pad`] (rows padded to 16 bytes, by a copy queued on either device), [`spills`] (the refusal of a set whose entry points spill) |
//! | 4 presenting | `present/` | [`cli`] (the shared command line), [`report`] (the printed block), [`emit`] (the report as text or JSON, on standard output or in a file) |
//! | 5 driving | `drive/` | [`measure`] (one launch checked and timed, cuBLAS beside it), [`run`] (a step's program, once for either device: the GPU in `run/timed.rs`, the emulator in `run/emulate.rs`; whether a shape fits the GPU's and the host's memory in `run/memory.rs`), [`tune`], [`compile_only`], `bench` (the criterion benches) |
//! | 6 testing | `testing/` | `testing`: what the steps' tests share |
//!
//! `testing` and `bench` are built with the `testing` feature alone, which every crate of the
//! workspace turns on in its `[dev-dependencies]`: a step's program needs neither, nor the
//! proptest and criterion crates they use.
//!
//! Every module is also at the crate's root (`common::gpu`, `common::verify`, …), so a path does
//! not change when a module's layer does.

mod contract;
mod data;
mod device;
mod drive;
mod numerics;
mod present;
#[cfg(feature = "testing")]
pub mod testing;

#[cfg(test)]
mod layers;

pub use contract::{
    emulator_queue, gpu_queue, hooks, includes, pad, params, paths, product, queue, spills, step,
    step_kernel, stream_k, tma,
};
pub use data::{files, matrix, patch, progress};
pub use device::{advisories, clock, emulated, gpu, stream_hold, timing};
#[cfg(feature = "testing")]
pub use drive::bench;
pub use drive::{compile_only, measure, run, tune};
pub use numerics::{cublas, reference, verify};
pub use present::{cli, emit, numbers, predicted, report};

pub use matrix::{Inputs, Matrix, Shape};
pub use params::{Param, Params};
pub use step::{Choice, Extension, Geometry, GpuStep, Intensity, LaunchVariant, Schedule, Stage};
pub use tma::TmaBox;
pub use verify::Precision;

//! Host code shared by every step of the matmul course.
//!
//! A step crate holds only what makes it different (its kernel and launch shape); everything
//! else lives here, one concern per module:
//!
//! - [`matrix`]: row-major f32 matrices, the problem shape, seeded random inputs
//! - [`reference`]: the f64 result from an independent GEMM
//! - [`verify`]: the per-element error bound and the verdict
//! - [`timing`]: CUDA-event timing and its statistics
//! - [`gpu`]: device facts, NVRTC compilation, kernel resources
//! - [`cublas`]: the SGEMM baseline (and DGEMM for the reference)
//! - [`step`]: the contract a GPU step's `lib.rs` fills in
//! - [`tma`]: its one extension, tensor maps for Hopper's copy engine
//! - [`pad`]: rows padded to 16 bytes, for kernels that read them 16 bytes at a time
//! - [`cli`], [`report`], [`run`]: the shared command line, the printed block, the main loop
//! - [`tune`]: `--tune`, the search over a step's parameters
//! - [`compile_only`]: `--compile-only` and `--kernel PATH`, for trying edits
//! - [`bench`]: the criterion benches every step and `compare` share

pub mod bench;
pub mod cli;
pub mod compile_only;
pub mod cublas;
pub mod gpu;
pub mod matrix;
pub mod pad;
pub mod progress;
pub mod reference;
pub mod report;
pub mod run;
pub mod step;
pub mod testing;
pub mod timing;
pub mod tma;
pub mod tune;
pub mod verify;

pub use matrix::{Inputs, Matrix, Shape};
pub use step::{Extension, GpuStep, Intensity, Launch, Param, Params, Schedule, Stage};
pub use tma::TmaBox;
pub use verify::Precision;

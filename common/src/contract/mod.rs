//! Layer 3, the step contract: what a GPU step's `lib.rs` fills in (kernel, parameters, launch,
//! checks, and the tile rules several steps' kernels share), the Stream-K plan, the launch and the
//! hooks through which a step adds its own kernels to it, the refusal of spilled registers; tensor
//! maps and row padding. Depends on the layers below.

pub mod emulator_queue;
pub mod gpu_queue;
pub mod hooks;
pub mod includes;
pub mod pad;
pub mod params;
pub mod paths;
pub mod product;
pub mod queue;
pub mod spills;
pub mod step;
pub mod step_kernel;
pub mod stream_k;
pub mod tile_checks;
pub mod tma;

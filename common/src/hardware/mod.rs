//! Layer 1, the device: the GPU context and its facts, NVRTC compilation and kernel resources,
//! the stream hold kernel and CUDA-event timing, the clock through NVML; and the device without a GPU, the PTX emulator.
//! Depends on data.

pub mod advisories;
pub mod clock;
pub mod emulated;
pub mod gpu;
pub mod stream_hold;
pub mod timing;
pub mod watchdog;

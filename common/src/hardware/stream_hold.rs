//! The stream hold: a one-thread kernel that keeps the stream busy while the host queues a timed
//! batch (see [`crate::timing`]). It sits below both the device handle, which loads it once,
//! and the timing code, which queues it.

use std::sync::Arc;

use anyhow::{Context, Result};
use cudarc::driver::{CudaContext, CudaFunction, CudaStream, LaunchConfig, PushKernelArg};
use cudarc::nvrtc::Ptx;

/// A one-thread kernel that spins on the GPU's nanosecond timer for `ns`, written in PTX so it
/// needs no compiler: the driver translates it for whatever GPU is present.
const HOLD_PTX: &str = "
.version 7.0
.target sm_70
.address_size 64
.visible .entry hold(.param .u64 ns)
{
    .reg .u64 %rd<5>;
    .reg .pred %p;
    ld.param.u64 %rd1, [ns];
    mov.u64 %rd2, %globaltimer;
spin:
    mov.u64 %rd3, %globaltimer;
    sub.u64 %rd4, %rd3, %rd2;
    setp.lt.u64 %p, %rd4, %rd1;
    @%p bra spin;
    ret;
}
";

/// Keeps the stream busy while the host queues a batch: the launches to be timed then start
/// back to back, however slowly the host issues them, and the host's side stays out of the
/// measured interval.
pub struct Hold {
    func: CudaFunction,
}

/// The shortest hold: a few launch calls' worth.
pub const HOLD_MIN_MS: f64 = 0.05;
/// The longest hold.
pub const HOLD_MAX_MS: f64 = 50.0;

impl Hold {
    pub fn new(ctx: &Arc<CudaContext>) -> Result<Self> {
        let module = ctx.load_module(Ptx::from_src(HOLD_PTX)).context("loading the timing hold kernel")?;
        Ok(Self { func: module.load_function("hold").context("loading the timing hold kernel")? })
    }

    /// How long to hold a batch of `count` launches whose host calls take `host_per_launch_ms`
    /// each: half as long again as queueing them should take.
    pub fn length(host_per_launch_ms: f64, count: usize) -> f64 {
        (1.5 * host_per_launch_ms * count as f64 + HOLD_MIN_MS).min(HOLD_MAX_MS)
    }

    /// Queues a spin of `ms` (clamped to [HOLD_MIN_MS, HOLD_MAX_MS]) on `stream`.
    pub fn queue(&self, stream: &CudaStream, ms: f64) -> Result<()> {
        let ns = (ms.clamp(HOLD_MIN_MS, HOLD_MAX_MS) * 1e6) as u64;
        let cfg = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (1, 1, 1), shared_mem_bytes: 0 };
        let mut builder = stream.launch_builder(&self.func);
        builder.arg(&ns);
        // SAFETY: the argument matches `hold(.param .u64 ns)`; the kernel touches no memory.
        unsafe { builder.launch(cfg) }.context("launching the timing hold kernel")?;
        Ok(())
    }
}

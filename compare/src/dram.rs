//! The DRAM roof: the bandwidth a copy kernel reaches on this GPU, measured in the same run as
//! the steps.

use anyhow::{Result, anyhow};
use common::gpu::{self, Gpu};
use common::timing::{self, Sampling};
use cudarc::driver::{LaunchConfig, PushKernelArg};

/// The copy kernel: a grid-stride loop of float4 loads and stores.
pub const SOURCE: &str = include_str!("copy.cu");
/// Its path in the workspace, for compiler diagnostics.
pub const FILE: &str = "compare/src/copy.cu";
/// Its entry point.
pub const ENTRY: &str = "copy";

/// Floats in each of the two buffers: 1 GiB each.
pub const FLOATS: usize = 1 << 28;
/// Blocks per SM and threads per block: enough loads in flight to saturate DRAM.
pub const BLOCKS_PER_SM: u32 = 8;
pub const THREADS: u32 = 256;

/// Floats per buffer for a device with `free` bytes free: 1 GiB, or a quarter of the free
/// memory when that is less (both buffers then take half of it), in whole float4s.
pub fn buffer_floats(free: usize) -> usize {
    FLOATS.min(free / 4 / size_of::<f32>()) / 4 * 4
}

/// Bytes read and written per second, in GB/s (10⁹ bytes), for a copy of `bytes` in `ms`.
pub fn gbs(bytes: usize, ms: f64) -> f64 {
    2.0 * bytes as f64 / (ms * 1e-3) / 1e9
}

/// Copies 1 GiB (less where memory is short) from one device buffer to another and returns the
/// bandwidth at the median time, counting reads and writes. None when free memory allows only
/// buffers smaller than four times the L2 cache, where the copy would measure the cache instead.
pub fn measure(gpu: &Gpu, sampling: Sampling) -> Result<Option<f64>> {
    let (free, _) =
        gpu.ctx.mem_get_info().map_err(|e| anyhow!("could not read the GPU's free memory: {e:?}"))?;
    let floats = buffer_floats(free);
    let bytes = floats * size_of::<f32>();
    if bytes < 4 * gpu.info.l2_bytes as usize {
        return Ok(None);
    }
    let compiled = gpu::compile(SOURCE, FILE, &gpu.info.arch(), &[])?;
    let func = gpu::Kernel::load_entry(gpu, compiled, ENTRY)?.func;
    let alloc_err = |e| anyhow!("could not allocate two buffers of {bytes} bytes for the copy kernel: {e:?}");
    let src = gpu.stream.alloc_zeros::<f32>(floats).map_err(alloc_err)?;
    let mut dst = gpu.stream.alloc_zeros::<f32>(floats).map_err(alloc_err)?;
    let n4 = (floats / 4) as u64;
    let cfg = LaunchConfig {
        grid_dim: (gpu.info.sms.max(1) * BLOCKS_PER_SM, 1, 1),
        block_dim: (THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    let stats = timing::time_gpu(gpu, sampling, || {
        let mut builder = gpu.stream.launch_builder(&func);
        builder.arg(&src).arg(&mut dst).arg(&n4);
        // SAFETY: the arguments match `copy(const float4*, float4*, unsigned long long)`, and
        // both buffers hold n4 float4s.
        unsafe { builder.launch(cfg) }.map_err(|e| anyhow!("the copy kernel failed to launch: {e:?}"))?;
        Ok(())
    })?;
    // The buffers are freed here, before the steps allocate theirs.
    drop((src, dst));
    Ok(Some(gbs(bytes, stats.median_ms)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_one_gib_or_a_quarter_of_free_memory() {
        assert_eq!(buffer_floats(80 << 30), 1 << 28);
        assert_eq!(buffer_floats(4 << 30), 1 << 28, "exactly a quarter");
        assert_eq!(buffer_floats(2 << 30), 1 << 27);
        assert_eq!(buffer_floats(1000), 60, "whole float4s: 250 bytes hold 62 floats");
    }

    #[test]
    fn bandwidth_counts_the_read_and_the_write() {
        // 1 GiB read and 1 GiB written in 0.5 ms.
        let g = gbs(1 << 30, 0.5);
        assert!((g - 4294.967296).abs() < 1e-6, "{g}");
    }

    #[test]
    #[ignore = "needs libnvrtc"]
    fn nvrtc_copy_kernel_compiles_without_spills() {
        let compiled = gpu::compile(SOURCE, FILE, "sm_90", &[]).unwrap();
        assert!(!compiled.cubin.is_empty());
        let info = gpu::PtxasInfo::parse_entry(&compiled.log, ENTRY).unwrap_or_else(|| {
            panic!(
                "no ptxas report (a cached compile? set CUDA_CACHE_DISABLE=1); NVRTC's log:\n{}",
                compiled.log
            )
        });
        assert_eq!(info.spill_bytes(), 0, "{}", compiled.log);
    }
}

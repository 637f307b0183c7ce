//! Step 02: the naive GPU kernel, one thread per element of C.

use common::gpu::Limits;
use common::{GpuStep, Launch, Param, Params, Shape};

// ANCHOR: params
/// The block is BLOCK×BLOCK threads, each computing one element of C.
pub const PARAMS: &[Param] =
    &[Param { name: "BLOCK", default: 32, help: "threads per side of the square block" }];
// ANCHOR_END: params

// ANCHOR: launch
/// One thread per element of C: x runs along the columns (N), y along the rows (M).
fn launch(p: &Params, s: Shape) -> Launch {
    let block = p.get("BLOCK");
    Launch {
        grid: ((s.n as u32).div_ceil(block), (s.m as u32).div_ceil(block), 1),
        block: (block, block, 1),
        dynamic_smem: 0,
    }
}
// ANCHOR_END: launch

fn check(p: &Params, _: Shape, limits: &Limits) -> Result<(), String> {
    let block = p.get("BLOCK");
    let threads = u64::from(block) * u64::from(block);
    if block == 0 || threads > u64::from(limits.max_threads_per_block) {
        return Err(format!(
            "BLOCK={block} gives {threads} threads per block; BLOCK must be from 1 to {}",
            (limits.max_threads_per_block as f64).sqrt() as u32
        ));
    }
    Ok(())
}

pub const STEP: GpuStep = GpuStep {
    name: "step02_gpu_naive",
    idea: "one GPU thread per element of C, threadIdx.x along the columns for coalesced access",
    file: "step02_gpu_naive/src/kernel.cu",
    source: include_str!("kernel.cu"),
    params: PARAMS,
    search: &[("BLOCK", &[8, 16, 32])],
    launch,
    check,
    default_shape: |_| Shape { m: 4096, n: 4096, k: 4096 },
};

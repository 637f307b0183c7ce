//! Step 02: the naive GPU kernel, one thread per element of C.

use common::gpu::LaunchLimits;
use common::{Geometry, GpuStep, Intensity, Param, Params, Precision, Shape};

// ANCHOR: params
/// The block is BLOCK×BLOCK threads, each computing one element of C.
pub const PARAMS: &[Param] = &[
    Param { name: "BLOCK", default: 32, help: "threads per side of the square block" },
    Param { name: "COALESCED", default: 1, help: "1: threadIdx.x runs along a row of C; 0: down a column" },
];
// ANCHOR_END: params

// ANCHOR: geometry
/// One thread per element of C: x runs along the columns (N), y along the rows (M), or the
/// other way round with COALESCED=0.
fn geometry(p: &Params, s: Shape) -> Geometry {
    let block = p.get("BLOCK");
    // x covers whatever threadIdx.x is mapped to.
    let (x, y) = if p.get("COALESCED") == 1 { (s.n, s.m) } else { (s.m, s.n) };
    Geometry {
        grid: ((x as u32).div_ceil(block), (y as u32).div_ceil(block), 1),
        block: (block, block, 1),
        dynamic_smem: 0,
        whole_rows: None,
    }
}
// ANCHOR_END: geometry

fn check(p: &Params, _: Shape, limits: &LaunchLimits) -> Result<(), String> {
    if p.get("COALESCED") > 1 {
        return Err(format!("COALESCED={} must be 1 (threadIdx.x along a row) or 0", p.get("COALESCED")));
    }
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
    search: &[("BLOCK", &[8, 16, 32]), ("COALESCED", &[0, 1])],
    geometry,
    check,
    precision: Precision::Fp32,
    // Every multiply-add loads one float of A and one of B: 2 FLOPs per 8 bytes.
    intensity: |_| Intensity { global: 0.25, shared: None },
    ..GpuStep::DEFAULT
};

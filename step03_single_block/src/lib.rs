//! Step 03: all of A and B in one block's shared memory.

use common::gpu::LaunchLimits;
use common::{Geometry, GpuStep, Intensity, Params, Precision, Shape};

/// Shared memory for all of A and B, in bytes.
fn smem_bytes(s: Shape) -> u64 {
    4 * (s.m * s.k + s.k * s.n) as u64
}

// ANCHOR: geometry
/// One block; thread (x, y) computes C[y][x], so the block is N×M threads.
fn geometry(_: &Params, s: Shape) -> Geometry {
    Geometry {
        grid: (1, 1, 1),
        block: (s.n as u32, s.m as u32, 1),
        dynamic_smem: smem_bytes(s) as u32,
        whole_rows: None,
    }
}
// ANCHOR_END: geometry

// ANCHOR: check
fn check(_: &Params, s: Shape, limits: &LaunchLimits) -> Result<(), String> {
    let threads = (s.m * s.n) as u64;
    if threads > u64::from(limits.max_threads_per_block) {
        return Err(format!(
            "step03_single_block computes C in one block, one thread per element, and {}×{} = {threads} \
             threads exceed the {} a block may have; step04_tiled lifts this limit",
            s.m, s.n, limits.max_threads_per_block
        ));
    }
    if smem_bytes(s) > u64::from(limits.max_smem_per_block) {
        return Err(format!(
            "step03_single_block keeps all of A and B in one block's shared memory, and they need {} bytes, \
             more than the {} bytes a block may have; step04_tiled lifts this limit",
            smem_bytes(s),
            limits.max_smem_per_block
        ));
    }
    Ok(())
}
// ANCHOR_END: check

/// The largest square problem one block can hold: the thread limit sets the side.
fn default_shape(limits: &LaunchLimits) -> Shape {
    let mut side = 1;
    while (side + 1) * (side + 1) <= limits.max_threads_per_block as usize
        && 8 * (side + 1) * (side + 1) <= limits.max_smem_per_block as usize
    {
        side += 1;
    }
    Shape { m: side, n: side, k: side }
}

pub const STEP: GpuStep = GpuStep {
    name: "step03_single_block",
    idea: "all of A and B in one block's shared memory: each input element leaves global memory once",
    file: "step03_single_block/src/kernel.cu",
    source: include_str!("kernel.cu"),
    params: &[],
    geometry,
    check,
    default_shape,
    precision: Precision::Fp32,
    // At the default 32×32×32: each element of A and B leaves global memory once,
    // 2·32³ FLOPs for 2·32² floats; in shared memory a warp reads one broadcast of A and one
    // row of B (a wavefront each) per k, 64 FLOPs per 256 bytes.
    intensity: |_| Intensity { global: 8.0, shared: Some(0.25) },
    ..GpuStep::DEFAULT
};

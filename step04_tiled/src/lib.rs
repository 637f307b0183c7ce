//! Step 04: TILE×TILE tiles of A and B in shared memory, any M, N, K.

use common::gpu::Limits;
use common::{GpuStep, Launch, Param, Params, Precision, Shape};

// ANCHOR: params
/// The block computes one TILE×TILE tile of C with TILE×TILE threads.
pub const PARAMS: &[Param] = &[
    Param { name: "TILE", default: 32, help: "side of the square tiles of A, B and C (8, 16 or 32)" },
    Param { name: "UNROLL", default: 32, help: "copies of the inner loop's body per trip (#pragma unroll)" },
];
// ANCHOR_END: params

// ANCHOR: launch
fn launch(p: &Params, s: Shape) -> Launch {
    let tile = p.get("TILE");
    Launch {
        grid: ((s.n as u32).div_ceil(tile), (s.m as u32).div_ceil(tile), 1),
        block: (tile, tile, 1),
        dynamic_smem: 0,
    }
}
// ANCHOR_END: launch

fn check(p: &Params, _: Shape, limits: &Limits) -> Result<(), String> {
    if p.get("UNROLL") == 0 {
        return Err("UNROLL must be at least 1 (1 keeps the loop as written)".to_owned());
    }
    let tile = p.get("TILE");
    let threads = u64::from(tile) * u64::from(tile);
    if tile == 0 || threads > u64::from(limits.max_threads_per_block) {
        return Err(format!(
            "TILE={tile} needs {threads} threads per block (one per element of the tile); TILE must be from 1 to {}",
            (f64::from(limits.max_threads_per_block)).sqrt() as u32
        ));
    }
    Ok(())
}

pub const STEP: GpuStep = GpuStep {
    name: "step04_tiled",
    idea: "TILE×TILE tiles of A and B staged in shared memory, each global load reused TILE times",
    file: "step04_tiled/src/kernel.cu",
    source: include_str!("kernel.cu"),
    params: PARAMS,
    search: &[("TILE", &[8, 16, 32]), ("UNROLL", &[1, 4, 32])],
    launch,
    check,
    default_shape: |_| Shape { m: 4096, n: 4096, k: 4096 },
    precision: Precision::Fp32,
};

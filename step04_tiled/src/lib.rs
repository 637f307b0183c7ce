//! Step 04: TILE×TILE tiles of A and B in shared memory, any M, N, K.

use common::gpu::LaunchLimits;
use common::{Geometry, GpuStep, Intensity, Param, Params, Precision, Shape};

// ANCHOR: params
/// The block computes one TILE×TILE tile of C with TILE×TILE threads.
pub const PARAMS: &[Param] = &[
    Param { name: "TILE", default: 32, help: "side of the square tiles of A, B and C (8, 16 or 32)" },
    Param { name: "UNROLL", default: 32, help: "copies of the inner loop's body per trip (#pragma unroll)" },
    Param { name: "BT", default: 0, help: "1: the host passes B transposed and the kernel copies its rows" },
    Param {
        name: "PAD",
        default: 0,
        help: "floats of padding after each row of the B tile in shared memory",
    },
];
// ANCHOR_END: params

// ANCHOR: geometry
fn geometry(p: &Params, s: Shape) -> Geometry {
    let tile = p.get("TILE");
    Geometry {
        grid: ((s.n as u32).div_ceil(tile), (s.m as u32).div_ceil(tile), 1),
        block: (tile, tile, 1),
        dynamic_smem: 0,
        whole_rows: None,
    }
}
// ANCHOR_END: geometry

fn check(p: &Params, _: Shape, limits: &LaunchLimits) -> Result<(), String> {
    if p.get("BT") > 1 {
        return Err(format!("BT={} must be 0 (B as it is) or 1 (B transposed by the host)", p.get("BT")));
    }
    if p.get("PAD") > 32 {
        return Err(format!("PAD={} must be from 0 to 32 floats", p.get("PAD")));
    }
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

// ANCHOR: step
pub const STEP: GpuStep = GpuStep {
    name: "step04_tiled",
    idea: "TILE×TILE tiles of A and B staged in shared memory, each global load reused TILE times",
    file: "step04_tiled/src/kernel.cu",
    source: include_str!("kernel.cu"),
    params: PARAMS,
    search: &[("TILE", &[8, 16, 32]), ("UNROLL", &[1, 4, 32])],
    geometry,
    check,
    precision: Precision::Fp32,
    b_transposed: |p| p.get("BT") == 1,
    intensity,
    ..GpuStep::DEFAULT
};
// ANCHOR_END: step

/// Each float loaded from global memory serves TILE multiply-adds: TILE/4 FLOPs per byte. In
/// shared memory, per k a warp reads A as a broadcast (NVRTC fetches four k with one 16-byte
/// load, which costs two wavefronts, one per half-warp, as Nsight Compute counts them) and B in
/// as many wavefronts as the most lanes that want different addresses in one bank: 1 for a row
/// of Bs, 32 for an unpadded column (BT=1, PAD=0), whose 16-byte-aligned rows NVRTC reads four k
/// at a time, so 8 per k.
fn intensity(p: &Params) -> Intensity {
    let (tile, pad) = (p.get("TILE") as usize, p.get("PAD") as usize);
    let lanes = tile.min(32);
    let b_wavefronts = if p.get("BT") == 1 {
        let conflicts = (0..32)
            .map(|bank| (0..lanes).filter(|tx| (tx * (tile + pad)) % 32 == bank).count())
            .max()
            .unwrap_or(1) as f64;
        if (tile + pad) % 4 == 0 { conflicts / 4.0 } else { conflicts }
    } else {
        1.0
    };
    let flops_per_k = 2.0 * 32.0; // one FMA per lane
    Intensity { global: tile as f64 / 4.0, shared: Some(flops_per_k / (128.0 * (0.5 + b_wavefronts))) }
}

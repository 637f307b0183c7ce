//! Step 07: TF32 on the tensor cores (mma.sync.m16n8k8), tiles staged with cp.async.

use common::gpu::LaunchLimits;
use common::{Geometry, GpuStep, Intensity, Param, Params, Precision, Shape, Stage};

// ANCHOR: params
/// The block computes a BM×BN tile of C, walking K in slices of BK. Each warp owns a WM×WN
/// region of it: (WM/8)·(WN/16) tensor-core tiles, each 8 rows by 16 columns of C.
pub const PARAMS: &[Param] = &[
    Param { name: "BM", default: 128, help: "rows of C per block" },
    Param { name: "BN", default: 128, help: "columns of C per block" },
    Param { name: "BK", default: 32, help: "depth of the K slice staged in shared memory (a multiple of 8)" },
    Param { name: "WM", default: 64, help: "rows of C per warp (a multiple of 16)" },
    Param { name: "WN", default: 64, help: "columns of C per warp (a multiple of 16)" },
];
// ANCHOR_END: params

/// The values the tuner tries (`--tune`).
pub const SEARCH: &[(&str, &[u32])] = &[
    ("BM", &[64, 128, 256]),
    ("BN", &[64, 128, 256]),
    ("BK", &[16, 32, 64]),
    ("WM", &[32, 64, 128]),
    ("WN", &[32, 64]),
];

/// One warp per WM×WN region of the block tile.
fn threads(p: &Params) -> u32 {
    (p.get("BM") / p.get("WM")) * (p.get("BN") / p.get("WN")) * 32
}

/// Bytes of the two buffers of the A tile (rows padded by 4 floats) and the B tile (by 8).
fn smem_bytes(p: &Params) -> u32 {
    let [bm, bn, bk] = ["BM", "BN", "BK"].map(|n| p.get(n));
    2 * 4 * (bm * (bk + 4) + bk * (bn + 8))
}

// ANCHOR: geometry
fn geometry(p: &Params, s: Shape) -> Geometry {
    Geometry {
        grid: ((s.n as u32).div_ceil(p.get("BN")), (s.m as u32).div_ceil(p.get("BM")), 1),
        block: (threads(p), 1, 1),
        dynamic_smem: smem_bytes(p),
        whole_rows: None,
    }
}
// ANCHOR_END: geometry

// ANCHOR: check
fn check(p: &Params, _: Shape, limits: &LaunchLimits) -> Result<(), String> {
    let [bm, bn, bk, wm, wn] = ["BM", "BN", "BK", "WM", "WN"].map(|n| p.get(n));
    if [bm, bn, bk, wm, wn].contains(&0) || [bm, bn, bk].iter().any(|&v| v > 1024) {
        return Err(format!("{p}: every parameter must be at least 1, and BM, BN, BK at most 1024"));
    }
    if wm % 16 != 0 || wn % 16 != 0 || bk % 8 != 0 {
        return Err(format!(
            "{p}: a warp's region must be whole tensor-core tiles, read two 8-row strips at a time, and the slice \
             whole 8-deep steps (WM and WN multiples of 16, BK of 8)"
        ));
    }
    if bm % wm != 0 || bn % wn != 0 {
        return Err(format!(
            "{p}: the block tile must be a whole number of warp regions (WM divides BM, WN divides BN)"
        ));
    }
    let threads = threads(p);
    if threads % (bk / 4) != 0 || threads % (bn / 4) != 0 {
        return Err(format!(
            "{p}: the {threads} threads copy the tiles 4 floats each, a row at a time, so BK/4 and BN/4 must divide \
             the thread count"
        ));
    }
    limits.check_warp_tiled_block(p, threads, smem_bytes(p))
}
// ANCHOR_END: check

pub const STEP: GpuStep = GpuStep {
    name: "step07_tf32_mma",
    idea: "the tensor cores: warp-wide mma.sync on TF32 operands with FP32 sums, tiles copied by cp.async",
    file: "step07_tf32_mma/src/kernel.cu",
    source: include_str!("kernel.cu"),
    params: PARAMS,
    search: SEARCH,
    geometry,
    check,
    precision: Precision::Tf32,
    intensity,
    min_compute: (8, 0),
    stages: STAGES,
    ..GpuStep::DEFAULT
};

/// The step's kernel built up one idea at a time (`--stage NAME`), from step 06's to the step's
/// own, which adds `ldmatrix` for A's fragments to the last; the chapter measures each. Every
/// stage runs with the step's parameters and launch.
pub const STAGES: &[Stage] = &[
    Stage {
        name: "1_mma_sync",
        idea: "the tensor cores: each warp computes its region with mma.sync.m16n8k8 on operands rounded to TF32, reading its fragments from shared memory one float at a time",
        file: "step07_tf32_mma/stages/1_mma_sync.cu",
        source: include_str!("../stages/1_mma_sync.cu"),
    },
    Stage {
        name: "2_cp_async",
        idea: "cp.async copies the slices into shared memory without passing through registers, A's tile stored as it lies",
        file: "step07_tf32_mma/stages/2_cp_async.cu",
        source: include_str!("../stages/2_cp_async.cu"),
    },
    Stage {
        name: "3_padded_rows",
        idea: "the rows of both tiles padded, A's by 4 floats and B's by 8, so that the fragment reads touch every bank once",
        file: "step07_tf32_mma/stages/3_padded_rows.cu",
        source: include_str!("../stages/3_padded_rows.cu"),
    },
    Stage {
        name: "4_swapped_operands",
        idea: "swapped operands: each MMA computes a tile of Cᵀ = Bᵀ·Aᵀ, with B's fragment as the 4-register first operand and A's as the 2-register second",
        file: "step07_tf32_mma/stages/4_swapped_operands.cu",
        source: include_str!("../stages/4_swapped_operands.cu"),
    },
    Stage {
        name: "5_paired_columns",
        idea: "a warp's columns permuted (warp_col), so that the two B values a lane reads from a row lie side by side and arrive in one 8-byte load",
        file: "step07_tf32_mma/stages/5_paired_columns.cu",
        source: include_str!("../stages/5_paired_columns.cu"),
    },
];

/// Global memory: a BK-deep slice brings BK·(BM + BN) floats for 2·BM·BN·BK FLOPs. Shared
/// memory: per 8-deep step a lane reads 2 floats for each of its warp's WM/8 A strips (one
/// ldmatrix.x4 per two) and 4 for each of its WN/16 B strips (two 8-byte loads), with no bank
/// conflicts, for (WM/8)·(WN/16) MMAs of 2·16·8·8 FLOPs.
fn intensity(p: &Params) -> Intensity {
    let [bm, bn, wm, wn] = ["BM", "BN", "WM", "WN"].map(|n| f64::from(p.get(n)));
    let (mt, nt) = (wm / 8.0, wn / 16.0);
    Intensity {
        global: bm * bn / (2.0 * (bm + bn)),
        shared: Some(mt * nt * 2048.0 / (128.0 * (2.0 * mt + 4.0 * nt))),
    }
}

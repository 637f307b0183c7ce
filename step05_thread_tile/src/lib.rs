//! Step 05: each thread computes a TM×TN tile of C in registers (outer products).

use common::gpu::LaunchLimits;
use common::tile_checks;
use common::{Geometry, GpuStep, Intensity, Param, Params, Precision, Shape, Stage};

// ANCHOR: params
/// The block computes a BM×BN tile of C, walking K in slices of BK. Each warp owns a WM×WN
/// region of it, and each of the warp's 32 threads a TM×TN tile of accumulators.
pub const PARAMS: &[Param] = &[
    Param { name: "BM", default: 128, help: "rows of C per block" },
    Param { name: "BN", default: 128, help: "columns of C per block" },
    Param { name: "BK", default: 16, help: "depth of the K slice staged in shared memory (a multiple of 4)" },
    Param { name: "WM", default: 64, help: "rows of C per warp" },
    Param { name: "WN", default: 32, help: "columns of C per warp" },
    Param { name: "TM", default: 8, help: "rows of C per thread" },
    Param { name: "TN", default: 8, help: "columns of C per thread (1: the one-dimensional thread tile)" },
    Param {
        name: "MINB",
        default: 1,
        help: "blocks per SM the register budget must allow (__launch_bounds__)",
    },
];
// ANCHOR_END: params

/// The values the tuner tries (`--tune`).
pub const SEARCH: &[(&str, &[u32])] = &[
    ("BM", &[64, 128, 256]),
    ("BN", &[64, 128, 256]),
    ("BK", &[8, 16, 32]),
    ("WM", &[16, 32, 64, 128]),
    ("WN", &[16, 32, 64, 128]),
    ("TM", &[8, 16]),
    ("TN", &[4, 8]),
    ("MINB", &[1, 2]),
];

/// One warp per WM×WN region of the block tile.
fn threads(p: &Params) -> u32 {
    (p.get("BM") / p.get("WM")) * (p.get("BN") / p.get("WN")) * 32
}

/// Bytes of the staged A and B slices.
fn smem_bytes(p: &Params) -> u32 {
    4 * p.get("BK") * (p.get("BM") + p.get("BN"))
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
/// Refuses a set the kernel cannot serve, in one sentence: the thread tile's rules, which step 06
/// shares, against this block's threads and shared memory.
fn check(p: &Params, _: Shape, limits: &LaunchLimits) -> Result<(), String> {
    tile_checks::thread_tile(p, limits, threads, smem_bytes)
}
// ANCHOR_END: check

pub const STEP: GpuStep = GpuStep {
    name: "step05_thread_tile",
    idea: "each thread accumulates a TM×TN tile of C in registers from outer products of A and B slices",
    file: "step05_thread_tile/src/kernel.cu",
    source: include_str!("kernel.cu"),
    params: PARAMS,
    search: SEARCH,
    geometry,
    check,
    precision: Precision::Fp32,
    intensity,
    stages: STAGES,
    ..GpuStep::DEFAULT
};

/// The step's kernel built up one idea at a time (`--stage NAME`), from step 04's to the step's
/// own, which adds bounds-free slices to the last; the chapter measures each.
pub const STAGES: &[Stage] = &[
    Stage {
        name: "1_column_tile",
        idea: "a column of TM results per thread in registers, one load of B for TM FMAs (TN = 1: the one-dimensional thread tile)",
        file: "step05_thread_tile/stages/1_column_tile.cu",
        source: include_str!("../stages/1_column_tile.cu"),
    },
    Stage {
        name: "2_outer_products",
        idea: "a TM×TN register tile per thread, built from outer products: TM + TN loads for TM·TN FMAs",
        file: "step05_thread_tile/stages/2_outer_products.cu",
        source: include_str!("../stages/2_outer_products.cu"),
    },
    Stage {
        name: "3_warp_regions",
        idea: "threads arranged warp by warp, each warp owning a WM×WN region",
        file: "step05_thread_tile/stages/3_warp_regions.cu",
        source: include_str!("../stages/3_warp_regions.cu"),
    },
    Stage {
        name: "4_transposed_a",
        idea: "A's tile stored transposed in shared memory, free of bank conflicts",
        file: "step05_thread_tile/stages/4_transposed_a.cu",
        source: include_str!("../stages/4_transposed_a.cu"),
    },
    Stage {
        name: "5_staged_copies",
        idea: "a thread's copies in pieces of 4 floats, all loaded into registers before any is stored",
        file: "step05_thread_tile/stages/5_staged_copies.cu",
        source: include_str!("../stages/5_staged_copies.cu"),
    },
    Stage {
        name: "6_vector_loads",
        idea: "16-byte loads: a thread's tile in 4×4 pieces, float4 copies and writes",
        file: "step05_thread_tile/stages/6_vector_loads.cu",
        source: include_str!("../stages/6_vector_loads.cu"),
    },
    Stage {
        name: "7_launch_bounds",
        idea: "__launch_bounds__(THREADS, MINB): registers budgeted for MINB blocks per SM",
        file: "step05_thread_tile/stages/7_launch_bounds.cu",
        source: include_str!("../stages/7_launch_bounds.cu"),
    },
];

/// The thread-tile model (see `Intensity::thread_tile`), the same for steps 05 and 06.
fn intensity(p: &Params) -> Intensity {
    Intensity::thread_tile(p.get("BM"), p.get("BN"), p.get("WN"), p.get("TM"), p.get("TN"))
}

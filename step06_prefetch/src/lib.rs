//! Step 06: step 05 with two shared-memory buffers, the next slice loaded while this one is computed.

use common::gpu::LaunchLimits;
use common::tile_checks;
use common::{Geometry, GpuStep, Intensity, LaunchVariant, Param, Params, Precision, Shape};

// ANCHOR: params
/// The block computes a BM×BN tile of C, walking K in slices of BK. Each warp owns a WM×WN
/// region of it, and each of the warp's 32 threads a TM×TN tile of accumulators.
pub const PARAMS: &[Param] = &[
    Param { name: "BM", default: 128, help: "rows of C per block" },
    Param { name: "BN", default: 256, help: "columns of C per block" },
    Param { name: "BK", default: 16, help: "depth of the K slice staged in shared memory (a multiple of 4)" },
    Param { name: "WM", default: 128, help: "rows of C per warp" },
    Param { name: "WN", default: 16, help: "columns of C per warp" },
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

/// Bytes of the staged A and B slices, twice: one buffer computed on, one being filled.
fn smem_bytes(p: &Params) -> u32 {
    2 * 4 * p.get("BK") * (p.get("BM") + p.get("BN"))
}

// ANCHOR: geometry
/// A block per BM×BN tile of C (step 10 cuts the problem with the same launch, per shape).
pub fn geometry(p: &Params, s: Shape) -> Geometry {
    Geometry {
        grid: ((s.n as u32).div_ceil(p.get("BN")), (s.m as u32).div_ceil(p.get("BM")), 1),
        block: (threads(p), 1, 1),
        dynamic_smem: smem_bytes(p),
        whole_rows: None,
    }
}
// ANCHOR_END: geometry

// ANCHOR: check
/// Refuses a set the kernel cannot serve, in one sentence (step 10 checks its sets the same way).
pub fn check(p: &Params, _: Shape, limits: &LaunchLimits) -> Result<(), String> {
    tile_checks::thread_tile(p, limits, threads, smem_bytes)
}
// ANCHOR_END: check

pub const STEP: GpuStep = GpuStep {
    name: "step06_prefetch",
    idea: "double-buffered shared memory: the next K slice is fetched while the current one is multiplied",
    file: "step06_prefetch/src/kernel.cu",
    source: include_str!("kernel.cu"),
    params: PARAMS,
    search: SEARCH,
    geometry,
    check,
    precision: Precision::Fp32,
    intensity,
    variants: VARIANTS,
    ..GpuStep::DEFAULT
};

/// Measured alternatives beside the kernel that need a launch of their own (`--kernel FILE`).
pub const VARIANTS: &[LaunchVariant] = &[LaunchVariant {
    file: "step06_prefetch/variants/stream_k.cu",
    idea: "Stream-K for a part-filled last wave and rows padded to 16 bytes: a schedule, not the prefetch",
    source: include_str!("../variants/stream_k.cu"),
    params: STREAM_K_PARAMS,
    search: STREAM_K_SEARCH,
    schedule: common::Schedule::StreamK,
    pads_rows: true,
    mark: "SHARED_TILES_MAX",
}];

/// The Stream-K variant takes the kernel's parameters and SHARE, which only its launch reads.
const STREAM_K_PARAMS: &[Param] = &[
    PARAMS[0],
    PARAMS[1],
    PARAMS[2],
    PARAMS[3],
    PARAMS[4],
    PARAMS[5],
    PARAMS[6],
    PARAMS[7],
    common::stream_k::SHARE,
];
const STREAM_K_SEARCH: &[(&str, &[u32])] = &[
    SEARCH[0],
    SEARCH[1],
    SEARCH[2],
    SEARCH[3],
    SEARCH[4],
    SEARCH[5],
    SEARCH[6],
    SEARCH[7],
    ("SHARE", &[0, 1]),
];

/// The thread-tile model (see `Intensity::thread_tile`), the same for steps 05 and 06.
pub fn intensity(p: &Params) -> Intensity {
    Intensity::thread_tile(p.get("BM"), p.get("BN"), p.get("WN"), p.get("TM"), p.get("TN"))
}

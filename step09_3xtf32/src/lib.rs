//! Step 09: FP32 accuracy from the TF32 tensor cores: operands split in two, three products.

pub mod apart;
pub mod fp32_path;

use common::gpu::LaunchLimits;
use common::includes::Include;
use common::paths::{PathCase, Reach};
use common::{Extension, Geometry, GpuStep, Intensity, Param, Params, Precision, Shape, TmaBox};

// ANCHOR: params
/// The block computes a BM×BN tile of C, BM = 128: BN/64 consumer warpgroups, each a 64-column
/// strip with three m64n128k8 wgmmas per 8-deep step, and a producer warpgroup that keeps
/// STAGES tiles of A (two parts of 128×32) and B (32×BN) in flight. Blocks are handed tiles
/// GROUP block-rows at a time.
pub const PARAMS: &[Param] = &[
    Param { name: "BN", default: 128, help: "columns of C per block, 64 per consumer warpgroup (64 or 128)" },
    Param { name: "STAGES", default: 4, help: "tiles of A and B in shared memory at once (2 to 8)" },
    Param {
        name: "GROUP",
        default: 8,
        help: "block-rows the launch order walks down before moving right (1 to 64)",
    },
    apart::SPLIT_K,
];
// ANCHOR_END: params

/// The values the tuner tries (`--tune`).
pub const SEARCH: &[(&str, &[u32])] =
    &[("BN", &[64, 128]), ("STAGES", &[2, 3, 4, 5]), ("GROUP", &[1, 4, 8, 16])];

/// Rows of C per block: the N of the kernel's wgmma. Each consumer thread holds three sets of
/// BM/2 accumulators (the slice's part, the running sum and the total): 192 registers at 128
/// rows; at 256 rows two sets alone, 256 registers, would exceed the 255 a thread may have.
pub(crate) const BM: u32 = 128;

/// The depth of a tile: one 128-byte row of floats, the width of the swizzle.
const BK: u32 = 32;

/// A producer warpgroup and BN/64 consumers.
fn threads(p: &Params) -> u32 {
    128 * (p.get("BN") / 64 + 1)
}

/// STAGES tiles of A (two parts) and B, a full and an empty barrier per buffer, and 1024 bytes
/// to align the tiles for the swizzle.
fn smem_bytes(p: &Params) -> u32 {
    p.get("STAGES") * (4 * BK * (2 * BM + p.get("BN")) + 16) + 1024
}

// ANCHOR: geometry
fn geometry(p: &Params, s: Shape) -> Geometry {
    Geometry {
        grid: ((s.n as u32).div_ceil(p.get("BN")), (s.m as u32).div_ceil(BM), 1),
        block: (threads(p), 1, 1),
        dynamic_smem: smem_bytes(p),
        whole_rows: None,
    }
}

/// Each part of A's tile is BM rows of 32 floats; B's comes in boxes of 32 rows of 32 columns.
fn a_box(_: &Params) -> TmaBox {
    TmaBox { rows: BM, cols: BK }
}

fn b_box(_: &Params) -> TmaBox {
    TmaBox { rows: BK, cols: 32 }
}
// ANCHOR_END: geometry

// ANCHOR: check
fn check(p: &Params, _: Shape, limits: &LaunchLimits) -> Result<(), String> {
    let [bn, stages, group] = ["BN", "STAGES", "GROUP"].map(|n| p.get(n));
    if bn != 64 && bn != 128 {
        return Err(format!(
            "{p}: BN must be 64 or 128, one 64-column strip per consumer warpgroup; a third consumer's three sets \
             of accumulators do not fit in an SM's registers"
        ));
    }
    if !(2..=8).contains(&stages) {
        return Err(format!("{p}: STAGES must be 2 to 8"));
    }
    if !(1..=64).contains(&group) {
        return Err(format!("{p}: GROUP must be 1 to 64 block-rows"));
    }
    if p.get(apart::SPLIT_K.name) > apart::SPLIT_K_MAX {
        return Err(format!(
            "{p}: SPLIT_K is the number of blocks that share each tile's K, 0 (as many as fill the GPU) to {}",
            apart::SPLIT_K_MAX
        ));
    }
    // The tiles and barriers, and the kernel's own array of the columns' scales (4·BN bytes).
    let bytes = smem_bytes(p) + 4 * bn;
    if bytes > limits.max_smem_per_block {
        return Err(format!(
            "{p} keeps {bytes} bytes of tiles, barriers and scales in shared memory, more than the {} bytes a block may have; \
             lower STAGES or BN",
            limits.max_smem_per_block
        ));
    }
    Ok(())
}
// ANCHOR_END: check

/// What the kernel, its variants and the hands-on starting file include: the Hopper helpers, and
/// the marking and scaling of B's columns.
pub const INCLUDES: &[Include] = &[
    Include { name: "hopper.cuh", file: "step09_3xtf32/src/hopper.cuh", text: include_str!("hopper.cuh") },
    Include { name: "columns.cuh", file: "step09_3xtf32/src/columns.cuh", text: include_str!("columns.cuh") },
];

/// `--every-path`: the 3×TF32 kernel at an odd shape, a split of K (the launch's and a forced
/// three-way one), a block walking more than FLUSH (32) slices, the FP32 path beside the kernel
/// and alone (K below 256), and inputs that check every term, cancel nowhere (so that a bias of
/// the split adds up: parts truncated, not rounded) or spread rows over many binades.
pub const EVERY_PATH: &[PathCase] = &[
    PathCase {
        path: "3×TF32 kernel, odd shape",
        args: &["-m", "67", "-n", "45", "-k", "300"],
        env: None,
        made: None,
        reach: Reach::Kernel,
    },
    PathCase {
        path: "split K (the launch's)",
        args: &["-m", "130", "-n", "200", "-k", "520"],
        env: None,
        made: None,
        reach: Reach::Both(&Reach::Kernel, &Reach::Says("split K", "share each tile's K")),
    },
    PathCase {
        path: "split K in three",
        args: &["-m", "67", "-n", "45", "-k", "776", "--param", "SPLIT_K=3"],
        env: None,
        made: None,
        reach: Reach::Both(&Reach::Kernel, &Reach::Says("split K", "3 blocks share")),
    },
    PathCase {
        path: "a flush after 32 slices",
        args: &["-m", "67", "-n", "45", "-k", "1100", "--param", "SPLIT_K=1"],
        env: None,
        made: None,
        reach: Reach::Kernel,
    },
    PathCase {
        path: "FP32 path beside the kernel",
        args: &["-m", "67", "-n", "45", "-k", "300", "--inputs", "nonfinite"],
        env: None,
        made: None,
        reach: Reach::Fp32AndKernel,
    },
    PathCase {
        path: "FP32 path alone (K < 256)",
        args: &["-m", "67", "-n", "45", "-k", "129"],
        env: None,
        made: None,
        reach: Reach::Fp32Only,
    },
    PathCase {
        path: "every term exact",
        args: &["-m", "67", "-n", "45", "-k", "300", "--inputs", "integers"],
        env: None,
        made: None,
        reach: Reach::Kernel,
    },
    PathCase {
        path: "positive inputs",
        args: &["-m", "67", "-n", "45", "-k", "300", "--inputs", "positive"],
        env: None,
        made: None,
        reach: Reach::Kernel,
    },
    PathCase {
        path: "rows over 80 binades",
        args: &["-m", "67", "-n", "45", "-k", "300", "--inputs", "kscaled:40"],
        env: None,
        made: None,
        reach: Reach::Kernel,
    },
];

pub const STEP: GpuStep = GpuStep {
    name: "step09_3xtf32",
    idea: "FP32 accuracy from TF32 tensor cores: each operand split into two TF32 parts, three products per term",
    file: "step09_3xtf32/src/kernel.cu",
    source: include_str!("kernel.cu"),
    includes: INCLUDES,
    params: PARAMS,
    search: SEARCH,
    geometry,
    check,
    precision: Precision::Tf32x3,
    intensity,
    min_compute: (9, 0),
    extension: Extension::PartTensorMaps { a: a_box, b: b_box },
    hooks: &apart::ApartHooks,
    ..GpuStep::DEFAULT
};

/// Counted in the product's own FLOPs (2·M·N·K), as the rates are. Global memory: a 32-deep
/// tile brings 32·(2·BM + BN) floats (both parts of A) for 2·BM·BN·32 FLOPs. Shared memory:
/// per 8-deep step a consumer's three wgmmas read a BM×8 slice of A each (the big part twice,
/// the small once), and its threads 64×8 floats of B, for 2·64·BM·8 FLOPs.
fn intensity(p: &Params) -> Intensity {
    let (bm, bn) = (f64::from(BM), f64::from(p.get("BN")));
    Intensity {
        global: bm * bn / (2.0 * (2.0 * bm + bn)),
        shared: Some(2.0 * 64.0 * bm * 8.0 / (4.0 * 8.0 * (3.0 * bm + 64.0))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The host sizes the grid, the boxes and shared memory with the kernel's own tile constants
    /// and launches the threads the kernel counts on, at each width the tuner tries that the
    /// other defaults take (a number that differs stops the compile with a message naming it).
    #[test]
    #[ignore = "needs libnvrtc"]
    fn nvrtc_the_host_and_the_kernel_agree_on_the_tile() {
        common::testing::assert_kernel_agrees_at_tuner_sets(&STEP, "BN", "sm_90", |params| {
            let bn = params.get("BN");
            [
                ("BM", "lib.rs's BM".to_owned(), BM),
                ("BK", "lib.rs's BK".to_owned(), BK),
                ("B_BOX", "b_box's rows * cols".to_owned(), b_box(params).rows * b_box(params).cols),
                ("THREADS", format!("threads() at BN = {bn}"), threads(params)),
            ]
        });
    }
}

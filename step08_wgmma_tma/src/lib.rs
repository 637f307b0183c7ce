//! Step 08: Hopper's wgmma, fed by the tensor memory accelerator through an mbarrier pipeline.

use common::gpu::LaunchLimits;
use common::tile_checks;
use common::{Extension, Geometry, GpuStep, Intensity, Param, Params, Precision, Shape, TmaBox};

// ANCHOR: params
/// The block computes a BM×BN tile of C: BN/64 consumer warpgroups, each a 64-column strip
/// with one m64nBMk8 wgmma per 8 deep of K, and a producer warpgroup that keeps STAGES tiles
/// of A (BM×32) and B (32×BN) in flight. Blocks are handed tiles GROUP block-rows at a time.
pub const PARAMS: &[Param] = &[
    Param { name: "BM", default: 256, help: "rows of C per block: the N of each wgmma (128 or 256)" },
    Param {
        name: "BN",
        default: 128,
        help: "columns of C per block, 64 per consumer warpgroup (64, 128 or 192)",
    },
    Param { name: "STAGES", default: 4, help: "tiles of A and B in shared memory at once (2 to 8)" },
    Param {
        name: "GROUP",
        default: 8,
        help: "block-rows the launch order walks down before moving right (1 to 64)",
    },
];
// ANCHOR_END: params

/// The values the tuner tries (`--tune`).
pub const SEARCH: &[(&str, &[u32])] =
    &[("BM", &[128, 256]), ("BN", &[64, 128, 192]), ("STAGES", &[2, 3, 4, 5, 6]), ("GROUP", &[1, 4, 8, 16])];

/// The depth of a tile: one 128-byte row of floats, the width of the swizzle.
const BK: u32 = 32;

/// A producer warpgroup and BN/64 consumers.
fn threads(p: &Params) -> u32 {
    128 * (p.get("BN") / 64 + 1)
}

/// STAGES tiles of A and B, a full and an empty barrier per buffer, and 1024 bytes to align the
/// tiles for the swizzle.
fn smem_bytes(p: &Params) -> u32 {
    p.get("STAGES") * (4 * BK * (p.get("BM") + p.get("BN")) + 16) + 1024
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

/// A's tile is BM rows of 32 floats; B's comes in boxes of 32 rows of 32 columns.
fn a_box(p: &Params) -> TmaBox {
    TmaBox { rows: p.get("BM"), cols: BK }
}

fn b_box(_: &Params) -> TmaBox {
    TmaBox { rows: BK, cols: 32 }
}
// ANCHOR_END: geometry

// ANCHOR: check
/// Refuses a set the kernel cannot serve, in one sentence: the wgmma tile's rules, which step 12
/// keeps, then the shared memory this kernel needs.
fn check(p: &Params, _: Shape, limits: &LaunchLimits) -> Result<(), String> {
    tile_checks::wgmma_tile(p)?;
    if smem_bytes(p) > limits.max_smem_per_block {
        return Err(format!(
            "{p} keeps {} bytes of tiles and barriers in shared memory, more than the {} bytes a block may have; \
             lower STAGES, BM or BN",
            smem_bytes(p),
            limits.max_smem_per_block
        ));
    }
    Ok(())
}
// ANCHOR_END: check

pub const STEP: GpuStep = GpuStep {
    name: "step08_wgmma_tma",
    idea: "Hopper's tensor cores: wgmma per warpgroup, tiles copied by the TMA engine on an mbarrier pipeline",
    file: "step08_wgmma_tma/src/kernel.cu",
    source: include_str!("kernel.cu"),
    params: PARAMS,
    search: SEARCH,
    geometry,
    check,
    precision: Precision::Tf32Truncated,
    intensity,
    min_compute: (9, 0),
    extension: Extension::TensorMaps { a: a_box, b: b_box },
    ..GpuStep::DEFAULT
};

/// Global memory: a 32-deep tile brings 32·(BM + BN) floats for 2·BM·BN·32 FLOPs. Shared
/// memory: per 8-deep step a consumer's wgmma reads BM×8 floats of A and its threads 64×8 of
/// B, for 2·64·BM·8 FLOPs.
fn intensity(p: &Params) -> Intensity {
    let [bm, bn] = ["BM", "BN"].map(|n| f64::from(p.get(n)));
    Intensity {
        global: bm * bn / (2.0 * (bm + bn)),
        shared: Some(2.0 * 64.0 * bm * 8.0 / (4.0 * 8.0 * (bm + 64.0))),
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
                ("BK", "lib.rs's BK".to_owned(), BK),
                ("B_BOX", "b_box's rows * cols".to_owned(), b_box(params).rows * b_box(params).cols),
                ("THREADS", format!("threads() at BN = {bn}"), threads(params)),
            ]
        });
    }
}

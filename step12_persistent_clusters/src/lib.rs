//! Step 12: step 08's kernel made persistent, launched in clusters that share A's tile through
//! multicast, storing C through shared memory with the copy engine.

use std::sync::Mutex;

use anyhow::{Result, anyhow};
use cudarc::driver::{DevicePtr, PushKernelArg};

use common::gpu::{Kernel, Limits};
use common::hooks::{Hooks, KernelCall, Operands, OwnLaunch};
use common::tma::{self, TensorMap};
use common::{Extension, Geometry, GpuStep, Intensity, Param, Params, Precision, Shape, Stage, TmaBox};

// ANCHOR: params
/// Step 08's tile (BM×BN, BN/64 consumer warpgroups, STAGES tiles of A and B in flight), with
/// the order of the tiles (GROUP block-rows) now the scheduler's, and the blocks launched in
/// clusters of CLUSTER that share A's tile.
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
        help: "block-rows the scheduler walks down before moving right (1 to 64)",
    },
    Param {
        name: "CLUSTER",
        default: 2,
        help: "blocks per cluster, side by side in a block-row, sharing A's tile (1, 2 or 4)",
    },
];
// ANCHOR_END: params

/// The values the tuner tries (`--tune`).
pub const SEARCH: &[(&str, &[u32])] = &[
    ("BM", &[128, 256]),
    ("BN", &[64, 128, 192]),
    ("STAGES", &[2, 3, 4, 5, 6]),
    ("GROUP", &[1, 4, 8, 16]),
    ("CLUSTER", &[1, 2, 4]),
];

/// The depth of a tile: one 128-byte row of floats, the width of the swizzle.
const BK: u32 = 32;

/// Rows of C a consumer stores through shared memory at a time (two boxes of 32 columns).
const C_ROWS: u32 = 32;

/// A producer warpgroup and BN/64 consumers.
fn threads(p: &Params) -> u32 {
    128 * (p.get("BN") / 64 + 1)
}

/// STAGES tiles of A and B with a full and an empty barrier each, two boxes of C per consumer,
/// and 1024 bytes to align the tiles for the swizzle.
fn smem_bytes(p: &Params) -> u32 {
    p.get("STAGES") * (4 * BK * (p.get("BM") + p.get("BN")) + 16)
        + (p.get("BN") / 64) * 2 * 4 * C_ROWS * 32
        + 1024
}

// ANCHOR: launch
/// One block per tile, in whole clusters (a cluster's units are CLUSTER tiles side by side);
/// [`PersistentHooks::grid`] cuts it to the blocks the GPU holds at once.
fn launch(p: &Params, s: Shape) -> Geometry {
    let units = (s.m as u32).div_ceil(p.get("BM")) * (s.n as u32).div_ceil(p.get("BN") * p.get("CLUSTER"));
    Geometry {
        grid: (units * p.get("CLUSTER"), 1, 1),
        block: (threads(p), 1, 1),
        dynamic_smem: smem_bytes(p),
        whole_rows: None,
    }
}

/// A's tile comes in CLUSTER boxes of BM/CLUSTER rows of 32 floats, one per block of a cluster;
/// B's in boxes of 32 rows of 32 columns.
fn a_box(p: &Params) -> TmaBox {
    TmaBox { rows: p.get("BM") / p.get("CLUSTER"), cols: BK }
}

fn b_box(_: &Params) -> TmaBox {
    TmaBox { rows: BK, cols: 32 }
}

/// C goes out in boxes of C_ROWS rows of 32 floats.
fn c_box() -> TmaBox {
    TmaBox { rows: C_ROWS, cols: 32 }
}
// ANCHOR_END: launch

// ANCHOR: check
fn check(p: &Params, _: Shape, limits: &Limits) -> Result<(), String> {
    let [bm, bn, stages, group, cluster] = ["BM", "BN", "STAGES", "GROUP", "CLUSTER"].map(|n| p.get(n));
    if bm != 128 && bm != 256 {
        return Err(format!("{p}: BM is the N of the kernel's wgmma instruction, written for 128 or 256"));
    }
    if ![64, 128, 192].contains(&bn) {
        return Err(format!("{p}: BN must be 64, 128 or 192, one 64-column strip per consumer warpgroup"));
    }
    if !(2..=8).contains(&stages) {
        return Err(format!("{p}: STAGES must be 2 to 8"));
    }
    if !(1..=64).contains(&group) {
        return Err(format!("{p}: GROUP must be 1 to 64 block-rows"));
    }
    if ![1, 2, 4].contains(&cluster) {
        return Err(format!(
            "{p}: CLUSTER must be 1, 2 or 4 blocks, each loading an equal share of A's tile"
        ));
    }
    if bm == 256 && bn == 192 {
        return Err(format!(
            "{p}: three consumers of 128 accumulators each do not fit in an SM's registers beside the producer"
        ));
    }
    if smem_bytes(p) > limits.max_smem_per_block {
        return Err(format!(
            "{p} keeps {} bytes of tiles, boxes of C and barriers in shared memory, more than the {} bytes a block \
             may have; lower STAGES, BM or BN",
            smem_bytes(p),
            limits.max_smem_per_block
        ));
    }
    Ok(())
}
// ANCHOR_END: check

pub const STEP: GpuStep = GpuStep {
    name: "step12_persistent_clusters",
    idea: "persistent blocks walking a tile schedule, clusters sharing A by TMA multicast, C stored by TMA",
    file: "step12_persistent_clusters/src/kernel.cu",
    source: include_str!("kernel.cu"),
    params: PARAMS,
    search: SEARCH,
    launch,
    check,
    precision: Precision::Tf32Truncated,
    intensity,
    min_compute: (9, 0),
    extension: Extension::TensorMaps { a: a_box, b: b_box },
    stages: STAGES,
    hooks: &PersistentHooks,
    ..GpuStep::DEFAULT
};

/// The kernel's stages, each one idea short of the next (`--stage NAME`; the diffs beside them
/// show each idea).
pub const STAGES: &[Stage] = &[
    Stage {
        name: "1_persistent",
        idea: "one block per SM walks the tiles a scheduler hands it",
        file: "step12_persistent_clusters/stages/1_persistent.cu",
        source: include_str!("../stages/1_persistent.cu"),
    },
    Stage {
        name: "2_multicast",
        idea: "clusters of blocks side by side share A's tile, copied once by multicast",
        file: "step12_persistent_clusters/stages/2_multicast.cu",
        source: include_str!("../stages/2_multicast.cu"),
    },
];

/// Global memory: a 32-deep tile brings 32·(BM/CLUSTER + BN) floats to a block (its share of A,
/// its own B) for 2·BM·BN·32 FLOPs. Shared memory: as step 08.
fn intensity(p: &Params) -> Intensity {
    let [bm, bn, cluster] = ["BM", "BN", "CLUSTER"].map(|n| f64::from(p.get(n)));
    Intensity {
        global: bm * bn / (2.0 * (bm / cluster + bn)),
        shared: Some(2.0 * 64.0 * bm * 8.0 / (4.0 * 8.0 * (bm + 64.0))),
    }
}

// ANCHOR: hooks
/// Step 12's hooks: a grid of the blocks the GPU holds at once, and a launch that adds C's
/// tensor map to A's and B's.
pub struct PersistentHooks;

impl Hooks for PersistentHooks {
    /// One block per SM (or per tile, where there are fewer), in whole clusters.
    fn grid(&self, params: &Params, _: Shape, grid: (u32, u32, u32), slots: u32) -> (u32, u32, u32) {
        let cluster = params.get("CLUSTER");
        (grid.0.min(slots / cluster * cluster), 1, 1)
    }

    fn own_launch(&self, _: &Kernel) -> Result<Option<Box<dyn OwnLaunch>>> {
        Ok(Some(Box::new(StoreMap { last: Mutex::new(None) })))
    }
}

/// The launch with C's map, encoded again only when C's buffer or shape changes.
struct StoreMap {
    last: Mutex<Option<((u64, Shape), TensorMap)>>,
}

impl OwnLaunch for StoreMap {
    fn launch(&self, call: &KernelCall, (a, b, c): Operands) -> Result<()> {
        let [a_map, b_map] = call.maps((a, b), None)?;
        let Shape { m, n, .. } = call.shape;
        let (ptr, _sync) = c.device_ptr(&call.gpu.stream);
        let mut last =
            self.last.lock().map_err(|_| anyhow!("the map of C was poisoned by a failed launch"))?;
        let c_map = match *last {
            Some((key, map)) if key == (ptr, call.shape) => map,
            // Rows of C that are not 16-byte multiples cannot be mapped: the kernel stores those
            // directly and never reads the map.
            _ if n % 4 != 0 => [0; 16],
            _ => tma::encode(ptr, m, n, n, 1, c_box())?,
        };
        *last = Some(((ptr, call.shape), c_map));
        drop(_sync);
        let mut builder = call.args((a, b, c));
        builder.arg(&a_map).arg(&b_map).arg(&c_map);
        // SAFETY: the arguments match `matmul(int, int, int, const float*, const float*, float*,
        // CUtensorMap, CUtensorMap, CUtensorMap)`; the maps describe A and B (or common's padded
        // copies, which outlive the launch) and C, whose buffer holds the shape (checked by
        // common's launch).
        unsafe { builder.launch(call.cfg) }.map_err(|e| anyhow!("the kernel failed to launch: {e:?}"))?;
        Ok(())
    }
}
// ANCHOR_END: hooks

#[cfg(test)]
mod tests {
    use super::*;

    /// The host sizes the grid, the boxes and shared memory with the kernel's own tile constants
    /// and launches the threads the kernel counts on, at each width the tuner tries that the
    /// other defaults take (a number that differs stops the compile with a message naming it).
    #[test]
    #[ignore = "needs libnvrtc"]
    fn nvrtc_the_host_and_the_kernel_agree_on_the_tile() {
        let sets = common::testing::tuner_sets(&STEP, "BN", "sm_90");
        assert!(sets.len() >= 2, "{} of the tuner's widths checked", sets.len());
        for params in sets {
            let bn = params.get("BN");
            common::testing::assert_kernel_agrees(
                &STEP,
                &params,
                "sm_90",
                [
                    ("BK", "lib.rs's BK".to_owned(), BK),
                    ("A_BOX", "a_box's rows * cols".to_owned(), a_box(&params).rows * a_box(&params).cols),
                    ("C_BOX", "c_box's rows * cols".to_owned(), c_box().rows * c_box().cols),
                    ("THREADS", format!("threads() at BN = {bn}"), threads(&params)),
                ],
            );
        }
    }
}

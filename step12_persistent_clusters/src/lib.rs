//! Step 12: step 08's kernel made persistent, launched in clusters that share A's tile through
//! multicast, storing C through shared memory with the copy engine.

mod choice;
mod scaled;

use anyhow::{Result, bail};

use common::gpu::LaunchLimits;
use common::hooks::{Hooks, KernelArg, PathCase, Product, Queue, ReportLine};
use common::includes::Include;
use common::paths::Reach;
use common::tile_checks;
use common::tma::Element;
use common::{
    Extension, Geometry, GpuStep, Intensity, LaunchVariant, Param, Params, Precision, Shape, Stage, TmaBox,
};

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
    Param {
        name: "PIECE",
        default: 32,
        help: "the host's schedule: the fewest k-tiles of a piece where it cuts the last round along K (4 to 256)",
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
    ("PIECE", &[8, 16, 32]),
];

/// The depth of a tile: one 128-byte row of floats, the width of the swizzle.
pub(crate) const BK: u32 = 32;

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

// ANCHOR: geometry
/// One block per tile, in whole clusters (a cluster's units are CLUSTER tiles side by side);
/// [`PersistentHooks::grid`] makes it the blocks the GPU holds at once.
fn geometry(p: &Params, s: Shape) -> Geometry {
    let (units, _) = units(p, s);
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
// ANCHOR_END: geometry

// ANCHOR: check
/// Refuses a set the kernel cannot serve, in one sentence: the schedule's PIECE, step 08's wgmma
/// tile rules, the cluster, then the shared memory this kernel needs.
fn check(p: &Params, _: Shape, limits: &LaunchLimits) -> Result<(), String> {
    if !(4..=256).contains(&p.get("PIECE")) {
        return Err(format!("{p}: PIECE must be 4 to 256 k-tiles"));
    }
    tile_checks::wgmma_tile(p)?;
    if ![1, 2, 4].contains(&p.get("CLUSTER")) {
        return Err(format!(
            "{p}: CLUSTER must be 1, 2 or 4 blocks, each loading an equal share of A's tile"
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

/// What the kernel and the hands-on starting file include: the Hopper helpers, as stage 4 has them.
pub const INCLUDES: &[Include] = &[Include {
    name: "hopper.cuh",
    file: "step12_persistent_clusters/src/hopper.cuh",
    text: include_str!("hopper.cuh"),
}];

pub const STEP: GpuStep = GpuStep {
    name: "step12_persistent_clusters",
    idea: "persistent blocks walking a tile schedule, clusters sharing A by TMA multicast, C stored by TMA",
    file: "step12_persistent_clusters/src/kernel.cu",
    source: include_str!("kernel.cu"),
    includes: INCLUDES,
    params: PARAMS,
    search: SEARCH,
    geometry,
    check,
    precision: Precision::Tf32Truncated,
    intensity,
    min_compute: (9, 0),
    extension: Extension::TensorMaps { a: a_box, b: b_box },
    stages: STAGES,
    hooks: &PersistentHooks,
    spill_allowance: &[(CUT_ENTRY, CUT_SPILL_MOST)],
    variants: VARIANTS,
    schedule: common::Schedule::Chosen(choice::choose),
    ..GpuStep::DEFAULT
};

/// The bytes `matmul_cut` may spill (stored and loaded by spill code): at some sets (clusters of
/// one, BN = 192) ptxas keeps a few words of its bookkeeping in local memory, 108 bytes at most at
/// the documented sets; a spill of the accumulators, hundreds of bytes, is refused.
pub const CUT_SPILL_MOST: u32 = 128;

/// Measured alternatives to stage 4's schedule (`--kernel FILE`; docs/src/performance.md gives
/// what they measured): neither cuts the last round, so both are set beside the kernel where it
/// cuts nothing.
pub const VARIANTS: &[LaunchVariant] = &[
    LaunchVariant {
        file: "step12_persistent_clusters/variants/ping_pong.cu",
        idea: "ping-pong consumers: each on whole BM×64 tiles in turn, one's stores of C under the other's products",
        source: include_str!("../variants/ping_pong.cu"),
        params: CLUSTER_OF_FOUR,
        search: SEARCH,
        schedule: common::Schedule::Tiles,
        pads_rows: false,
        mark: "TILE_N",
    },
    LaunchVariant {
        file: "step12_persistent_clusters/variants/multicast_b.cu",
        idea: "B shared by multicast as well as A, in clusters of 2×2 blocks",
        source: include_str!("../variants/multicast_b.cu"),
        params: CLUSTER_OF_FOUR,
        search: &[
            ("BM", &[128, 256]),
            ("BN", &[64, 128, 192]),
            ("STAGES", &[2, 3, 4]),
            ("GROUP", &[4, 8, 16]),
        ],
        schedule: common::Schedule::Tiles,
        pads_rows: false,
        mark: "COLUMN_PEERS",
    },
];

/// The kernel's parameters with clusters of four: the variants' L2 bytes a product match stage
/// 4's with clusters of two only with four blocks to a cluster.
const CLUSTER_OF_FOUR: &[Param] =
    &[PARAMS[0], PARAMS[1], PARAMS[2], PARAMS[3], Param { default: 4, ..PARAMS[4] }, PARAMS[5]];

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
    Stage {
        name: "3_tma_store",
        idea: "C written through swizzled boxes in shared memory by the copy engine",
        file: "step12_persistent_clusters/stages/3_tma_store.cu",
        source: include_str!("../stages/3_tma_store.cu"),
    },
    Stage {
        name: "4_in_flight",
        idea: "a consumer keeps one slice's products in flight while it loads the next",
        file: "step12_persistent_clusters/stages/4_in_flight.cu",
        source: include_str!("../stages/4_in_flight.cu"),
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

// ANCHOR: schedule

/// How a launch shares `units` units of `k_tiles` k-tiles among `clusters` clusters, as the
/// kernel's `Schedule` reads it: the first `whole` units go out whole, round by round; the
/// k-tiles of the rest are dealt out in runs of `share`, one run per cluster. The last round is
/// cut only where it would leave more than a quarter of the clusters' time idle (cutting costs a
/// tile of sums written and read per piece), into runs of at least `min_piece` k-tiles (the
/// parameter PIECE) and fewer than a unit's. (A run that crosses from one unit into the next
/// makes two pieces, each shorter.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sharing {
    pub whole: u32,
    pub share: u32,
}

impl Sharing {
    pub fn new(units: u32, clusters: u32, k_tiles: u32, min_piece: u32) -> Sharing {
        let (rounds, rest) = (units / clusters, units % clusters);
        if rest == 0 || 4 * (clusters - rest) <= clusters * (rounds + 1) {
            return Sharing { whole: units, share: k_tiles };
        }
        let even = (u64::from(rest) * u64::from(k_tiles)).div_ceil(u64::from(clusters)) as u32;
        let share = even.max(min_piece);
        if share >= k_tiles {
            // Units too shallow to cut: every run would be a whole unit.
            return Sharing { whole: units, share: k_tiles };
        }
        Sharing { whole: units - rest, share }
    }

    /// Whether any unit is cut into pieces (and `matmul_cut` runs in place of `matmul`).
    pub fn cuts(&self, units: u32) -> bool {
        self.whole < units
    }
}

/// The units of a launch (CLUSTER tiles side by side) and their k-tiles.
fn units(p: &Params, s: Shape) -> (u32, u32) {
    let rows = (s.m as u32).div_ceil(p.get("BM"));
    let columns = (s.n as u32).div_ceil(p.get("BN") * p.get("CLUSTER"));
    (rows * columns, (s.k as u32).div_ceil(BK))
}
// ANCHOR_END: schedule

/// The blocks of a launch that take alike work, for a scaled emulation (`Queue::launch_matmul_alike`):
/// where no unit is cut and none is at C's edge, the first `units mod clusters` clusters take one
/// unit more than the others (cluster c's units are c, c + clusters, …; stage 1's block b takes
/// tiles b, b + blocks, …, the same blocks), and every unit is as much work. One cluster stands
/// for its kind, block 0's and block CLUSTER's both for the first (the emulator's footprint
/// reads the first two clusters), each named by its first block with the blocks it stands for.
/// None where units differ: the emulator's own kinds then decide.
fn alike(p: &Params, s: Shape, (units, clusters): (u32, u32), cuts: bool) -> Option<Vec<(u64, u64)>> {
    let cluster = u64::from(p.get("CLUSTER"));
    // A unit is BM rows by CLUSTER·BN columns of C (the variant of 2×2 blocks': 2·BM by 2·BN).
    let (bm, bn) = (p.get("BM") as usize, p.get("BN") as usize);
    let whole_units =
        s.m % bm == 0 && s.n % (bn * cluster as usize) == 0 && (cluster < 4 || s.m % (2 * bm) == 0);
    if cuts || !whole_units || clusters < 2 {
        return None;
    }
    let (clusters, more) = (u64::from(clusters), u64::from(units % clusters));
    // The clusters that take one unit more, then the others: each run's first cluster, and, for
    // the first run, its second, standing for the rest of it.
    let mut kinds = Vec::new();
    for (from, to) in [(0, more), (more, clusters)] {
        match to - from {
            0 => {}
            1 => kinds.push((from * cluster, cluster)),
            n if kinds.is_empty() => {
                kinds.push((from * cluster, cluster));
                kinds.push(((from + 1) * cluster, (n - 1) * cluster));
            }
            n => kinds.push((from * cluster, n * cluster)),
        }
    }
    Some(kinds)
}

/// The kernel's twin for a launch that cuts units into pieces (the stages have none).
pub const CUT_ENTRY: &str = "matmul_cut";

/// `--every-path`: C stored through boxes (rows of 16-byte multiples) and directly (the rest),
/// clusters of 1, 2 and 4, the last round cut along K into pieces (with either store), another
/// tile, and NaN and infinities.
pub const EVERY_PATH: &[PathCase] = &[
    PathCase {
        path: "default shape, boxed stores",
        args: &[],
        env: None,
        made: None,
        reach: Reach::Both(&Reach::BulkStores(true), &Reach::Says("schedule", "clusters of 2")),
    },
    PathCase {
        path: "odd shape, direct stores",
        args: &["-m", "67", "-n", "45", "-k", "129"],
        env: None,
        made: None,
        reach: Reach::BulkStores(false),
    },
    PathCase {
        path: "odd rows, boxed stores",
        args: &["-m", "67", "-n", "44", "-k", "129"],
        env: None,
        made: None,
        reach: Reach::BulkStores(true),
    },
    PathCase {
        path: "cut tiles, boxed stores",
        args: &["-m", "200", "-n", "300", "-k", "1024", "--param", "PIECE=4"],
        env: None,
        made: None,
        // C goes by boxes, so ordinary stores are the pieces': the cut ran (a stage has none).
        reach: Reach::Both(
            &Reach::Says("schedule", "cut along K"),
            &Reach::Both(&Reach::BulkStores(true), &Reach::GlobalStores),
        ),
    },
    PathCase {
        path: "cut tiles, direct stores",
        args: &["-m", "200", "-n", "301", "-k", "512", "--param", "PIECE=4"],
        env: None,
        made: None,
        reach: Reach::Both(&Reach::Says("schedule", "cut along K"), &Reach::BulkStores(false)),
    },
    PathCase {
        path: "no clusters",
        args: &["-m", "67", "-n", "44", "-k", "129", "--param", "CLUSTER=1"],
        env: None,
        made: None,
        reach: Reach::Says("schedule", "no clusters"),
    },
    PathCase {
        path: "clusters of 4",
        args: &["-m", "200", "-n", "300", "-k", "129", "--param", "CLUSTER=4"],
        env: None,
        made: None,
        reach: Reach::Says("schedule", "clusters of 4"),
    },
    PathCase {
        path: "a 128×64 tile",
        args: &["-m", "67", "-n", "44", "-k", "129", "--param", "BM=128", "--param", "BN=64"],
        env: None,
        made: None,
        reach: Reach::Kernel,
    },
    PathCase {
        path: "NaN and infinities",
        args: &["-m", "67", "-n", "44", "-k", "129", "--inputs", "nonfinite"],
        env: None,
        made: None,
        reach: Reach::Kernel,
    },
];

// ANCHOR: hooks
/// Step 12's hooks: a grid of the blocks the GPU holds at once, and a launch that adds C's
/// tensor map to A's and B's, the schedule's sharing, and the kernel that cuts units.
pub struct PersistentHooks;

impl Hooks for PersistentHooks {
    fn every_path(&self) -> &'static [PathCase] {
        EVERY_PATH
    }

    /// As many blocks as the GPU holds at once, in whole clusters: where there are fewer tiles
    /// than blocks, the kernel's schedule may cut the tiles' depth into pieces for all of them.
    fn grid(&self, params: &Params, _: Shape, _: (u32, u32, u32), slots: u32) -> (u32, u32, u32) {
        let cluster = params.get("CLUSTER");
        (slots / cluster * cluster, 1, 1)
    }

    /// A's, B's and C's maps, the schedule's sharing, the workspace of the pieces, and
    /// `matmul_cut` in place of `matmul` where the sharing cuts units.
    fn product(&self, q: &mut dyn Queue, product: &Product) -> Result<()> {
        let [a_map, b_map] = product.maps(q, None)?;
        let Shape { m, n, .. } = product.shape;
        let c = product.operands.2;
        // Rows of C that are not 16-byte multiples cannot be mapped: the kernel stores those
        // directly and never reads the map.
        let c_map = match n % 4 {
            0 => q.encode(Element::F32, c, [m, n, n, 1], c_box())?,
            _ => [0; 16],
        };
        let blocks = product.launch.grid.0;
        let cluster = product.params.get("CLUSTER");
        let clusters = blocks / cluster;
        if clusters == 0 {
            bail!("the GPU holds no cluster of {cluster} of these blocks at once; lower CLUSTER");
        }
        let (units, k_tiles) = units(product.params, product.shape);
        // The stages define no `matmul_cut` and never cut.
        let twin = q.has_entry(CUT_ENTRY);
        let sharing = match twin {
            true => Sharing::new(units, clusters, k_tiles, product.params.get("PIECE")),
            false => Sharing { whole: units, share: k_tiles },
        };
        let cuts = twin && sharing.cuts(units);
        // A count per tile and consumer (zero between launches: the kernel leaves it zeroed), to
        // a whole 128-byte line; then two BM×BN tiles of sums per block. The counts' region never
        // moves into old sums: one kernel has one BN and one grid (the blocks the GPU holds),
        // whatever the shape.
        let tile = (product.params.get("BM") * product.params.get("BN")) as usize;
        let (blocks, consumers) = (blocks as usize, (product.params.get("BN") / 64) as usize);
        let counts = (consumers * blocks).next_multiple_of(32);
        let floats = if cuts { counts + 2 * tile * blocks } else { 1 };
        let partial = q.workspace("the pieces' workspace", 4 * floats)?;
        let mut args = product.args();
        args.extend([
            KernelArg::Map(a_map),
            KernelArg::Map(b_map),
            KernelArg::Map(c_map),
            KernelArg::Ptr(partial),
        ]);
        args.extend([sharing.whole, sharing.share].map(|v| KernelArg::I32(v as i32)));
        // `matmul` and `matmul_cut(int, int, int, const float*, const float*, float*,
        // CUtensorMap, CUtensorMap, CUtensorMap, float*, int, int)`; a stage declares fewer.
        let entry = if cuts { CUT_ENTRY } else { common::gpu::ENTRY };
        match alike(product.params, product.shape, (units, clusters), cuts) {
            Some(kinds) => q.launch_matmul_alike(entry, product.launch, &args, &kinds),
            None => q.launch_matmul(entry, product.launch, &args),
        }
    }

    /// A scaled run's plan of the launch (`src/scaled.rs`).
    fn unequal_shares(&self, p: &Params, s: Shape, g: (u32, u32, u32)) -> Option<String> {
        scaled::unequal_shares(p, s, g)
    }

    fn k_tile(&self, _: &Params) -> Option<u32> {
        Some(BK)
    }

    fn shorter_depth(&self, p: &Params, w: Shape, d: Shape, g: (u32, u32, u32)) -> Option<String> {
        scaled::shorter_depth(p, w, d, g)
    }

    /// The clusters, and where the launch cuts the last round: how many units, in runs of how
    /// many k-tiles (a kernel that defines `matmul_cut`; the stages have none and never cut).
    fn report_line(&self, p: &Params, s: Shape, grid: (u32, u32, u32)) -> ReportLine {
        let cluster = p.get("CLUSTER");
        let clusters = grid.0 / cluster;
        let mut line = if cluster == 1 {
            format!("{clusters} persistent blocks, no clusters")
        } else {
            format!("{clusters} clusters of {cluster} persistent blocks")
        };
        let (units, k_tiles) = units(p, s);
        let sharing = Sharing::new(units, clusters.max(1), k_tiles, p.get("PIECE"));
        if clusters > 0 && sharing.cuts(units) {
            let (cut, run) = (units - sharing.whole, sharing.share);
            // A unit is a cluster's tile of C: BM rows, BN·CLUSTER columns.
            let tiles = if cut == 1 { "cluster tile" } else { "cluster tiles" };
            line += &format!(" · the last round's {cut} {tiles} of C cut along K");
            line += &format!(" into runs of {run}");
            line += &format!(" of their {k_tiles} k-tiles, one per cluster, where the kernel");
            line += &format!(" defines {CUT_ENTRY} (the stages do not)");
        }
        Some(("schedule", line))
    }
}

// ANCHOR_END: hooks

#[cfg(test)]
mod tests {
    use super::*;

    /// Whole rounds stay whole; a last round that leaves most clusters idle is cut into runs
    /// that deal out every k-tile, none longer than a unit and none shorter than the least piece
    /// where the units are that deep.
    #[test]
    fn the_last_round_is_cut_only_where_it_pays() {
        // 4096³ and 8192³ on 66 clusters of two: three rounds and 58 units, fifteen and 34.
        assert_eq!(Sharing::new(256, 66, 128, 32), Sharing { whole: 256, share: 128 });
        assert_eq!(Sharing::new(1024, 66, 256, 32), Sharing { whole: 1024, share: 256 });
        // 2048³: 64 units, one round with two clusters idle.
        assert_eq!(Sharing::new(64, 66, 64, 32), Sharing { whole: 64, share: 64 });
        // 1024×1024×4096: 16 units, 32 k-tiles for each of 64 clusters.
        assert_eq!(Sharing::new(16, 66, 128, 32), Sharing { whole: 0, share: 32 });
        // 1024×1024×2048: runs of the least piece; 1024³ is too shallow to cut.
        assert_eq!(Sharing::new(16, 66, 64, 32), Sharing { whole: 0, share: 32 });
        assert_eq!(Sharing::new(16, 66, 32, 32), Sharing { whole: 16, share: 32 });
        // A round and four units: the four are cut.
        assert_eq!(Sharing::new(70, 66, 128, 32), Sharing { whole: 66, share: 32 });
        // 1024³ with pieces of 8: each of the 16 units in four, a run of 8 per cluster.
        assert_eq!(Sharing::new(16, 66, 32, 8), Sharing { whole: 0, share: 8 });
        for units in 1..300 {
            for clusters in [1, 7, 64, 66] {
                for (k_tiles, least) in
                    [1, 2, 15, 16, 17, 128, 1000].into_iter().flat_map(|k| [(k, 8), (k, 32)])
                {
                    let s = Sharing::new(units, clusters, k_tiles, least);
                    let rest = u64::from(units - s.whole);
                    let cut = s.cuts(units);
                    assert!(s.share <= k_tiles && (!cut || s.share >= least && s.share < k_tiles), "{s:?}");
                    assert!(u64::from(s.share) * u64::from(clusters) >= rest * u64::from(k_tiles));
                    assert!(rest < u64::from(clusters) && s.whole % clusters == 0 || rest == 0);
                }
            }
        }
    }

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
                ("A_BOX", "a_box's rows * cols".to_owned(), a_box(params).rows * a_box(params).cols),
                ("C_BOX", "c_box's rows * cols".to_owned(), c_box().rows * c_box().cols),
                ("THREADS", format!("threads() at BN = {bn}"), threads(params)),
            ]
        });
    }
}

//! Step 10's own product (its hooks, `SplitHooks`): the split of K and the parameters only the
//! launch reads, SPLIT, PATH and PAD, and the sum of a split product's slices. With SPLIT=S>1 the
//! grid has S blocks in z for each tile; block z multiplies its own share of the tile's slices of K
//! into slice z of a workspace of S·M·N floats, and `sum_slices(partials, C, M·N, S)` adds the
//! slices into C in order of z (timing counts it), on 256-thread blocks, a thread per element; for
//! a C of fewer than [`FEW_ELEMENTS`] elements `sum_few(partials, C, M·N, S)` adds them in a fixed
//! order, G threads an element (G the largest power of two not over S, at most 8: the groups the
//! kernel splits the slices into). The kernel takes `whole` and the workspace after the six,
//! `matmul(M, N, K, A, B, C, int whole, float* partials)`.

use anyhow::{Result, bail};

use common::Shape;
use common::gpu::ENTRY;
use common::hooks::{Hooks, KernelArg, LaunchShape, PathCase, Product, Queue, ReportLine};
use common::params::{Param, Params};
use common::stream_k::SHARE;

/// The parameter that splits K between that many blocks per tile (1: no split). The kernel does not read it: only the launch changes.
pub const SPLIT: Param = Param {
    name: "SPLIT",
    default: 1,
    help: "blocks that split K for each tile, each into its own partial tile in a workspace, summed in order (1: no split)",
};

/// The most blocks a launch of step 10 splits K between.
pub const SPLIT_MAX: u32 = 256;

/// The parameter that chooses between the block tiles (0) and the kernels for a product with a short side (1: few rows of C, 2: few columns) or a short K (3).
/// The launch of those kernels keeps its grid (no Stream-K layout) and pads nothing.
pub const PATH: Param = Param {
    name: "PATH",
    default: 0,
    help: "0: block tiles; 1: few rows of C (at most 8), B read once down its rows; 2: few columns of C (at most 16), lanes along each row of A; 3: short K (at most 16), C written straight, 128 contiguous bytes a store",
};

/// The parameter of a launch that pads rows where the kernel also reads rows that
/// are not 16-byte multiples as they are: pad them (1, 16-byte loads after the
/// copies) or not (0, no copies, 4-byte loads on such rows).
pub const PAD: Param = Param {
    name: "PAD",
    default: 1,
    help: "1: rows that are not 16-byte multiples are copied into padded workspaces first (16-byte loads); 0: read as they are, 4 bytes at a time (no copies)",
};

/// The entry point that adds a split product's slices into C (see [`SplitHooks`]).
pub const SUM_ENTRY: &str = "sum_slices";

/// The entry point of a split step's sum for a C of fewer than [`FEW_ELEMENTS`] elements.
pub const SUM_FEW_ENTRY: &str = "sum_few";

/// Elements of C under which a split's slices are added by [`SUM_FEW_ENTRY`], up to 8 threads an
/// element, rather than one thread an element.
pub const FEW_ELEMENTS: usize = 4096;

/// Whether a parameter set runs the block tiles (no [`PATH`], or PATH=0).
pub fn on_tiles(params: &Params) -> bool {
    params.find(PATH.name).unwrap_or(0) == 0
}

// ANCHOR: split_hooks
/// Step 10's hooks: the split's workspace and sum, and the kernels off the tiles.
pub struct SplitHooks;

impl Hooks for SplitHooks {
    fn every_path(&self) -> &'static [PathCase] {
        crate::EVERY_PATH
    }

    /// The kernel with its workspace, then, where K is split, the sum of the slices.
    fn product(&self, q: &mut dyn Queue, product: &Product) -> Result<()> {
        if !product.has_layout() {
            let why = "step 10's kernel takes `whole` before its workspace";
            bail!("{why}: launch it with the plan's layout");
        }
        let shape = product.shape;
        let slices = product.launch.grid.2 as usize;
        // One float stands in for the workspace of an unsplit launch, which never reads it.
        let floats = if slices > 1 { slices * shape.m * shape.n } else { 1 };
        let partials = q.workspace("the split's workspace", 4 * floats)?;
        let mut args = product.args();
        args.push(KernelArg::Ptr(partials));
        q.launch_matmul(ENTRY, product.launch, &args)?;
        if slices > 1 {
            let (entry, blocks) = sum_launch(shape, slices);
            let c = product.operands.2;
            let count = (shape.m * shape.n) as i64;
            let args = [
                KernelArg::Ptr(partials),
                KernelArg::Ptr(c),
                KernelArg::I64(count),
                KernelArg::I32(slices as i32),
            ];
            q.launch(entry, LaunchShape::of((blocks, 1, 1), 256, 0), &args)?;
        }
        Ok(())
    }

    /// The slices of a split product.
    fn workspace_bytes(&self, params: &Params, shape: Shape) -> u64 {
        let split = params.get(SPLIT.name);
        if split <= 1 {
            return 0;
        }
        (4 * u64::from(split)).saturating_mul((shape.m * shape.n) as u64)
    }
    // ANCHOR_END: split_hooks

    fn on_tiles(&self, params: &Params) -> bool {
        on_tiles(params)
    }

    fn pads(&self, params: &Params) -> bool {
        params.find(PAD.name).unwrap_or(1) == 1
    }

    fn report_line(&self, params: &Params, _shape: Shape, grid: (u32, u32, u32)) -> ReportLine {
        if !on_tiles(params) {
            let kernel = match params.get(PATH.name) {
                1 => "few rows",
                2 => "few columns",
                _ => "short K",
            };
            return Some((
                "path",
                format!(
                    "the {kernel} kernel (PATH={}) made all of C: the block-tile kernel did not run, so this verdict says nothing of it; `--every-path` runs shapes that reach each kernel",
                    params.get(PATH.name)
                ),
            ));
        }
        (grid.2 > 1).then(|| {
            (
                "split",
                format!(
                    "K cut between {} blocks per tile, each into its own partial tile in a workspace; sum_slices (sum_few for a C of under {FEW_ELEMENTS} elements) adds the partials in a fixed order (counted in the time)",
                    grid.2
                ),
            )
        })
    }

    /// A set off the block tiles (a [`PATH`] other than 0) compiles the same kernel whatever its
    /// tile parameters: it keeps the launch's own (SPLIT, SHARE, PATH, PAD) and gives the rest
    /// their defaults, so that the search times each such kernel once.
    fn tuned_as(&self, decl: &[Param], p: Params) -> Result<Params> {
        if on_tiles(&p) {
            return Ok(p);
        }
        let launch: Vec<(String, u32)> = [SPLIT, SHARE, PATH, PAD]
            .iter()
            .filter_map(|q| p.find(q.name).map(|v| (q.name.to_owned(), v)))
            .collect();
        Params::with_overrides(decl, &launch)
    }
}

/// The kernel that adds the `slices` slices of a split product into C, and its blocks of 256
/// threads: a thread per element, and at most 4096 blocks, which go round; for a C of few
/// elements, a thread per element and group of slices: `sum_few` splits an element's slices
/// between the largest power of two of groups, at most 8, that the slices and the grid allow, so
/// a grid sized by that power leaves no block without work.
fn sum_launch(shape: Shape, slices: usize) -> (&'static str, u32) {
    let elements = shape.m * shape.n;
    let few = elements < FEW_ELEMENTS;
    let groups = if few { 1 << slices.clamp(1, 8).ilog2() } else { 1 };
    let blocks = (elements * groups).div_ceil(256).clamp(1, 4 * 1024) as u32;
    (if few { SUM_FEW_ENTRY } else { SUM_ENTRY }, blocks)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Off the tiles the tile's parameters are not read: the tuner times such a kernel once per
    /// split, whatever tile it was given.
    #[test]
    fn a_set_off_the_tiles_is_tuned_as_one_whatever_its_tile() {
        let decl = crate::PARAMS;
        let set = |bm: u32, path: u32, split: u32| {
            let given = [("BM", bm), ("PATH", path), ("SPLIT", split)].map(|(n, v)| (n.to_owned(), v));
            SplitHooks.tuned_as(decl, Params::with_overrides(decl, &given).unwrap()).unwrap()
        };
        assert_ne!(set(64, 0, 1), set(128, 0, 1), "on the tiles every tile is its own set");
        assert_eq!(set(64, 1, 4), set(128, 1, 4), "off them the tile is not read");
        assert_ne!(set(64, 1, 4), set(64, 1, 8), "the split still counts");
        assert_eq!(set(128, 2, 2).get("BM"), Params::defaults(decl).get("BM"));
    }
}

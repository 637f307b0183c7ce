//! Step 09's own product (its hooks, `ApartHooks`): A's rows and B's columns scaled by
//! powers of two before the decomposition, and the rows and columns it cannot carry sent down the
//! FP32 path, around common's launch of the kernel with its tensor maps.

use anyhow::Result;

use common::Shape;
use common::hooks::{Hooks, KernelArg, LaunchShape, PathCase, Paths, Product, Queue, ReportLine};
use common::params::{Param, Params};
use common::tma::Marks;

// ANCHOR: split_k
/// The parameter that splits each tile's K between that many blocks (the grid's z), each summing
/// its share into its own partial tile in a workspace, the last of the tile's blocks to finish
/// adding the partials in order (step 10's split of K, summed in the kernel). 0 lets the launch
/// choose.
pub const SPLIT_K: Param = Param {
    name: "SPLIT_K",
    default: 0,
    help: "blocks that share each tile's K (0: as many as the SMs left idle can take; 1: none)",
};

/// The most blocks a tile's K is split between.
pub const SPLIT_K_MAX: u32 = 16;

/// The fewest 32-deep tiles of K a block of a split takes when the launch chooses.
const LEAST_SHARE: u32 = 8;

/// The blocks that share each tile's K: SPLIT_K where given, else as many as keep every tile's
/// blocks resident at once on a device that holds `slots` (one wave), each with at least
/// LEAST_SHARE tiles of K; 1 where the tiles fill the device already.
pub fn split_k(params: &Params, k: usize, tiles: u32, slots: u32) -> u32 {
    match params.find(SPLIT_K.name).unwrap_or(1) {
        0 => {
            let k_tiles = (k as u32).div_ceil(32);
            (slots / tiles.max(1)).min(k_tiles / LEAST_SHARE).clamp(1, SPLIT_K_MAX)
        }
        forced => forced,
    }
}
// ANCHOR_END: split_k

/// The entry point of a step of two parts that marks the columns its decomposition cannot carry (see [`Apart`]).
pub const MARK_ENTRY: &str = "mark_cols";

/// Step 09's launch: a two-part step's power-of-two scaling of A's rows and B's columns, and the
/// rows and columns its decomposition cannot carry (step 09: NaN and infinities, whose two parts make ∞ − ∞, and vectors that
/// span too many binades), computed on the FP32 path ([`crate::fp32_path`]). A kernel that
/// defines `mark_cols` gets, on every launch (timed with it):
///
/// ```text
/// (marks, exponents, the columns' least entry and the tiles' arrivals zeroed: 2·(M + N) + 1 +
/// tiles ints)
/// mark_cols(const float* B, int* cols, int K, int N)
///     blocks of 256 threads, 256 columns a block and four rows at a time, P = min(⌈K/4⌉,
///     MARK_ROWS) blocks in y taking the rows in turn: each block's share of the columns'
///     largest and least magnitudes into its part of cols (P parts of 2N ints)
/// scale_cols(const int* cols, int parts, int* marks, int* exps, int N, int* col_least)
///     blocks of 256 threads, 32 columns a block (marks + M and exps + M are passed): the P
///     parts met, column j's exponent, and marks[M + j] = 1 for a column the decomposition cannot carry;
///     the least scaled entry of the columns it carries into *col_least
/// split_a(const float* A, float* parts, int M, int K, int pitch, int* marks, int* exps,
///         const int* col_least)
///     as without, A's rows scaled; exps[i] the exponent of row i, marks[i] = 1 for a row it
///     cannot carry (against the columns' least entry)
/// the FP32 path of the marked rows and columns, on a stream of its own, beside:
/// matmul(..., CUtensorMap a_map, CUtensorMap b_map, const int* exps, const int* marks,
///        float* slices, int* arrivals)
///     the exponents of A's rows, then of B's columns, which it takes back from C, and the marks,
///     whose rows and columns of C it leaves to the FP32 path; where the grid
///     has z > 1 blocks a tile (SPLIT_K), z slices of a 128×BN piece a tile, and a count a tile of
///     the blocks that have finished
/// (the product's stream then waits for the FP32 path's)
/// ```
pub struct Apart;

/// The most blocks in y of `mark_cols`, each writing its own part of the columns' ranges, which
/// `scale_cols` meets.
const MARK_ROWS: usize = 64;

/// `mark_cols`' blocks in y for a K-deep B, each writing its own part of the columns' ranges: one
/// for each four rows, up to MARK_ROWS.
pub(crate) fn mark_parts(k: usize) -> usize {
    k.div_ceil(4).min(MARK_ROWS)
}

/// The launch's zeroed ints and where each lies, in bytes from the first: the marks (M + N), the
/// exponents (M + N), the columns' least entry (one) and the tiles' arrivals (one a tile).
pub(crate) struct MarksLayout {
    pub ints: usize,
    pub exps: u64,
    pub col_least: u64,
    pub arrivals: u64,
}

impl MarksLayout {
    pub(crate) fn of(shape: Shape, tiles: usize) -> MarksLayout {
        let (m, n) = (shape.m as u64, shape.n as u64);
        let exps = 4 * (m + n);
        let col_least = exps + 4 * (m + n);
        MarksLayout { ints: 2 * shape.m + 2 * shape.n + 1 + tiles, exps, col_least, arrivals: col_least + 4 }
    }
}

/// Floats of the slices of a split K for a grid of (x, y, z) blocks of 128×BN tiles: one 128×BN
/// piece for each block where z > 1; one float, never read, stands in for them where z = 1.
pub(crate) fn slice_floats(bn: usize, (gx, gy, split): (u32, u32, u32)) -> usize {
    if split > 1 { (split * gx * gy * crate::BM) as usize * bn } else { 1 }
}

/// The shortest K whose product the split carries at FP32's accuracy. Three TF32 products err
/// by about four units of FP32's roundoff of each term whatever K is (what the split leaves out,
/// and the tensor cores' truncating adds within a 32-deep slice), while a strict FP32 product's
/// sums err by about 0.45·u·√(K/2), growing with K: on the emulator the split's ‖ΔC‖/‖C‖ stays near
/// 2.4·10⁻⁷ and passes FP32's normwise limit from K ≈ 100 on (0.69 of it at K = 128, 1.25 at
/// K = 32). Below this depth every row goes down the FP32 path, which is FP32 itself.
pub const SPLIT_FROM_K: usize = 256;

/// The entry point that turns the columns' ranges into exponents and marks.
pub const SCALE_ENTRY: &str = "scale_cols";

impl Apart {
    /// Zeroes the marks and the tiles' arrivals, queues `mark_cols` and `scale_cols`; returns
    /// where the marks and the exponents lie, for `split_a`, `matmul` and the FP32 path, and where
    /// the arrivals do.
    fn before(q: &mut dyn Queue, b: u64, shape: Shape, tiles: usize) -> Result<(Marks, u64)> {
        let (m, layout) = (shape.m as u64, MarksLayout::of(shape, tiles));
        let marks = q.zeroed("the marks and exponents", 4 * layout.ints)?;
        let (exps, col_least) = (marks + layout.exps, marks + layout.col_least);
        let arrivals = marks + layout.arrivals;
        let parts = mark_parts(shape.k);
        // The columns' ranges, which mark_cols writes whole.
        let ranges = q.workspace("the columns' ranges", 4 * 2 * shape.n * parts)?;
        let [ki, ni, pi] = [shape.k, shape.n, parts].map(|v| KernelArg::I32(v as i32));
        let mark = LaunchShape::of((shape.n.div_ceil(256) as u32, parts as u32, 1), 256, 0);
        q.launch(MARK_ENTRY, mark, &[KernelArg::Ptr(b), KernelArg::Ptr(ranges), ki, ni])?;
        let (col_marks, col_exps) = (marks + 4 * m, exps + 4 * m);
        let scaled = [
            KernelArg::Ptr(ranges),
            pi,
            KernelArg::Ptr(col_marks),
            KernelArg::Ptr(col_exps),
            ni,
            KernelArg::Ptr(col_least),
        ];
        q.launch(SCALE_ENTRY, LaunchShape::of((shape.n.div_ceil(32) as u32, 1, 1), 256, 0), &scaled)?;
        Ok((Marks { marks, exps, col_least }, arrivals))
    }
}

/// Step 09's hooks: a kernel that defines `mark_cols` launches through [`Apart`]; one that does
/// not (an edited copy without it) through common's plain launch.
pub struct ApartHooks;

impl Hooks for ApartHooks {
    // ANCHOR: product
    /// A kernel that defines `mark_cols`: the marks and exponents, A decomposed with its rows scaled,
    /// the FP32 path of the marked rows and columns beside the product, which leaves their
    /// elements of C to it. One that does not (an edited copy without it): common's plain launch.
    fn product(&self, q: &mut dyn Queue, product: &Product) -> Result<()> {
        if !q.has_entry(MARK_ENTRY) {
            return product.plain(q);
        }
        let (a, b, c) = product.operands;
        let (gx, gy, _) = product.launch.grid;
        let (marks, arrivals) = Apart::before(q, b, product.shape, (gx * gy) as usize)?;
        let [a_map, b_map] = product.maps(q, Some(marks))?;
        let floats = slice_floats(product.params.get("BN") as usize, product.launch.grid);
        let slices = q.workspace("the slices", 4 * floats)?;
        if product.shape.k < SPLIT_FROM_K {
            use crate::fp32_path::{MODULE, mark_every_row};
            mark_every_row(q, MODULE, marks.marks, product.shape)?;
        }
        q.fork()?;
        crate::fp32_path::queue(q, crate::fp32_path::MODULE, (a, b, c), marks.marks, product.shape)?;
        q.resume()?;
        let mut args = product.args();
        args.extend([KernelArg::Map(a_map), KernelArg::Map(b_map)]);
        args.extend([marks.exps, marks.marks, slices, arrivals].map(KernelArg::Ptr));
        // The product's stream waits for the FP32 path even where the product failed to launch.
        let launched = q.launch_matmul(common::gpu::ENTRY, product.launch, &args);
        launched.and(q.join())
    }
    // ANCHOR_END: product

    fn paths(&self, q: &mut dyn Queue, shape: Shape, _params: &Params) -> Result<Option<Paths>> {
        let paths = crate::fp32_path::paths(q)?;
        let why_all = (shape.k < SPLIT_FROM_K).then(|| {
            format!("K = {} is below {SPLIT_FROM_K}, where the step starts splitting; a K of {SPLIT_FROM_K} or more runs the kernel", shape.k)
        });
        Ok(paths.map(|p| Paths { own: "split in two".to_owned(), why_all, ..p }))
    }

    fn every_path(&self) -> &'static [PathCase] {
        crate::EVERY_PATH
    }

    fn workspace_bytes(&self, params: &Params, shape: Shape) -> u64 {
        // The marks, exponents, column ranges and arrivals, the FP32 path's lists, and the slices
        // of a split K: where the launch chooses, at most one wave of tiles, on a device that
        // holds up to 256 blocks at once.
        let (bm, bn) = (crate::BM as usize, params.get("BN") as usize);
        let tiles = shape.m.div_ceil(bm) * shape.n.div_ceil(bn);
        let tile = bm * bn;
        let slices = match params.get(SPLIT_K.name) {
            0 => match (256 / tiles.max(1)).min(SPLIT_K_MAX as usize) {
                0 | 1 => 0,
                most => most * tiles * tile,
            },
            s => s as usize * tiles * tile,
        };
        let ranges = 2 * shape.n * mark_parts(shape.k);
        4 * (2 * shape.m + 2 * shape.n + 1 + ranges + tiles + slices) as u64
            + crate::fp32_path::workspace_bytes(shape)
    }

    fn grid(&self, params: &Params, shape: Shape, grid: (u32, u32, u32), slots: u32) -> (u32, u32, u32) {
        (grid.0, grid.1, split_k(params, shape.k, grid.0 * grid.1, slots))
    }

    fn report_line(&self, _params: &Params, _shape: Shape, grid: (u32, u32, u32)) -> ReportLine {
        (grid.2 > 1).then(|| {
            (
                "split K",
                format!(
                    "{} blocks share each tile's K, each summing its share into its own slice; the last to finish adds the {} slices in order (SPLIT_K)",
                    grid.2, grid.2
                ),
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The launch splits K only where the tiles leave slots idle and each block keeps at least
    /// LEAST_SHARE tiles of K, and takes SPLIT_K as given.
    #[test]
    fn the_split_fills_the_idle_slots() {
        let auto = Params::defaults(crate::PARAMS);
        assert_eq!(split_k(&auto, 1024, 64, 132), 2);
        assert_eq!(split_k(&auto, 4096, 32, 132), 4);
        assert_eq!(split_k(&auto, 4096, 256, 132), 1);
        assert_eq!(split_k(&auto, 4096, 100, 132), 1);
        assert_eq!(split_k(&auto, 128, 1, 132), 1);
        assert_eq!(split_k(&auto, 1 << 20, 1, 132), SPLIT_K_MAX);
        let forced = Params::with_overrides(crate::PARAMS, &[("SPLIT_K".to_owned(), 3)]).unwrap();
        assert_eq!(split_k(&forced, 64, 256, 132), 3);
    }
}

//! Step 09's own product (its hooks, `ApartHooks`): A's rows and B's columns scaled by
//! powers of two before the split, and the rows and columns the split cannot carry sent down the
//! FP32 path, around common's launch of the kernel with its tensor maps.

use std::sync::Mutex;

use anyhow::{Result, anyhow};
use cudarc::driver::{CudaFunction, CudaSlice, LaunchConfig, PushKernelArg};

use crate::fp32_path::Fp32Path;
use common::Shape;
use common::gpu::{Gpu, Kernel};
use common::hooks::{
    EmulatedCall, EmulatedOperands, Hooks, KernelCall, Operands, OwnProduct, Paths, ReportLine,
};
use common::params::{Param, Params};
use common::tma::Marks;

// ANCHOR: split_k
/// The parameter that splits each tile's K between that many blocks (the grid's z), each summing
/// its share into its own slice of a workspace, the last of the tile's blocks to finish adding the
/// slices in order (step 10's split of K, summed in the kernel). 0 lets the launch choose.
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

/// The entry point of a split step that marks the columns its split cannot carry (see [`Apart`]).
pub const MARK_ENTRY: &str = "mark_cols";

/// A split step's power-of-two scaling of A's rows and B's columns, and the rows and columns its
/// split cannot carry (step 09: NaN and infinities, whose two parts make ∞ − ∞, and vectors that
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
///     parts met, column j's exponent, and marks[M + j] = 1 for a column the split cannot carry;
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
pub struct Apart {
    mark: CudaFunction,
    scale: CudaFunction,
    marks: Mutex<Option<CudaSlice<i32>>>,
    /// The columns' ranges, a part for each block of `mark_cols` in y (written whole by it).
    ranges: Mutex<Option<CudaSlice<i32>>>,
    /// The slices of a split K.
    slices: Mutex<Option<CudaSlice<f32>>>,
    fp32: Fp32Path,
}

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
pub(crate) struct Layout {
    pub ints: usize,
    pub exps: u64,
    pub col_least: u64,
    pub arrivals: u64,
}

impl Layout {
    pub(crate) fn of(shape: Shape, tiles: usize) -> Layout {
        let (m, n) = (shape.m as u64, shape.n as u64);
        let exps = 4 * (m + n);
        let col_least = exps + 4 * (m + n);
        Layout { ints: 2 * shape.m + 2 * shape.n + 1 + tiles, exps, col_least, arrivals: col_least + 4 }
    }
}

/// Floats of the slices of a split K for a grid of (x, y, z) blocks of 128×BN tiles: one 128×BN
/// piece for each block where z > 1; one float, never read, stands in for them where z = 1.
pub(crate) fn slice_floats(bn: usize, (gx, gy, split): (u32, u32, u32)) -> usize {
    if split > 1 { (split * gx * gy * crate::BM) as usize * bn } else { 1 }
}

/// The entry point that turns the columns' ranges into exponents and marks.
pub const SCALE_ENTRY: &str = "scale_cols";

impl Apart {
    /// The kernel's `mark_cols` and `scale_cols`, where it defines them.
    fn find(kernel: &Kernel) -> Result<Option<Apart>> {
        if !kernel.has_entry(MARK_ENTRY) {
            return Ok(None);
        }
        Ok(Some(Apart {
            mark: kernel.entry(MARK_ENTRY)?,
            scale: kernel.entry(SCALE_ENTRY)?,
            marks: Mutex::default(),
            ranges: Mutex::default(),
            slices: Mutex::default(),
            fp32: Fp32Path::default(),
        }))
    }

    /// Zeroes the marks and the tiles' arrivals, queues `mark_cols` and `scale_cols`; returns
    /// where the marks and the exponents lie, for `split_a`, `matmul` and the FP32 path, and where
    /// the arrivals do.
    fn before(&self, gpu: &Gpu, b: &CudaSlice<f32>, shape: Shape, tiles: usize) -> Result<(Marks, u64)> {
        let mut slot = self.marks.lock().map_err(|_| anyhow!("the marks' lock was poisoned"))?;
        let (m, layout) = (shape.m as u64, Layout::of(shape, tiles));
        let marks = common::pad::zeroed(gpu, &mut slot, layout.ints)?;
        let (exps, col_least) = (marks + layout.exps, marks + layout.col_least);
        let arrivals = marks + layout.arrivals;
        let parts = mark_parts(shape.k);
        let mut ranges = self.ranges.lock().map_err(|_| anyhow!("the ranges' lock was poisoned"))?;
        let cols = common::pad::workspace(gpu, &mut ranges, 2 * shape.n * parts)?;
        let [k, ni, pi] = [shape.k, shape.n, parts].map(|v| v as i32);
        let failed = |entry: &'static str| move |e| anyhow!("the kernel's {entry} failed to launch: {e:?}");
        let mut builder = gpu.stream.launch_builder(&self.mark);
        builder.arg(b).arg(&mut *cols).arg(&k).arg(&ni);
        let cfg = LaunchConfig {
            grid_dim: (shape.n.div_ceil(256) as u32, parts as u32, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: the arguments match `mark_cols(const float*, int*, int, int)`; B holds K·N
        // floats (the caller's shape check) and the column ranges a part of 2·N ints for each of
        // the grid's blocks in y.
        unsafe { builder.launch(cfg) }.map_err(failed(MARK_ENTRY))?;
        let (col_marks, col_exps) = (marks + 4 * m, exps + 4 * m);
        let mut builder = gpu.stream.launch_builder(&self.scale);
        builder.arg(&*cols).arg(&pi).arg(&col_marks).arg(&col_exps).arg(&ni).arg(&col_least);
        let cfg = LaunchConfig {
            grid_dim: (shape.n.div_ceil(32) as u32, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: the arguments match `scale_cols(const int*, int, int*, int*, int, int*)`; the
        // column ranges hold `parts` parts of 2·N ints, the marks and exponents past M hold N
        // each, and col_least is one int.
        unsafe { builder.launch(cfg) }.map_err(failed(SCALE_ENTRY))?;
        Ok((Marks { marks, exps, col_least }, arrivals))
    }
}

/// Step 09's hooks: a kernel that defines `mark_cols` launches through [`Apart`]; one that does
/// not (an edited copy without it) through common's plain launch.
pub struct ApartHooks;

impl Hooks for ApartHooks {
    /// The same kernels on the emulator, one after another ([`crate::emulate`]).
    fn emulate(&self, call: &mut EmulatedCall, operands: EmulatedOperands) -> Result<()> {
        crate::emulate::emulate(call, operands)
    }

    fn own_product(&self, kernel: &Kernel) -> Result<Option<Box<dyn OwnProduct>>> {
        Ok(Apart::find(kernel)?.map(|apart| Box::new(apart) as Box<dyn OwnProduct>))
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

impl OwnProduct for Apart {
    fn enqueue(&self, call: &KernelCall, (a, b, c): Operands) -> Result<()> {
        let (gx, gy, _) = call.cfg.grid_dim;
        let (marks, arrivals) = self.before(call.gpu, b, call.shape, (gx * gy) as usize)?;
        let [a_map, b_map] = call.maps((a, b), Some(marks))?;
        let mut slot = self.slices.lock().map_err(|_| anyhow!("the slices' lock was poisoned"))?;
        let need = slice_floats(call.params.get("BN") as usize, call.cfg.grid_dim);
        let slices = common::pad::workspace(call.gpu, &mut slot, need)?;
        // The FP32 path of the marked rows and columns, beside the product, which leaves their
        // elements of C to it.
        self.fp32.fork(call.gpu, (a, b, &mut *c), marks.marks, call.shape)?;
        let mut builder = call.args((a, b, &mut *c));
        builder.arg(&a_map).arg(&b_map).arg(&marks.exps).arg(&marks.marks);
        builder.arg(&mut *slices).arg(&arrivals);
        // SAFETY: the arguments match `matmul(int, int, int, const float*, const float*, float*,
        // CUtensorMap, CUtensorMap, const int* exps, const int* marks, float* slices, int*
        // arrivals)`: the maps are of buffers that outlive the launch (A's parts, and B or its
        // padded copy; workspaces are freed only when a later launch needs larger ones, after this
        // one in stream order), the exponents and marks are the M + N ints each `before` made and
        // the arrivals its gx·gy zeroed ints, the slices hold z·gx·gy pieces of 128×BN floats
        // where z > 1, and A, B and C hold the shape (checked by common's launch).
        let launched = unsafe { builder.launch(call.cfg) }
            .map(|_| ())
            .map_err(|e| anyhow!("the kernel failed to launch: {e:?}"));
        // The launch's stream waits for the FP32 path even where the product failed to launch.
        let joined = self.fp32.join(call.gpu);
        launched.and(joined)
    }

    fn time_paths_next(&self, gpu: &Gpu) -> Result<bool> {
        self.fp32.time_next(gpu).map(|()| true)
    }

    fn paths(&self, gpu: &Gpu) -> Result<Option<Paths>> {
        Ok(self.fp32.paths(gpu)?.map(|p| Paths { own: "split in two".to_owned(), ..p }))
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

//! The FP32 path of steps 09 and 11 (`fp32_path.cu`), kept here and used by step 11 too: the
//! rows of A and columns of B a step's own arithmetic cannot carry, which the step marks, multiplied in FP32 by a tiled kernel (step
//! 06's, its loads and stores taken through lists). Queued on every launch (timing counts it) by
//! [`queue`], which the step's launch calls between the queue's `fork` and `join` once the marks
//! are made: on a GPU it runs beside the product on a second stream, since the product leaves the
//! marked rows and columns of C alone; the emulator runs it first.
//!
//! ```text
//! mark_every_row(int* marks, int M)
//!     queued by a step before the path where its own arithmetic cannot reach FP32's accuracy
//!     (step 09 at short K): every row of A marked, so that all of C is the path's
//! (counts zeroed: 3 ints, then a count of finished pieces for each of WORK tiles)
//! list_paths(const int* marks, int* lists, int* counts, int M, int N)
//!     marks: M + N ints, not zero for a row of A (i) or column of B (M + j) on the FP32 path;
//!     lists: the marked rows, the unmarked rows, the marked columns (2M + N ints); counts: their
//!     lengths
//! fp32_rows(const float* A, const float* B, float* C, const int* lists, int* counts,
//!           float* part, int M, int N, int K)
//!     C's marked rows, every column; 512 threads and 48 KiB of dynamic shared memory a block, a
//!     block for each 128×256 tile of C; blocks past the marked rows leave at once, and all of
//!     them where 16 rows or fewer are marked, or where their tiles are too few to fill WORK
//!     blocks and K is at least 512 (their K is split)
//! fp32_rows_split(...)
//!     the same arguments, 16 blocks for every tile of C up to WORK: where fp32_rows leaves for
//!     want of tiles (at most WORK / 2 of them, K at least 512), up to 16 blocks a tile split K,
//!     their sums in `part` (a piece a block), the last block of a tile adding them in order
//! fp32_rows_few(...)
//!     the same arguments, 256 threads a block, as many blocks as fp32_rows_split or one for each
//!     256 columns, whichever is more: where 1 to 16 rows are marked (fp32_rows and
//!     fp32_rows_split leave), a thread a column of C and a sum a row, K split as above
//! fp32_cols(...), fp32_cols_split(...), fp32_cols_few(...)
//!     the same: C's unmarked rows in the marked columns; the few-columns kernel, where 1 to 16
//!     columns are marked, takes 128 rows a block, a thread a row and eight columns
//! ```
//!
//! The host never waits for the counts; [`paths`] reads them after a product, for the report.

use anyhow::Result;

use common::hooks::{CudaSource, KernelArg, LaunchShape, Paths, Queue};
use common::matrix::Shape;

/// The kernels' source.
pub const SOURCE: &str = include_str!("fp32_path.cu");
pub const FILE: &str = "step09_3xtf32/src/fp32_path.cu";
pub const LIST_ENTRY: &str = "list_paths";
pub const MARK_EVERY_ROW_ENTRY: &str = "mark_every_row";
pub const ROWS_ENTRY: &str = "fp32_rows";
pub const COLS_ENTRY: &str = "fp32_cols";
pub const ROWS_SPLIT_ENTRY: &str = "fp32_rows_split";
pub const COLS_SPLIT_ENTRY: &str = "fp32_cols_split";
pub const ROWS_FEW_ENTRY: &str = "fp32_rows_few";
pub const COLS_FEW_ENTRY: &str = "fp32_cols_few";

/// The tiled kernel's block tile, threads and shared memory (two buffers of 16-deep slices of A
/// and B), the most blocks that split K (WORK in the kernel), and the most pieces a tile's K is
/// split into (SPLITS).
const BM: usize = 128;
const BN: usize = 256;
const WORK: usize = 256;
const SPLITS: usize = 16;
/// The few-rows kernel's block: a thread a column of C (FEW_COLS in the kernel); the
/// few-columns kernel's rows a block (FEW_ROWS), of as many threads.
const FEW_COLS: usize = 256;
const FEW_ROWS: usize = 128;
const THREADS: u32 = 512;
const SMEM: u32 = 2 * 4 * 16 * (128 + 256);

/// Blocks of the split kernels: SPLITS for every tile of C, up to WORK.
fn split_blocks(shape: Shape) -> usize {
    (shape.n.div_ceil(BN) * shape.m.div_ceil(BM) * SPLITS).clamp(1, WORK)
}

/// Floats of the pieces of split tiles: one for each block of the split kernels.
pub fn part_len(shape: Shape) -> usize {
    split_blocks(shape) * BM * BN
}

/// Ints of the counts: the three lists' lengths, then a count of finished pieces for each of
/// WORK tiles.
pub const COUNTS: usize = 3 + WORK;

/// Ints of the lists: the marked rows, the unmarked rows, the marked columns.
pub fn lists_len(shape: Shape) -> usize {
    2 * shape.m + shape.n
}

/// The product kernels, in the order every launch queues them after `list_paths`.
pub const PRODUCTS: [&str; 6] =
    [ROWS_ENTRY, ROWS_SPLIT_ENTRY, ROWS_FEW_ENTRY, COLS_ENTRY, COLS_SPLIT_ENTRY, COLS_FEW_ENTRY];

/// `list_paths`'s blocks of 256 threads for `shape`: a thread for each row and column, up to
/// 1024 blocks, which go round.
pub fn list_blocks(shape: Shape) -> u32 {
    (shape.m + shape.n).div_ceil(256).clamp(1, 1024) as u32
}

/// The grid, the threads a block and the dynamic shared memory of product kernel `entry` for
/// `shape`, as a GPU and the emulator launch it. A block a tile of C; the split kernels, SPLITS a
/// tile up to WORK (they leave at once on most products). The few-rows kernel, a block for each
/// strip of columns and each piece of its K: enough for as many strips as the split kernels have
/// blocks, and at least one a strip; the few-columns kernel likewise for its bands of rows.
pub fn product_geometry(entry: &str, shape: Shape) -> ((u32, u32, u32), u32, u32) {
    let Shape { m, n, .. } = shape;
    match entry {
        ROWS_FEW_ENTRY => ((split_blocks(shape).max(n.div_ceil(FEW_COLS)) as u32, 1, 1), FEW_COLS as u32, 0),
        COLS_FEW_ENTRY => ((split_blocks(shape).max(m.div_ceil(FEW_ROWS)) as u32, 1, 1), FEW_COLS as u32, 0),
        ROWS_SPLIT_ENTRY | COLS_SPLIT_ENTRY => ((split_blocks(shape) as u32, 1, 1), THREADS, SMEM),
        _ => ((n.div_ceil(BN) as u32, m.div_ceil(BM) as u32, 1), THREADS, SMEM),
    }
}

/// Device bytes of the FP32 path's workspaces for a product of `shape`: the lists, the counts and
/// the pieces of split tiles.
pub fn workspace_bytes(shape: Shape) -> u64 {
    4 * (lists_len(shape) + COUNTS + part_len(shape)) as u64
}

/// The FP32 path's module, loaded beside the step's on its first product.
pub const MODULE: CudaSource = CudaSource { source: SOURCE, file: FILE };

/// The path's workspaces, kept from product to product.
const COUNTS_AT: &str = "the FP32 path's counts";
const PART_AT: &str = "the FP32 path's pieces";
const LISTS_AT: &str = "the FP32 path's lists";

// ANCHOR: queue
/// Queues the FP32 path of one product of `shape` on A, B and C: the rows of A and columns of B
/// that `marks` marks (M + N ints), listed by `list_paths` and computed in FP32 into C by the six
/// product kernels, between the queue's `time_from` and `time_to` (the part a run may time
/// apart). `module` is [`MODULE`] (a test plants faults in a copy).
pub fn queue(
    q: &mut dyn Queue,
    module: CudaSource,
    (a, b, c): (u64, u64, u64),
    marks: u64,
    shape: Shape,
) -> Result<()> {
    q.load(module)?;
    let counts = q.zeroed(COUNTS_AT, 4 * COUNTS)?;
    let part = q.workspace(PART_AT, 4 * part_len(shape))?;
    let lists = q.workspace(LISTS_AT, 4 * lists_len(shape))?;
    let [m, n, k] = [shape.m, shape.n, shape.k].map(|v| KernelArg::I32(v as i32));
    q.time_from()?;
    let list = [KernelArg::Ptr(marks), KernelArg::Ptr(lists), KernelArg::Ptr(counts), m, n];
    q.launch(LIST_ENTRY, LaunchShape::of((list_blocks(shape), 1, 1), 256, 0), &list)?;
    let args: Vec<KernelArg> =
        [a, b, c, lists, counts, part].map(KernelArg::Ptr).into_iter().chain([m, n, k]).collect();
    for entry in PRODUCTS {
        let (grid, threads, smem) = product_geometry(entry, shape);
        q.launch(entry, LaunchShape::of(grid, threads, smem), &args)?;
    }
    q.time_to()
}
// ANCHOR_END: queue

/// Marks every row of A (`marks`, M + N ints) for the FP32 path: all of C is then the path's.
pub fn mark_every_row(q: &mut dyn Queue, module: CudaSource, marks: u64, shape: Shape) -> Result<()> {
    q.load(module)?;
    let blocks = shape.m.div_ceil(256).clamp(1, 1024) as u32;
    let args = [KernelArg::Ptr(marks), KernelArg::I32(shape.m as i32)];
    q.launch(MARK_EVERY_ROW_ENTRY, LaunchShape::of((blocks, 1, 1), 256, 0), &args)
}

/// How many rows and columns the last product sent down the path, read from its counts after it
/// has finished (None before any product took the path).
pub fn paths(q: &mut dyn Queue) -> Result<Option<Paths>> {
    let Some(counts) = q.read_i32(COUNTS_AT, 0, 3)? else { return Ok(None) };
    Ok(Some(Paths::new(counts[0].max(0) as usize, counts[2].max(0) as usize, None)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The FP32 path compiles for the architectures of steps 09 and 11 without spilling, with the
    /// block tile the host launches (512 threads), and its three entry points.
    #[test]
    #[ignore = "needs NVRTC"]
    fn nvrtc_the_fp32_path_compiles_without_spills() {
        for arch in ["sm_90a", "sm_90"] {
            let c = common::gpu::compile(SOURCE, FILE, arch, &[]).unwrap();
            for entry in [
                LIST_ENTRY,
                MARK_EVERY_ROW_ENTRY,
                ROWS_ENTRY,
                COLS_ENTRY,
                ROWS_SPLIT_ENTRY,
                COLS_SPLIT_ENTRY,
                ROWS_FEW_ENTRY,
                COLS_FEW_ENTRY,
            ] {
                assert!(c.has_function(entry), "{arch}: no {entry}");
                let ptxas = common::gpu::PtxasInfo::parse_entry(&c.log, entry).expect("ptxas's report");
                assert_eq!(ptxas.spill_bytes(), 0, "{arch}: {entry} spills");
            }
        }
        assert_eq!(THREADS, (BM / 128 * (BN / 16) * 32) as u32);
        assert_eq!(SMEM, 49_152);
    }
}

#[cfg(test)]
mod gpu_tests {
    use super::*;

    /// Runs the FP32 path of `path` on an m×n×k product whose every `every`-th row and column
    /// (from every/2) is marked: the marked rows and columns of C must hold FP32's answer (within
    /// FP32's bound), every other element be left as it was (NaN), and the counts be the marks'.
    use common::gpu::Gpu;
    use common::gpu_queue::{GpuQueue, GpuState};
    use cudarc::driver::DevicePtr;

    fn check(
        module: CudaSource,
        gpu: &Gpu,
        (m, n, k, every): (usize, usize, usize, usize),
    ) -> Result<(), String> {
        let value = |i: usize, salt: usize| (((i * 7919 + salt) % 1009) as f32 - 504.0) / 256.0;
        let a: Vec<f32> = (0..m * k).map(|i| value(i, 1)).collect();
        let b: Vec<f32> = (0..k * n).map(|i| value(i, 2)).collect();
        let marks: Vec<i32> = (0..m + n).map(|v| i32::from(v % every == every / 2)).collect();
        let s = &gpu.stream;
        let (da, db) = (s.clone_htod(&a).unwrap(), s.clone_htod(&b).unwrap());
        let dc = s.clone_htod(&vec![f32::NAN; m * n]).unwrap();
        let dm = s.clone_htod(&marks).unwrap();
        let operands = (da.device_ptr(s).0, db.device_ptr(s).0, dc.device_ptr(s).0);
        let mut state = GpuState::default();
        let mut q = GpuQueue::bare(gpu, &mut state);
        queue(&mut q, module, operands, dm.device_ptr(s).0, Shape::new(m, n, k).unwrap()).unwrap();
        let p = paths(&mut q).unwrap().unwrap();
        let c = s.clone_dtoh(&dc).unwrap();
        let marked = |v: usize| marks[v] != 0;
        let counts = ((0..m).filter(|&i| marked(i)).count(), (0..n).filter(|&j| marked(m + j)).count());
        if (p.rows, p.cols) != counts {
            return Err(format!("{m}×{n}×{k}: counts {:?}, want {counts:?}", (p.rows, p.cols)));
        }
        let gamma = k as f64 * 2f64.powi(-24);
        for i in 0..m {
            for j in 0..n {
                let got = c[i * n + j];
                if !(marked(i) || marked(m + j)) {
                    if !got.is_nan() {
                        return Err(format!("({i}, {j}) of {m}×{n}×{k} was written"));
                    }
                    continue;
                }
                let (mut exact, mut mass) = (0.0f64, 0.0f64);
                for p in 0..k {
                    let t = f64::from(a[i * k + p]) * f64::from(b[p * n + j]);
                    exact += t;
                    mass += t.abs();
                }
                let within = (f64::from(got) - exact).abs() <= gamma * mass + 1e-30;
                if !within {
                    return Err(format!("({i}, {j}) of {m}×{n}×{k}: {got} against {exact}"));
                }
            }
        }
        Ok(())
    }

    /// Shapes with edges in every direction and a single element, and one whose few marked rows
    /// make two tiles, so that each tile's K is split four ways (129×257×1030), a deep one whose
    /// three tiles each split K sixteen ways (300×520×8192, a row and a column in 50 marked), and
    /// one whose marked rows fill whole tiles that split K (2048×512×2048, one in 8 marked), so
    /// that the loads without checks run in pieces of K.
    const SHAPES: [(usize, usize, usize, usize); 6] = [
        (300, 520, 77, 7),
        (1, 1, 1, 1),
        (129, 257, 1030, 5),
        (200, 300, 64, 1),
        (300, 520, 8192, 50),
        (2048, 512, 2048, 8),
    ];

    #[test]
    #[ignore = "needs an NVIDIA GPU"]
    fn gpu_the_fp32_path_writes_the_marked_rows_and_columns_alone() {
        let gpu = common::gpu::open("fp32_path", 0).unwrap();
        for shape in SHAPES {
            check(MODULE, &gpu, shape).unwrap();
        }
    }

    /// Faults planted in the split of K fail on the shapes that split it: the last piece left out
    /// of the sum, and every piece taken from the start of K, in the tiled kernels (on shapes
    /// whose marked rows make whole tiles) and in the few-rows and few-columns kernels (six rows
    /// and ten columns marked).
    #[test]
    #[ignore = "needs an NVIDIA GPU"]
    fn gpu_faults_in_the_split_of_k_are_caught() {
        let gpu = common::gpu::open("fp32_path", 0).unwrap();
        let (tiled, few) = (&[SHAPES[2], SHAPES[5]][..], &[SHAPES[4]][..]);
        let faults = [
            (
                "the last piece left out",
                "for (int p = 1; p < S; ++p)",
                "for (int p = 1; p < S - 1; ++p)",
                tiled,
            ),
            (
                "every piece from the start of K",
                "k_begin = b % S * depth, k_end",
                "k_begin = 0, k_end",
                tiled,
            ),
            (
                "a few rows' last piece left out",
                "for (int q = 1; q < S; ++q)",
                "for (int q = 1; q < S - 1; ++q)",
                few,
            ),
            ("a few rows' pieces from the start", "int k_begin = (b % S) * depth;", "int k_begin = 0;", few),
            ("a few columns' last piece left out", "piece = 1; piece < S;", "piece = 1; piece < S - 1;", few),
            (
                "a few columns' pieces from the start",
                "int k_first = (b % S) * depth;",
                "int k_first = 0;",
                few,
            ),
        ];
        for (what, find, replace, shapes) in faults {
            assert_eq!(SOURCE.matches(find).count(), 1, "{what}: {find:?}");
            let edited = SOURCE.replace(find, replace);
            for &shape in shapes {
                let outcome = check(CudaSource { source: &edited, file: FILE }, &gpu, shape);
                println!("{what}, {shape:?}: {outcome:?}");
                assert!(outcome.is_err(), "{what} passed on {shape:?}");
            }
        }
    }
}

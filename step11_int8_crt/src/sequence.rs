//! Step 11's launch written as data: the workspaces one product needs and the kernels it
//! queues, in order, with their grids and arguments ([`sequence`]), and [`play`], which queues
//! the list on either device. The kernels and their arguments are described in
//! [`crate::residues`]'s module docs.

use anyhow::Result;

use common::Shape;
use common::hooks::{KernelArg, LaunchShape, Product, Queue};
use common::tma::{Element, TmaBox};

use crate::residues::{
    BOUND_COLS, BOUND_DEPTH, BOUND_ENTRY, BOUND_ROWS, BOUND_SMEM, CHOOSE_ENTRY, COLS_ENTRY,
    MAGNITUDE_COLS_ENTRY, MAGNITUDE_ROWS_ENTRY, MARKS_ENTRY, MOST, NORM_CHUNK, NORMS_ENTRY, REBUILD_COLS,
    RECONSTRUCT_ENTRY, RECONSTRUCT_WIDE_ENTRY, RESCALE_COLS_ENTRY, RESCALE_ROWS_ENTRY, ROWS_ENTRY,
    SCALE_TILE, bf16_pitch, pitch, stats_len,
};

/// Device bytes a product of `shape` needs besides A, B and C, whatever the first pass's count:
/// every workspace of the sequence ([`Work`]: the residues of A, of Bᵀ and of C for all
/// [`MOST`] moduli the data may call for, the bound's magnitudes, the exponents, norms,
/// statistics and marks), and the FP32 path's lists.
pub fn workspace_bytes(shape: Shape) -> u64 {
    Work::ALL
        .iter()
        .fold(0u64, |sum, w| sum.saturating_add(w.bytes(shape, true)))
        .saturating_add(step09_3xtf32::fp32_path::workspace_bytes(shape))
}

/// Blocks of the second pass's scaling kernels: they return at once where the first pass's moduli
/// do, and where they do not, enough blocks that the last wave is a small part of the work.
const RESCALE_BLOCKS: usize = 2048;
/// Blocks of the wide rebuild, which return at once where the first pass's moduli do.
const WIDE_BLOCKS: usize = 1024;

/// The workspaces of one product, kept from launch to launch on a GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Work {
    /// A's residues: MOST planes of M rows of `pitch(K)` bytes.
    ARes,
    /// Bᵀ's residues: MOST planes of N rows of `pitch(K)` bytes.
    BRes,
    /// C's residues: MOST planes of M rows of `pitch(N)` bytes (a byte where the kernel rebuilds
    /// C itself).
    CRes,
    /// The exponents of A's rows, then of B's columns (ints).
    Exps,
    /// B's partial norms: three planes of K/NORM_CHUNK × N doubles.
    Part,
    /// Each vector's Σx² (doubles).
    Squares,
    /// Each vector's Σ|x| (doubles).
    L1,
    /// Each vector's two scaled norms (float2).
    ScaledL1,
    /// The bf16 magnitudes of A's rows and of B's columns, rows of `bf16_pitch(K)` entries.
    MagA,
    MagB,
    /// The statistics ([`stats_len`] ints), zeroed before every product.
    Stats,
    /// One mark per row of A and column of B (ints).
    Marks,
    /// The equilibration's magnitudes along K: four ints per k (A's column, B's row), left at
    /// zero by the kernel for the next launch.
    Range,
    /// The equilibration's shift of each k (ints).
    Shift,
    /// What it did: the most negative shift (as −s), the largest, how many are not 0; the sum
    /// and count of the half-differences whose mean is taken out; the blocks that arrived (left
    /// at zero); two ints of room.
    Summary,
}

impl Work {
    pub const ALL: [Work; 15] = [
        Work::ARes,
        Work::BRes,
        Work::CRes,
        Work::Exps,
        Work::Part,
        Work::Squares,
        Work::L1,
        Work::ScaledL1,
        Work::MagA,
        Work::MagB,
        Work::Stats,
        Work::Marks,
        Work::Range,
        Work::Shift,
        Work::Summary,
    ];

    /// Bytes the workspace holds for `shape` (one at least; saturated, for the budget of shapes
    /// too large to hold); `rebuilds` whether the kernel leaves C's residues to the rebuild
    /// kernels.
    pub fn bytes(self, shape: Shape, rebuilds: bool) -> u64 {
        let Shape { m, n, k } = shape;
        let (kp, np, kb) = (pitch(k) as u64, pitch(n) as u64, bf16_pitch(k) as u64);
        let [m, n, k, most] = [m, n, k, MOST].map(|x| x as u64);
        let v = m + n;
        let planes = |rows: u64, row_bytes: u64| most.saturating_mul(rows).saturating_mul(row_bytes);
        let bytes = match self {
            Work::ARes => planes(m, kp),
            Work::BRes => planes(n, kp),
            Work::CRes if rebuilds => planes(m, np),
            Work::CRes => 1,
            Work::Exps | Work::Marks => 4 * v,
            Work::Part => (8 * 3 * k.div_ceil(NORM_CHUNK as u64)).saturating_mul(n),
            Work::Squares | Work::L1 | Work::ScaledL1 => 8 * v,
            Work::MagA => (2 * m).saturating_mul(kb),
            Work::MagB => (2 * n).saturating_mul(kb),
            Work::Stats => 4 * stats_len(shape) as u64,
            Work::Range => 16 * k,
            Work::Shift => 4 * k,
            Work::Summary => 32,
        };
        bytes.max(1)
    }

    /// Whether the workspace is zeroed before every product (the statistics, which the kernels
    /// add into); the others are written before they are read, or (the equilibration's ranges
    /// and count) left at zero by the kernel that adds into them.
    pub fn zeroed(self) -> bool {
        matches!(self, Work::Stats)
    }

    /// The workspace's name, in messages.
    pub fn name(self) -> &'static str {
        match self {
            Work::ARes => "A's residues",
            Work::BRes => "Bᵀ's residues",
            Work::CRes => "C's residues",
            Work::Exps => "the exponents",
            Work::Part => "B's partial norms",
            Work::Squares => "the sums of squares",
            Work::L1 => "the sums of magnitudes",
            Work::ScaledL1 => "the scaled norms",
            Work::MagA => "A's magnitudes",
            Work::MagB => "B's magnitudes",
            Work::Stats => "the statistics",
            Work::Marks => "the marks",
            Work::Range => "the magnitudes along K",
            Work::Shift => "the shifts along K",
            Work::Summary => "the equilibration's summary",
        }
    }
}

/// A buffer a kernel addresses: an operand, or a workspace from a byte offset on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Buf {
    A,
    B,
    C,
    Work(Work, usize),
}

/// One argument of a queued kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Val {
    I32(i32),
    Ptr(Buf),
    /// A tensor map of a workspace of `element`s: `[rows, cols, pitch, parts]` in elements, in
    /// boxes of `bx`, with the 128-byte swizzle.
    Map {
        element: Element,
        of: Work,
        dims: [usize; 4],
        bx: TmaBox,
    },
}

/// One item of a product's sequence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SequenceItem {
    /// Entry point `entry` on `grid`, with `block` threads, `smem` bytes of dynamic shared
    /// memory and `args`.
    Kernel { entry: &'static str, grid: (u32, u32, u32), block: u32, smem: u32, args: Vec<Val> },
    /// The step's `matmul` on the grid common's launch gives it, with the standard arguments and
    /// then `args`.
    Product { args: Vec<Val> },
    /// The FP32 path of the rows and columns the marks mark (step 09's `fp32_path`).
    Fp32Path { marks: Buf },
    /// Loads the equilibration's module ([`crate::equilibrate`]) beside the step's.
    LoadEquilibration,
}

fn blocks(count: usize, per_block: usize) -> u32 {
    u32::try_from(count.div_ceil(per_block)).unwrap_or(u32::MAX)
}

// ANCHOR: sequence
/// The kernels one product C = A·B of `shape` queues, in stream order; `rebuilds` whether the
/// kernel leaves C to `reconstruct` and `reconstruct_wide`; `boxes` those of A's and Bᵀ's
/// residue maps.
pub fn sequence(shape: Shape, rebuilds: bool, (a_box, b_box): (TmaBox, TmaBox)) -> Vec<SequenceItem> {
    use Val::{I32, Ptr};
    let Shape { m, n, k } = shape;
    let (kp, kb) = (pitch(k), bf16_pitch(k));
    let [mi, ni, ki, kpi, kbi] = [m, n, k, kp, kb].map(|v| I32(v as i32));
    let w = |work| Ptr(Buf::Work(work, 0));
    // The residues are cut from A and B as the shifts along K scale them (the same product).
    let (a, b, c, shift) = (Ptr(Buf::A), Ptr(Buf::B), Ptr(Buf::C), w(Work::Shift));
    let (a_res, b_res, exps, stats, squares, l1) =
        (w(Work::ARes), w(Work::BRes), w(Work::Exps), w(Work::Stats), w(Work::Squares), w(Work::L1));
    let b_exps = Ptr(Buf::Work(Work::Exps, 4 * m));
    let (marks, scaled_l1) = (w(Work::Marks), w(Work::ScaledL1));
    let kernel =
        |entry, grid, block, args: Vec<Val>| SequenceItem::Kernel { entry, grid, block, smem: 0, args };
    // A row a block: 16 entries a thread, up to 256 threads (fewer for a short row, so that more
    // rows are in flight at once).
    let row_threads = (k.div_ceil(16).div_ceil(32) * 32).clamp(32, 256) as u32;
    let rescaled = m.clamp(1, RESCALE_BLOCKS) as u32;
    let tiles = (RESCALE_BLOCKS as u32 / blocks(n, 32)).clamp(1, blocks(k, SCALE_TILE));
    let bf16_map = |of, rows, bx_rows| Val::Map {
        element: Element::Bf16,
        of,
        dims: [rows, k, kb, 1],
        bx: TmaBox { rows: bx_rows, cols: BOUND_DEPTH },
    };
    let res_map = |of, rows, bx| Val::Map { element: Element::U8, of, dims: [rows, k, kp, MOST], bx };
    let mut items = equilibration(shape);
    items.extend([
        kernel(
            ROWS_ENTRY,
            (blocks(m, 1), 1, 1),
            row_threads,
            vec![a, shift, a_res, exps, stats, squares, l1, mi, ki, kpi],
        ),
        kernel(
            NORMS_ENTRY,
            (blocks(n, 32), blocks(k, NORM_CHUNK), 1),
            256,
            vec![b, shift, w(Work::Part), ki, ni],
        ),
        kernel(
            COLS_ENTRY,
            (blocks(n, 32), blocks(k, SCALE_TILE), 1),
            256,
            vec![b, shift, w(Work::Part), b_res, b_exps, stats, squares, l1, mi, ki, ni, kpi],
        ),
        kernel(MARKS_ENTRY, (blocks(m + n, 256).min(1024), 1, 1), 256, vec![exps, stats, marks, mi, ni]),
        // The bound, where the rule left vectors marked (else each kernel returns at once).
        kernel(
            MAGNITUDE_ROWS_ENTRY,
            (rescaled, 1, 1),
            256,
            vec![a, shift, exps, l1, stats, w(Work::MagA), scaled_l1, mi, ni, ki, kbi],
        ),
        kernel(
            MAGNITUDE_COLS_ENTRY,
            (blocks(n, 32), blocks(kb, SCALE_TILE), 1),
            256,
            vec![b, shift, exps, l1, stats, w(Work::MagB), scaled_l1, mi, ni, ki, kbi],
        ),
        SequenceItem::Kernel {
            entry: BOUND_ENTRY,
            grid: (blocks(n, BOUND_COLS as usize), blocks(m, BOUND_ROWS as usize), 1),
            block: 384,
            smem: BOUND_SMEM,
            args: vec![
                mi,
                ni,
                ki,
                stats,
                scaled_l1,
                bf16_map(Work::MagA, m, BOUND_ROWS),
                bf16_map(Work::MagB, n, BOUND_COLS),
            ],
        },
        kernel(CHOOSE_ENTRY, (1, 1, 1), 1024, vec![exps, squares, stats, marks, mi, ni, ki]),
        kernel(
            RESCALE_ROWS_ENTRY,
            (rescaled, 1, 1),
            256,
            vec![a, shift, a_res, exps, stats, squares, mi, ki, kpi],
        ),
        kernel(
            RESCALE_COLS_ENTRY,
            (blocks(n, 32), tiles, 1),
            256,
            vec![b, shift, b_res, b_exps, stats, squares, mi, ki, ni, kpi],
        ),
        SequenceItem::Product {
            args: vec![
                w(Work::CRes),
                exps,
                marks,
                stats,
                res_map(Work::ARes, m, a_box),
                res_map(Work::BRes, n, b_box),
            ],
        },
    ]);
    if rebuilds {
        let across = blocks(n, 256 * REBUILD_COLS);
        let args = vec![w(Work::CRes), exps, marks, stats, c, mi, ni];
        let rows = (WIDE_BLOCKS / across as usize).clamp(1, m.max(1)) as u32;
        items.push(kernel(RECONSTRUCT_ENTRY, (across, m.clamp(1, 65_535) as u32, 1), 256, args.clone()));
        items.push(kernel(RECONSTRUCT_WIDE_ENTRY, (across, rows, 1), 256, args));
    }
    items.push(SequenceItem::Fp32Path { marks: Buf::Work(Work::Marks, 0) });
    items
}
// ANCHOR_END: sequence

/// The equilibration along K ([`crate::equilibrate`]): one kernel that reads A and B once and
/// leaves a shift for each k, which the kernels after it apply as they read A and B.
fn equilibration(shape: Shape) -> Vec<SequenceItem> {
    use crate::equilibrate::{ENTRY, THREADS, chunks};
    use Val::{I32, Ptr};
    let Shape { m, n, k } = shape;
    let w = |work| Ptr(Buf::Work(work, 0));
    let (a_chunks, b_chunks) = chunks(shape);
    vec![
        SequenceItem::LoadEquilibration,
        SequenceItem::Kernel {
            entry: ENTRY,
            grid: (crate::equilibrate::blocks(shape), 1, 1),
            block: THREADS,
            smem: 0,
            args: vec![
                Ptr(Buf::A),
                Ptr(Buf::B),
                w(Work::Range),
                w(Work::Shift),
                w(Work::Summary),
                I32(m as i32),
                I32(n as i32),
                I32(k as i32),
                I32(a_chunks as i32),
                I32(b_chunks as i32),
            ],
        },
    ]
}

/// Queues one product: each workspace of the sequence (kept from product to product, the
/// statistics zeroed), then its items in order, each map encoded for its workspace.
pub fn play(q: &mut dyn Queue, product: &Product, items: &[SequenceItem]) -> Result<()> {
    let shape = product.shape;
    let rebuilds = items.iter().any(|i| matches!(i, SequenceItem::Kernel { entry: RECONSTRUCT_ENTRY, .. }));
    let mut at = [0u64; Work::ALL.len()];
    for (i, work) in Work::ALL.into_iter().enumerate() {
        let bytes = usize::try_from(work.bytes(shape, rebuilds))?;
        at[i] = match work.zeroed() {
            true => q.zeroed(work.name(), bytes)?,
            false => q.workspace(work.name(), bytes)?,
        };
    }
    let (a, b, c) = product.operands;
    let address = |buf: Buf| match buf {
        Buf::A => a,
        Buf::B => b,
        Buf::C => c,
        Buf::Work(work, offset) => at[work as usize] + offset as u64,
    };
    let resolve = |q: &mut dyn Queue, vals: &[Val]| -> Result<Vec<KernelArg>> {
        vals.iter()
            .map(|v| match *v {
                Val::I32(i) => Ok(KernelArg::I32(i)),
                Val::Ptr(buf) => Ok(KernelArg::Ptr(address(buf))),
                Val::Map { element, of, dims, bx } => {
                    q.encode(element, at[of as usize], dims, bx).map(KernelArg::Map)
                }
            })
            .collect()
    };
    for item in items {
        match item {
            SequenceItem::Kernel { entry, grid, block, smem, args } => {
                let args = resolve(q, args)?;
                let launch = LaunchShape::of(*grid, *block, *smem);
                // The rebuild of C: each block its own elements, after the product.
                match [RECONSTRUCT_ENTRY, RECONSTRUCT_WIDE_ENTRY].contains(entry) {
                    true => q.launch_scaled(entry, launch, &args)?,
                    false => q.launch(entry, launch, &args)?,
                }
            }
            SequenceItem::Product { args } => {
                let mut all = product.args();
                all.extend(resolve(q, args)?);
                q.launch_matmul(common::gpu::ENTRY, product.launch, &all)?;
            }
            SequenceItem::LoadEquilibration => q.load(crate::equilibrate::MODULE)?,
            SequenceItem::Fp32Path { marks } => {
                use step09_3xtf32::fp32_path::{MODULE, queue};
                queue(q, MODULE, product.operands, address(*marks), shape)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workspace_counts_every_residue_plane() {
        let s = Shape::new(3, 5, 7).unwrap();
        // 16 moduli × (3 + 5 rows of 16 bytes + 3 rows of 16); the bf16 magnitudes of 8 vectors
        // 8 deep; exponents, statistics (3, 4 for each of 8 vectors, the flag and two
        // histograms of 18), marks; each vector's two scaled norms (floats), Σx² and ‖·‖₁ (doubles),
        // one chunk of norms in three planes; the FP32 path's lists, counts and the pieces of
        // sixteen split blocks (one tile's K in sixteen).
        assert_eq!(
            workspace_bytes(s),
            16 * (8 * 16 + 3 * 16)
                + 2 * 8 * 8
                + 4 * 8
                + 4 * (3 + 4 * 8 + 1 + 2 * 18)
                + 4 * 8
                + 8 * 8
                + 2 * 8 * 8
                + 3 * 8 * 5
                + 4 * (11 + 3 + 256 + 16 * 128 * 256)
                // The equilibration: four magnitudes and a shift for each k, and its summary.
                + 16 * 7
                + 4 * 7
                + 32
        );
        assert_eq!(pitch(16), 16);
        assert_eq!(pitch(17), 32);
    }
}

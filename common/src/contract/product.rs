//! One product as common hands it to a step's hooks ([`Product`]), and the tensor maps of A and B
//! common builds for it, with the kernels that must run before it, queued on either device.

use anyhow::{Result, bail};

use crate::matrix::Shape;
use crate::pad::{padded, rows_padded};
use crate::params::Params;
use crate::queue::{KernelArg, LaunchShape, Queue};
use crate::tma::{Element, EncodedMap, Marks, PARTS_ENTRY, TRANSPOSE_ENTRY, TmaBox};

/// One product as common hands it to a step's hooks: the shape the buffers hold (padded where the
/// launch pads rows), the parameters, the step kernel's launch and the operands' addresses.
#[derive(Clone, Copy, Debug)]
pub struct Product<'c> {
    pub shape: Shape,
    pub params: &'c Params,
    pub launch: LaunchShape,
    /// The rows of whole tiles of a Stream-K layout (None without one).
    pub whole: Option<u32>,
    /// The boxes of A's and B's tensor maps, for a kernel that reads through them.
    pub boxes: Option<(TmaBox, TmaBox)>,
    /// Whether common builds A's and B's maps (a step with maps of its own workspaces builds
    /// them itself).
    pub common_maps: bool,
    /// Whether A's map is of its two parts, which the step's `split_a` writes first.
    pub parts: bool,
    /// The addresses of A, B and C.
    pub operands: (u64, u64, u64),
}

impl Product<'_> {
    /// The standard arguments: `M, N, K, A, B, C`, and `whole` for a launch with a Stream-K layout.
    pub fn args(&self) -> Vec<KernelArg> {
        let Shape { m, n, k } = self.shape;
        let (a, b, c) = self.operands;
        let mut args = vec![
            KernelArg::I32(m as i32),
            KernelArg::I32(n as i32),
            KernelArg::I32(k as i32),
            KernelArg::Ptr(a),
            KernelArg::Ptr(b),
            KernelArg::Ptr(c),
        ];
        args.extend(self.whole.map(|w| KernelArg::I32(w as i32)));
        args
    }

    /// Whether the launch has a Stream-K layout (`whole` follows the six standard arguments).
    pub fn has_layout(&self) -> bool {
        self.whole.is_some()
    }

    /// The tensor maps of A and B as common builds them ([`maps`]), given `marks`
    /// where the step marks rows apart. Their prologue and padding copies are queued where the
    /// queue is: call it before [`Queue::fork`], so that the kernel's stream has them.
    pub fn maps(&self, q: &mut dyn Queue, marks: Option<Marks>) -> Result<[EncodedMap; 2]> {
        match (self.common_maps, self.boxes) {
            (true, Some(boxes)) => {
                let (a, b, _) = self.operands;
                maps(q, self.shape, (a, b), boxes, self.parts, marks)
            }
            _ => bail!("common builds no tensor maps for this step's kernel"),
        }
    }

    /// The plain launch: `matmul` with the standard arguments, then the tensor maps of A and B
    /// where the kernel reads through them.
    pub fn plain(&self, q: &mut dyn Queue) -> Result<()> {
        let mut args = self.args();
        if self.boxes.is_some() {
            if !self.common_maps {
                bail!(
                    "this kernel reads tensor maps of the step's own workspaces, and the step's hooks gave no product that builds them"
                );
            }
            args.extend(self.maps(q, None)?.map(KernelArg::Map));
        }
        q.launch_matmul(crate::gpu::ENTRY, self.launch, &args)
    }
}

/// The tensor maps of A and B for one launch on `shape` (A at `a` in boxes `a_box`, B at `b` in
/// boxes `b_box`), with what must run before the kernel queued on `q`: the step's prologue, a
/// kernel of its own that rewrites an operand as `f(const float* src, float* dst, int rows, int
/// cols, int pitch)` on 1024 blocks of 256 threads striding over the work, and a padded copy of
/// a matrix whose rows are not 16-byte multiples ([`crate::pad`]).
///
/// - `in_parts`: `split_a(A, parts, M, K, pitch[, marks, exps, col_least])` writes A's two parts,
///   2·M rows, mapped with a third coordinate, the part.
/// - else, where the kernel defines `transpose_b(B, Bt, K, N, pitch)`: Bᵀ, N rows of K floats,
///   mapped in B's place (its box read with rows and columns exchanged: rows of Bᵀ are columns
///   of B).
pub fn maps(
    q: &mut dyn Queue,
    shape: Shape,
    (a, b): (u64, u64),
    (a_box, b_box): (TmaBox, TmaBox),
    in_parts: bool,
    marks: Option<Marks>,
) -> Result<[EncodedMap; 2]> {
    let Shape { m, n, k } = shape;
    let int = |v: usize| KernelArg::I32(v as i32);
    let (a_ptr, a_pitch, parts) = if in_parts {
        let pitch = padded(k);
        let parts = q.workspace("A's parts", 4 * 2 * m * pitch)?;
        let mut args = vec![KernelArg::Ptr(a), KernelArg::Ptr(parts), int(m), int(k), int(pitch)];
        if let Some(Marks { marks, exps, col_least }) = marks {
            args.extend([marks, exps, col_least].map(KernelArg::Ptr));
        }
        prologue(q, PARTS_ENTRY, &args)?;
        (parts, pitch, 2)
    } else {
        let (ptr, pitch) = rows_padded(q, a, (m, k), "A padded")?;
        (ptr, pitch, 1)
    };
    let (b_ptr, b_rows, b_cols, b_pitch, b_box) = if !in_parts && q.has_entry(TRANSPOSE_ENTRY) {
        let pitch = padded(k);
        let bt = q.workspace("Bᵀ", 4 * n * pitch)?;
        prologue(q, TRANSPOSE_ENTRY, &[KernelArg::Ptr(b), KernelArg::Ptr(bt), int(k), int(n), int(pitch)])?;
        (bt, n, k, pitch, TmaBox { rows: b_box.cols, cols: b_box.rows })
    } else {
        let (ptr, pitch) = rows_padded(q, b, (k, n), "B padded")?;
        (ptr, k, n, pitch, b_box)
    };
    Ok([
        q.encode(Element::F32, a_ptr, [m, k, a_pitch, parts], a_box)?,
        q.encode(Element::F32, b_ptr, [b_rows, b_cols, b_pitch, 1], b_box)?,
    ])
}

/// The launch of the step's prologues, grid-stride kernels: enough blocks to fill an H200
/// several times over.
const GRID_STRIDE: LaunchShape = LaunchShape { grid: (1024, 1, 1), block: (256, 1, 1), smem: 0 };

/// A grid-stride prologue of the step's module, queued in front of the kernel.
fn prologue(q: &mut dyn Queue, entry: &str, args: &[KernelArg]) -> Result<()> {
    if !q.has_entry(entry) {
        bail!("the kernel defines no `{entry}`, which its tensor maps need");
    }
    q.launch(entry, GRID_STRIDE, args)
}

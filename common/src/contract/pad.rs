//! Rows padded to 16 bytes. A kernel that reads its operands 16 bytes at a time needs every row
//! to start on a 16-byte boundary: row lengths that are multiples of 4 floats. For other shapes
//! the launch copies the operands into workspaces whose rows are padded with zeros to the next
//! multiple of 4, and the kernel multiplies those; the copies are queued in front of the kernel
//! (and, for C, behind it) on the same stream, so timing counts them.
//!
//! For the steps whose launch pads ([`crate::GpuStep::pads_rows`]), an M×N×K product with K or N
//! not a multiple of 4 runs as the M×N′×K′ product of the padded matrices, N′ and K′ rounded up
//! to multiples of 4: A′ (M×K′) is A with zero columns, B′ (K′×N′) is B with zero rows and
//! columns, and C′ (M×N′) is copied back into C without its extra columns. The zeros add nothing
//! to the sums. The tensor-map steps pad A and B the same way for the copy engine (see
//! [`crate::tma`]).

use anyhow::Result;

use crate::matrix::Shape;
use crate::queue::{CudaSource, KernelArg, LaunchShape, Queue};

/// Floats per row once padded to a 16-byte multiple.
pub fn padded(cols: usize) -> usize {
    cols.next_multiple_of(4)
}

/// The shape a padding launch multiplies instead of `shape`, or None when its rows are 16-byte
/// multiples already (K and N multiples of 4).
pub fn padded_shape(shape: Shape) -> Option<Shape> {
    let (n, k) = (padded(shape.n), padded(shape.k));
    (n != shape.n || k != shape.k).then_some(Shape { m: shape.m, n, k })
}

/// `dst` (out_rows×out_cols, rows `dst_pitch` floats apart) = `src` (rows×cols, rows `src_pitch`
/// apart) where both have an element, zero where only `dst` has one. Blocks stride over rows in
/// y and over runs of columns in x, so that reads and writes are coalesced whatever the shape.
const COPY_SOURCE: &str = r#"
extern "C" __global__ void copy_rows(const float* src, int src_pitch, int rows, int cols,
                                     float* dst, int dst_pitch, int out_rows, int out_cols)
{
    for (int r = blockIdx.y; r < out_rows; r += gridDim.y) {
        const float* s = src + (long long)r * src_pitch;
        float* d = dst + (long long)r * dst_pitch;
        for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < out_cols; c += gridDim.x * blockDim.x) {
            d[c] = r < rows && c < cols ? s[c] : 0.0f;
        }
    }
}
"#;

/// The module of the copy, loaded beside the step's on whichever device runs the product.
const COPY: CudaSource = CudaSource { source: COPY_SOURCE, file: "common/src/contract/pad.rs" };

/// The copy's launch for an out_rows×out_cols destination: 256 threads a block, up to 32 blocks
/// across a row, and about 2048 blocks in all, enough to fill an H200 several times over.
fn copy_launch(out_rows: usize, out_cols: usize) -> LaunchShape {
    let across = out_cols.div_ceil(256).clamp(1, 32);
    let down = (2048 / across).min(out_rows).max(1);
    LaunchShape::of((across as u32, down as u32, 1), 256, 0)
}

/// One operand of a [`copy`]: a matrix of `rows`×`cols` floats whose rows are `pitch` floats
/// apart, at a device address.
#[derive(Clone, Copy, Debug)]
pub struct Pitched {
    pub rows: usize,
    pub cols: usize,
    pub pitch: usize,
}

/// Queues `dst` = `src`, zeros where `dst` reaches beyond `src` (see `COPY_SOURCE`), on `q`.
pub fn copy(q: &mut dyn Queue, (src, from): (u64, Pitched), (dst, to): (u64, Pitched)) -> Result<()> {
    if from.cols > from.pitch || to.cols > to.pitch {
        anyhow::bail!("a padding copy was given rows longer than their pitch");
    }
    q.load(COPY)?;
    let int = |v: usize| KernelArg::I32(v as i32);
    let args = [
        KernelArg::Ptr(src),
        int(from.pitch),
        int(from.rows),
        int(from.cols),
        KernelArg::Ptr(dst),
        int(to.pitch),
        int(to.rows),
        int(to.cols),
    ];
    q.launch("copy_rows", copy_launch(to.rows, to.cols), &args)
}

/// `src` (rows×cols) itself when its rows are 16-byte multiples, else a copy with padded rows in
/// workspace `name`, queued on `q`: the address and the pitch the kernel reads.
pub fn rows_padded(
    q: &mut dyn Queue,
    src: u64,
    (rows, cols): (usize, usize),
    name: &'static str,
) -> Result<(u64, usize)> {
    let pitch = padded(cols);
    if pitch == cols {
        return Ok((src, cols));
    }
    let dst = q.workspace(name, 4 * rows * pitch)?;
    let from = Pitched { rows, cols, pitch: cols };
    copy(q, (src, from), (dst, Pitched { rows, cols: pitch, pitch }))?;
    Ok((dst, pitch))
}

/// Bytes of the padded copies of A, B and C a launch that multiplies `padded` allocates (0 for
/// None, a launch that pads nothing).
pub fn workspace_bytes(padded: Option<Shape>) -> u64 {
    padded.map_or(0, |p| p.f32_bytes())
}

/// Runs `product(q, padded, (A′, B′, C′))` on padded copies kept in the queue's workspaces when
/// `padded` (the shape [`padded_shape`] gives for `shape`, or None for a launch that does not
/// pad) is Some: copies of A and B queued in front of it, C′ copied into C behind it. Else
/// `product(q, shape, (A, B, C))`.
pub fn around(
    q: &mut dyn Queue,
    shape: Shape,
    padded: Option<Shape>,
    (a, b, c): (u64, u64, u64),
    product: impl FnOnce(&mut dyn Queue, Shape, (u64, u64, u64)) -> Result<()>,
) -> Result<()> {
    let Some(p) = padded else {
        return product(q, shape, (a, b, c));
    };
    let plain = |rows, cols| Pitched { rows, cols, pitch: cols };
    let a = if p.k != shape.k {
        let wa = q.workspace("A′", 4 * p.m * p.k)?;
        copy(q, (a, plain(shape.m, shape.k)), (wa, plain(p.m, p.k)))?;
        wa
    } else {
        a
    };
    let wb = q.workspace("B′", 4 * p.k * p.n)?;
    copy(q, (b, plain(shape.k, shape.n)), (wb, plain(p.k, p.n)))?;
    if p.n == shape.n {
        return product(q, p, (a, wb, c));
    }
    let wc = q.poisoned("C′", 4 * p.m * p.n)?;
    product(q, p, (a, wb, wc))?;
    let back = Pitched { rows: shape.m, cols: shape.n, pitch: p.n };
    copy(q, (wc, back), (c, plain(shape.m, shape.n)))
}

#[cfg(test)]
mod tests {
    use super::{copy_launch, padded, padded_shape, workspace_bytes};
    use crate::matrix::Shape;

    #[test]
    fn rows_are_padded_to_16_bytes() {
        assert_eq!([1, 4, 5, 4095, 4096].map(padded), [4, 4, 8, 4096, 4096]);
    }

    #[test]
    fn only_k_and_n_are_padded_and_only_when_they_need_it() {
        let s = |m, n, k| Shape { m, n, k };
        assert_eq!(padded_shape(s(4096, 4096, 4096)), None);
        assert_eq!(
            padded_shape(s(4095, 4096, 4096)),
            None,
            "M is never padded: rows of A and C stay aligned"
        );
        assert_eq!(padded_shape(s(4095, 4095, 4095)), Some(s(4095, 4096, 4096)));
        assert_eq!(padded_shape(s(4097, 4097, 4096)), Some(s(4097, 4100, 4096)));
        assert_eq!(padded_shape(s(127, 128, 131)), Some(s(127, 128, 132)));
        assert_eq!(workspace_bytes(padded_shape(s(64, 64, 64))), 0);
        assert_eq!(workspace_bytes(padded_shape(s(3, 5, 7))), 4 * (3 * 8 + 8 * 8 + 3 * 8));
    }

    #[test]
    fn copies_are_spread_over_rows_and_columns() {
        let grid = |r, c| copy_launch(r, c).grid;
        assert_eq!(grid(4095, 4096), (16, 128, 1));
        assert_eq!(grid(64, 65536), (32, 64, 1), "few long rows: blocks across them");
        assert_eq!(grid(65536, 64), (1, 2048, 1), "many short rows: a block down each");
        assert_eq!(grid(1, 1), (1, 1, 1));
    }
}

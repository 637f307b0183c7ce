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

use std::sync::{Mutex, OnceLock};

use anyhow::{Result, anyhow};
use cudarc::driver::{
    CudaFunction, CudaSlice, DevicePtr, DeviceRepr, LaunchConfig, PushKernelArg, ValidAsZeroBits,
};

use crate::gpu::{self, Gpu};
use crate::matrix::Shape;

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

/// The copy's launch for an out_rows×out_cols destination: 256 threads a block, up to 32 blocks
/// across a row, and about 2048 blocks in all, enough to fill an H200 several times over.
fn copy_launch(out_rows: usize, out_cols: usize) -> LaunchConfig {
    let across = out_cols.div_ceil(256).clamp(1, 32);
    let down = (2048 / across).min(out_rows).max(1);
    LaunchConfig { grid_dim: (across as u32, down as u32, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 }
}

/// One operand of a [`Copier::copy`]: a matrix of `rows`×`cols` floats whose rows are `pitch`
/// floats apart.
#[derive(Clone, Copy, Debug)]
pub struct Layout {
    pub rows: usize,
    pub cols: usize,
    pub pitch: usize,
}

/// The copy kernel, compiled on first use.
#[derive(Default)]
pub struct Copier {
    kernel: OnceLock<CudaFunction>,
}

impl Copier {
    fn kernel(&self, gpu: &Gpu) -> Result<&CudaFunction> {
        if let Some(f) = self.kernel.get() {
            return Ok(f);
        }
        let compiled = gpu::compile(COPY_SOURCE, "common/src/contract/pad.rs", &gpu.info.arch(), &[])?;
        let f = gpu::Kernel::load_entry(gpu, compiled, "copy_rows")?.func;
        Ok(self.kernel.get_or_init(|| f))
    }

    /// Queues `dst` = `src`, zeros where `dst` reaches beyond `src` (see `COPY_SOURCE`).
    pub fn copy(
        &self,
        gpu: &Gpu,
        (src, from): (&CudaSlice<f32>, Layout),
        (dst, to): (&mut CudaSlice<f32>, Layout),
    ) -> Result<()> {
        let fits = |l: Layout, len: usize| {
            l.cols <= l.pitch && (l.rows == 0 || (l.rows - 1) * l.pitch + l.cols <= len)
        };
        if !fits(from, src.len()) || !fits(to, dst.len()) {
            return Err(anyhow!("a padding copy was given buffers smaller than its shapes"));
        }
        let [sp, r, c, dp, or, oc] =
            [from.pitch, from.rows, from.cols, to.pitch, to.rows, to.cols].map(|v| v as i32);
        let mut builder = gpu.stream.launch_builder(self.kernel(gpu)?);
        builder.arg(src).arg(&sp).arg(&r).arg(&c).arg(&mut *dst).arg(&dp).arg(&or).arg(&oc);
        // SAFETY: the arguments match `copy_rows(const float*, int, int, int, float*, int, int,
        // int)`, and both buffers hold every element their layouts address (checked above).
        unsafe { builder.launch(copy_launch(to.rows, to.cols)) }
            .map_err(|e| anyhow!("the padding copy failed to launch: {e:?}"))?;
        Ok(())
    }
}

/// The workspace in `slot`, reallocated (zeroed) when it holds fewer than `need` floats.
pub fn workspace<'s, T: DeviceRepr + ValidAsZeroBits>(
    gpu: &Gpu,
    slot: &'s mut Option<CudaSlice<T>>,
    need: usize,
) -> Result<&'s mut CudaSlice<T>> {
    if slot.as_ref().is_none_or(|w| w.len() < need) {
        *slot = None;
        *slot = Some(
            gpu.stream
                .alloc_zeros::<T>(need)
                .map_err(|e| anyhow!("allocating a workspace of {need} elements: {e:?}"))?,
        );
    }
    Ok(slot.as_mut().expect("allocated above"))
}

/// A [`workspace`] of ints zeroed on the stream (before what is queued next), and its address.
pub fn zeroed(gpu: &Gpu, slot: &mut Option<CudaSlice<i32>>, need: usize) -> Result<u64> {
    let w = workspace(gpu, slot, need.max(1))?;
    gpu.stream.memset_zeros(w).map_err(|e| anyhow!("zeroing a workspace of {need} ints: {e:?}"))?;
    let (ptr, _sync) = w.device_ptr(&gpu.stream);
    Ok(ptr)
}

/// Bytes of the padded copies of A, B and C a launch that multiplies `padded` allocates (0 for
/// None, a launch that pads nothing).
pub fn workspace_bytes(padded: Option<Shape>) -> u64 {
    padded.map_or(0, |p| 4 * (p.m * p.k + p.k * p.n + p.m * p.n) as u64)
}

/// The padded copies of A, B and C a padding launch keeps from launch to launch.
#[derive(Default)]
pub struct Padding {
    copier: Copier,
    workspaces: Mutex<[Option<CudaSlice<f32>>; 3]>,
}

impl Padding {
    /// Runs `product(padded, A′, B′, C′)` on padded copies when `padded` (the shape
    /// [`padded_shape`] gives for `shape`, or None for a launch that does not pad) is Some:
    /// copies of A and B queued in front of it, C′ copied into C behind it. Else
    /// `product(shape, A, B, C)`.
    pub fn run(
        &self,
        gpu: &Gpu,
        shape: Shape,
        padded: Option<Shape>,
        (a, b, c): (&CudaSlice<f32>, &CudaSlice<f32>, &mut CudaSlice<f32>),
        product: impl FnOnce(Shape, &CudaSlice<f32>, &CudaSlice<f32>, &mut CudaSlice<f32>) -> Result<()>,
    ) -> Result<()> {
        let Some(p) = padded else {
            return product(shape, a, b, c);
        };
        let mut slots =
            self.workspaces.lock().map_err(|_| anyhow!("the padding workspaces' lock was poisoned"))?;
        let [wa, wb, wc] = &mut *slots;
        let plain = |rows, cols| Layout { rows, cols, pitch: cols };
        let a = if p.k != shape.k {
            let wa = workspace(gpu, wa, p.m * p.k)?;
            self.copier.copy(gpu, (a, plain(shape.m, shape.k)), (&mut *wa, plain(p.m, p.k)))?;
            &*wa
        } else {
            a
        };
        let wb = workspace(gpu, wb, p.k * p.n)?;
        self.copier.copy(gpu, (b, plain(shape.k, shape.n)), (&mut *wb, plain(p.k, p.n)))?;
        if p.n == shape.n {
            return product(p, a, wb, c);
        }
        let wc = workspace(gpu, wc, p.m * p.n)?;
        product(p, a, wb, wc)?;
        let back = Layout { rows: shape.m, cols: shape.n, pitch: p.n };
        self.copier.copy(gpu, (wc, back), (c, plain(shape.m, shape.n)))
    }
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
        let grid = |r, c| copy_launch(r, c).grid_dim;
        assert_eq!(grid(4095, 4096), (16, 128, 1));
        assert_eq!(grid(64, 65536), (32, 64, 1), "few long rows: blocks across them");
        assert_eq!(grid(65536, 64), (1, 2048, 1), "many short rows: a block down each");
        assert_eq!(grid(1, 1), (1, 1, 1));
    }
}

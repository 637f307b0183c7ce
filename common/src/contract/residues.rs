//! Step 11's extension of the contract ([`crate::Extension::Residues`]): a product computed from
//! the residues of A and B modulo a few moduli, one INT8 product per modulus. Every launch queues,
//! in this order (timing counts them all):
//!
//! ```text
//! (stats zeroed: 2 + 2·(M + N) ints)
//! scale_rows(const float* A, signed char* a_res, int* exps, int* stats, int M, int K, int pitch)
//!     one block of 256 threads per row of A: the row's exponent into exps[i], its residues into
//!     plane l of a_res (MODULI planes of M rows of pitch bytes, pitch = K rounded up to 16), and
//!     what the kernel's rule for rows it computes apart needs into stats
//! col_norms(const float* B, double* part, int K, int N)
//!     blocks of 32 columns by 256 rows of B: sums of squares into part[chunk·N + n], sums of
//!     magnitudes and largest magnitudes into two more planes of chunks·N
//! scale_cols(const float* B, const double* part, signed char* b_res, int* exps, int* stats,
//!            int M, int K, int N, int pitch)
//!     blocks of 32 columns by 128 rows: the exponent of column n into exps[n] (exps + M is
//!     passed), the residues of Bᵀ into b_res (MODULI planes of N rows of pitch bytes), and the
//!     columns' share of stats
//! mark_paths(const int* exps, const int* stats, int* marks, int M, int N)
//!     marks[v] = 1 for a row of A (v = i) or column of B (v = M + j) on the FP32 path, else 0
//! matmul(int M, int N, int K, const float* A, const float* B, float* C,
//!        unsigned char* c_res, const int* exps, const int* marks, CUtensorMap a_map,
//!        CUtensorMap b_map)
//!     the step's grid, one z per modulus; the maps are of a_res and b_res, three coordinates
//!     {k, row, modulus}; c_res holds MODULI planes of M rows of N bytes rounded up to 16
//! reconstruct(const unsigned char* c_res, const int* exps, const int* marks, float* C, int M,
//!             int N)
//!     blocks of 1024 columns (four a thread), a row of C a block in y (rows further on taken in turn); queued
//!     only when the kernel defines it (a kernel that rebuilds C itself does not)
//! the FP32 path of the marked rows and columns (crate::fp32_path)
//! ```
//!
//! The workspaces are kept from launch to launch and grown when a shape needs more.

use std::sync::Mutex;

use anyhow::{Result, anyhow};
use cudarc::driver::{
    CudaFunction, CudaSlice, DevicePtr, DeviceRepr, LaunchConfig, PushKernelArg, ValidAsZeroBits,
};

use crate::fp32_path::Fp32Path;
use crate::gpu::{Gpu, Kernel};
use crate::matrix::Shape;
use crate::pad::zeroed;
use crate::tma::{Element, TensorMap, TmaBox, encode_as};

/// The moduli step 11's kernel knows, in the order it takes them.
pub const MODULUS: [u64; 8] = [256, 255, 253, 251, 247, 241, 239, 233];

/// P, the product of the first `moduli` moduli.
pub fn product(moduli: usize) -> u128 {
    MODULUS[..moduli].iter().map(|&m| u128::from(m)).product()
}

/// How far the integers of a row can reach, T = √(P/2), less the √K/2 their rounding may add. A
/// row of K equal entries then keeps room/√K of each: the step asks for at least 2 (one bit).
pub fn room(moduli: usize, k: usize) -> f64 {
    (product(moduli) as f64 / 2.0).sqrt() * (1.0 - 1.0 / 1_048_576.0) - 0.5 * (k as f64).sqrt()
}

/// The entry points the extension queues around `matmul`.
pub const ROWS_ENTRY: &str = "scale_rows";
pub const NORMS_ENTRY: &str = "col_norms";
pub const COLS_ENTRY: &str = "scale_cols";
pub const MARKS_ENTRY: &str = "mark_paths";
pub const RECONSTRUCT_ENTRY: &str = "reconstruct";

/// Rows of B a block of `col_norms` sums.
pub const NORM_CHUNK: usize = 256;

/// The pitch, in bytes, of a residue matrix of `cols` columns: rows 16-byte aligned, as the copy
/// engine and 16-byte stores want them.
pub fn pitch(cols: usize) -> usize {
    cols.div_ceil(16) * 16
}

/// Device bytes a product of `shape` with `moduli` moduli needs besides A, B and C: the residues
/// of A, of Bᵀ and of C, the exponents, the statistics, the marks and B's partial norms (three
/// planes), and the FP32 path's lists.
pub fn workspace_bytes(shape: Shape, moduli: usize) -> u64 {
    let Shape { m, n, k } = shape;
    let [m, n, k, l] = [m, n, k, moduli].map(|v| v as u64);
    let residues =
        l.saturating_mul((m + n).saturating_mul(pitch(k as usize) as u64) + m * pitch(n as usize) as u64);
    let ints = (m + n) + (2 + 2 * (m + n)) + (m + n) + (2 * m + n + 3);
    residues.saturating_add(4 * ints + 3 * 8 * k.div_ceil(NORM_CHUNK as u64) * n)
}

/// The extension's entry points and workspaces, for one compiled kernel.
pub struct Residues {
    rows: CudaFunction,
    norms: CudaFunction,
    cols: CudaFunction,
    marks: CudaFunction,
    reconstruct: Option<CudaFunction>,
    state: Mutex<State>,
    fp32: Fp32Path,
}

#[derive(Default)]
struct State {
    a_res: Option<CudaSlice<u8>>,
    b_res: Option<CudaSlice<u8>>,
    c_res: Option<CudaSlice<u8>>,
    exps: Option<CudaSlice<i32>>,
    stats: Option<CudaSlice<i32>>,
    marks: Option<CudaSlice<i32>>,
    part: Option<CudaSlice<f64>>,
    /// The maps of the last launch and what they were encoded for.
    last: Option<(Key, [TensorMap; 2])>,
}

type Key = (u64, u64, Shape, usize, TmaBox, TmaBox);

/// A [`crate::pad::workspace`] of at least `need` elements (one at least), and its address.
fn workspace<T: DeviceRepr + ValidAsZeroBits>(
    gpu: &Gpu,
    slot: &mut Option<CudaSlice<T>>,
    need: usize,
) -> Result<u64> {
    let w = crate::pad::workspace(gpu, slot, need.max(1))?;
    let (ptr, _sync) = w.device_ptr(&gpu.stream);
    Ok(ptr)
}

fn config(grid: (u32, u32, u32)) -> LaunchConfig {
    LaunchConfig { grid_dim: grid, block_dim: (256, 1, 1), shared_mem_bytes: 0 }
}

fn blocks(count: usize, per_block: usize) -> u32 {
    u32::try_from(count.div_ceil(per_block)).unwrap_or(u32::MAX)
}

impl Residues {
    /// Finds the entry points in the step's module.
    pub fn new(kernel: &Kernel) -> Result<Self> {
        Ok(Self {
            rows: kernel.entry(ROWS_ENTRY)?,
            norms: kernel.entry(NORMS_ENTRY)?,
            cols: kernel.entry(COLS_ENTRY)?,
            marks: kernel.entry(MARKS_ENTRY)?,
            reconstruct: if kernel.has_entry(RECONSTRUCT_ENTRY) {
                Some(kernel.entry(RECONSTRUCT_ENTRY)?)
            } else {
                None
            },
            state: Mutex::default(),
            fp32: Fp32Path::default(),
        })
    }

    /// Queues one product C = A·B of `shape` with `moduli` moduli: the scaling kernels, the
    /// marks, `matmul` on `cfg`, `reconstruct` and the FP32 path (module docs). The boxes are
    /// counted in bytes of the residues.
    #[allow(clippy::too_many_arguments)]
    pub fn launch(
        &self,
        gpu: &Gpu,
        matmul: &CudaFunction,
        cfg: LaunchConfig,
        shape: Shape,
        moduli: usize,
        (a, b, c): (&CudaSlice<f32>, &CudaSlice<f32>, &mut CudaSlice<f32>),
        (a_box, b_box): (TmaBox, TmaBox),
    ) -> Result<()> {
        let mut state = self.state.lock().map_err(|_| anyhow!("the residues' state lock was poisoned"))?;
        let Shape { m, n, k } = shape;
        let (kp, np) = (pitch(k), pitch(n));
        let a_res = workspace(gpu, &mut state.a_res, moduli * m * kp)?;
        let b_res = workspace(gpu, &mut state.b_res, moduli * n * kp)?;
        // A kernel that rebuilds C itself writes no residues of C.
        let c_len = if self.reconstruct.is_some() { moduli * m * np } else { 1 };
        let c_res = workspace(gpu, &mut state.c_res, c_len)?;
        let exps = workspace(gpu, &mut state.exps, m + n)?;
        let part = workspace(gpu, &mut state.part, 3 * k.div_ceil(NORM_CHUNK) * n)?;
        let stats = zeroed(gpu, &mut state.stats, 2 + 2 * (m + n))?;
        let marks = workspace(gpu, &mut state.marks, m + n)?;
        let b_exps = exps + 4 * m as u64;
        let [mi, ni, ki, kpi] = [m, n, k, kp].map(|v| v as i32);
        fn failed(entry: &'static str) -> impl Fn(cudarc::driver::DriverError) -> anyhow::Error {
            move |e| anyhow!("the kernel's {entry} failed to launch: {e:?}")
        }

        let mut rows = gpu.stream.launch_builder(&self.rows);
        rows.arg(a).arg(&a_res).arg(&exps).arg(&stats).arg(&mi).arg(&ki).arg(&kpi);
        // SAFETY (this launch and the ones below): the arguments match the signatures in the
        // module docs; the workspaces hold what those signatures address for `shape` (allocated
        // above), and A, B and C hold the shape (checked by the caller).
        unsafe { rows.launch(config((blocks(m, 1), 1, 1))) }.map_err(failed(ROWS_ENTRY))?;
        let mut norms = gpu.stream.launch_builder(&self.norms);
        norms.arg(b).arg(&part).arg(&ki).arg(&ni);
        // SAFETY: as for scale_rows above.
        unsafe { norms.launch(config((blocks(n, 32), blocks(k, NORM_CHUNK), 1))) }
            .map_err(failed(NORMS_ENTRY))?;
        let mut cols = gpu.stream.launch_builder(&self.cols);
        cols.arg(b).arg(&part).arg(&b_res).arg(&b_exps).arg(&stats).arg(&mi).arg(&ki).arg(&ni).arg(&kpi);
        // SAFETY: as for scale_rows above.
        unsafe { cols.launch(config((blocks(n, 32), blocks(k, 128), 1))) }.map_err(failed(COLS_ENTRY))?;
        let mut mark = gpu.stream.launch_builder(&self.marks);
        mark.arg(&exps).arg(&stats).arg(&marks).arg(&mi).arg(&ni);
        // SAFETY: as for scale_rows above.
        unsafe { mark.launch(config((blocks(m + n, 256).min(1024), 1, 1))) }.map_err(failed(MARKS_ENTRY))?;

        let key = (a_res, b_res, shape, moduli, a_box, b_box);
        let maps = match &state.last {
            Some((last, maps)) if *last == key => *maps,
            _ => {
                let maps = [
                    encode_as(Element::U8, a_res, [m, k, kp, moduli], a_box)?,
                    encode_as(Element::U8, b_res, [n, k, kp, moduli], b_box)?,
                ];
                state.last = Some((key, maps));
                maps
            }
        };
        let mut product = gpu.stream.launch_builder(matmul);
        product.arg(&mi).arg(&ni).arg(&ki).arg(a).arg(b).arg(&mut *c).arg(&c_res).arg(&exps).arg(&marks);
        product.arg(&maps[0]).arg(&maps[1]);
        // SAFETY: as for scale_rows above.
        unsafe { product.launch(cfg) }.map_err(|e| anyhow!("the kernel failed to launch: {e:?}"))?;

        if let Some(reconstruct) = &self.reconstruct {
            let mut rebuild = gpu.stream.launch_builder(reconstruct);
            rebuild.arg(&c_res).arg(&exps).arg(&marks).arg(&mut *c).arg(&mi).arg(&ni);
            let grid = (blocks(n, 1024), m.clamp(1, 65_535) as u32, 1);
            // SAFETY: as for scale_rows above.
            unsafe { rebuild.launch(config(grid)) }.map_err(failed(RECONSTRUCT_ENTRY))?;
        }
        self.fp32.launch(gpu, (a, b, c), marks, shape)
    }

    /// The FP32 path of the rows and columns the rule marks.
    pub fn fp32_path(&self) -> &Fp32Path {
        &self.fp32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workspace_counts_every_residue_plane() {
        let s = Shape::new(3, 5, 7).unwrap();
        // 7 moduli × (3 + 5 rows of 16 bytes + 3 rows of 16), exponents, statistics, one chunk
        // of norms in three planes; marks, and the FP32 path's lists and counts.
        assert_eq!(
            workspace_bytes(s, 7),
            7 * (8 * 16 + 3 * 16) + 4 * 8 + 4 * 18 + 4 * 8 + 4 * 14 + 3 * 8 * 5
        );
        assert_eq!(pitch(16), 16);
        assert_eq!(pitch(17), 32);
    }
}

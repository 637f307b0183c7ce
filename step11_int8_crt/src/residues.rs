//! Step 11's own launch (its hooks, `ResidueHooks`): a product computed from the residues of
//! A and B modulo a few moduli, one INT8 product per modulus. Every launch queues,
//! in this order (timing counts them all):
//!
//! ```text
//! (stats zeroed: stats_len(shape) ints)
//! scale_rows(const float* A, signed char* a_res, int* exps, int* stats, double* norms,
//!            double* l1, int M, int K, int pitch)
//!     one block per row of A, of K/16 threads rounded up to a warp, at most 256: the row's
//!     exponent for MODULI moduli into exps[i], Σx² into norms[i] and Σ|x| into l1[i], its
//!     residues into plane l of a_res (planes of M rows of pitch bytes, pitch = K rounded up to
//!     16), and what the kernel's rule for rows it computes apart needs into stats
//! col_norms(const float* B, double* part, int K, int N)
//!     blocks of 32 columns by 256 rows of B: sums of squares into part[chunk·N + n], sums of
//!     magnitudes and largest magnitudes into two more planes of chunks·N
//! scale_cols(const float* B, const double* part, signed char* b_res, int* exps, int* stats,
//!            double* norms, double* l1, int M, int K, int N, int pitch)
//!     blocks of 32 columns by 128 rows: as scale_rows for B's columns (exps + M is passed;
//!     Σx² into norms[M + n], Σ|x| into l1[M + n]), the residues of Bᵀ into b_res (planes of N
//!     rows of pitch bytes)
//! mark_paths(const int* exps, int* stats, int* marks, int M, int N)
//!     marks[v] for a row of A (v = i) or column of B (v = M + j): 1 on the FP32 path, 0 carried
//!     at MODULI moduli, 2 to be looked at again, and the flag in stats if any is 2
//! magnitudes_rows(const float* A, const int* exps, const double* l1, const int* stats,
//!                 unsigned short* mag_a, float2* sl1, int M, int N, int K, int kpitch)
//! magnitudes_cols(const float* B, const int* exps, const double* l1, const int* stats,
//!                 unsigned short* mag_b, float2* sl1, int M, int N, int K, int kpitch)
//!     where the flag is set: |A| and |B|ᵀ scaled and rounded down to bf16 (rows of kpitch
//!     entries, K rounded up to 8), and each vector's two scaled norms into sl1 (blocks of rows
//!     in turn; 32 columns by 128 of K a block)
//! bound(int M, int N, int K, int* stats, const float2* sl1, CUtensorMap a_map, CUtensorMap b_map)
//!     where the flag is set: the bf16 product of the magnitudes, 128×256 tiles, and each row's
//!     and column's ratio into stats; the maps are of mag_a and mag_b, two coordinates {k, row}
//! choose_moduli(const int* exps, const double* norms, int* stats, int* marks, int M, int N, int K)
//!     where the flag is set, one block: each vector's need, L (stats[2] where above MODULI), the
//!     histogram of needs, and marks 0 or 1
//! rescale_rows(const float* A, signed char* a_res, int* exps, const int* stats,
//!              const double* norms, int M, int K, int pitch)
//! rescale_cols(const float* B, signed char* b_res, int* exps, const int* stats,
//!              const double* norms, int M, int K, int N, int pitch)
//!     where L > MODULI, the exponents and L planes of residues again; else they return at once
//!     (grids of fewer blocks, which take the rows and tiles further on in turn)
//! matmul(int M, int N, int K, const float* A, const float* B, float* C,
//!        unsigned char* c_res, const int* exps, const int* marks, const int* stats,
//!        CUtensorMap a_map, CUtensorMap b_map)
//!     the step's grid, one z per modulus of the first pass (a block takes z, z + MODULI, … below
//!     L); the maps are of a_res and b_res, three coordinates {k, row, modulus}; c_res holds MOST
//!     planes of M rows of N bytes rounded up to 16
//! reconstruct(const unsigned char* c_res, const int* exps, const int* marks, const int* stats,
//!             float* C, int M, int N)
//!     blocks of 1024 columns (four a thread), a row of C a block in y (rows further on taken in
//!     turn), where L = MODULI; reconstruct_wide (the same arguments, fewer blocks in y) where
//!     L > MODULI; queued only when the kernel defines them (a kernel that rebuilds C itself
//!     does not)
//! the FP32 path of the marked rows and columns (common::fp32_path)
//! ```
//!
//! The workspaces are kept from launch to launch and grown when a shape needs more.

use std::sync::Mutex;

use anyhow::{Result, anyhow};
use cudarc::driver::sys::CUfunction_attribute as FnAttr;
use cudarc::driver::{
    CudaFunction, CudaSlice, DevicePtr, DeviceRepr, LaunchConfig, PushKernelArg, ValidAsZeroBits,
};

use common::Shape;
use common::fp32_path::{Fp32Path, Paths};
use common::gpu::{Gpu, Kernel};
use common::hooks::{Hooks, KernelCall, Operands, OwnLaunch};
use common::pad::zeroed;
use common::params::Params;
use common::tma::{Element, TensorMap, TmaBox, encode_as};

use crate::MODULI;

/// The moduli step 11's kernel knows, in the order it takes them: the first pass takes the first
/// MODULI, and the data may call for up to [`MOST`].
pub const MODULUS: [u64; MOST] =
    [256, 255, 253, 251, 247, 241, 239, 233, 229, 227, 223, 217, 211, 199, 197, 193];

/// How many moduli the kernel knows: their product stays below 2¹²⁸.
pub const MOST: usize = 16;

/// P, the product of the first `moduli` moduli.
pub fn product(moduli: usize) -> u128 {
    MODULUS[..moduli].iter().map(|&m| u128::from(m)).product()
}

/// How far the integers of a row can reach, T = √(P/2)·(1 − [`MARGIN`]), less the √K/2 their
/// rounding may add. A row of K equal entries then keeps room/√K of each: the step asks for at
/// least 2 (one bit).
pub fn room(moduli: usize, k: usize) -> f64 {
    (product(moduli) as f64 / 2.0).sqrt() * (1.0 - MARGIN) - 0.5 * (k as f64).sqrt()
}

/// T's margin below √(P/2), 2⁻²⁰: the kernel's `exponent_for` leaves the same.
pub const MARGIN: f64 = 1.0 / 1_048_576.0;

/// The entry points the extension queues around `matmul`.
pub const ROWS_ENTRY: &str = "scale_rows";
pub const NORMS_ENTRY: &str = "col_norms";
pub const COLS_ENTRY: &str = "scale_cols";
pub const MARKS_ENTRY: &str = "mark_paths";
pub const RESCALE_ROWS_ENTRY: &str = "rescale_rows";
pub const RESCALE_COLS_ENTRY: &str = "rescale_cols";
pub const RECONSTRUCT_ENTRY: &str = "reconstruct";
pub const RECONSTRUCT_WIDE_ENTRY: &str = "reconstruct_wide";
pub const MAGNITUDE_ROWS_ENTRY: &str = "magnitudes_rows";
pub const MAGNITUDE_COLS_ENTRY: &str = "magnitudes_cols";
pub const BOUND_ENTRY: &str = "bound";
pub const CHOOSE_ENTRY: &str = "choose_moduli";

/// The bound's tiles (kernel.cu's BM × BOUND_BN, 64 bf16 deep) and its four stages of them in
/// shared memory, with their barriers and the swizzle's alignment.
const BOUND_ROWS: u32 = 128;
const BOUND_COLS: u32 = 256;
const BOUND_DEPTH: u32 = 64;
const BOUND_SMEM: u32 = 4 * (128 * (BOUND_ROWS + BOUND_COLS) + 16) + 1024;
/// Entries of each vector's count histogram in the statistics (kernel.cu's HIST_LEN): counts 0 to
/// MOST, and one for more than MOST.
pub const HIST_LEN: usize = MOST + 2;

/// Blocks of the second pass's scaling kernels: they return at once where the first pass's moduli
/// do, and where they do not, enough blocks that the last wave is a small part of the work.
const RESCALE_BLOCKS: usize = 2048;
/// Blocks of the wide rebuild, which return at once where the first pass's moduli do.
const WIDE_BLOCKS: usize = 1024;
/// Rows of B a block of `col_norms` sums.
pub const NORM_CHUNK: usize = 256;
/// Rows of K in a tile of `scale_cols` and `rescale_cols`.
pub const SCALE_TILE: usize = 128;
/// Columns of C a thread of the rebuild kernels takes: a block of 256 threads takes 1024.
pub const REBUILD_COLS: usize = 4;

/// The pitch, in bytes, of a residue matrix of `cols` columns: rows 16-byte aligned, as the copy
/// engine and 16-byte stores want them.
pub fn pitch(cols: usize) -> usize {
    cols.div_ceil(16) * 16
}

/// The ints of the statistics (kernel.cu's layout): q_A, q_B and the count taken; 2s + z and s
/// for each vector; the flag; the histogram of needs for rows and for columns; each vector's
/// ratio and need.
pub fn stats_len(shape: Shape) -> usize {
    3 + 4 * (shape.m + shape.n) + 1 + 2 * HIST_LEN
}

/// Where the flag and the histograms start in the statistics.
fn flag_at(shape: Shape) -> usize {
    3 + 2 * (shape.m + shape.n)
}

/// The pitch, in bf16 entries, of a matrix of magnitudes `k` deep: rows 16-byte aligned.
pub fn bf16_pitch(k: usize) -> usize {
    k.div_ceil(8) * 8
}

/// Device bytes a product of `shape` needs besides A, B and C, whatever the first pass's count:
/// the residues of A, of Bᵀ and of C for all [`MOST`] moduli the data may call for, the bound's
/// bf16 magnitudes of both, the exponents, the statistics, the marks, each vector's scaled ‖·‖₁,
/// Σx² and ‖·‖₁, B's partial norms (three planes), and the FP32 path's lists.
pub fn workspace_bytes(shape: Shape) -> u64 {
    let stats = stats_len(shape) as u64;
    let Shape { m, n, k } = shape;
    let [m, n, k, l] = [m, n, k, MOST].map(|v| v as u64);
    let residues =
        l.saturating_mul((m + n).saturating_mul(pitch(k as usize) as u64) + m * pitch(n as usize) as u64);
    let ints = (m + n) + stats + (m + n);
    let magnitudes = 2 * (m + n).saturating_mul(bf16_pitch(k as usize) as u64);
    residues
        .saturating_add(magnitudes)
        .saturating_add(4 * ints + 4 * (m + n) + 2 * 8 * (m + n) + 3 * 8 * k.div_ceil(NORM_CHUNK as u64) * n)
        .saturating_add(common::fp32_path::workspace_bytes(shape))
}

/// The entry points of one compiled kernel, and the workspaces its launches keep.
pub struct Residues {
    rows: CudaFunction,
    norms: CudaFunction,
    cols: CudaFunction,
    marks: CudaFunction,
    rescale_rows: CudaFunction,
    rescale_cols: CudaFunction,
    reconstruct: Option<[CudaFunction; 2]>,
    magnitudes: [CudaFunction; 2],
    bound: CudaFunction,
    choose: CudaFunction,
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
    norms: Option<CudaSlice<f64>>,
    l1: Option<CudaSlice<f64>>,
    scaled_l1: Option<CudaSlice<f32>>,
    mag_a: Option<CudaSlice<u16>>,
    mag_b: Option<CudaSlice<u16>>,
    /// The maps of the last launch and what they were encoded for.
    last: Option<(Key, [TensorMap; 2])>,
    /// The bound's maps and what they were encoded for.
    last_bound: Option<((u64, u64, Shape), [TensorMap; 2])>,
    /// The first pass's moduli at the last launch, its shape, and whether the count was forced.
    first: usize,
    shape: Option<Shape>,
    forced: bool,
}

type Key = (u64, u64, Shape, usize, TmaBox, TmaBox);

/// A [`common::pad::workspace`] of at least `need` elements (one at least), and its address.
fn workspace<T: DeviceRepr + ValidAsZeroBits>(
    gpu: &Gpu,
    slot: &mut Option<CudaSlice<T>>,
    need: usize,
) -> Result<u64> {
    let w = common::pad::workspace(gpu, slot, need.max(1))?;
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
        let bound = kernel.entry(BOUND_ENTRY)?;
        bound
            .set_attribute(FnAttr::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, BOUND_SMEM as i32)
            .map_err(|e| anyhow!("could not give the bound {BOUND_SMEM} bytes of shared memory: {e:?}"))?;
        Ok(Self {
            rows: kernel.entry(ROWS_ENTRY)?,
            norms: kernel.entry(NORMS_ENTRY)?,
            cols: kernel.entry(COLS_ENTRY)?,
            marks: kernel.entry(MARKS_ENTRY)?,
            rescale_rows: kernel.entry(RESCALE_ROWS_ENTRY)?,
            rescale_cols: kernel.entry(RESCALE_COLS_ENTRY)?,
            reconstruct: if kernel.has_entry(RECONSTRUCT_ENTRY) {
                Some([kernel.entry(RECONSTRUCT_ENTRY)?, kernel.entry(RECONSTRUCT_WIDE_ENTRY)?])
            } else {
                None
            },
            magnitudes: [kernel.entry(MAGNITUDE_ROWS_ENTRY)?, kernel.entry(MAGNITUDE_COLS_ENTRY)?],
            bound,
            choose: kernel.entry(CHOOSE_ENTRY)?,
            state: Mutex::default(),
            fp32: Fp32Path::default(),
        })
    }

    /// Queues one product C = A·B of the call's shape with a first pass of MODULI moduli: the
    /// scaling kernels, the marks and the choice of moduli, the second pass (the call's kernel on
    /// its grid), the rebuild and the FP32 path (module docs). The boxes are counted in bytes of
    /// the residues.
    fn queue(&self, call: &KernelCall, (a, b, c): Operands) -> Result<()> {
        let (gpu, shape) = (call.gpu, call.shape);
        let (a_box, b_box) =
            call.boxes.ok_or_else(|| anyhow!("step 11's launch needs the boxes of its tensor maps"))?;
        let moduli = call.params.get(MODULI.name) as usize;
        let mut state = self.state.lock().map_err(|_| anyhow!("the residues' state lock was poisoned"))?;
        let Shape { m, n, k } = shape;
        let (kp, np) = (pitch(k), pitch(n));
        let a_res = workspace(gpu, &mut state.a_res, MOST * m * kp)?;
        let b_res = workspace(gpu, &mut state.b_res, MOST * n * kp)?;
        // A kernel that rebuilds C itself writes no residues of C.
        let c_len = if self.reconstruct.is_some() { MOST * m * np } else { 1 };
        let c_res = workspace(gpu, &mut state.c_res, c_len)?;
        let exps = workspace(gpu, &mut state.exps, m + n)?;
        let part = workspace(gpu, &mut state.part, 3 * k.div_ceil(NORM_CHUNK) * n)?;
        let squares = workspace(gpu, &mut state.norms, m + n)?;
        let l1 = workspace(gpu, &mut state.l1, m + n)?;
        let scaled_l1 = workspace(gpu, &mut state.scaled_l1, 2 * (m + n))?;
        let kb = bf16_pitch(k);
        let mag_a = workspace(gpu, &mut state.mag_a, m * kb)?;
        let mag_b = workspace(gpu, &mut state.mag_b, n * kb)?;
        let stats = zeroed(gpu, &mut state.stats, stats_len(shape))?;
        state.first = moduli;
        state.shape = Some(shape);
        state.forced = call.params.find(crate::COUNT.name).is_some_and(|c| c > 0);
        let marks = workspace(gpu, &mut state.marks, m + n)?;
        let b_exps = exps + 4 * m as u64;
        let [mi, ni, ki, kpi, kbi] = [m, n, k, kp, kb].map(|v| v as i32);
        fn failed(entry: &'static str) -> impl Fn(cudarc::driver::DriverError) -> anyhow::Error {
            move |e| anyhow!("the kernel's {entry} failed to launch: {e:?}")
        }

        let mut rows = gpu.stream.launch_builder(&self.rows);
        rows.arg(a).arg(&a_res).arg(&exps).arg(&stats).arg(&squares).arg(&l1).arg(&mi).arg(&ki).arg(&kpi);
        // SAFETY (this launch and the ones below): the arguments match the signatures in the
        // module docs; the workspaces hold what those signatures address for `shape` (allocated
        // above), and A, B and C hold the shape (checked by the caller).
        // A row a block: 16 entries a thread, up to 256 threads (fewer for a short row, so that
        // more rows are in flight at once).
        let row_threads = (k.div_ceil(16).div_ceil(32) * 32).clamp(32, 256) as u32;
        let row_cfg = LaunchConfig { block_dim: (row_threads, 1, 1), ..config((blocks(m, 1), 1, 1)) };
        unsafe { rows.launch(row_cfg) }.map_err(failed(ROWS_ENTRY))?;
        let mut norms = gpu.stream.launch_builder(&self.norms);
        norms.arg(b).arg(&part).arg(&ki).arg(&ni);
        // SAFETY: as for scale_rows above.
        unsafe { norms.launch(config((blocks(n, 32), blocks(k, NORM_CHUNK), 1))) }
            .map_err(failed(NORMS_ENTRY))?;
        let mut cols = gpu.stream.launch_builder(&self.cols);
        cols.arg(b).arg(&part).arg(&b_res).arg(&b_exps).arg(&stats).arg(&squares).arg(&l1);
        cols.arg(&mi).arg(&ki).arg(&ni).arg(&kpi);
        // SAFETY: as for scale_rows above.
        unsafe { cols.launch(config((blocks(n, 32), blocks(k, SCALE_TILE), 1))) }
            .map_err(failed(COLS_ENTRY))?;
        let mut mark = gpu.stream.launch_builder(&self.marks);
        mark.arg(&exps).arg(&stats).arg(&marks).arg(&mi).arg(&ni);
        // SAFETY: as for scale_rows above.
        unsafe { mark.launch(config((blocks(m + n, 256).min(1024), 1, 1))) }.map_err(failed(MARKS_ENTRY))?;
        // The bound, where the rule left vectors marked (else each kernel returns at once).
        let [mag_rows, mag_cols] = &self.magnitudes;
        let mut mags = gpu.stream.launch_builder(mag_rows);
        mags.arg(a).arg(&exps).arg(&l1).arg(&stats).arg(&mag_a).arg(&scaled_l1);
        mags.arg(&mi).arg(&ni).arg(&ki).arg(&kbi);
        // SAFETY: as for scale_rows above.
        unsafe { mags.launch(config((m.clamp(1, RESCALE_BLOCKS) as u32, 1, 1))) }
            .map_err(failed(MAGNITUDE_ROWS_ENTRY))?;
        let mut mags = gpu.stream.launch_builder(mag_cols);
        mags.arg(b).arg(&exps).arg(&l1).arg(&stats).arg(&mag_b).arg(&scaled_l1);
        mags.arg(&mi).arg(&ni).arg(&ki).arg(&kbi);
        // SAFETY: as for scale_rows above.
        unsafe { mags.launch(config((blocks(n, 32), blocks(kb, SCALE_TILE), 1))) }
            .map_err(failed(MAGNITUDE_COLS_ENTRY))?;
        let bound_key = (mag_a, mag_b, shape);
        let bound_maps = match &state.last_bound {
            Some((last, maps)) if *last == bound_key => *maps,
            _ => {
                let maps = [
                    encode_as(
                        Element::Bf16,
                        mag_a,
                        [m, k, kb, 1],
                        TmaBox { rows: BOUND_ROWS, cols: BOUND_DEPTH },
                    )?,
                    encode_as(
                        Element::Bf16,
                        mag_b,
                        [n, k, kb, 1],
                        TmaBox { rows: BOUND_COLS, cols: BOUND_DEPTH },
                    )?,
                ];
                state.last_bound = Some((bound_key, maps));
                maps
            }
        };
        let mut bound = gpu.stream.launch_builder(&self.bound);
        bound.arg(&mi).arg(&ni).arg(&ki).arg(&stats).arg(&scaled_l1).arg(&bound_maps[0]).arg(&bound_maps[1]);
        let bound_cfg = LaunchConfig {
            grid_dim: (blocks(n, BOUND_COLS as usize), blocks(m, BOUND_ROWS as usize), 1),
            block_dim: (384, 1, 1),
            shared_mem_bytes: BOUND_SMEM,
        };
        // SAFETY: as for scale_rows above; the maps address mag_a and mag_b, allocated above.
        unsafe { bound.launch(bound_cfg) }.map_err(failed(BOUND_ENTRY))?;
        let mut choose = gpu.stream.launch_builder(&self.choose);
        choose.arg(&exps).arg(&squares).arg(&stats).arg(&marks).arg(&mi).arg(&ni).arg(&ki);
        let one = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (1024, 1, 1), shared_mem_bytes: 0 };
        // SAFETY: as for scale_rows above.
        unsafe { choose.launch(one) }.map_err(failed(CHOOSE_ENTRY))?;
        let mut rows = gpu.stream.launch_builder(&self.rescale_rows);
        rows.arg(a).arg(&a_res).arg(&exps).arg(&stats).arg(&squares).arg(&mi).arg(&ki).arg(&kpi);
        // SAFETY: as for scale_rows above.
        unsafe { rows.launch(config((m.clamp(1, RESCALE_BLOCKS) as u32, 1, 1))) }
            .map_err(failed(RESCALE_ROWS_ENTRY))?;
        let mut cols = gpu.stream.launch_builder(&self.rescale_cols);
        cols.arg(b).arg(&b_res).arg(&b_exps).arg(&stats).arg(&squares).arg(&mi).arg(&ki).arg(&ni).arg(&kpi);
        let tiles = (RESCALE_BLOCKS as u32 / blocks(n, 32)).clamp(1, blocks(k, SCALE_TILE));
        // SAFETY: as for scale_rows above.
        unsafe { cols.launch(config((blocks(n, 32), tiles, 1))) }.map_err(failed(RESCALE_COLS_ENTRY))?;

        let key = (a_res, b_res, shape, moduli, a_box, b_box);
        let maps = match &state.last {
            Some((last, maps)) if *last == key => *maps,
            _ => {
                let maps = [
                    encode_as(Element::U8, a_res, [m, k, kp, MOST], a_box)?,
                    encode_as(Element::U8, b_res, [n, k, kp, MOST], b_box)?,
                ];
                state.last = Some((key, maps));
                maps
            }
        };
        let mut product = call.args((a, b, &mut *c));
        product.arg(&c_res).arg(&exps).arg(&marks).arg(&stats).arg(&maps[0]).arg(&maps[1]);
        // SAFETY: as for scale_rows above.
        unsafe { product.launch(call.cfg) }.map_err(|e| anyhow!("the kernel failed to launch: {e:?}"))?;

        if let Some([reconstruct, wide]) = &self.reconstruct {
            let across = blocks(n, 256 * REBUILD_COLS);
            let mut rebuild = gpu.stream.launch_builder(reconstruct);
            rebuild.arg(&c_res).arg(&exps).arg(&marks).arg(&stats).arg(&mut *c).arg(&mi).arg(&ni);
            let grid = (across, m.clamp(1, 65_535) as u32, 1);
            // SAFETY: as for scale_rows above.
            unsafe { rebuild.launch(config(grid)) }.map_err(failed(RECONSTRUCT_ENTRY))?;
            let mut rebuild = gpu.stream.launch_builder(wide);
            rebuild.arg(&c_res).arg(&exps).arg(&marks).arg(&stats).arg(&mut *c).arg(&mi).arg(&ni);
            let rows = (WIDE_BLOCKS / across as usize).clamp(1, m.max(1));
            // SAFETY: as for scale_rows above (the same signature).
            unsafe { rebuild.launch(config((across, rows as u32, 1))) }
                .map_err(failed(RECONSTRUCT_WIDE_ENTRY))?;
        }
        self.fp32.launch(gpu, (a, b, c), marks, shape)
    }

    /// The moduli the last product took (after it has finished): the first pass's, or more where
    /// the data called for them; and what each row and column needed, in words.
    pub fn moduli(&self, gpu: &Gpu) -> Result<Option<(usize, String)>> {
        let state = self.state.lock().map_err(|_| anyhow!("the residues' state lock was poisoned"))?;
        let (Some(stats), Some(shape)) = (&state.stats, state.shape) else { return Ok(None) };
        let read = |from: usize, len: usize| {
            let mut v = vec![0i32; len];
            gpu.stream
                .memcpy_dtoh(&stats.slice(from..from + len), &mut v)
                .map_err(|e| anyhow!("reading the moduli the product took: {e:?}"))
                .map(|()| v)
        };
        let chosen = read(2, 1)?[0];
        let taken = state.first.max(chosen.max(0) as usize);
        let flag = read(flag_at(shape), 1 + 2 * HIST_LEN)?;
        let words = if state.forced {
            format!("{taken} moduli forced on every row and column (--moduli); no rule, no bound")
        } else if flag[0] == 0 {
            format!("every row and column is carried at the first pass's {} moduli (the rule)", state.first)
        } else {
            needs_words(&flag[1..=HIST_LEN], &flag[1 + HIST_LEN..], state.first)
        };
        Ok(Some((taken, words)))
    }
}

/// The histogram of needs, rows' and columns', in words: "7 for 4090 rows and 4096 columns, 9 for
/// 6 rows, more than 16 for 1 column".
fn needs_words(rows: &[i32], cols: &[i32], first: usize) -> String {
    let plural = |n: i32, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    let parts: Vec<String> = (0..HIST_LEN)
        .filter(|&l| rows[l] > 0 || cols[l] > 0)
        .map(|l| {
            let whom = match (rows[l], cols[l]) {
                (r, 0) => plural(r, "row"),
                (0, c) => plural(c, "column"),
                (r, c) => format!("{} and {}", plural(r, "row"), plural(c, "column")),
            };
            if l > MOST { format!("more than {MOST} for {whom}") } else { format!("{l} for {whom}") }
        })
        .collect();
    format!("the fewest moduli the rule or the bound allows (first pass {first}): {}", parts.join(", "))
}

/// Step 11's hooks: every launch is the residues' ([`Residues`]).
pub struct ResidueHooks;

impl Hooks for ResidueHooks {
    fn emulated(&self) -> Result<(), &'static str> {
        Err(
            "its launch queues the scaling, residue, product and reconstruction kernels with maps of its own workspaces, which the emulator does not run yet",
        )
    }

    fn own_launch(&self, kernel: &Kernel) -> Result<Option<Box<dyn OwnLaunch>>> {
        Ok(Some(Box::new(Residues::new(kernel)?)))
    }

    fn workspace_bytes(&self, _params: &Params, shape: Shape) -> u64 {
        workspace_bytes(shape)
    }

    fn report_line(&self, params: &Params, _grid: (u32, u32, u32)) -> Option<(&'static str, String)> {
        Some((
            "moduli",
            format!(
                "{} INT8 products, one per modulus, or up to {MOST} where the data needs more (the paths line says how many), after A and B are scaled to integers and cut into residues, before C is rebuilt from them (all counted in the time)",
                params.get(MODULI.name)
            ),
        ))
    }
}

impl OwnLaunch for Residues {
    fn launch(&self, call: &KernelCall, operands: Operands) -> Result<()> {
        self.queue(call, operands)
    }

    fn fp32_path(&self) -> Option<&Fp32Path> {
        Some(&self.fp32)
    }

    /// The FP32 path's counts, with the moduli the product took.
    fn paths(&self, gpu: &Gpu) -> Result<Option<Paths>> {
        let moduli = self.moduli(gpu)?;
        Ok(self.fp32.paths(gpu)?.map(|p| Paths {
            moduli: moduli.as_ref().map(|m| m.0),
            needs: moduli.map(|m| m.1),
            ..p
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The needs line names each count with the rows and columns that needed it, and "more than
    /// 16" for the last entry of the histogram.
    #[test]
    fn the_needs_line_reads_the_histogram() {
        let (mut rows, mut cols) = (vec![0; HIST_LEN], vec![0; HIST_LEN]);
        rows[7] = 4055;
        cols[7] = 4060;
        rows[8] = 41;
        cols[8] = 36;
        cols[MOST + 1] = 1;
        assert_eq!(
            needs_words(&rows, &cols, 7),
            "the fewest moduli the rule or the bound allows (first pass 7): 7 for 4055 rows and 4060 columns, \
             8 for 41 rows and 36 columns, more than 16 for 1 column"
        );
    }

    #[test]
    fn the_workspace_counts_every_residue_plane() {
        let s = Shape::new(3, 5, 7).unwrap();
        // 16 moduli × (3 + 5 rows of 16 bytes + 3 rows of 16); the bf16 magnitudes of 8 vectors
        // 8 deep; exponents, statistics (3, 4 for each of 8 vectors, the flag and two
        // histograms of 18), marks; each vector's scaled ‖·‖₁ (a float), Σx² and ‖·‖₁ (doubles),
        // one chunk of norms in three planes; the FP32 path's lists, counts and the pieces of
        // sixteen split blocks (one tile's K in sixteen).
        assert_eq!(
            workspace_bytes(s),
            16 * (8 * 16 + 3 * 16)
                + 2 * 8 * 8
                + 4 * 8
                + 4 * (3 + 4 * 8 + 1 + 2 * 18)
                + 4 * 8
                + 4 * 8
                + 2 * 8 * 8
                + 3 * 8 * 5
                + 4 * (11 + 3 + 256 + 16 * 128 * 256)
        );
        assert_eq!(pitch(16), 16);
        assert_eq!(pitch(17), 32);
    }
}

//! The FP32 path of steps 09 and 11 (`fp32_path.cu`), kept here and used by step 11 too: the
//! rows of A and columns of B a step's own arithmetic cannot carry, which the step marks, multiplied in FP32 by a tiled kernel (step
//! 06's, its loads and stores taken through lists). Queued on every launch (timing counts it),
//! after the step's product ([`Fp32Path::enqueue`]), or beside it on a second stream of its own
//! ([`Fp32Path::fork`] once the marks are made, [`Fp32Path::join`] after the product), where the
//! product leaves the marked rows and columns of C alone:
//!
//! ```text
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
//! The host never waits for the counts; [`Fp32Path::paths`] reads them after a product, for the
//! report.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use anyhow::{Result, anyhow};
use cudarc::driver::sys::CUfunction_attribute as FnAttr;
use cudarc::driver::{CudaEvent, CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg, sys};

use common::emulated::{Arg, Config};
use common::gpu::{Compiled, Gpu, Kernel};
use common::hooks::{EmulatedCall, EmulatedOperands, Paths};
use common::matrix::Shape;
use common::pad::{workspace, zeroed};

/// The kernels' source, compiled once per architecture.
pub const SOURCE: &str = include_str!("fp32_path.cu");
pub const FILE: &str = "step09_3xtf32/src/fp32_path.cu";
pub const LIST_ENTRY: &str = "list_paths";
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

/// The FP32 path's kernels, loaded on the first launch, and their workspaces.
#[derive(Default)]
pub struct Fp32Path {
    state: Mutex<State>,
    /// The kernels' source where a test plants a fault in it (compiled apart from the cache).
    edited: Option<String>,
}

#[derive(Default)]
struct State {
    kernels: Option<Kernels>,
    lists: Option<CudaSlice<i32>>,
    counts: Option<CudaSlice<i32>>,
    /// The pieces of the tiles whose K is split.
    part: Option<CudaSlice<f32>>,
    /// Events around the next launch's FP32 path, and whether they were recorded.
    timer: Option<([CudaEvent; 2], bool)>,
    /// The stream the path runs on beside the product ([`Fp32Path::fork`]), and the events that
    /// start it and wait for it, made on first use and recorded again on every launch.
    side: Option<Side>,
    /// Whether the last launch forked the path, so that [`Fp32Path::join`] has something to wait for.
    forked: bool,
}

struct Side {
    stream: Arc<CudaStream>,
    start: CudaEvent,
    done: CudaEvent,
}

impl Side {
    fn new(gpu: &Gpu) -> Result<Self> {
        let event = || {
            gpu.ctx
                .new_event(Some(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING))
                .map_err(|e| anyhow!("creating an event: {e:?}"))
        };
        let stream = gpu.ctx.new_stream().map_err(|e| anyhow!("creating the FP32 path's stream: {e:?}"))?;
        Ok(Self { stream, start: event()?, done: event()? })
    }
}

struct Kernels {
    list: CudaFunction,
    /// fp32_rows, fp32_rows_split, fp32_rows_few, fp32_cols, fp32_cols_split, fp32_cols_few,
    /// with their names.
    products: [(CudaFunction, &'static str); 6],
}

/// The module compiled for `arch`, once per process.
fn compiled(arch: &str) -> Result<Compiled> {
    static CACHE: OnceLock<Mutex<HashMap<String, Compiled>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Mutex::default);
    let mut cache = cache.lock().map_err(|_| anyhow!("the FP32 path's compile cache lock was poisoned"))?;
    if let Some(c) = cache.get(arch) {
        return Ok(c.clone());
    }
    let c = common::gpu::compile(SOURCE, FILE, arch, &[])?;
    cache.insert(arch.to_owned(), c.clone());
    Ok(c)
}

impl Kernels {
    fn load(gpu: &Gpu, edited: Option<&str>) -> Result<Self> {
        let arch = gpu.info.arch();
        let module = match edited {
            Some(source) => common::gpu::compile(source, FILE, &arch, &[])?,
            None => compiled(&arch)?,
        };
        let kernel = Kernel::load_entry(gpu, module, ROWS_ENTRY)?;
        let entry = |name: &'static str| Ok::<_, anyhow::Error>((kernel.entry(name)?, name));
        let products = [
            entry(PRODUCTS[0])?,
            entry(PRODUCTS[1])?,
            entry(PRODUCTS[2])?,
            entry(PRODUCTS[3])?,
            entry(PRODUCTS[4])?,
            entry(PRODUCTS[5])?,
        ];
        for (f, _) in products.iter().filter(|(_, name)| !name.ends_with("_few")) {
            // 48 KiB of dynamic shared memory and a few bytes of static: above the default.
            f.set_attribute(FnAttr::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, SMEM as i32)
                .map_err(|e| anyhow!("could not give the FP32 path {SMEM} bytes of shared memory: {e:?}"))?;
        }
        Ok(Self { list: kernel.entry(LIST_ENTRY)?, products })
    }
}

impl Fp32Path {
    /// Queues the FP32 path of one product C = A·B of `shape`, after the step's own: the rows
    /// and columns `marks` (M + N ints on the device) marks are computed again, in FP32.
    pub fn enqueue(
        &self,
        gpu: &Gpu,
        operands: (&CudaSlice<f32>, &CudaSlice<f32>, &mut CudaSlice<f32>),
        marks: sys::CUdeviceptr,
        shape: Shape,
    ) -> Result<()> {
        self.queue(gpu, false, operands, marks, shape)
    }

    /// Queues the FP32 path of one product on a stream of its own, which waits for what `gpu`'s
    /// stream has queued so far (the marks): it then runs beside what is queued next, the step's
    /// product, which must leave C's marked rows and columns alone. [`Fp32Path::join`] makes
    /// `gpu`'s stream wait for it.
    pub fn fork(
        &self,
        gpu: &Gpu,
        operands: (&CudaSlice<f32>, &CudaSlice<f32>, &mut CudaSlice<f32>),
        marks: sys::CUdeviceptr,
        shape: Shape,
    ) -> Result<()> {
        self.queue(gpu, true, operands, marks, shape)
    }

    /// Makes `gpu`'s stream wait for the FP32 path [`Fp32Path::fork`] queued.
    pub fn join(&self, gpu: &Gpu) -> Result<()> {
        let mut state = self.state.lock().map_err(|_| anyhow!("the FP32 path's lock was poisoned"))?;
        if let (Some(side), true) = (&state.side, state.forked) {
            side.done.record(&side.stream).map_err(|e| anyhow!("recording an event: {e:?}"))?;
            gpu.stream.wait(&side.done).map_err(|e| anyhow!("waiting for the FP32 path's stream: {e:?}"))?;
        }
        state.forked = false;
        Ok(())
    }

    fn queue(
        &self,
        gpu: &Gpu,
        beside: bool,
        (a, b, c): (&CudaSlice<f32>, &CudaSlice<f32>, &mut CudaSlice<f32>),
        marks: sys::CUdeviceptr,
        shape: Shape,
    ) -> Result<()> {
        let mut guard = self.state.lock().map_err(|_| anyhow!("the FP32 path's lock was poisoned"))?;
        let state = &mut *guard;
        if state.kernels.is_none() {
            state.kernels = Some(Kernels::load(gpu, self.edited.as_deref())?);
        }
        // A launch that times the path apart runs it in turn on `gpu`'s stream, so that its time
        // is its own and not the product's beside it.
        let beside = beside && state.timer.is_none();
        if beside && state.side.is_none() {
            state.side = Some(Side::new(gpu)?);
        }
        state.forked = beside;
        let kernels = state.kernels.as_ref().expect("loaded above");
        let Shape { m, n, k } = shape;
        // The workspaces are made and zeroed on `gpu`'s stream, before the side stream waits.
        let counts = zeroed(gpu, &mut state.counts, COUNTS)?;
        let part = workspace(gpu, &mut state.part, part_len(shape))?;
        let lists = workspace(gpu, &mut state.lists, lists_len(shape))?;
        let stream = match (&state.side, beside) {
            (Some(side), true) => {
                side.start.record(&gpu.stream).map_err(|e| anyhow!("recording an event: {e:?}"))?;
                side.stream
                    .wait(&side.start)
                    .map_err(|e| anyhow!("starting the FP32 path's stream: {e:?}"))?;
                &side.stream
            }
            _ => &gpu.stream,
        };
        let [mi, ni, ki] = [m, n, k].map(|v| v as i32);
        let failed =
            |entry: &'static str| move |e| anyhow!("the FP32 path's {entry} failed to launch: {e:?}");

        if let Some(([start, _], _)) = &state.timer {
            start.record(stream).map_err(|e| anyhow!("recording an event: {e:?}"))?;
        }
        let mut list = stream.launch_builder(&kernels.list);
        list.arg(&marks).arg(&mut *lists).arg(&counts).arg(&mi).arg(&ni);
        let cfg = LaunchConfig {
            grid_dim: (list_blocks(shape), 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: the arguments match `list_paths(const int*, int*, int*, int, int)`; `marks`
        // holds M + N ints (the caller's), the lists 2M + N and the counts 3 (allocated above).
        unsafe { list.launch(cfg) }.map_err(failed(LIST_ENTRY))?;

        for (function, entry) in &kernels.products {
            let (grid_dim, threads, smem) = product_geometry(entry, shape);
            let cfg = LaunchConfig { grid_dim, block_dim: (threads, 1, 1), shared_mem_bytes: smem };
            let mut product = stream.launch_builder(function);
            product.arg(a).arg(b).arg(&mut *c).arg(&*lists).arg(&counts).arg(&mut *part);
            product.arg(&mi).arg(&ni).arg(&ki);
            // SAFETY: the arguments match `fp32_rows` and `fp32_cols` (module docs); A, B and C
            // hold the shape (the caller's check), the lists and counts are those `list_paths`
            // fills before them in stream order, and `part` holds a piece for each block of the
            // split kernels (a piece of BM·BN floats; the few-rows and few-columns kernels' are
            // 4096 and 2048 floats, split only over strips·S or bands·S ≤ WORK blocks, fewer
            // than those).
            unsafe { product.launch(cfg) }.map_err(failed(entry))?;
        }
        if let Some(([_, stop], recorded)) = &mut state.timer {
            stop.record(stream).map_err(|e| anyhow!("recording an event: {e:?}"))?;
            *recorded = true;
        }
        Ok(())
    }

    /// Times the FP32 path of the next launch (for the report: [`Fp32Path::paths`] gives it), run
    /// in turn with the product on `gpu`'s stream, even where the step forks it.
    pub fn time_next(&self, gpu: &Gpu) -> Result<()> {
        let mut state = self.state.lock().map_err(|_| anyhow!("the FP32 path's lock was poisoned"))?;
        let event = || {
            gpu.ctx
                .new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(|e| anyhow!("creating an event: {e:?}"))
        };
        state.timer = Some(([event()?, event()?], false));
        Ok(())
    }

    /// How many rows and columns the last launch sent down the FP32 path (waits for it), and
    /// the time it took there if it was timed.
    pub fn paths(&self, gpu: &Gpu) -> Result<Option<Paths>> {
        let mut state = self.state.lock().map_err(|_| anyhow!("the FP32 path's lock was poisoned"))?;
        let Some(counts) = &state.counts else { return Ok(None) };
        let counts =
            gpu.stream.clone_dtoh(counts).map_err(|e| anyhow!("reading the FP32 path's counts: {e:?}"))?;
        let ms = match state.timer.take() {
            Some(([start, stop], true)) => {
                Some(f64::from(start.elapsed_ms(&stop).map_err(|e| anyhow!("reading an event: {e:?}"))?))
            }
            _ => None,
        };
        Ok(Some(Paths::new(counts[0].max(0) as usize, counts[2].max(0) as usize, ms)))
    }
}

/// The FP32 path of one product on the emulator, as [`Fp32Path`] queues it on a GPU: the rows of
/// A and columns of B that `marks` (M + N ints in the emulator's memory) marks, listed by
/// `list_paths` and computed in FP32 into C by the six product kernels, in the order a GPU's
/// stream runs them. The path's module is loaded into the machine on its first product. Returns
/// (and keeps in the call's `paths`) how many rows and columns went there, read from the path's
/// counts after it has run, as a GPU run reads them.
pub fn on_emulator(call: &mut EmulatedCall, (a, b, c): EmulatedOperands, marks: u64) -> Result<Paths> {
    if !call.machine.has_kernel(LIST_ENTRY) {
        let ptx = emulator_ptx()?;
        call.load(&ptx)?;
    }
    let shape = call.shape;
    let counts = call.workspace(COUNTS, "the FP32 path's counts");
    let part = call.workspace(part_len(shape), "the FP32 path's pieces");
    let lists = call.workspace(lists_len(shape), "the FP32 path's lists");
    let [m, n, k] = [shape.m, shape.n, shape.k].map(|v| Arg::I32(v as i32));
    let base = call.config;
    let one = |grid, threads, dynamic_shared| Config { grid, block: (threads, 1, 1), dynamic_shared, ..base };
    let list = one((list_blocks(shape), 1, 1), 256, 0);
    call.run(LIST_ENTRY, list, &[Arg::Ptr(marks), Arg::Ptr(lists), Arg::Ptr(counts), m, n])?;
    let args: Vec<Arg> = [a, b, c, lists, counts, part].map(Arg::Ptr).into_iter().chain([m, n, k]).collect();
    for entry in PRODUCTS {
        let (grid, threads, smem) = product_geometry(entry, shape);
        call.run(entry, one(grid, threads, smem), &args)?;
    }
    let read =
        call.machine.read_f32(counts, 3).map_err(|e| anyhow!("reading the FP32 path's counts: {e}"))?;
    let count = |v: f32| (v.to_bits() as i32).max(0) as usize;
    let paths = Paths::new(count(read[0]), count(read[2]), None);
    call.paths = Some(paths.clone());
    Ok(paths)
}

/// The FP32 path's module compiled to PTX for the emulator, once per process (the compile takes
/// longer than the path's run at a test's shapes).
fn emulator_ptx() -> Result<String> {
    static PTX: Mutex<Option<String>> = Mutex::new(None);
    let mut cached = PTX.lock().map_err(|_| anyhow!("the FP32 path's PTX lock was poisoned"))?;
    if let Some(ptx) = &*cached {
        return Ok(ptx.clone());
    }
    let ptx = common::emulated::ptx(SOURCE, FILE, common::emulated::PTX_ARCH, &[])?;
    *cached = Some(ptx.clone());
    Ok(ptx)
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
    fn check(
        path: &Fp32Path,
        gpu: &Gpu,
        (m, n, k, every): (usize, usize, usize, usize),
    ) -> Result<(), String> {
        let value = |i: usize, salt: usize| (((i * 7919 + salt) % 1009) as f32 - 504.0) / 256.0;
        let a: Vec<f32> = (0..m * k).map(|i| value(i, 1)).collect();
        let b: Vec<f32> = (0..k * n).map(|i| value(i, 2)).collect();
        let marks: Vec<i32> = (0..m + n).map(|v| i32::from(v % every == every / 2)).collect();
        let s = &gpu.stream;
        let (da, db) = (s.clone_htod(&a).unwrap(), s.clone_htod(&b).unwrap());
        let mut dc = s.clone_htod(&vec![f32::NAN; m * n]).unwrap();
        let dm = s.clone_htod(&marks).unwrap();
        let (ptr, _sync) = cudarc::driver::DevicePtr::device_ptr(&dm, s);
        path.enqueue(gpu, (&da, &db, &mut dc), ptr, Shape::new(m, n, k).unwrap()).unwrap();
        let c = s.clone_dtoh(&dc).unwrap();
        let p = path.paths(gpu).unwrap().unwrap();
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
            check(&Fp32Path::default(), &gpu, shape).unwrap();
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
            let path = Fp32Path { edited: Some(SOURCE.replace(find, replace)), ..Default::default() };
            for &shape in shapes {
                let outcome = check(&path, &gpu, shape);
                println!("{what}, {shape:?}: {outcome:?}");
                assert!(outcome.is_err(), "{what} passed on {shape:?}");
            }
        }
    }
}

//! Step 09's own launch (its hooks, `ApartHooks`): A's rows and B's columns scaled by
//! powers of two before the split, and the rows and columns the split cannot carry sent down the
//! FP32 path, around common's launch of the kernel with its tensor maps.

use std::sync::Mutex;

use anyhow::{Result, anyhow};
use cudarc::driver::{CudaFunction, CudaSlice, LaunchConfig, PushKernelArg};

use common::Shape;
use common::fp32_path::Fp32Path;
use common::gpu::{Gpu, Kernel};
use common::hooks::{Hooks, KernelCall, Operands, OwnLaunch};
use common::params::Params;
use common::tma::Marks;

/// The entry point of a split step that marks the columns its split cannot carry (see [`Apart`]).
pub const MARK_ENTRY: &str = "mark_cols";

/// A split step's power-of-two scaling of A's rows and B's columns, and the rows and columns its
/// split cannot carry (step 09: NaN and infinities, whose two parts make ∞ − ∞, and vectors that
/// span too many binades), computed on the FP32 path ([`common::fp32_path`]). A kernel that
/// defines `mark_cols` gets, on every launch (timed with it):
///
/// ```text
/// (marks, exponents and column ranges zeroed: 2·(M + N) + 2·N ints)
/// mark_cols(const float* B, int* cols, int K, int N)
///     blocks of 256 threads, four columns a thread, rows of B in turn in y: the columns'
///     largest and least magnitudes into cols[0..2N)
/// scale_cols(const int* cols, int* marks, int* exps, int N)
///     a thread a column (marks + M and exps + M are passed): column j's exponent, and
///     marks[M + j] = 1 for a column the split cannot carry
/// split_a(const float* A, float* parts, int M, int K, int pitch, int* marks, int* exps)
///     as without, A's rows scaled; exps[i] the exponent of row i, marks[i] = 1 for a row it
///     cannot carry
/// matmul(..., CUtensorMap a_map, CUtensorMap b_map, const int* exps)
///     the exponents of A's rows, then of B's columns, which it takes back from C
/// the FP32 path of the marked rows and columns
/// ```
pub struct Apart {
    mark: CudaFunction,
    scale: CudaFunction,
    marks: Mutex<Option<CudaSlice<i32>>>,
    fp32: Fp32Path,
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
            fp32: Fp32Path::default(),
        }))
    }

    /// Zeroes the marks, queues `mark_cols` and `scale_cols`; returns where the marks and the
    /// exponents lie, for `split_a`, `matmul` and the FP32 path.
    fn before(&self, gpu: &Gpu, b: &CudaSlice<f32>, shape: Shape) -> Result<Marks> {
        let mut slot = self.marks.lock().map_err(|_| anyhow!("the marks' lock was poisoned"))?;
        let (m, n) = (shape.m as u64, shape.n as u64);
        let marks = common::pad::zeroed(gpu, &mut slot, 2 * shape.m + 4 * shape.n)?;
        let exps = marks + 4 * (m + n);
        let cols = exps + 4 * (m + n);
        let [k, ni] = [shape.k, shape.n].map(|v| v as i32);
        let failed = |entry: &'static str| move |e| anyhow!("the kernel's {entry} failed to launch: {e:?}");
        let mut builder = gpu.stream.launch_builder(&self.mark);
        builder.arg(b).arg(&cols).arg(&k).arg(&ni);
        let cfg = LaunchConfig {
            grid_dim: (shape.n.div_ceil(4 * 256) as u32, shape.k.min(256) as u32, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: the arguments match `mark_cols(const float*, int*, int, int)`; B holds K·N
        // floats (the caller's shape check) and the column ranges 2·N ints.
        unsafe { builder.launch(cfg) }.map_err(failed(MARK_ENTRY))?;
        let (col_marks, col_exps) = (marks + 4 * m, exps + 4 * m);
        let mut builder = gpu.stream.launch_builder(&self.scale);
        builder.arg(&cols).arg(&col_marks).arg(&col_exps).arg(&ni);
        let cfg = LaunchConfig {
            grid_dim: (shape.n.div_ceil(256).min(1024) as u32, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: the arguments match `scale_cols(const int*, int*, int*, int)`; the column
        // ranges hold 2·N ints, the marks and exponents past M hold N each.
        unsafe { builder.launch(cfg) }.map_err(failed(SCALE_ENTRY))?;
        Ok(Marks { marks, exps })
    }
}

/// Step 09's hooks: a kernel that defines `mark_cols` launches through [`Apart`]; one that does
/// not (an edited copy without it) through common's plain launch.
pub struct ApartHooks;

impl Hooks for ApartHooks {
    fn own_launch(&self, kernel: &Kernel) -> Result<Option<Box<dyn OwnLaunch>>> {
        Ok(Apart::find(kernel)?.map(|apart| Box::new(apart) as Box<dyn OwnLaunch>))
    }

    fn workspace_bytes(&self, _params: &Params, shape: Shape) -> u64 {
        // The marks, exponents and column ranges, and the FP32 path's lists.
        4 * (2 * shape.m + 4 * shape.n) as u64 + common::fp32_path::workspace_bytes(shape)
    }
}

impl OwnLaunch for Apart {
    fn launch(&self, call: &KernelCall, (a, b, c): Operands) -> Result<()> {
        let marks = self.before(call.gpu, b, call.shape)?;
        let [a_map, b_map] = call.maps((a, b), Some(marks))?;
        let mut builder = call.args((a, b, &mut *c));
        builder.arg(&a_map).arg(&b_map).arg(&marks.exps);
        // SAFETY: the arguments match `matmul(int, int, int, const float*, const float*, float*,
        // CUtensorMap, CUtensorMap, const int* exps)`: the maps are of buffers that outlive the
        // launch (A's parts, and B or its padded copy; workspaces are freed only when a later
        // launch needs larger ones, after this one in stream order), the exponents are the M + N
        // ints `before` made, and A, B and C hold the shape (checked by common's launch).
        unsafe { builder.launch(call.cfg) }.map_err(|e| anyhow!("the kernel failed to launch: {e:?}"))?;
        // The FP32 path of the marked rows and columns, after the product.
        self.fp32.launch(call.gpu, (a, b, c), marks.marks, call.shape)
    }

    fn fp32_path(&self) -> Option<&Fp32Path> {
        Some(&self.fp32)
    }
}

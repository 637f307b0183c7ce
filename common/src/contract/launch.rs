//! The launch: a step's kernel compiled for the present GPU with one parameter set
//! ([`Prepared`]), the plan of its grid on this device, and the queued launch itself.

use anyhow::{Result, anyhow, bail};
use cudarc::driver::{CudaSlice, LaunchConfig, PushKernelArg};

use crate::gpu::{DeviceInfo, Gpu, Kernel, Resources};
use crate::matrix::Shape;
use crate::pad::Padding;
use crate::params::Params;
use crate::residues::Residues;
use crate::step::{
    Extension, FEW_ELEMENTS, GpuStep, Launch, MODULI, SUM_ENTRY, SUM_FEW_ENTRY, Schedule, on_tiles,
};
use crate::stream_k::{SHARE, forced_layout, stream_k_layout};
use crate::tma::{Apart, Prologue, SPLIT_ENTRY, TRANSPOSE_ENTRY, Tma};

/// A step's kernel compiled for the present GPU with one parameter set.
pub struct Prepared<'a> {
    pub step: &'a GpuStep,
    pub params: Params,
    pub kernel: Kernel,
    /// The tensor maps and workspaces of a step with that extension (unused by the others).
    tma: Tma,
    /// The kernel that splits A, for a step with split tensor maps, or that transposes B, for
    /// a tensor-map kernel that defines one.
    prologue: Option<Prologue>,
    /// The padded copies of a step whose launch pads rows (unused by the others).
    padding: Padding,
    /// A [`Schedule::PerShape`] step's `sum_slices` and the workspace of its split products.
    split: Option<Split>,
    /// An [`Extension::Residues`] step's other kernels and workspaces.
    residues: Option<Residues>,
    /// A split step's kernels for what its split cannot carry ([`Apart`]), where it has them.
    apart: Option<Apart>,
}

/// What a launch that splits K keeps: the kernels that add the slices, and their workspace.
struct Split {
    sum: cudarc::driver::CudaFunction,
    few: cudarc::driver::CudaFunction,
    partials: std::sync::Mutex<Option<CudaSlice<f32>>>,
}

impl<'a> Prepared<'a> {
    /// Compiles and loads; a set that spills registers is refused, since local-memory traffic
    /// would dominate whatever the parameters were meant to show.
    pub fn new(gpu: &Gpu, step: &'a GpuStep, params: Params) -> Result<Self> {
        step.check_compute(gpu.info.compute_capability, &gpu.info.name)?;
        let kernel = Kernel::load(gpu, step.compile(&params, &gpu.info.arch())?)?;
        let spilled = kernel.spill_bytes()?;
        if spilled > 0 {
            bail!(
                "with {params} the kernel spills {spilled} bytes of registers to local memory; choose smaller per-thread tiles"
            );
        }
        Self::with_kernel(step, params, kernel)
    }

    /// The step compiled with its parameters for `shape` on this GPU ([`GpuStep::params_for`]:
    /// the step's choice for the shape, where it chooses, then `overrides`), and why.
    pub fn for_shape(
        gpu: &Gpu,
        step: &'a GpuStep,
        shape: Shape,
        overrides: &[(String, u32)],
    ) -> Result<(Self, Option<String>)> {
        let (params, choice) = step.params_for(shape, gpu.info.sms, overrides)?;
        Ok((Self::new(gpu, step, params)?, choice.map(|c| c.why)))
    }

    /// For a step that chooses its parameters per shape, the step compiled again with its choice
    /// for `shape` (None for every other step: this one serves every shape).
    pub fn chosen_for(&self, gpu: &Gpu, shape: Shape) -> Result<Option<Prepared<'a>>> {
        match self.step.schedule {
            Schedule::PerShape(_) => Ok(Some(Self::for_shape(gpu, self.step, shape, &[])?.0)),
            _ => Ok(None),
        }
    }

    /// Wraps a kernel already compiled and loaded for `step` with `params` (and finds the entry
    /// point that splits A, for a step that has one, or that transposes B, where the kernel
    /// defines one).
    pub fn with_kernel(step: &'a GpuStep, params: Params, kernel: Kernel) -> Result<Self> {
        let prologue = match step.extension {
            Extension::SplitTensorMaps { .. } => Some(Prologue::SplitA(kernel.entry(SPLIT_ENTRY)?)),
            Extension::TensorMaps { .. } if kernel.has_entry(TRANSPOSE_ENTRY) => {
                Some(Prologue::TransposeB(kernel.entry(TRANSPOSE_ENTRY)?))
            }
            Extension::TensorMaps { .. } | Extension::Residues { .. } | Extension::None => None,
        };
        let residues = match step.extension {
            Extension::Residues { .. } => Some(Residues::new(&kernel)?),
            _ => None,
        };
        let apart = match step.extension {
            Extension::SplitTensorMaps { .. } => Apart::find(&kernel)?,
            _ => None,
        };
        let split = match step.schedule {
            Schedule::PerShape(_) => Some(Split {
                sum: kernel.entry(SUM_ENTRY)?,
                few: kernel.entry(SUM_FEW_ENTRY)?,
                partials: std::sync::Mutex::new(None),
            }),
            _ => None,
        };
        Ok(Self {
            step,
            params,
            kernel,
            tma: Tma::default(),
            prologue,
            padding: Padding::default(),
            split,
            residues,
            apart,
        })
    }

    /// The launch for `shape` on this device and its resource cost.
    pub fn plan(&self, info: &DeviceInfo, shape: Shape) -> Result<(Launch, Resources)> {
        let mut launch = self.step.validate(&self.params, shape, &info.limits)?;
        let resources = self.kernel.prepare(info, launch.threads(), launch.dynamic_smem)?;
        if resources.blocks_per_sm == 0 {
            bail!(
                "with {} the kernel cannot fit one block on an SM ({} registers × {} threads, {} bytes of shared memory)",
                self.params,
                resources.registers,
                launch.threads(),
                resources.static_smem + resources.dynamic_smem
            );
        }
        if launch.grid.2 > 1 || !on_tiles(&self.params) {
            // A split product: every tile is whole within its slice of K; a short side's kernel
            // has no tiles to share.
            launch.whole_rows = Some(launch.grid.1);
        } else if self.step.schedule.shares() {
            let forced = forced_layout(launch.grid.1, launch.grid.0)?;
            let (whole, rows) = if let Some(f) = forced {
                f
            } else if self.params.get(SHARE.name) == 1 {
                let slices = (shape.k as u32).div_ceil(self.params.get("BK"));
                stream_k_layout(launch.grid.1, launch.grid.0, slices, info.sms * resources.blocks_per_sm)
            } else {
                (launch.grid.1, launch.grid.1)
            };
            launch.grid.1 = rows;
            launch.whole_rows = Some(whole);
        }
        Ok((launch, resources))
    }

    /// Queues one launch computing C = A·B (asynchronous: errors may surface at the next sync):
    /// for a step that pads rows and a shape that needs it, the padding copies and the kernel on
    /// the padded shape, whose grid and layout are those `plan` gave for `shape` (BN and BK are
    /// multiples of 4, so padding K and N to multiples of 4 adds no tile and no slice).
    pub fn launch(
        &self,
        gpu: &Gpu,
        launch: Launch,
        shape: Shape,
        a: &CudaSlice<f32>,
        b: &CudaSlice<f32>,
        c: &mut CudaSlice<f32>,
    ) -> Result<()> {
        if a.len() < shape.m * shape.k || b.len() < shape.k * shape.n || c.len() < shape.m * shape.n {
            bail!("device buffers are smaller than the shape {shape} needs");
        }
        let padded = self.step.padded_shape(&self.params, shape);
        self.padding.run(gpu, shape, padded, (a, b, c), |shape, a, b, c| {
            self.kernel_launch(gpu, launch, shape, a, b, c)
        })
    }

    /// Queues the kernel itself on buffers that hold `shape` (checked by `launch`).
    fn kernel_launch(
        &self,
        gpu: &Gpu,
        launch: Launch,
        shape: Shape,
        a: &CudaSlice<f32>,
        b: &CudaSlice<f32>,
        c: &mut CudaSlice<f32>,
    ) -> Result<()> {
        let (m, n, k) = (shape.m as i32, shape.n as i32, shape.k as i32);
        let cfg = LaunchConfig {
            grid_dim: launch.grid,
            block_dim: launch.block,
            shared_mem_bytes: launch.dynamic_smem,
        };
        if let (Some(residues), Some((a_box, b_box))) = (&self.residues, self.step.extension.boxes()) {
            let moduli = self.params.get(MODULI.name) as usize;
            let boxes = (a_box(&self.params), b_box(&self.params));
            return residues.launch(gpu, &self.kernel.func, cfg, shape, moduli, (a, b, c), boxes);
        }
        let marks = match &self.apart {
            Some(apart) => Some(apart.before(gpu, b, shape)?),
            None => None,
        };
        let maps = match self.step.extension.boxes() {
            None => None,
            Some((a_box, b_box)) => Some(self.tma.maps(
                gpu,
                shape,
                (a, b),
                (a_box(&self.params), b_box(&self.params)),
                self.prologue.as_ref(),
                marks,
            )?),
        };
        let whole = launch.whole_rows.map(|w| w as i32);
        let mut slots = match &self.split {
            Some(split) => {
                Some(split.partials.lock().map_err(|_| anyhow!("the split workspace's lock was poisoned"))?)
            }
            None => None,
        };
        let slices = launch.grid.2 as usize;
        let partials = match slots.as_deref_mut() {
            // One float stands in for the workspace of an unsplit launch, which never reads it.
            Some(slot) => Some(crate::pad::workspace(
                gpu,
                slot,
                if slices > 1 { slices * shape.m * shape.n } else { 1 },
            )?),
            None => None,
        };
        let mut builder = gpu.stream.launch_builder(&self.kernel.func);
        builder.arg(&m).arg(&n).arg(&k).arg(a).arg(b).arg(&mut *c);
        if let Some(whole) = &whole {
            builder.arg(whole);
        }
        if let Some(partials) = &partials {
            builder.arg(&**partials);
        }
        if let Some([a_map, b_map]) = &maps {
            builder.arg(a_map).arg(b_map);
        }
        if let Some(marks) = &marks {
            builder.arg(&marks.exps);
        }
        // SAFETY: the arguments match `matmul(int, int, int, const float*, const float*, float*)`,
        // followed for the tensor-map extension by two 128-byte `CUtensorMap`s of buffers that
        // outlive the launch (A and B, or their workspaces, which are only freed when a later
        // launch needs larger ones, after this one in stream order), and for a step with an
        // `Apart` by its exponents (M + N ints, made above); the buffers hold at least the
        // elements the shape addresses (checked by `launch`, or padded copies of that size).
        unsafe { builder.launch(cfg) }.map_err(|e| anyhow!("the kernel failed to launch: {e:?}"))?;
        if let (Some(split), Some(partials)) = (&self.split, &partials)
            && slices > 1
        {
            let elements = shape.m * shape.n;
            let few = elements < FEW_ELEMENTS;
            // A thread per element, and at most 4096 blocks, which go round; for a C of few
            // elements, a thread per element and group of slices: `sum_few` splits an element's
            // slices between the largest power of two of groups, at most 8, that the slices and
            // the grid allow, so a grid sized by that power leaves no block without work.
            let groups = if few { 1 << slices.clamp(1, 8).ilog2() } else { 1 };
            let threads = elements * groups;
            let (count, slices) = (elements as i64, slices as i32);
            let mut sum = gpu.stream.launch_builder(if few { &split.few } else { &split.sum });
            sum.arg(&**partials).arg(&mut *c).arg(&count).arg(&slices);
            let blocks = threads.div_ceil(256).clamp(1, 4 * 1024) as u32;
            let cfg = LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
            // SAFETY: the arguments match `sum_slices` and `sum_few` (both `const float*, float*,
            // long long, int`); the workspace holds `slices` products of M×N floats and C holds M×N.
            unsafe { sum.launch(cfg) }
                .map_err(|e| anyhow!("the sum of the split slices failed to launch: {e:?}"))?;
        }
        if let Some(apart) = &self.apart {
            apart.after(gpu, (a, b, c), shape)?;
        }
        Ok(())
    }
}

impl Prepared<'_> {
    /// The FP32 path of a step that has one (steps 09 and 11): what its last launch sent there.
    pub fn fp32_path(&self) -> Option<&crate::fp32_path::Fp32Path> {
        match (&self.residues, &self.apart) {
            (Some(r), _) => Some(r.fp32_path()),
            (_, Some(a)) => Some(a.fp32_path()),
            _ => None,
        }
    }

    /// The moduli the last product took, for a step that multiplies residues (step 11).
    pub fn moduli_taken(&self, gpu: &Gpu) -> Result<Option<usize>> {
        match &self.residues {
            Some(r) => r.moduli(gpu),
            None => Ok(None),
        }
    }
}

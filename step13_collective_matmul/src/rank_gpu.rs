//! One GPU of a run: its handle, the products it runs (lab 12's kernel and cuBLAS TF32), and the
//! access it grants its peers to its memory.

use anyhow::{Result, anyhow, bail};
use cudarc::driver::CudaSlice;

use common::cublas::Blas;
use common::gpu::Gpu;
use common::step_kernel::StepKernel;
use common::{Geometry, Params, Precision, Shape};

/// Lab 12's kernel, the course's fastest TF32 product, as each GPU's own.
static LAB12: common::GpuStep = step12_persistent_clusters::STEP;

/// Which product each GPU runs on its shards (in the JSON, as --product names it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ShardKernel {
    /// Lab 12's persistent, clustered kernel.
    Lab12,
    /// cuBLAS in its TF32 tensor-core mode.
    Cublas,
}

impl ShardKernel {
    pub fn name(self) -> &'static str {
        match self {
            ShardKernel::Lab12 => "lab 12's kernel",
            ShardKernel::Cublas => "cuBLAS TF32",
        }
    }

    /// The arithmetic it claims, and so the limits its C is held to.
    pub fn precision(self) -> Precision {
        match self {
            ShardKernel::Lab12 => LAB12.precision,
            ShardKernel::Cublas => Precision::Tf32,
        }
    }
}

/// One GPU: its handle, lab 12 compiled for it (None before Hopper), and cuBLAS in TF32 twice:
/// on the SMs the ring's products may use, and on all of them for the baseline.
pub struct RankGpu {
    pub gpu: Gpu,
    /// Lab 12 for the ring's products and for the baseline's, each with its geometry.
    lab12: Option<[(StepKernel<'static>, Shape, Geometry); 2]>,
    blas: [Blas; 2],
}

impl RankGpu {
    /// Opens GPU `ordinal`, ready to multiply a shard (`shard`) on all its SMs but `leave`, which
    /// stay free for the exchange's kernels that run beside it, and the gathered A (`whole`), which
    /// runs alone, on all of them.
    pub fn open(
        ordinal: usize,
        (shard, whole): (Shape, Shape),
        leave: u32,
        ring_params: &[(String, u32)],
    ) -> Result<RankGpu> {
        let gpu = common::gpu::open(crate::NAME, ordinal)?;
        let sms = gpu.info.sms.saturating_sub(leave).max(1);
        let lab12 = match gpu.info.compute_capability >= LAB12.min_compute {
            true => {
                let params = Params::with_overrides(LAB12.params, ring_params)
                    .map_err(|e| anyhow!("--ring-{}", e.to_string().trim_start_matches("--")))?;
                // The step's own checks first: a set it refuses gets its sentence, not a compile error.
                LAB12.validate(&params, shard, &gpu.info.limits).map_err(|e| anyhow!("--ring-param: {e}"))?;
                // Compiled wide where a matrix of the product passes 2³¹ − 1 elements.
                let params = LAB12.widened(params, shard, ring_params)?;
                let ring = StepKernel::new(&gpu, &LAB12, params)?;
                let (mut beside, _) = ring.fit(&gpu.info, shard)?;
                // One persistent block an SM: as many as the SMs it may use, in whole clusters.
                let cluster = ring.params.get("CLUSTER");
                beside.grid.0 = beside.grid.0.min((sms / cluster).max(1) * cluster);
                let alone = StepKernel::new(
                    &gpu,
                    &LAB12,
                    LAB12.widened(Params::defaults(LAB12.params), whole, &[])?,
                )?;
                let (whole_geometry, _) = alone.fit(&gpu.info, whole)?;
                Some([(ring, shard, beside), (alone, whole, whole_geometry)])
            }
            false => None,
        };
        let blas = [Blas::tf32(gpu.stream.clone())?, Blas::tf32(gpu.stream.clone())?];
        if leave > 0 {
            blas[0].set_sm_count_target(sms)?;
        }
        Ok(RankGpu { gpu, lab12, blas })
    }

    /// The blocks lab 12 launches for a shard (its persistent grid), where it runs.
    pub fn lab12_blocks(&self) -> Option<u32> {
        self.lab12.as_ref().map(|k| k[0].2.grid.0)
    }

    pub fn has(&self, product: ShardKernel) -> bool {
        product == ShardKernel::Cublas || self.lab12.is_some()
    }

    /// Queues C = A·B on this GPU's stream: a product that runs `beside` the exchange (the
    /// ring's, of a shard) on the SMs the exchange leaves it, any other on all of them.
    pub fn multiply(
        &self,
        product: ShardKernel,
        (shape, beside): (Shape, bool),
        a: &CudaSlice<f32>,
        b: &CudaSlice<f32>,
        c: &mut CudaSlice<f32>,
    ) -> Result<()> {
        self.gpu.ctx.bind_to_thread()?;
        let which = usize::from(!beside);
        match (product, &self.lab12) {
            (ShardKernel::Cublas, _) => self.blas[which].sgemm(shape, a, b, c),
            (ShardKernel::Lab12, Some(kernels)) => {
                let (kernel, fitted, geometry) = &kernels[which];
                if *fitted != shape {
                    bail!("lab 12 was fitted to {fitted}, not {shape}");
                }
                kernel.enqueue(&self.gpu, *geometry, shape, a, b, c)
            }
            (ShardKernel::Lab12, None) => Err(anyhow!("lab 12's kernel needs a Hopper GPU (sm_90)")),
        }
    }
}

/// Lets every GPU of `devices` reach every other's memory directly, over NVLink where there is
/// one, so that the copy engines move shards without staging them in the host's memory. The
/// buffers come from each GPU's memory pool (stream-ordered allocation), whose memory a peer
/// reaches only where the pool grants it, besides the contexts' peer access.
pub fn enable_peer_access(devices: &[RankGpu]) -> Result<()> {
    use cudarc::driver::sys::{self, CUresult};
    for d in devices {
        d.gpu.ctx.bind_to_thread()?;
        let ordinal = d.gpu.info.ordinal;
        let peers: Vec<&RankGpu> = devices.iter().filter(|p| p.gpu.info.ordinal != ordinal).collect();
        for peer in &peers {
            // SAFETY: both contexts are live; access already enabled is not an error here.
            match unsafe { sys::cuCtxEnablePeerAccess(peer.gpu.ctx.cu_ctx(), 0) } {
                CUresult::CUDA_SUCCESS | CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => {}
                e => bail!(
                    "GPU {ordinal} cannot reach GPU {}'s memory directly ({e:?}); use --exchange nccl",
                    peer.gpu.info.ordinal
                ),
            }
        }
        if peers.is_empty() {
            continue;
        }
        let access: Vec<sys::CUmemAccessDesc> = peers
            .iter()
            .map(|p| sys::CUmemAccessDesc {
                location: sys::CUmemLocation {
                    type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
                    id: p.gpu.info.ordinal as i32,
                },
                flags: sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
            })
            .collect();
        let mut pool = std::ptr::null_mut();
        // SAFETY: writes one handle, then grants the listed peers access to the pool's memory.
        unsafe {
            sys::cuDeviceGetMemPool(&mut pool, ordinal as i32)
                .result()
                .map_err(|e| anyhow!("GPU {ordinal} has no memory pool to share: {e:?}"))?;
            sys::cuMemPoolSetAccess(pool, access.as_ptr(), access.len())
                .result()
                .map_err(|e| anyhow!("GPU {ordinal}'s memory pool cannot be shared with its peers: {e:?}"))?;
        }
    }
    Ok(())
}

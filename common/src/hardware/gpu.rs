//! GPU plumbing: finding the device, its facts and peak rate, compiling kernels with NVRTC for
//! it, loading them, and reading back what each kernel costs in registers and shared memory.

use std::ffi::{CString, c_char};
use std::sync::{Arc, OnceLock};

use anyhow::{Context, Result, anyhow, bail};
use cudarc::driver::sys::{CUdevice_attribute as Attr, CUfunction_attribute as FnAttr};
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaStream};
use cudarc::nvrtc::{self, Ptx};

use crate::stream_hold::Hold;

/// The device limits that decide whether a kernel configuration can launch at all.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct LaunchLimits {
    pub max_threads_per_block: u32,
    /// Shared memory one block may use once it opts in above the 48 KB default.
    pub max_smem_per_block: u32,
}

impl LaunchLimits {
    /// Hopper (H100, H200): 1024 threads, 227 KB of opt-in shared memory per block.
    pub const SM90: LaunchLimits = LaunchLimits {
        max_threads_per_block: 1024,
        max_smem_per_block: ptx_model::profile::HOPPER_BLOCK_SHARED,
    };
    /// Ampere A100.
    pub const SM80: LaunchLimits = LaunchLimits { max_threads_per_block: 1024, max_smem_per_block: 166_912 };
    /// The most any supported GPU allows: what fails here fails everywhere, so a step's checks
    /// can run against it before a GPU is opened.
    pub const LARGEST: LaunchLimits = LaunchLimits::SM90;

    /// The two limits a warp-tiled block (steps 05 to 07) can exceed: its (BM/WM)·(BN/WN) warps
    /// of threads, and the bytes of the A and B tiles it stages in shared memory. `p` names the
    /// parameters in the message.
    pub fn check_warp_tiled_block(
        &self,
        p: &impl std::fmt::Display,
        threads: u32,
        smem_bytes: u32,
    ) -> Result<(), String> {
        if threads > self.max_threads_per_block {
            return Err(format!(
                "{p} gives (BM/WM)·(BN/WN) warps = {threads} threads per block, more than the {} allowed; raise WM or WN",
                self.max_threads_per_block
            ));
        }
        if smem_bytes > self.max_smem_per_block {
            return Err(format!(
                "{p} stages {smem_bytes} bytes of A and B in shared memory, more than the {} bytes a block may have; \
                 lower BK, BM or BN",
                self.max_smem_per_block
            ));
        }
        Ok(())
    }

    /// The limits of an architecture NVRTC can target (`sm_75` to `sm_120`), for checks made
    /// without its GPU; None for one this table does not know.
    pub fn for_arch(arch: &str) -> Option<LaunchLimits> {
        let smem = match arch.trim_end_matches('a') {
            "sm_75" => 65_536,
            "sm_80" | "sm_87" => 166_912,
            "sm_86" | "sm_89" | "sm_120" => 101_376,
            // Blackwell's sm_100 gives a block what Hopper does.
            "sm_90" | "sm_100" => ptx_model::profile::HOPPER_BLOCK_SHARED,
            _ => return None,
        };
        Some(LaunchLimits { max_threads_per_block: 1024, max_smem_per_block: smem })
    }
}

/// The compute capability an architecture name stands for: "sm_86" → (8, 6), "sm_90a" → (9, 0),
/// "sm_120" → (12, 0); None for a name that is not of that form.
pub fn compute_capability_of(arch: &str) -> Option<(i32, i32)> {
    let cc: i32 = arch.strip_prefix("sm_")?.trim_end_matches('a').parse().ok()?;
    Some((cc / 10, cc % 10))
}

/// Shared memory a block gets without opting in; above it the kernel needs
/// `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES` raised.
pub const DEFAULT_SMEM_PER_BLOCK: u32 = 48 * 1024;

/// Facts about the GPU a run opened, that the report and the checks use.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct GpuFacts {
    pub ordinal: usize,
    pub name: String,
    pub compute_capability: (i32, i32),
    pub sms: u32,
    pub clock_mhz: u32,
    pub limits: LaunchLimits,
    pub smem_per_sm: u32,
    pub regs_per_sm: u32,
    pub max_threads_per_sm: u32,
    pub max_blocks_per_sm: u32,
    pub l2_bytes: u32,
    pub total_mem: usize,
    pub driver_version: i32,
    /// Why NVML cannot read this GPU's clock and power (None where it can).
    pub nvml: Option<String>,
}

impl GpuFacts {
    /// FP32 lanes (FMA units) per SM, by architecture.
    pub fn fp32_lanes_per_sm(&self) -> u32 {
        match self.compute_capability {
            (7, _) | (8, 0) => 64,
            _ => 128,
        }
    }

    /// Dense TF32 tensor-core FLOPs per clock per SM, where one figure holds for the whole
    /// architecture: 1024 on sm_80 (A100), 2048 on sm_90 (H100, H200). The sm_86 and sm_89 parts
    /// differ by product (256 on GeForce cards, 512 on the data-centre ones), so they get none.
    pub fn tf32_flops_per_clock_per_sm(&self) -> Option<u32> {
        match self.compute_capability {
            (8, 0) => Some(1024),
            (9, 0) => Some(ptx_model::profile::HOPPER_TF32_RATE as u32),
            _ => None,
        }
    }

    /// Peak dense TF32 rate at the reported clock, where known.
    pub fn tf32_peak_gflops(&self) -> Option<f64> {
        let per_clock = self.tf32_flops_per_clock_per_sm()?;
        Some(f64::from(self.sms) * f64::from(per_clock) * f64::from(self.clock_mhz) / 1e3)
    }

    /// Peak FP32 rate: SMs × lanes × 2 FLOPs per FMA × clock.
    pub fn peak_gflops(&self) -> f64 {
        f64::from(self.sms) * f64::from(self.fp32_lanes_per_sm()) * 2.0 * f64::from(self.clock_mhz) / 1e3
    }

    /// The NVRTC target for this device's own architecture, e.g. `sm_90`.
    pub fn arch(&self) -> String {
        let (major, minor) = self.compute_capability;
        format!("sm_{major}{minor}")
    }
}

/// A context and a stream on one device, with its facts.
pub struct Gpu {
    pub ctx: Arc<CudaContext>,
    pub stream: Arc<CudaStream>,
    pub info: GpuFacts,
    /// The timing hold kernel, loaded on first use.
    hold: OnceLock<Hold>,
    /// The SM clock and power through NVML, or why they cannot be read.
    pub clocks: std::result::Result<crate::clock::Clocks, String>,
}

impl Gpu {
    /// The kernel [`crate::timing`] queues ahead of each timed batch.
    pub fn hold(&self) -> Result<&Hold> {
        if let Some(hold) = self.hold.get() {
            return Ok(hold);
        }
        let hold = Hold::new(&self.ctx)?;
        Ok(self.hold.get_or_init(|| hold))
    }
}

/// True when the CUDA driver library can be loaded. cudarc panics on first use otherwise.
pub fn driver_present() -> bool {
    // SAFETY: only tries to open the shared library.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

/// Turns NVRTC's cache of compiled kernels off for this process. With a CUDA driver present,
/// NVRTC (12.9 and later) keeps each kernel it compiled for a GPU and, compiling it again, takes
/// the kept one and prints no ptxas report; an emulated run reads its kernel's registers from
/// that report (the occupancy and the time model's issue order), so a second run of one kernel
/// on a machine with a GPU would read none and predict another time. To be called at the start
/// of `main`, before any other thread runs.
pub fn keep_ptxas_reports() {
    // SAFETY: called at the start of main, while the process has one thread, so nothing reads
    // the environment at the same time.
    unsafe { std::env::set_var("CUDA_CACHE_DISABLE", "1") };
}

/// True when libnvrtc can be loaded.
pub fn nvrtc_present() -> bool {
    // SAFETY: only tries to open the shared library.
    unsafe { cudarc::nvrtc::sys::is_culib_present() }
}

pub const NO_NVRTC: &str = "NVRTC (libnvrtc) was not found, and GPU steps compile their kernels \
     with it at run time: install the CUDA toolkit, or run `python3 -m pip install --target \
     ~/.cache/matmul-course/nvrtc-13.0.88 nvidia-cuda-nvrtc==13.0.88` and add \
     ~/.cache/matmul-course/nvrtc-13.0.88/nvidia/cu13/lib to LD_LIBRARY_PATH (the README's set-up)";

/// How many GPUs this machine has, or why it has none, in words that end a sentence.
pub fn count() -> std::result::Result<usize, String> {
    if !driver_present() {
        return Err("no NVIDIA driver (libcuda) was found on this machine".to_owned());
    }
    match CudaContext::device_count() {
        Ok(n) if n > 0 => Ok(n as usize),
        Ok(_) => Err("the driver reports no GPU on this machine".to_owned()),
        Err(e) => Err(format!("the driver found no usable GPU ({e:?})")),
    }
}

/// Opens device `ordinal`, with one sentence a learner can act on when there is none.
pub fn open(step: &str, ordinal: usize) -> Result<Gpu> {
    let count = count().map_err(|why| {
        anyhow!(
            "{step} needs an NVIDIA GPU and its driver, and {why}; \
             step01_cpu_naive runs without one (cargo run --release -p step01_cpu_naive)"
        )
    })?;
    if ordinal >= count {
        bail!("--device {ordinal} does not exist: this machine has {count} GPU(s), numbered from 0");
    }
    let ctx = CudaContext::new(ordinal).map_err(|e| anyhow!("could not open GPU {ordinal}: {e:?}"))?;
    // The launches keep their own order: cudarc's per-buffer event tracking would only add event
    // records around every launch, inside the timed region.
    // SAFETY: a buffer is used on a second stream only by the FP32 path (`Fp32Path::fork`), which
    // orders itself with events: it waits for what this stream queued before it, and this stream
    // waits for it (`Fp32Path::join`) before anything after the product.
    unsafe { ctx.disable_event_tracking() };
    let mut info = device_info(&ctx).context("reading the device's attributes")?;
    let stream = ctx.default_stream();
    let pci = |a: Attr| ctx.attribute(a).map(|v| v.max(0) as u32);
    let clocks = match (
        pci(Attr::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID),
        pci(Attr::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID),
        pci(Attr::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID),
    ) {
        (Ok(domain), Ok(bus), Ok(device)) => crate::clock::Clocks::open((domain, bus, device)),
        _ => Err("the driver gave no PCI address for the GPU".to_owned()),
    };
    info.nvml = clocks.as_ref().err().cloned();
    Ok(Gpu { ctx, stream, info, hold: OnceLock::new(), clocks })
}

fn device_info(ctx: &Arc<CudaContext>) -> Result<GpuFacts> {
    let attr = |a: Attr| -> Result<u32> { Ok(ctx.attribute(a)?.max(0) as u32) };
    let mut driver_version = 0;
    // SAFETY: writes one int.
    unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut driver_version) }.result()?;
    Ok(GpuFacts {
        ordinal: ctx.ordinal(),
        name: ctx.name()?,
        compute_capability: ctx.compute_capability()?,
        sms: attr(Attr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
        clock_mhz: attr(Attr::CU_DEVICE_ATTRIBUTE_CLOCK_RATE)? / 1000,
        limits: LaunchLimits {
            max_threads_per_block: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
            max_smem_per_block: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?,
        },
        smem_per_sm: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)?,
        regs_per_sm: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR)?,
        max_threads_per_sm: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)?,
        max_blocks_per_sm: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR)?,
        l2_bytes: attr(Attr::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?,
        total_mem: ctx.total_mem()?,
        driver_version,
        nvml: None,
    })
}

/// What ptxas reported for the kernel at compile time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PtxasInfo {
    pub registers: u32,
    pub static_smem: u32,
    pub stack_frame: u32,
    pub spill_stores: u32,
    pub spill_loads: u32,
}

impl PtxasInfo {
    /// Parses the `--ptxas-options=-v` report of the `matmul` entry point in an NVRTC log:
    ///
    /// ```text
    /// ptxas info    : Compiling entry function 'matmul' for 'sm_90'
    /// ptxas info    : Function properties for matmul
    /// ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
    /// ptxas info    : Used 40 registers, used 1 barriers, 8192 bytes smem, 392 bytes cmem[0]
    /// ```
    pub fn parse(log: &str) -> Option<Self> {
        Self::parse_entry(log, ENTRY)
    }

    /// The same for the entry point `entry`.
    pub fn parse_entry(log: &str, entry: &str) -> Option<Self> {
        let start = log.find(&format!("Compiling entry function '{entry}'"))?;
        let mut info = PtxasInfo::default();
        let mut seen = false;
        for line in log[start..].lines().skip(1) {
            if line.contains("Compiling entry function") {
                break;
            }
            for part in line.split(',').map(str::trim) {
                let number = |suffix: &str| -> Option<u32> {
                    let head = part.strip_suffix(suffix)?.trim();
                    head.rsplit([' ', '.']).next()?.parse().ok()
                };
                if let Some(v) = number("registers") {
                    info.registers = v;
                    seen = true;
                } else if let Some(v) = number("bytes smem") {
                    info.static_smem = v;
                } else if let Some(v) = number("bytes stack frame") {
                    info.stack_frame = v;
                } else if let Some(v) = number("bytes spill stores") {
                    info.spill_stores = v;
                } else if let Some(v) = number("bytes spill loads") {
                    info.spill_loads = v;
                }
            }
        }
        seen.then_some(info)
    }

    pub fn spill_bytes(&self) -> u32 {
        self.spill_stores + self.spill_loads
    }

    /// Every entry point of the log, in the order ptxas compiled them, with its report.
    pub fn entries(log: &str) -> Vec<(String, Self)> {
        let marker = "Compiling entry function '";
        let mut names: Vec<String> = Vec::new();
        for line in log.lines() {
            if let Some(at) = line.find(marker) {
                let rest = &line[at + marker.len()..];
                if let Some(end) = rest.find('\'') {
                    let name = rest[..end].to_owned();
                    if !names.contains(&name) {
                        names.push(name);
                    }
                }
            }
        }
        names.into_iter().filter_map(|n| Self::parse_entry(log, &n).map(|i| (n, i))).collect()
    }
}

/// A kernel compiled for one architecture.
#[derive(Clone, Debug)]
pub struct Compiled {
    pub arch: String,
    /// Machine code for `arch` (loaded directly: no JIT at load time).
    pub cubin: Vec<u8>,
    /// ptxas's report, when NVRTC's log carried one. NVRTC (CUDA 12.9 and later, on a machine
    /// with a driver) caches machine code; on a cache hit ptxas does not run and prints nothing.
    /// `CUDA_CACHE_DISABLE=1` turns the cache off. Without a report, the driver's figures stand in.
    pub ptxas: Option<PtxasInfo>,
    /// NVRTC's log, with ptxas's report.
    pub log: String,
    /// The names of the machine code's `.text.NAME` sections, read once: a launch may ask for an
    /// entry point every time, and scanning the whole cubin for one it lacks takes a fraction of
    /// a millisecond, long enough to leave the GPU idle between short kernels.
    pub functions: Vec<String>,
}

impl Compiled {
    pub fn new(arch: &str, cubin: Vec<u8>, ptxas: Option<PtxasInfo>, log: String) -> Compiled {
        let functions = text_sections(&cubin);
        Compiled { arch: arch.to_owned(), cubin, ptxas, log, functions }
    }

    /// Whether the machine code has a function `name`: a section `.text.name`. (Asking the
    /// driver for a missing function is an API error, which compute-sanitizer reports.) A
    /// `__device__` function of that name that the compiler did not inline has one too; loading
    /// it as an entry point then fails with its own message.
    pub fn has_function(&self, name: &str) -> bool {
        self.functions.iter().any(|f| f == name)
    }
}

/// Every name that follows `.text.` in the cubin up to its terminating NUL (the section names).
fn text_sections(cubin: &[u8]) -> Vec<String> {
    const TAG: &[u8] = b".text.";
    let mut names = Vec::new();
    let mut from = 0;
    while let Some(at) = cubin[from..].windows(TAG.len()).position(|w| w == TAG) {
        let start = from + at + TAG.len();
        let Some(len) = cubin[start..].iter().position(|&b| b == 0) else { break };
        names.push(String::from_utf8_lossy(&cubin[start..start + len]).into_owned());
        from = start + len;
    }
    names
}

// ANCHOR: offset_t
/// The define that compiles a kernel wide: `WIDE=1` (a step's parameter set carries it as
/// `params::WIDE`, set where a matrix passes 2³¹ − 1 elements).
pub const WIDE_DEFINE: &str = "WIDE";

/// The `-D` option every compile adds to its defines: `offset_t`, the type the kernels give an
/// offset into A, B or C, is `long long` where the defines set `WIDE=1` and `int` everywhere else,
/// so that a kernel at every other shape compiles to the code it always has.
pub fn offset_type(defines: &[(String, u32)]) -> String {
    let wide = defines.iter().any(|(name, value)| name == WIDE_DEFINE && *value == 1);
    format!("-Doffset_t={}", if wide { "long long" } else { "int" })
}
// ANCHOR_END: offset_t

/// Compiles `source` with NVRTC for `arch` (e.g. `sm_90`), with `-D NAME=value` for each define
/// (and [`offset_type`]'s).
/// `file` names the source in diagnostics, so a compile error points at the file a learner edits.
pub fn compile(source: &str, file: &str, arch: &str, defines: &[(String, u32)]) -> Result<Compiled> {
    if !nvrtc_present() {
        bail!("{NO_NVRTC}");
    }
    compile_once(source, file, arch, defines)
}

fn compile_once(source: &str, file: &str, arch: &str, defines: &[(String, u32)]) -> Result<Compiled> {
    let mut options =
        vec![format!("--gpu-architecture={arch}"), "--std=c++17".to_owned(), "--ptxas-options=-v".to_owned()];
    options.extend(defines.iter().map(|(name, value)| format!("-D{name}={value}")));
    options.push(offset_type(defines));
    nvrtc_program(source, file, arch, &options, |prog, log| {
        // SAFETY: `nvrtc_program` hands over a live, successfully compiled program.
        let cubin = unsafe { get_cubin(prog) }?;
        Ok(Compiled::new(arch, cubin, PtxasInfo::parse(log), log.to_owned()))
    })
}

/// Compiles `source` (named `file` in diagnostics) with NVRTC and `options`, and hands the
/// compiled program and NVRTC's log to `output`, which reads what it needs before the program is
/// destroyed; a source that does not compile gives NVRTC's log, as a compile for `target`.
pub(crate) fn nvrtc_program<T>(
    source: &str,
    file: &str,
    target: &str,
    options: &[String],
    output: impl FnOnce(nvrtc::sys::nvrtcProgram, &str) -> Result<T>,
) -> Result<T> {
    let src = CString::new(source).context("the kernel source contains a NUL byte")?;
    let name = CString::new(file).context("the kernel file name contains a NUL byte")?;
    let prog = nvrtc::result::create_program(&src, Some(&name))
        .map_err(|e| anyhow!("NVRTC could not create a program for {file}: {e:?}"))?;
    // SAFETY: `prog` was created above and is destroyed once, at the end.
    unsafe {
        let compiled = nvrtc::result::compile_program(prog, options);
        let log = nvrtc::result::get_program_log(prog).map(|l| c_text(&l)).unwrap_or_default();
        let result = match compiled {
            Err(_) => Err(anyhow!(
                "the kernel {file} does not compile for {target}; NVRTC says:\n{}",
                log.trim_end()
            )),
            Ok(()) => output(prog, &log),
        };
        let _ = nvrtc::result::destroy_program(prog);
        result
    }
}

pub(crate) fn c_text(bytes: &[c_char]) -> String {
    let bytes: Vec<u8> = bytes.iter().map(|&c| c as u8).take_while(|&b| b != 0).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// # Safety
/// `prog` must be a live, successfully compiled program.
unsafe fn get_cubin(prog: nvrtc::sys::nvrtcProgram) -> Result<Vec<u8>> {
    let mut size = 0usize;
    // SAFETY: per the caller's contract; the buffer has the size NVRTC asked for.
    unsafe {
        nvrtc::sys::nvrtcGetCUBINSize(prog, &mut size)
            .result()
            .map_err(|e| anyhow!("NVRTC gave no machine code: {e:?}"))?;
        let mut cubin = vec![0u8; size];
        nvrtc::sys::nvrtcGetCUBIN(prog, cubin.as_mut_ptr().cast())
            .result()
            .map_err(|e| anyhow!("NVRTC gave no machine code: {e:?}"))?;
        Ok(cubin)
    }
}

/// What one launch configuration of a loaded kernel costs on the device.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Resources {
    pub registers: u32,
    pub static_smem: u32,
    pub dynamic_smem: u32,
    /// Local memory per thread (stack frame and spills), as the driver reports it.
    pub local_bytes: u32,
    /// Bytes spilled to local memory per ptxas; the driver's local bytes when ptxas said nothing.
    pub spill_bytes: u32,
    /// Of them, the bytes spill code stores and loads a thread (ptxas; 0 and 0 without its report).
    pub spill_stores: u32,
    pub spill_loads: u32,
    pub threads_per_block: u32,
    pub blocks_per_sm: u32,
    /// Resident warps over the SM's maximum.
    pub occupancy: f64,
    /// Blocks the whole GPU holds at once: its SMs times `blocks_per_sm`, or for a kernel
    /// compiled with a cluster size (`__cluster_dims__`) the whole clusters the driver can place
    /// (a cluster's blocks must share a GPC, whose SMs may not all be filled).
    pub resident_blocks: u32,
}

/// A kernel loaded on the device, ready to launch (a clone shares the loaded module).
#[derive(Clone)]
pub struct Kernel {
    pub func: CudaFunction,
    pub compiled: Compiled,
    module: Arc<CudaModule>,
}

/// The entry point every step exports.
pub const ENTRY: &str = "matmul";

impl Kernel {
    pub fn load(gpu: &Gpu, compiled: Compiled) -> Result<Self> {
        Self::load_entry(gpu, compiled, ENTRY)
    }

    /// Loads the function `entry` of the compiled module (steps export `matmul`).
    pub fn load_entry(gpu: &Gpu, compiled: Compiled, entry: &str) -> Result<Self> {
        let module = gpu
            .ctx
            .load_module(Ptx::from_binary(compiled.cubin.clone()))
            .map_err(|e| anyhow!("the driver could not load the compiled kernel: {e:?}"))?;
        let func = module.load_function(entry).map_err(|_| {
            anyhow!("the kernel has no `extern \"C\" __global__ void {entry}(...)` entry point")
        })?;
        Ok(Self { func, compiled, module })
    }

    /// Whether the module has a function `name` (see [`Compiled::has_function`]).
    pub fn has_entry(&self, name: &str) -> bool {
        self.compiled.has_function(name)
    }

    /// Another entry point of the same module, such as a step's `split_a`.
    pub fn entry(&self, name: &str) -> Result<CudaFunction> {
        self.module
            .load_function(name)
            .map_err(|_| anyhow!("the kernel has no `extern \"C\" __global__ void {name}(...)` entry point"))
    }

    /// Local memory per thread of the entry point `name` (stack frame and spills), as the driver
    /// reports it.
    pub fn local_bytes(&self, name: &str) -> Result<u32> {
        let bytes = self.entry(name)?.get_attribute(FnAttr::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES);
        Ok(bytes.map_err(|e| anyhow!("reading a kernel attribute: {e:?}"))?.max(0) as u32)
    }

    /// Lets the kernel use `dynamic_smem` bytes of dynamic shared memory (needed above 48 KB)
    /// and reports its resources at `threads_per_block`.
    pub fn resources(&self, info: &GpuFacts, threads_per_block: u32, dynamic_smem: u32) -> Result<Resources> {
        let get = |a: FnAttr| -> Result<u32> {
            Ok(self.func.get_attribute(a).map_err(|e| anyhow!("reading a kernel attribute: {e:?}"))?.max(0)
                as u32)
        };
        let static_smem = get(FnAttr::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?;
        if static_smem + dynamic_smem > info.limits.max_smem_per_block {
            bail!(
                "the kernel needs {} bytes of shared memory per block, more than the {} bytes this GPU allows",
                static_smem + dynamic_smem,
                info.limits.max_smem_per_block
            );
        }
        self.func
            .set_attribute(FnAttr::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, dynamic_smem as i32)
            .map_err(|e| anyhow!("could not allow {dynamic_smem} bytes of dynamic shared memory: {e:?}"))?;
        let blocks_per_sm = self
            .func
            .occupancy_max_active_blocks_per_multiprocessor(threads_per_block, dynamic_smem as usize, None)
            .map_err(|e| anyhow!("the driver's occupancy calculator failed: {e:?}"))?;
        let cluster = get(FnAttr::CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH)?;
        let resident_blocks = if cluster > 1 && blocks_per_sm > 0 {
            cluster * self.max_active_clusters((cluster * info.sms, threads_per_block, dynamic_smem))?
        } else {
            info.sms * blocks_per_sm
        };
        let warps_per_block = threads_per_block.div_ceil(32);
        let max_warps = (info.max_threads_per_sm / 32).max(1);
        let local_bytes = get(FnAttr::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)?;
        Ok(Resources {
            registers: get(FnAttr::CU_FUNC_ATTRIBUTE_NUM_REGS)?,
            static_smem,
            dynamic_smem,
            local_bytes,
            spill_bytes: self.compiled.ptxas.map_or(local_bytes, |p| p.spill_bytes()),
            spill_stores: self.compiled.ptxas.map_or(0, |p| p.spill_stores),
            spill_loads: self.compiled.ptxas.map_or(0, |p| p.spill_loads),
            threads_per_block,
            blocks_per_sm,
            occupancy: f64::from(blocks_per_sm * warps_per_block) / f64::from(max_warps),
            resident_blocks,
        })
    }

    /// The clusters of the kernel's compiled size that the GPU holds at once, for a launch of
    /// `grid` blocks of `threads` with `dynamic_smem` bytes each.
    fn max_active_clusters(&self, (grid, threads, dynamic_smem): (u32, u32, u32)) -> Result<u32> {
        let config = cudarc::driver::sys::CUlaunchConfig {
            gridDimX: grid,
            gridDimY: 1,
            gridDimZ: 1,
            blockDimX: threads,
            blockDimY: 1,
            blockDimZ: 1,
            sharedMemBytes: dynamic_smem,
            hStream: std::ptr::null_mut(),
            attrs: std::ptr::null_mut(),
            numAttrs: 0,
        };
        let mut clusters = 0;
        // SAFETY: the function belongs to the current context (bound by `get_attribute` above),
        // the config has no attributes, and the count is written in place.
        unsafe {
            cudarc::driver::sys::cuOccupancyMaxActiveClusters(&mut clusters, self.func.cu_function(), &config)
        }
        .result()
        .map_err(|e| anyhow!("the driver's cluster occupancy calculator failed: {e:?}"))?;
        Ok(clusters.max(0) as u32)
    }
}

/// The version of the loaded NVRTC library, e.g. (13, 0).
pub fn nvrtc_version() -> Option<(i32, i32)> {
    if !nvrtc_present() {
        return None;
    }
    let (mut major, mut minor) = (0, 0);
    // SAFETY: writes two ints.
    unsafe { nvrtc::sys::nvrtcVersion(&mut major, &mut minor) }.result().ok()?;
    Some((major, minor))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The functions are the `.text.NAME` sections' names, whole: a name that only begins
    /// another, or a section that is not code, is not one.
    #[test]
    fn a_cubins_functions_are_its_text_sections() {
        let cubin =
            b"\x7fELF\0.shstrtab\0.text.matmul_cut\0.nv.shared.sum\0.rel.text.matmul\0.text.sum_few\0"
                .to_vec();
        let c = Compiled::new("sm_90a", cubin, None, String::new());
        assert_eq!(c.functions, ["matmul_cut", "matmul", "sum_few"]);
        assert!(c.has_function("matmul") && c.has_function("matmul_cut") && c.has_function("sum_few"));
        assert!(!c.has_function("matmul_c") && !c.has_function("sum") && !c.has_function("shstrtab"));
        // A name cut off by the end of the data is not a function.
        assert!(Compiled::new("sm_90a", b".text.matmul".to_vec(), None, String::new()).functions.is_empty());
    }

    #[test]
    fn architecture_names_give_their_compute_capability() {
        assert_eq!(compute_capability_of("sm_75"), Some((7, 5)));
        assert_eq!(compute_capability_of("sm_90a"), Some((9, 0)));
        assert_eq!(compute_capability_of("sm_120"), Some((12, 0)));
        assert_eq!(compute_capability_of("compute_90"), None);
    }

    #[test]
    fn parses_the_ptxas_report() {
        let log = "ptxas info    : 0 bytes gmem\n\
                   ptxas info    : Compiling entry function 'matmul' for 'sm_90'\n\
                   ptxas info    : Function properties for matmul\n\
                   ptxas         .     8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n\
                   ptxas info    : Used 40 registers, used 1 barriers, 8192 bytes smem, 392 bytes cmem[0]\n\
                   ptxas info    : Compile time = 6.509 ms\n";
        let info = PtxasInfo::parse(log).unwrap();
        assert_eq!(
            info,
            PtxasInfo { registers: 40, static_smem: 8192, stack_frame: 8, spill_stores: 4, spill_loads: 12 }
        );
        assert_eq!(info.spill_bytes(), 16);
        assert_eq!(PtxasInfo::parse("no report here"), None);
    }

    /// Every entry point of a log, in ptxas's order, each with its own figures: the twin's
    /// spills are not the product's.
    #[test]
    fn lists_every_entry_point_of_the_report() {
        let log = "ptxas info    : Compiling entry function 'matmul_cut' for 'sm_90a'\n\
                   ptxas info    : Function properties for matmul_cut\n\
                   ptxas         .     8 bytes stack frame, 24 bytes spill stores, 20 bytes spill loads\n\
                   ptxas info    : Used 168 registers, used 1 barriers, 16 bytes smem\n\
                   ptxas info    : Compiling entry function 'matmul' for 'sm_90a'\n\
                   ptxas info    : Function properties for matmul\n\
                   ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n\
                   ptxas info    : Used 168 registers, used 1 barriers\n";
        let entries = PtxasInfo::entries(log);
        let names: Vec<&str> = entries.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["matmul_cut", "matmul"]);
        assert_eq!((entries[0].1.spill_bytes(), entries[1].1.spill_bytes()), (44, 0));
        assert_eq!(entries[0].1.static_smem, 16);
        assert!(PtxasInfo::entries("no report").is_empty());
    }

    #[test]
    fn peak_from_the_device_facts() {
        let h100 = GpuFacts {
            ordinal: 0,
            name: "H100".into(),
            compute_capability: (9, 0),
            sms: 132,
            clock_mhz: 1980,
            limits: LaunchLimits::SM90,
            smem_per_sm: 233_472,
            regs_per_sm: 65_536,
            max_threads_per_sm: 2048,
            max_blocks_per_sm: 32,
            l2_bytes: 50 << 20,
            total_mem: 80 << 30,
            driver_version: 13000,
            nvml: None,
        };
        assert_eq!(h100.arch(), "sm_90");
        assert_eq!(h100.fp32_lanes_per_sm(), 128);
        assert!((h100.peak_gflops() - 66_908.16).abs() < 1e-6);
        let a100 = GpuFacts { compute_capability: (8, 0), sms: 108, clock_mhz: 1410, ..h100 };
        assert!((a100.peak_gflops() - 19_491.84).abs() < 1e-6);
    }
}

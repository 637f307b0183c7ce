//! [`Queue`] on a GPU: kernels queued on the context's stream (or a second stream between
//! `fork` and `join`), workspaces kept from product to product in [`GpuState`], tensor maps
//! encoded by the driver (the last few kept, since encoding takes a call into the driver).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use anyhow::{Result, anyhow, bail};
use cudarc::driver::sys::{self, CUfunction_attribute as FnAttr};
use cudarc::driver::{
    CudaEvent, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtr, LaunchConfig, PushKernelArg,
};
use cudarc::nvrtc::Ptx;

use crate::gpu::{Compiled, Gpu, Kernel};
use crate::queue::{CudaSource, KernelArg, LaunchShape, Queue};
use crate::tma::{Element, EncodedMap, TmaBox, encode_as};

/// What a step kernel's queue keeps from product to product on the GPU.
#[derive(Default)]
pub struct GpuState {
    /// Entry points found so far, with the dynamic shared memory each has been allowed (asked of
    /// the driver for any: a kernel's static and dynamic shared memory together past 48 KiB
    /// need it).
    functions: HashMap<String, (CudaFunction, u32)>,
    /// Modules loaded beside the step's, by file.
    modules: Vec<(String, Compiled, Arc<CudaModule>)>,
    workspaces: HashMap<&'static str, CudaSlice<u8>>,
    /// The buffers [`Queue::upload`] made, by address.
    buffers: HashMap<u64, CudaSlice<f32>>,
    /// The maps encoded last, and what each was encoded for.
    maps: Vec<(MapKey, EncodedMap)>,
    /// The second stream, made at the first fork; whether kernels go to it now, and whether
    /// it has work the product's stream has not waited for.
    side: Option<Side>,
    forked: bool,
    pending: bool,
    /// Whether the next product times its part apart, and the events of the last that did.
    timing: bool,
    timer: Option<[CudaEvent; 2]>,
    timed: bool,
    /// Whether the modules loaded beside the step's compile [`WIDE`](crate::params::WIDE), as
    /// the step's kernel does.
    wide: bool,
}

/// What a map is encoded for: the element, the address, the dimensions and the box.
type MapKey = (Element, u64, [usize; 4], TmaBox);

/// A second stream, and the events that start it after the product's stream and join it back.
struct Side {
    stream: Arc<CudaStream>,
    start: CudaEvent,
    done: CudaEvent,
}

impl GpuState {
    /// The state of a step kernel compiled [`WIDE`](crate::params::WIDE) or not: the modules
    /// loaded beside it compile the same way.
    pub fn compiled_wide(wide: bool) -> Self {
        Self { wide, ..Self::default() }
    }

    /// The next product times the part between `time_from` and `time_to` apart (on the product's
    /// stream: a timed part does not fork).
    pub fn time_next(&mut self) {
        self.timing = true;
    }

    /// After a product: a part is timed apart in the one product that asked.
    pub fn end_product(&mut self) {
        self.timing = false;
        self.forked = false;
        self.pending = false;
    }
}

/// One product's queue on the GPU: the step's kernel and the state it keeps.
pub struct GpuQueue<'q> {
    gpu: &'q Gpu,
    /// The step's kernel (None for a queue of modules loaded alone).
    kernel: Option<&'q Kernel>,
    state: &'q mut GpuState,
}

/// Compiled modules by file, architecture and source.
type CompileCache = Mutex<HashMap<(String, String, String, bool), Compiled>>;

/// The defines of a module compiled [`WIDE`](crate::params::WIDE) or not: `WIDE=1`, or none.
pub(crate) fn wide_define(wide: bool) -> Vec<(String, u32)> {
    if wide { vec![(crate::params::WIDE.name.to_owned(), 1)] } else { Vec::new() }
}

impl<'q> GpuQueue<'q> {
    pub fn new(gpu: &'q Gpu, kernel: &'q Kernel, state: &'q mut GpuState) -> Self {
        GpuQueue { gpu, kernel: Some(kernel), state }
    }

    /// A queue with no step kernel, for modules loaded into it alone ([`Queue::load`]).
    pub fn bare(gpu: &'q Gpu, state: &'q mut GpuState) -> Self {
        GpuQueue { gpu, kernel: None, state }
    }

    fn stream(&self) -> &Arc<CudaStream> {
        match (&self.state.side, self.state.forked) {
            (Some(side), true) => &side.stream,
            _ => &self.gpu.stream,
        }
    }

    /// Entry point `entry` of a loaded module, allowed `smem` bytes of dynamic shared memory.
    fn function(&mut self, entry: &str, smem: u32) -> Result<CudaFunction> {
        if !self.state.functions.contains_key(entry) {
            let found = match self.kernel.filter(|k| k.has_entry(entry)) {
                Some(kernel) => Some(kernel.entry(entry)?),
                None => self
                    .state
                    .modules
                    .iter()
                    .find(|(_, c, _)| c.has_function(entry))
                    .map(|(_, _, m)| m.load_function(entry))
                    .transpose()
                    .map_err(|e| anyhow!("the driver could not find {entry}: {e:?}"))?,
            };
            let Some(function) = found else {
                bail!("the kernel has no `extern \"C\" __global__ void {entry}(...)` entry point");
            };
            self.state.functions.insert(entry.to_owned(), (function, 0));
        }
        let (function, allowed) = self.state.functions.get_mut(entry).expect("found above");
        if smem > *allowed {
            function
                .set_attribute(FnAttr::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem as i32)
                .map_err(|e| anyhow!("could not give {entry} {smem} bytes of shared memory: {e:?}"))?;
            *allowed = smem;
        }
        Ok(function.clone())
    }

    fn queue(&mut self, entry: &str, launch: LaunchShape, args: &[KernelArg]) -> Result<()> {
        let function = self.function(entry, launch.smem)?;
        let mut builder = self.stream().launch_builder(&function);
        for arg in args {
            match arg {
                KernelArg::I32(v) => builder.arg(v),
                KernelArg::I64(v) => builder.arg(v),
                KernelArg::Ptr(p) => builder.arg(p),
                KernelArg::Map(m) => builder.arg(m),
            };
        }
        let cfg =
            LaunchConfig { grid_dim: launch.grid, block_dim: launch.block, shared_mem_bytes: launch.smem };
        // SAFETY: each step's launch gives the arguments its kernels declare (listed in the
        // step's module docs), in order, with device addresses of buffers that hold what the
        // kernel addresses for the shape: the operands (checked by common's launch) and the
        // workspaces, sized by the step for the shape and kept alive in `GpuState` until a later
        // product grows them, after this one in stream order.
        unsafe { builder.launch(cfg) }
            .map_err(|e| anyhow!("the kernel's {entry} failed to launch: {e:?}"))?;
        Ok(())
    }

    /// Workspace `name`, made (zeroed) on the stream that uses it first.
    fn slot(&mut self, name: &'static str, bytes: usize) -> Result<&mut CudaSlice<u8>> {
        let bytes = bytes.max(1);
        if self.state.workspaces.get(name).is_none_or(|w| w.len() < bytes) {
            self.state.workspaces.remove(name);
            let w = self
                .stream()
                .alloc_zeros::<u8>(bytes)
                .map_err(|e| anyhow!("allocating {name} ({bytes} bytes): {e:?}"))?;
            self.state.workspaces.insert(name, w);
        }
        Ok(self.state.workspaces.get_mut(name).expect("allocated above"))
    }

    fn event(&self, flags: sys::CUevent_flags) -> Result<CudaEvent> {
        self.gpu.ctx.new_event(Some(flags)).map_err(|e| anyhow!("creating an event: {e:?}"))
    }
}

/// Compiles `module` for `arch`, [`WIDE`](crate::params::WIDE) or not, once per source.
fn compiled(module: CudaSource, arch: &str, wide: bool) -> Result<Compiled> {
    static CACHE: OnceLock<CompileCache> = OnceLock::new();
    let key = (module.file.to_owned(), arch.to_owned(), module.source.to_owned(), wide);
    let cache = CACHE.get_or_init(Mutex::default);
    if let Some(c) = cache.lock().map_err(|_| anyhow!("the compile cache lock was poisoned"))?.get(&key) {
        return Ok(c.clone());
    }
    let c = crate::gpu::compile(module.source, module.file, arch, &wide_define(wide))?;
    cache.lock().map_err(|_| anyhow!("the compile cache lock was poisoned"))?.insert(key, c.clone());
    Ok(c)
}

impl Queue for GpuQueue<'_> {
    fn has_entry(&self, entry: &str) -> bool {
        self.kernel.is_some_and(|k| k.has_entry(entry))
            || self.state.modules.iter().any(|(_, c, _)| c.has_function(entry))
    }

    fn load(&mut self, module: CudaSource) -> Result<()> {
        if self.state.modules.iter().any(|(file, _, _)| file == module.file) {
            return Ok(());
        }
        let compiled = compiled(module, &self.gpu.info.arch(), self.state.wide)?;
        let loaded = self
            .gpu
            .ctx
            .load_module(Ptx::from_binary(compiled.cubin.clone()))
            .map_err(|e| anyhow!("the driver could not load {}: {e:?}", module.file))?;
        self.state.modules.push((module.file.to_owned(), compiled, loaded));
        Ok(())
    }

    fn launch(&mut self, entry: &str, launch: LaunchShape, args: &[KernelArg]) -> Result<()> {
        self.queue(entry, launch, args)
    }

    fn launch_matmul(&mut self, entry: &str, launch: LaunchShape, args: &[KernelArg]) -> Result<()> {
        // The driver passes a kernel the parameters it declares: a stage's fewer are fine.
        self.queue(entry, launch, args)
    }

    fn workspace(&mut self, name: &'static str, bytes: usize) -> Result<u64> {
        let stream = self.stream().clone();
        Ok(self.slot(name, bytes)?.device_ptr(&stream).0)
    }

    fn zeroed(&mut self, name: &'static str, bytes: usize) -> Result<u64> {
        let stream = self.stream().clone();
        let w = self.slot(name, bytes)?;
        stream.memset_zeros(w).map_err(|e| anyhow!("zeroing {name}: {e:?}"))?;
        Ok(w.device_ptr(&stream).0)
    }

    fn poisoned(&mut self, name: &'static str, bytes: usize) -> Result<u64> {
        self.workspace(name, bytes)
    }

    fn read_i32(&mut self, name: &'static str, from: usize, len: usize) -> Result<Option<Vec<i32>>> {
        let Some(w) = self.state.workspaces.get(name) else { return Ok(None) };
        if 4 * (from + len) > w.len() {
            bail!("reading ints {from} to {} of {name}, which holds {} bytes", from + len, w.len());
        }
        let mut bytes = vec![0u8; 4 * len];
        self.gpu
            .stream
            .memcpy_dtoh(&w.slice(4 * from..4 * (from + len)), &mut bytes)
            .map_err(|e| anyhow!("reading {name}: {e:?}"))?;
        self.gpu.stream.synchronize().map_err(|e| anyhow!("reading {name}: {e:?}"))?;
        Ok(Some(bytes.chunks_exact(4).map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()))
    }

    fn encode(&mut self, element: Element, ptr: u64, dims: [usize; 4], bx: TmaBox) -> Result<EncodedMap> {
        let key = (element, ptr, dims, bx);
        if let Some((_, map)) = self.state.maps.iter().find(|(k, _)| *k == key) {
            return Ok(*map);
        }
        let map = encode_as(element, ptr, dims, bx)?;
        self.state.maps.truncate(7);
        self.state.maps.insert(0, (key, map));
        Ok(map)
    }

    fn upload(&mut self, name: &'static str, data: &[f32]) -> Result<u64> {
        let buffer = self
            .gpu
            .stream
            .clone_htod(data)
            .map_err(|e| anyhow!("copying {name} to the GPU failed: {e:?}"))?;
        let ptr = buffer.device_ptr(&self.gpu.stream).0;
        self.state.buffers.insert(ptr, buffer);
        Ok(ptr)
    }

    fn download(&mut self, ptr: u64, len: usize) -> Result<Vec<f32>> {
        let Some(buffer) = self.state.buffers.get(&ptr) else {
            bail!("no buffer the queue made starts at {ptr:#x}");
        };
        if len > buffer.len() {
            bail!("reading {len} floats of a buffer of {}", buffer.len());
        }
        let mut out = vec![0.0f32; len];
        self.gpu
            .stream
            .memcpy_dtoh(&buffer.slice(..len), &mut out)
            .map_err(|e| anyhow!("copying a result back from the GPU failed: {e:?}"))?;
        self.gpu.stream.synchronize().map_err(|e| anyhow!("copying a result back: {e:?}"))?;
        Ok(out)
    }

    fn free(&mut self, ptr: u64) -> Result<()> {
        self.state.buffers.remove(&ptr);
        Ok(())
    }

    fn fork(&mut self) -> Result<()> {
        if self.state.timing {
            // A part timed apart runs on the product's stream, between its own events.
            return Ok(());
        }
        if self.state.side.is_none() {
            let no_timing = sys::CUevent_flags::CU_EVENT_DISABLE_TIMING;
            let stream = self.gpu.ctx.new_stream().map_err(|e| anyhow!("creating a second stream: {e:?}"))?;
            self.state.side =
                Some(Side { stream, start: self.event(no_timing)?, done: self.event(no_timing)? });
        }
        let side = self.state.side.as_ref().expect("made above");
        side.start.record(&self.gpu.stream).map_err(|e| anyhow!("recording an event: {e:?}"))?;
        side.stream.wait(&side.start).map_err(|e| anyhow!("starting the second stream: {e:?}"))?;
        self.state.forked = true;
        self.state.pending = true;
        Ok(())
    }

    fn resume(&mut self) -> Result<()> {
        self.state.forked = false;
        Ok(())
    }

    fn join(&mut self) -> Result<()> {
        if let (Some(side), true) = (&self.state.side, self.state.pending) {
            side.done.record(&side.stream).map_err(|e| anyhow!("recording an event: {e:?}"))?;
            self.gpu.stream.wait(&side.done).map_err(|e| anyhow!("waiting for the second stream: {e:?}"))?;
        }
        self.state.forked = false;
        self.state.pending = false;
        Ok(())
    }

    fn time_from(&mut self) -> Result<()> {
        if !self.state.timing {
            return Ok(());
        }
        let flags = sys::CUevent_flags::CU_EVENT_DEFAULT;
        let events = [self.event(flags)?, self.event(flags)?];
        events[0].record(self.stream()).map_err(|e| anyhow!("recording an event: {e:?}"))?;
        self.state.timer = Some(events);
        Ok(())
    }

    fn time_to(&mut self) -> Result<()> {
        if let (Some([_, stop]), true) = (&self.state.timer, self.state.timing) {
            stop.record(self.stream()).map_err(|e| anyhow!("recording an event: {e:?}"))?;
            self.state.timed = true;
            self.state.timing = false;
        }
        Ok(())
    }

    fn timed_ms(&mut self) -> Result<Option<f64>> {
        match (self.state.timer.take(), std::mem::take(&mut self.state.timed)) {
            (Some([start, stop]), true) => {
                let ms = start.elapsed_ms(&stop).map_err(|e| anyhow!("reading an event: {e:?}"))?;
                Ok(Some(f64::from(ms)))
            }
            _ => Ok(None),
        }
    }
}

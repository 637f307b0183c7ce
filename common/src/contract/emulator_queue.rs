//! [`Queue`] on the PTX emulator: each kernel run to completion on the CPU as it is queued,
//! workspaces kept from product to product in [`EmulatorState`] (so a second product reads what
//! the first left, as on a GPU), tensor maps encoded by the emulator from the parameters the host
//! gives the driver on a GPU. What the emulator alone adds hangs off it: the sanitizer, the
//! traffic of each kernel, and the launches recorded for the time model's replay.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use anyhow::{Result, anyhow};

use crate::emulated::{self, Arg, Config, Emulator, Recorded, Swizzle, TensorMap, Traffic};
use crate::queue::{CudaSource, KernelArg, LaunchShape, Queue};
use crate::tma::{Element, EncodedMap, TmaBox};

/// What an emulated step keeps from product to product, and what its launches moved.
#[derive(Default)]
pub struct EmulatorState {
    /// Each workspace's address and bytes.
    workspaces: HashMap<&'static str, (u64, usize)>,
    /// The files of the modules loaded beside the step's.
    loaded: Vec<String>,
    /// What the step's own kernel moved, added up over its launches.
    pub traffic: Traffic,
    /// What each other kernel moved, launch by launch.
    pub others: Vec<(String, Traffic)>,
    /// The step's own kernel's launches as the emulator recorded them for the time model's
    /// replay, where the machine records.
    pub recorded: Vec<Recorded>,
    /// The seconds the emulation of the step's own kernel took, over its launches (the rest of
    /// a product, copies and uploads, runs whole in a scaled run too).
    pub own_seconds: f64,
    /// Whether the modules loaded beside the step's compile [`WIDE`](crate::params::WIDE), as
    /// the step's kernel does.
    wide: bool,
}

impl EmulatorState {
    /// The state of a step kernel compiled [`WIDE`](crate::params::WIDE) or not: the modules
    /// loaded beside it compile the same way.
    pub fn compiled_wide(wide: bool) -> Self {
        Self { wide, ..Self::default() }
    }

    /// Frees every workspace.
    pub fn free(&mut self, machine: &mut Emulator) {
        for (_, (at, _)) in self.workspaces.drain() {
            machine.free(at);
        }
    }
}

/// One product's queue on the emulator.
pub struct EmulatorQueue<'q> {
    machine: &'q mut Emulator,
    state: &'q mut EmulatorState,
    /// Watch shared memory for races.
    sanitize: bool,
}

impl<'q> EmulatorQueue<'q> {
    pub fn new(machine: &'q mut Emulator, state: &'q mut EmulatorState, sanitize: bool) -> Self {
        machine.next_product();
        EmulatorQueue { machine, state, sanitize }
    }

    fn config(&self, launch: LaunchShape) -> Config {
        Config {
            grid: launch.grid,
            block: launch.block,
            dynamic_shared: launch.smem,
            sanitize: self.sanitize,
        }
    }

    /// Runs `entry`: the step's `own` kernel, or one around it; `scaled` where a scaled run may
    /// run it scaled (the step's kernel, and those [`Queue::launch_scaled`] queues).
    fn run(
        &mut self,
        entry: &str,
        launch: LaunchShape,
        args: &[KernelArg],
        (own, scaled): (bool, bool),
    ) -> Result<()> {
        let mut args: Vec<Arg> = args.iter().map(|&a| emulator_arg(a)).collect();
        if own {
            // A stage declares fewer parameters: it is given those it declares, as on a GPU.
            args.truncate(self.machine.parameters(entry).unwrap_or(args.len()));
        }
        let config = self.config(launch);
        // A scaled run scales the step's own kernel, and the kernels queued as each block's own
        // elements of its result (step 11's rebuild of C); the others run whole, since what they
        // write steers the product (step 11's moduli, step 09's paths) or one another. One that a
        // scaled run cannot take runs whole too.
        let scale = self.machine.scale;
        self.machine.scale = scale && scaled;
        let started = std::time::Instant::now();
        // The emulator's own error is kept (not its text alone), so that a caller can tell a
        // scaled run it cannot take ([`emulated::EmulatorError::NotScalable`]) from a fault.
        let mut traffic = self.machine.launch(entry, config, &args).map_err(anyhow::Error::from);
        let refused = |t: &Result<Traffic>| matches!(t, Err(e) if matches!(e.downcast_ref(), Some(emulated::EmulatorError::NotScalable(_))));
        if !own && self.machine.scale && refused(&traffic) {
            self.machine.scale = false;
            traffic = self.machine.launch(entry, config, &args).map_err(anyhow::Error::from);
        }
        if own {
            self.state.own_seconds += started.elapsed().as_secs_f64();
        }
        self.machine.scale = scale;
        let recorded = self.machine.take_replays();
        let traffic = traffic?;
        if own {
            self.state.recorded.extend(recorded);
        }
        match own {
            true => self.state.traffic.add(&traffic),
            false => self.state.others.push((entry.to_owned(), traffic)),
        }
        Ok(())
    }
}

fn emulator_arg(arg: KernelArg) -> Arg {
    match arg {
        KernelArg::I32(v) => Arg::I32(v),
        KernelArg::I64(v) => Arg::I64(v),
        KernelArg::Ptr(p) => Arg::Ptr(p),
        KernelArg::Map(m) => Arg::Map(m),
    }
}

/// PTX by file, source and whether it was compiled wide.
type PtxCache = Mutex<HashMap<(String, String, bool), String>>;

/// `module`'s PTX, [`WIDE`](crate::params::WIDE) or not, compiled once per source.
fn ptx(module: CudaSource, wide: bool) -> Result<String> {
    static CACHE: OnceLock<PtxCache> = OnceLock::new();
    let key = (module.file.to_owned(), module.source.to_owned(), wide);
    let cache = CACHE.get_or_init(Mutex::default);
    if let Some(p) = cache.lock().map_err(|_| anyhow!("the PTX cache lock was poisoned"))?.get(&key) {
        return Ok(p.clone());
    }
    let p =
        emulated::ptx(module.source, module.file, emulated::PTX_ARCH, &crate::gpu_queue::wide_define(wide))?;
    cache.lock().map_err(|_| anyhow!("the PTX cache lock was poisoned"))?.insert(key, p.clone());
    Ok(p)
}

impl Queue for EmulatorQueue<'_> {
    fn has_entry(&self, entry: &str) -> bool {
        self.machine.has_kernel(entry)
    }

    fn load(&mut self, module: CudaSource) -> Result<()> {
        if self.state.loaded.iter().any(|f| f == module.file) {
            return Ok(());
        }
        self.machine.load(&ptx(module, self.state.wide)?).map_err(|e| anyhow!("{e}"))?;
        self.state.loaded.push(module.file.to_owned());
        Ok(())
    }

    fn launch(&mut self, entry: &str, launch: LaunchShape, args: &[KernelArg]) -> Result<()> {
        self.run(entry, launch, args, (false, false))
    }

    fn launch_scaled(&mut self, entry: &str, launch: LaunchShape, args: &[KernelArg]) -> Result<()> {
        self.run(entry, launch, args, (false, true))
    }

    fn launch_matmul(&mut self, entry: &str, launch: LaunchShape, args: &[KernelArg]) -> Result<()> {
        self.run(entry, launch, args, (true, true))
    }

    fn launch_matmul_alike(
        &mut self,
        entry: &str,
        launch: LaunchShape,
        args: &[KernelArg],
        alike: &[(u64, u64)],
    ) -> Result<()> {
        // Only a scaled run takes the kinds; the launch takes them, run or refused.
        self.machine.alike = self.machine.scale.then(|| alike.to_vec());
        let ran = self.run(entry, launch, args, (true, true));
        self.machine.alike = None;
        ran
    }

    /// A workspace of exactly `bytes` (so that the sanitizer names an access past what the
    /// product asked for), made again, zeroed, when a product asks for another size.
    fn workspace(&mut self, name: &'static str, bytes: usize) -> Result<u64> {
        let bytes = bytes.max(1).next_multiple_of(4);
        match self.state.workspaces.get(name) {
            Some(&(at, had)) if had == bytes => Ok(at),
            had => {
                if let Some(&(at, _)) = had {
                    self.machine.free(at);
                }
                // Watched by the sanitizer: what orders its words, and what a launch leaves. A
                // scaled run's launches are not watched, and its workspaces are not either (a
                // watch takes several times the workspace's bytes: a gigabyte of step 11's
                // residues of C at 8192²).
                let at = match self.machine.scale {
                    true => self.machine.alloc(bytes, name),
                    false => self.machine.alloc_workspace(bytes, name),
                };
                self.state.workspaces.insert(name, (at, bytes));
                Ok(at)
            }
        }
    }

    fn zeroed(&mut self, name: &'static str, bytes: usize) -> Result<u64> {
        let at = self.workspace(name, bytes)?;
        let floats = self.state.workspaces[name].1 / 4;
        self.machine.write_f32(at, &vec![0.0; floats]).map_err(|e| anyhow!("zeroing {name}: {e}"))?;
        Ok(at)
    }

    fn poisoned(&mut self, name: &'static str, bytes: usize) -> Result<u64> {
        let at = self.workspace(name, bytes)?;
        let floats = self.state.workspaces[name].1 / 4;
        let nan = vec![f32::from_bits(u32::MAX); floats];
        self.machine.write_f32(at, &nan).map_err(|e| anyhow!("poisoning {name}: {e}"))?;
        Ok(at)
    }

    fn read_i32(&mut self, name: &'static str, from: usize, len: usize) -> Result<Option<Vec<i32>>> {
        let Some(&(at, _)) = self.state.workspaces.get(name) else { return Ok(None) };
        let floats =
            self.machine.read_f32(at + 4 * from as u64, len).map_err(|e| anyhow!("reading {name}: {e}"))?;
        Ok(Some(floats.into_iter().map(|f| f.to_bits() as i32).collect()))
    }

    fn encode(&mut self, element: Element, ptr: u64, dims: [usize; 4], bx: TmaBox) -> Result<EncodedMap> {
        encode(element, ptr, dims, bx)
    }

    fn upload(&mut self, name: &'static str, data: &[f32]) -> Result<u64> {
        let at = self.machine.alloc(4 * data.len(), name);
        self.machine.write_f32(at, data).map_err(|e| anyhow!("{e}"))?;
        Ok(at)
    }

    fn download(&mut self, ptr: u64, len: usize) -> Result<Vec<f32>> {
        self.machine.read_f32(ptr, len).map_err(|e| anyhow!("{e}"))
    }

    fn free(&mut self, ptr: u64) -> Result<()> {
        self.machine.free(ptr);
        Ok(())
    }

    fn fork(&mut self) -> Result<()> {
        Ok(())
    }

    fn resume(&mut self) -> Result<()> {
        Ok(())
    }

    fn join(&mut self) -> Result<()> {
        Ok(())
    }

    fn time_from(&mut self) -> Result<()> {
        Ok(())
    }

    fn time_to(&mut self) -> Result<()> {
        Ok(())
    }

    fn timed_ms(&mut self) -> Result<Option<f64>> {
        Ok(None)
    }
}

/// The emulator's encoding of a map of `parts` row-major `rows`×`cols` matrices of `element`s
/// with rows `pitch` elements apart, in boxes of `bx` with the 128-byte swizzle: the parameters
/// [`crate::tma::encode_as`] gives the driver.
pub fn encode(
    element: Element,
    ptr: u64,
    [rows, cols, pitch, parts]: [usize; 4],
    bx: TmaBox,
) -> Result<EncodedMap> {
    let s = element.bytes() as u64;
    let map = TensorMap {
        address: ptr,
        element: s as u32,
        rank: if parts > 1 { 3 } else { 2 },
        dims: [cols as u64, rows as u64, parts as u64, 1, 1],
        strides: [s * pitch as u64, s * (pitch * rows) as u64, 0, 0],
        boxes: [bx.cols, bx.rows, 1, 1, 1],
        swizzle: Swizzle::B128,
    };
    map.encode().map_err(|e| anyhow!("a tensor map of a {rows}×{cols} matrix: {e}"))
}

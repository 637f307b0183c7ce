//! [`Queue`] on the PTX emulator: each kernel run to completion on the CPU as it is queued,
//! workspaces kept from product to product in [`EmulatorState`] (so a second launch reads what
//! the first left, as on a GPU), tensor maps encoded by the emulator from the parameters the host
//! gives the driver on a GPU, and common's maps of A and B built as on a GPU: rows padded to 16
//! bytes where they are not (on the host here; common's padding kernel on a GPU), the step's
//! prologue (`split_a`, `transpose_b`) run in front of the kernel.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use anyhow::{Result, anyhow, bail};

use crate::emulated::{
    self, Arg as EmulatorArg, Config, Machine, Recorded, Swizzle, TensorMap as EmulatedMap, Traffic,
};
use crate::matrix::Shape;
use crate::pad::padded;
use crate::queue::{Arg, Launch, Module, Queue};
use crate::tma::{Element, Marks, SPLIT_ENTRY, TRANSPOSE_ENTRY, TensorMap, TmaBox};

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
}

impl EmulatorState {
    /// Frees every workspace.
    pub fn free(&mut self, machine: &mut Machine) {
        for (_, (at, _)) in self.workspaces.drain() {
            machine.free(at);
        }
    }
}

/// The launch of the grid-stride prologues, as on a GPU (`tma.rs`): 1024 blocks of 256 threads.
const GRID_STRIDE: (u32, u32) = (1024, 256);

/// One product's queue on the emulator.
pub struct EmulatorQueue<'q> {
    machine: &'q mut Machine,
    state: &'q mut EmulatorState,
    /// Watch shared memory for races.
    sanitize: bool,
    /// For a kernel whose maps common builds: A and B, and whether A is split first.
    maps: Option<((u64, u64), bool)>,
}

impl<'q> EmulatorQueue<'q> {
    pub fn new(machine: &'q mut Machine, state: &'q mut EmulatorState, sanitize: bool) -> Self {
        machine.next_product();
        EmulatorQueue { machine, state, sanitize, maps: None }
    }

    /// The queue of a product on A and B whose maps common builds (A split first where `split`).
    pub fn with_maps(mut self, operands: (u64, u64), split: bool) -> Self {
        self.maps = Some((operands, split));
        self
    }

    fn config(&self, launch: Launch) -> Config {
        Config {
            grid: launch.grid,
            block: launch.block,
            dynamic_shared: launch.smem,
            sanitize: self.sanitize,
        }
    }

    fn run(&mut self, entry: &str, launch: Launch, args: &[Arg], own: bool) -> Result<()> {
        let mut args: Vec<EmulatorArg> = args.iter().map(|&a| emulator_arg(a)).collect();
        if own {
            // A stage declares fewer parameters: it is given those it declares, as on a GPU.
            args.truncate(self.machine.parameters(entry).unwrap_or(args.len()));
        }
        let config = self.config(launch);
        // A scaled run scales the step's own kernel; the kernels around it run whole.
        let scale = self.machine.scale;
        self.machine.scale = scale && own;
        let traffic = self.machine.launch(entry, config, &args).map_err(|e| anyhow!("{e}"));
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

    /// A grid-stride prologue of the step's module, run in front of the kernel.
    fn prologue(&mut self, entry: &str, args: &[Arg]) -> Result<()> {
        if !self.machine.has_kernel(entry) {
            bail!("the kernel defines no `{entry}`, which its tensor maps need");
        }
        self.run(entry, Launch::of((GRID_STRIDE.0, 1, 1), GRID_STRIDE.1, 0), args, false)
    }

    /// `src` (rows×cols) itself when its rows are 16-byte multiples, else a copy with padded rows
    /// (made on the host: on a GPU common's padding kernel makes it).
    fn padded(&mut self, src: u64, rows: usize, cols: usize, name: &'static str) -> Result<(u64, usize)> {
        let pitch = padded(cols);
        if pitch == cols {
            return Ok((src, cols));
        }
        let fail = |e: emulated::EmulatorError| anyhow!("{e}");
        let data = self.machine.read_f32(src, rows * cols).map_err(fail)?;
        let mut out = vec![0.0f32; rows * pitch];
        for r in 0..rows {
            out[r * pitch..r * pitch + cols].copy_from_slice(&data[r * cols..(r + 1) * cols]);
        }
        let dst = self.workspace(name, 4 * rows * pitch)?;
        self.machine.write_f32(dst, &out).map_err(fail)?;
        Ok((dst, pitch))
    }
}

fn emulator_arg(arg: Arg) -> EmulatorArg {
    match arg {
        Arg::I32(v) => EmulatorArg::I32(v),
        Arg::I64(v) => EmulatorArg::I64(v),
        Arg::Ptr(p) => EmulatorArg::Ptr(p),
        Arg::Map(m) => EmulatorArg::Map(m),
    }
}

/// `module`'s PTX, compiled once per source.
fn ptx(module: Module) -> Result<String> {
    static CACHE: OnceLock<Mutex<HashMap<(String, String), String>>> = OnceLock::new();
    let key = (module.file.to_owned(), module.source.to_owned());
    let cache = CACHE.get_or_init(Mutex::default);
    if let Some(p) = cache.lock().map_err(|_| anyhow!("the PTX cache lock was poisoned"))?.get(&key) {
        return Ok(p.clone());
    }
    let p = emulated::ptx(module.source, module.file, emulated::PTX_ARCH, &[])?;
    cache.lock().map_err(|_| anyhow!("the PTX cache lock was poisoned"))?.insert(key, p.clone());
    Ok(p)
}

impl Queue for EmulatorQueue<'_> {
    fn has_entry(&self, entry: &str) -> bool {
        self.machine.has_kernel(entry)
    }

    fn load(&mut self, module: Module) -> Result<()> {
        if self.state.loaded.iter().any(|f| f == module.file) {
            return Ok(());
        }
        self.machine.load(&ptx(module)?).map_err(|e| anyhow!("{e}"))?;
        self.state.loaded.push(module.file.to_owned());
        Ok(())
    }

    fn launch(&mut self, entry: &str, launch: Launch, args: &[Arg]) -> Result<()> {
        self.run(entry, launch, args, false)
    }

    fn product(&mut self, entry: &str, launch: Launch, args: &[Arg]) -> Result<()> {
        self.run(entry, launch, args, true)
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
                // Watched by the sanitizer: what orders its words, and what a launch leaves.
                let at = self.machine.alloc_workspace(bytes, name);
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

    fn read_i32(&mut self, name: &'static str, from: usize, len: usize) -> Result<Option<Vec<i32>>> {
        let Some(&(at, _)) = self.state.workspaces.get(name) else { return Ok(None) };
        let floats =
            self.machine.read_f32(at + 4 * from as u64, len).map_err(|e| anyhow!("reading {name}: {e}"))?;
        Ok(Some(floats.into_iter().map(|f| f.to_bits() as i32).collect()))
    }

    fn encode(&mut self, element: Element, ptr: u64, dims: [usize; 4], bx: TmaBox) -> Result<TensorMap> {
        encode(element, ptr, dims, bx)
    }

    fn maps(
        &mut self,
        shape: Shape,
        (a_box, b_box): (TmaBox, TmaBox),
        marks: Option<Marks>,
    ) -> Result<[TensorMap; 2]> {
        let Some(((a, b), split)) = self.maps else {
            bail!("common builds no tensor maps for this step's kernel");
        };
        let Shape { m, n, k } = shape;
        let (a_ptr, a_rows, a_pitch, parts) = if split {
            let pitch = padded(k);
            let parts = self.workspace("A's parts", 4 * 2 * m * pitch)?;
            let mut args = vec![
                Arg::Ptr(a),
                Arg::Ptr(parts),
                Arg::I32(m as i32),
                Arg::I32(k as i32),
                Arg::I32(pitch as i32),
            ];
            if let Some(Marks { marks, exps, col_least }) = marks {
                args.extend([marks, exps, col_least].map(Arg::Ptr));
            }
            self.prologue(SPLIT_ENTRY, &args)?;
            (parts, m, pitch, 2)
        } else {
            let (ptr, pitch) = self.padded(a, m, k, "A padded")?;
            (ptr, m, pitch, 1)
        };
        let transposed = self.machine.has_kernel(TRANSPOSE_ENTRY);
        let (b_ptr, b_rows, b_cols, b_pitch, b_box) = if transposed {
            let pitch = padded(k);
            let bt = self.workspace("Bᵀ", 4 * n * pitch)?;
            let args =
                [Arg::Ptr(b), Arg::Ptr(bt), Arg::I32(k as i32), Arg::I32(n as i32), Arg::I32(pitch as i32)];
            self.prologue(TRANSPOSE_ENTRY, &args)?;
            (bt, n, k, pitch, TmaBox { rows: b_box.cols, cols: b_box.rows })
        } else {
            let (ptr, pitch) = self.padded(b, k, n, "B padded")?;
            (ptr, k, n, pitch, b_box)
        };
        Ok([
            encode(Element::F32, a_ptr, [a_rows, k, a_pitch, parts], a_box)?,
            encode(Element::F32, b_ptr, [b_rows, b_cols, b_pitch, 1], b_box)?,
        ])
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
) -> Result<TensorMap> {
    let s = element.bytes() as u64;
    let map = EmulatedMap {
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

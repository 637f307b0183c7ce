//! One product on the PTX emulator, as common's emulated run hands it to a step's hooks: the
//! machine holding the compiled module, the launch's shape and the standard arguments, and,
//! for a kernel that reads through tensor maps, the maps common builds on a GPU, built here the
//! same way: rows padded to 16 bytes where they are not, the step's prologue (`split_a`,
//! `transpose_b`) run on the emulator in front of the kernel, and the maps encoded by the
//! emulator from the parameters the host gives the driver on a GPU (a machine without a GPU has
//! no driver to encode them). A step that sends rows and columns down a path of their own loads
//! that path's module into the same machine ([`EmulatedCall::load`]) and runs it here too.

use anyhow::{Result, anyhow, bail};

use crate::emulated::{Arg, Config, Machine, Swizzle, TensorMap as EmulatedMap, Traffic};
use crate::matrix::Shape;
use crate::pad::padded;
use crate::params::Params;
use crate::paths::Paths;
use crate::tma::{SPLIT_ENTRY, TRANSPOSE_ENTRY, TmaBox};

/// A, B and C of one emulated launch: their addresses in the emulator's memory.
pub type EmulatedOperands = (u64, u64, u64);

/// The tensor maps common builds for a kernel: A's and B's boxes, and whether A is split first.
#[derive(Clone, Copy, Debug)]
pub struct CommonMaps {
    pub boxes: (TmaBox, TmaBox),
    pub split: bool,
}

/// One product on the emulator; what the launches moved is added up in `traffic` (the step's
/// own kernel) and `others` (the rest, by entry point).
pub struct EmulatedCall<'c> {
    pub machine: &'c mut Machine,
    pub config: Config,
    pub shape: Shape,
    pub params: &'c Params,
    whole: Option<i32>,
    /// The boxes of A's and B's maps, for a kernel with tensor maps; whether common builds them.
    pub boxes: Option<(TmaBox, TmaBox)>,
    maps: Option<CommonMaps>,
    pub traffic: Traffic,
    pub others: Vec<(String, Traffic)>,
    /// What the product sent down the FP32 path, read after it as a GPU run reads it for the
    /// report (None where the step's launch has no FP32 path).
    pub paths: Option<Paths>,
    /// Workspaces allocated for this product, freed by [`EmulatedCall::free`].
    workspaces: Vec<u64>,
}

/// The launch of the grid-stride prologues, as on a GPU (`tma.rs`): 1024 blocks of 256 threads.
const GRID_STRIDE: (u32, u32) = (1024, 256);

impl<'c> EmulatedCall<'c> {
    /// The call of the step's kernel on `config` for `shape`, `whole` the rows of whole tiles of
    /// a Stream-K layout; `boxes` those of a kernel's tensor maps and `maps` where common builds
    /// them.
    pub fn new(
        machine: &'c mut Machine,
        (config, shape, params): (Config, Shape, &'c Params),
        whole: Option<u32>,
        boxes: Option<(TmaBox, TmaBox)>,
        maps: Option<CommonMaps>,
    ) -> Self {
        EmulatedCall {
            machine,
            config,
            shape,
            params,
            whole: whole.map(|w| w as i32),
            boxes,
            maps,
            traffic: Traffic::default(),
            others: Vec::new(),
            paths: None,
            workspaces: Vec::new(),
        }
    }

    /// The standard arguments: `M, N, K, A, B, C`, and `whole` for a launch with a Stream-K layout.
    pub fn args(&self, (a, b, c): EmulatedOperands) -> Vec<Arg> {
        let Shape { m, n, k } = self.shape;
        let mut args = vec![
            Arg::I32(m as i32),
            Arg::I32(n as i32),
            Arg::I32(k as i32),
            Arg::Ptr(a),
            Arg::Ptr(b),
            Arg::Ptr(c),
        ];
        args.extend(self.whole.map(Arg::I32));
        args
    }

    /// Whether the launch has a Stream-K layout (`whole` follows the six standard arguments).
    pub fn has_layout(&self) -> bool {
        self.whole.is_some()
    }

    /// Runs kernel `entry` of the module to completion on `config` with `args`; its traffic is
    /// the kernel's own for `matmul`, another kernel's for the rest.
    pub fn run(&mut self, entry: &str, config: Config, args: &[Arg]) -> Result<()> {
        self.launch(entry, config, args, entry == crate::gpu::ENTRY)
    }

    /// As [`EmulatedCall::run`], for a twin of `matmul` that the launch runs in its place (step
    /// 12's `matmul_cut`): its traffic is the kernel's own.
    pub fn run_twin(&mut self, entry: &str, config: Config, args: &[Arg]) -> Result<()> {
        self.launch(entry, config, args, true)
    }

    fn launch(&mut self, entry: &str, config: Config, args: &[Arg], own: bool) -> Result<()> {
        // A scaled run scales the step's own kernel; the kernels around it run whole.
        let scale = self.machine.scale;
        self.machine.scale = scale && own;
        let traffic = self.machine.launch(entry, config, args).map_err(|e| anyhow!("{e}"));
        self.machine.scale = scale;
        let traffic = traffic?;
        if own {
            self.traffic.add(&traffic);
        } else {
            self.others.push((entry.to_owned(), traffic));
        }
        Ok(())
    }

    /// A workspace of `floats` zeroed floats for this product, called `name` in messages.
    pub fn workspace(&mut self, floats: usize, name: &str) -> u64 {
        let at = self.machine.alloc(4 * floats.max(1), name);
        self.workspaces.push(at);
        at
    }

    /// Frees the workspaces of this product.
    pub fn free(&mut self) {
        for w in self.workspaces.drain(..) {
            self.machine.free(w);
        }
    }

    /// Loads another module's PTX into the machine, beside the step's: its kernels run on the same
    /// memory, as a second module loaded in one CUDA context does.
    pub fn load(&mut self, ptx: &str) -> Result<()> {
        self.machine.load(ptx).map_err(|e| anyhow!("{e}"))
    }

    /// The plain launch: the step's kernel with the standard arguments, then the tensor maps of
    /// A and B where the kernel reads through them.
    pub fn plain(&mut self, operands: EmulatedOperands) -> Result<()> {
        let mut args = self.args(operands);
        if self.boxes.is_some() {
            let maps = self.maps((operands.0, operands.1), &[])?;
            args.extend(maps.map(Arg::Map));
        }
        self.run(crate::gpu::ENTRY, self.config, &args)
    }

    /// The tensor maps of A and B, built as common builds them on a GPU (A through `split_a`
    /// first, which takes `extra` after its standard arguments where the step marks rows apart;
    /// B through `transpose_b` where the kernel defines it).
    pub fn maps(&mut self, (a, b): (u64, u64), extra: &[Arg]) -> Result<[[u64; 16]; 2]> {
        let (Some(maps), Some((a_box, b_box))) = (self.maps, self.boxes) else {
            bail!("common builds no tensor maps for this step's kernel");
        };
        let Shape { m, n, k } = self.shape;
        let (a_ptr, a_rows, a_pitch, parts) = if maps.split {
            let pitch = padded(k);
            let parts = self.workspace(2 * m * pitch, "A's parts");
            let mut args = vec![
                Arg::Ptr(a),
                Arg::Ptr(parts),
                Arg::I32(m as i32),
                Arg::I32(k as i32),
                Arg::I32(pitch as i32),
            ];
            args.extend_from_slice(extra);
            self.prologue(SPLIT_ENTRY, &args)?;
            (parts, m, pitch, 2)
        } else {
            let (ptr, pitch) = self.padded(a, m, k, "A padded")?;
            (ptr, m, pitch, 1)
        };
        let transposed = self.machine.has_kernel(TRANSPOSE_ENTRY);
        let (b_ptr, b_rows, b_cols, b_pitch, b_box) = if transposed {
            let pitch = padded(k);
            let bt = self.workspace(n * pitch, "Bᵀ");
            let args =
                [Arg::Ptr(b), Arg::Ptr(bt), Arg::I32(k as i32), Arg::I32(n as i32), Arg::I32(pitch as i32)];
            self.prologue(TRANSPOSE_ENTRY, &args)?;
            (bt, n, k, pitch, TmaBox { rows: b_box.cols, cols: b_box.rows })
        } else {
            let (ptr, pitch) = self.padded(b, k, n, "B padded")?;
            (ptr, k, n, pitch, b_box)
        };
        Ok([
            encode(a_ptr, [a_rows, k, a_pitch, parts], a_box)?,
            encode(b_ptr, [b_rows, b_cols, b_pitch, 1], b_box)?,
        ])
    }

    /// A grid-stride prologue of the step's module, run in front of the kernel.
    fn prologue(&mut self, entry: &str, args: &[Arg]) -> Result<()> {
        if !self.machine.has_kernel(entry) {
            bail!("the kernel defines no `{entry}`, which its tensor maps need");
        }
        let config = Config {
            grid: (GRID_STRIDE.0, 1, 1),
            block: (GRID_STRIDE.1, 1, 1),
            dynamic_shared: 0,
            ..self.config
        };
        self.run(entry, config, args)
    }

    /// `src` (rows×cols) itself when its rows are 16-byte multiples, else a copy with padded rows
    /// (made on the host: on a GPU common's padding kernel makes it).
    fn padded(&mut self, src: u64, rows: usize, cols: usize, name: &str) -> Result<(u64, usize)> {
        let pitch = padded(cols);
        if pitch == cols {
            return Ok((src, cols));
        }
        let fail = |e: crate::emulated::EmulatorError| anyhow!("{e}");
        let data = self.machine.read_f32(src, rows * cols).map_err(fail)?;
        let mut out = vec![0.0f32; rows * pitch];
        for r in 0..rows {
            out[r * pitch..r * pitch + cols].copy_from_slice(&data[r * cols..(r + 1) * cols]);
        }
        let dst = self.workspace(rows * pitch, name);
        self.machine.write_f32(dst, &out).map_err(fail)?;
        Ok((dst, pitch))
    }
}

/// The emulator's encoding of a map of `parts` row-major `rows`×`cols` f32 matrices with rows
/// `pitch` floats apart, in boxes of `bx` with the 128-byte swizzle: the parameters
/// [`crate::tma::encode`] gives the driver.
pub fn encode(ptr: u64, [rows, cols, pitch, parts]: [usize; 4], bx: TmaBox) -> Result<[u64; 16]> {
    encode_elements(4, ptr, [rows, cols, pitch, parts], bx)
}

/// As [`encode`], for elements of `size` bytes (1 for bytes, 2 for bf16, 4 for floats).
pub fn encode_elements(
    size: u32,
    ptr: u64,
    [rows, cols, pitch, parts]: [usize; 4],
    bx: TmaBox,
) -> Result<[u64; 16]> {
    let s = u64::from(size);
    let map = EmulatedMap {
        address: ptr,
        element: size,
        rank: if parts > 1 { 3 } else { 2 },
        dims: [cols as u64, rows as u64, parts as u64, 1, 1],
        strides: [s * pitch as u64, s * (pitch * rows) as u64, 0, 0],
        boxes: [bx.cols, bx.rows, 1, 1, 1],
        swizzle: Swizzle::B128,
    };
    map.encode().map_err(|e| anyhow!("a tensor map of a {rows}×{cols} matrix: {e}"))
}

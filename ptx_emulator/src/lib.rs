//! A PTX emulator for the course's SIMT kernels: it runs the PTX that NVRTC emits, thread by
//! thread and warp by warp, on the CPU, so that a learner without an NVIDIA GPU can run a lab,
//! check an exercise, catch a race and count the memory traffic a kernel causes.
//!
//! It follows the PTX ISA for the instructions it implements: registers and predicates per
//! thread, the block's barriers, the warp-wide instructions (`shfl.sync`, `vote.sync`,
//! `redux.sync`, `ldmatrix`, `mma.sync` on TF32) by the whole warp at once, `.shared` memory per
//! block, global memory shared by all, IEEE FP32 with `fma.rn` fused, integer and address
//! arithmetic, atomics and `cp.async`; and Hopper's: mbarriers, the copy engine's tensor copies
//! (with tensor maps the host encodes through [`tensor_map`]), `wgmma` with the tensor cores'
//! own arithmetic ([`tensor_arith`]), and clusters of blocks run together. Everything else is
//! refused when the kernel is loaded, in one sentence naming the instruction and its `.cu` line.
//!
//! ```text
//! Emulator::new(ptx, gpu) ──▶ alloc/write A, B, C ──▶ launch("matmul", Config, args) ──▶ Traffic, or a Fault
//! ```
//!
//! The layers: [`parse`] reads the text, [`decode`] turns statements into [`inst`]ructions
//! ([`joins`] marks the shared loads the compiler's back end joins), [`exec`] runs clusters,
//! blocks and warps ([`alu`] for one thread's arithmetic, [`tensor_arith`] for the tensor
//! cores'), [`memory`] holds the memories, [`sanitize`] watches shared memory for races and
//! [`traffic`] counts what Nsight Compute counts. [`record`] is what a run records, as plain data,
//! for the time model (the `ptx_model` crate) and the pictures (`ptx_pictures`), which depend on
//! this crate and not it on them.

use std::collections::HashMap;

pub mod alu;
pub mod decode;
pub mod exec;
pub mod inst;
pub mod joins;
pub mod memory;
pub mod parse;
pub mod recording;
pub mod sanitize;
pub mod tensor_arith;
pub mod tensor_map;
pub mod traffic;

pub use inst::Refusal;
pub use parse::ParseError;
pub use tensor_map::{Swizzle, TensorMap};
pub use traffic::Traffic;

/// What went wrong while a kernel ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultKind {
    Race,
    OutOfBounds,
    Misaligned,
    /// A barrier that not every thread reaches, or threads at different barriers.
    Barrier,
    /// A warp-wide instruction whose lanes are not all there.
    Divergence,
    /// Every thread of a cluster waits, at barriers or mbarriers no thread will release.
    Deadlock,
    /// A block spins on a global value no block running before it writes (a block that waits
    /// for another's turn, which runs after it or never).
    WaitsForBlock,
    Trap,
    Unsupported,
    /// A wgmma's descriptor that reads another layout than the copy engine wrote (or copies that
    /// did not fill the layout it reads), or an `mma.sync` operand register that holds another
    /// element than its fragment layout needs.
    Layout,
    /// Another block's fault stopped this one.
    Stopped,
}

/// A fault: its kind, and one sentence naming the thread and the `.cu` line.
#[derive(Clone, Debug, PartialEq)]
pub struct Fault {
    pub kind: FaultKind,
    pub message: String,
}

/// Why the emulator could not run a kernel.
#[derive(Clone, Debug, PartialEq)]
pub enum Error {
    /// The PTX text could not be read.
    Parse(ParseError),
    /// The kernel uses something the emulator does not implement.
    Refused(Refusal),
    /// The module has no entry point of that name.
    NoKernel(String),
    /// The launch itself is wrong (arguments, shape, shared memory).
    Launch(String),
    /// A scaled run (a few clusters standing for the grid) cannot stand for this launch, which
    /// must be emulated whole: its clusters count differently, or its blocks wait for one another.
    NotScalable(String),
    /// The kernel ran and faulted.
    Fault(Fault),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Parse(e) => write!(f, "the emulator could not read the PTX ({e})"),
            Error::Refused(r) => {
                if r.line > 0 {
                    write!(
                        f,
                        "the emulator does not implement `{}` ({}:{}): {}",
                        r.what, r.file, r.line, r.why
                    )
                } else {
                    write!(f, "the emulator does not implement `{}`: {}", r.what, r.why)
                }
            }
            Error::NoKernel(name) => write!(f, "the module has no kernel `{name}`"),
            Error::Launch(why) | Error::NotScalable(why) => write!(f, "{why}"),
            Error::Fault(fault) => write!(f, "{}", fault.message),
        }
    }
}

impl std::error::Error for Error {}

/// A kernel argument, in the order of the kernel's parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Arg {
    I32(i32),
    I64(i64),
    F32(f32),
    /// An address from [`Emulator::alloc`].
    Ptr(u64),
    /// A tensor map ([`TensorMap::encode`]), passed by value as a `__grid_constant__` parameter.
    Map([u64; 16]),
}

impl Arg {
    fn bytes(self) -> Vec<u8> {
        match self {
            Arg::I32(v) => v.to_le_bytes().to_vec(),
            Arg::I64(v) => v.to_le_bytes().to_vec(),
            Arg::F32(v) => v.to_le_bytes().to_vec(),
            Arg::Ptr(v) => v.to_le_bytes().to_vec(),
            Arg::Map(words) => words.iter().flat_map(|w| w.to_le_bytes()).collect(),
        }
    }
}

/// One launch's shape and options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    pub grid: (u32, u32, u32),
    pub block: (u32, u32, u32),
    pub dynamic_shared: u32,
    /// PictureWatch shared memory for races (a little slower).
    pub sanitize: bool,
}

/// The loaded modules' kernels and the global memory they run on.
pub struct Emulator {
    /// The GPU the launches copy: the SMs blocks are dealt to, and a launch's limits.
    gpu: Machine,
    kernels: HashMap<String, Result<inst::DecodedKernel, Refusal>>,
    global: memory::Global,
    /// The sanitizer's watch over the host's workspaces, from launch to launch.
    workspaces: exec::global_watch::WorkspaceWatch,
    /// Host threads that run blocks (1 by default).
    pub workers: usize,
    /// Emulate one block of each kind and multiply its counts out ([`Emulator::launch`]): a
    /// large grid's counts in the time of a few blocks, its output left unwritten but for them.
    pub scale: bool,
    /// For the next scaled launch: the grid's blocks of each kind as the host knows them, each
    /// kind named by the first block of one of its clusters (its index in the grid, x fastest)
    /// with the blocks it stands for, run in place of [`Emulator::launch`]'s kinds (a persistent
    /// kernel's clusters that take as many whole units of work: its grid is one wave, all of it
    /// on a side whose clusters differ). The launch takes it.
    pub alike: Option<Vec<(u64, u64)>>,
    /// A picture of one warp's access to take in the next launches ([`Emulator::watch`]).
    watch: Option<recording::warp_access::PictureWatch>,
    /// The compile's `-D` values, with which a picture works out the source's array sizes.
    defines: Vec<(String, i64)>,
    /// Record the timeline of this block of the kernel of this name in its next launches
    /// ([`recording::timeline`]); [`Emulator::take_timeline`] hands it over.
    pub timeline: Option<(String, [u32; 3])>,
    recorded: Option<recording::timeline::Timeline>,
    /// Record each launch's busiest cluster for the replay ([`recording::trace`]);
    /// [`Emulator::take_replays`] hands the recordings over.
    pub record: bool,
    replays: Vec<recording::Recorded>,
}

/// What the launch's first clusters read ([`recording::Footprint`]), from the sectors they recorded.
fn footprint(launch: &exec::Launch) -> recording::Footprint {
    let (gx, gy, _) = launch.grid;
    let (cx, cy, _) = launch.cluster;
    let mut f = recording::Footprint { side_x: gx / cx, side_y: gy / cy, ..Default::default() };
    let Some(prints) = &launch.footprints else { return f };
    let got = prints.got.lock().expect("no worker panics holding it");
    let of = |c: u64| got.iter().find(|(i, _)| *i == c).map(|(_, s)| s.as_slice());
    let Some(first) = of(0) else { return f };
    let new = |other: Option<&[u64]>| {
        other.map_or(0, |o| o.iter().filter(|s| first.binary_search(s).is_err()).count() as u64)
    };
    f.sectors = first.len() as u64;
    f.new_along_x = if f.side_x > 1 { new(of(1)) } else { 0 };
    f.new_along_y = if f.side_y > 1 { new(of(u64::from(f.side_x))) } else { 0 };
    f
}

/// What the machine itself knows of the GPU it copies: the SMs it deals a grid's blocks to when
/// it counts per SM, and a launch's limits. A GPU's profile in the time model (`ptx_model::profile::Profile::machine`) holds
/// it; the emulator is given it at construction ([`Emulator::new`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Machine {
    pub sms: u32,
    /// The most threads a block may have, and the most shared memory (bytes) it may opt in to.
    pub max_threads: u32,
    pub max_shared: u32,
}

/// The most clusters along a side of a grid that a scaled run runs one by one, where the side's
/// clusters count differently (work dealt unevenly along it).
pub const FULL_SIDE: u32 = 32;

impl Emulator {
    /// Reads the PTX and decodes each of its kernels, for a launch on `gpu` (its SMs and
    /// limits); a kernel the emulator cannot run keeps its refusal for when it is launched.
    pub fn new(ptx: &str, gpu: Machine) -> Result<Emulator, Error> {
        let mut machine = Emulator {
            gpu,
            kernels: HashMap::new(),
            global: memory::Global::default(),
            workspaces: Default::default(),
            workers: 1,
            scale: false,
            alike: None,
            watch: None,
            defines: Vec::new(),
            timeline: None,
            recorded: None,
            record: false,
            replays: Vec::new(),
        };
        machine.load(ptx)?;
        Ok(machine)
    }

    /// Reads another module's PTX and decodes its kernels into this machine, beside those loaded
    /// before, so that they run on the same global memory (as a second module loaded in one CUDA
    /// context does: step 09's FP32 path beside its product). Its own variables get a buffer of
    /// their own, so that two modules' variables of one name stay apart. A kernel of a name
    /// already loaded is refused: a launch by name would not know which to run.
    pub fn load(&mut self, ptx: &str) -> Result<(), Error> {
        let module = parse::parse(ptx).map_err(Error::Parse)?;
        let unreadable = |message: String| Error::Parse(ParseError { ptx_line: 0, message });
        if let Some(f) = module.functions.iter().find(|f| f.entry && self.kernels.contains_key(&f.name)) {
            return Err(unreadable(format!("a kernel `{}` is loaded already, from another module", f.name)));
        }
        // The decoder lays the variables out from buffer 0's address: moved to this module's
        // buffer (buffer 0 itself for the first module, which keeps them there).
        let (laid_out, bytes) = decode::layout_globals(&module);
        let at = self.global.alloc(bytes.next_multiple_of(4).max(4), "the module's variables");
        let globals: HashMap<String, u64> =
            laid_out.into_iter().map(|(name, a)| (name, a - memory::GLOBALS_BASE + at)).collect();
        for v in &module.globals {
            if !v.init.is_empty() {
                // Memory is written in whole words: the words the variable lies in, read, its
                // bytes set in them, written back (a 2-byte variable may share a word).
                let address = globals[&v.name];
                let start = address & !3;
                let end = (address + v.init.len() as u64).next_multiple_of(4);
                let misfit = || unreadable(format!("the initializer of `{}` does not fit it", v.name));
                let mut words = self.global.read(start, (end - start) as usize).ok_or_else(misfit)?;
                let from = (address - start) as usize;
                words[from..from + v.init.len()].copy_from_slice(&v.init);
                self.global.write(start, &words).ok_or_else(misfit)?;
            }
        }
        for f in module.functions.iter().filter(|f| f.entry) {
            self.kernels.insert(f.name.clone(), decode::decode(&module, f, &globals));
        }
        Ok(())
    }

    /// Gives the emulator the text of the `.cu` file the PTX names `file` (as its `.file`
    /// directive does, or ending so), so that a fault can name an mbarrier as the kernel does.
    pub fn source(&mut self, file: &str, text: &str) {
        let lines = std::sync::Arc::new(text.lines().map(str::to_owned).collect::<Vec<_>>());
        for k in self.kernels.values_mut().flatten() {
            let numbers: Vec<u32> =
                k.files.iter().filter(|(_, name)| name.ends_with(file)).map(|(n, _)| *n).collect();
            for n in numbers {
                k.sources.insert(n, lines.clone());
            }
        }
    }

    /// Gives the emulator the `-D` values the kernel was compiled with, so that a picture of an
    /// access ([`Emulator::watch`]) can work out the sizes of the shared arrays the source declares.
    pub fn defines(&mut self, defines: &[(String, u32)]) {
        self.defines = defines.iter().map(|(n, v)| (n.clone(), i64::from(*v))).collect();
        if let Some(w) = &mut self.watch {
            w.defines = self.defines.clone();
        }
    }

    /// The GPU the launches copy.
    pub fn gpu(&self) -> Machine {
        self.gpu
    }

    /// Whether the module has a kernel `name`.
    pub fn has_kernel(&self, name: &str) -> bool {
        self.kernels.contains_key(name)
    }

    /// Why kernel `name` cannot run here, if it cannot.
    pub fn refusal(&self, name: &str) -> Option<&Refusal> {
        self.kernels.get(name).and_then(|k| k.as_ref().err())
    }

    /// How many parameters kernel `name` declares.
    pub fn parameters(&self, name: &str) -> Option<usize> {
        self.kernels.get(name).and_then(|k| k.as_ref().ok()).map(|k| k.params.len())
    }

    /// Static shared memory of kernel `name`, in bytes.
    pub fn static_shared(&self, name: &str) -> Option<usize> {
        self.kernels.get(name).and_then(|k| k.as_ref().ok()).map(|k| k.static_shared)
    }

    /// Allocates `bytes` zeroed bytes of global memory, called `name` in messages.
    pub fn alloc(&mut self, bytes: usize, name: &str) -> u64 {
        self.global.alloc(bytes, name)
    }

    /// As [`Emulator::alloc`], for a workspace the host keeps from product to product: with the
    /// sanitizer on, its words are watched (what orders their stores and loads across clusters,
    /// and what a launch leaves in them for a later product: see [`Emulator::take_finding`]).
    pub fn alloc_workspace(&mut self, bytes: usize, name: &str) -> u64 {
        let at = self.global.alloc(bytes, name);
        self.workspaces.watch(at, name, bytes);
        at
    }

    /// A new product begins: the host's launches around one C = A·B, after which a workspace
    /// must hold no more than its zeros and what the host wrote.
    pub fn next_product(&mut self) {
        self.workspaces.next_product();
    }

    /// The first hazard the launches so far left for a later product (a workspace word left
    /// non-zero and read by a later product), in one sentence; the launches themselves went on.
    pub fn take_finding(&mut self) -> Option<String> {
        self.workspaces.take_finding()
    }

    pub fn free(&mut self, address: u64) {
        self.global.free(address);
        self.workspaces.forget(address);
    }

    pub fn write_f32(&mut self, address: u64, values: &[f32]) -> Result<(), Error> {
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.workspaces.host_wrote(address, bytes.len());
        self.global.write(address, &bytes).ok_or_else(|| Error::Launch("a write outside every buffer".into()))
    }

    pub fn read_f32(&self, address: u64, count: usize) -> Result<Vec<f32>, Error> {
        let bytes = self
            .global
            .read(address, 4 * count)
            .ok_or_else(|| Error::Launch("a read outside every buffer".into()))?;
        Ok(bytes.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes"))).collect())
    }

    /// Runs kernel `name` to completion; returns what it moved and computed. With
    /// [`Emulator::scale`] set, it runs one block of each kind instead ([`Emulator::launch_scaled`]).
    pub fn launch(&mut self, name: &str, config: Config, args: &[Arg]) -> Result<Traffic, Error> {
        let alike = self.alike.take();
        let watched = config.sanitize && !self.scale && self.workspaces.any();
        if let (true, Some(Ok(kernel))) = (watched, self.kernels.get(name)) {
            self.workspaces.begin(kernel);
        }
        let mut launch = self.prepare(name, config, args)?;
        if watched {
            launch.watching = Some(exec::global_watch::Watching::new(&self.workspaces, launch.kernel));
        }
        let ran = match (self.scale, alike) {
            (true, Some(kinds)) => self.launch_alike(name, &launch, &kinds),
            (true, None) => self.launch_scaled(name, &launch),
            (false, _) => exec::run(&self.global, &launch).map_err(Error::Fault),
        };
        let replayed = match (&ran, &launch.record) {
            (Ok(_), Some(ask)) => {
                let trace = ask.lock().expect("no worker panics holding it").take();
                trace.map(|trace| recording::Recorded {
                    footprint: footprint(&launch),
                    ..recording::Recorded::new(trace, &launch)
                })
            }
            _ => None,
        };
        let recorded = launch.timeline.and_then(|ask| ask.recorded.into_inner().ok().flatten());
        if recorded.is_some() {
            self.recorded = recorded;
        }
        if let Some(w) = &self.watch {
            w.launched();
        }
        self.replays.extend(replayed);
        ran
    }

    /// Asks for a picture of one warp's access at a `.cu` line (see [`recording::warp_access`]), kept from the
    /// first launch in which that warp executes a global or shared load or store there. Refused
    /// with a sentence where no kernel loaded has such an access at that line.
    pub fn watch(&mut self, request: recording::warp_access::Request) -> Result<(), String> {
        let mut files: Vec<&str> = Vec::new();
        let mut lines: Vec<u32> = Vec::new();
        for k in self.kernels.values().filter_map(|k| k.as_ref().ok()) {
            for inst in &k.insts {
                let Some(file) = k.files.get(&inst.file) else { continue };
                if !files.contains(&file.as_str()) {
                    files.push(file);
                }
                if request.names(file) && recording::warp_access::pictured(&inst.op) {
                    lines.push(inst.line);
                }
            }
        }
        if !files.iter().any(|f| request.names(f)) {
            return Err(format!(
                "--picture-access names {}, and the kernel was compiled from {}",
                request.file,
                files.first().copied().unwrap_or("a file the PTX does not name")
            ));
        }
        lines.sort_unstable();
        lines.dedup();
        if !lines.contains(&request.line) {
            let some: Vec<String> = lines.iter().take(12).map(u32::to_string).collect();
            return Err(format!(
                "{}:{} has no global or shared load or store for --picture-access to draw (the lines \
                 that have one: {})",
                request.file,
                request.line,
                some.join(", ")
            ));
        }
        let mut w = recording::warp_access::PictureWatch::new(request);
        w.defines = self.defines.clone();
        self.watch = Some(w);
        Ok(())
    }

    /// The accesses the picture asked for with [`Emulator::watch`] kept (none if the warp has not
    /// executed the line yet).
    pub fn watched(&self) -> Vec<recording::warp_access::WarpAccess> {
        self.watch.as_ref().map(recording::warp_access::PictureWatch::accesses).unwrap_or_default()
    }

    /// The recordings of the launches since the last call, for the replay ([`Emulator::record`]).
    pub fn take_replays(&mut self) -> Vec<recording::Recorded> {
        std::mem::take(&mut self.replays)
    }

    /// The timeline recorded by the last launch that recorded one ([`Emulator::timeline`]).
    pub fn take_timeline(&mut self) -> Option<recording::timeline::Timeline> {
        self.recorded.take()
    }

    /// Checks a launch against the kernel and builds it.
    fn prepare<'k>(&'k self, name: &str, config: Config, args: &[Arg]) -> Result<exec::Launch<'k>, Error> {
        let kernel = match self.kernels.get(name) {
            None => return Err(Error::NoKernel(name.to_owned())),
            Some(Err(refusal)) => return Err(Error::Refused(refusal.clone())),
            Some(Ok(k)) => k,
        };
        let (bx, by, bz) = config.block;
        let threads = u64::from(bx) * u64::from(by) * u64::from(bz);
        let Machine { sms, max_threads, max_shared } = self.gpu;
        if threads == 0 || threads > u64::from(max_threads) {
            return Err(Error::Launch(format!(
                "a block of {threads} threads: a block has 1 to {max_threads}"
            )));
        }
        let (gx, gy, gz) = config.grid;
        if gx == 0 || gy == 0 || gz == 0 {
            return Err(Error::Launch("a grid with no blocks".into()));
        }
        let shared = kernel.dynamic_at.max(kernel.static_shared) as u64 + u64::from(config.dynamic_shared);
        if shared > u64::from(max_shared) {
            return Err(Error::Launch(format!(
                "{shared} bytes of shared memory per block, more than the {max_shared} a block may have"
            )));
        }
        if args.len() != kernel.params.len() {
            return Err(Error::Launch(format!(
                "{name} takes {} arguments, and the launch gives {}",
                kernel.params.len(),
                args.len()
            )));
        }
        let mut params = vec![0u8; kernel.param_bytes];
        for (i, (arg, (at, size))) in args.iter().zip(&kernel.params).enumerate() {
            let bytes = arg.bytes();
            if bytes.len() != *size {
                return Err(Error::Launch(format!(
                    "argument {i} of {name} is {size} bytes, and the launch gives {} bytes",
                    bytes.len()
                )));
            }
            params[*at..at + size].copy_from_slice(&bytes);
        }
        let timeline = match &self.timeline {
            Some((kernel, block)) if kernel == name => {
                if let Some(why) = recording::timeline::outside_grid(name, *block, config.grid) {
                    return Err(Error::Launch(why));
                }
                Some(recording::timeline::Ask { block: *block, recorded: Default::default() })
            }
            _ => None,
        };
        let cluster = kernel.cluster.map_or((1, 1, 1), |[x, y, z]| (x, y, z));
        if gx % cluster.0 != 0 || gy % cluster.1 != 0 || gz % cluster.2 != 0 {
            return Err(Error::Launch(format!(
                "a grid of {:?} blocks is not a whole number of the kernel's clusters of {cluster:?}",
                config.grid
            )));
        }
        Ok(exec::Launch {
            kernel,
            sms,
            cluster,
            grid: config.grid,
            block: config.block,
            dynamic_shared: config.dynamic_shared as usize,
            params,
            sanitize: config.sanitize,
            workers: self.workers,
            watch: self.watch.as_ref(),
            timeline,
            watching: None,
            record: self.record.then(Default::default),
            // Cluster (0, 0), its neighbour along x and its neighbour along y.
            footprints: self.record.then(|| {
                let across = u64::from(gx / cluster.0);
                std::sync::Arc::new(exec::state::Footprints {
                    wanted: vec![0, 1, across],
                    ..Default::default()
                })
            }),
        })
    }

    // ANCHOR: scaled
    /// A launch's counts from one cluster of blocks (a block, without clusters) of each kind.
    /// Along each side of the grid of clusters, a cluster is the first, one of the n − 2 inside,
    /// or the last; one of each combination runs, and its counts are multiplied by the clusters
    /// of that kind. Along a side of four or more, inside clusters at three more places (the
    /// second, the middle, the next to last) run too: any that counts differently from the
    /// first inside one means the side is not regular (work dealt unevenly along it, as lab 11's
    /// moduli along z). A side that is not regular runs every one of its clusters, if it has at
    /// most [`FULL_SIDE`]; a longer one is refused rather than guessed.
    fn launch_scaled(&self, name: &str, launch: &exec::Launch) -> Result<Traffic, Error> {
        let (cx, cy, cz) = launch.cluster;
        let sides = [launch.grid.0 / cx, launch.grid.1 / cy, launch.grid.2 / cz];
        let mut full = [false; 3];
        loop {
            let irregular = match self.scaled_once(name, launch, sides, full)? {
                Ok(total) => return Ok(total),
                Err(irregular) => irregular,
            };
            // Every side found irregular in this pass runs whole in the next: two passes at most.
            for &(axis, first, p) in &irregular {
                if sides[axis] > FULL_SIDE {
                    return Err(Error::NotScalable(format!(
                        "the clusters at {first} and {p} along {} of {name}'s grid count differently, so \
                         its {} clusters along that side would each have to run (more than the {FULL_SIDE} a \
                         scaled run takes): emulate it whole",
                        ["x", "y", "z"][axis],
                        sides[axis]
                    )));
                }
                full[axis] = true;
            }
        }
    }

    /// A scaled launch of the clusters the host names ([`Emulator::alike`]): each one's counts
    /// multiplied by the clusters it stands for, which must number the grid's.
    fn launch_alike(
        &self,
        name: &str,
        launch: &exec::Launch,
        kinds: &[(u64, u64)],
    ) -> Result<Traffic, Error> {
        let (cx, cy, cz) = launch.cluster;
        let size = u64::from(cx * cy * cz);
        let blocks = u64::from(launch.grid.0) * u64::from(launch.grid.1) * u64::from(launch.grid.2);
        let (gx, gy) = (u64::from(launch.grid.0), u64::from(launch.grid.1));
        let (cx, cy, cz) = (u64::from(cx), u64::from(cy), u64::from(cz));
        // A block's cluster, where it is its cluster's first block.
        let cluster_of = |b: u64| {
            let (x, y, z) = (b % gx, b / gx % gy, b / (gx * gy));
            (x % cx == 0 && y % cy == 0 && z % cz == 0)
                .then(|| x / cx + gx / cx * (y / cy + gy / cy * (z / cz)))
        };
        let named: u64 = kinds.iter().map(|k| k.1).sum();
        let list: Option<Vec<u64>> =
            kinds.iter().map(|&(b, n)| cluster_of(b).filter(|_| b < blocks && n % size == 0)).collect();
        let Some(list) = list.filter(|_| named == blocks) else {
            return Err(Error::Launch(format!(
                "the kinds of {name}'s blocks stand for {named} of its {blocks} blocks, or name a block that is not the first of its cluster of {size}"
            )));
        };
        let counts = exec::run_each(&self.global, launch, &list).map_err(|f| match f.kind {
            FaultKind::WaitsForBlock => Error::NotScalable(format!(
                "{name}'s blocks wait for one another ({}), so a few of them cannot run alone: emulate it whole",
                f.message
            )),
            _ => Error::Fault(f),
        })?;
        let mut total = Traffic::default();
        for (&(_, blocks), count) in kinds.iter().zip(&counts) {
            total.add(&count.times(blocks / size));
        }
        total.scaled_ran = list.len() as u64 * size;
        total.scaled_of = blocks;
        Ok(total)
    }

    /// One scaled run: the clusters of each kind (every cluster along the sides marked `full`),
    /// and the checks of the other sides. Returns the counts, or each side found irregular with
    /// the two places that differ first.
    #[allow(clippy::type_complexity)]
    fn scaled_once(
        &self,
        name: &str,
        launch: &exec::Launch,
        sides: [u32; 3],
        full: [bool; 3],
    ) -> Result<Result<Traffic, Vec<(usize, u32, u32)>>, Error> {
        let (cx, cy, cz) = launch.cluster;
        let kinds = |axis: usize| -> Vec<(u32, u64)> {
            match sides[axis] {
                n if full[axis] => (0..n).map(|i| (i, 1)).collect(),
                1 => vec![(0, 1)],
                2 => vec![(0, 1), (1, 1)],
                n => vec![(0, 1), (1, u64::from(n - 2)), (n - 1, 1)],
            }
        };
        let index = |[x, y, z]: [u32; 3]| {
            u64::from(x) + u64::from(sides[0]) * (u64::from(y) + u64::from(sides[1]) * u64::from(z))
        };
        // One cluster of each kind, with the clusters it stands for; then, along each side of
        // four or more not run whole, the inside ones that check the side is regular.
        let mut runs: Vec<([u32; 3], u64)> = Vec::new();
        for &(z, nz) in &kinds(2) {
            for &(y, ny) in &kinds(1) {
                for &(x, nx) in &kinds(0) {
                    runs.push(([x, y, z], nx * ny * nz));
                }
            }
        }
        let mut checks: Vec<(usize, u32)> = Vec::new();
        for (axis, &n) in sides.iter().enumerate().filter(|&(a, n)| *n >= 4 && !full[a]) {
            let mut places = vec![1, 2, n / 2, n - 2];
            places.dedup();
            checks.extend(places.into_iter().map(|p| (axis, p)));
        }
        let on = |axis: usize, p: u32| {
            let mut c = [0; 3];
            c[axis] = p;
            c
        };
        let list: Vec<u64> = runs
            .iter()
            .map(|&(c, _)| index(c))
            .chain(checks.iter().map(|&(axis, p)| index(on(axis, p))))
            .collect();
        let counts = exec::run_each(&self.global, launch, &list).map_err(|f| match f.kind {
            // A block that waits for another block's write (Stream-K's turns) cannot run with
            // only a few of its peers: that is the grid's shape, not the kernel's fault.
            FaultKind::WaitsForBlock => Error::NotScalable(format!(
                "{name}'s blocks wait for one another ({}), so a few of them cannot run alone and \
                 scaling would guess: emulate it whole",
                f.message
            )),
            _ => Error::Fault(f),
        })?;
        let (kinds_counted, checked) = counts.split_at(runs.len());
        let mut irregular: Vec<(usize, u32, u32)> = Vec::new();
        for (i, &(axis, p)) in checks.iter().enumerate() {
            let first = checks.iter().position(|&(a, _)| a == axis).expect("the side's first check");
            let known = irregular.iter().any(|&(a, ..)| a == axis);
            if !known && checked[i].additive() != checked[first].additive() {
                irregular.push((axis, checks[first].1, p));
            }
        }
        if !irregular.is_empty() {
            return Ok(Err(irregular));
        }
        let mut total = Traffic::default();
        for (&(_, times), count) in runs.iter().zip(kinds_counted) {
            total.add(&count.times(times));
        }
        total.scaled_ran = list.len() as u64 * u64::from(cx * cy * cz);
        total.scaled_of = u64::from(launch.grid.0) * u64::from(launch.grid.1) * u64::from(launch.grid.2);
        Ok(Ok(total))
    }
    // ANCHOR_END: scaled
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An H100's SMs and a block's limits.
    const H100: Machine = Machine { sms: 132, max_threads: 1024, max_shared: 232_448 };

    /// A module whose kernel `name` adds its own variable `bias` (initialised to `bias`) to the
    /// word at its argument.
    fn module(name: &str, bias: u32) -> String {
        format!(
            ".version 8.0
.target sm_90
.address_size 64
.global .align 4 .u32 bias = {bias};
.visible .entry {name}(.param .u64 p)
{{
    .reg .b32 %r<4>;
    .reg .b64 %rd<3>;
    ld.param.u64 %rd1, [p];
    mov.u64 %rd2, bias;
    ld.global.u32 %r1, [%rd2];
    ld.global.u32 %r2, [%rd1];
    add.s32 %r3, %r2, %r1;
    st.global.u32 [%rd1], %r3;
    ret;
}}
"
        )
    }

    /// A scaled launch of the kinds the host names runs those clusters and multiplies them out;
    /// kinds that do not stand for the whole grid, or name a block inside a cluster, are refused.
    #[test]
    fn a_scaled_launch_takes_the_kinds_the_host_names() {
        let mut m = Emulator::new(&module("add", 1), H100).unwrap();
        let buf = m.alloc(4, "the word");
        let grid = Config { grid: (8, 1, 1), block: (1, 1, 1), dynamic_shared: 0, sanitize: false };
        m.scale = true;
        m.alike = Some(vec![(0, 3), (3, 5)]);
        let t = m.launch("add", grid, &[Arg::Ptr(buf)]).unwrap();
        assert_eq!((t.scaled_ran, t.scaled_of, t.blocks), (2, 8, 8));
        assert!(m.alike.is_none(), "the launch takes the kinds");
        m.alike = Some(vec![(0, 3), (3, 4)]);
        let short = m.launch("add", grid, &[Arg::Ptr(buf)]).unwrap_err().to_string();
        assert!(short.contains("stand for 7 of its 8 blocks"), "{short}");
        m.alike = Some(vec![(0, 3), (9, 5)]);
        assert!(m.launch("add", grid, &[Arg::Ptr(buf)]).is_err(), "a block past the grid");
    }

    /// Variables of two bytes that share a word keep their own initial values.
    #[test]
    fn two_byte_variables_in_one_word_keep_their_values() {
        let ptx = ".version 8.0
.target sm_90
.address_size 64
.global .align 2 .u16 low = 3;
.global .align 2 .u16 high = 5;
.visible .entry both(.param .u64 p)
{
    .reg .b16 %h<3>;
    .reg .b32 %r<3>;
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [p];
    ld.global.u16 %h1, [low];
    ld.global.u16 %h2, [high];
    cvt.u32.u16 %r1, %h1;
    cvt.u32.u16 %r2, %h2;
    st.global.u32 [%rd1], %r1;
    st.global.u32 [%rd1+4], %r2;
    ret;
}
";
        let mut m = Emulator::new(ptx, H100).unwrap();
        let buf = m.alloc(8, "the words");
        let one = Config { grid: (1, 1, 1), block: (1, 1, 1), dynamic_shared: 0, sanitize: true };
        m.launch("both", one, &[Arg::Ptr(buf)]).unwrap();
        let got = m.read_f32(buf, 2).unwrap();
        assert_eq!((got[0].to_bits(), got[1].to_bits()), (3, 5));
    }

    /// A second module's kernel runs on the memory the first's wrote, each module with its own
    /// variable of the same name; a kernel of a name already loaded is refused.
    #[test]
    fn a_second_module_runs_on_the_same_memory_with_its_own_variables() {
        let mut m = Emulator::new(&module("first", 5), H100).unwrap();
        m.load(&module("second", 40)).unwrap();
        let buf = m.alloc(4, "the word");
        let one = Config { grid: (1, 1, 1), block: (1, 1, 1), dynamic_shared: 0, sanitize: true };
        m.launch("first", one, &[Arg::Ptr(buf)]).unwrap();
        m.launch("second", one, &[Arg::Ptr(buf)]).unwrap();
        m.launch("first", one, &[Arg::Ptr(buf)]).unwrap();
        assert_eq!(m.read_f32(buf, 1).unwrap()[0].to_bits(), 5 + 40 + 5);
        let again = m.load(&module("second", 1)).unwrap_err().to_string();
        assert!(again.contains("a kernel `second` is loaded already"), "{again}");
        assert!(m.has_kernel("first") && m.has_kernel("second"));
    }
}

//! What the sanitizer keeps beside the host's workspaces in global memory, from launch to launch
//! (used by [`super::global_order`]): for each word, the launch, cluster, warp and epoch that last
//! wrote it, and the `.cu` line; for each address a release wrote to, what that release
//! published; and the first hazard a launch left for a later one. Plain data, held by the
//! machine and lent to each launch.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::inst::{DecodedKernel, Inst, Op};
use crate::memory::BUFFER_SHIFT;

/// What a warp knows of the stores before it, by cluster and warp slot: `(cluster, slot, epoch)`
/// says that every store of that warp at that epoch or before is visible. Sorted by cluster and
/// slot, one entry each.
pub type Known = Vec<(u32, u32, u32)>;

/// `into` learns what `from` knows.
pub fn merge(into: &mut Known, from: &[(u32, u32, u32)]) {
    for &(c, s, epoch) in from {
        match into.binary_search_by_key(&(c, s), |&(c, s, _)| (c, s)) {
            Ok(i) => into[i].2 = into[i].2.max(epoch),
            Err(i) => into.insert(i, (c, s, epoch)),
        }
    }
}

/// Whether `known` holds the store of warp `slot` of cluster `cluster` at `epoch`.
pub fn covers(known: &Known, cluster: u32, slot: u32, epoch: u32) -> bool {
    known.binary_search_by_key(&(cluster, slot), |&(c, s, _)| (c, s)).is_ok_and(|i| known[i].2 >= epoch)
}

/// The last write of one word of a workspace: its launch (0: the host's, or none), the cluster
/// (by its index in launch order), the warp's slot in it and its epoch then, the `.cu` file and
/// line of the instruction, and whether it was an atomic.
#[derive(Clone, Copy, Debug, Default)]
pub struct WordWrite {
    pub launch: u32,
    pub cluster: u32,
    pub epoch: u32,
    pub line: u32,
    pub slot: u16,
    pub file: u16,
    /// A strong write (relaxed or stronger), and an atomic.
    pub strong: bool,
    pub atomic: bool,
}

/// A workspace the sanitizer watches.
pub struct Watched {
    pub name: String,
    pub words: Mutex<Vec<WordWrite>>,
}

/// What an instruction means to the memory model: a strong access (relaxed or stronger:
/// atomics, `.relaxed`, `.acquire`, `.release`, `.volatile`), a release or an acquire, at a scope
/// that reaches other clusters (not `.cta` or `.cluster`); a fence is both where it counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sem {
    pub strong: bool,
    pub acquire: bool,
    pub release: bool,
}

impl Sem {
    /// The meaning of `inst`, from its modifiers.
    pub fn of(inst: &Inst) -> Sem {
        let has = |m: &str| inst.opcode.split('.').any(|p| p == m);
        let wide = !(has("cta") || has("cluster"));
        let (acquire, release) = (has("acquire") || has("acq_rel"), has("release") || has("acq_rel"));
        match inst.op {
            Op::Atom { .. } => Sem { strong: wide, acquire: wide && acquire, release: wide && release },
            Op::Ld { .. } | Op::St { .. } => {
                let strong = wide && (has("relaxed") || has("volatile") || acquire || release);
                Sem { strong, acquire: strong && acquire, release: strong && release }
            }
            // `membar.gl`, `membar.sys`, `fence.sc` and `fence.acq_rel` (the default) at the
            // GPU's scope or wider; not `fence.mbarrier_init`.
            Op::Fence => {
                let full = wide && !has("mbarrier_init");
                Sem { strong: false, acquire: full, release: full }
            }
            _ => Sem::default(),
        }
    }
}

/// One launch as the watch remembers it: the product it belongs to and its kernel's files.
struct Past {
    product: u32,
    files: HashMap<u32, String>,
}

/// The machine's watch over its workspaces (see the module's text).
#[derive(Default)]
pub struct WorkspaceWatch {
    /// By buffer index (the address's bits from [`BUFFER_SHIFT`], less one).
    buffers: Vec<Option<Watched>>,
    /// The buffers watched among the first 64, as bits by index, for a quick test on every
    /// access.
    mask: u64,
    launches: Vec<Past>,
    product: u32,
    /// For each address a release (or a fence before a strong write) published to, what it
    /// published; cleared at each launch.
    pub syncs: Mutex<HashMap<u64, Known>>,
    pub any_sync: AtomicBool,
    finding: Mutex<Option<String>>,
}

/// A launch's view of the watch: the watch, its own number and product, and each instruction's
/// meaning.
pub struct Watching<'k> {
    pub watch: &'k WorkspaceWatch,
    pub launch: u32,
    pub product: u32,
    pub sems: Vec<Sem>,
}

impl<'k> Watching<'k> {
    /// The running launch's view of `watch` (after [`WorkspaceWatch::begin`]).
    pub fn new(watch: &'k WorkspaceWatch, kernel: &DecodedKernel) -> Self {
        let sems = kernel.insts.iter().map(Sem::of).collect();
        Watching { watch, launch: watch.launches.len() as u32, product: watch.product, sems }
    }
}

impl WorkspaceWatch {
    /// Watches the buffer at `address` (from [`crate::memory::Global::alloc`]), called `name`,
    /// of `bytes` bytes.
    pub fn watch(&mut self, address: u64, name: &str, bytes: usize) {
        let i = ((address >> BUFFER_SHIFT) as usize).saturating_sub(1);
        if self.buffers.len() <= i {
            self.buffers.resize_with(i + 1, || None);
        }
        let words = Mutex::new(vec![WordWrite::default(); bytes.div_ceil(4)]);
        self.buffers[i] = Some(Watched { name: name.to_owned(), words });
        if i < 64 {
            self.mask |= 1 << i;
        }
    }

    /// Stops watching the buffer at `address`.
    pub fn forget(&mut self, address: u64) {
        let i = ((address >> BUFFER_SHIFT) as usize).saturating_sub(1);
        if let Some(slot) = self.buffers.get_mut(i) {
            *slot = None;
            if i < 64 {
                self.mask &= !(1 << i);
            }
        }
    }

    /// The host wrote `bytes` bytes at `address`: those words hold what the host put there.
    pub fn host_wrote(&mut self, address: u64, bytes: usize) {
        if let Some(b) = self.buffer(address) {
            let at = (address & ((1 << BUFFER_SHIFT) - 1)) as usize / 4;
            let mut words = b.words.lock().expect("no launch panics holding it");
            let end = (at + bytes.div_ceil(4)).min(words.len());
            words[at.min(end)..end].fill(WordWrite::default());
        }
    }

    /// The watched buffer that `address` lies in.
    #[inline]
    pub fn buffer(&self, address: u64) -> Option<&Watched> {
        let i = ((address >> BUFFER_SHIFT) as usize).checked_sub(1)?;
        if i < 64 && self.mask & (1 << i) == 0 {
            return None;
        }
        self.buffers.get(i)?.as_ref()
    }

    /// Whether any buffer is watched.
    pub fn any(&self) -> bool {
        self.buffers.iter().any(Option::is_some)
    }

    /// A new product begins (the host's calls around one C = A·B).
    pub fn next_product(&mut self) {
        self.product += 1;
    }

    /// A launch of `kernel` begins.
    pub fn begin(&mut self, kernel: &DecodedKernel) {
        self.launches.push(Past { product: self.product, files: kernel.files.clone() });
        self.syncs.get_mut().expect("no launch panics holding it").clear();
        self.any_sync.store(false, Ordering::Relaxed);
    }

    /// The product launch `launch` belonged to, and `file:line` in its kernel.
    pub fn past(&self, launch: u32, file: u16, line: u32) -> (u32, String) {
        match self.launches.get(launch as usize - 1) {
            Some(p) => {
                let name = p.files.get(&u32::from(file)).map_or("the kernel", String::as_str);
                (p.product, format!("{name}:{line}"))
            }
            None => (0, "an earlier launch".to_owned()),
        }
    }

    /// Keeps the first hazard found for a later look.
    pub fn found(&self, finding: String) {
        let mut f = self.finding.lock().expect("no launch panics holding it");
        if f.is_none() {
            *f = Some(finding);
        }
    }

    /// The first hazard found since the last call, if any.
    pub fn take_finding(&mut self) -> Option<String> {
        self.finding.get_mut().expect("no launch panics holding it").take()
    }
}

/// What one warp of the running cluster knows of other clusters' stores (see
/// [`super::global_order`]).
#[derive(Clone, Debug, Default)]
pub struct WarpSeen {
    /// What its acquires (and its barriers' peers' acquires) brought in.
    pub known: Known,
    /// What its relaxed reads of released values would bring in after an acquire fence.
    pub pending: Known,
    /// What its last release fence published, for a strong write after it to carry.
    pub fenced: Option<Known>,
    /// Its last strong access of global memory (an atomic, say), and whether it (or a fence
    /// after it) acquired, for messages.
    pub sync: Option<(u32, bool)>,
}

/// The running cluster's index in launch order and its warps' [`WarpSeen`].
#[derive(Debug, Default)]
pub struct ClusterSeen {
    pub cluster: u32,
    pub warps: Vec<WarpSeen>,
}

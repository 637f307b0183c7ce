//! What the sanitizer keeps beside shared memory for Hopper's asynchronous units: for each word,
//! what the copy engine and the tensor cores did to it ([`AsyncShadow`], used by
//! [`super::async_proxy`]), and which warp's epoch last wrote and read it ([`Accesses`], used by
//! [`super::order`]); for each warp, its arrivals while a wgmma was in flight ([`Freed`]), its
//! waits that passed ([`Passed`]), and the registers its wgmma read as A and a write to one of
//! them before the wait ([`Fragment`], [`Clobber`]). Plain data, below every other part of the
//! machine.

use crate::tensor_map::TensorMap;

pub const NONE: u32 = u32::MAX;

/// What the asynchronous proxy did to one word of shared memory (see the module's text).
#[derive(Clone, Copy, Debug)]
pub struct ProxyWord {
    /// The mbarrier (byte) and phase whose completion says a copy's bytes have landed here.
    pub filled: (u32, u32),
    pub filled_pc: u32,
    /// The thread (slot·32 + lane) that last wrote it with an ordinary store, its proxy-fence
    /// count then, and the store.
    pub written: (u32, u32, u32),
    /// The warp slot, commit group and instruction of the last wgmma and bulk store to read it.
    pub wgmma: (u32, u32, u32),
    pub bulk: (u32, u32, u32),
}

/// The element of a tensor that starts a 16-byte piece the copy engine wrote: its tensor map (an
/// index into [`AsyncShadow::maps`], NONE for a map the check skips) and its place, innermost
/// first: the byte along its row (the column times the element's bytes, so that a wgmma reading
/// narrower elements than the map's checks them too), the row, and the third coordinate (0 for a
/// matrix).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Origin {
    pub map: u32,
    pub at: [i32; 3],
}

pub const NO_ORIGIN: Origin = Origin { map: NONE, at: [0; 3] };

pub const FRESH: ProxyWord = ProxyWord {
    filled: (NONE, 0),
    filled_pc: 0,
    written: (NONE, 0, 0),
    wgmma: (NONE, 0, 0),
    bulk: (NONE, 0, 0),
};

/// The async proxy's shadow of a block's shared memory (empty when the sanitizer is off).
pub struct AsyncShadow {
    pub words: Vec<ProxyWord>,
    /// For each 16-byte piece (a copy writes whole pieces, and a swizzle moves them whole), the
    /// element of a tensor the copy engine put at its start, for the check that a wgmma's
    /// descriptor reads the layout the copy wrote. It holds while the piece's first word says a
    /// copy wrote it last (`filled`; an ordinary store clears that), so it is never reset; kept
    /// apart from `words`, which every access reads, to keep those small.
    pub origins: Vec<Origin>,
    /// The tensor maps of the copies issued into the block, each once.
    pub maps: Vec<TensorMap>,
}

impl AsyncShadow {
    pub fn new(words: usize) -> Self {
        AsyncShadow {
            words: vec![FRESH; words],
            origins: vec![NO_ORIGIN; words.div_ceil(4)],
            maps: Vec::new(),
        }
    }

    pub fn reset(&mut self) {
        self.words.fill(FRESH);
        self.maps.clear();
    }

    /// The element a copy put at the start of the 16-byte piece at byte `at`, if the copy engine
    /// wrote it last.
    #[inline]
    pub fn origin(&self, at: usize) -> Option<Origin> {
        let o = self.origins[at / 16];
        (self.words[at / 4].filled.0 != NONE && o.map != NONE).then_some(o)
    }

    /// The index of `map` in [`Self::maps`], added if new.
    pub fn map_index(&mut self, map: &TensorMap) -> u32 {
        match self.maps.iter().position(|m| m == map) {
            Some(i) => i as u32,
            None => {
                self.maps.push(*map);
                (self.maps.len() - 1) as u32
            }
        }
    }

    pub fn on(&self) -> bool {
        !self.words.is_empty()
    }
}

/// An arrival on an mbarrier while the warp's wgmma of groups `retired..issued` may still read
/// shared memory: the warp's own clock then, the instruction, the lane and the mbarrier.
#[derive(Clone, Copy, Debug)]
pub struct Freed {
    pub clock: u32,
    pub pc: u32,
    pub lane: u32,
    pub place: (usize, usize),
    pub retired: u32,
    pub issued: u32,
}

/// A warp's first arrival on an mbarrier (its block and byte): the instruction and the lane.
#[derive(Clone, Copy, Debug)]
pub struct Arrived {
    pub place: (usize, usize),
    pub pc: u32,
    pub lane: u32,
}

/// A multicast copy a warp issued: the instruction, its cta mask, the byte of the mbarrier it
/// counts its bytes on in each block of the mask, and the bytes of its box.
#[derive(Clone, Copy, Debug)]
pub struct Multicast {
    pub pc: u32,
    pub mask: u16,
    pub bar: usize,
    pub bytes: u32,
}

/// A register a wgmma of the warp reads as its operand A (a fragment): the wgmma's commit group
/// and instruction (the latest wgmma to read it), and the kernel's matrix (`A` or `B` of C = A·B)
/// whose elements the register held then, where its tag says.
#[derive(Clone, Copy, Debug)]
pub struct Fragment {
    pub reg: u32,
    pub group: u32,
    pub pc: u32,
    pub matrix: Option<char>,
}

/// An ordinary write to a [`Fragment`]'s register before the wgmma's group was waited for: the
/// instruction, the warp's index in its block and the first lane, and the wgmma and its group.
#[derive(Clone, Copy, Debug)]
pub struct Clobber {
    pub pc: u32,
    pub warp: u32,
    pub lane: u32,
    pub wgmma_pc: u32,
    pub group: u32,
    pub matrix: Option<char>,
}

/// A `try_wait.parity` that passed: the mbarrier, the instruction, the first lane that passed,
/// the parity asked for, the phase under way when it passed, the warp's own clock then, which of
/// the warp's waits it was, and whether the warp's wait before on the same mbarrier had passed
/// on the same completed phase (it reads one fill twice).
#[derive(Clone, Copy, Debug)]
pub struct Passed {
    pub place: (usize, usize),
    pub pc: u32,
    pub lane: u32,
    pub parity: u32,
    pub phase: u32,
    pub clock: u32,
    pub wait: u32,
    pub again: bool,
}

impl Passed {
    /// The completed phase the wait found: the last one of its parity before the phase under way
    /// (None: none had completed, a wait for parity 1 in phase 0).
    pub fn found(&self) -> Option<u32> {
        let back = if self.phase.wrapping_sub(1) & 1 == self.parity { 1 } else { 2 };
        self.phase.checked_sub(back)
    }

    /// Whether the wait, not what freed the buffer, is why a read of the bytes of `phase` came too
    /// early: it passed before any phase completed, on a phase older than the one before
    /// `phase`, or on the phase it had passed on already.
    pub fn too_early_for(&self, phase: u32) -> bool {
        match self.found() {
            None => true,
            Some(f) => f + 1 < phase || (self.again && f < phase),
        }
    }
}

/// What a warp has released to the cluster's scope (see [`super::cluster`]): its clock at its last
/// release of that scope (a fence of cluster scope or wider, `fence.mbarrier_init` among them, or a
/// `barrier.cluster.arrive` without `.relaxed`), whether it initialised an mbarrier since, and a
/// relaxed `barrier.cluster.arrive` it made while such an init was unreleased.
#[derive(Clone, Debug, Default)]
pub struct Released {
    pub clock: Vec<u32>,
    pub init_since: bool,
    pub relaxed_arrive: Option<u32>,
}

/// A warp's epoch when it accessed a word (the word vector-clock race checks use: the warp's
/// slot and its own clock's count then), and the instruction.
pub type Epoch = (u32, u32, u32);

pub const NO_EPOCH: Epoch = (u32::MAX, 0, 0);

/// The last write and the last two reads (by different warps) of each word of a block's shared
/// memory.
#[derive(Clone, Copy, Debug)]
pub struct WordEpochs {
    pub write: Epoch,
    pub reads: [Epoch; 2],
}

pub const FRESH_ACCESS: WordEpochs = WordEpochs { write: NO_EPOCH, reads: [NO_EPOCH; 2] };

/// A block's accesses (empty when the sanitizer is off).
pub struct Accesses {
    pub words: Vec<WordEpochs>,
    /// The latest epoch of each warp that used this block's memory from another block.
    pub remote: Vec<(u32, u32, u32)>,
}

impl Accesses {
    pub fn new(words: usize) -> Self {
        Accesses { words: vec![FRESH_ACCESS; words], remote: Vec::new() }
    }

    pub fn reset(&mut self) {
        self.words.fill(FRESH_ACCESS);
        self.remote.clear();
    }

    pub fn on(&self) -> bool {
        !self.words.is_empty()
    }
}

/// `a` takes the later of each of its epochs and `b`'s.
pub fn join(a: &mut [u32], b: &[u32]) {
    for (x, y) in a.iter_mut().zip(b) {
        *x = (*x).max(*y);
    }
}

//! What the sanitizer keeps beside shared memory for Hopper's asynchronous units: for each word,
//! what the copy engine and the tensor cores did to it ([`AsyncShadow`], used by
//! [`super::async_proxy`]), and which warp's step last wrote and read it ([`Accesses`], used by
//! [`super::order`]). Plain data, below every other part of the machine.

pub const NONE: u32 = u32::MAX;

/// What the asynchronous proxy did to one word of shared memory (see the module's text).
#[derive(Clone, Copy, Debug)]
pub struct Word {
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

pub const FRESH: Word =
    Word { filled: (NONE, 0), filled_pc: 0, written: (NONE, 0, 0), wgmma: (NONE, 0, 0), bulk: (NONE, 0, 0) };

/// The async proxy's shadow of a block's shared memory (empty when the sanitizer is off).
pub struct AsyncShadow {
    pub words: Vec<Word>,
}

impl AsyncShadow {
    pub fn new(words: usize) -> Self {
        AsyncShadow { words: vec![FRESH; words] }
    }

    pub fn reset(&mut self) {
        self.words.fill(FRESH);
    }

    pub fn on(&self) -> bool {
        !self.words.is_empty()
    }
}

/// A warp's step that accessed a word: its slot, its clock then, and the instruction.
pub type Step = (u32, u32, u32);

pub const NO_STEP: Step = (u32::MAX, 0, 0);

/// The last write and the last two reads (by different warps) of each word of a block's shared
/// memory.
#[derive(Clone, Copy, Debug)]
pub struct Access {
    pub write: Step,
    pub reads: [Step; 2],
}

pub const FRESH_ACCESS: Access = Access { write: NO_STEP, reads: [NO_STEP; 2] };

/// A block's accesses (empty when the sanitizer is off).
pub struct Accesses {
    pub words: Vec<Access>,
    /// The latest step of each warp that used this block's memory from another block.
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

/// `a` takes the later of each of its steps and `b`'s.
pub fn join(a: &mut [u32], b: &[u32]) {
    for (x, y) in a.iter_mut().zip(b) {
        *x = (*x).max(*y);
    }
}

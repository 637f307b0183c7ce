//! The emulated memories: global buffers at addresses of their own, and the windows through
//! which a generic address reaches a block's shared memory or a thread's local memory.
//!
//! Global memory is kept as 32-bit atomic words, so that blocks run on several host threads at
//! once share it soundly: plain accesses are relaxed atomic loads and stores (ordinary moves on
//! the host), atomics are atomics, and a fence is a fence.

use std::sync::atomic::{AtomicU32, Ordering};

/// Allocation `i` starts at `(i + 1) << BUFFER_SHIFT`; buffer 0 holds the module's own variables.
pub const BUFFER_SHIFT: u32 = 36;
/// Where the module's `.global` variables live.
pub const GLOBALS_BASE: u64 = 1 << BUFFER_SHIFT;
/// A generic address at or above this (and below [`LOCAL_WINDOW`]) is in the block's shared memory.
pub const SHARED_WINDOW: u64 = 1 << 56;
/// A generic address at or above this (and below [`PARAM_WINDOW`]) is in the thread's local memory.
pub const LOCAL_WINDOW: u64 = 1 << 57;
/// A generic address at or above this is in the kernel's parameters (`cvta.param`: the address
/// of a `__grid_constant__` parameter, such as a tensor map).
pub const PARAM_WINDOW: u64 = 3 << 56;

/// One allocation of global memory.
pub struct Allocation {
    words: Box<[AtomicU32]>,
    bytes: usize,
    /// What the host calls it (`A`, `B`, `C`), for messages.
    name: String,
}

impl Allocation {
    fn new(bytes: usize, name: &str) -> Self {
        Allocation {
            words: (0..bytes.div_ceil(4)).map(|_| AtomicU32::new(0)).collect(),
            bytes,
            name: name.to_owned(),
        }
    }
}

/// Every global buffer, found from an address in constant time.
#[derive(Default)]
pub struct Global {
    buffers: Vec<Option<Allocation>>,
}

/// Where a global access landed: the buffer and the byte offset in it.
#[derive(Clone, Copy, Debug)]
pub struct BufferOffset {
    buffer: usize,
    offset: usize,
}

impl Global {
    /// A new buffer of `bytes` zeroed bytes called `name`, and its address.
    pub fn alloc(&mut self, bytes: usize, name: &str) -> u64 {
        self.buffers.push(Some(Allocation::new(bytes, name)));
        (self.buffers.len() as u64) << BUFFER_SHIFT
    }

    /// The name of the buffer `address` lies in, if it lies in one.
    pub fn name(&self, address: u64) -> Option<&str> {
        let i = self.index(address)?;
        self.buffers.get(i)?.as_ref().map(|b| b.name.as_str())
    }

    /// Where `len` bytes at an address that is in no buffer lie, for a message: the byte of the
    /// buffer they start at, past its end or running over it, or before every buffer.
    pub fn describe(&self, address: u64, len: usize) -> String {
        let live = self.index(address).and_then(|i| self.buffers.get(i)).and_then(|b| b.as_ref());
        match live {
            Some(b) => {
                let offset = (address & ((1 << BUFFER_SHIFT) - 1)) as usize;
                let (name, bytes) = (&b.name, b.bytes);
                if offset >= bytes {
                    format!("at byte {offset} of {name}, past the end of its {bytes} bytes")
                } else {
                    let last = offset + len - 1;
                    format!(
                        "at bytes {offset} to {last} of {name}, which runs past the end of its {bytes} bytes"
                    )
                }
            }
            None if address < (1 << BUFFER_SHIFT) => {
                "below every buffer (a null or negative index)".to_owned()
            }
            None => "outside every buffer".to_owned(),
        }
    }

    /// Each live buffer: its name, its address, and its 32-bit words in order (for a picture that
    /// finds which element of a matrix a value is).
    pub fn buffers(&self) -> impl Iterator<Item = (&str, u64, impl Iterator<Item = u32> + '_)> {
        self.buffers.iter().enumerate().filter_map(|(i, b)| {
            let b = b.as_ref()?;
            let words = b.words.iter().map(|w| w.load(Ordering::Relaxed));
            Some((b.name.as_str(), (i as u64 + 1) << BUFFER_SHIFT, words))
        })
    }

    /// The address of the buffer `address` lies in.
    pub fn start(&self, address: u64) -> u64 {
        address & !((1 << BUFFER_SHIFT) - 1)
    }

    /// Frees the buffer at `address` (its address is not given out again).
    pub fn free(&mut self, address: u64) {
        if let Some(slot) = self.index(address).and_then(|i| self.buffers.get_mut(i)) {
            *slot = None;
        }
    }

    fn index(&self, address: u64) -> Option<usize> {
        ((address >> BUFFER_SHIFT) as usize).checked_sub(1)
    }

    /// Where `len` bytes at `address` are, if they lie inside one live buffer.
    #[inline]
    pub fn place(&self, address: u64, len: usize) -> Option<BufferOffset> {
        let buffer = self.index(address)?;
        let b = self.buffers.get(buffer)?.as_ref()?;
        let offset = (address & ((1 << BUFFER_SHIFT) - 1)) as usize;
        (offset + len <= b.bytes).then_some(BufferOffset { buffer, offset })
    }

    #[inline]
    fn word(&self, p: BufferOffset, i: usize) -> &AtomicU32 {
        &self.buffers[p.buffer].as_ref().expect("placed in a live buffer").words[p.offset / 4 + i]
    }

    /// Reads `len` (1, 2, 4 or 8) bytes at an aligned place.
    #[inline]
    pub fn load(&self, p: BufferOffset, len: usize) -> u64 {
        match len {
            4 => u64::from(self.word(p, 0).load(Ordering::Relaxed)),
            8 => {
                u64::from(self.word(p, 0).load(Ordering::Relaxed))
                    | (u64::from(self.word(p, 1).load(Ordering::Relaxed)) << 32)
            }
            _ => {
                let w = self.word(p, 0).load(Ordering::Relaxed);
                let shift = 8 * (p.offset % 4);
                u64::from(w >> shift) & ((1u64 << (8 * len)) - 1)
            }
        }
    }

    /// Writes the low `len` bytes of `v` at an aligned place.
    #[inline]
    pub fn store(&self, p: BufferOffset, len: usize, v: u64) {
        match len {
            4 => self.word(p, 0).store(v as u32, Ordering::Relaxed),
            8 => {
                self.word(p, 0).store(v as u32, Ordering::Relaxed);
                self.word(p, 1).store((v >> 32) as u32, Ordering::Relaxed);
            }
            _ => {
                let shift = 8 * (p.offset % 4);
                let mask = (((1u64 << (8 * len)) - 1) as u32) << shift;
                let _ = self.word(p, 0).fetch_update(Ordering::Relaxed, Ordering::Relaxed, |w| {
                    Some((w & !mask) | (((v as u32) << shift) & mask))
                });
            }
        }
    }

    /// An atomic read-modify-write of the 4-byte word at an aligned place: `f` gives the new
    /// value from the old, which is returned.
    pub fn update32(&self, p: BufferOffset, f: impl Fn(u32) -> u32) -> u32 {
        self.word(p, 0).fetch_update(Ordering::SeqCst, Ordering::SeqCst, |w| Some(f(w))).unwrap_or_else(|w| w)
    }

    /// The same for an 8-byte word (two 4-byte halves, under a lock-free retry on the low one).
    pub fn update64(&self, p: BufferOffset, f: impl Fn(u64) -> u64) -> u64 {
        loop {
            let old = self.load(p, 8);
            let new = f(old);
            let lo = self.word(p, 0);
            if lo.compare_exchange(old as u32, new as u32, Ordering::SeqCst, Ordering::SeqCst).is_ok() {
                self.word(p, 1).store((new >> 32) as u32, Ordering::SeqCst);
                return old;
            }
        }
    }

    /// Copies `bytes` into the buffer at `address`.
    pub fn write(&self, address: u64, bytes: &[u8]) -> Option<()> {
        let p = self.place(address, bytes.len())?;
        if p.offset % 4 != 0 {
            return None;
        }
        for (i, chunk) in bytes.chunks(4).enumerate() {
            let mut w = [0u8; 4];
            w[..chunk.len()].copy_from_slice(chunk);
            if chunk.len() < 4 {
                let old = self.word(p, i).load(Ordering::Relaxed).to_le_bytes();
                w[chunk.len()..].copy_from_slice(&old[chunk.len()..]);
            }
            self.word(p, i).store(u32::from_le_bytes(w), Ordering::Relaxed);
        }
        Some(())
    }

    /// Reads `len` bytes at `address`.
    pub fn read(&self, address: u64, len: usize) -> Option<Vec<u8>> {
        let p = self.place(address, len)?;
        if p.offset % 4 != 0 {
            return None;
        }
        let mut out = Vec::with_capacity(len.next_multiple_of(4));
        for i in 0..len.div_ceil(4) {
            out.extend_from_slice(&self.word(p, i).load(Ordering::Relaxed).to_le_bytes());
        }
        out.truncate(len);
        Some(out)
    }
}

/// Little-endian reads and writes of a byte array (shared, local and parameter memory). The
/// sizes of a register (4 and 8 bytes) are moved as one word: a copy of a length known only at
/// run time is a call to `memcpy`, and the word read back after it waits for its bytes.
#[inline]
pub fn load_bytes(mem: &[u8], at: usize, len: usize) -> u64 {
    match len {
        4 => u64::from(u32::from_le_bytes(mem[at..at + 4].try_into().expect("4 bytes"))),
        8 => u64::from_le_bytes(mem[at..at + 8].try_into().expect("8 bytes")),
        _ => {
            let mut w = [0u8; 8];
            w[..len].copy_from_slice(&mem[at..at + len]);
            u64::from_le_bytes(w)
        }
    }
}

#[inline]
pub fn store_bytes(mem: &mut [u8], at: usize, len: usize, v: u64) {
    match len {
        4 => mem[at..at + 4].copy_from_slice(&(v as u32).to_le_bytes()),
        8 => mem[at..at + 8].copy_from_slice(&v.to_le_bytes()),
        _ => mem[at..at + len].copy_from_slice(&v.to_le_bytes()[..len]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_have_addresses_of_their_own_and_bounds() {
        let mut g = Global::default();
        let a = g.alloc(10, "A");
        let b = g.alloc(4, "B");
        assert_ne!(a, b);
        g.write(a, &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]).unwrap();
        assert_eq!(g.read(a, 10).unwrap(), vec![1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
        assert!(g.place(a + 8, 2).is_some());
        assert!(g.place(a + 8, 4).is_none(), "past the end of the buffer");
        assert_eq!(g.describe(a + 8, 4), "at bytes 8 to 11 of A, which runs past the end of its 10 bytes");
        // A read that starts where the buffer ends starts past it, not some bytes past it.
        assert_eq!(g.describe(a + 12, 4), "at byte 12 of A, past the end of its 10 bytes");
        let c = g.alloc(68, "B");
        assert_eq!(g.describe(c + 68, 4), "at byte 68 of B, past the end of its 68 bytes");
        assert_eq!(g.describe(0, 4), "below every buffer (a null or negative index)");
        assert!(g.place(0, 4).is_none(), "the null pointer is no buffer");
        let p = g.place(a + 1, 1).unwrap();
        assert_eq!(g.load(p, 1), 2);
        g.store(p, 1, 0xff);
        assert_eq!(g.read(a, 4).unwrap(), vec![1, 0xff, 3, 4]);
        g.free(b);
        assert!(g.place(b, 4).is_none(), "a freed buffer is gone");
    }
}

//! The race check on shared memory. Between two barriers (an *epoch*) each 4-byte word
//! remembers who last wrote it and who read it. A thread of another warp that writes a word
//! someone read or wrote, or reads a word someone wrote, in the same epoch, races with them:
//! on a GPU nothing orders the two accesses, so the result depends on timing.
//!
//! Threads of one warp are not compared with each other: the course's kernels never rely on
//! a warp's lanes being ordered among themselves without a barrier, and that is what
//! compute-sanitizer's racecheck reports too.

/// Who touched one word in which epoch (`NONE` for nobody).
#[derive(Clone, Copy)]
struct Word {
    write_epoch: u32,
    writer: u32,
    write_pc: u32,
    read_epoch: u32,
    /// The first reader, and a reader of another warp than the first (NONE if none).
    reader: u32,
    other_reader: u32,
    read_pc: u32,
    other_read_pc: u32,
}

const NONE: u32 = u32::MAX;

const FRESH: Word = Word {
    write_epoch: NONE,
    writer: NONE,
    write_pc: 0,
    read_epoch: NONE,
    reader: NONE,
    other_reader: NONE,
    read_pc: 0,
    other_read_pc: 0,
};

/// The shadow of a block's shared memory.
pub struct Shadow {
    words: Vec<Word>,
    epoch: u32,
    /// For each word, the thread (and instruction) of a `cp.async` that will write it and has
    /// not landed yet (NONE: none).
    pending: Vec<(u32, u32)>,
}

impl Shadow {
    pub fn new(words: usize) -> Self {
        Shadow { words: vec![FRESH; words], epoch: 0, pending: vec![(NONE, 0); words] }
    }

    /// A new block: nobody has touched anything.
    pub fn reset(&mut self) {
        self.words.fill(FRESH);
        self.pending.fill((NONE, 0));
        self.epoch = 0;
    }

    /// A `cp.async` of `thread` at instruction `pc` will write `word` when its group lands.
    pub fn issue(&mut self, word: usize, thread: u32, pc: u32) {
        if let Some(p) = self.pending.get_mut(word) {
            *p = (thread, pc);
        }
    }

    /// The copy that was to write `word` has landed.
    pub fn land(&mut self, word: usize) {
        if let Some(p) = self.pending.get_mut(word) {
            *p = (NONE, 0);
        }
    }

    /// The thread and instruction of a copy in flight to `word`, if there is one.
    pub fn in_flight(&self, word: usize) -> Option<(u32, u32)> {
        self.pending.get(word).copied().filter(|(t, _)| *t != NONE)
    }

    /// Every thread passed a barrier.
    pub fn barrier(&mut self) {
        self.epoch += 1;
    }

    /// Thread `thread` (of warp `thread / 32`) reads or writes `word` at instruction `pc`;
    /// returns the thread, instruction and kind (true: a write) of an access it races with.
    pub fn access(&mut self, word: usize, thread: u32, pc: u32, write: bool) -> Option<(u32, u32, bool)> {
        let w = self.words.get_mut(word)?;
        let warp = thread / 32;
        let e = self.epoch;
        if w.write_epoch == e && w.writer / 32 != warp {
            return Some((w.writer, w.write_pc, true));
        }
        if write {
            if w.read_epoch == e {
                if w.reader / 32 != warp {
                    return Some((w.reader, w.read_pc, false));
                }
                if w.other_reader != NONE {
                    return Some((w.other_reader, w.other_read_pc, false));
                }
            }
            w.write_epoch = e;
            w.writer = thread;
            w.write_pc = pc;
        } else if w.read_epoch != e {
            w.read_epoch = e;
            w.reader = thread;
            w.read_pc = pc;
            w.other_reader = NONE;
        } else if w.reader / 32 != warp && w.other_reader == NONE {
            w.other_reader = thread;
            w.other_read_pc = pc;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_and_another_warps_read_race_until_a_barrier() {
        let mut s = Shadow::new(4);
        assert_eq!(s.access(0, 3, 10, true), None);
        assert_eq!(s.access(0, 5, 11, false), None, "the same warp");
        assert_eq!(s.access(0, 40, 12, false), Some((3, 10, true)), "another warp reads what was written");
        s.barrier();
        assert_eq!(s.access(0, 40, 12, false), None);
        assert_eq!(s.access(0, 70, 12, false), None, "reads never race with reads");
        assert_eq!(s.access(0, 41, 13, true), Some((70, 12, false)), "a write after another warp's read");
        s.barrier();
        assert_eq!(s.access(1, 1, 1, true), None);
        assert_eq!(s.access(1, 33, 2, true), Some((1, 1, true)), "two writes");
    }
}

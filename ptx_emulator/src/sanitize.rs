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
struct WordTouch {
    write_epoch: u32,
    writer: u32,
    write_pc: u32,
    read_epoch: u32,
    /// The first reader, and a reader of another warp than the first (NONE if none).
    reader: u32,
    other_reader: u32,
    read_pc: u32,
    other_read_pc: u32,
    /// How often the accessing warp had run the instruction, counting this time: which trip of
    /// a loop the access was in.
    write_trip: u32,
    read_trip: u32,
    other_read_trip: u32,
}

const NONE: u32 = u32::MAX;

const FRESH: WordTouch = WordTouch {
    write_epoch: NONE,
    writer: NONE,
    write_pc: 0,
    read_epoch: NONE,
    reader: NONE,
    other_reader: NONE,
    read_pc: 0,
    other_read_pc: 0,
    write_trip: 0,
    read_trip: 0,
    other_read_trip: 0,
};

/// The shadow of a block's shared memory.
pub struct Shadow {
    words: Vec<WordTouch>,
    epoch: u32,
    /// For each word, the `cp.async` that will write it and has not landed yet (thread NONE:
    /// none).
    pending: Vec<CopyInFlight>,
}

/// A `cp.async` in flight to a word: its thread and instruction, the epoch it was issued in, and
/// whether the word had been read in that epoch before it (the copy overwrites a buffer whose
/// reads no barrier has ended yet).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CopyInFlight {
    pub thread: u32,
    pub pc: u32,
    pub epoch: u32,
    pub after_reads: bool,
}

const NO_COPY: CopyInFlight = CopyInFlight { thread: NONE, pc: 0, epoch: 0, after_reads: false };

impl Shadow {
    pub fn new(words: usize) -> Self {
        Shadow { words: vec![FRESH; words], epoch: 0, pending: vec![NO_COPY; words] }
    }

    /// A new block: nobody has touched anything.
    pub fn reset(&mut self) {
        self.words.fill(FRESH);
        self.pending.fill(NO_COPY);
        self.epoch = 0;
    }

    /// A `cp.async` of `thread` at instruction `pc` will write `word` when its group lands.
    pub fn issue(&mut self, word: usize, thread: u32, pc: u32) {
        let after_reads = self.words.get(word).is_some_and(|w| w.read_epoch == self.epoch);
        if let Some(p) = self.pending.get_mut(word) {
            *p = CopyInFlight { thread, pc, epoch: self.epoch, after_reads };
        }
    }

    /// The copy that was to write `word` has landed.
    pub fn land(&mut self, word: usize) {
        if let Some(p) = self.pending.get_mut(word) {
            *p = NO_COPY;
        }
    }

    /// The copy in flight to `word`, if there is one.
    pub fn in_flight(&self, word: usize) -> Option<CopyInFlight> {
        self.pending.get(word).copied().filter(|p| p.thread != NONE)
    }

    /// Whether a copy in flight was issued after reads of its word that no barrier has ended
    /// since: a read of the word now is one of those reads, not a read of the copy's bytes.
    pub fn overwrites_reads(&self, p: &CopyInFlight) -> bool {
        p.after_reads && p.epoch == self.epoch
    }

    /// Every thread passed a barrier.
    pub fn barrier(&mut self) {
        self.epoch += 1;
    }

    /// Thread `thread` (of warp `thread / 32`) reads or writes `word` at instruction `pc`, the
    /// `trip`-th time its warp runs it; returns the access it races with, if any.
    pub fn access(&mut self, word: usize, thread: u32, (pc, trip): (u32, u32), write: bool) -> Option<Other> {
        let w = self.words.get_mut(word)?;
        let warp = thread / 32;
        let e = self.epoch;
        if w.write_epoch == e && w.writer / 32 != warp {
            return Some(Other { thread: w.writer, pc: w.write_pc, trip: w.write_trip, write: true });
        }
        if write {
            if w.read_epoch == e {
                if w.reader / 32 != warp {
                    return Some(Other { thread: w.reader, pc: w.read_pc, trip: w.read_trip, write: false });
                }
                if w.other_reader != NONE {
                    return Some(Other {
                        thread: w.other_reader,
                        pc: w.other_read_pc,
                        trip: w.other_read_trip,
                        write: false,
                    });
                }
            }
            w.write_epoch = e;
            w.writer = thread;
            w.write_pc = pc;
            w.write_trip = trip;
        } else if w.read_epoch != e {
            w.read_epoch = e;
            w.reader = thread;
            w.read_pc = pc;
            w.read_trip = trip;
            w.other_reader = NONE;
        } else if w.reader / 32 != warp && w.other_reader == NONE {
            w.other_reader = thread;
            w.other_read_pc = pc;
            w.other_read_trip = trip;
        }
        None
    }
}

/// The earlier access a race is with: its thread, instruction, the trip of its warp through that
/// instruction, and whether it wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Other {
    pub thread: u32,
    pub pc: u32,
    pub trip: u32,
    pub write: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn other(thread: u32, pc: u32, trip: u32, write: bool) -> Option<Other> {
        Some(Other { thread, pc, trip, write })
    }

    #[test]
    fn a_write_and_another_warps_read_race_until_a_barrier() {
        let mut s = Shadow::new(4);
        assert_eq!(s.access(0, 3, (10, 1), true), None);
        assert_eq!(s.access(0, 5, (11, 1), false), None, "the same warp");
        assert_eq!(
            s.access(0, 40, (12, 1), false),
            other(3, 10, 1, true),
            "another warp reads what was written"
        );
        s.barrier();
        assert_eq!(s.access(0, 40, (12, 1), false), None);
        assert_eq!(s.access(0, 70, (12, 1), false), None, "reads never race with reads");
        assert_eq!(
            s.access(0, 41, (13, 2), true),
            other(70, 12, 1, false),
            "a write after another warp's read"
        );
        s.barrier();
        assert_eq!(s.access(1, 1, (1, 3), true), None);
        assert_eq!(s.access(1, 33, (2, 3), true), other(1, 1, 3, true), "two writes");
    }

    #[test]
    fn a_copy_issued_after_reads_of_its_epoch_overwrites_them() {
        let mut s = Shadow::new(4);
        assert_eq!(s.access(0, 3, (10, 1), false), None);
        s.issue(0, 3, 20);
        s.issue(1, 3, 20);
        let (read, fresh) = (s.in_flight(0).unwrap(), s.in_flight(1).unwrap());
        assert!(s.overwrites_reads(&read), "word 0 was read in this epoch before the copy");
        assert!(!s.overwrites_reads(&fresh), "word 1 was not");
        s.barrier();
        assert!(!s.overwrites_reads(&read), "a barrier since the issue: the copy's bytes are awaited");
        s.land(0);
        assert_eq!(s.in_flight(0), None);
    }
}

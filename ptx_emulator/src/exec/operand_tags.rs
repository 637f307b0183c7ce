//! The tags of [operands](super::operands): which element of the kernel's A or B each word of
//! shared memory and each register holds, while it still holds it. The machine's state keeps
//! them; the hooks in `operands.rs` set them and check `mma.sync`'s operands against them.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use crate::inst::Src;

use super::lanes::{Lanes, SectorHasher};

/// The element of the kernel's A or B a word or register holds: the matrix (`A` or `B`), its
/// row and column, the bits it held when tagged, the `cp.async` that wrote its bytes and the
/// `ldmatrix` that read them into a register (0 until then).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tag {
    pub matrix: char,
    pub row: i64,
    pub col: i64,
    pub bits: u32,
    pub copy_pc: u32,
    pub load_pc: u32,
}

/// Every block's tagged words and every warp's tagged registers (empty when the sanitizer is
/// off). A register's tags, one a lane, are kept together under [`reg_key`] in a map with a
/// one-multiply hash: every traced `ld.shared` and `ldmatrix` sets or clears one a lane, and
/// `mma.sync`'s check reads an operand register's 32 lanes with one look-up.
#[derive(Default)]
pub struct OperandTags {
    pub(super) words: Vec<Vec<Option<Tag>>>,
    pub(super) regs: HashMap<u64, Box<[Option<Tag>; 32]>, BuildHasherDefault<SectorHasher>>,
}

/// The key of register `reg` of the warp in slot `slot`.
#[inline]
fn reg_key(slot: usize, reg: u32) -> u64 {
    (slot as u64) << 32 | u64::from(reg)
}

impl OperandTags {
    pub fn reset(&mut self) {
        self.words.iter_mut().for_each(|w| w.fill(None));
        self.regs.clear();
    }

    pub(super) fn set_word(&mut self, rank: usize, word: usize, tag: Option<Tag>) {
        if self.words.len() <= rank {
            self.words.resize_with(rank + 1, Vec::new);
        }
        let words = &mut self.words[rank];
        if words.len() <= word {
            if tag.is_none() {
                return;
            }
            words.resize(word + 1, None);
        }
        words[word] = tag;
    }

    /// The tag of a word that still holds `bits`.
    pub(super) fn word(&self, rank: usize, word: usize, bits: u32) -> Option<Tag> {
        self.words.get(rank)?.get(word).copied().flatten().filter(|t| t.bits == bits)
    }

    /// The tag of a register that still holds `bits`.
    #[inline]
    pub(super) fn reg(&self, slot: usize, reg: u32, lane: usize, bits: u32) -> Option<Tag> {
        self.lanes(slot, reg)?[lane].filter(|t| t.bits == bits)
    }

    /// The tags of register `reg` of the warp in slot `slot`, a lane each (None where no lane
    /// of it was ever traced).
    #[inline]
    pub(super) fn lanes(&self, slot: usize, reg: u32) -> Option<&[Option<Tag>; 32]> {
        if self.regs.is_empty() {
            return None;
        }
        self.regs.get(&reg_key(slot, reg)).map(|lanes| &**lanes)
    }

    /// Register `reg` of lane `lane` of the warp in slot `slot` takes `tag`, or loses its own.
    #[inline]
    pub(super) fn set_reg(&mut self, slot: usize, reg: u32, lane: usize, tag: Option<Tag>) {
        match tag {
            Some(t) => {
                self.regs.entry(reg_key(slot, reg)).or_insert_with(|| Box::new([None; 32]))[lane] = Some(t)
            }
            // Nothing to clear where no lane of the register is traced (in a kernel that copies
            // nothing of A or B with cp.async or the copy engine, none is).
            None => {
                if let Some(lanes) = self.regs.get_mut(&reg_key(slot, reg)) {
                    lanes[lane] = None;
                }
            }
        }
    }

    /// `mov` or `cvt` wrote register `d` from `a` for the lanes of `exec`: a traced source carries
    /// its tag on, with the bits the destination now holds.
    pub fn carry(&mut self, slot: usize, d: u32, a: Src, exec: u32, regs: &[[u64; 32]]) {
        if self.regs.is_empty() {
            return;
        }
        for l in Lanes(exec) {
            let traced = match a {
                Src::Reg(x) => self.reg(slot, x, l, regs[x as usize][l] as u32).filter(|_| x != d),
                Src::Imm(_) => None,
            };
            let bits = regs[d as usize][l] as u32;
            self.set_reg(slot, d, l, traced.map(|t| Tag { bits, ..t }));
        }
    }
}

//! The tags of [operands](super::operands): which element of the kernel's A or B each word of
//! shared memory and each register holds, while it still holds it. The machine's state keeps
//! them; the hooks in `operands.rs` set them and check `mma.sync`'s operands against them.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use crate::inst::Src;

use super::lanes::Lanes;
use super::state::SectorHasher;

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
/// off). A register's tag is kept under [`reg_key`] in a map with a one-multiply hash: every
/// traced `ld.shared` and `ldmatrix` sets or clears one a lane.
#[derive(Default)]
pub struct OperandTags {
    pub(super) words: Vec<Vec<Option<Tag>>>,
    pub(super) regs: HashMap<u64, Tag, BuildHasherDefault<SectorHasher>>,
}

/// The key of register `reg` of lane `lane` of the warp in slot `slot`.
#[inline]
fn reg_key(slot: usize, reg: u32, lane: usize) -> u64 {
    (slot as u64) << 40 | u64::from(reg) << 8 | lane as u64
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
        if self.regs.is_empty() {
            return None;
        }
        self.regs.get(&reg_key(slot, reg, lane)).copied().filter(|t| t.bits == bits)
    }

    /// Register `reg` of lane `lane` of the warp in slot `slot` takes `tag`, or loses its own.
    #[inline]
    pub(super) fn set_reg(&mut self, slot: usize, reg: u32, lane: usize, tag: Option<Tag>) {
        match tag {
            Some(t) => {
                self.regs.insert(reg_key(slot, reg, lane), t);
            }
            // Nothing to clear where no register is traced (a kernel that copies nothing of A
            // or B with cp.async or the copy engine).
            None if self.regs.is_empty() => {}
            None => {
                self.regs.remove(&reg_key(slot, reg, lane));
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

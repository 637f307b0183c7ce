//! OperandTags traced to their elements, for `mma.sync` and a `wgmma` whose A is in registers. A
//! `cp.async` that lands bytes of the kernel's A or B in shared memory tags each 4-byte word with
//! the element it holds (its row and column) and the copy (the copy engine's words have theirs in
//! the sanitizer's record of the async proxy); an `ldmatrix` hands a word's tag to the register
//! it fills, an `ld.shared` of 32-bit words does the same, and `mov` and `cvt` carry a register's
//! tag on. A tag holds only while the word or register still has the bits it was tagged with:
//! anything else that writes it leaves it untraced, and an untraced operand is never checked.
//! The tags themselves are kept in `operand_tags.rs`, beside the machine's state.
//!
//! At `mma.sync.m16n8k8` the traced operand registers must hold what the instruction's fragment
//! layout needs (see [`first_misplaced`]): the same stretch of K in both operands, and one row of
//! A or column of B for each of an operand's rows or columns. The first register that holds
//! another element is the fault, in one sentence that names the lane, the register, the element
//! needed and the element held, and where its bytes came from.

use crate::inst::Inst;
use crate::{Fault, FaultKind};

use super::operand_tags::Tag;
use super::state::Cluster;

/// Which operand of `mma.sync.m16n8k8` a register is, and where its element sits: the first
/// operand's (row, k) or the second's (k, column).
#[derive(Clone, Copy)]
struct OperandSite {
    operand: usize,
    register: usize,
    lane: usize,
    row: i64,
    k: i64,
}

impl Cluster<'_> {
    /// A `cp.async` of `size` bytes (`src_size` of them read) landed at byte `dst` of the running
    /// block from global `src`, by the instruction at `pc`: each whole word read from A or B is
    /// tagged with its element; the rest of the bytes lose their tags.
    pub(super) fn tag_copy(&mut self, dst: usize, src: u64, (size, src_size): (usize, usize), pc: u32) {
        let shape = self.shape();
        for i in (0..size).step_by(4) {
            let word = (dst + i) / 4;
            let address = src + i as u64;
            let element = (i + 4 <= src_size)
                .then(|| self.global.name(address))
                .flatten()
                .and_then(|name| name.chars().next().filter(|_| name == "A" || name == "B"))
                .zip(shape);
            let tag = element.map(|(matrix, [_, n, k])| {
                let cols = if matrix == 'A' { k } else { n };
                let index = ((address - self.global.start(address)) / 4) as i64;
                let at = dst + i;
                let bits = u32::from_le_bytes(self.shared()[at..at + 4].try_into().expect("4 bytes"));
                Tag {
                    matrix,
                    row: index / cols.max(1),
                    col: index % cols.max(1),
                    bits,
                    copy_pc: pc,
                    load_pc: 0,
                }
            });
            self.operands.set_word(self.rank, word, tag);
        }
    }

    /// An ordinary write of `len` bytes at byte `at` of the running block: its words are no
    /// longer a copy's.
    pub(super) fn untag_words(&mut self, at: usize, len: usize) {
        for word in at / 4..(at + len).div_ceil(4) {
            self.operands.set_word(self.rank, word, None);
        }
    }

    /// `ldmatrix` (not transposed) at `pc` filled register `d` of lane `lane` with the word at
    /// byte `at` of the running block, now `bits`: the register takes the word's tag.
    pub(super) fn tag_loaded(&mut self, pc: u32, d: u32, lane: usize, at: usize, bits: u32) {
        // Nothing to do in a kernel that copies nothing of A or B.
        let copied = self.operands.words.get(self.rank).is_some_and(|w| !w.is_empty());
        if self.operands.regs.is_empty() && !copied && !self.ctas[self.rank].async_shadow.on() {
            return;
        }
        let tag = self.operands.word(self.rank, at / 4, bits).or_else(|| self.copied(at, bits));
        let tag = tag.map(|t| Tag { load_pc: pc, ..t });
        self.operands.set_reg(self.slot, d, lane, tag);
    }

    /// The element of A or B the copy engine put at byte `at` of the running block (from the
    /// sanitizer's record of the async proxy), for a matrix's two-dimensional map.
    fn copied(&self, at: usize, bits: u32) -> Option<Tag> {
        let shadow = &self.ctas[self.rank].async_shadow;
        let o = shadow.origin(at)?;
        let map = &shadow.maps[o.map as usize];
        let name = self.global.name(map.address)?;
        let matrix = name.chars().next().filter(|_| (name == "A" || name == "B") && map.rank == 2)?;
        let col = (i64::from(o.at[0]) + (at % 16) as i64) / i64::from(map.element.max(1));
        let copy_pc = shadow.words[at / 4].filled_pc;
        Some(Tag { matrix, row: i64::from(o.at[1]), col, bits, copy_pc, load_pc: 0 })
    }

    /// `mma.sync.m16n8k8` reads the first operand from registers `a` and the second from `b` of
    /// the running warp (a `wgmma` with A in registers: `a` alone, the same layout for the warp's
    /// 16 rows): their traced registers must hold what the fragment layout needs.
    pub(super) fn check_operands(
        &self,
        inst: &Inst,
        warp: u32,
        (a, b): (&[u32], &[u32]),
        regs: &[[u64; 32]],
    ) -> Result<(), Fault> {
        let mut operands = [Vec::new(), Vec::new()];
        for (operand, registers) in [(0usize, a), (1, b)] {
            let tags: Vec<Option<&[Option<Tag>; 32]>> =
                registers.iter().map(|&reg| self.operands.lanes(self.slot, reg)).collect();
            if tags.iter().all(Option::is_none) {
                continue;
            }
            // Lane by lane, register by register: the first register a fault names is the
            // lowest lane's.
            for lane in 0..32 {
                for (register, (&reg, lanes)) in registers.iter().zip(&tags).enumerate() {
                    let Some(tag) = lanes.and_then(|l| l[lane]) else { continue };
                    if tag.bits != regs[reg as usize][lane] as u32 {
                        continue;
                    }
                    let (g, t) = ((lane / 4) as i64, (lane % 4) as i64);
                    // First operand: p0 (g, t), p1 (g + 8, t), p2 (g, t + 4), p3 (g + 8, t + 4);
                    // second: q0 (k t, column g), q1 (k t + 4, column g).
                    let (row, k) = match operand {
                        0 => (g + 8 * (register as i64 % 2), t + 4 * (register as i64 / 2)),
                        _ => (g, t + 4 * register as i64),
                    };
                    operands[operand].push((OperandSite { operand, register, lane, row, k }, tag));
                }
            }
        }
        match first_misplaced(&operands) {
            Some((place, needed, held)) => Err(self.misplaced(inst, warp, place, needed, held)),
            None => Ok(()),
        }
    }

    fn misplaced(&self, inst: &Inst, warp: u32, p: OperandSite, (row, col): (i64, i64), held: Tag) -> Fault {
        // The fragment as the kernel's C = A·B names it: the instruction's first operand may hold B.
        let m = held.matrix;
        let what = match p.operand {
            0 => format!(
                "its register {} of {m}'s fragment (row {}, k {} of the instruction's first operand)",
                p.register, p.row, p.k
            ),
            _ => format!(
                "its register {} of {m}'s fragment (k {}, column {} of the instruction's second operand)",
                p.register, p.k, p.row
            ),
        };
        self.fault(
            FaultKind::Layout,
            format!(
                "{} (lane {}) reads, at {}, {what} holding {m}[{}][{}] where the fragment layout needs {m}[{row}][{col}]: its bytes were copied there at {} and loaded into the register at {}",
                self.who(warp, p.lane),
                p.lane,
                self.at(inst),
                held.row,
                held.col,
                self.at(&self.k.insts[held.copy_pc as usize]),
                self.at(&self.k.insts[held.load_pc as usize]),
            ),
        )
    }
}

/// The index along K of the element a tag names (A's column, B's row), and the other index.
fn split(t: &Tag) -> (i64, i64) {
    if t.matrix == 'A' { (t.col, t.row) } else { (t.row, t.col) }
}

/// The element of `matrix` at index `k` along K and `other` across it, as (row, column).
fn join(matrix: char, k: i64, other: i64) -> (i64, i64) {
    if matrix == 'A' { (other, k) } else { (k, other) }
}

/// The index most of `values` share, where one is shared by more than any other (`values` are
/// sorted in place).
fn most(values: &mut [i64]) -> Option<(i64, usize)> {
    // Sorted, equal values stand together: the longest stretch wins, unless another is as long.
    values.sort_unstable();
    let (mut best, mut tied) = (None::<(i64, usize)>, false);
    for stretch in values.chunk_by(|a, b| a == b) {
        let n = stretch.len();
        match best {
            Some((_, top)) if n < top => {}
            Some((_, top)) if n == top => tied = true,
            _ => (best, tied) = (Some((stretch[0], n)), false),
        }
    }
    best.filter(|_| !tied)
}

/// The first traced register (first operand, then second; by lane, then register) that holds
/// another element than the layout needs: the register, the element needed and the tag held.
/// The instruction multiplies along one stretch of K: an operand's k is the same index of K in
/// both operands, k0 + k, with k0 the one most registers agree on. Across K the layout leaves the
/// order free (a kernel may give a fragment's rows any columns of B), but every register of an
/// operand's row (first operand) or column (second) must hold the same one, the one most of its
/// registers with the right k hold. None where the registers come from several matrices, from
/// neither A nor B, or agree on no k0 by a majority.
fn first_misplaced(operands: &[Vec<(OperandSite, Tag)>; 2]) -> Option<(OperandSite, (i64, i64), Tag)> {
    for traced in operands {
        let matrix = traced.first().map(|(_, t)| t.matrix);
        if traced.iter().any(|(_, t)| Some(t.matrix) != matrix || !matches!(t.matrix, 'A' | 'B')) {
            return None;
        }
    }
    let mut values: Vec<i64> = operands.iter().flatten().map(|(p, t)| split(t).0 - p.k).collect();
    let all = values.len();
    let (k0, agreed) = most(&mut values)?;
    if 2 * agreed <= all {
        return None;
    }
    for traced in operands {
        // Each row's element across K, found once: the one most of its registers with the right
        // k hold, else the one at its lowest k (the first such); no entry where none of them
        // has the right k. The registers with the right k, by row, in the operand's order.
        let mut right_k: Vec<(i64, usize, i64, i64)> = traced
            .iter()
            .enumerate()
            .filter(|(_, (q, u))| split(u).0 - q.k == k0)
            .map(|(i, (q, u))| (q.row, i, q.k, split(u).1))
            .collect();
        right_k.sort_unstable_by_key(|&(row, i, ..)| (row, i));
        let mut across: Vec<(i64, i64)> = Vec::new();
        for stretch in right_k.chunk_by(|a, b| a.0 == b.0) {
            let mut lowest = stretch[0];
            for &e in stretch {
                if e.2 < lowest.2 {
                    lowest = e;
                }
            }
            values.clear();
            values.extend(stretch.iter().map(|e| e.3));
            across.push((stretch[0].0, most(&mut values).map_or(lowest.3, |(o, _)| o)));
        }
        for (p, t) in traced {
            let (k, other) = split(t);
            let row = across.iter().find(|(row, _)| *row == p.row).map(|&(_, o)| o);
            let other = row.unwrap_or(other);
            let needed = join(t.matrix, k0 + p.k, other);
            if (t.row, t.col) != needed || k - p.k != k0 {
                return Some((*p, needed, *t));
            }
        }
    }
    None
}

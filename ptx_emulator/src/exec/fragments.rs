//! The registers a wgmma reads after it is issued. On a GPU the tensor cores read A's fragments
//! from the warp's registers while the wgmma is in flight, up to the `wgmma.wait_group` that
//! covers its group (the PTX ISA makes an access to them before that wait undefined); the
//! emulator reads them when the wgmma is issued. So an ordinary instruction that writes one of
//! those registers before the wait gives a GPU's product the new value, or a mix, where the
//! emulator multiplied the old one: the sanitizer names the write, the wgmma and the wait.
//!
//! The accumulators are left to ptxas: it sees the registers a wgmma defines and waits for the
//! wgmma itself before an instruction that uses them (its advisory C7517, which an emulated run
//! prints with the line), so there the emulator, which has the sums at issue, gives the GPU's C.
//! A wgmma of the chain that accumulates into them is no ordinary instruction, and stays legal.

use crate::inst::{DecodedKernel, Hopper, Op, R, Src};
use crate::{Fault, FaultKind};

use super::shadows::{Clobber, Fragment};
use super::state::{Cluster, Lanes};

/// For each instruction of `k`, the registers it writes that some wgmma of the kernel reads as
/// A's fragments; empty where no wgmma takes A from registers (nothing to check then).
pub fn fragment_writes(k: &DecodedKernel) -> Vec<Vec<R>> {
    let mut fragments: Vec<R> = Vec::new();
    for inst in &k.insts {
        if let Op::Hopper(Hopper::Wgmma(g)) = &inst.op {
            for s in g.a_regs.iter().flatten() {
                if let Src::Reg(r) = s {
                    fragments.push(*r);
                }
            }
        }
    }
    if fragments.is_empty() {
        return Vec::new();
    }
    fragments.sort_unstable();
    fragments.dedup();
    crate::recording::trace::statics(k)
        .into_iter()
        .zip(&k.insts)
        .map(|(s, inst)| match inst.op {
            Op::Hopper(Hopper::Wgmma(_)) => Vec::new(),
            _ => s.writes.into_iter().filter(|r| fragments.binary_search(r).is_ok()).collect(),
        })
        .collect()
}

impl Cluster<'_> {
    /// The running warp's wgmma at `pc` reads its operand A's fragments from `regs`, in the group
    /// now open; `held` is the kernel's matrix they hold, where the wgmma's other operand says.
    pub(super) fn fragments_read(&mut self, pc: u32, regs: &[Src], held: Option<char>) {
        if self.fragment_writes.is_empty() {
            return;
        }
        let group = self.pending[self.slot].wgmma_committed;
        let retired = self.pending[self.slot].wgmma_retired;
        self.pending[self.slot].fragments.retain(|f| f.group >= retired);
        for s in regs {
            if let Src::Reg(reg) = *s {
                // The matrix the register's elements came from, as the kernel's C = A·B names it.
                let tags = self.operands.lanes(self.slot, reg);
                let matrix = tags.and_then(|t| t.iter().flatten().next()).map(|t| t.matrix).or(held);
                let p = &mut self.pending[self.slot];
                match p.fragments.iter_mut().find(|f| f.reg == reg) {
                    // A register read untraced keeps the matrix it held before.
                    Some(f) => *f = Fragment { reg, group, pc, matrix: matrix.or(f.matrix) },
                    None => p.fragments.push(Fragment { reg, group, pc, matrix }),
                }
            }
        }
    }

    /// The instruction at `pc`, about to run for the lanes `exec` of warp `index`: where it
    /// writes a register a wgmma of the warp still in flight reads, the first such write is kept
    /// until the warp's wait for that wgmma (or its end) names it.
    #[inline]
    pub(super) fn fragments_written(&mut self, pc: u32, index: u32, exec: u32) {
        let Some(regs) = self.fragment_writes.get(pc as usize).filter(|r| !r.is_empty()) else {
            return;
        };
        let p = &mut self.pending[self.slot];
        if p.clobbered.is_some() {
            return;
        }
        let hit =
            regs.iter().find_map(|r| p.fragments.iter().find(|f| f.reg == *r && f.group >= p.wgmma_retired));
        if let Some(f) = hit {
            let lane = Lanes(exec).next().unwrap_or(0) as u32;
            p.clobbered =
                Some(Clobber { pc, warp: index, lane, wgmma_pc: f.pc, group: f.group, matrix: f.matrix });
        }
    }

    /// The running warp's `wgmma.wait_group` at `pc` has retired its groups below `retired`: a
    /// write kept by [`Self::fragments_written`] under one of them is the fault.
    pub(super) fn fragments_waited(&self, pc: u32, retired: u32) -> Result<(), Fault> {
        match self.pending[self.slot].clobbered {
            Some(c) if c.group < retired => Err(self.fragment_fault(c, Some(pc))),
            _ => Ok(()),
        }
    }

    /// The running warp has left with a write kept that no wait of it followed.
    pub(super) fn fragments_at_exit(&self) -> Result<(), Fault> {
        match self.pending[self.slot].clobbered {
            Some(c) => Err(self.fragment_fault(c, None)),
            None => Ok(()),
        }
    }

    #[cold]
    fn fragment_fault(&self, c: Clobber, wait: Option<u32>) -> Fault {
        let at = |pc: u32| self.at(&self.k.insts[pc as usize]);
        let waits = match wait {
            Some(pc) => format!(
                "its warp waits for that wgmma with the wgmma.wait_group at {}, after the write",
                at(pc)
            ),
            None => "its warp never waits for that wgmma with wgmma.wait_group".to_owned(),
        };
        // The fragment as the kernel's C = A·B names it: wgmma's operand A may hold B.
        // Untraced where it was written: the matrix another warp's read of the same wgmma saw.
        let seen = || {
            let all = self.pending.iter().flat_map(|p| &p.fragments);
            all.filter(|f| f.pc == c.wgmma_pc).find_map(|f| f.matrix)
        };
        let fragment = match c.matrix.or_else(seen) {
            Some(m @ ('A' | 'B')) => format!("{m}'s fragment (the wgmma's operand A)"),
            _ => "its operand A's fragment".to_owned(),
        };
        self.fault(
            FaultKind::Race,
            format!(
                "{} writes a register at {} that the wgmma at {} still reads as {fragment}: {waits} (on a GPU the tensor cores read the fragment's registers until that wait, so the wgmma may multiply the new value: write them after the wait, or use other registers)",
                self.who(c.warp, c.lane as usize),
                at(c.pc),
                at(c.wgmma_pc),
            ),
        )
    }
}

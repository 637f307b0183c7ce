//! What orders what, across the warps of a cluster: a vector clock per warp (the race check of
//! [`crate::sanitize`] orders accesses by the block's barriers alone; Hopper's kernels order
//! them by mbarriers, copies and the cluster barrier too).
//!
//! Each warp counts its own steps; a synchronisation hands on what the warps before it knew:
//! a block's barrier joins its threads' clocks, an arrival on an mbarrier gives the arriving
//! warp's clock to the phase and a wait that sees the phase complete takes it, a copy's landing
//! gives its issuing warp's clock to its mbarrier, and the cluster barrier joins everyone's. An
//! access *happens before* another when the second warp's clock has reached the first's step.
//!
//! Three hazards are checked with it, which the order the emulator happens to run warps in
//! would hide:
//! - a use of an mbarrier (an arrival, an expect_tx, a wait, a copy counted on it, a peer's
//!   arrival) by a warp that its `mbarrier.init` does not happen before: a block's barrier after
//!   the init orders it for the block, the cluster barrier for the cluster;
//! - a copy engine write that no synchronisation orders after another warp's access to the same
//!   bytes (a stage refilled while a warp may still read it, or read before the copy is issued);
//! - an access of a block's shared memory by a peer of its cluster (an arrival, a multicast
//!   copy) that is not ordered before the block's last thread leaves.

use crate::inst::Inst;
use crate::{Fault, FaultKind};

use super::shadows::{Access, NO_STEP, Step, join};
use super::state::{Cluster, Mbar, Warp};

impl Cluster<'_> {
    /// The running warp's step.
    fn step(&self, pc: u32) -> Step {
        (self.slot as u32, self.clocks[self.slot][self.slot], pc)
    }

    /// Whether a warp's step happens before what warp `slot` does now.
    fn ordered(&self, (s, clock, _): Step, slot: usize) -> bool {
        s == u32::MAX || s as usize == slot || self.clocks[slot][s as usize] >= clock
    }

    /// The running warp moves on a step (after it has handed its clock to a synchronisation).
    pub fn tick(&mut self) {
        let s = self.slot;
        self.clocks[s][s] += 1;
    }

    /// Warps `slots` met at a barrier: each knows what all knew.
    pub fn order_barrier(&mut self, slots: &[usize]) {
        let mut all = vec![0; self.clocks.len()];
        for &s in slots {
            join(&mut all, &self.clocks[s]);
        }
        for &s in slots {
            self.clocks[s].clone_from(&all);
            self.clocks[s][s] += 1;
        }
        self.seen_barrier(slots);
    }

    /// Notes an ordinary access of the running warp to `word` of the running block.
    pub fn note_access(&mut self, word: usize, pc: u32, write: bool) {
        if !self.ctas[self.rank].accesses.on() {
            return;
        }
        let step = self.step(pc);
        let a = &mut self.ctas[self.rank].accesses.words[word];
        if write {
            *a = Access { write: step, reads: [NO_STEP; 2] };
        } else if a.reads[0].0 == step.0 || a.reads[0].0 == u32::MAX {
            a.reads[0] = step;
        } else {
            a.reads[1] = step;
        }
    }

    /// A copy issued by the running warp at `inst` writes `word` of block `rank`: every access
    /// to it so far must happen before the issue.
    pub fn copy_writes(&mut self, inst: &Inst, pc: u32, rank: usize, word: usize) -> Result<(), Fault> {
        if !self.ctas[rank].accesses.on() {
            return Ok(());
        }
        let a = self.ctas[rank].accesses.words[word];
        for (other, what) in [(a.write, "written"), (a.reads[0], "read"), (a.reads[1], "read")] {
            if !self.ordered(other, self.slot) {
                let warps = self.warps.len() / self.ctas.len();
                let (s, _, opc) = other;
                let block = self.ctas[rank].ctaid;
                return Err(self.fault(
                    FaultKind::Race,
                    format!(
                        "shared-memory race: the copy issued at {} writes {} of block ({},{},{}), which warp {} {what} at {} with nothing between to order them (no mbarrier wait or barrier: the copy may land before or after)",
                        self.at(inst),
                        self.shared_place(word * 4),
                        block[0],
                        block[1],
                        block[2],
                        s as usize % warps,
                        self.at(&self.k.insts[opc as usize])
                    ),
                ));
            }
        }
        let step = self.step(pc);
        self.ctas[rank].accesses.words[word] = Access { write: step, reads: [NO_STEP; 2] };
        Ok(())
    }

    /// The running warp uses the shared memory of block `rank`, another of its cluster.
    pub fn note_remote(&mut self, rank: usize, pc: u32) {
        if rank == self.rank || !self.ctas[rank].accesses.on() {
            return;
        }
        let step = self.step(pc);
        let remote = &mut self.ctas[rank].accesses.remote;
        match remote.iter_mut().find(|r| r.0 == step.0) {
            Some(r) => *r = step,
            None => remote.push(step),
        }
    }

    /// Every thread of block `rank` has left, the last with clock `at_exit`: every use of its
    /// memory by its peers must happen before.
    pub fn check_exit(&self, rank: usize, at_exit: &[u32]) -> Result<(), Fault> {
        for &(s, clock, pc) in &self.ctas[rank].accesses.remote {
            if at_exit[s as usize] < clock {
                let warps = self.warps.len() / self.ctas.len();
                let peer = self.ctas[s as usize / warps].ctaid;
                let block = self.ctas[rank].ctaid;
                return Err(self.fault(
                    FaultKind::Race,
                    format!(
                        "block ({},{},{}) may leave while warp {} of block ({},{},{}) still uses its shared memory at {}: nothing orders that use before the block's end (a peer must wait, with barrier.cluster, until the others are done with it)",
                        block[0],
                        block[1],
                        block[2],
                        s as usize % warps,
                        peer[0],
                        peer[1],
                        peer[2],
                        self.at(&self.k.insts[pc as usize])
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Lane `l` of warp `w`, running now, uses the mbarrier `m` at byte `at` at `inst`: its
    /// initialisation must happen before.
    pub fn init_happened_before(
        &self,
        inst: &Inst,
        w: &Warp,
        l: usize,
        (rank, at): (usize, usize),
        m: &Mbar,
    ) -> Result<(), Fault> {
        let (s, clock, lane) = m.init;
        if self.ordered((s, clock, m.init_pc), self.slot) {
            return Ok(());
        }
        let warps = self.warps.len() / self.ctas.len();
        let initialiser = self.who_in(s as usize / warps, s % warps as u32, lane as usize);
        Err(self.fault(
            FaultKind::Race,
            format!(
                "{} uses {} at {} with nothing ordering the use after its mbarrier.init by {initialiser} at {} (a thread that did not initialise an mbarrier may use it only after a barrier that follows the init: __syncthreads() in its block, barrier.cluster for a peer block)",
                self.who(w.index, l),
                self.mbar_name(rank, at),
                self.at(inst),
                self.at(&self.k.insts[m.init_pc as usize])
            ),
        ))
    }
}

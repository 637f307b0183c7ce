//! What orders what, across the warps of a cluster: a vector clock per warp (the race check of
//! [`crate::sanitize`] orders accesses by the block's barriers alone; Hopper's kernels order
//! them by mbarriers, copies and the cluster barrier too).
//!
//! Each warp counts its own epochs; a synchronisation hands on what the warps before it knew:
//! a block's barrier joins its threads' clocks, an arrival on an mbarrier gives the arriving
//! warp's clock to the phase and a wait that sees the phase complete takes it, a copy's landing
//! gives its issuing warp's clock to its mbarrier, and the cluster barrier joins everyone's. An
//! access *happens before* another when the second warp's clock has reached the first's epoch.
//!
//! Three hazards are checked with it, which the order the emulator happens to run warps in
//! would hide:
//! - a use of an mbarrier (an arrival, an expect_tx, a wait, a copy counted on it, a peer's
//!   arrival) by a warp that its `mbarrier.init` does not happen before: a block's barrier after
//!   the init orders it for the block, the cluster barrier for the cluster;
//! - a copy engine write that no synchronisation orders after another warp's access to the same
//!   bytes (a buffer refilled while a warp may still read it, or read before the copy is issued);
//! - an access of a block's shared memory by a peer of its cluster (an arrival, a multicast
//!   copy) that is not ordered before the block's last thread leaves.

use crate::inst::Inst;
use crate::{Fault, FaultKind};

use super::shadows::{Epoch, NO_EPOCH, Passed, WordEpochs, join};
use super::state::{Cluster, Mbar, Warp};

impl Cluster<'_> {
    /// The running warp's epoch.
    fn epoch(&self, pc: u32) -> Epoch {
        (self.slot as u32, self.clocks[self.slot][self.slot], pc)
    }

    /// Whether a warp's epoch happens before what warp `slot` does now.
    pub(super) fn ordered(&self, (s, clock, _): Epoch, slot: usize) -> bool {
        s == u32::MAX || s as usize == slot || self.clocks[slot][s as usize] >= clock
    }

    /// The running warp moves on an epoch (after it has handed its clock to a synchronisation).
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
        let epoch = self.epoch(pc);
        let a = &mut self.ctas[self.rank].accesses.words[word];
        if write {
            *a = WordEpochs { write: epoch, reads: [NO_EPOCH; 2] };
        } else if a.reads[0].0 == epoch.0 || a.reads[0].0 == u32::MAX {
            a.reads[0] = epoch;
        } else {
            a.reads[1] = epoch;
        }
    }

    /// A copy issued by the running warp at `inst` writes `word` of block `rank`, for phase
    /// `phase` of the mbarrier at byte `bar`: every access to it so far must happen before the
    /// issue.
    pub fn copy_writes(
        &mut self,
        inst: &Inst,
        pc: u32,
        (rank, word): (usize, usize),
        (bar, phase): (usize, u32),
    ) -> Result<(), Fault> {
        if !self.ctas[rank].accesses.on() {
            return Ok(());
        }
        let a = self.ctas[rank].accesses.words[word];
        for (other, what) in [(a.write, "written"), (a.reads[0], "read"), (a.reads[1], "read")] {
            if !self.ordered(other, self.slot) {
                let warps = self.warps.len() / self.ctas.len();
                let (s, clock, opc) = other;
                let block = self.ctas[rank].ctaid;
                // A read after a wait on the copy's own mbarrier that passed for an earlier
                // phase: the wait is the cause, not a missing one.
                let passed = self.pending[s as usize].passed.iter().find(|p| p.place == (rank, bar)).copied();
                let why = match passed {
                    Some(p) if what == "read" && p.clock <= clock && p.too_early_for(phase) => {
                        format!(
                            "before the copy was issued: {}",
                            self.passed_too_early(&p, s as usize, phase)
                        )
                    }
                    _ => match self.arrival_elsewhere(s as usize, rank) {
                        Some(arrival) => format!("with nothing between to order them: {arrival}"),
                        None => "with nothing between to order them (no mbarrier wait or barrier: the copy may land before or after)".to_owned(),
                    },
                };
                return Err(self.fault(
                    FaultKind::Race,
                    format!(
                        "shared-memory race: the copy issued at {} writes {} of block ({},{},{}), which warp {} {what} at {} {why}",
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
        let epoch = self.epoch(pc);
        self.ctas[rank].accesses.words[word] = WordEpochs { write: epoch, reads: [NO_EPOCH; 2] };
        Ok(())
    }

    /// The running warp uses the shared memory of block `rank`, another of its cluster.
    pub fn note_remote(&mut self, rank: usize, pc: u32) {
        if rank == self.rank || !self.ctas[rank].accesses.on() {
            return;
        }
        let epoch = self.epoch(pc);
        let remote = &mut self.ctas[rank].accesses.remote;
        match remote.iter_mut().find(|r| r.0 == epoch.0) {
            Some(r) => *r = epoch,
            None => remote.push(epoch),
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

    /// A wait of warp `slot` that passed on an earlier phase than `phase`, the one whose bytes
    /// the warp reads, as a sentence's clause: the wait's line, the parity asked for, the phases
    /// under way and completed then, and why that is not the phase wanted.
    pub fn passed_too_early(&self, p: &Passed, slot: usize, phase: u32) -> String {
        self.passed_before(p, (slot, true), (phase, true))
    }

    /// The same for phase `phase` that the warp read (`read`) or needed, said of the warp that
    /// the sentence is about (`own`) or of another.
    fn passed_before(&self, p: &Passed, (slot, own): (usize, bool), (phase, read): (u32, bool)) -> String {
        let warps = self.warps.len() / self.ctas.len();
        let rank = slot / warps;
        let wait = self.at(&self.k.insts[p.pc as usize]);
        let whose = if own {
            format!("its wait at {wait}")
        } else {
            format!("the wait of {} at {wait}", self.who_in(rank, (slot % warps) as u32, p.lane as usize))
        };
        let name = self.mbar_name_from(rank, p.place.0, p.place.1);
        let passed = match p.found() {
            None => format!(
                "passed at once in phase {}, before any phase of parity {} had completed (for a barrier in its first phase, parity 1 names the phase before it, which counts as complete)",
                p.phase, p.parity
            ),
            Some(f) if p.again => {
                format!(
                    "passed on phase {f} again, which it had passed on already, while phase {} was under way",
                    p.phase
                )
            }
            Some(f) => {
                format!("passed on phase {f}, completed earlier, while phase {} was under way", p.phase)
            }
        };
        let what = if read {
            format!("the bytes read are phase {phase}'s")
        } else {
            format!("it needed phase {phase}")
        };
        let verdict = if p.parity != phase & 1 {
            format!("a wait on the wrong parity ({what}, of parity {})", phase & 1)
        } else {
            format!(
                "a wait for a phase of the right parity but too early ({what}, {} phases later: check the count the parity is taken from)",
                phase - p.found().unwrap_or(0)
            )
        };
        format!("{whose} for the phase of parity {} of {name} {passed}: {verdict}", p.parity)
    }

    /// Lane `l` of warp `w`, running now, arrives on the mbarrier `m` at byte `at` at `inst`:
    /// an arrival on phase k + 1 must happen after phase k completed, or it belongs to the same
    /// use of the barrier as phase k's arrivals, which then outnumber the count.
    pub fn arrival_after_phase(
        &self,
        inst: &Inst,
        w: &Warp,
        l: usize,
        (rank, at): (usize, usize),
        m: &Mbar,
    ) -> Result<(), Fault> {
        if m.phase == 0 || !self.launch.sanitize {
            return Ok(());
        }
        let done = &m.done[((m.phase - 1) & 1) as usize];
        if self.clocks[self.slot].iter().zip(done).all(|(mine, d)| mine >= d) {
            return Ok(());
        }
        // A wait that passed too early, of this warp's or of one whose arrivals completed the
        // phase before, let warps run ahead of the barrier's phases: the count is not the cause.
        let own = (self.pending[self.slot].passed.iter())
            .filter(|p| p.again || p.found().is_none())
            .max_by_key(|p| p.clock)
            .map(|p| (self.slot, p));
        let other = || {
            (self.pending.iter().enumerate())
                .find_map(|(s, pending)| pending.passed.iter().find(|p| p.again).map(|p| (s, p)))
        };
        let stale = own.or_else(other);
        if stale.is_none() && m.repeated {
            // A warp went round and arrived twice in the phase before without waiting: the
            // count fits, and the race its reads make names the missing wait.
            return Ok(());
        }
        if let Some((slot, p)) = stale {
            let needed = p.found().map_or(0, |f| f + 1);
            return Err(self.fault(
                FaultKind::Barrier,
                format!(
                    "{} arrives on {} at {} in phase {} with nothing ordering it after phase {}'s completion: {}",
                    self.who(w.index, l),
                    self.mbar_name(rank, at),
                    self.at(inst),
                    m.phase,
                    m.phase - 1,
                    self.passed_before(p, (slot, slot == self.slot), (needed, false))
                ),
            ));
        }
        let warps = self.warps.len() / self.ctas.len();
        let completer = match m.completed_by {
            Some((s, lane, pc)) => format!(
                "which the arrival of {} at {} completed",
                self.who_in(s as usize / warps, s % warps as u32, lane as usize),
                self.at(&self.k.insts[pc as usize])
            ),
            None => "which its copies' bytes completed".to_owned(),
        };
        Err(self.fault(
            FaultKind::Barrier,
            format!(
                "{} gets {} arrivals on a phase that counts {}, set at the mbarrier.init at {}: {} arrives at {} with nothing ordering it after phase {}, {completer}, so it belongs to the same use of the barrier, and on a GPU it counts toward phase {} instead (the count of the init is lower than the arrivals the kernel makes for one phase)",
                self.mbar_name(rank, at),
                m.expected + 1,
                m.expected,
                self.at(&self.k.insts[m.init_pc as usize]),
                self.who(w.index, l),
                self.at(inst),
                m.phase - 1,
                m.phase
            ),
        ))
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
        if let Some(arrive) = self.released[s as usize].relaxed_arrive {
            return Err(self.fault(
                FaultKind::Race,
                format!(
                    "{} uses {} at {} with nothing ordering the use after its mbarrier.init by {initialiser} at {}: the barrier.cluster.arrive.relaxed at {} releases nothing, and no fence.mbarrier_init.release.cluster comes between the init and that arrive",
                    self.who(w.index, l),
                    self.mbar_name(rank, at),
                    self.at(inst),
                    self.at(&self.k.insts[m.init_pc as usize]),
                    self.at(&self.k.insts[arrive as usize])
                ),
            ));
        }
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

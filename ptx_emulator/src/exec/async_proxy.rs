//! The async proxy's shadow of shared memory, for the sanitizer: for each word, which copy filled
//! it and for which phase of which mbarrier, which ordinary store wrote it last and whether that
//! thread has fenced the async proxy since (`fence.proxy.async`), and which wgmma or bulk store
//! may still be reading it. From these, an ordinary read of bytes whose copy the warp has not seen
//! land, a store to bytes the tensor cores or the copy engine may still read, and an async read
//! of bytes stored without a proxy fence are each named in one sentence.

use crate::inst::Inst;
use crate::{Fault, FaultKind};

use super::shadows::{FRESH, NONE, Word};
use super::state::Cluster;

impl Cluster<'_> {
    /// The copy engine writes bytes `at..at + len` of block `rank`, for the phase `filled` of an
    /// mbarrier: nothing may still be reading them asynchronously.
    pub(super) fn async_write(
        &mut self,
        rank: usize,
        at: usize,
        len: usize,
        filled: (u32, u32),
        pc: u32,
    ) -> Result<(), Fault> {
        for word in at / 4..(at + len).div_ceil(4) {
            let old = self.ctas[rank].async_shadow.words[word];
            let (slot, group, rpc) = old.wgmma;
            if slot != NONE && group >= self.pending[slot as usize].wgmma_retired {
                return Err(self.fault(
                    FaultKind::Race,
                    format!(
                        "the copy engine overwrites {}{}, issued at {}, while the wgmma at {} may still read it (its warp has not waited for it with wgmma.wait_group)",
                        self.shared_place(word * 4),
                        self.peer_block(rank),
                        self.at(&self.k.insts[pc as usize]),
                        self.at(&self.k.insts[rpc as usize])
                    ),
                ));
            }
            let w = &mut self.ctas[rank].async_shadow.words[word];
            *w = Word { filled, filled_pc: pc, ..FRESH };
        }
        Ok(())
    }

    /// An ordinary access of a lane to shared bytes `at..at + len` of the running block, checked
    /// against the async proxy: a read of bytes whose copy the warp has not seen land, a write to
    /// bytes a wgmma or bulk store may still read. A write is remembered for the proxy-fence check.
    pub fn check_async(
        &mut self,
        inst: &Inst,
        pc: u32,
        (w, l): (u32, usize),
        at: usize,
        len: usize,
        write: bool,
    ) -> Result<(), Fault> {
        if !self.ctas[self.rank].async_shadow.on() {
            return Ok(());
        }
        let slot = self.slot;
        let thread = (slot * 32 + l) as u32;
        for word in at / 4..(at + len).div_ceil(4) {
            let wd = self.ctas[self.rank].async_shadow.words[word];
            if !write {
                self.check_landed(inst, (w, l), word, wd)?;
            } else {
                for (who, (s, g, rpc)) in [("wgmma", wd.wgmma), ("bulk store", wd.bulk)] {
                    let retired = if who == "wgmma" {
                        self.pending.get(s as usize).map(|p| p.wgmma_retired)
                    } else {
                        self.pending.get(s as usize).map(|p| p.bulk_retired)
                    };
                    if s != NONE && retired.is_some_and(|r| g >= r) {
                        let wait =
                            if who == "wgmma" { "wgmma.wait_group" } else { "cp.async.bulk.wait_group.read" };
                        return Err(self.fault(
                            FaultKind::Race,
                            format!(
                                "{} writes {} at {} while the {who} at {} may still read it (no {wait} between)",
                                self.who(w, l),
                                self.shared_place(word * 4),
                                self.at(inst),
                                self.at(&self.k.insts[rpc as usize])
                            ),
                        ));
                    }
                }
                let fences = self.pending[slot].fences[l];
                let entry = &mut self.ctas[self.rank].async_shadow.words[word];
                *entry = Word { written: (thread, fences, pc), ..FRESH };
            }
        }
        Ok(())
    }

    /// A read of `word` by the running warp: the copy that filled it must have been seen to land.
    fn check_landed(&self, inst: &Inst, (w, l): (u32, usize), word: usize, wd: Word) -> Result<(), Fault> {
        let (bar, phase) = wd.filled;
        if bar == NONE {
            return Ok(());
        }
        let waits = &self.pending[self.slot].seen;
        let seen = waits.iter().find(|(k, _)| *k == (self.rank, bar as usize)).map(|(_, s)| *s);
        if seen.is_some_and(|s| s > phase) {
            return Ok(());
        }
        Err(self.fault(
            FaultKind::Race,
            format!(
                "{} reads {} at {} while the copy engine may still be filling it: the copy issued at {} fills it for phase {phase} of {}, {}",
                self.who(w, l),
                self.shared_place(word * 4),
                self.at(inst),
                self.at(&self.k.insts[wd.filled_pc as usize]),
                self.mbar_name(self.rank, bar as usize),
                self.unseen(seen, phase)
            ),
        ))
    }

    /// What the reading warp saw of the mbarrier (the phases it saw complete, if
    /// it waited on it) against the phase the copy completes, for [`Self::check_landed`]: a wrong
    /// parity is named only where the waits show it.
    fn unseen(&self, seen: Option<u32>, phase: u32) -> String {
        match seen {
            None => {
                let others: Vec<String> = (self.pending[self.slot].seen.iter())
                    .filter(|((rank, _), _)| *rank == self.rank)
                    .take(2)
                    .map(|((rank, at), _)| self.mbar_name(*rank, *at))
                    .collect();
                if others.is_empty() {
                    "and this warp never waited on that mbarrier (no mbarrier wait before the read)".into()
                } else {
                    format!(
                        "but this warp waited on {} and never on that mbarrier: the bytes it reads are not those its waits were for (check the address, or the descriptor, that reads them)",
                        others.join(" and ")
                    )
                }
            }
            Some(0) => "and this warp's wait on that mbarrier passed before any of its phases had completed (a wait on the wrong parity)".into(),
            Some(s) if s == phase => format!(
                "and this warp waited for phase {} of it, the stage's previous fill: the copy engine refilled the stage while this warp still reads it (the mbarrier that lets the producer refill it completed before every reader was done: check its count and arrivals)",
                phase - 1
            ),
            Some(s) => format!(
                "and the last phase of it this warp waited for is phase {}, {} phases earlier (no wait for the phases since)",
                s - 1,
                phase + 1 - s
            ),
        }
    }

    /// The tensor cores or the copy engine read `at..at + len` of the running block for the
    /// running warp (`group`: the wgmma or bulk group it belongs to): the bytes must have landed,
    /// and the ordinary stores that wrote them must have been fenced for the async proxy.
    pub fn async_read(
        &mut self,
        inst: &Inst,
        pc: u32,
        lane: usize,
        (at, len): (usize, usize),
        wgmma: bool,
    ) -> Result<(), Fault> {
        if !self.ctas[self.rank].async_shadow.on() {
            return Ok(());
        }
        let slot = self.slot;
        let per_block = self.warps.len() / self.ctas.len();
        let group =
            if wgmma { self.pending[slot].wgmma_committed } else { self.pending[slot].bulk_committed };
        for word in at / 4..(at + len).div_ceil(4) {
            let wd = self.ctas[self.rank].async_shadow.words[word];
            let index = (slot % per_block) as u32;
            self.check_landed(inst, (index, lane), word, wd)?;
            let (thread, fences, wpc) = wd.written;
            if thread != NONE && self.pending[thread as usize / 32].fences[thread as usize % 32] == fences {
                let what = if wgmma { "the wgmma" } else { "the copy engine" };
                let writer = ((thread as usize / 32) % per_block) as u32;
                return Err(self.fault(
                    FaultKind::Race,
                    format!(
                        "{what} at {} reads {}, which {} wrote with an ordinary store at {} and no fence.proxy.async between (the async proxy may not see the store)",
                        self.at(inst),
                        self.shared_place(word * 4),
                        self.who(writer, thread as usize % 32),
                        self.at(&self.k.insts[wpc as usize])
                    ),
                ));
            }
            if wgmma {
                // The tensor cores read for the warp: an access of its first thread.
                let reader = index * 32 + lane as u32;
                let visit = self.visit;
                if let Some(crate::sanitize::Other { thread: other, pc: opc, write: true, .. }) =
                    self.ctas[self.rank].shadow.access(word, reader, (pc, visit), false)
                {
                    return Err(self.fault(
                        FaultKind::Race,
                        format!(
                            "shared-memory race: the wgmma at {} reads {}, which {} wrote at {} with no barrier between",
                            self.at(inst),
                            self.shared_place(word * 4),
                            self.who(other / 32, (other % 32) as usize),
                            self.at(&self.k.insts[opc as usize])
                        ),
                    ));
                }
            }
            self.note_access(word, pc, false);
            let entry = &mut self.ctas[self.rank].async_shadow.words[word];
            if wgmma {
                entry.wgmma = (slot as u32, group, pc);
            } else {
                entry.bulk = (slot as u32, group, pc);
            }
        }
        Ok(())
    }
}

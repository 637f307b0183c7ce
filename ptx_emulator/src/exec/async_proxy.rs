//! The async proxy's shadow of shared memory, for the sanitizer: for each word, which copy filled
//! it and for which phase of which mbarrier, which ordinary store wrote it last and whether that
//! thread has fenced the async proxy since (`fence.proxy.async`), and which wgmma or bulk store
//! may still be reading it. From these, an ordinary read of bytes whose copy the warp has not seen
//! land, a store to bytes the tensor cores or the copy engine may still read, and an async read
//! of bytes stored without a proxy fence are each named in one sentence.

use crate::inst::Inst;
use crate::{Fault, FaultKind};

use super::shadows::{FRESH, NONE, ProxyWord};
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
        // The words of a box were mostly read by one wgmma group: its verdict, kept.
        let mut last = (NONE, 0);
        for word in at / 4..(at + len).div_ceil(4) {
            let old = self.ctas[rank].async_shadow.words[word];
            let (slot, group, rpc) = old.wgmma;
            if slot != NONE && (slot, group) != last {
                if let Err(wait) = self.wgmma_done_before(slot as usize, group) {
                    return Err(self.overwritten_under_wgmma(
                        (rank, word),
                        pc,
                        (slot as usize, group, rpc),
                        wait,
                    ));
                }
                last = (slot, group);
            }
            let w = &mut self.ctas[rank].async_shadow.words[word];
            *w = ProxyWord { filled, filled_pc: pc, ..FRESH };
        }
        Ok(())
    }

    /// Whether the wgmma of group `group` of warp `slot` is done before what the running warp
    /// does now: the warp waited for it with `wgmma.wait_group`, and that wait happens before.
    /// Else the wait (the warp's clock then and its instruction), or None where it has not waited.
    fn wgmma_done_before(&self, slot: usize, group: u32) -> Result<(), Option<(u32, u32)>> {
        let p = &self.pending[slot];
        if group >= p.wgmma_retired {
            return Err(None);
        }
        let at = p.wgmma_waits.partition_point(|&(retired, _, _)| retired <= group);
        let Some(&(_, clock, wait_pc)) = p.wgmma_waits.get(at) else { return Ok(()) };
        if self.ordered((slot as u32, clock, wait_pc), self.slot) {
            Ok(())
        } else {
            Err(Some((clock, wait_pc)))
        }
    }

    /// The copy issued at `pc` overwrites `word` of block `rank`, which the wgmma at `rpc` of warp
    /// `slot` (its group `group`) may still read: `wait` is the warp's wait for it, if any. Named
    /// with the arrival that freed the bytes while the wgmma was in flight, where the copy's
    /// issuer learnt of one.
    fn overwritten_under_wgmma(
        &self,
        (rank, word): (usize, usize),
        pc: u32,
        (slot, group, rpc): (usize, u32, u32),
        wait: Option<(u32, u32)>,
    ) -> Fault {
        let warps = self.warps.len() / self.ctas.len();
        let known = self.clocks[self.slot][slot];
        let freed = (self.pending[slot].freed.iter().rev())
            .find(|f| f.clock <= known && f.retired <= group && group < f.issued);
        let waited = wait.map(|(_, wait_pc)| {
            format!("waits for it with the wgmma.wait_group at {}", self.at(&self.k.insts[wait_pc as usize]))
        });
        let why = match (freed, waited) {
            (Some(f), waited) => format!(
                ": {} freed the bytes with its arrival on {} at {} while that wgmma was still in flight, and its warp {} (on a GPU the tensor cores may still read the buffer when the copy lands: arrive after the wait)",
                self.who_in(slot / warps, (slot % warps) as u32, f.lane as usize),
                self.mbar_name_from(slot / warps, f.place.0, f.place.1),
                self.at(&self.k.insts[f.pc as usize]),
                waited.map_or("has not waited for it with wgmma.wait_group".to_owned(), |w| format!(
                    "{w}, after the arrival"
                ))
            ),
            (None, Some(waited)) => {
                format!(" (its warp {waited}, and nothing orders that wait before the copy)")
            }
            (None, None) => " (its warp has not waited for it with wgmma.wait_group)".to_owned(),
        };
        self.fault(
            FaultKind::Race,
            format!(
                "the copy engine overwrites {}{}, issued at {}, while the wgmma at {} may still read it{why}",
                self.shared_place(word * 4),
                self.peer_block(rank),
                self.at(&self.k.insts[pc as usize]),
                self.at(&self.k.insts[rpc as usize])
            ),
        )
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
                *entry = ProxyWord { written: (thread, fences, pc), ..FRESH };
            }
        }
        Ok(())
    }

    /// A read of `word` by the running warp: the copy that filled it must have been seen to land.
    fn check_landed(
        &self,
        inst: &Inst,
        (w, l): (u32, usize),
        word: usize,
        wd: ProxyWord,
    ) -> Result<(), Fault> {
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
                self.unseen(bar as usize, seen, phase)
            ),
        ))
    }

    /// What the reading warp saw of the mbarrier at byte `bar` (the phases it saw complete, if
    /// it waited on it) against the phase the copy completes, for [`Self::check_landed`]: a wait
    /// that passed too early is named with its line, parity and phase where the warp's own waits
    /// show it.
    fn unseen(&self, bar: usize, seen: Option<u32>, phase: u32) -> String {
        let passed = self.pending[self.slot].passed.iter().find(|p| p.place == (self.rank, bar));
        if let Some(p) = passed.filter(|p| seen.is_some() && p.too_early_for(phase)) {
            return format!("and {}", self.passed_too_early(p, self.slot, phase));
        }
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
                "and this warp waited for phase {} of it, the buffer's previous fill: the copy engine refilled the buffer while this warp still reads it (the mbarrier that lets the producer refill it completed before every reader was done: check its count and arrivals)",
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

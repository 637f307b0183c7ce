//! mbarriers (PTX ISA §9.7.13.15): an mbarrier counts a phase's arrivals and the bytes its
//! copies still owe (the transaction count); the phase completes when both reach zero, and the
//! next begins with the count it was initialised with. A thread waits on the parity of a phase
//! (`try_wait.parity`): here a lane whose phase has not completed stays at the instruction and
//! tries again in the scheduler's next round, and a round in which nobody gets further is a
//! deadlock the scheduler names.

use crate::inst::{Addr, Inst, Src};
use crate::{Fault, FaultKind};

use super::shadows::{Freed, Passed};
use super::state::{Cluster, Lanes, Mbar, Warp};

impl Cluster<'_> {
    pub(super) fn address(&self, w: &Warp, a: &Addr, l: usize) -> u64 {
        let base = match a.base {
            Src::Reg(x) => w.regs[x as usize][l],
            Src::Imm(v) => v,
        };
        base.wrapping_add(a.offset as u64) & 0xffff_ffff
    }

    pub(super) fn value(w: &Warp, s: Src, l: usize) -> u64 {
        match s {
            Src::Reg(x) => w.regs[x as usize][l],
            Src::Imm(v) => v,
        }
    }

    /// The mbarrier an instruction names for lane `l`: its block and byte, checked.
    pub(super) fn mbar_place(
        &self,
        inst: &Inst,
        w: &Warp,
        l: usize,
        a: &Addr,
    ) -> Result<(usize, usize), Fault> {
        let (rank, at) = self.cluster_address(self.address(w, a, l));
        if rank >= self.ctas.len() {
            return Err(self.fault(
                FaultKind::OutOfBounds,
                format!(
                    "{} names block {rank} of a cluster of {} at {}",
                    self.who(w.index, l),
                    self.ctas.len(),
                    self.at(inst)
                ),
            ));
        }
        if at % 8 != 0 || at + 8 > self.ctas[rank].shared.len() {
            return Err(self.fault(
                FaultKind::Misaligned,
                format!(
                    "{} uses an mbarrier at byte {at} of shared memory, which is not an 8-byte word of it, at {}",
                    self.who(w.index, l),
                    self.at(inst)
                ),
            ));
        }
        if rank != self.rank && self.block_done(rank) {
            return Err(self.peer_gone(inst, w, l, rank));
        }
        Ok((rank, at))
    }

    pub(super) fn mbar(
        &self,
        inst: &Inst,
        w: &Warp,
        l: usize,
        (rank, at): (usize, usize),
    ) -> Result<Mbar, Fault> {
        let m = self.ctas[rank].mbars.get(&at).cloned().ok_or_else(|| {
            self.fault(
                FaultKind::Barrier,
                format!(
                    "{} uses {} before any mbarrier.init of it, at {}",
                    self.who(w.index, l),
                    self.mbar_name(rank, at),
                    self.at(inst)
                ),
            )
        })?;
        self.init_happened_before(inst, w, l, (rank, at), &m)?;
        Ok(m)
    }

    pub(super) fn mbar_init(
        &mut self,
        inst: &Inst,
        pc: u32,
        w: &Warp,
        exec: u32,
        a: &Addr,
        count: Src,
    ) -> Result<(), Fault> {
        for l in Lanes(exec) {
            let place = self.mbar_place(inst, w, l, a)?;
            let n = Self::value(w, count, l) as u32;
            if n == 0 || n >= 1 << 20 {
                return Err(self.fault(
                    FaultKind::Barrier,
                    format!(
                        "{} initialises an mbarrier with a count of {n} at {}: 1 to 2^20 − 1",
                        self.who(w.index, l),
                        self.at(inst)
                    ),
                ));
            }
            let zeros = vec![0; self.clocks.len()];
            let m = Mbar {
                expected: n,
                pending: n,
                tx: 0,
                phase: 0,
                init_pc: pc,
                init: (self.slot as u32, self.clocks[self.slot][self.slot], l as u32),
                expect_pc: None,
                flying: Vec::new(),
                announced: 0,
                completed_by: None,
                arrivals: Vec::new(),
                repeated: false,
                clock: zeros.clone(),
                done: [zeros.clone(), zeros],
            };
            self.ctas[place.0].mbars.insert(place.1, m);
            self.released[self.slot].init_since = true;
            self.timeline_init(place, n);
        }
        Ok(())
    }

    /// Arrivals (one per lane) and, for `expect_tx`, the bytes the phase now also waits for.
    pub(super) fn mbar_arrive(
        &mut self,
        inst: &Inst,
        w: &mut Warp,
        exec: u32,
        a: &Addr,
        tx: Option<Src>,
        state: Option<u32>,
    ) -> Result<(), Fault> {
        for l in Lanes(exec) {
            let place = self.mbar_place(inst, w, l, a)?;
            let mut m = self.mbar(inst, w, l, place)?;
            self.arrival_after_phase(inst, w, l, place, &m)?;
            if let Some(tx) = tx {
                let bytes = Self::value(w, tx, l) as u32 as i64;
                m.tx += bytes;
                m.announced += bytes;
                m.expect_pc = Some(self.pc_of(inst));
            }
            if m.pending == 0 && m.arrivals.iter().any(|a| a.0 == self.slot as u32) {
                return Err(self.refill_before_freed(inst, w.index, l, place, &m));
            }
            if m.pending == 0 {
                return Err(self.fault(
                    FaultKind::Barrier,
                    format!(
                        "{} arrives on {} more often than its count of {} in one phase, set at the mbarrier.init at {}, at {}",
                        self.who(w.index, l),
                        self.mbar_name(place.0, place.1),
                        m.expected,
                        self.at(&self.k.insts[m.init_pc as usize]),
                        self.at(inst)
                    ),
                ));
            }
            m.pending -= 1;
            let phase = m.phase;
            if let Some(d) = state {
                w.regs[d as usize][l] = u64::from(m.phase);
            }
            super::shadows::join(&mut m.clock, &self.clocks[self.slot]);
            let epoch = (self.slot as u32, self.clocks[self.slot][self.slot]);
            if !m.arrivals.contains(&epoch) {
                m.arrivals.push(epoch);
            }
            self.ctas[place.0].mbars.insert(place.1, m);
            self.note_remote(place.0, self.pc_of(inst));
            self.timeline_arrive(w, place, tx.map_or(0, |tx| Self::value(w, tx, l)));
            self.trace_arrive(place);
            self.note_freed(inst, l, place);
            self.note_arrived(self.pc_of(inst), l, place);
            self.complete_phase(place)?;
            let by = (self.slot as u32, l as u32, self.pc_of(inst));
            if let Some(m) = self.ctas[place.0].mbars.get_mut(&place.1)
                && m.phase != phase
            {
                m.completed_by = Some(by);
            }
        }
        // The lanes' arrivals are one epoch of the warp: what it did before, each hands on.
        if exec != 0 {
            self.tick();
        }
        Ok(())
    }

    /// An arrival of lane `l` of the running warp while a wgmma of the warp may still read shared
    /// memory: remembered, for the copy that may overwrite what the wgmma reads.
    fn note_freed(&mut self, inst: &Inst, l: usize, place: (usize, usize)) {
        let p = &self.pending[self.slot];
        if !self.launch.sanitize || p.wgmma_issued <= p.wgmma_retired {
            return;
        }
        let freed = Freed {
            clock: self.clocks[self.slot][self.slot],
            pc: self.pc_of(inst),
            lane: l as u32,
            place,
            retired: p.wgmma_retired,
            issued: p.wgmma_issued,
        };
        self.pending[self.slot].freed.push(freed);
    }

    pub(super) fn mbar_expect_tx(
        &mut self,
        inst: &Inst,
        w: &Warp,
        exec: u32,
        a: &Addr,
        tx: Src,
    ) -> Result<(), Fault> {
        for l in Lanes(exec) {
            let place = self.mbar_place(inst, w, l, a)?;
            let mut m = self.mbar(inst, w, l, place)?;
            let bytes = Self::value(w, tx, l) as u32 as i64;
            m.tx += bytes;
            m.announced += bytes;
            m.expect_pc = Some(self.pc_of(inst));
            self.ctas[place.0].mbars.insert(place.1, m);
        }
        Ok(())
    }

    /// The index of an instruction of the kernel.
    pub(super) fn pc_of(&self, inst: &Inst) -> u32 {
        (inst as *const Inst as usize - self.k.insts.as_ptr() as usize) as u32
            / std::mem::size_of::<Inst>() as u32
    }

    /// The phase completes when every arrival has come and every byte announced has landed; a
    /// copy counted on it that is still on its way is a phase that completes too early.
    pub(super) fn complete_phase(&mut self, (rank, at): (usize, usize)) -> Result<(), Fault> {
        if let Some(m) = self.ctas[rank].mbars.get(&at)
            && m.pending == 0
            && m.tx == 0
            && !m.flying.is_empty()
        {
            self.rank = rank;
            return Err(self.completed_early((rank, at), m));
        }
        if let Some(m) = self.ctas[rank].mbars.get_mut(&at)
            && m.pending == 0
            && m.tx == 0
        {
            m.expect_pc = None;
            m.announced = 0;
            m.completed_by = None;
            m.arrivals.sort_unstable();
            m.repeated = m.arrivals.windows(2).any(|a| a[0].0 == a[1].0);
            m.arrivals.clear();
            m.done[(m.phase & 1) as usize] = std::mem::replace(&mut m.clock, vec![0; m.done[0].len()]);
            m.phase += 1;
            m.pending = m.expected;
            // Whoever synchronises through the barrier no longer races with the other side, in
            // any block of the cluster (arrivals and copies cross blocks).
            for cta in &mut self.ctas {
                cta.shadow.barrier();
            }
            self.timeline_phase((rank, at));
        }
        Ok(())
    }

    /// `try_wait.parity`: the lanes whose phase of that parity has completed get true and go on;
    /// the rest stay at the instruction. Returns the lanes that stay.
    pub(super) fn mbar_try_wait(
        &mut self,
        inst: &Inst,
        w: &mut Warp,
        exec: u32,
        d: u32,
        a: &Addr,
        parity: Src,
    ) -> Result<u32, Fault> {
        let mut stay = 0;
        for l in Lanes(exec) {
            let place = self.mbar_place(inst, w, l, a)?;
            let m = self.mbar(inst, w, l, place)?;
            let p = (Self::value(w, parity, l) & 1) as u32;
            self.timeline_wait(w, place, p, m.phase & 1 == p);
            if m.phase & 1 == p {
                stay |= 1 << l;
                continue;
            }
            w.regs[d as usize][l] = 1;
            let mut passed = Passed {
                place,
                pc: self.pc_of(inst),
                lane: l as u32,
                parity: p,
                phase: m.phase,
                clock: self.clocks[self.slot][self.slot],
                wait: self.pending[self.slot].waits + 1,
                again: false,
            };
            let waits = &mut self.pending[self.slot].passed;
            match waits.iter_mut().find(|x| x.place == place) {
                // The other lanes of the same wait find what the first did.
                Some(x) if x.wait == passed.wait => {}
                Some(x) => {
                    passed.again = x.found() == passed.found();
                    *x = passed;
                }
                None => waits.push(passed),
            }
            // The phases it now knows complete: up to the last one of parity p.
            let seen = if (m.phase.wrapping_sub(1)) & 1 == p { m.phase } else { m.phase - 1 };
            if seen > 0 {
                self.trace_passed(place, seen - 1);
            }
            super::shadows::join(&mut self.clocks[self.slot], &m.done[p as usize]);
            let pending = &mut self.pending[self.slot];
            match pending.seen.iter_mut().find(|(k, _)| *k == place) {
                Some((_, s)) => *s = (*s).max(seen),
                None => pending.seen.push((place, seen)),
            }
        }
        if stay != exec {
            self.pending[self.slot].waits += 1;
        }
        Ok(stay)
    }

    /// Warps that met at a barrier know what each of them saw of the mbarriers.
    pub fn share_seen(&mut self, slots: impl Iterator<Item = usize> + Clone) {
        let mut all: Vec<((usize, usize), u32)> = Vec::new();
        for s in slots.clone() {
            for &(k, v) in &self.pending[s].seen {
                match all.iter_mut().find(|(a, _)| *a == k) {
                    Some((_, x)) => *x = (*x).max(v),
                    None => all.push((k, v)),
                }
            }
        }
        for s in slots {
            self.pending[s].seen.clone_from(&all);
        }
    }

    /// What a lane parked at an instruction waits for, for a deadlock's sentence.
    pub fn describe_wait(&self, inst: &Inst, w: &Warp, l: usize) -> String {
        use crate::inst::{Hopper, Op};
        match &inst.op {
            Op::Hopper(Hopper::MbarTryWait { addr, parity, .. }) => {
                let (rank, at) = self.cluster_address(self.address(w, addr, l));
                let p = Self::value(w, *parity, l) & 1;
                match self.ctas.get(rank).and_then(|c| c.mbars.get(&at)) {
                    Some(m) => {
                        let owed =
                            if m.tx > 0 { format!(" and {} bytes of copies", m.tx) } else { String::new() };
                        let init = self.at(&self.k.insts[m.init_pc as usize]);
                        let bytes = match m.expect_pc {
                            Some(pc) if m.tx > 0 => format!(
                                "; of the {} bytes the expect_tx at {} announced, {} have landed{}",
                                m.announced,
                                self.at(&self.k.insts[pc as usize]),
                                m.announced - m.tx,
                                if m.flying.is_empty() {
                                    " and no copy on its way brings the rest"
                                } else {
                                    ""
                                }
                            ),
                            _ => String::new(),
                        };
                        format!(
                            "for the phase of parity {p} of {} (phase {} is under way and still waits for {} of {} arrivals{owed}; the count of {} was set at the mbarrier.init at {init}{bytes})",
                            self.mbar_name_from(w.rank as usize, rank, at),
                            m.phase,
                            m.pending,
                            m.expected,
                            m.expected
                        )
                    }
                    None => {
                        format!(
                            "on {}, which was never initialised",
                            self.mbar_name_from(w.rank as usize, rank, at)
                        )
                    }
                }
            }
            Op::Hopper(Hopper::ClusterWait) => format!(
                "at the cluster barrier ({} threads of the cluster have arrived)",
                self.cluster_arrived
            ),
            _ => "for a value no thread writes".to_owned(),
        }
    }
}

/// A phase that completes while copies counted on it are still on their way, and a copy that
/// lands on a phase other than the one it was issued in: on a GPU the waiters go on before the
/// bytes are there.
impl Cluster<'_> {
    /// The `.cu` lines of the copies still to land on `m`, each once, in the order they land.
    fn flying_lines(&self, m: &Mbar) -> String {
        let mut lines: Vec<String> = Vec::new();
        for &(pc, _) in &m.flying {
            let at = self.at(&self.k.insts[pc as usize]);
            if !lines.contains(&at) {
                lines.push(at);
            }
        }
        lines.join(" and ")
    }

    /// Phase `m.phase` of the mbarrier at byte `at` completes with `m.flying` still to land.
    pub(super) fn completed_early(&self, (rank, at): (usize, usize), m: &Mbar) -> Fault {
        let bytes: u64 = m.flying.iter().map(|&(_, b)| u64::from(b)).sum();
        let copies = match m.flying.len() {
            1 => "the copy".to_owned(),
            n => format!("{n} copies"),
        };
        let boxes =
            if m.flying.len() == 1 { "its box before it lands" } else { "their boxes before they land" };
        let cause = match m.expect_pc {
            Some(pc) => format!(
                "the expect_tx at {} announced {bytes} bytes fewer than the phase's copies carry",
                self.at(&self.k.insts[pc as usize])
            ),
            None => "no expect_tx of the phase announced their bytes".to_owned(),
        };
        self.fault(
            FaultKind::Barrier,
            format!(
                "phase {} of {} completed with {bytes} bytes of {copies} issued at {} still to land: {cause}, so a thread that waits on the phase may read {boxes}",
                m.phase,
                self.mbar_name(rank, at),
                self.flying_lines(m)
            ),
        )
    }

    /// A copy issued at `pc` in phase `phase` of the mbarrier at byte `at` of block `rank`
    /// lands: it must be one the phase under way still counts on.
    pub(super) fn land_on_phase(
        &mut self,
        (rank, at): (usize, usize),
        pc: u32,
        phase: u32,
        bytes: usize,
    ) -> Result<(), Fault> {
        let Some(m) = self.ctas[rank].mbars.get_mut(&at) else { return Ok(()) };
        match m.flying.iter().position(|&(p, _)| p == pc) {
            Some(i) if m.phase == phase => {
                m.flying.remove(i);
                Ok(())
            }
            _ => {
                let now = m.phase;
                self.rank = rank;
                Err(self.fault(
                    FaultKind::Barrier,
                    format!(
                        "the copy issued at {} lands its {bytes} bytes on phase {now} of {}, after phase {phase} it was issued in has completed (or the mbarrier was initialised again), so a thread that waited on that phase may have read its box before it landed",
                        self.at(&self.k.insts[pc as usize]),
                        self.mbar_name(rank, at)
                    ),
                ))
            }
        }
    }
}

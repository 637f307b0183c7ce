//! A cluster's warps in rounds: each warp runs until all its lanes wait or have left; then the
//! barriers whose threads have all arrived let them through, and lanes that found an mbarrier
//! or the cluster barrier not yet complete try again. A round in which no warp gets past where
//! it stood is a deadlock: every thread waits for something no thread will do, and the fault
//! names what each waits for, where a GPU would hang.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::inst::{Op, SPECIALS};
use crate::memory::Global;
use crate::sanitize::Shadow;
use crate::traffic::Traffic;
use crate::{Fault, FaultKind};

use super::shadows::{Accesses, AsyncShadow};
use super::state::{Cluster, Cta, Flow, Lanes, Launch, NamedBarrier, Warp};

/// The rounds a deadlocked cluster may spin without any warp getting further.
const IDLE_ROUNDS: u32 = 2;

impl<'a> Cluster<'a> {
    pub fn new(launch: &'a Launch, global: &'a Global, stop: &'a AtomicBool) -> Self {
        let k = launch.kernel;
        let threads = launch.block.0 * launch.block.1 * launch.block.2;
        let nwarps = threads.div_ceil(32);
        let size = launch.cluster_size();
        let mut warps = Vec::with_capacity(nwarps as usize * size);
        for rank in 0..size as u32 {
            for w in 0..nwarps {
                let present =
                    if (w + 1) * 32 <= threads { u32::MAX } else { (1u32 << (threads - w * 32)) - 1 };
                warps.push(Warp::new(k, w, rank, present));
            }
        }
        let shared_bytes = k.dynamic_at.max(k.static_shared) + launch.dynamic_shared;
        let ctas = (0..size)
            .map(|_| Cta {
                shared: vec![0; shared_bytes],
                shadow: Shadow::new(if launch.sanitize { shared_bytes.div_ceil(4) } else { 0 }),
                async_shadow: AsyncShadow::new(if launch.sanitize { shared_bytes.div_ceil(4) } else { 0 }),
                accesses: Accesses::new(if launch.sanitize { shared_bytes.div_ceil(4) } else { 0 }),
                exit_checked: false,
                ctaid: [0; 3],
                copied_from: Vec::new(),
                loaded: false,
                computed: false,
                bars: vec![NamedBarrier::default(); 16],
                mbars: Default::default(),
            })
            .collect();
        let warps_len = warps.len();
        Cluster {
            k,
            launch,
            global,
            ctas,
            pending: vec![Default::default(); warps.len()],
            in_flight: Vec::new(),
            clocks: vec![vec![0; warps.len()]; warps.len()],
            cluster_clock: vec![0; warps.len()],
            cluster_released: vec![0; warps.len()],
            released: vec![Default::default(); warps.len()],
            operands: Default::default(),
            seen: Default::default(),
            warps,
            rank: 0,
            slot: 0,
            visits: vec![0; if launch.sanitize { warps_len * k.insts.len() } else { 0 }],
            visit: 0,
            local: vec![0; k.local_bytes * threads as usize * size],
            traffic: Traffic::default(),
            first_tiles: Default::default(),
            block_sectors: Default::default(),
            block_stores: Default::default(),
            cluster_phase: 0,
            cluster_arrived: 0,
            stop,
            scratch: Vec::with_capacity(128),
            l1_seen: Default::default(),
            at_start: Traffic::default(),
            pairs: Vec::with_capacity(32),
            timeline: launch.timeline.as_ref().map(|_| Box::default()),
            trace: None,
            trace_spare: None,
            footprint: None,
            fragment_writes: if launch.sanitize { super::fragments::fragment_writes(k) } else { Vec::new() },
        }
    }

    /// Runs cluster `c` of the launch to its end.
    pub fn run_cluster(&mut self, c: u64) -> Result<(), Fault> {
        let (bx, by, bz) = self.launch.block;
        let (gx, gy, gz) = self.launch.grid;
        let size = self.ctas.len() as u32;
        let nwarps = self.warps.len() as u32 / size;
        for (rank, cta) in self.ctas.iter_mut().enumerate() {
            cta.ctaid = self.launch.ctaid(c, rank);
            cta.shared.fill(0);
            cta.shadow.reset();
            cta.async_shadow.reset();
            cta.accesses.reset();
            cta.exit_checked = false;
            cta.bars.iter_mut().for_each(|b| *b = NamedBarrier::default());
            cta.mbars.clear();
            cta.copied_from.clear();
            cta.loaded = false;
            cta.computed = false;
        }
        self.timeline_begin(c);
        self.trace_begin();
        self.footprint_begin(c);
        self.local.fill(0);
        self.l1_seen.clear();
        self.at_start = self.traffic;
        self.visits.fill(0);
        self.pending.iter_mut().for_each(|p| *p = Default::default());
        self.in_flight.clear();
        for (i, c) in self.clocks.iter_mut().enumerate() {
            c.fill(0);
            c[i] = 1;
        }
        self.cluster_clock.fill(0);
        self.cluster_released.fill(0);
        self.released.fill(Default::default());
        self.operands.reset();
        self.seen_reset(c);
        self.cluster_phase = 0;
        self.cluster_arrived = 0;
        let (cx, cy, cz) = self.launch.cluster;
        for w in &mut self.warps {
            w.running = w.present;
            w.waiting = 0;
            w.parked = 0;
            w.exited = 0;
            w.uniform = Some(0);
            w.open.clear();
            w.groups.clear();
            w.spin = (u32::MAX, 0, 0);
            let ctaid = self.ctas[w.rank as usize].ctaid;
            let cluster_ctaid = [ctaid[0] % cx, ctaid[1] % cy, ctaid[2] % cz];
            for lane in 0..32u32 {
                let t = w.index * 32 + lane;
                let values = [
                    t % bx,
                    (t / bx) % by,
                    t / (bx * by),
                    bx,
                    by,
                    bz,
                    ctaid[0],
                    ctaid[1],
                    ctaid[2],
                    gx,
                    gy,
                    gz,
                    lane,
                    w.index,
                    nwarps,
                    0,
                    w.rank,
                    size,
                    cluster_ctaid[0],
                    cluster_ctaid[1],
                    cluster_ctaid[2],
                    cx,
                    cy,
                    cz,
                    ctaid[0] / cx,
                    ctaid[1] / cy,
                    ctaid[2] / cz,
                    gx / cx,
                    gy / cy,
                    gz / cz,
                ];
                debug_assert_eq!(values.len(), SPECIALS.len());
                for (slot, v) in values.iter().enumerate() {
                    w.regs[slot][lane as usize] = u64::from(*v);
                }
            }
        }
        let mut idle = 0;
        let mut round = 0usize;
        loop {
            let mut moved = false;
            // The warps run in order, then in reverse order the next round: a block that runs
            // ahead of its peers in one order lags behind them in the other, so a cluster's
            // blocks meet both ways what they do to each other.
            let count = self.warps.len();
            for i in 0..count {
                let wi = if round % 2 == 0 { i } else { count - 1 - i };
                if self.warps[wi].running != 0 {
                    moved |= self.run_warp(wi)?;
                }
            }
            round += 1;
            moved |= self.land_copies()?;
            moved |= self.release_barriers()?;
            self.timeline_round();
            let mut waits = false;
            for w in &mut self.warps {
                if w.parked != 0 {
                    w.materialize();
                    w.running |= w.parked;
                    w.parked = 0;
                    w.uniform = None;
                    waits = true;
                }
                waits |= w.waiting != 0 || w.running != 0;
            }
            if !waits && self.in_flight.is_empty() {
                return self.finish();
            }
            idle = if moved { 0 } else { idle + 1 };
            if idle > IDLE_ROUNDS {
                return Err(self.deadlock());
            }
            if self.stop.load(Ordering::Relaxed) {
                return Err(self.fault(FaultKind::Stopped, "stopped by another block's fault".into()));
            }
        }
    }

    /// Every thread has left: what the copy engine still holds must have been waited for.
    fn finish(&mut self) -> Result<(), Fault> {
        self.timeline_end();
        self.trace_end();
        self.footprint_end();
        self.traffic.blocks += self.ctas.len() as u64;
        let (t, s, per) = (&mut self.traffic, &self.at_start, self.ctas.len() as u64);
        t.most_block_instructions =
            t.most_block_instructions.max((t.warp_instructions - s.warp_instructions) / per);
        t.most_block_mma_sync_flops =
            t.most_block_mma_sync_flops.max((t.mma_sync_flops - s.mma_sync_flops) / per);
        t.most_block_wgmma_tf32_flops =
            t.most_block_wgmma_tf32_flops.max((t.wgmma_tf32_flops - s.wgmma_tf32_flops) / per);
        t.most_block_wgmma_16bit_flops =
            t.most_block_wgmma_16bit_flops.max((t.wgmma_16bit_flops - s.wgmma_16bit_flops) / per);
        t.most_block_wgmma_int8_ops =
            t.most_block_wgmma_int8_ops.max((t.wgmma_int8_ops - s.wgmma_int8_ops) / per);
        for cta in &mut self.ctas {
            if std::mem::take(&mut cta.loaded) {
                self.traffic.load_phases += 1;
                self.traffic.overlapped_phases += u64::from(std::mem::take(&mut cta.computed));
            }
        }
        for wi in 0..self.warps.len() {
            self.rank = self.warps[wi].rank as usize;
            self.slot = wi;
            let w = std::mem::replace(&mut self.warps[wi], Warp::placeholder());
            let result = self.drain_at_exit(&w).and_then(|()| self.fragments_at_exit());
            self.warps[wi] = w;
            result?;
        }
        Ok(())
    }

    /// Lets through every barrier whose threads have all arrived; returns whether one did.
    fn release_barriers(&mut self) -> Result<bool, Fault> {
        let mut released = false;
        for rank in 0..self.ctas.len() {
            self.rank = rank;
            for id in 0..self.ctas[rank].bars.len() {
                if self.ctas[rank].bars[id].arrived.is_empty() {
                    continue;
                }
                let bar = &self.ctas[rank].bars[id];
                let want = bar.expected.unwrap_or_else(|| self.block_threads());
                let have = bar.threads();
                if have > want {
                    let (wi, lanes, pc) = bar.arrived[0];
                    let inst = &self.k.insts[pc as usize];
                    let l = Lanes(lanes).next().unwrap_or(0);
                    return Err(self.fault(
                        FaultKind::Barrier,
                        format!(
                            "{} threads arrive at barrier {id}, which {} waits at with a count of {want}, at {}",
                            have,
                            self.who(self.warps[wi].index, l),
                            self.at(inst)
                        ),
                    ));
                }
                if have < want {
                    continue;
                }
                if id == 0 && bar.expected.is_none() {
                    self.same_barrier(rank)?;
                }
                let bar = std::mem::take(&mut self.ctas[rank].bars[id]);
                self.share_seen(bar.arrived.iter().map(|a| a.0));
                let mut slots: Vec<usize> = bar.arrived.iter().map(|a| a.0).collect();
                slots.dedup();
                self.order_barrier(&slots);
                for (wi, lanes, pc) in bar.arrived {
                    let w = &mut self.warps[wi];
                    for l in Lanes(lanes) {
                        w.pc[l] = pc + 1;
                        if let Some(p) = bar.answer {
                            w.regs[p as usize][l] = u64::from(bar.any);
                        }
                    }
                    w.waiting &= !lanes;
                    w.materialize();
                    w.running |= lanes;
                    w.uniform = None;
                }
                self.ctas[rank].shadow.barrier();
                self.traffic.barriers += 1;
                if std::mem::take(&mut self.ctas[rank].loaded) {
                    self.traffic.load_phases += 1;
                    self.traffic.overlapped_phases +=
                        u64::from(std::mem::take(&mut self.ctas[rank].computed));
                }
                released = true;
            }
        }
        released |= self.release_cluster_barrier();
        Ok(released)
    }

    /// `__syncthreads()` at two places of the code: a fault, as the threads of one block at two
    /// different barriers always are in the course's kernels.
    fn same_barrier(&self, rank: usize) -> Result<(), Fault> {
        let bar = &self.ctas[rank].bars[0];
        let (wi, lanes, pc) = bar.arrived[0];
        let lane = Lanes(lanes).next().unwrap_or(0);
        if let Some(&(wj, other, opc)) = bar.arrived.iter().find(|(_, _, p)| *p != pc) {
            return Err(self.fault(
                FaultKind::Barrier,
                format!(
                    "threads of one block wait at two different barriers: {} at {} and {} at {} (a __syncthreads() inside a branch that threads take differently)",
                    self.who(self.warps[wi].index, lane),
                    self.at(&self.k.insts[pc as usize]),
                    self.who(self.warps[wj].index, Lanes(other).next().unwrap_or(0)),
                    self.at(&self.k.insts[opc as usize])
                ),
            ));
        }
        Ok(())
    }

    /// Runs warp `wi` until its lanes wait or leave; returns whether any lane got further.
    fn run_warp(&mut self, wi: usize) -> Result<bool, Fault> {
        self.rank = self.warps[wi].rank as usize;
        self.slot = wi;
        let mut w = std::mem::replace(&mut self.warps[wi], Warp::placeholder());
        let result = self.run_warp_inner(&mut w, wi);
        let left = w.exited == w.present;
        self.warps[wi] = w;
        let moved = result?;
        let rank = self.rank;
        if left && !self.ctas[rank].exit_checked && self.block_done(rank) {
            // The block's last thread has left: its peers' uses of its memory came before.
            self.ctas[rank].exit_checked = true;
            let mut at_exit = vec![0; self.clocks.len()];
            for (s, w) in self.warps.iter().enumerate() {
                if w.rank as usize == rank {
                    super::shadows::join(&mut at_exit, &self.clocks[s]);
                }
            }
            self.check_exit(rank, &at_exit)?;
        }
        Ok(moved)
    }

    fn run_warp_inner(&mut self, w: &mut Warp, slot: usize) -> Result<bool, Fault> {
        let k = self.k;
        let mut moved = false;
        while w.running != 0 {
            let (pc, mask) = match w.uniform {
                Some(pc) => (pc, w.running),
                None => {
                    let pc = Lanes(w.running).map(|l| w.pc[l]).min().expect("a running lane");
                    let mask = Lanes(w.running).filter(|&l| w.pc[l] == pc).fold(0u32, |m, l| m | (1 << l));
                    if mask == w.running {
                        w.uniform = Some(pc);
                    }
                    (pc, mask)
                }
            };
            let Some(inst) = k.insts.get(pc as usize) else {
                return Err(self.fault(
                    FaultKind::Trap,
                    format!("a thread of {} ran past the kernel's last instruction", self.k.name),
                ));
            };
            let exec = match inst.guard {
                None => mask,
                Some((p, negated)) => {
                    let mut m = 0;
                    for l in Lanes(mask) {
                        if (w.regs[p as usize][l] != 0) != negated {
                            m |= 1 << l;
                        }
                    }
                    m
                }
            };
            let before = self.trace_snap(inst);
            let flow = if exec == 0 && !matches!(inst.op, Op::Bra { .. }) {
                Flow::Next
            } else if mask != (w.running | w.parked) && warp_wide(&inst.op) {
                // Lanes that went apart must meet again before an instruction of the whole warp:
                // these wait here while the others, elsewhere in the code, catch up (the compiler
                // may lay a branch's body out after the point where the paths join).
                Flow::Retry(mask)
            } else {
                self.exec(inst, pc, w, slot, mask, exec)?
            };
            if !matches!(flow, Flow::Retry(_)) {
                moved = true;
                self.traffic.warp_instructions += 1;
                self.traffic.thread_instructions += u64::from(exec.count_ones());
                if let Some(before) = before {
                    self.trace_note(slot, pc, inst, w, exec, before);
                }
            }
            let uniform = w.uniform.is_some();
            match flow {
                Flow::Next => self.advance(w, mask, pc + 1),
                Flow::Jump(taken, target) => {
                    if taken == mask {
                        self.advance(w, mask, target as u32);
                    } else if taken == 0 {
                        self.advance(w, mask, pc + 1);
                    } else {
                        w.materialize();
                        for l in Lanes(taken) {
                            w.pc[l] = target as u32;
                        }
                        for l in Lanes(mask & !taken) {
                            w.pc[l] = pc + 1;
                        }
                        w.uniform = None;
                    }
                }
                Flow::Exit(e) | Flow::Wait(e) | Flow::Retry(e) => {
                    w.materialize();
                    for l in Lanes(e) {
                        w.pc[l] = pc;
                    }
                    w.running &= !e;
                    match flow {
                        Flow::Wait(_) => w.waiting |= e,
                        Flow::Retry(_) => w.parked |= e,
                        _ => w.exited |= e,
                    }
                    for l in Lanes(mask & !e) {
                        w.pc[l] = pc + 1;
                    }
                    w.uniform = if uniform && mask & !e == w.running { Some(pc + 1) } else { None };
                }
            }
        }
        Ok(moved)
    }

    #[inline]
    fn advance(&self, w: &mut Warp, mask: u32, to: u32) {
        if w.uniform.is_some() && mask == w.running {
            w.uniform = Some(to);
        } else {
            for l in Lanes(mask) {
                w.pc[l] = to;
            }
        }
    }
}

/// Whether an instruction is executed by the warp's lanes together.
fn warp_wide(op: &Op) -> bool {
    use crate::inst::Hopper;
    matches!(
        op,
        Op::Shfl { .. }
            | Op::Vote { .. }
            | Op::Ldmatrix { .. }
            | Op::MmaTf32 { .. }
            | Op::Redux { .. }
            | Op::WarpSync { .. }
            | Op::SetMaxNReg { .. }
            | Op::Hopper(
                Hopper::Wgmma(_) | Hopper::WgmmaFence | Hopper::WgmmaCommit | Hopper::WgmmaWait { .. }
            )
    )
}

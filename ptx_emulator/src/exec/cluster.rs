//! Barriers of a block and of a cluster, and a cluster's addresses.
//!
//! A block has sixteen barriers (PTX ISA §9.7.12.1, `bar.sync`, `barrier.sync`, `bar.red`): a
//! barrier waits for the thread count its instruction gives, or for every thread of the block,
//! and lets them all through together. The cluster barrier (§9.7.12.3) is split in two:
//! `barrier.cluster.arrive` counts the thread in, `barrier.cluster.wait` waits until every
//! thread of the cluster that has not left has arrived. `mapa` (§9.7.9.22) turns the address of
//! a byte of the block's shared memory into the address of the same byte in another block of
//! the cluster.

use crate::inst::{Inst, Src};
use crate::{Fault, FaultKind};

use super::state::Flow;
use super::state::{Cluster, Lanes, RANK_SHIFT, Warp};

impl Cluster<'_> {
    /// The lanes of `exec` arrive at a block's barrier, which lets them through once all its
    /// threads are there (in the scheduler's next release).
    pub(super) fn arrive_at_barrier(
        &mut self,
        w: &Warp,
        slot: usize,
        pc: u32,
        exec: u32,
        (id, count, red): (Src, Option<Src>, Option<(u32, Src, bool)>),
    ) -> Result<Flow, Fault> {
        let lane = Lanes(exec).next().unwrap_or(0);
        let get = |s: Src, l: usize| match s {
            Src::Reg(x) => w.regs[x as usize][l],
            Src::Imm(v) => v,
        };
        let id = get(id, lane) as usize;
        let inst = &self.k.insts[pc as usize];
        if id >= 16 {
            return Err(self.fault(
                FaultKind::Barrier,
                format!(
                    "{} uses barrier {id} at {}: a block has barriers 0 to 15",
                    self.who(w.index, lane),
                    self.at(inst)
                ),
            ));
        }
        let count = count.map(|c| get(c, lane) as u32);
        if let Some(c) = count
            && (c == 0 || c % 32 != 0 || c > self.block_threads().next_multiple_of(32))
        {
            return Err(self.fault(
                FaultKind::Barrier,
                format!(
                    "{} waits at barrier {id} for {c} threads at {}: a count is a multiple of 32 up to the block's threads",
                    self.who(w.index, lane),
                    self.at(inst)
                ),
            ));
        }
        let bar = &self.ctas[self.rank].bars[id];
        if !bar.arrived.is_empty() && bar.expected != count {
            return Err(self.fault(
                FaultKind::Barrier,
                format!(
                    "threads wait at barrier {id} with different counts ({:?} and {:?}), at {}",
                    bar.expected,
                    count,
                    self.at(inst)
                ),
            ));
        }
        let bar = &mut self.ctas[self.rank].bars[id];
        bar.expected = count;
        bar.arrived.push((slot, exec, pc));
        if let Some((d, p, not)) = red {
            bar.answer = Some(d);
            bar.any |= Lanes(exec).any(|l| (get(p, l) != 0) != not);
        }
        Ok(Flow::Wait(exec))
    }

    /// `barrier.cluster.arrive`: the lanes count in for the cluster barrier's current phase. The
    /// arrival releases what the warp did before it to the threads that wait for the phase; with
    /// `.relaxed` it releases nothing, and the waiting threads learn only what the warp's last
    /// fence of the cluster's scope released (`fence.mbarrier_init.release.cluster` after its
    /// mbarrier inits, say).
    pub(super) fn cluster_arrive(&mut self, inst: &Inst, pc: u32, w: &mut Warp, exec: u32) {
        self.cluster_arrived += exec.count_ones();
        self.trace_cluster(self.cluster_phase);
        for l in Lanes(exec) {
            w.cluster_phase[l] = self.cluster_phase;
        }
        if inst.opcode.split('.').any(|m| m == "relaxed") {
            let released = &mut self.released[self.slot];
            if released.init_since {
                released.relaxed_arrive = Some(pc);
            }
            let clock = released.clock.clone();
            super::shadows::join(&mut self.cluster_clock, &clock);
        } else {
            self.release_to_the_cluster();
            let clock = self.clocks[self.slot].clone();
            super::shadows::join(&mut self.cluster_clock, &clock);
        }
        self.tick();
    }

    /// The warp releases what it has done to the cluster's scope: a later relaxed
    /// `barrier.cluster.arrive` hands it on.
    pub(super) fn release_to_the_cluster(&mut self) {
        let released = &mut self.released[self.slot];
        released.clock.clone_from(&self.clocks[self.slot]);
        released.init_since = false;
    }

    /// `barrier.cluster.wait`: the lanes whose phase has completed go on; the rest stay.
    pub(super) fn cluster_wait(&mut self, w: &Warp, exec: u32) -> u32 {
        let stay =
            Lanes(exec).filter(|&l| w.cluster_phase[l] >= self.cluster_phase).fold(0, |m, l| m | 1 << l);
        if stay == 0
            && let Some(l) = Lanes(exec).next()
        {
            self.trace_cluster(w.cluster_phase[l]);
        }
        if stay != exec {
            let released = self.cluster_released.clone();
            super::shadows::join(&mut self.clocks[self.slot], &released);
        }
        stay
    }

    /// Completes the cluster barrier's phase once every thread that has not left has arrived.
    pub(super) fn release_cluster_barrier(&mut self) -> bool {
        let live: u32 = self.warps.iter().map(|w| (w.present & !w.exited).count_ones()).sum();
        if self.cluster_arrived > 0 && self.cluster_arrived >= live {
            self.cluster_arrived = 0;
            self.cluster_phase += 1;
            self.cluster_released = std::mem::replace(&mut self.cluster_clock, vec![0; self.warps.len()]);
            for cta in &mut self.ctas {
                cta.shadow.barrier();
            }
            let slots = 0..self.warps.len();
            self.share_seen(slots);
            return true;
        }
        false
    }

    /// `mapa.shared::cluster`: the same byte in block `rank`.
    pub(super) fn mapa(
        &self,
        w: &Warp,
        exec: u32,
        (a, rank): (Src, Src),
    ) -> Result<Vec<(usize, u64)>, Fault> {
        let get = |s: Src, l: usize| match s {
            Src::Reg(x) => w.regs[x as usize][l],
            Src::Imm(v) => v,
        };
        let mut out = Vec::new();
        for l in Lanes(exec) {
            let r = get(rank, l) as usize;
            if r >= self.ctas.len() {
                return Err(self.fault(
                    FaultKind::OutOfBounds,
                    format!(
                        "{} maps an address into block {r} of a cluster of {}",
                        self.who(w.index, l),
                        self.ctas.len()
                    ),
                ));
            }
            let (_, at) = self.cluster_address(get(a, l));
            out.push((l, ((r as u64 + 1) << RANK_SHIFT) | at as u64));
        }
        Ok(out)
    }

    /// `fence.proxy.async`: each lane's ordinary stores so far are visible to the async proxy.
    pub(super) fn fence_proxy_async(&mut self, exec: u32) {
        let p = &mut self.pending[self.slot];
        for l in Lanes(exec) {
            p.fences[l] += 1;
        }
    }
}

/// Whether a fence (`fence…`, `membar…`) releases to the cluster's scope or wider:
/// `fence.mbarrier_init.release.cluster` (its inits), `fence.acq_rel.cluster`, `fence.sc.gpu`,
/// `membar.gl`, … but not a fence of the block's scope, nor an acquire alone.
pub(super) fn releases_to_the_cluster(opcode: &str) -> bool {
    let has = |m: &str| opcode.split('.').any(|x| x == m);
    if opcode.starts_with("membar") {
        return has("gl") || has("sys");
    }
    !has("proxy") && !has("acquire") && (has("cluster") || has("gpu") || has("sys"))
}

//! A deadlock named: every thread of the cluster waits and none can run, where a GPU would hang.
//! The sentence lists each thing someone waits for once (a phase of one mbarrier, a block's
//! barrier, the cluster barrier), with the first thread that waits for it, how many more do, and
//! what it still lacks: an mbarrier's missing arrivals beside the count its `mbarrier.init` set,
//! and the bytes its copies owe beside those its `expect_tx` announced. A phase owed bytes that
//! no copy on its way brings is named first, with why none come ([`super::causes`]): the copy
//! whose multicast mask leaves the block out, or the expect_tx that announced more than the
//! copies carry. An arrival that never comes reads as a phase owed arrivals.

use crate::inst::{Hopper, Op, Src};
use crate::{Fault, FaultKind};

use super::state::{Cluster, Lanes, Warp};

/// What a waiting lane waits for: an mbarrier's phase (block, byte, parity), a block's barrier
/// (block, id), the cluster barrier, or anything else (block, instruction).
#[derive(Clone, Copy, PartialEq, Eq)]
enum WaitsFor {
    Phase(usize, usize, u32),
    Barrier(usize, usize),
    Cluster,
    Other(usize, u32),
}

impl Cluster<'_> {
    /// No warp can get further: the fault that names what the threads wait for.
    pub(super) fn deadlock(&mut self) -> Fault {
        if let Some(f) = self.barrier_left_behind() {
            return f;
        }
        // Each thing waited for, with its first waiter (warp slot, lane) and how many wait.
        let mut waits: Vec<(WaitsFor, (usize, usize), u32)> = Vec::new();
        for wi in 0..self.warps.len() {
            let w = &self.warps[wi];
            self.rank = w.rank as usize;
            for l in Lanes(w.running | w.parked | w.waiting) {
                let what = self.waits_for(w, l);
                match waits.iter_mut().find(|(k, _, _)| *k == what) {
                    Some((_, _, n)) => *n += 1,
                    None => waits.push((what, (wi, l), 1)),
                }
            }
        }
        // A phase that waits for bytes no copy brings comes first, with why none come.
        let starved = |what: &WaitsFor| match *what {
            WaitsFor::Phase(rank, at, _) => self.starved((rank, at)),
            _ => None,
        };
        let causes: Vec<Option<String>> = waits.iter().map(|(what, _, _)| starved(what)).collect();
        let mut order: Vec<usize> = (0..waits.len()).collect();
        order.sort_by_key(|&i| causes[i].is_none());
        let lead = causes.iter().flatten().next().map(|c| format!("{c}; ")).unwrap_or_default();
        let mut told = Vec::new();
        for (what, (wi, l), n) in order.into_iter().map(|i| waits[i]) {
            let w = &self.warps[wi];
            self.rank = w.rank as usize;
            let inst = &self.k.insts[w.pc[l] as usize];
            let described = match what {
                WaitsFor::Barrier(rank, id) => {
                    let bar = &self.ctas[rank].bars[id];
                    let want = bar.expected.unwrap_or_else(|| self.block_threads());
                    format!("at the barrier ({} of {want} threads arrived)", bar.threads())
                }
                _ => self.describe_wait(inst, w, l),
            };
            let more = match n {
                1 => String::new(),
                2 => " (and 1 more thread)".to_owned(),
                n => format!(" (and {} more threads)", n - 1),
            };
            told.push(format!("{}{more} waits at {} {described}", self.who(w.index, l), self.at(inst)));
        }
        self.fault(
            FaultKind::Deadlock,
            format!(
                "deadlock: {lead}every thread of the cluster waits and none can run: {}; on a GPU the kernel would hang",
                told.join("; ")
            ),
        )
    }

    /// What lane `l` of warp `w` (of the running block) waits for.
    fn waits_for(&self, w: &Warp, l: usize) -> WaitsFor {
        let pc = w.pc[l];
        let value = |s: Src| match s {
            Src::Imm(v) => v,
            Src::Reg(r) => w.regs[r as usize][l],
        };
        match &self.k.insts[pc as usize].op {
            Op::Bar { id, .. } => WaitsFor::Barrier(self.rank, value(*id) as usize),
            Op::Hopper(Hopper::MbarTryWait { addr, parity, .. }) => {
                let (rank, at) = self.cluster_address(self.address(w, addr, l));
                WaitsFor::Phase(rank, at, (value(*parity) & 1) as u32)
            }
            Op::Hopper(Hopper::ClusterWait) => WaitsFor::Cluster,
            _ => WaitsFor::Other(self.rank, pc),
        }
    }

    /// A block-wide barrier that threads which have left can never complete.
    fn barrier_left_behind(&mut self) -> Option<Fault> {
        for rank in 0..self.ctas.len() {
            self.rank = rank;
            let bar = &self.ctas[rank].bars[0];
            if let (Some(&(wi, lanes, pc)), None) = (bar.arrived.first(), bar.expected) {
                let gone = self.warps.iter().filter(|w| w.rank as usize == rank).find(|w| w.exited != 0);
                if let Some(w) = gone {
                    return Some(self.fault(
                        FaultKind::Barrier,
                        format!(
                            "the barrier at {} is not reached by every thread of the block: {} waits there, but {} has already left the kernel (a __syncthreads() that some threads skip)",
                            self.at(&self.k.insts[pc as usize]),
                            self.who(self.warps[wi].index, Lanes(lanes).next().unwrap_or(0)),
                            self.who(w.index, Lanes(w.exited).next().unwrap_or(0))
                        ),
                    ));
                }
            }
        }
        None
    }
}

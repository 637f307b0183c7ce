//! The machine's hooks that feed a block's timeline ([`crate::recording::timeline`]): each a test of
//! an `Option` when no timeline is asked for.

use super::Warp;
use super::state::{Cluster, Landing};
use crate::recording::timeline::*;

impl Cluster<'_> {
    /// The recorder, where it is on and the event concerns block `rank` of the cluster.
    #[inline]
    fn recorder(&mut self, rank: usize) -> Option<&mut TimelineRecorder> {
        self.timeline.as_deref_mut().filter(|t| t.on && t.rank == rank)
    }

    /// Cluster `c` starts: the recorder is on if it holds the block asked for.
    pub fn timeline_begin(&mut self, c: u64) {
        let Some(ask) = &self.launch.timeline else { return };
        let rank = (0..self.ctas.len()).find(|&r| self.launch.ctaid(c, r) == ask.block);
        let Some(t) = self.timeline.as_deref_mut() else { return };
        *t = TimelineRecorder { on: rank.is_some(), rank: rank.unwrap_or(0), ..TimelineRecorder::default() };
    }

    /// The scheduler's round has ended.
    #[inline]
    pub fn timeline_round(&mut self) {
        if let Some(t) = self.timeline.as_deref_mut() {
            t.round += 1;
        }
    }

    /// The cluster has ended without a fault: the recording goes to the launch.
    pub fn timeline_end(&mut self) {
        let (Some(ask), Some(t)) = (&self.launch.timeline, self.timeline.as_deref_mut()) else { return };
        if !std::mem::take(&mut t.on) {
            return;
        }
        let (bx, by, bz) = self.launch.block;
        let timeline = Timeline {
            kernel: self.k.name.clone(),
            block: ask.block,
            warps: (bx * by * bz).div_ceil(32),
            rounds: t.round,
            events: std::mem::take(&mut t.events),
            names: std::mem::take(&mut t.names),
        };
        *ask.recorded.lock().expect("no worker panics holding it") = Some(timeline);
    }

    /// The warp now running, by its index in its block.
    fn running_warp(&self) -> u32 {
        (self.slot % (self.warps.len() / self.ctas.len())) as u32
    }

    #[inline]
    pub fn timeline_init(&mut self, (rank, bar): (usize, usize), count: u32) {
        let who = self.running_warp();
        if let Some(t) = self.recorder(rank) {
            t.note(who, What::Init { bar, count });
        }
    }

    #[inline]
    pub fn timeline_arrive(&mut self, w: &Warp, (rank, bar): (usize, usize), tx: u64) {
        let who = if w.rank as usize == rank { w.index } else { PEER };
        if let Some(t) = self.timeline.as_deref_mut() {
            t.engine = false;
        }
        if let Some(t) = self.recorder(rank) {
            t.note(who, What::Arrive { bar, tx: tx as u32 });
        }
    }

    /// A phase of the mbarrier at `bar` of block `rank` has just completed.
    #[inline]
    pub fn timeline_phase(&mut self, (rank, bar): (usize, usize)) {
        let phase = self.ctas[rank].mbars.get(&bar).map_or(0, |m| m.phase.wrapping_sub(1));
        let running = if self.rank == rank { self.running_warp() } else { PEER };
        if let Some(t) = self.recorder(rank) {
            let who = if std::mem::take(&mut t.engine) { ENGINE } else { running };
            t.note(who, What::Phase { bar, phase });
        }
    }

    /// A lane of `w` tries the phase of `parity` of the mbarrier at `bar` of block `rank`: `stays`
    /// if it has not completed.
    #[inline]
    pub fn timeline_wait(&mut self, w: &Warp, (rank, bar): (usize, usize), parity: u32, stays: bool) {
        let Some(t) = self.recorder(rank) else { return };
        let what = if stays { What::Blocked { bar, parity } } else { What::Passed { bar, parity } };
        // One mark per warp and round: the warp's lanes try together.
        let seen = t.events.iter().rev().take_while(|e| e.round == t.round);
        if seen.clone().any(|e| e.who == w.index && e.what == what) {
            return;
        }
        t.note(w.index, what);
    }

    /// `w` issues a copy of a box of `bytes` from tensor `tensor` (its address) to byte `dst`,
    /// counted on the mbarrier at `bar`, for `blocks` blocks of the cluster.
    #[inline]
    pub fn timeline_issue(
        &mut self,
        w: &Warp,
        (bar, dst): (usize, usize),
        bytes: usize,
        tensor: u64,
        blocks: usize,
    ) {
        if !self.timeline.as_deref().is_some_and(|t| t.on && t.rank == w.rank as usize) {
            return;
        }
        let phase = self.ctas[w.rank as usize].mbars.get(&bar).map_or(0, |m| m.phase);
        let name = self.global.name(tensor).unwrap_or("a tensor").to_owned();
        let t = self.recorder(w.rank as usize).expect("checked above");
        let tensor = t.name(name);
        t.note(w.index, What::Issue { bar, phase, dst, bytes: bytes as u32, tensor, blocks: blocks as u8 });
    }

    /// A copy lands.
    #[inline]
    pub fn timeline_land(&mut self, c: &Landing) {
        if let Some(t) = self.timeline.as_deref_mut() {
            t.engine = true;
        }
        if let Some(t) = self.recorder(c.rank) {
            t.note(ENGINE, What::Land { bar: c.bar_at, dst: c.dst_at, bytes: c.data.len() as u32 });
        }
    }

    #[inline]
    pub fn timeline_wgmma(&mut self, w: &Warp, b: usize, a: Option<usize>) {
        if let Some(t) = self.recorder(w.rank as usize) {
            t.note(w.index, What::Wgmma { b, a });
        }
    }

    /// `wgmma.commit_group` (`pending`: None) or `wgmma.wait_group pending` by the running warp.
    #[inline]
    pub fn timeline_group(&mut self, pending: Option<u32>) {
        let (who, rank) = (self.running_warp(), self.rank);
        if let Some(t) = self.recorder(rank) {
            t.note(who, pending.map_or(What::Commit, |pending| What::WaitGroup { pending }));
        }
    }

    /// The running warp stores `bytes` to global memory at `address` (through the copy engine:
    /// `engine`).
    #[inline]
    pub fn timeline_store(&mut self, bytes: usize, address: u64, engine: bool) {
        if !self.timeline.as_deref().is_some_and(|t| t.on && t.rank == self.rank) {
            return;
        }
        let who = self.running_warp();
        let name = self.global.name(address).unwrap_or("global memory").to_owned();
        let t = self.recorder(self.rank).expect("checked above");
        let buffer = t.name(name);
        t.note(who, What::Store { bytes: bytes as u32, buffer, engine });
    }
}

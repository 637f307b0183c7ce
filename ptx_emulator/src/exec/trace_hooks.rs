//! The machine's hooks that record a cluster's warps for the replay ([`crate::recording::trace`]): each
//! executed instruction with what the traffic counters saw it do, and the mbarrier phases it
//! arrives on, lands bytes on or waits for. Each hook is a test of an `Option` when no replay is
//! asked for.

use crate::inst::{Inst, Op, Space, Src};
use crate::recording::trace::{CLUSTER_BARRIER, Phase, Trace, TraceEvent, Where};
use crate::traffic::Traffic;

use super::state::{Cluster, Lanes, Warp};

/// The counters an instruction's event is read from, before it runs.
#[derive(Clone, Copy, Default)]
pub struct Snap {
    shared_wavefronts: u64,
    shared_requests: u64,
    requests: u64,
    lines: u64,
    l1_misses: u64,
    store_sectors: u64,
    copy_sectors: u64,
    bulk_bytes: u64,
    bulk_sectors: u64,
    bulk_store_bytes: u64,
}

impl Snap {
    fn of(t: &Traffic) -> Snap {
        Snap {
            shared_wavefronts: t.shared_load_wavefronts + t.shared_store_wavefronts,
            shared_requests: t.shared_load_requests + t.shared_store_requests,
            requests: t.global_load_requests
                + t.global_store_requests
                + t.async_copy_requests
                + t.atomic_requests,
            lines: t.global_lines,
            l1_misses: t.l1_miss_sectors,
            store_sectors: t.global_store_sectors,
            copy_sectors: t.async_copy_sectors,
            bulk_bytes: t.bulk_load_bytes,
            bulk_sectors: t.bulk_load_sectors,
            bulk_store_bytes: t.bulk_store_bytes,
        }
    }
}

/// Whether an instruction's event reads the traffic counters (what it moved): the others' events
/// need no snapshot of them.
#[inline]
fn counted(op: &Op) -> bool {
    matches!(
        op,
        Op::Ld { .. }
            | Op::St { .. }
            | Op::Atom { .. }
            | Op::CpAsync { .. }
            | Op::Ldmatrix { .. }
            | Op::Hopper(crate::inst::Hopper::TmaLoad { .. } | crate::inst::Hopper::TmaStore { .. })
    )
}

/// An operand's value in lane `lane` of `w`.
fn operand(w: &Warp, s: &Src, lane: usize) -> u32 {
    match *s {
        Src::Imm(v) => v as u32,
        Src::Reg(r) => w.regs[r as usize][lane] as u32,
    }
}

fn key((rank, at): (usize, usize)) -> u32 {
    (rank as u32) << 24 | at as u32
}

impl Cluster<'_> {
    /// Cluster `c` starts: a recording begins where the launch asks for one.
    pub fn trace_begin(&mut self) {
        if self.launch.record.is_none() {
            return;
        }
        let (bx, by, bz) = self.launch.block;
        let per = (bx * by * bz).div_ceil(32);
        // The last cluster's recording, where it was not kept, lends its buffers: each warp's
        // stream starts with the room the last one took.
        let mut rec = self.trace_spare.take().unwrap_or_default();
        let (mut streams, mut links) =
            (std::mem::take(&mut rec.trace.streams), std::mem::take(&mut rec.trace.links));
        streams.resize_with(self.warps.len(), Vec::new);
        links.resize_with(self.warps.len(), Vec::new);
        streams.iter_mut().for_each(Vec::clear);
        links.iter_mut().for_each(Vec::clear);
        rec.trace = Trace {
            blocks: self.ctas.len() as u32,
            warps_per_block: per,
            streams,
            links,
            instructions: 0,
            local_bytes: self.k.local_bytes as u32,
        };
        rec.links.clear();
        self.trace = Some(rec);
    }

    /// The cluster has ended without a fault: its recording is kept if it is the busiest yet.
    pub fn trace_end(&mut self) {
        let (Some(ask), Some(rec)) = (&self.launch.record, self.trace.take()) else { return };
        let mut kept = ask.lock().expect("no worker panics holding it");
        if kept.as_ref().is_none_or(|t| t.instructions < rec.trace.instructions) {
            *kept = Some(rec.trace);
        } else {
            self.trace_spare = Some(rec);
        }
    }

    /// Cluster `c` starts: its footprint is kept where the launch asks for it.
    pub fn footprint_begin(&mut self, c: u64) {
        self.footprint = match &self.launch.footprints {
            Some(f) if f.wanted.contains(&c) => Some((c, Default::default())),
            _ => None,
        };
    }

    /// The global sectors (indices of 32 bytes) a read touched, where a footprint is kept.
    #[inline]
    pub fn footprint_read(&mut self, sectors: impl IntoIterator<Item = u64>) {
        if let Some((_, set)) = &mut self.footprint {
            set.extend(sectors);
        }
    }

    /// The cluster has ended without a fault: its footprint goes to the launch.
    pub fn footprint_end(&mut self) {
        let (Some(f), Some((c, set))) = (&self.launch.footprints, self.footprint.take()) else { return };
        let mut sectors: Vec<u64> = set.into_iter().collect();
        sectors.sort_unstable();
        f.got.lock().expect("no worker panics holding it").push((c, sectors));
    }

    /// The counters before `inst` runs, where a recording is on (nothing read of them for an
    /// instruction whose event does not count what it moved).
    #[inline]
    pub fn trace_snap(&self, inst: &Inst) -> Option<Snap> {
        self.trace.as_ref().map(|_| if counted(&inst.op) { Snap::of(&self.traffic) } else { Snap::default() })
    }

    /// Warp `slot` executed `inst` (at `pc`) for the lanes `exec`; `before` are the counters
    /// before it ran.
    pub fn trace_note(&mut self, slot: usize, pc: u32, inst: &Inst, w: &Warp, exec: u32, before: Snap) {
        let now = if counted(&inst.op) { Snap::of(&self.traffic) } else { before };
        let Some(rec) = self.trace.as_deref_mut() else { return };
        let d = |a: u64, b: u64| (a - b) as u32;
        let mut e = TraceEvent { pc, ..TraceEvent::default() };
        if exec == 0 && !matches!(inst.op, Op::Bra { .. }) {
            // Predicated off in every lane: it issues and does nothing else.
            e.space = Where::Off;
            rec.links.clear();
            rec.trace.streams[slot].push(TraceEvent { link: rec.trace.links[slot].len() as u32, ..e });
            rec.trace.instructions += 1;
            return;
        }
        let first = Lanes(exec).next().unwrap_or(0);
        let access = match &inst.op {
            Op::Ld { space, bytes, ds, .. } => Some((*space, *bytes * ds.len() as u32, true)),
            Op::St { space, bytes, srcs, .. } => Some((*space, *bytes * srcs.len() as u32, false)),
            _ => None,
        };
        match &inst.op {
            Op::Ld { .. } | Op::St { .. } => {
                let (space, bytes, load) = access.expect("a load or a store");
                let shared = d(now.shared_requests, before.shared_requests);
                let requests = d(now.requests, before.requests);
                if space == Space::Shared || shared > 0 {
                    e.space = Where::Shared;
                    e.a = d(now.shared_wavefronts, before.shared_wavefronts);
                } else if requests > 0 {
                    e.space = Where::Global;
                    e.a = d(now.lines, before.lines);
                    e.b = if load {
                        d(now.l1_misses, before.l1_misses)
                    } else {
                        d(now.store_sectors, before.store_sectors)
                    };
                } else if space != Space::Param {
                    // Neither shared nor global counters moved: local memory, a lane's words
                    // interleaved with its warp's.
                    e.space = Where::Local;
                    e.a = (bytes * exec.count_ones()).div_ceil(128).max(1);
                }
            }
            Op::Atom { .. } => {
                e.space = Where::Global;
                e.a = d(now.lines, before.lines).max(1);
                e.b = 1;
            }
            Op::CpAsync { .. } => {
                e.space = Where::Global;
                e.a = d(now.lines, before.lines);
                e.b = d(now.copy_sectors, before.copy_sectors);
            }
            Op::Ldmatrix { .. } => e.a = d(now.shared_wavefronts, before.shared_wavefronts),
            Op::Bar { id, count, .. } => {
                e.a = operand(w, id, first);
                e.b = count.as_ref().map_or(0, |c| operand(w, c, first));
            }
            Op::Hopper(crate::inst::Hopper::TmaLoad { .. }) => {
                e.a = d(now.bulk_bytes, before.bulk_bytes);
                e.b = d(now.bulk_sectors, before.bulk_sectors);
            }
            Op::Hopper(crate::inst::Hopper::TmaStore { .. }) => {
                e.a = d(now.bulk_store_bytes, before.bulk_store_bytes);
            }
            _ => {}
        }
        let links = &mut rec.trace.links[slot];
        e.link = links.len() as u32;
        rec.links.sort_unstable();
        rec.links.dedup();
        e.links_len = rec.links.len() as u32;
        links.append(&mut rec.links);
        rec.trace.streams[slot].push(e);
        rec.trace.instructions += 1;
    }

    /// The running instruction names a phase.
    #[inline]
    fn trace_link(&mut self, bar: u32, phase: u32) {
        if let Some(rec) = self.trace.as_deref_mut() {
            rec.links.push(Phase { bar, phase });
        }
    }

    /// An arrival on the mbarrier at `place`, in the phase under way.
    #[inline]
    pub fn trace_arrive(&mut self, place: (usize, usize)) {
        if self.trace.is_some() {
            let phase = self.ctas[place.0].mbars.get(&place.1).map_or(0, |m| m.phase);
            self.trace_link(key(place), phase);
        }
    }

    /// A wait on the mbarrier at `place` that found phase `phase` complete.
    #[inline]
    pub fn trace_passed(&mut self, place: (usize, usize), phase: u32) {
        self.trace_link(key(place), phase);
    }

    /// A copy counted on the mbarrier at byte `bar` of each block of `ranks`.
    #[inline]
    pub fn trace_copy(&mut self, ranks: &[usize], bar: usize) {
        if self.trace.is_some() {
            for &r in ranks {
                let phase = self.ctas[r].mbars.get(&bar).map_or(0, |m| m.phase);
                self.trace_link(key((r, bar)), phase);
            }
        }
    }

    /// The cluster barrier: an arrival in its phase under way, or a wait its phase `phase` let
    /// through.
    #[inline]
    pub fn trace_cluster(&mut self, phase: u32) {
        self.trace_link(CLUSTER_BARRIER, phase);
    }
}

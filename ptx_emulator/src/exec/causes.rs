//! The cause a fault's sentence names where it lies on neither of the two lines that meet: an
//! arrival that frees a buffer on the mbarrier of a block other than the one whose copy engine
//! writes into the buffer (a race between that copy and a read names the arrival, and the block
//! it should reach), and a multicast mask that leaves out a block whose mbarrier waits for the
//! copy's bytes (a deadlock names that barrier first, and the copy with its mask). What they need
//! is kept as the warps run: each warp's first arrival on each mbarrier (with the sanitizer on)
//! and each multicast copy it issues.

use super::shadows::{Arrived, Multicast};
use super::state::Cluster;

impl Cluster<'_> {
    /// Lane `lane` of the running warp arrived at `pc` on the mbarrier at `place`: kept, the
    /// first arrival on each mbarrier.
    pub(super) fn note_arrived(&mut self, pc: u32, lane: usize, place: (usize, usize)) {
        if !self.launch.sanitize {
            return;
        }
        let arrived = &mut self.pending[self.slot].arrived;
        if !arrived.iter().any(|a| a.place == place) {
            arrived.push(Arrived { place, pc, lane: lane as u32 });
        }
    }

    /// The running warp issued at `pc` a copy of `bytes` multicast to the blocks of `mask`,
    /// counted on the mbarrier at byte `bar` of each: kept, once for each instruction and mask.
    pub(super) fn note_multicast(&mut self, pc: u32, mask: u16, bar: usize, bytes: u32) {
        let issued = &mut self.pending[self.slot].multicasts;
        if !issued.iter().any(|m| (m.pc, m.mask, m.bar) == (pc, mask, bar)) {
            issued.push(Multicast { pc, mask, bar, bytes });
        }
    }

    /// `block (x,y,z)` for block `rank` of the cluster.
    fn block(&self, rank: usize) -> String {
        let c = self.ctas[rank].ctaid;
        format!("block ({},{},{})", c[0], c[1], c[2])
    }

    /// A copy issued by the running warp writes into block `rank`, another block of the cluster,
    /// bytes that warp `reader` (a slot of block `rank`) used with nothing ordering the two. Where
    /// the running warp waited on an mbarrier of its own block before the copy, and the reader
    /// arrives on that barrier (by its byte, or on its array) in other blocks only: the clause
    /// that names the reader's arrival, the block whose barrier it reached and the block whose
    /// barrier it should reach. None otherwise.
    pub(super) fn arrival_elsewhere(&self, reader: usize, rank: usize) -> Option<String> {
        let from = self.rank;
        if from == rank {
            return None;
        }
        let passed = self.pending[self.slot].passed.iter();
        let wait = passed.filter(|p| p.place.0 == from).max_by_key(|p| p.clock)?;
        let array = self.mbar_array(wait.place);
        let same = |a: &&Arrived| {
            a.place.1 == wait.place.1 || (array.is_some() && self.mbar_array(a.place) == array)
        };
        let arrived = &self.pending[reader].arrived;
        if arrived.iter().filter(same).any(|a| a.place.0 == from) {
            return None;
        }
        // The arrival on the same byte, where the reader made one, else one on the same array.
        let a = arrived.iter().filter(same).min_by_key(|a| a.place.1 != wait.place.1)?;
        let warps = self.warps.len() / self.ctas.len();
        let reached = if a.place.0 == rank {
            format!("{} of its own {}", self.mbar_name_from(rank, rank, a.place.1), self.block(rank))
        } else {
            self.mbar_name_from(rank, a.place.0, a.place.1)
        };
        let waited = self.mbar_name_from(from, from, wait.place.1);
        Some(format!(
            "warp {} frees the buffer with its arrival at {} on {reached}, but the copy comes from {}, which waits at {} on its own {} before it writes into {}: the arrival must reach {waited} of {}",
            reader % warps,
            self.at(&self.k.insts[a.pc as usize]),
            self.block(from),
            self.at(&self.k.insts[wait.pc as usize]),
            waited.trim_start_matches("the "),
            self.block(rank),
            self.block(from),
        ))
    }

    /// The phase under way of the mbarrier at byte `at` of block `rank`, where it waits for bytes
    /// that no copy on its way brings: a clause that names the barrier and the bytes, and why none
    /// come: the multicast copies counted on the same barrier elsewhere whose mask leaves the
    /// block out, or else the expect_tx and what the copies counted on the phase brought.
    pub(super) fn starved(&self, (rank, at): (usize, usize)) -> Option<String> {
        let m = self.ctas.get(rank)?.mbars.get(&at)?;
        if m.tx <= 0 || !m.flying.is_empty() {
            return None;
        }
        let mut missed: Vec<Multicast> = Vec::new();
        for mc in self.pending.iter().flat_map(|p| &p.multicasts) {
            let leaves_out = mc.bar == at && mc.mask & (1 << rank) == 0;
            if leaves_out && !missed.iter().any(|x| (x.pc, x.mask) == (mc.pc, mc.mask)) {
                missed.push(*mc);
            }
        }
        let cause = if missed.is_empty() {
            match m.expect_pc {
                Some(pc) => format!(
                    "the expect_tx at {} announced {} bytes, and the copies counted on the phase brought {}",
                    self.at(&self.k.insts[pc as usize]),
                    m.announced,
                    m.announced - m.tx
                ),
                None => "no copy counted on the phase is on its way".to_owned(),
            }
        } else {
            let width = self.ctas.len();
            let copies: Vec<String> = missed
                .iter()
                .map(|mc| {
                    format!(
                        "the copy at {} multicasts its {} bytes with mask 0b{:0width$b}",
                        self.at(&self.k.insts[mc.pc as usize]),
                        mc.bytes,
                        mc.mask
                    )
                })
                .collect();
            let leaves = if missed.len() == 1 { "leaves" } else { "leave" };
            format!(
                "{}, which {leaves} {} (rank {rank} of the cluster) out",
                copies.join(" and "),
                self.block(rank)
            )
        };
        Some(format!(
            "{} of {} waits for {} bytes that no copy sends it: {cause}",
            self.mbar_name_from(rank, rank, at),
            self.block(rank),
            m.tx
        ))
    }
}

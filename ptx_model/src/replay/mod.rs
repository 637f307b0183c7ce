//! The time model's replay: one SM's warps re-run in clock cycles from what the emulator
//! recorded of them, so that what a learner changes (a load issued before the work that hides
//! it, a loop left rolled, a second block an SM) moves the predicted time as it moves the GPU's.
//!
//! ```text
//! emulation ──▶ the busiest cluster's trace ──▶ [`trace::statics`] ──▶ [`sim::replay`] on [`crate::profile::Sm`] ──▶ clocks
//! ```
//!
//! The emulator records, for the busiest cluster of a launch, each warp's instructions in the
//! order it executed them ([`trace`]). The replay lays the SM's share of the grid on one SM
//! (each block of a cluster on one of its own), and issues the warps' instructions in time
//! order ([`sim`]): four schedulers, each at most one instruction a clock; an instruction waits
//! for the registers it reads, for its unit (the L1's data path, the tensor cores, the SM's
//! share of the L2), for its block's barrier or its mbarrier's phase. The book's appendix "The
//! time model" explains it with its constants ([`sm`]).

pub mod issue_order;
pub mod sim;
#[cfg(test)]
mod tests;

pub use ptx_emulator::recording::{Footprint, Recorded, Static, Trace, trace};
pub use sim::{Activity, ReplayOutcome, Setup, Span, WaitClocks, WarpStates};

/// A launch's recording replayed: the replay as a method of [`Recorded`], which the machine's
/// crate defines.
pub trait ReplayRecorded {
    /// The launch replayed on one SM of `profile`, `resident` blocks an SM, its kernel using
    /// `registers` a thread (0: not known): the busiest SM's clusters, in the order ptxas issues
    /// each warp's instructions ([`order`]), first at the memory's idle latencies, then again at
    /// the latencies its own load on the L2 and DRAM gives ([`crate::profile::Curve`]).
    /// `l2_bytes` is what the whole launch moves through the L2: the SMs that share it are those
    /// that move as much as the busiest does (a persistent grid's idle blocks share none);
    /// `l2_miss`, the share of the L2's sectors that come from DRAM ([`L2Misses::misses`]);
    /// `l2_clock`, the L2's clock over the SMs' ([`Setup::l2_clock`]).
    /// `picture`: keep the first cluster's warps' activity over that many clocks (0: none).
    fn replay(
        &self,
        profile: &crate::profile::Profile,
        resident_registers: (u32, u32),
        serialized_picture: (bool, f64),
        l2: (f64, f64, f64),
    ) -> ReplayOutcome;
}

impl ReplayRecorded for Recorded {
    fn replay(
        &self,
        profile: &crate::profile::Profile,
        (resident, registers): (u32, u32),
        (serialized_wgmma, picture): (bool, f64),
        (l2_bytes, l2_miss, l2_clock): (f64, f64, f64),
    ) -> ReplayOutcome {
        let (sm, memory) = (&profile.sm, &profile.memory);
        let free = if registers == 0 { 0 } else { self.register_limit.saturating_sub(registers) };
        let in_order = || {
            let mut trace = self.trace.clone_counts();
            trace.streams =
                self.trace.streams.iter().map(|s| issue_order::schedule(s, &self.statics, free)).collect();
            trace.links = self.trace.links.clone();
            (free, trace)
        };
        // The order for these free registers, worked out once (another count of registers, as
        // a test may ask for, is worked out apart).
        let kept = self.issue_order.get_or_init(in_order);
        let other;
        let trace = match kept.0 == free {
            true => &kept.1,
            false => {
                other = in_order().1;
                &other
            }
        };
        let cluster = u64::from(self.cluster.max(1));
        let clusters = self.blocks.div_ceil(cluster);
        let groups = (u64::from(profile.machine.sms) / cluster).max(1);
        let mut setup = Setup {
            clusters: clusters.div_ceil(groups),
            resident: resident.max(1),
            busy_sms: self.blocks.min(u64::from(profile.machine.sms)) as u32,
            shared_bytes: self.shared_bytes,
            l2_rate: profile.l2_bytes_a_clock(),
            l2_latency: memory.l2_latency.idle(),
            l2_miss: l2_miss.clamp(0.0, 1.0),
            dram_latency: memory.dram_latency.idle(),
            serialized_wgmma,
            l2_clock,
            picture: 0.0,
        };
        let first = sim::replay(trace, &self.statics, sm, &setup);
        let per_block = first.l2_bytes / (first.replayed.max(1) * cluster) as f64;
        if per_block > 0.0 {
            let moving = (l2_bytes / per_block).round().clamp(1.0, f64::from(setup.busy_sms));
            setup.busy_sms = moving as u32;
        }
        // The load the whole GPU puts on the L2, and on DRAM, in bytes a clock: each busy SM
        // moving what the replayed one did (a block of a cluster an SM) over the replayed time.
        let load = if first.replayed_cycles > 0.0 {
            first.l2_bytes / cluster as f64 / first.replayed_cycles * f64::from(setup.busy_sms)
        } else {
            0.0
        };
        setup.l2_latency = memory.l2_latency.at(load);
        setup.dram_latency = memory.dram_latency.at(load * setup.l2_miss).max(setup.l2_latency);
        setup.picture = picture;
        let mut o = sim::replay(trace, &self.statics, sm, &setup);
        (o.l2_latency, o.dram_latency) = (setup.l2_latency, setup.dram_latency);
        o
    }
}

/// The L2's misses estimated from a launch's [`Footprint`], which the machine's crate records.
pub trait L2Misses {
    /// The share of `l2_read_sectors` that come from DRAM, for a launch of `clusters` clusters,
    /// `wave` of them at once over the GPU, whose operands take `compulsory` bytes, on an L2 of
    /// `l2_size` bytes.
    fn misses(&self, clusters: u64, wave: u64, compulsory: u64, l2_size: u64, l2_read_sectors: u64) -> f64;
}

impl L2Misses for Footprint {
    /// The share of `l2_read_sectors` that come from DRAM, for a launch of `clusters` clusters,
    /// `wave` of them at once over the GPU, whose operands take `compulsory` bytes, on an L2 of
    /// `l2_size` bytes.
    fn misses(&self, clusters: u64, wave: u64, compulsory: u64, l2_size: u64, l2_read_sectors: u64) -> f64 {
        if l2_read_sectors == 0 || self.sectors == 0 {
            return 0.0;
        }
        let first_time = compulsory.div_ceil(32);
        let dram = if compulsory <= l2_size / 2 {
            // Every operand fits: each sector comes from DRAM once.
            first_time
        } else {
            let wave = wave.clamp(1, clusters.max(1));
            let along_x = wave.min(u64::from(self.side_x.max(1)));
            let along_y = wave.div_ceil(u64::from(self.side_x.max(1))).min(u64::from(self.side_y.max(1)));
            let a_wave = self.sectors
                + (along_x - 1) * self.new_along_x
                + along_y.saturating_sub(1) * self.new_along_y;
            let waves = clusters as f64 / wave as f64;
            ((a_wave as f64 * waves) as u64).max(first_time)
        };
        (dram as f64 / l2_read_sectors as f64).min(1.0)
    }
}

//! The time model's replay: one SM's warps re-run in clock cycles from what the emulator
//! recorded of them, so that what a learner changes (a load issued before the work that hides
//! it, a loop left rolled, a second block an SM) moves the predicted time as it moves the GPU's.
//!
//! ```text
//! emulation ──▶ the busiest cluster's trace ──▶ [`trace::statics`] ──▶ [`sim::replay`] on [`sm::Sm`] ──▶ clocks
//! ```
//!
//! The emulator records, for the busiest cluster of a launch, each warp's instructions in the
//! order it executed them ([`trace`]). The replay lays the SM's share of the grid on one SM
//! (each block of a cluster on one of its own), and issues the warps' instructions in time
//! order ([`sim`]): four schedulers, each at most one instruction a clock; an instruction waits
//! for the registers it reads, for its unit (the L1's data path, the tensor cores, the SM's
//! share of the L2), for its block's barrier or its mbarrier's phase. The book's appendix "The
//! time model" explains it with its constants ([`sm`]).

pub mod order;
pub mod sim;
pub mod sm;
#[cfg(test)]
mod tests;
pub mod trace;

pub use sim::{Activity, Outcome, Setup, Span, Waits};
pub use sm::{H100_SM, Sm};
pub use trace::{Static, Trace};

/// One launch's recording: the busiest cluster's trace, what its instructions are, and the
/// launch's shape.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub kernel: String,
    pub trace: Trace,
    pub statics: Vec<Static>,
    /// Blocks in the grid, blocks in a cluster, and a block's shared memory.
    pub blocks: u64,
    pub cluster: u32,
    pub shared_bytes: u32,
    /// The registers a thread may use under the kernel's launch bounds.
    pub register_limit: u32,
}

impl Recorded {
    pub fn new(trace: Trace, launch: &crate::exec::Launch) -> Recorded {
        let (gx, gy, gz) = launch.grid;
        let k = launch.kernel;
        Recorded {
            kernel: k.name.clone(),
            trace,
            statics: trace::statics(k),
            blocks: u64::from(gx) * u64::from(gy) * u64::from(gz),
            cluster: launch.cluster_size() as u32,
            shared_bytes: (k.dynamic_at.max(k.static_shared) + launch.dynamic_shared) as u32,
            register_limit: k.register_limit,
        }
    }

    /// The launch replayed on `sm` of a GPU of `sms` SMs, `resident` blocks an SM, its kernel
    /// using `registers` a thread (0: not known): the busiest SM's clusters, in the order ptxas
    /// issues each warp's instructions ([`order`]), first at the L2's idle latency, then again
    /// at the latency its use of the L2 gives (between the idle and the loaded one).
    /// `l2_bytes` is what the whole launch moves through the L2: the SMs that share it are
    /// those that move as much as the busiest does (a persistent grid's idle blocks share none);
    /// `l2_clock`, the L2's clock over the SMs' ([`Setup::l2_clock`]).
    /// `picture`: keep the first cluster's warps' activity over that many clocks (0: none).
    pub fn replay(
        &self,
        sm: &Sm,
        sms: u32,
        (resident, registers): (u32, u32),
        (serialized_wgmma, picture): (bool, f64),
        (l2_bytes, l2_clock): (f64, f64),
    ) -> Outcome {
        let free = if registers == 0 { 0 } else { self.register_limit.saturating_sub(registers) };
        let mut trace = self.trace.clone_counts();
        trace.streams = self.trace.streams.iter().map(|s| order::schedule(s, &self.statics, free)).collect();
        trace.links = self.trace.links.clone();
        let cluster = u64::from(self.cluster.max(1));
        let clusters = self.blocks.div_ceil(cluster);
        let groups = (u64::from(sms) / cluster).max(1);
        let mut setup = Setup {
            clusters: clusters.div_ceil(groups),
            resident: resident.max(1),
            busy_sms: self.blocks.min(u64::from(sms)) as u32,
            shared_bytes: self.shared_bytes,
            l2_latency: sm.l2,
            serialized_wgmma,
            l2_clock,
            picture: 0.0,
        };
        let first = sim::replay(&trace, &self.statics, sm, &setup);
        let per_block = first.l2_bytes / (first.replayed.max(1) * cluster) as f64;
        if per_block > 0.0 {
            let moving = (l2_bytes / per_block).round().clamp(1.0, f64::from(setup.busy_sms));
            setup.busy_sms = moving as u32;
        }
        // The share of one SM's part of the L2 each block of the cluster (an SM each) used.
        let share =
            (sm.l2_rate / f64::from(setup.busy_sms.max(1))).min(sm.l2_rate_one_sm) * l2_clock.max(1.0);
        let used = if first.replayed_cycles > 0.0 {
            (first.l2_bytes / cluster as f64 / share / first.replayed_cycles).min(1.0)
        } else {
            0.0
        };
        setup.l2_latency = sm.l2 + (sm.l2_loaded - sm.l2) * used;
        setup.picture = picture;
        sim::replay(&trace, &self.statics, sm, &setup)
    }
}

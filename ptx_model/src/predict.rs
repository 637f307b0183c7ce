//! The time model: from one launch's counts, the time the kernel would take on a GPU, and the
//! bottleneck that sets it. The book's appendix "The time model" derives every line; each constant
//! below names its source, a published figure or a microbenchmark of
//! `calibration/throughput.cu` recorded for that purpose. Nothing here is fitted to the labs'
//! timed runs, which the model is judged against.
//!
//! The busiest SM runs `n = ⌈blocks / SMs⌉` blocks (and at least the busiest block's work), `r`
//! at a time. Each block needs, on average,
//! the cycles of the SM's busiest unit for its counts (issue, tensor cores, the L1's data path);
//! blocks that load from global memory with ordinary loads also wait a latency `L` in each phase
//! between barriers in which they load, which `r` blocks side by side hide from each other. The
//! GPU as a whole must also move the L2's bytes and DRAM's. The time is the largest of these, and
//! never less than what one launch costs.

use ptx_emulator::Traffic;

use crate::replay::{L2Misses, ReplayRecorded};

pub use crate::profile::{H100, H200, Profile, WGMMA_DRAIN_ESTIMATE};

/// The FLOPs of one TF32 `mma.sync` m16n8k8: 16·8 products of depth 8, two FLOPs each.
const MMA_SYNC_FLOPS: u64 = 2 * 16 * 8 * 8;

/// The largest share of integer, control and other instructions among the labs' kernels the
/// model was judged on (the book's appendix, its table): SIMT kernels (step 10's at 1×4096×4096,
/// 73%) and tensor-core ones (step 11's, 95%, whose producers wait on mbarriers). Beyond these the
/// model says so.
pub const OTHER_CHECKED_SIMT: f64 = 0.75;
pub const OTHER_CHECKED_TENSOR: f64 = 0.96;

/// The most 128-byte lines a global request touched on average among the kernels the model was
/// judged on: the held-out set's uncoalesced kernel, 32 lines for A and one for B, 16.5 a load,
/// and up to 17 with its stores of C (32 lines each) at K of 16 or more. Beyond it the model says
/// so.
pub const LINES_CHECKED: f64 = 17.0;

/// What the model needs of a launch besides its counts.
#[derive(Clone, Copy, Debug)]
pub struct LaunchFacts {
    /// Blocks of the grid, and how many an SM holds at once (its resources allow).
    pub blocks: u64,
    pub resident: u32,
    /// Registers a thread of the kernel uses (0: not known).
    pub registers: u32,
    /// The bytes the launch must read from and write to DRAM at least: each operand once.
    pub compulsory_bytes: u64,
}

/// The bottlenecks the model weighs, each in seconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Bottleneck {
    /// Instruction issue (its FP32 share is given beside it).
    Issue,
    TensorCores,
    /// The L1's data path: shared-memory wavefronts and global requests.
    L1,
    L2,
    Dram,
    /// Waiting for global loads, at the occupancy the resources allow.
    Latency,
    /// The launch's own cost: the kernel is shorter than a launch.
    Launch,
}

impl Bottleneck {
    pub fn name(self) -> &'static str {
        match self {
            Bottleneck::Issue => "instruction issue",
            Bottleneck::TensorCores => "tensor-core issue",
            Bottleneck::L1 => "shared-memory and L1 wavefronts",
            Bottleneck::L2 => "L2 bytes",
            Bottleneck::Dram => "DRAM bytes",
            Bottleneck::Latency => "latency at this occupancy",
            Bottleneck::Launch => "the launch itself",
        }
    }
}

/// One launch's predicted time.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Prediction {
    pub seconds: f64,
    pub bottleneck: Bottleneck,
    /// Every bottleneck's time, in the order of [`Bottleneck`].
    pub terms: Vec<(Bottleneck, f64)>,
    pub clock_mhz: f64,
    /// The share of FP32 instructions among those issued, and of those that are neither FP32,
    /// memory nor tensor-core instructions.
    pub fp32_share: f64,
    pub other_share: f64,
    /// Blocks over SMs × the busiest SM's blocks: below 1 where the last wave leaves SMs idle.
    pub wave_fill: f64,
    /// One block's loading phases, those of them that compute after their loads, and the blocks
    /// an SM holds at once: what the latency term is made of.
    pub phases: f64,
    pub overlapped: f64,
    pub resident: u32,
    /// The cycles a load waits in the latency term: the L2's idle latency, longer the busier the
    /// launch keeps the L2.
    pub load_latency: f64,
    /// The 32-byte sectors the L2 sends to the SMs (loads) and takes from them (stores).
    pub l2_read_sectors: u64,
    pub l2_written_sectors: u64,
    /// Why the number is outside what the model was checked on, if it is.
    pub unchecked: Vec<String>,
    /// Whether a floor of the whole GPU (the L2's bytes or DRAM's) sets the time rather than the
    /// SM's own work: a change inside the SM (buffers, registers, the order of its instructions)
    /// then cannot move the prediction, and the model cannot rank such changes.
    pub floor: bool,
    /// What the replay of the busiest SM found, where the time comes from one.
    pub replay: Option<Replay>,
}

/// The replay's side of a prediction.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Replay {
    /// The busiest SM's clocks, and the clusters replayed of those it runs (one block of each
    /// on an SM of its own); blocks in a cluster.
    pub cycles: f64,
    pub replayed: u64,
    pub clusters: u64,
    pub cluster: u32,
    /// The share of the L2's reads taken to come from DRAM, and the cycles a load waited for
    /// the L2 and for DRAM at the load the launch puts on them (the SMs' clocks at SIMT's).
    pub l2_miss: f64,
    pub l2_latency: f64,
    pub dram_latency: f64,
    /// The share of the replayed time each unit was busy: issue (of its sustained rate), the
    /// L1's data path, the busiest tensor core, the SM's share of the L2.
    pub issue_busy: f64,
    pub l1_busy: f64,
    pub tensor_busy: f64,
    pub l2_busy: f64,
    /// The share of the schedulers' issue slots (one a clock each) that issued.
    pub issue_slots: f64,
    /// What the warps waited for, as shares of their waits.
    pub waits: crate::replay::WaitClocks,
    /// The replayed warps' clocks by their state (issuing, ready, or waiting and for what).
    pub states: crate::replay::WarpStates,
    /// How long the replay took on this machine (seconds).
    pub seconds: f64,
}

/// The share of its time a unit must be busy for the replay to name it the bottleneck; below it, the
/// warps' waits are (as Nsight Compute's page reads a kernel none of whose units passes 60%).
pub const BUSY: f64 = 0.6;

impl Profile {
    /// The model, for a launch of `shape` that counted `t`.
    pub fn predict(&self, t: &Traffic, shape: LaunchFacts) -> Prediction {
        self.predict_serialized(t, shape, false)
    }

    /// [`Gpu::predict`], where `serialized_wgmma` says ptxas serialised the kernel's wgmma (its
    /// advisories say so): each waits for the one before it of its warpgroup.
    pub fn predict_serialized(&self, t: &Traffic, shape: LaunchFacts, serialized_wgmma: bool) -> Prediction {
        let blocks = shape.blocks.max(1) as f64;
        let sms = f64::from(self.machine.sms);
        // The busiest SM's blocks, and the rounds of resident blocks it runs them in.
        let n = (blocks / sms).ceil();
        let r = f64::from(shape.resident.max(1));
        let rounds = (n / r).ceil();
        let per_block = |v: u64| v as f64 / blocks;

        // Cycles one block needs of each of the SM's units.
        let issue = per_block(t.warp_instructions) / self.sm.issue;
        let tensor_work = per_block(t.mma_sync_flops) / self.sm.mma_sync_rate
            + per_block(t.wgmma_tf32_flops) / self.sm.wgmma_tf32_rate
            + per_block(t.wgmma_16bit_flops) / self.sm.wgmma_16bit_rate
            + per_block(t.wgmma_int8_ops) / self.sm.wgmma_int8_rate;
        // Serialised wgmma: after each of a warpgroup's (a warpgroup's instruction counts four
        // warps'), the tensor cores wait out the pipeline's drain before the next may start.
        let drains = if serialized_wgmma { per_block(t.wgmma_instructions) / 4.0 } else { 0.0 };
        let tensor = tensor_work + drains * self.wgmma_drain;
        // The share of those cycles the tensor cores work rather than drain, for the clock.
        let working = if tensor > 0.0 { tensor_work / tensor } else { 1.0 };
        // A global request takes a pass for its first 128-byte line and one for each further line
        // its lanes touch.
        let requests = t.global_load_requests + t.global_store_requests + t.async_copy_requests;
        let further_lines = t.global_lines.saturating_sub(requests);
        let l1 = per_block(t.shared_load_wavefronts + t.shared_store_wavefronts) / self.sm.l1_wavefront_rate
            + per_block(requests) / self.sm.l1_request_rate
            + per_block(further_lines) / self.sm.l1_line_rate;
        let busiest = issue.max(tensor).max(l1);
        // Each loading phase waits once, all of the latency, or what is left of it after the
        // phase's work where the block computes after its loads (a prefetch); `r` blocks side by
        // side overlap their waits and work.
        let phases = per_block(t.load_phases);
        let overlapped = per_block(t.overlapped_phases);
        let work_a_phase = if phases > 0.0 { busiest / phases } else { 0.0 };
        let wait_at = |l: f64| (phases - overlapped) * l + overlapped * (l - work_a_phase).max(0.0);

        // Where blocks differ, the busiest SM holds at least the busiest block.
        let most_issue = t.most_block_instructions as f64 / self.sm.issue;
        let most_tensor = t.most_block_mma_sync_flops as f64 / self.sm.mma_sync_rate
            + t.most_block_wgmma_tf32_flops as f64 / self.sm.wgmma_tf32_rate
            + t.most_block_wgmma_16bit_flops as f64 / self.sm.wgmma_16bit_rate
            + t.most_block_wgmma_int8_ops as f64 / self.sm.wgmma_int8_rate;
        let sm_cycles = |c: f64| n * c;
        let (issue_sm, tensor_sm) = (sm_cycles(issue).max(most_issue), sm_cycles(tensor).max(most_tensor));
        let l2_read_sectors = t.l1_miss_sectors + t.async_copy_sectors + t.bulk_load_sectors;
        let l2_written_sectors = t.global_store_sectors + t.bulk_store_bytes.div_ceil(32);
        let l2_bytes = 32 * (l2_read_sectors + l2_written_sectors);
        let l2_time = l2_bytes as f64 / self.memory.l2_rate;

        // A busy L2 answers later: the latency is read off the profile's curve at the load the
        // launch puts on the L2, that load taken once at the idle latency and the SIMT clock.
        let simt_hz = self.simt_mhz * 1e6;
        let sm_at = |l: f64| issue_sm.max(tensor_sm).max(sm_cycles(l1)).max(rounds * (wait_at(l) + busiest));
        let idle_time = (sm_at(self.memory.l2_latency.idle()) / simt_hz).max(l2_time).max(self.launch);
        let l2_share = if idle_time > 0.0 { (l2_time / idle_time).min(1.0) } else { 0.0 };
        let load_latency = self.memory.l2_latency.at(l2_share * self.l2_bytes_a_clock());
        let latency_cycles = rounds * (wait_at(load_latency) + busiest);

        // The clock: the tensor cores' share of the busiest SM's time lowers it.
        let sm_time = issue_sm.max(tensor_sm).max(sm_cycles(l1)).max(latency_cycles) / simt_hz;
        let busy = if sm_time > 0.0 { working * tensor_sm / simt_hz / sm_time } else { 0.0 };
        let mhz = self.clock_mhz(busy);
        let hz = mhz * 1e6;

        let terms = vec![
            (Bottleneck::Issue, issue_sm / hz),
            (Bottleneck::TensorCores, tensor_sm / hz),
            (Bottleneck::L1, sm_cycles(l1) / hz),
            (Bottleneck::L2, l2_time),
            (Bottleneck::Dram, shape.compulsory_bytes as f64 / self.memory.dram_rate),
            (Bottleneck::Latency, latency_cycles / hz),
            (Bottleneck::Launch, self.launch),
        ];
        let (bottleneck, seconds) =
            terms.iter().copied().fold((Bottleneck::Launch, 0.0), |a, b| if b.1 > a.1 { b } else { a });

        // Instructions that are none of the FP32 pipe's, the memories' or the tensor cores': the
        // integer and control work the labs' kernels do little of.
        let counted = t.fp32_instructions
            + t.global_load_requests
            + t.global_store_requests
            + t.shared_load_requests
            + t.shared_store_requests
            + t.async_copy_requests
            + t.wgmma_instructions
            + t.mma_sync_flops / MMA_SYNC_FLOPS;
        let other_share = 1.0 - counted as f64 / t.warp_instructions.max(1) as f64;
        let mut unchecked = Vec::new();
        let checked = if tensor > 0.0 { OTHER_CHECKED_TENSOR } else { OTHER_CHECKED_SIMT };
        // Compared as printed (whole percents), so that the line never reads "96% … (96% at most)".
        if (100.0 * other_share).round() > (100.0 * checked).round() {
            unchecked.push(format!(
                "{:.0}% of its instructions are integer, control or other work, more than the labs' kernels the model was checked on ({:.0}% at most)",
                100.0 * other_share,
                100.0 * checked
            ));
        }
        if t.atomic_requests * 100 > t.warp_instructions {
            unchecked.push(
                "atomic operations make more than 1% of its instructions, and the model does not time them"
                    .to_string(),
            );
        }
        let lines_a_request = t.global_lines as f64 / requests.max(1) as f64;
        if lines_a_request > LINES_CHECKED {
            unchecked.push(format!(
                "its global requests touch {lines_a_request:.1} lines of 128 bytes on average, more than the kernels the model was checked on ({LINES_CHECKED} at most)"
            ));
        }
        if drains > 0.0 {
            unchecked.push(format!(
                "ptxas serialised its wgmma, whose waits the model counts at an estimated {:.0} cycles a wgmma",
                self.wgmma_drain
            ));
        }
        if t.bulk_estimated > 0 {
            unchecked.push("some of its copy-engine reads are estimates".to_string());
        }
        Prediction {
            seconds,
            bottleneck,
            terms,
            clock_mhz: mhz,
            fp32_share: t.fp32_instructions as f64 / t.warp_instructions.max(1) as f64,
            other_share,
            wave_fill: blocks / (n * sms),
            phases,
            overlapped,
            resident: shape.resident,
            load_latency,
            l2_read_sectors,
            l2_written_sectors,
            unchecked,
            floor: matches!(bottleneck, Bottleneck::L2 | Bottleneck::Dram),
            replay: None,
        }
    }

    /// The share of `rec`'s L2 reads that come from DRAM: its footprint's estimate
    /// ([`L2Misses::misses`]) for the clusters the GPU runs at once.
    pub fn l2_miss(&self, rec: &crate::replay::Recorded, t: &Traffic, shape: LaunchFacts) -> f64 {
        let cluster = u64::from(rec.cluster.max(1));
        let wave = (u64::from(self.machine.sms) / cluster).max(1) * u64::from(shape.resident.max(1));
        let reads = t.l1_miss_sectors + t.async_copy_sectors + t.bulk_load_sectors;
        rec.footprint.misses(
            rec.blocks.div_ceil(cluster),
            wave,
            shape.compulsory_bytes,
            self.memory.l2_size,
            reads,
        )
    }

    /// The prediction from the replay of the busiest SM's clusters, one recording a launch of
    /// the kernel (their times add up); the counts' terms are kept beside it for the report. A
    /// replay that cannot go on (a wait its trace never satisfies) leaves the counts' prediction,
    /// said so.
    pub fn predict_replayed(
        &self,
        t: &Traffic,
        shape: LaunchFacts,
        recorded: &[crate::replay::Recorded],
        serialized_wgmma: bool,
    ) -> Prediction {
        let mut p = self.predict_serialized(t, shape, serialized_wgmma);
        if recorded.is_empty() {
            return p;
        }
        let started = std::time::Instant::now();
        let l2_bytes = 32.0
            * (t.l1_miss_sectors + t.async_copy_sectors + t.bulk_load_sectors + t.global_store_sectors)
                as f64
            + t.bulk_store_bytes as f64;
        // The replay at the SIMT clock; where the tensor cores lower the SMs' clock, again with the
        // L2 at its own clock, faster in the SMs' clocks.
        let filled = (shape.blocks as f64 / f64::from(self.machine.sms)).min(1.0);
        let mut l2_clock = 1.0;
        let mut tries = 0;
        let (mut r, mhz) = loop {
            tries += 1;
            let mut r = Replay::default();
            let mut replayed_cycles = 0.0;
            let mut issued = 0.0;
            let (mut l1, mut tensor, mut l2) = (0.0, 0.0, 0.0);
            for rec in recorded {
                let miss = self.l2_miss(rec, t, shape);
                r.l2_miss = r.l2_miss.max(miss);
                let o = rec.replay(
                    self,
                    (shape.resident, shape.registers),
                    (serialized_wgmma, 0.0),
                    (l2_bytes, miss, l2_clock),
                );
                if let Some(why) = o.stuck {
                    p.unchecked
                        .push(format!("its replay stopped ({why}): the time is the counts' bottleneck"));
                    return p;
                }
                r.cycles += o.cycles;
                r.replayed += o.replayed;
                r.l2_latency = r.l2_latency.max(o.l2_latency);
                r.dram_latency = r.dram_latency.max(o.dram_latency);
                let size = u64::from(rec.cluster.max(1));
                let groups = (u64::from(self.machine.sms) / size).max(1);
                r.clusters += rec.blocks.div_ceil(size).div_ceil(groups);
                r.cluster = r.cluster.max(rec.cluster.max(1));
                replayed_cycles += o.replayed_cycles;
                issued += o.issued;
                l1 += o.l1_busy;
                tensor += o.tensor_busy;
                l2 += o.l2_busy;
                let w = &mut r.waits;
                w.memory += o.waited.memory;
                w.shared += o.waited.shared;
                w.arithmetic += o.waited.arithmetic;
                w.barrier += o.waited.barrier;
                w.asynchronous += o.waited.asynchronous;
                r.states.add(&o.states);
            }
            let span = replayed_cycles.max(1.0);
            r.issue_busy = issued / span / self.sm.issue;
            r.issue_slots = issued / span / self.sm.schedulers as f64;
            r.l1_busy = l1 / span;
            r.tensor_busy = tensor / span;
            r.l2_busy = l2 / span;
            // The clock: lowered by the share of the time the tensor cores work, where enough SMs
            // work to hold the GPU at its power limit (a grid of a few blocks leaves it at SIMT's).
            let mhz = self.clock_mhz(r.tensor_busy * filled);
            let wanted = self.simt_mhz / mhz;
            if (wanted - l2_clock).abs() < 0.01 || tries == 4 {
                break (r, mhz);
            }
            l2_clock = wanted;
        };
        let sm_time = r.cycles / (mhz * 1e6);
        // DRAM moves each operand once, and no more than the launch asks of the L2 (a kernel
        // that reads neither A nor B moves only what it writes).
        let dram = (shape.compulsory_bytes as f64).min(l2_bytes) / self.memory.dram_rate;
        let units = [
            (Bottleneck::Issue, r.issue_busy),
            (Bottleneck::L1, r.l1_busy),
            (Bottleneck::TensorCores, r.tensor_busy),
            (Bottleneck::L2, r.l2_busy),
        ];
        let (busiest, share) =
            units.iter().copied().fold((Bottleneck::Latency, 0.0), |a, b| if b.1 > a.1 { b } else { a });
        let mut bottleneck = if share >= BUSY { busiest } else { Bottleneck::Latency };
        let mut seconds = sm_time + self.launch_gap;
        if dram > seconds {
            (bottleneck, seconds) = (Bottleneck::Dram, dram);
        }
        if self.launch > seconds {
            (bottleneck, seconds) = (Bottleneck::Launch, self.launch);
        }
        p.seconds = seconds;
        p.bottleneck = bottleneck;
        p.floor = matches!(bottleneck, Bottleneck::L2 | Bottleneck::Dram);
        p.clock_mhz = mhz;
        r.seconds = started.elapsed().as_secs_f64();
        p.replay = Some(r);
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A launch whose every count is known: 264 blocks of FMA work on 132 SMs, two waves.
    fn fma_launch() -> Traffic {
        Traffic {
            blocks: 264,
            warp_instructions: 264 * 4_000_000,
            fp32_instructions: 264 * 3_000_000,
            ..Default::default()
        }
    }

    #[test]
    fn issue_bound_work_takes_its_instructions_over_the_issue_rate() {
        let p = H100.predict(
            &fma_launch(),
            LaunchFacts { blocks: 264, resident: 2, registers: 0, compulsory_bytes: 0 },
        );
        assert_eq!(p.bottleneck, Bottleneck::Issue);
        // Two blocks an SM, 4,000,000 / 3.38 cycles each, at 1980 MHz.
        assert!((p.seconds - 2.0 * 4.0e6 / 3.38 / 1.98e9).abs() < 1e-12, "{}", p.seconds);
        assert!((p.fp32_share - 0.75).abs() < 1e-12);
        assert_eq!(p.wave_fill, 1.0);
    }

    #[test]
    fn one_block_more_than_a_wave_costs_a_whole_wave() {
        let mut t = fma_launch();
        t.blocks = 265;
        t.warp_instructions = 265 * 4_000_000;
        let p = H100.predict(&t, LaunchFacts { blocks: 265, resident: 2, registers: 0, compulsory_bytes: 0 });
        assert!((p.seconds - 3.0 * 4.0e6 / 3.38 / 1.98e9).abs() < 1e-12, "three blocks on the busiest SM");
        assert!(p.wave_fill < 0.7);
    }

    #[test]
    fn loads_in_phases_wait_unless_other_blocks_cover_them() {
        // One block an SM, 1,000 phases of 100 cycles of issue (338 instructions) each: each waits.
        let t = Traffic {
            blocks: 132,
            warp_instructions: 132 * 338_000,
            load_phases: 132 * 1000,
            ..Default::default()
        };
        let alone =
            H100.predict(&t, LaunchFacts { blocks: 132, resident: 1, registers: 0, compulsory_bytes: 0 });
        assert_eq!(alone.bottleneck, Bottleneck::Latency);
        assert!((alone.seconds - 1000.0 * (100.0 + 284.0) / 1.98e9).abs() < 1e-11);
        // Eight blocks an SM, four at a time: two rounds, each one block's waits and work.
        let t8 = Traffic {
            blocks: 1056,
            warp_instructions: 1056 * 338_000,
            load_phases: 1056 * 1000,
            ..Default::default()
        };
        let four =
            H100.predict(&t8, LaunchFacts { blocks: 1056, resident: 4, registers: 0, compulsory_bytes: 0 });
        // Latency: 2 rounds × (284 + 100,000 cycles of waits and work) = 766,000 cycles; issue:
        // 8 blocks × 100,000 = 800,000.
        assert_eq!(four.bottleneck, Bottleneck::Issue, "four blocks side by side cover each other's waits");
        assert!((four.seconds - 8.0 * 100_000.0 / 1.98e9).abs() < 1e-11);
    }

    /// Serialised wgmma add a drain after each warpgroup's wgmma (four warps' count), and the
    /// drains, which are no tensor work, raise the clock from the tensor cores' toward SIMT's.
    #[test]
    fn serialised_wgmma_add_a_drain_each() {
        // A block's 2 warpgroups issue 1000 wgmma of 262,144 FLOPs each: 128,000 cycles of work.
        let t = Traffic {
            blocks: 132,
            warp_instructions: 132 * 8000,
            wgmma_instructions: 132 * 4 * 2 * 1000,
            wgmma_tf32_flops: 132 * 2 * 1000 * 262_144,
            ..Default::default()
        };
        let shape = LaunchFacts { blocks: 132, resident: 1, registers: 0, compulsory_bytes: 0 };
        let plain = H100.predict(&t, shape);
        assert!(plain.unchecked.is_empty(), "{:?}", plain.unchecked);
        let serial = H100.predict_serialized(&t, shape, true);
        assert_eq!(serial.bottleneck, Bottleneck::TensorCores);
        let cycles = |p: &Prediction| p.seconds * p.clock_mhz * 1e6;
        let drains = 2.0 * 1000.0 * WGMMA_DRAIN_ESTIMATE;
        assert!((cycles(&serial) - cycles(&plain) - drains).abs() < 1.0, "{plain:?} {serial:?}");
        // Half the tensor cores' time is drains: the clock halfway between the two.
        assert!((serial.clock_mhz - 1700.0).abs() < 1.0, "{}", serial.clock_mhz);
        assert!(serial.unchecked.iter().any(|u| u.contains("estimated 128 cycles a wgmma")));
    }

    #[test]
    fn tensor_work_lowers_the_clock_and_bytes_bound_what_moves_them() {
        let t = Traffic {
            blocks: 132,
            warp_instructions: 132 * 1000,
            wgmma_tf32_flops: 132 * 2048 * 1_000_000,
            ..Default::default()
        };
        let p = H100.predict(&t, LaunchFacts { blocks: 132, resident: 1, registers: 0, compulsory_bytes: 0 });
        assert_eq!(p.bottleneck, Bottleneck::TensorCores);
        assert!((p.clock_mhz - 1420.0).abs() < 1.0, "busy throughout: the tensor clock");
        assert!((p.seconds - 1.0e6 / 1.42e9).abs() < 1e-9);
        let d = Traffic { blocks: 132, warp_instructions: 132, ..Default::default() };
        let p = H100.predict(
            &d,
            LaunchFacts { blocks: 132, resident: 1, registers: 0, compulsory_bytes: 3_090_000_000 },
        );
        assert_eq!(p.bottleneck, Bottleneck::Dram);
        assert!((p.seconds - 1e-3).abs() < 1e-12);
        assert!(
            H200.predict(
                &d,
                LaunchFacts { blocks: 132, resident: 1, registers: 0, compulsory_bytes: 3_090_000_000 }
            )
            .seconds
                < 1e-3
        );
    }

    #[test]
    fn a_phase_that_computes_after_its_loads_waits_only_what_its_work_leaves() {
        // One block an SM, 1,000 phases of 100 cycles each: without overlap each waits 284;
        // with every phase computing, each waits 284 − 100.
        let plain = Traffic {
            blocks: 132,
            warp_instructions: 132 * 338_000,
            load_phases: 132 * 1000,
            ..Default::default()
        };
        let prefetch = Traffic { overlapped_phases: 132 * 1000, ..plain };
        let shape = LaunchFacts { blocks: 132, resident: 1, registers: 0, compulsory_bytes: 0 };
        let (a, b) = (H100.predict(&plain, shape), H100.predict(&prefetch, shape));
        assert!((a.seconds - 1000.0 * (284.0 + 100.0) / 1.98e9).abs() < 1e-11);
        assert!((b.seconds - (1000.0 * (284.0 - 100.0) + 100_000.0) / 1.98e9).abs() < 1e-11, "{}", b.seconds);
        // Work longer than the latency hides it all: the issue term sets the time.
        let long = Traffic { warp_instructions: 132 * 3_380_000, ..prefetch };
        assert_eq!(H100.predict(&long, shape).bottleneck, Bottleneck::Issue);
    }

    #[test]
    fn the_busiest_block_sets_the_time_where_blocks_differ() {
        // 132 blocks on 132 SMs, one of which does ten times the average's work.
        let t = Traffic {
            blocks: 132,
            warp_instructions: 132 * 338_000,
            most_block_instructions: 3_380_000,
            ..Default::default()
        };
        let p = H100.predict(&t, LaunchFacts { blocks: 132, resident: 1, registers: 0, compulsory_bytes: 0 });
        assert!((p.seconds - 1.0e6 / 1.98e9).abs() < 1e-11, "{}", p.seconds);
    }

    #[test]
    fn what_the_labs_never_did_is_named_not_hidden() {
        let lab = fma_launch();
        let p =
            H100.predict(&lab, LaunchFacts { blocks: 264, resident: 2, registers: 0, compulsory_bytes: 0 });
        assert!(p.unchecked.is_empty(), "{:?}", p.unchecked);
        let atomics = Traffic { atomic_requests: 264 * 100_000, ..fma_launch() };
        let p = H100
            .predict(&atomics, LaunchFacts { blocks: 264, resident: 2, registers: 0, compulsory_bytes: 0 });
        assert!(p.unchecked.iter().any(|u| u.contains("atomic")), "{:?}", p.unchecked);
        // Integer work alone: none of its instructions are FP32, memory or tensor-core ones.
        let scattered = Traffic { global_load_requests: 264, global_lines: 264 * 32, ..fma_launch() };
        let p = H100
            .predict(&scattered, LaunchFacts { blocks: 264, resident: 2, registers: 0, compulsory_bytes: 0 });
        assert!(p.unchecked.iter().any(|u| u.contains("32.0 lines")), "{:?}", p.unchecked);
        let checked = Traffic { global_load_requests: 264, global_lines: 264 * 17, ..fma_launch() };
        let p = H100
            .predict(&checked, LaunchFacts { blocks: 264, resident: 2, registers: 0, compulsory_bytes: 0 });
        assert!(p.unchecked.is_empty(), "{:?}", p.unchecked);
        let integer = Traffic { fp32_instructions: 0, ..fma_launch() };
        let p = H100
            .predict(&integer, LaunchFacts { blocks: 264, resident: 2, registers: 0, compulsory_bytes: 0 });
        assert!(p.other_share > OTHER_CHECKED_SIMT && p.unchecked.iter().any(|u| u.contains("integer")));
    }

    #[test]
    fn a_request_over_many_lines_takes_a_pass_a_line() {
        // 132 blocks, each 1,000 loads whose lanes fall in 32 lines (a warp down a column), against
        // the same loads coalesced into one line each.
        let column = Traffic {
            blocks: 132,
            warp_instructions: 132 * 2000,
            global_load_requests: 132 * 1000,
            global_lines: 132 * 32_000,
            ..Default::default()
        };
        let row = Traffic { global_lines: 132 * 1000, ..column };
        let shape = LaunchFacts { blocks: 132, resident: 1, registers: 0, compulsory_bytes: 0 };
        let (c, r) = (H100.predict(&column, shape), H100.predict(&row, shape));
        assert_eq!(c.bottleneck, Bottleneck::L1);
        // 1,000 requests over 0.93 a clock, and 31,000 further lines at one a clock.
        let cycles = 1000.0 / 0.93 + 31_000.0;
        assert!((c.seconds - cycles / 1.98e9).abs() < 1e-12, "{}", c.seconds);
        assert!(c.seconds > 25.0 * r.terms[2].1, "a line a pass: {} against {}", c.seconds, r.terms[2].1);
    }

    #[test]
    fn a_busy_l2_lengthens_the_wait_of_every_load() {
        // One block an SM, 1,000 phases of 100 cycles that each wait for a load.
        let quiet = Traffic {
            blocks: 132,
            warp_instructions: 132 * 338_000,
            load_phases: 132 * 1000,
            ..Default::default()
        };
        let shape = LaunchFacts { blocks: 132, resident: 1, registers: 0, compulsory_bytes: 0 };
        let p = H100.predict(&quiet, shape);
        assert_eq!(p.load_latency, H100.memory.l2_latency.idle(), "an idle L2: its idle latency");
        // The same with L2 traffic that takes half the idle time at the L2's bandwidth: the
        // latency lies halfway to the loaded one.
        let idle = 1000.0 * (284.0 + 100.0) / 1.98e9;
        let sectors = (0.5 * idle * 7.07e12 / 32.0) as u64;
        let busy = Traffic { l1_miss_sectors: sectors, ..quiet };
        let p = H100.predict(&busy, shape);
        assert!((p.load_latency - (284.0 + 0.5 * (435.0 - 284.0))).abs() < 0.1, "{}", p.load_latency);
        assert!((p.seconds - 1000.0 * (p.load_latency + 100.0) / 1.98e9).abs() < 1e-11, "{}", p.seconds);
    }

    #[test]
    fn an_empty_launch_costs_a_launch() {
        let p = H100.predict(
            &Traffic::default(),
            LaunchFacts { blocks: 1, resident: 1, registers: 0, compulsory_bytes: 0 },
        );
        assert_eq!(p.bottleneck, Bottleneck::Launch);
    }
}

//! The replay itself: blocks of one recorded cluster laid on an SM (each block of a cluster on
//! an SM of its own), their warps issued by the SM's schedulers in time order.
//!
//! Time runs in SM clocks, as a real number. At each step the warp that can issue soonest does:
//! a scheduler issues at most one instruction every `schedulers / issue` clocks; a warp issues
//! its instructions in the order it executed them, each once the registers it reads (and those
//! it writes) are ready and the unit it needs is free. A block that finishes makes room for the
//! next of the SM's blocks.

use std::collections::{HashMap, VecDeque};

use crate::profile::Sm;
use ptx_emulator::recording::trace::{
    CLUSTER_BARRIER, InstClass, Phase, Static, Trace, TraceEvent, WgmmaInputs, Where,
};

/// What the replay needs besides the trace.
#[derive(Clone, Copy, Debug)]
pub struct Setup {
    /// Clusters the busiest SM (or group of SMs, one a block of a cluster) runs, and how many at
    /// once.
    pub clusters: u64,
    pub resident: u32,
    /// SMs that work at once over the whole GPU, which share the L2.
    pub busy_sms: u32,
    /// A block's shared memory, for the L1 left as a cache.
    pub shared_bytes: u32,
    /// Bytes a clock the L2 gives all SMs together.
    pub l2_rate: f64,
    /// The cycles a load the L2 serves takes, at the load the launch puts on it.
    pub l2_latency: f64,
    /// The share of the L2's sectors that miss it and come from DRAM, and the cycles a load
    /// waits then.
    pub l2_miss: f64,
    pub dram_latency: f64,
    /// ptxas made each wgmma wait for the one before it.
    pub serialized_wgmma: bool,
    /// The L2's clock over the SMs' (1 at the SIMT clock; more where the tensor cores lower the
    /// SMs' clock and the L2 keeps its own): its bytes a clock and its latency in the SMs' clocks
    /// scale by it.
    pub l2_clock: f64,
    /// Keep the first cluster's warps' activity over its first this many clocks, for a picture
    /// (0: none).
    pub picture: f64,
}

/// What a warp did over a stretch of clocks, for the picture.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activity {
    /// It issued.
    Issue,
    /// Its next instruction was ready, and its scheduler issued another warp's.
    Ready,
    /// It waited for a load from global or local memory.
    Memory,
    /// For a shared load (or a shuffle).
    Shared,
    /// For an arithmetic result (or the tensor cores).
    Arithmetic,
    /// At a barrier.
    Barrier,
    /// For a copy or an mbarrier's phase.
    Copies,
}

/// A stretch of one warp's time: warp `warp` of block `block` of the first cluster.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Span {
    pub block: u32,
    pub warp: u32,
    pub from: f64,
    pub to: f64,
    pub what: Activity,
}

/// What the replay found.
#[derive(Clone, Debug, Default)]
pub struct ReplayOutcome {
    /// SM clocks for the busiest SM's clusters, all of them.
    pub cycles: f64,
    /// Clusters replayed (the rest extrapolated from the last of them at a steady state).
    pub replayed: u64,
    /// The busy clocks of each unit over the replayed part, for the bottleneck it names.
    pub issued: f64,
    pub l1_busy: f64,
    pub tensor_busy: f64,
    pub l2_busy: f64,
    /// Bytes the replayed part moved through the L2.
    pub l2_bytes: f64,
    /// The replayed part's clocks.
    pub replayed_cycles: f64,
    /// Clocks each of a warp's stall reasons cost (summed over warps, the time a warp's next
    /// instruction waited past its scheduler being free), for the picture and the bottleneck.
    pub waited: WaitClocks,
    /// Every warp's clocks from its launch to its last issue, by its state at each clock (the
    /// states Nsight Compute samples, as the book's appendix "The time model" maps them).
    pub states: WarpStates,
    /// Where a replay could not go on (a wait the trace never satisfies).
    pub stuck: Option<String>,
    /// The cycles a load waited for the L2, and for DRAM where it missed, in this replay.
    pub l2_latency: f64,
    pub dram_latency: f64,
    /// The first cluster's warps' activity, where the setup asked for a picture.
    pub spans: Vec<Span>,
}

/// Clocks warps waited, by what they waited for.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct WaitClocks {
    pub memory: f64,
    pub shared: f64,
    pub arithmetic: f64,
    pub barrier: f64,
    pub asynchronous: f64,
}

/// A warp's clocks by its state: issuing (one clock an instruction), held back by its scheduler
/// after an issue (the rest of the gap between two issues, [`Sm::issue`] being under one a
/// clock), ready while its scheduler issues another warp's instruction, or waiting for one of
/// the things a [`WaitClocks`] names. Summed over the replayed warps; each clock of each warp is
/// in one state.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct WarpStates {
    pub issued: f64,
    pub dispatch: f64,
    pub ready: f64,
    pub memory: f64,
    pub shared: f64,
    pub arithmetic: f64,
    pub barrier: f64,
    /// Waiting on an mbarrier's phase or a bulk copy's group.
    pub phases: f64,
    /// Waiting on a wgmma group (`wgmma.wait_group`).
    pub tensor: f64,
}

impl WarpStates {
    /// Every state's clocks, in the order of the fields.
    pub fn clocks(&self) -> [f64; 9] {
        [
            self.issued,
            self.dispatch,
            self.ready,
            self.memory,
            self.shared,
            self.arithmetic,
            self.barrier,
            self.phases,
            self.tensor,
        ]
    }

    /// All of the warps' clocks.
    pub fn total(&self) -> f64 {
        self.clocks().iter().sum()
    }

    /// `other`'s clocks added to these.
    pub fn add(&mut self, other: &WarpStates) {
        self.issued += other.issued;
        self.dispatch += other.dispatch;
        self.ready += other.ready;
        self.memory += other.memory;
        self.shared += other.shared;
        self.arithmetic += other.arithmetic;
        self.barrier += other.barrier;
        self.phases += other.phases;
        self.tensor += other.tensor;
    }

    fn wait(&mut self, why: Cause, clocks: f64) {
        match why {
            Cause::Memory => self.memory += clocks,
            Cause::Shared => self.shared += clocks,
            Cause::Arithmetic => self.arithmetic += clocks,
            Cause::Barrier => self.barrier += clocks,
            Cause::Async => self.phases += clocks,
            Cause::Tensor => self.tensor += clocks,
        }
    }
}

/// The most clusters the replay runs: beyond them, a steady state is extrapolated.
const MOST_ROUNDS: u64 = 4;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Blocked {
    No,
    Barrier,
    Phase,
    Done,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cause {
    Memory,
    Shared,
    Arithmetic,
    Barrier,
    Async,
    /// A wgmma group's wait (`wgmma.wait_group`).
    Tensor,
}

impl W {
    /// What the warp's next instruction waited for until `ready`: the gate, or the register
    /// that was ready last.
    fn cause_at(&self, ready: f64) -> Cause {
        if (self.gate - ready).abs() < 1e-9 {
            return self.gate_cause;
        }
        self.ready
            .iter()
            .zip(&self.cause)
            .find(|(r, _)| (**r - ready).abs() < 1e-9)
            .map_or(self.gate_cause, |(_, c)| *c)
    }
}

struct W {
    stream: usize,
    pos: usize,
    instance: u32,
    rank: u32,
    sched: usize,
    sm: usize,
    ready: Vec<f64>,
    cause: Vec<Cause>,
    /// Nothing of the warp issues before this (a barrier's release, a group's wait).
    gate: f64,
    gate_cause: Cause,
    /// What the warp's wait on a phase is to it: an mbarrier's, or its cluster's barrier.
    phase_cause: Cause,
    blocked: Blocked,
    /// When its last issue ended (for the picture).
    issued_until: f64,
    /// When its next instruction's registers and gate allow it to issue, once worked out (its
    /// own issue, a release or a gate forgets it).
    head: Option<f64>,
    /// The arrival index at each named barrier.
    bar_seen: [u32; 16],
    last_shared: f64,
    last_store: f64,
    cp_open: f64,
    cp_groups: VecDeque<f64>,
    wg_open: f64,
    wg_groups: VecDeque<f64>,
    wg_last: f64,
    bulk_open: f64,
    bulk_groups: VecDeque<f64>,
}

#[derive(Default)]
struct Unit {
    free: f64,
    busy: f64,
}

impl Unit {
    /// Occupies the unit for `cost` clocks from `t` at the earliest; returns when it starts.
    fn take(&mut self, t: f64, cost: f64) -> f64 {
        let start = t.max(self.free);
        self.free = start + cost;
        self.busy += cost;
        start
    }
}

struct SmState {
    sched_free: Vec<f64>,
    last_warp: Vec<Option<usize>>,
    l1: Unit,
    l2: Unit,
    tensor: Vec<Unit>,
    mma: Vec<Unit>,
    /// The L1's hit rate for local memory, from the footprint of the resident blocks.
    local_hit: f64,
}

#[derive(Default)]
struct PhaseState {
    arrived: u32,
    at: f64,
    waiters: Vec<usize>,
}

#[derive(Default)]
struct BarState {
    arrived: u32,
    at: f64,
    warps: Vec<usize>,
}

/// Replays `trace` (whose instructions `statics` describes) on `sm` as `setup` lays it out.
pub fn replay(trace: &Trace, statics: &[Static], sm: &Sm, setup: &Setup) -> ReplayOutcome {
    let blocks = trace.blocks.max(1) as usize;
    let nregs = statics
        .iter()
        .flat_map(|s| s.reads.iter().chain(&s.writes))
        .map(|&r| r as usize + 1)
        .max()
        .unwrap_or(1);
    // Each phase's contributors in the trace: arrivals and copies' landings.
    let mut expected: HashMap<Phase, u32> = HashMap::new();
    for (stream, links) in trace.streams.iter().zip(&trace.links) {
        for e in stream {
            let class = statics[e.pc as usize].class;
            if matches!(class, InstClass::MbarArrive | InstClass::TmaLoad | InstClass::ClusterArrive) {
                for p in &links[e.link as usize..(e.link + e.links_len) as usize] {
                    *expected.entry(*p).or_default() += 1;
                }
            }
        }
    }
    let rounds_cap = MOST_ROUNDS * u64::from(setup.resident.max(1));
    let to_replay = setup.clusters.clamp(1, rounds_cap.max(1));
    let share = setup.l2_rate / f64::from(setup.busy_sms.max(1));
    let l2_clock = setup.l2_clock.max(1.0);
    let l2_rate = share.min(sm.l2_rate_one_sm) * l2_clock;
    let setup = &Setup {
        l2_latency: setup.l2_latency / l2_clock,
        dram_latency: setup.dram_latency / l2_clock,
        ..*setup
    };
    // The blocks an SM holds at once: its resident blocks, or fewer where the grid has fewer.
    let at_once = u64::from(setup.resident.max(1)).min(setup.clusters.max(1)) as u32;
    let footprint =
        f64::from(trace.local_bytes) * 32.0 * f64::from(trace.warps_per_block) * f64::from(at_once);
    let cache = f64::from(sm.l1_cache(at_once, setup.shared_bytes));
    let local_hit = if footprint <= cache { 1.0 } else { cache / footprint };
    let mut sms: Vec<SmState> = (0..blocks)
        .map(|_| SmState {
            sched_free: vec![0.0; sm.schedulers],
            last_warp: vec![None; sm.schedulers],
            l1: Unit::default(),
            l2: Unit::default(),
            tensor: (0..sm.schedulers).map(|_| Unit::default()).collect(),
            mma: (0..sm.schedulers).map(|_| Unit::default()).collect(),
            local_hit,
        })
        .collect();
    let issue_gap = sm.schedulers as f64 / sm.issue;
    let mut warps: Vec<W> = Vec::new();
    let mut live: Vec<usize> = Vec::new();
    let mut phases: HashMap<(u32, Phase), PhaseState> = HashMap::new();
    let mut bars: HashMap<(u32, u32, u32, u32), BarState> = HashMap::new();
    let mut finished: Vec<f64> = Vec::new();
    let mut left_in: HashMap<u32, usize> = HashMap::new();
    let mut launched = 0u64;
    let mut out = ReplayOutcome::default();

    let launch = |instance: u32,
                  at: f64,
                  warps: &mut Vec<W>,
                  live: &mut Vec<usize>,
                  left: &mut HashMap<u32, usize>| {
        let mut n = 0;
        for (s, stream) in trace.streams.iter().enumerate() {
            if stream.is_empty() {
                continue;
            }
            let rank = s as u32 / trace.warps_per_block.max(1);
            let index = s as u32 % trace.warps_per_block.max(1);
            live.push(warps.len());
            warps.push(W {
                stream: s,
                pos: 0,
                instance,
                rank,
                sched: (instance * trace.warps_per_block.max(1) + index) as usize % sm.schedulers,
                sm: rank as usize,
                ready: vec![0.0; nregs],
                cause: vec![Cause::Arithmetic; nregs],
                gate: at,
                gate_cause: Cause::Barrier,
                phase_cause: Cause::Async,
                issued_until: at,
                head: None,
                blocked: Blocked::No,
                bar_seen: [0; 16],
                last_shared: at,
                last_store: at,
                cp_open: at,
                cp_groups: VecDeque::new(),
                wg_open: at,
                wg_groups: VecDeque::new(),
                wg_last: at,
                bulk_open: at,
                bulk_groups: VecDeque::new(),
            });
            n += 1;
        }
        left.insert(instance, n);
    };
    while launched < to_replay.min(u64::from(setup.resident.max(1))) {
        launch(launched as u32, 0.0, &mut warps, &mut live, &mut left_in);
        launched += 1;
    }

    loop {
        // The warp that can issue soonest, scheduler by scheduler.
        let mut best: Option<(f64, usize, f64, usize)> = None;
        for &wi in &live {
            let w = &mut warps[wi];
            // A warp released from a wait that was its stream's last instruction has no more.
            if w.blocked != Blocked::No || w.pos >= trace.streams[w.stream].len() {
                continue;
            }
            let ready = match w.head {
                Some(ready) => ready,
                None => {
                    let e = trace.streams[w.stream][w.pos];
                    let st = &statics[e.pc as usize];
                    let mut ready = w.gate;
                    for &r in &st.reads {
                        ready = ready.max(w.ready[r as usize]);
                    }
                    // A register a load or a copy still owes may not be written over; a pipe's
                    // results arrive in order, so arithmetic need not wait for the one before.
                    for &r in &st.writes {
                        if w.cause[r as usize] != Cause::Arithmetic {
                            ready = ready.max(w.ready[r as usize]);
                        }
                    }
                    w.head = Some(ready);
                    ready
                }
            };
            let s = &sms[w.sm];
            let t = ready.max(s.sched_free[w.sched]);
            let greedy = s.last_warp[w.sched] == Some(wi);
            let better = match best {
                None => true,
                Some((bt, _, _, bsched)) => t < bt || (t == bt && greedy && bsched == w.sched),
            };
            if better {
                best = Some((t, wi, ready, w.sched));
            }
        }
        let Some((t, wi, ready, _)) = best else {
            if live.iter().all(|&w| warps[w].blocked == Blocked::Done) {
                break;
            }
            let w =
                live.iter().map(|&w| &warps[w]).find(|w| w.blocked != Blocked::Done).expect("a waiting warp");
            // A waiting warp has moved past the instruction it waits at.
            let stream = &trace.streams[w.stream];
            let at = if w.blocked == Blocked::No { w.pos } else { w.pos.saturating_sub(1) };
            let e = stream[at.min(stream.len().saturating_sub(1))];
            out.stuck = Some(format!(
                "warp {} of block {} waits at instruction {} and nothing releases it",
                w.stream % trace.warps_per_block.max(1) as usize,
                w.rank,
                e.pc
            ));
            break;
        };
        // What it waited for, past its scheduler being free.
        {
            let w = &warps[wi];
            let free = sms[w.sm].sched_free[w.sched];
            if ready > free {
                let e = trace.streams[w.stream][w.pos];
                let st = &statics[e.pc as usize];
                let mut why = w.gate_cause;
                let mut at = w.gate;
                let owed = st.writes.iter().filter(|&&r| w.cause[r as usize] != Cause::Arithmetic);
                for &r in st.reads.iter().chain(owed) {
                    if w.ready[r as usize] > at {
                        at = w.ready[r as usize];
                        why = w.cause[r as usize];
                    }
                }
                let d = ready - free;
                match why {
                    Cause::Memory => out.waited.memory += d,
                    Cause::Shared => out.waited.shared += d,
                    Cause::Arithmetic => out.waited.arithmetic += d,
                    Cause::Barrier => out.waited.barrier += d,
                    Cause::Async => out.waited.asynchronous += d,
                    Cause::Tensor => out.waited.arithmetic += d,
                }
            }
        }
        // Its clocks since its last issue: waiting until `ready`, then ready until `t`, then
        // issuing.
        {
            let w = &warps[wi];
            let waited_until = ready.max(w.issued_until);
            // A warp that issues as soon as its last issue ends waited for nothing: the cause,
            // which searches its registers, is found only for a wait.
            if waited_until > w.issued_until {
                out.states.wait(w.cause_at(ready), waited_until - w.issued_until);
            }
            out.states.ready += t - waited_until;
            // One clock selected; the rest of the scheduler's gap between two issues (its
            // sustained rate below one a clock) held back.
            out.states.issued += 1.0;
            out.states.dispatch += issue_gap - 1.0;
        }
        if setup.picture > 0.0 && warps[wi].instance == 0 && t < setup.picture {
            picture(&mut out.spans, &warps[wi], trace, (ready, t, t + issue_gap));
        }
        warps[wi].issued_until = t + issue_gap;
        warps[wi].head = None;
        let (smi, sched) = (warps[wi].sm, warps[wi].sched);
        sms[smi].sched_free[sched] = t + issue_gap;
        sms[smi].last_warp[sched] = Some(wi);
        out.issued += 1.0;
        let e = trace.streams[warps[wi].stream][warps[wi].pos];
        let links = &trace.links[warps[wi].stream][e.link as usize..(e.link + e.links_len) as usize];
        issue(
            sm,
            setup,
            l2_rate,
            &mut sms,
            &mut warps,
            wi,
            t,
            e,
            links,
            statics,
            &mut phases,
            &mut bars,
            &expected,
            trace,
            &mut out,
        );
        // Loads the machine code joined to this one take no issue of their own.
        {
            let w = &mut warps[wi];
            let stream = &trace.streams[w.stream];
            w.pos += 1;
            while w.pos < stream.len() && statics[stream[w.pos].pc as usize].class == InstClass::Joined {
                for &r in &statics[stream[w.pos].pc as usize].writes {
                    w.ready[r as usize] = w.last_shared;
                    w.cause[r as usize] = Cause::Shared;
                }
                w.pos += 1;
            }
            if w.pos >= stream.len() && w.blocked == Blocked::No {
                w.blocked = Blocked::Done;
            }
        }
        if warps[wi].blocked == Blocked::Done {
            let inst = warps[wi].instance;
            let left = left_in.get_mut(&inst).expect("a launched cluster");
            *left -= 1;
            if *left == 0 {
                // The cluster's last warp has left: its end is its warps' last issue, and the
                // next cluster takes its place.
                let end = live
                    .iter()
                    .filter(|&&w| warps[w].instance == inst)
                    .map(|&w| warps[w].last_store.max(sms[warps[w].sm].sched_free[warps[w].sched]))
                    .fold(t, f64::max);
                finished.push(end);
                live.retain(|&w| warps[w].instance != inst);
                if launched < to_replay {
                    launch(launched as u32, end, &mut warps, &mut live, &mut left_in);
                    launched += 1;
                }
            }
        }
    }
    finished.sort_by(f64::total_cmp);
    let replayed_end = finished.last().copied().unwrap_or(0.0);
    out.replayed = launched;
    out.replayed_cycles = replayed_end;
    out.cycles = replayed_end;
    let r = u64::from(setup.resident.max(1));
    if setup.clusters > launched && finished.len() as u64 > r {
        // A steady state: each further cluster costs what the last `r` did, one in r.
        let n = finished.len();
        let last = finished[n - 1] - finished[n - 1 - r as usize];
        let per = last / r as f64;
        out.cycles += per * (setup.clusters - launched) as f64;
    } else if setup.clusters > launched {
        out.cycles *= setup.clusters as f64 / launched.max(1) as f64;
    }
    for s in &sms {
        out.l1_busy = out.l1_busy.max(s.l1.busy);
        out.l2_busy = out.l2_busy.max(s.l2.busy);
        out.tensor_busy =
            out.tensor_busy.max(s.tensor.iter().chain(&s.mma).map(|u| u.busy).fold(0.0, f64::max));
    }
    out.issued /= blocks as f64;
    out
}

/// The stretches warp `w` spent between its last issue and this one (waiting until `ready`, then
/// ready until `t`), and this issue until `end`, added to `spans`, each joined to the warp's last
/// stretch where it does the same.
fn picture(spans: &mut Vec<Span>, w: &W, trace: &Trace, (ready, t, end): (f64, f64, f64)) {
    let per = trace.warps_per_block.max(1);
    let (block, warp) = (w.stream as u32 / per, w.stream as u32 % per);
    let waited = match w.cause_at(ready) {
        Cause::Memory => Activity::Memory,
        Cause::Shared => Activity::Shared,
        Cause::Arithmetic => Activity::Arithmetic,
        Cause::Barrier => Activity::Barrier,
        Cause::Async => Activity::Copies,
        Cause::Tensor => Activity::Arithmetic,
    };
    let from = w.issued_until;
    let stretches =
        [(from, ready.max(from), waited), (ready.max(from), t, Activity::Ready), (t, end, Activity::Issue)];
    for (a, b, what) in stretches {
        if b - a < 1e-9 {
            continue;
        }
        match spans.iter_mut().rev().find(|s| s.block == block && s.warp == warp) {
            Some(last) if last.what == what && (last.to - a).abs() < 0.5 => last.to = b,
            _ => spans.push(Span { block, warp, from: a, to: b, what }),
        }
    }
}

/// The latency of a global read of `sectors` sectors: the L2's, or DRAM's where one of its
/// sectors misses the L2. Which requests miss is drawn, the same on every replay, from the warp,
/// its place in its stream and its block's instance, so that a warp waiting on several requests
/// waits for the slowest as on the GPU, not for an average.
fn read_latency(setup: &Setup, w: &W, sectors: u32) -> f64 {
    if setup.l2_miss <= 0.0 {
        return setup.l2_latency;
    }
    let any = 1.0 - (1.0 - setup.l2_miss.min(1.0)).powi(sectors.max(1) as i32);
    // SplitMix64 of the request's place: a uniform draw in [0, 1).
    let mut z = (w.stream as u64) << 40 ^ (w.pos as u64) << 8 ^ u64::from(w.instance) ^ 0x9E37_79B9_7F4A_7C15;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    let u = (z >> 11) as f64 / (1u64 << 53) as f64;
    if u < any { setup.dram_latency } else { setup.l2_latency }
}

/// The latency of a load that the L2 serves, counted on the SM's share of its bandwidth.
fn from_l2(
    s: &mut SmState,
    l2_rate: f64,
    start: f64,
    bytes: f64,
    latency: f64,
    out: &mut ReplayOutcome,
) -> f64 {
    out.l2_bytes += bytes;
    let begin = s.l2.take(start, bytes / l2_rate);
    (start + latency).max(begin + bytes / l2_rate)
}

#[allow(clippy::too_many_arguments)]
fn issue(
    sm: &Sm,
    setup: &Setup,
    l2_rate: f64,
    sms: &mut [SmState],
    warps: &mut [W],
    wi: usize,
    t: f64,
    e: TraceEvent,
    links: &[Phase],
    statics: &[Static],
    phases: &mut HashMap<(u32, Phase), PhaseState>,
    bars: &mut HashMap<(u32, u32, u32, u32), BarState>,
    expected: &HashMap<Phase, u32>,
    trace: &Trace,
    out: &mut ReplayOutcome,
) {
    let st = &statics[e.pc as usize];
    if e.space == Where::Off {
        // Predicated off in every lane: an issue slot, nothing else.
        return;
    }
    let (smi, sched, instance) = (warps[wi].sm, warps[wi].sched, warps[wi].instance);
    let set = |w: &mut W, at: f64, why: Cause| {
        for &r in &st.writes {
            w.ready[r as usize] = at;
            w.cause[r as usize] = why;
        }
    };
    // A global or local access on the L1's data path: its start.
    let request = |s: &mut SmState, lines: u32| {
        let cost = 1.0 / sm.l1_request_rate + f64::from(lines.saturating_sub(1)) / sm.l1_line_rate;
        (s.l1.take(t, cost), cost)
    };
    let class = match (st.class, e.space) {
        // A generic access resolved at run time.
        (InstClass::GlobalLoad, Where::Shared) => InstClass::SharedLoad,
        (InstClass::GlobalStore, Where::Shared) => InstClass::SharedStore,
        (InstClass::GlobalLoad, Where::Local) => InstClass::LocalLoad,
        (InstClass::GlobalStore, Where::Local) => InstClass::LocalStore,
        (c, _) => c,
    };
    match class {
        InstClass::Fp32 => set(&mut warps[wi], t + sm.fp32, Cause::Arithmetic),
        InstClass::Alu
        | InstClass::Control
        | InstClass::Branch
        | InstClass::Joined
        | InstClass::WgmmaFence => set(&mut warps[wi], t + sm.alu, Cause::Arithmetic),
        InstClass::Slow => set(&mut warps[wi], t + sm.slow, Cause::Arithmetic),
        InstClass::Param => set(&mut warps[wi], t + sm.param, Cause::Arithmetic),
        InstClass::Exchange => set(&mut warps[wi], t + sm.exchange, Cause::Shared),
        InstClass::SharedLoad | InstClass::Ldmatrix => {
            let cost = f64::from(e.a.max(1)) / sm.l1_wavefront_rate;
            let start = sms[smi].l1.take(t, cost);
            let done = start + cost - 1.0 / sm.l1_wavefront_rate + sm.shared;
            warps[wi].last_shared = done;
            set(&mut warps[wi], done, Cause::Shared);
        }
        InstClass::SharedStore => {
            let cost = f64::from(e.a.max(1)) / sm.l1_wavefront_rate;
            let start = sms[smi].l1.take(t, cost);
            let w = &mut warps[wi];
            w.last_store = w.last_store.max(start + cost);
        }
        InstClass::GlobalLoad | InstClass::Atomic => {
            let (start, cost) = request(&mut sms[smi], e.a.max(1));
            let done = if e.b == 0 && class == InstClass::GlobalLoad {
                start + cost + sm.l1_hit
            } else {
                let latency = read_latency(setup, &warps[wi], e.b.max(1));
                from_l2(&mut sms[smi], l2_rate, start + cost, 32.0 * f64::from(e.b.max(1)), latency, out)
            };
            set(&mut warps[wi], done, Cause::Memory);
        }
        InstClass::GlobalStore => {
            let (start, cost) = request(&mut sms[smi], e.a.max(1));
            let bytes = 32.0 * f64::from(e.b);
            out.l2_bytes += bytes;
            sms[smi].l2.take(start, bytes / l2_rate);
            let w = &mut warps[wi];
            w.last_store = w.last_store.max(start + cost);
        }
        InstClass::LocalLoad | InstClass::LocalStore => {
            let lines = e.a.max(1);
            let (start, cost) = request(&mut sms[smi], lines);
            let hit = sms[smi].local_hit;
            let bytes = 128.0 * f64::from(lines) * (1.0 - hit);
            if class == InstClass::LocalLoad {
                let l2 = if bytes > 0.0 {
                    from_l2(&mut sms[smi], l2_rate, start + cost, bytes, setup.l2_latency, out)
                } else {
                    0.0
                };
                let done = hit * (start + cost + sm.local_l1) + (1.0 - hit) * l2;
                set(&mut warps[wi], done, Cause::Memory);
            } else {
                out.l2_bytes += bytes;
                sms[smi].l2.take(start, bytes / l2_rate);
                let w = &mut warps[wi];
                w.last_store = w.last_store.max(start + cost);
            }
        }
        InstClass::MmaSync => {
            let cost = 2048.0 / (sm.mma_sync_rate / sm.schedulers as f64);
            let start = sms[smi].mma[sched].take(t, cost);
            set(&mut warps[wi], start + sm.mma_sync_latency, Cause::Arithmetic);
            // Issue is in order: the warp's next instruction waits until its scheduler's tensor
            // pipe has taken this one.
            gate(&mut warps[wi], start, Cause::Arithmetic);
        }
        InstClass::CpAsync => {
            let (start, cost) = request(&mut sms[smi], e.a.max(1));
            let latency = read_latency(setup, &warps[wi], e.b.max(1));
            let land =
                from_l2(&mut sms[smi], l2_rate, start + cost, 32.0 * f64::from(e.b.max(1)), latency, out);
            let w = &mut warps[wi];
            w.cp_open = w.cp_open.max(land);
        }
        InstClass::CpCommit => {
            let w = &mut warps[wi];
            let open = std::mem::replace(&mut w.cp_open, t);
            w.cp_groups.push_back(open);
        }
        InstClass::CpWait { pending, all } => {
            let w = &mut warps[wi];
            let pending = if all { 0 } else { pending };
            if all {
                let open = std::mem::replace(&mut w.cp_open, t);
                w.cp_groups.push_back(open);
            }
            let mut until = t;
            while w.cp_groups.len() > pending as usize {
                until = until.max(w.cp_groups.pop_front().expect("a group"));
            }
            gate(w, until, Cause::Memory);
        }
        InstClass::BulkCommit => {
            let w = &mut warps[wi];
            let open = std::mem::replace(&mut w.bulk_open, t);
            w.bulk_groups.push_back(open);
        }
        InstClass::BulkWait { pending } => {
            let w = &mut warps[wi];
            let mut until = t;
            while w.bulk_groups.len() > pending as usize {
                until = until.max(w.bulk_groups.pop_front().expect("a group"));
            }
            gate(w, until, Cause::Async);
        }
        InstClass::TmaStore => {
            let bytes = f64::from(e.a);
            let done = from_l2(&mut sms[smi], l2_rate, t, bytes, sm.tma / setup.l2_clock.max(1.0), out);
            let w = &mut warps[wi];
            w.bulk_open = w.bulk_open.max(done);
        }
        InstClass::TmaLoad => {
            // The copy engine reads the box once (a multicast lands it in every block named).
            let bytes = if e.b > 0 { 32.0 * f64::from(e.b) } else { f64::from(e.a) };
            let land = from_l2(&mut sms[smi], l2_rate, t, bytes, sm.tma / setup.l2_clock.max(1.0), out);
            for p in links {
                contribute(phases, expected, warps, instance, *p, land, sm.mbarrier);
            }
        }
        InstClass::MbarArrive | InstClass::ClusterArrive => {
            let at = t.max(warps[wi].last_store);
            for p in links {
                contribute(phases, expected, warps, instance, *p, at, sm.mbarrier);
            }
        }
        InstClass::MbarWait | InstClass::ClusterWait => {
            // A cluster's barrier is a barrier to the warp; an mbarrier's phase, a wait for a
            // result its phase check owes.
            let why = if class == InstClass::ClusterWait { Cause::Barrier } else { Cause::Async };
            warps[wi].phase_cause = why;
            if let Some(p) = links.first() {
                let done = expected.get(p).copied().unwrap_or(0);
                let state = phases.entry((instance, *p)).or_default();
                if state.arrived >= done {
                    let at = state.at + sm.mbarrier;
                    gate(&mut warps[wi], at.max(t), why);
                    set(&mut warps[wi], at.max(t), why);
                } else {
                    state.waiters.push(wi);
                    warps[wi].blocked = Blocked::Phase;
                }
            }
        }
        InstClass::Barrier => {
            let w = &mut warps[wi];
            let id = e.a.min(15);
            let k = w.bar_seen[id as usize];
            w.bar_seen[id as usize] += 1;
            let want = if e.b == 0 { trace.warps_per_block } else { e.b.div_ceil(32) };
            let at = t.max(w.last_store);
            w.blocked = Blocked::Barrier;
            let key = (instance, w.rank, id, k);
            let bar = bars.entry(key).or_default();
            bar.arrived += 1;
            bar.at = bar.at.max(at);
            bar.warps.push(wi);
            if bar.arrived >= want {
                let bar = bars.remove(&key).expect("the barrier");
                let release = bar.at + sm.barrier + sm.barrier_per_warp * f64::from(want);
                for w in bar.warps {
                    let w = &mut warps[w];
                    w.blocked = Blocked::No;
                    gate(w, release, Cause::Barrier);
                    for r in &st.writes {
                        w.ready[*r as usize] = release;
                    }
                }
            }
        }
        InstClass::Wgmma { flops, kind } => {
            let rate = match kind {
                WgmmaInputs::Tf32 => sm.wgmma_tf32_rate,
                WgmmaInputs::Bits16 => sm.wgmma_16bit_rate,
                WgmmaInputs::Int8 => sm.wgmma_int8_rate,
            };
            // Each warp of the warpgroup works a quarter of the product on its scheduler's
            // tensor core.
            let cost = flops as f64 / rate;
            let w = &warps[wi];
            let from = if setup.serialized_wgmma { t.max(w.wg_last) } else { t };
            let start = sms[smi].tensor[sched].take(from, cost);
            let done = start + cost + sm.wgmma_latency;
            let w = &mut warps[wi];
            w.wg_open = w.wg_open.max(done);
            w.wg_last = done;
        }
        InstClass::WgmmaCommit => {
            let w = &mut warps[wi];
            let open = std::mem::replace(&mut w.wg_open, t);
            w.wg_groups.push_back(open);
        }
        InstClass::WgmmaWait { pending } => {
            let w = &mut warps[wi];
            let mut until = t;
            while w.wg_groups.len() > pending as usize {
                until = until.max(w.wg_groups.pop_front().expect("a group"));
            }
            gate(w, until, Cause::Tensor);
        }
    }
}

fn gate(w: &mut W, until: f64, why: Cause) {
    w.head = None;
    if until > w.gate {
        w.gate = until;
        w.gate_cause = why;
    }
}

/// An arrival on, or a copy landing on, phase `p` of cluster `instance` at `at`: where it is
/// the phase's last, its waiters go on.
fn contribute(
    phases: &mut HashMap<(u32, Phase), PhaseState>,
    expected: &HashMap<Phase, u32>,
    warps: &mut [W],
    instance: u32,
    p: Phase,
    at: f64,
    latency: f64,
) {
    let want = expected.get(&p).copied().unwrap_or(0);
    let state = phases.entry((instance, p)).or_default();
    state.arrived += 1;
    state.at = state.at.max(at);
    if state.arrived >= want {
        let release = state.at + latency;
        for wi in std::mem::take(&mut state.waiters) {
            let w = &mut warps[wi];
            w.blocked = Blocked::No;
            let why = w.phase_cause;
            gate(w, release, why);
        }
    }
    let _ = CLUSTER_BARRIER;
}

//! What a running cluster of blocks holds: each block's shared memory, barriers and race shadow,
//! each warp's registers and program counters, and the helpers every part of the machine uses to
//! name a thread, a `.cu` line or a byte of shared memory in a fault's sentence. A launch without
//! clusters runs each block as a cluster of one.

use std::sync::atomic::AtomicBool;

use crate::inst::{DecodedKernel, Inst};
use crate::memory::Global;
use crate::sanitize::Shadow;
use crate::traffic::Traffic;
use crate::{Fault, FaultKind};

pub use super::lanes::Lanes;
use super::lanes::SectorHasher;
use super::shadows::{Accesses, Arrived, AsyncShadow, Clobber, Fragment, Freed, Multicast, Passed};

/// How the program counters move after an instruction.
pub enum Flow {
    Next,
    /// These lanes jump to the target; the rest go on.
    Jump(u32, usize),
    Exit(u32),
    /// These lanes wait at a barrier, which moves them on when it lets them through.
    Wait(u32),
    /// These lanes stay at the instruction and run it again in the next round (a wait that
    /// found its barrier not yet complete).
    Retry(u32),
}

/// One launch: the kernel, its shape and its parameter bytes.
pub struct Launch<'k> {
    pub kernel: &'k DecodedKernel,
    /// The SMs the GPU deals the grid's blocks to, in turn.
    pub sms: u32,
    pub grid: (u32, u32, u32),
    pub block: (u32, u32, u32),
    /// Blocks per cluster in x, y and z ((1, 1, 1): no clusters).
    pub cluster: (u32, u32, u32),
    pub dynamic_shared: usize,
    pub params: Vec<u8>,
    pub sanitize: bool,
    /// Host threads that run clusters.
    pub workers: usize,
    /// A picture of one warp's access asked for (see [`crate::recording::warp_access`]).
    pub watch: Option<&'k crate::recording::warp_access::PictureWatch>,
    /// The block whose timeline to record, and where it goes.
    pub timeline: Option<crate::recording::timeline::Ask>,
    /// With the sanitizer on and workspaces watched: the watch over them.
    pub watching: Option<super::global_watch::Watching<'k>>,
    /// Where the replay asks for one: the busiest cluster's recording ([`crate::recording::trace`]).
    pub record: Option<std::sync::Arc<std::sync::Mutex<Option<crate::recording::trace::Trace>>>>,
    /// Where the replay asks for one: the sectors the first clusters read ([`Footprints`]).
    pub footprints: Option<std::sync::Arc<Footprints>>,
}

/// The global sectors read by the clusters `wanted` names (by index in launch order), for the
/// time model's estimate of the L2's misses ([`crate::recording::Footprint`]).
#[derive(Debug, Default)]
pub struct Footprints {
    pub wanted: Vec<u64>,
    pub got: std::sync::Mutex<Vec<(u64, Vec<u64>)>>,
}

impl Launch<'_> {
    /// Blocks in one cluster.
    pub fn cluster_size(&self) -> usize {
        (self.cluster.0 * self.cluster.1 * self.cluster.2) as usize
    }

    /// The block of the grid that is block `rank` of cluster `c` (clusters counted x first).
    pub fn ctaid(&self, c: u64, rank: usize) -> [u32; 3] {
        let (gx, gy, _) = self.grid;
        let (cx, cy, cz) = self.cluster;
        let per = [gx / cx, gy / cy];
        let cid = [
            (c % u64::from(per[0])) as u32,
            ((c / u64::from(per[0])) % u64::from(per[1])) as u32,
            (c / (u64::from(per[0]) * u64::from(per[1]))) as u32,
        ];
        let r = rank as u32;
        [cid[0] * cx + r % cx, cid[1] * cy + (r / cx) % cy, cid[2] * cz + r / (cx * cy)]
    }
}

/// Bits of a shared::cluster address above a block's own shared memory: the block's rank + 1
/// (0: the running block's own, as an address of `.shared::cta` is).
pub const RANK_SHIFT: u32 = 24;

/// A cp.async copy waiting for its group to complete.
#[derive(Clone, Copy, Debug)]
pub struct PendingCopy {
    pub lane: u8,
    pub dst: usize,
    pub src: u64,
    pub size: u8,
    pub src_size: u8,
    pub inst: u32,
}

/// One warp's state.
pub struct Warp {
    pub regs: Vec<[u64; 32]>,
    pub pc: [u32; 32],
    /// Lanes that run, wait at a barrier (released by it), wait to try again (an mbarrier not yet
    /// complete), have left, and exist at all.
    pub running: u32,
    pub waiting: u32,
    pub parked: u32,
    pub exited: u32,
    pub present: u32,
    /// The program counter every running lane shares, while they share one.
    pub uniform: Option<u32>,
    pub open: Vec<PendingCopy>,
    pub groups: std::collections::VecDeque<Vec<PendingCopy>>,
    /// The warp's index in its block, and its block's rank in the cluster.
    pub index: u32,
    pub rank: u32,
    /// A spin wait's program counter and how often in a row it saw the same value.
    pub spin: (u32, u64, u32),
    /// The cluster barrier's phase each lane arrived in (`barrier.cluster.arrive`).
    pub cluster_phase: [u32; 32],
}

impl Warp {
    pub fn new(k: &DecodedKernel, index: u32, rank: u32, present: u32) -> Warp {
        Warp {
            regs: vec![[0u64; 32]; k.regs],
            pc: [0; 32],
            running: present,
            waiting: 0,
            parked: 0,
            exited: 0,
            present,
            uniform: Some(0),
            open: Vec::new(),
            groups: Default::default(),
            index,
            rank,
            spin: (u32::MAX, 0, 0),
            cluster_phase: [0; 32],
        }
    }

    /// An empty stand-in, while the warp itself is out running.
    pub fn placeholder() -> Warp {
        Warp {
            regs: Vec::new(),
            pc: [0; 32],
            running: 0,
            waiting: 0,
            parked: 0,
            exited: 0,
            present: 0,
            uniform: None,
            open: Vec::new(),
            groups: Default::default(),
            index: 0,
            rank: 0,
            spin: (0, 0, 0),
            cluster_phase: [0; 32],
        }
    }

    /// Gives every running lane its own program counter (before lanes part ways).
    pub fn materialize(&mut self) {
        if let Some(u) = self.uniform {
            for l in Lanes(self.running) {
                self.pc[l] = u;
            }
        }
    }
}

/// One mbarrier: the arrivals each phase expects, those still to come, the bytes still owed
/// (negative: more delivered than announced), and the phases completed so far.
#[derive(Clone, Debug)]
pub struct Mbar {
    pub expected: u32,
    pub pending: u32,
    pub tx: i64,
    pub phase: u32,
    /// The instruction that initialised it, and the initialising lane's warp slot, clock then
    /// ([`super::order`]) and lane: a use by another warp must happen after.
    pub init_pc: u32,
    pub init: (u32, u32, u32),
    /// The last `expect_tx` of the phase under way, and the copies counted on the barrier that
    /// have not landed yet (their instruction and bytes, in the order they land).
    pub expect_pc: Option<u32>,
    pub flying: Vec<(u32, u32)>,
    /// The bytes the expect_tx of the phase under way announced, and who completed the phase
    /// before it by arriving (warp slot, lane, instruction; None where a copy's landing did).
    pub announced: i64,
    pub completed_by: Option<(u32, u32, u32)>,
    /// The warps (slot, own clock) that arrived in the phase under way, and whether one of them
    /// arrived at two epochs of its in the phase before (it went round without waiting for it).
    pub arrivals: Vec<(u32, u32)>,
    pub repeated: bool,
    /// What the arrivals and copies of the phase under way knew ([`super::order`]), and what
    /// those of the last completed phase of each parity did.
    pub clock: Vec<u32>,
    pub done: [Vec<u32>; 2],
}

/// A copy issued and not yet landed: the block, its mbarrier's byte, the issuing instruction,
/// where the box goes, its swizzle and element size, and the box's bytes.
#[derive(Clone, Debug)]
pub struct Landing {
    pub rank: usize,
    pub bar_at: usize,
    pub pc: u32,
    pub dst_at: usize,
    pub swizzle: crate::tensor_map::Swizzle,
    pub size: usize,
    pub data: Vec<u8>,
    /// The mbarrier's phase under way at the issue.
    pub phase: u32,
    /// The issuing warp's clock at the issue.
    pub clock: Vec<u32>,
}

/// Threads waiting at one of a block's sixteen barriers (`bar.sync`, `barrier.sync`, `bar.red`).
#[derive(Clone, Debug, Default)]
pub struct NamedBarrier {
    /// The threads it waits for: the count the instruction gives, or None for every thread of the
    /// block.
    pub expected: Option<u32>,
    /// Threads arrived, as (warp slot, lanes, the instruction's index).
    pub arrived: Vec<(usize, u32, u32)>,
    /// `bar.red.or`: whether any arriving thread's predicate was true, and the predicate register
    /// each arrival gets the answer in.
    pub any: bool,
    pub answer: Option<u32>,
}

impl NamedBarrier {
    pub fn threads(&self) -> u32 {
        self.arrived.iter().map(|(_, m, _)| m.count_ones()).sum()
    }
}

/// One block of a cluster: its shared memory with the race shadow, its barriers and its place in
/// the grid.
pub struct Cta {
    pub shared: Vec<u8>,
    pub shadow: Shadow,
    /// What the copy engine and the tensor cores did to each word of shared memory.
    pub async_shadow: AsyncShadow,
    /// Which warp's epoch last wrote and read each word, and its peers' uses of it.
    pub accesses: Accesses,
    /// Whether its peers' uses were checked against its end.
    pub exit_checked: bool,
    pub ctaid: [u32; 3],
    /// The tensor maps (by their tensor's address) the block has copied from already.
    pub copied_from: Vec<u64>,
    /// Whether the block has made a global load since its last barrier (see
    /// [`Traffic::load_phases`]).
    pub loaded: bool,
    /// Whether it has computed since a global load of this phase.
    pub computed: bool,
    pub bars: Vec<NamedBarrier>,
    /// The block's mbarriers, by their byte in shared memory.
    pub mbars: std::collections::HashMap<usize, Mbar>,
}

/// What one warp has in flight with the tensor cores and the copy engine, and what it has seen
/// of the mbarriers: kept beside the warp, where other warps' accesses can check them.
#[derive(Clone, Debug, Default)]
pub struct InFlight {
    /// `wgmma.commit_group` groups committed, and those the warp has waited for.
    pub wgmma_committed: u32,
    pub wgmma_retired: u32,
    /// The same for `cp.async.bulk.commit_group`.
    pub bulk_committed: u32,
    pub bulk_retired: u32,
    /// For each mbarrier (block rank, byte) the warp waited on, the phases it saw complete.
    pub seen: Vec<((usize, usize), u32)>,
    /// Each lane's `fence.proxy.async` count.
    pub fences: [u32; 32],
    /// One past the last group a wgmma of the warp was issued in (0: none yet), and each
    /// `wgmma.wait_group` that retired groups: the groups retired after it, the warp's own clock
    /// then ([`super::order`]) and the instruction.
    pub wgmma_issued: u32,
    pub wgmma_waits: Vec<(u32, u32, u32)>,
    /// The warp's arrivals on an mbarrier while a wgmma of its had not been waited for.
    pub freed: Vec<Freed>,
    /// The last wait that passed on each mbarrier the warp waited on, and how many of the warp's
    /// waits have passed.
    pub passed: Vec<Passed>,
    pub waits: u32,
    /// The registers the warp's wgmma read as A, and the first ordinary write to one of them
    /// while its wgmma was in flight ([`super::fragments`]).
    pub fragments: Vec<Fragment>,
    pub clobbered: Option<Clobber>,
    /// The mbarriers the warp arrived on (with the sanitizer on), and the multicast copies it
    /// issued ([`super::causes`]).
    pub arrived: Vec<Arrived>,
    pub multicasts: Vec<Multicast>,
}

/// The blocks of one cluster, run together by one host thread (kept from cluster to cluster).
pub struct Cluster<'a> {
    pub k: &'a DecodedKernel,
    pub launch: &'a Launch<'a>,
    pub global: &'a Global,
    pub ctas: Vec<Cta>,
    /// Every warp of every block, block by block.
    pub warps: Vec<Warp>,
    /// The block whose warp runs now, and the warp's slot in `warps`.
    pub rank: usize,
    pub slot: usize,
    /// With the sanitizer on: how often each warp has run each instruction in this block (by
    /// slot, then program counter), and that count for the instruction running now, so that a
    /// race can say which trip of a loop each of its accesses was in.
    pub visits: Vec<u32>,
    pub visit: u32,
    /// Each warp's work in flight, by slot.
    pub pending: Vec<InFlight>,
    /// The copy engine's copies issued this round, landing at its end.
    pub in_flight: Vec<Landing>,
    /// Each warp's vector clock (see [`super::order`]); the cluster barrier's phase under way
    /// and the last completed.
    pub clocks: Vec<Vec<u32>>,
    pub cluster_clock: Vec<u32>,
    pub cluster_released: Vec<u32>,
    /// What each warp has released to the cluster's scope, by slot.
    pub released: Vec<super::shadows::Released>,
    /// The elements of A and B in shared words and operand registers.
    pub operands: super::operand_tags::OperandTags,
    /// What each warp knows of other clusters' stores (see [`super::global_order`]).
    pub seen: super::global_watch::ClusterSeen,
    pub local: Vec<u8>,
    pub traffic: Traffic,
    /// The sectors the copy engine delivered to each block (by its linear index), over the
    /// clusters this one has run.
    pub block_sectors: std::collections::HashMap<u64, u64>,
    /// The bytes the copy engine stored from each block.
    pub block_stores: std::collections::HashMap<u64, u64>,
    /// Each block's first tile of each tensor map, over the clusters this one has run.
    pub first_tiles: std::collections::BTreeSet<(u64, [i64; 4])>,
    /// The cluster barrier (`barrier.cluster`): its phase, and the threads that arrived in it.
    pub cluster_phase: u32,
    pub cluster_arrived: u32,
    pub stop: &'a AtomicBool,
    pub scratch: Vec<u64>,
    /// The global sectors each block of the cluster (by rank) has loaded, for
    /// [`Traffic::l1_miss_sectors`].
    pub l1_seen: std::collections::HashSet<u64, std::hash::BuildHasherDefault<SectorHasher>>,
    /// The counts when the cluster started, for the most one block did.
    pub at_start: Traffic,
    pub pairs: Vec<(u32, u32)>,
    /// The block's timeline, where the launch asks for one ([`crate::recording::timeline`]).
    pub timeline: Option<Box<crate::recording::timeline::TimelineRecorder>>,
    /// The cluster's recording for the replay, where the launch asks for one.
    pub trace: Option<Box<crate::recording::trace::TraceRecorder>>,
    /// The last cluster's recording where it was not kept, whose buffers the next one reuses.
    pub trace_spare: Option<Box<crate::recording::trace::TraceRecorder>>,
    /// The sectors this cluster reads from global memory, where its launch asks for them, and
    /// the cluster's index.
    pub footprint: Option<(u64, std::collections::HashSet<u64>)>,
    /// With the sanitizer on, for each instruction the registers it writes that a wgmma reads as
    /// A's fragments ([`super::fragments`]); empty when there is nothing to check.
    pub fragment_writes: Vec<Vec<crate::inst::R>>,
}

impl Cluster<'_> {
    /// The running block computes: after a global load of this phase, the load's wait can hide
    /// under the work (see [`crate::Traffic::overlapped_phases`]).
    #[inline]
    pub fn computed(&mut self) {
        let cta = &mut self.ctas[self.rank];
        cta.computed |= cta.loaded;
    }

    /// The running block's shared memory.
    #[inline]
    pub fn shared(&self) -> &[u8] {
        &self.ctas[self.rank].shared
    }

    #[inline]
    pub fn shared_mut(&mut self) -> &mut Vec<u8> {
        &mut self.ctas[self.rank].shared
    }

    /// Where an instruction came from, as `file:line`; in an inlined helper, the call in the
    /// kernel and the helper's line: `kernel.cu:259, in mbar_wait at :73` (the outermost call
    /// and the innermost helper, where helpers call helpers).
    pub fn at(&self, inst: &Inst) -> String {
        let Some(f) = self.k.files.get(&inst.file).filter(|_| inst.line > 0) else {
            return format!("the PTX instruction `{}`", inst.opcode);
        };
        match self.k.call_site(inst) {
            Some((file, line, _)) if self.k.files.contains_key(&file) => {
                let helper = self.k.calls.get(inst.call as usize).and_then(|c| self.k.helpers.get(&c.helper));
                let helper = helper.map_or("a helper", String::as_str);
                let inner = if file == inst.file { String::new() } else { f.clone() };
                format!("{}:{line}, in {helper} at {inner}:{}", self.k.files[&file], inst.line)
            }
            _ => format!("{f}:{}", inst.line),
        }
    }

    /// `thread (x,y,z) of block (x,y,z)` for lane `lane` of warp `w` of the running block.
    pub fn who(&self, w: u32, lane: usize) -> String {
        self.who_in(self.rank, w, lane)
    }

    /// The same for a warp of block `rank` of the cluster.
    pub fn who_in(&self, rank: usize, w: u32, lane: usize) -> String {
        let (bx, by, _) = self.launch.block;
        let t = w * 32 + lane as u32;
        let c = self.ctas[rank].ctaid;
        format!(
            "thread ({},{},{}) of block ({},{},{})",
            t % bx,
            (t / bx) % by,
            t / (bx * by),
            c[0],
            c[1],
            c[2]
        )
    }

    pub fn fault(&self, kind: FaultKind, message: String) -> Fault {
        Fault { kind, message }
    }

    /// The byte offset in the running block's shared memory of an access, or the fault it is.
    pub fn shared_offset(
        &self,
        inst: &Inst,
        w: u32,
        l: usize,
        address: u64,
        len: usize,
        write: bool,
    ) -> Result<usize, Fault> {
        let size = self.shared().len() as u64;
        if off_alignment(address, len) {
            return Err(self.misaligned(inst, w, l, address, len, "shared"));
        }
        let end = address.saturating_add(len as u64);
        let inside = self.k.shared_vars.iter().any(|v| address >= v.start as u64 && end <= v.end as u64)
            || (address >= self.k.dynamic_at as u64 && end <= size);
        if !inside {
            let verb = if write { "writes" } else { "reads" };
            let place = match self.k.shared_vars.iter().rev().find(|v| address >= v.start as u64) {
                Some(v) if end <= size => {
                    format!("{}, which has {} bytes", self.shared_place(address as usize), v.end - v.start)
                }
                _ => format!("byte {} of shared memory, outside the block's {} bytes", address as i64, size),
            };
            return Err(self.fault(
                FaultKind::OutOfBounds,
                format!("{} {verb} {len} bytes at {place}, at {}", self.who(w, l), self.at(inst)),
            ));
        }
        Ok(address as usize)
    }

    /// A byte of shared memory as the source names it: `byte 4 of the shared array `Bs``, or of
    /// the dynamic shared memory.
    pub fn shared_place(&self, at: usize) -> String {
        match self.k.shared_vars.iter().rev().find(|v| at >= v.start) {
            Some(v) if at >= self.k.dynamic_at && self.k.dynamic_at > v.start => {
                format!("byte {} of the dynamic shared memory", at - self.k.dynamic_at)
            }
            Some(v) => format!("byte {} of the shared array `{}`", at - v.start, v.name),
            None => format!("byte {} of the dynamic shared memory", at - self.k.dynamic_at.min(at)),
        }
    }

    pub fn misaligned(&self, inst: &Inst, w: u32, l: usize, address: u64, len: usize, space: &str) -> Fault {
        self.fault(
            FaultKind::Misaligned,
            format!(
                "{} accesses {len} bytes of {space} memory at {address:#x}, which is not a multiple of {len}, at {}",
                self.who(w, l),
                self.at(inst)
            ),
        )
    }

    pub fn global_place(
        &self,
        inst: &Inst,
        w: u32,
        l: usize,
        address: u64,
        len: usize,
        write: bool,
    ) -> Result<crate::memory::BufferOffset, Fault> {
        if off_alignment(address, len) {
            return Err(self.misaligned(inst, w, l, address, len, "global"));
        }
        self.global.place(address, len).ok_or_else(|| {
            self.fault(
                FaultKind::OutOfBounds,
                format!(
                    "{} {} {len} bytes of global memory {}, at {}",
                    self.who(w, l),
                    if write { "writes" } else { "reads" },
                    self.global.describe(address, len),
                    self.at(inst)
                ),
            )
        })
    }

    /// A shared::cluster address: the block it is in and the byte in that block.
    pub fn cluster_address(&self, a: u64) -> (usize, usize) {
        let rank = (a >> RANK_SHIFT) as usize;
        let at = (a & ((1 << RANK_SHIFT) - 1)) as usize;
        if rank == 0 { (self.rank, at) } else { (rank - 1, at) }
    }

    /// Whether every thread of block `rank` (another than the running warp's) has left.
    pub fn block_done(&self, rank: usize) -> bool {
        self.warps.iter().filter(|w| w.rank as usize == rank).all(|w| w.exited == w.present)
    }

    /// A block of the cluster whose threads have all left is used by a peer.
    pub fn peer_gone(&self, inst: &Inst, w: &Warp, l: usize, rank: usize) -> Fault {
        let c = self.ctas[rank].ctaid;
        self.fault(
            FaultKind::Race,
            format!(
                "{} uses the shared memory of block ({},{},{}), rank {rank} of its cluster, at {}, after every thread of that block has left (a peer must wait, with barrier.cluster, until the others are done with it)",
                self.who(w.index, l),
                c[0],
                c[1],
                c[2],
                self.at(inst)
            ),
        )
    }

    /// Threads in one block.
    pub fn block_threads(&self) -> u32 {
        let (bx, by, bz) = self.launch.block;
        bx * by * bz
    }
}

/// Whether `address` is not a multiple of an access's `len` bytes: a mask for the sizes accesses
/// have (powers of two), where a division would cost more than the rest of a lane's check.
#[inline]
fn off_alignment(address: u64, len: usize) -> bool {
    if len.is_power_of_two() { address & (len as u64 - 1) != 0 } else { address % len as u64 != 0 }
}

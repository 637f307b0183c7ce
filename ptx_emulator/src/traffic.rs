//! Memory traffic counted as Nsight Compute counts it on the L1TEX unit, one warp-wide
//! instruction at a time:
//!
//! - a global load or store is one *request*, and touches as many 32-byte *sectors* as there are
//!   distinct 32-byte-aligned pieces of memory among its active lanes' bytes
//!   (`l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum`, `l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum`,
//!   and `_op_st` for stores);
//! - a shared-memory load or store is one request, served in *wavefronts*: passes through the
//!   32 banks of 4 bytes, one word per bank each (`l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum`).
//!   Lanes that read the same word share it (a broadcast); lanes that need different words of one
//!   bank take a pass each (a bank conflict). See [`shared_wavefronts`] for wider accesses.

/// What one launch moved, and what it computed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Traffic {
    pub global_load_requests: u64,
    pub global_load_sectors: u64,
    pub global_store_requests: u64,
    pub global_store_sectors: u64,
    pub shared_load_requests: u64,
    pub shared_load_wavefronts: u64,
    pub shared_store_requests: u64,
    pub shared_store_wavefronts: u64,
    /// cp.async: requests and the global sectors they read.
    pub async_copy_requests: u64,
    pub async_copy_sectors: u64,
    pub atomic_requests: u64,
    /// The distinct 128-byte lines each global load, store and cp.async request touches (at least
    /// one a request, a request whose lanes read nothing included), summed: the L1 looks up one
    /// line a pass, so a request whose lanes fall in 32 lines (a warp that walks down a column)
    /// takes 32 passes where a coalesced one takes one.
    pub global_lines: u64,
    /// The copy engine's tensor loads: copies, the bytes of their boxes, and the global sectors
    /// they read (elements outside the tensor read none); the bytes of the multicast copies among
    /// them, and the bytes multicast delivered to further blocks of a cluster without reading
    /// them again (the L2 reads it saves).
    pub bulk_load_requests: u64,
    pub bulk_load_bytes: u64,
    pub bulk_load_sectors: u64,
    pub multicast_load_bytes: u64,
    pub multicast_bytes: u64,
    /// The sectors multicast delivers to further blocks (with those read, what the blocks'
    /// L1s receive: Nsight Compute's `l1tex__m_xbar2l1tex_read_sectors_mem_global_op_tma_ld`).
    pub multicast_sectors: u64,
    /// Copies whose sectors are an estimate (see `exec/tma.rs`).
    pub bulk_estimated: u64,
    /// The boxes the blocks' first copies read, one per block and tensor map (the box's place in
    /// its tensor, the first slice of K of the tile the block starts on), counted once however
    /// many blocks read them: for a grid of one wave, what the blocks in flight together first
    /// ask of L2. A schedule whose first blocks share tiles asks for fewer.
    pub first_tiles: u64,
    /// The copy engine's sectors an SM's L1 receives, the most and the least over the SMs, with
    /// the blocks dealt to the GPU's SMs in turn (block b on SM b mod its SMs): exact where the
    /// grid is one wave, an estimate beyond (a GPU deals blocks as SMs free up).
    pub sm_sectors_most: u64,
    pub sm_sectors_least: u64,
    /// The same for the bytes the copy engine stores from an SM.
    pub sm_stores_most: u64,
    pub sm_stores_least: u64,
    /// The copy engine's tensor stores: copies, and the bytes written inside the tensor.
    pub bulk_store_requests: u64,
    pub bulk_store_bytes: u64,
    /// wgmma instructions, counted once per warp (four per warpgroup's instruction).
    pub wgmma_instructions: u64,
    /// Block-wide barriers passed, counted once per block and barrier.
    pub barriers: u64,
    /// FP32 operations: an FMA counts 2, an add or multiply 1; a TF32 mma.sync m16n8k8 2·16·8·8.
    pub flops: u64,
    /// FP32 adds, multiplies and FMAs, counted once per warp: what the FP32 pipe issues.
    pub fp32_instructions: u64,
    /// The tensor cores' work by kind: TF32 `mma.sync` FLOPs, and `wgmma` FLOPs of TF32 and of
    /// 16-bit operands, and INT8 operations (2 per multiply-add, as FLOPs count).
    pub mma_sync_flops: u64,
    pub wgmma_tf32_flops: u64,
    pub wgmma_16bit_flops: u64,
    pub wgmma_int8_ops: u64,
    /// The sectors of global loads each block asks for the first time (distinct per block): what
    /// misses the L1 if it keeps what one block reuses and nothing between blocks.
    pub l1_miss_sectors: u64,
    /// The stretches between a block's barriers (and from its last barrier to its end) in which
    /// it made global loads: each waits at least once for memory, however many loads it makes.
    pub load_phases: u64,
    /// Those of them in which the block also computed (FP32 or tensor-core work) after its first
    /// load: a prefetch, whose wait the work can hide.
    pub overlapped_phases: u64,
    /// Blocks run.
    pub blocks: u64,
    /// The most one block of the launch did, of instructions (once per warp) and of tensor-core
    /// work by kind (see above): where blocks differ (a persistent kernel's, whose blocks take
    /// different numbers of tiles), the busiest SM's work. A block of a cluster is its cluster's
    /// work over its blocks.
    pub most_block_instructions: u64,
    pub most_block_mma_sync_flops: u64,
    pub most_block_wgmma_tf32_flops: u64,
    pub most_block_wgmma_16bit_flops: u64,
    pub most_block_wgmma_int8_ops: u64,
    /// Instructions executed, counted once per warp and once per active thread.
    pub warp_instructions: u64,
    pub thread_instructions: u64,
    /// For a scaled launch ([`crate::Emulator::scale`]): the blocks emulated, and the blocks of the
    /// grid their counts were multiplied out to; both 0 for a launch emulated whole.
    pub scaled_ran: u64,
    pub scaled_of: u64,
}

impl Traffic {
    pub fn add(&mut self, o: &Traffic) {
        self.global_load_requests += o.global_load_requests;
        self.global_load_sectors += o.global_load_sectors;
        self.global_store_requests += o.global_store_requests;
        self.global_store_sectors += o.global_store_sectors;
        self.shared_load_requests += o.shared_load_requests;
        self.shared_load_wavefronts += o.shared_load_wavefronts;
        self.shared_store_requests += o.shared_store_requests;
        self.shared_store_wavefronts += o.shared_store_wavefronts;
        self.async_copy_requests += o.async_copy_requests;
        self.async_copy_sectors += o.async_copy_sectors;
        self.atomic_requests += o.atomic_requests;
        self.global_lines += o.global_lines;
        self.bulk_load_requests += o.bulk_load_requests;
        self.bulk_load_bytes += o.bulk_load_bytes;
        self.bulk_load_sectors += o.bulk_load_sectors;
        self.multicast_load_bytes += o.multicast_load_bytes;
        self.multicast_bytes += o.multicast_bytes;
        self.multicast_sectors += o.multicast_sectors;
        self.first_tiles += o.first_tiles;
        self.sm_sectors_most += o.sm_sectors_most;
        self.sm_sectors_least += o.sm_sectors_least;
        self.sm_stores_most += o.sm_stores_most;
        self.sm_stores_least += o.sm_stores_least;
        self.bulk_estimated += o.bulk_estimated;
        self.bulk_store_requests += o.bulk_store_requests;
        self.bulk_store_bytes += o.bulk_store_bytes;
        self.wgmma_instructions += o.wgmma_instructions;
        self.barriers += o.barriers;
        self.flops += o.flops;
        self.fp32_instructions += o.fp32_instructions;
        self.mma_sync_flops += o.mma_sync_flops;
        self.wgmma_tf32_flops += o.wgmma_tf32_flops;
        self.wgmma_16bit_flops += o.wgmma_16bit_flops;
        self.wgmma_int8_ops += o.wgmma_int8_ops;
        self.l1_miss_sectors += o.l1_miss_sectors;
        self.load_phases += o.load_phases;
        self.overlapped_phases += o.overlapped_phases;
        self.blocks += o.blocks;
        self.most_block_instructions = self.most_block_instructions.max(o.most_block_instructions);
        self.most_block_mma_sync_flops = self.most_block_mma_sync_flops.max(o.most_block_mma_sync_flops);
        self.most_block_wgmma_tf32_flops =
            self.most_block_wgmma_tf32_flops.max(o.most_block_wgmma_tf32_flops);
        self.most_block_wgmma_16bit_flops =
            self.most_block_wgmma_16bit_flops.max(o.most_block_wgmma_16bit_flops);
        self.most_block_wgmma_int8_ops = self.most_block_wgmma_int8_ops.max(o.most_block_wgmma_int8_ops);
        self.warp_instructions += o.warp_instructions;
        self.thread_instructions += o.thread_instructions;
        self.scaled_ran += o.scaled_ran;
        self.scaled_of += o.scaled_of;
    }

    /// `times` launches' worth of the counts that add up block by block. What does not (the
    /// boxes the first blocks read, the most and least an SM receives) is left at zero: a scaled
    /// launch does not know it. The most one block did is kept as it is.
    pub fn times(&self, times: u64) -> Traffic {
        let t = |v: u64| v * times;
        Traffic {
            global_load_requests: t(self.global_load_requests),
            global_load_sectors: t(self.global_load_sectors),
            global_store_requests: t(self.global_store_requests),
            global_store_sectors: t(self.global_store_sectors),
            shared_load_requests: t(self.shared_load_requests),
            shared_load_wavefronts: t(self.shared_load_wavefronts),
            shared_store_requests: t(self.shared_store_requests),
            shared_store_wavefronts: t(self.shared_store_wavefronts),
            async_copy_requests: t(self.async_copy_requests),
            async_copy_sectors: t(self.async_copy_sectors),
            atomic_requests: t(self.atomic_requests),
            global_lines: t(self.global_lines),
            bulk_load_requests: t(self.bulk_load_requests),
            bulk_load_bytes: t(self.bulk_load_bytes),
            bulk_load_sectors: t(self.bulk_load_sectors),
            multicast_load_bytes: t(self.multicast_load_bytes),
            multicast_bytes: t(self.multicast_bytes),
            multicast_sectors: t(self.multicast_sectors),
            bulk_estimated: t(self.bulk_estimated),
            bulk_store_requests: t(self.bulk_store_requests),
            bulk_store_bytes: t(self.bulk_store_bytes),
            wgmma_instructions: t(self.wgmma_instructions),
            barriers: t(self.barriers),
            flops: t(self.flops),
            fp32_instructions: t(self.fp32_instructions),
            mma_sync_flops: t(self.mma_sync_flops),
            wgmma_tf32_flops: t(self.wgmma_tf32_flops),
            wgmma_16bit_flops: t(self.wgmma_16bit_flops),
            wgmma_int8_ops: t(self.wgmma_int8_ops),
            l1_miss_sectors: t(self.l1_miss_sectors),
            load_phases: t(self.load_phases),
            overlapped_phases: t(self.overlapped_phases),
            blocks: t(self.blocks),
            most_block_instructions: self.most_block_instructions,
            most_block_mma_sync_flops: self.most_block_mma_sync_flops,
            most_block_wgmma_tf32_flops: self.most_block_wgmma_tf32_flops,
            most_block_wgmma_16bit_flops: self.most_block_wgmma_16bit_flops,
            most_block_wgmma_int8_ops: self.most_block_wgmma_int8_ops,
            warp_instructions: t(self.warp_instructions),
            thread_instructions: t(self.thread_instructions),
            ..Traffic::default()
        }
    }

    /// The counts that add up block by block ([`Traffic::times`]), and the most one block did,
    /// for comparing a scaled launch with a whole one.
    pub fn additive(&self) -> Traffic {
        self.times(1)
    }

    /// Every count of two launches' combined by `f`, field by field (the most one block did and
    /// the scaled run's blocks too): for counts read at two depths of K and extrapolated along
    /// their line. The pattern names every field, so that a count added to [`Traffic`] must be
    /// added here.
    pub fn zip(&self, o: &Traffic, f: impl Fn(u64, u64) -> u64) -> Traffic {
        let Traffic {
            global_load_requests,
            global_load_sectors,
            global_store_requests,
            global_store_sectors,
            shared_load_requests,
            shared_load_wavefronts,
            shared_store_requests,
            shared_store_wavefronts,
            async_copy_requests,
            async_copy_sectors,
            atomic_requests,
            global_lines,
            bulk_load_requests,
            bulk_load_bytes,
            bulk_load_sectors,
            multicast_load_bytes,
            multicast_bytes,
            multicast_sectors,
            bulk_estimated,
            first_tiles,
            sm_sectors_most,
            sm_sectors_least,
            sm_stores_most,
            sm_stores_least,
            bulk_store_requests,
            bulk_store_bytes,
            wgmma_instructions,
            barriers,
            flops,
            fp32_instructions,
            mma_sync_flops,
            wgmma_tf32_flops,
            wgmma_16bit_flops,
            wgmma_int8_ops,
            l1_miss_sectors,
            load_phases,
            overlapped_phases,
            blocks,
            most_block_instructions,
            most_block_mma_sync_flops,
            most_block_wgmma_tf32_flops,
            most_block_wgmma_16bit_flops,
            most_block_wgmma_int8_ops,
            warp_instructions,
            thread_instructions,
            scaled_ran,
            scaled_of,
        } = *self;
        Traffic {
            global_load_requests: f(global_load_requests, o.global_load_requests),
            global_load_sectors: f(global_load_sectors, o.global_load_sectors),
            global_store_requests: f(global_store_requests, o.global_store_requests),
            global_store_sectors: f(global_store_sectors, o.global_store_sectors),
            shared_load_requests: f(shared_load_requests, o.shared_load_requests),
            shared_load_wavefronts: f(shared_load_wavefronts, o.shared_load_wavefronts),
            shared_store_requests: f(shared_store_requests, o.shared_store_requests),
            shared_store_wavefronts: f(shared_store_wavefronts, o.shared_store_wavefronts),
            async_copy_requests: f(async_copy_requests, o.async_copy_requests),
            async_copy_sectors: f(async_copy_sectors, o.async_copy_sectors),
            atomic_requests: f(atomic_requests, o.atomic_requests),
            global_lines: f(global_lines, o.global_lines),
            bulk_load_requests: f(bulk_load_requests, o.bulk_load_requests),
            bulk_load_bytes: f(bulk_load_bytes, o.bulk_load_bytes),
            bulk_load_sectors: f(bulk_load_sectors, o.bulk_load_sectors),
            multicast_load_bytes: f(multicast_load_bytes, o.multicast_load_bytes),
            multicast_bytes: f(multicast_bytes, o.multicast_bytes),
            multicast_sectors: f(multicast_sectors, o.multicast_sectors),
            bulk_estimated: f(bulk_estimated, o.bulk_estimated),
            first_tiles: f(first_tiles, o.first_tiles),
            sm_sectors_most: f(sm_sectors_most, o.sm_sectors_most),
            sm_sectors_least: f(sm_sectors_least, o.sm_sectors_least),
            sm_stores_most: f(sm_stores_most, o.sm_stores_most),
            sm_stores_least: f(sm_stores_least, o.sm_stores_least),
            bulk_store_requests: f(bulk_store_requests, o.bulk_store_requests),
            bulk_store_bytes: f(bulk_store_bytes, o.bulk_store_bytes),
            wgmma_instructions: f(wgmma_instructions, o.wgmma_instructions),
            barriers: f(barriers, o.barriers),
            flops: f(flops, o.flops),
            fp32_instructions: f(fp32_instructions, o.fp32_instructions),
            mma_sync_flops: f(mma_sync_flops, o.mma_sync_flops),
            wgmma_tf32_flops: f(wgmma_tf32_flops, o.wgmma_tf32_flops),
            wgmma_16bit_flops: f(wgmma_16bit_flops, o.wgmma_16bit_flops),
            wgmma_int8_ops: f(wgmma_int8_ops, o.wgmma_int8_ops),
            l1_miss_sectors: f(l1_miss_sectors, o.l1_miss_sectors),
            load_phases: f(load_phases, o.load_phases),
            overlapped_phases: f(overlapped_phases, o.overlapped_phases),
            blocks: f(blocks, o.blocks),
            most_block_instructions: f(most_block_instructions, o.most_block_instructions),
            most_block_mma_sync_flops: f(most_block_mma_sync_flops, o.most_block_mma_sync_flops),
            most_block_wgmma_tf32_flops: f(most_block_wgmma_tf32_flops, o.most_block_wgmma_tf32_flops),
            most_block_wgmma_16bit_flops: f(most_block_wgmma_16bit_flops, o.most_block_wgmma_16bit_flops),
            most_block_wgmma_int8_ops: f(most_block_wgmma_int8_ops, o.most_block_wgmma_int8_ops),
            warp_instructions: f(warp_instructions, o.warp_instructions),
            thread_instructions: f(thread_instructions, o.thread_instructions),
            scaled_ran: f(scaled_ran, o.scaled_ran),
            scaled_of: f(scaled_of, o.scaled_of),
        }
    }

    /// Bytes of global memory the loads and stores touched, in whole sectors.
    pub fn global_bytes(&self) -> u64 {
        32 * (self.global_load_sectors
            + self.global_store_sectors
            + self.async_copy_sectors
            + self.bulk_load_sectors)
            + self.bulk_store_bytes
    }

    /// FP32 operations per byte of global memory touched.
    pub fn flops_per_byte(&self) -> f64 {
        self.flops as f64 / self.global_bytes().max(1) as f64
    }
}

/// The distinct 32-byte sectors that `len`-byte accesses at `addresses` touch.
pub fn sectors(addresses: &mut [u64], len: u64) -> u64 {
    // An aligned access of up to 32 bytes lies in one sector; the emulator refuses misaligned ones.
    let per = len.div_ceil(32).max(1);
    for a in addresses.iter_mut() {
        *a >>= 5;
    }
    addresses.sort_unstable();
    let mut distinct = 0;
    let mut last = u64::MAX;
    for &s in addresses.iter() {
        if s != last {
            distinct += 1;
            last = s;
        }
    }
    distinct * per
}

/// The distinct 128-byte lines among sector indices that [`sectors`] has sorted.
pub fn lines(sorted_sectors: &[u64]) -> u64 {
    let mut distinct = 0;
    let mut last = u64::MAX;
    for &s in sorted_sectors {
        if s >> 2 != last {
            distinct += 1;
            last = s >> 2;
        }
    }
    distinct
}

/// The wavefronts one warp-wide shared access of `len` bytes per lane costs, given each active
/// lane's byte offset (lane, offset), as Nsight Compute counts them on an H100.
///
/// The model, fitted to the patterns of `ptx_emulator/calibration/banks.cu` measured on the GPU
/// (its record is in the book's emulator appendix): a pass through the banks reads at most one
/// 4-byte word per bank, and lanes that want the same word share it. Accesses of 4 bytes are served
/// for the whole warp at once, in as many passes as the busiest bank has distinct words. Wider
/// accesses are served a part of the warp at a time: 8-byte ones half a warp at a time, 16-byte
/// ones a quarter (8 lanes). Two neighbouring parts are served together when, in every group of
/// four neighbouring lanes of them, the lanes want at most two distinct pieces; otherwise each part
/// costs its own passes.
pub fn shared_wavefronts(lanes: &[(u32, u32)], len: u32) -> u64 {
    let mut total = 0;
    each_pass(lanes, len, |_, _, wavefronts| total += wavefronts);
    total
}

/// The parts of the warp that [`shared_wavefronts`] serves one after another, in order: each
/// as the lanes `from..to` it serves and the wavefronts it costs (the most distinct words one bank
/// holds among those lanes' words); the access costs their sum. One part of 32 lanes for 4-byte
/// accesses; for wider ones a part of 16 or 8 lanes, or two neighbouring parts served together.
pub fn shared_passes(lanes: &[(u32, u32)], len: u32) -> Vec<(u32, u32, u64)> {
    let mut passes = Vec::new();
    each_pass(lanes, len, |from, to, wavefronts| passes.push((from as u32, to as u32, wavefronts)));
    passes
}

/// Calls `pass(from, to, wavefronts)` for each part of the warp served on its own (see
/// [`shared_wavefronts`]), parts without an active lane left out.
fn each_pass(lanes: &[(u32, u32)], len: u32, mut pass: impl FnMut(usize, usize, u64)) {
    if lanes.is_empty() {
        return;
    }
    // Each lane's piece (its offset in units of `len`), or none for a lane that takes no part.
    let mut piece = [u32::MAX; 32];
    for &(lane, offset) in lanes {
        piece[lane as usize] = offset / len.max(4);
    }
    let words = len.div_ceil(4).max(1);
    let mut serve = |from: usize, to: usize| {
        if piece[from..to].iter().any(|&p| p != u32::MAX) {
            pass(from, to, conflict(&piece[from..to], words));
        }
    };
    match words {
        1 => serve(0, 32),
        _ => {
            let part = if words == 2 { 16 } else { 8 };
            for pair in (0..32).step_by(2 * part) {
                let together = (pair..pair + 2 * part).step_by(4).all(|g| distinct(&piece[g..g + 4]) <= 2);
                if together {
                    serve(pair, pair + 2 * part);
                } else {
                    serve(pair, pair + part);
                    serve(pair + part, pair + 2 * part);
                }
            }
        }
    }
}

/// The distinct pieces among some lanes (none counted for a lane with no piece).
fn distinct(pieces: &[u32]) -> usize {
    let mut seen = [u32::MAX; 4];
    let mut n = 0;
    for &p in pieces {
        if p != u32::MAX && !seen[..n].contains(&p) {
            seen[n] = p;
            n += 1;
        }
    }
    n
}

/// The passes some lanes' pieces of `words` words take: the most distinct pieces that fall on the
/// same banks (a piece of `words` words covers `words` banks, pieces are aligned to their size).
fn conflict(pieces: &[u32], words: u32) -> u64 {
    let groups = (32 / words) as usize;
    // The first piece seen in each bank group, its count of distinct pieces, and the other pieces
    // seen (few: most accesses have one piece a group).
    let mut first = [u32::MAX; 32];
    let mut counts = [0u64; 32];
    let mut others = [(0usize, 0u32); 32];
    let mut n_others = 0;
    for &p in pieces {
        if p == u32::MAX {
            continue;
        }
        let g = p as usize % groups;
        if first[g] == u32::MAX {
            first[g] = p;
            counts[g] = 1;
        } else if first[g] != p && !others[..n_others].contains(&(g, p)) {
            others[n_others] = (g, p);
            n_others += 1;
            counts[g] += 1;
        }
    }
    counts.iter().copied().max().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coalesced_and_strided_sectors() {
        let mut row: Vec<u64> = (0..32).map(|l| 4096 + 4 * l).collect();
        assert_eq!(sectors(&mut row, 4), 4, "32 consecutive floats: 128 bytes, 4 sectors");
        let mut column: Vec<u64> = (0..32).map(|l| 4096 * l).collect();
        assert_eq!(sectors(&mut column, 4), 32, "one float per row: a sector each");
        let mut wide: Vec<u64> = (0..32).map(|l| 16 * l).collect();
        assert_eq!(sectors(&mut wide, 16), 16, "16 bytes a lane: 512 bytes");
    }

    #[test]
    fn a_request_takes_a_pass_for_each_line_it_touches() {
        let mut row: Vec<u64> = (0..32).map(|l| 4096 + 4 * l).collect();
        sectors(&mut row, 4);
        assert_eq!(lines(&row), 1, "128 aligned bytes: one line");
        let mut shifted: Vec<u64> = (0..32).map(|l| 4096 + 64 + 4 * l).collect();
        sectors(&mut shifted, 4);
        assert_eq!(lines(&shifted), 2, "128 bytes across a line's edge: two");
        let mut column: Vec<u64> = (0..32).map(|l| 4096 * l).collect();
        sectors(&mut column, 4);
        assert_eq!(lines(&column), 32, "one float per row: a line each");
        let mut wide: Vec<u64> = (0..32).map(|l| 16 * l).collect();
        sectors(&mut wide, 16);
        assert_eq!(lines(&wide), 4, "16 bytes a lane: four lines");
        let mut same: Vec<u64> = vec![4096; 32];
        sectors(&mut same, 4);
        assert_eq!(lines(&same), 1, "a broadcast: one");
    }

    /// The parts of the warp served one after another: a quarter of a warp for 16-byte lanes, a
    /// half for 8-byte ones, two parts together where each four lanes want two pieces at most.
    #[test]
    fn wide_accesses_are_served_part_by_part() {
        let lanes = |offset: &dyn Fn(u32) -> u32| (0..32).map(|l| (l, 4 * offset(l))).collect::<Vec<_>>();
        let quarters = shared_passes(&lanes(&|l| l * 4), 16);
        assert_eq!(quarters, [(0, 8, 1), (8, 16, 1), (16, 24, 1), (24, 32, 1)]);
        assert_eq!(shared_passes(&lanes(&|l| (l / 4) * 4), 16), [(0, 16, 1), (16, 32, 1)]);
        assert_eq!(shared_passes(&lanes(&|l| l * 8), 16), [(0, 8, 2), (8, 16, 2), (16, 24, 2), (24, 32, 2)]);
        assert_eq!(shared_passes(&lanes(&|l| l * 2), 8), [(0, 16, 1), (16, 32, 1)]);
        assert_eq!(shared_passes(&lanes(&|l| l * 32), 4), [(0, 32, 32)]);
        // Lanes 8–15 alone: one part.
        let some: Vec<(u32, u32)> = (8..16).map(|l| (l, 16 * l)).collect();
        assert_eq!(shared_passes(&some, 16), [(8, 16, 1)]);
    }

    /// The calibration patterns of `calibration/banks.cu` (lane → offset in floats) and the
    /// wavefronts Nsight Compute counted for one warp's access on an H100.
    #[test]
    fn the_calibrated_patterns_cost_what_the_gpu_counted() {
        /// Bytes a lane, the lane's offset in floats, the wavefronts counted.
        type PatternCase = (u32, fn(u32) -> u32, u64);
        let cases: &[PatternCase] = &[
            (4, |l| l, 1),
            (4, |_| 0, 1),
            (4, |l| l * 32, 32),
            (4, |l| l * 2, 2),
            (4, |l| l * 33, 1),
            (8, |l| l * 2, 2),
            (8, |_| 0, 1),
            (8, |l| (l % 16) * 2, 2),
            (16, |l| l * 4, 4),
            (16, |_| 0, 2),
            (16, |l| (l / 4) * 4, 2),
            (16, |l| (l % 8) * 4, 4),
            (16, |l| (l % 4) * 4, 4),
            (16, |l| (l / 4) * 8, 2),
            (16, |l| l * 8, 8),
            (16, |l| (l / 16) * 4, 2),
            (16, |l| (l % 2) * 4, 2),
            (16, |l| (l / 8) * 4, 2),
            (16, |l| (l / 2) * 4, 2),
            (16, |l| ((l % 4) / 2) * 4, 2),
            (16, |l| (l % 3) * 4, 4),
            (16, |l| (l % 4) * 32, 16),
            (16, |l| (l / 16) * 32, 2),
            (16, |l| (l % 16) * 4, 4),
            (16, |l| (l ^ 1) * 4, 4),
            (8, |l| (l % 2) * 2, 1),
            (8, |l| (l % 4) * 2, 2),
            (8, |l| (l % 8) * 2, 2),
            (8, |l| (l / 2) * 2, 1),
            (8, |l| (l / 4) * 2, 1),
            (8, |l| (l / 16) * 2, 1),
        ];
        for (i, &(len, offset, want)) in cases.iter().enumerate() {
            let lanes: Vec<(u32, u32)> = (0..32).map(|l| (l, 4 * offset(l))).collect();
            assert_eq!(shared_wavefronts(&lanes, len), want, "case {i}: {len} bytes");
        }
    }

    #[test]
    fn bank_conflicts_and_broadcasts() {
        let lanes = |f: &dyn Fn(u32) -> u32| (0..32).map(|l| (l, f(l))).collect::<Vec<_>>();
        assert_eq!(shared_wavefronts(&lanes(&|l| 4 * l), 4), 1, "a row: 32 banks");
        assert_eq!(shared_wavefronts(&lanes(&|_| 64), 4), 1, "one word: a broadcast");
        assert_eq!(shared_wavefronts(&lanes(&|l| 128 * l), 4), 32, "a column of a 32-wide tile");
        assert_eq!(shared_wavefronts(&lanes(&|l| 132 * l), 4), 1, "padded by one word");
        assert_eq!(shared_wavefronts(&lanes(&|l| 8 * l), 4), 2, "every other word: two-way");
        assert_eq!(shared_wavefronts(&lanes(&|l| 16 * l), 16), 4, "512 contiguous bytes");
    }
}

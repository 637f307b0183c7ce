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
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
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
    /// Block-wide barriers passed, counted once per block and barrier.
    pub barriers: u64,
    /// FP32 operations: an FMA counts 2, an add or multiply 1; a TF32 mma.sync m16n8k8 2·16·8·8.
    pub flops: u64,
    /// Instructions executed, counted once per warp and once per active thread.
    pub warp_instructions: u64,
    pub thread_instructions: u64,
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
        self.barriers += o.barriers;
        self.flops += o.flops;
        self.warp_instructions += o.warp_instructions;
        self.thread_instructions += o.thread_instructions;
    }

    /// Bytes of global memory the loads and stores touched, in whole sectors.
    pub fn global_bytes(&self) -> u64 {
        32 * (self.global_load_sectors + self.global_store_sectors + self.async_copy_sectors)
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

/// The wavefronts one warp-wide shared access of `len` bytes per lane costs, given each active
/// lane's byte offset (in lane order).
///
/// Words of 4 bytes: one pass per distinct word in the busiest bank. Wider accesses are
/// served a part of the warp at a time, as many lanes as fill 128 bytes: 16 for 8-byte words,
/// 8 for 16-byte ones. A part costs as many passes as the distinct words in its busiest bank,
/// and consecutive parts that ask for exactly the same words are served together.
pub fn shared_wavefronts(lanes: &[(u32, u32)], len: u32) -> u64 {
    if lanes.is_empty() {
        return 0;
    }
    let words = len.div_ceil(4).max(1);
    let part = (32 / words).max(1);
    let mut total = 0u64;
    let mut previous: Vec<u32> = Vec::new();
    let mut group = 0;
    while group < 32 {
        let mut wanted: Vec<u32> = lanes
            .iter()
            .filter(|(lane, _)| *lane >= group && *lane < group + part)
            .flat_map(|&(_, offset)| (0..words).map(move |w| offset / 4 + w))
            .collect();
        group += part;
        if wanted.is_empty() {
            continue;
        }
        wanted.sort_unstable();
        wanted.dedup();
        if wanted == previous {
            continue;
        }
        let mut per_bank = [0u32; 32];
        for w in &wanted {
            per_bank[(w % 32) as usize] += 1;
        }
        total += u64::from(*per_bank.iter().max().unwrap_or(&1));
        previous = wanted;
    }
    total
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

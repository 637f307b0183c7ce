//! The SM the replay runs warps on: its schedulers, the latency of each class of instruction,
//! the rates of the units they wait for, and what it holds at once. Each GPU's values, with
//! their sources, are in its profile ([`crate::profile`]).

/// One SM of a GPU, for the replay.
#[derive(Clone, Copy, Debug)]
pub struct Sm {
    /// Schedulers an SM has (each owns a quarter of the warps and issues at most one instruction
    /// a clock), and the instructions an SM issues a clock, sustained, when every warp is ready.
    pub schedulers: usize,
    pub issue: f64,
    /// Cycles from an instruction's issue to its result, by class.
    pub fp32: f64,
    pub alu: f64,
    pub slow: f64,
    pub param: f64,
    pub exchange: f64,
    pub shared: f64,
    pub l1_hit: f64,
    pub local_l1: f64,
    /// `mma.sync` m16n8k8 (TF32): its latency, and the FLOPs an SM does a clock.
    pub mma_sync: f64,
    pub mma_sync_rate: f64,
    /// wgmma: FLOPs (operations for INT8) an SM does a clock by operand kind, and the cycles
    /// from the tensor cores finishing a product to its group's wait seeing it.
    pub wgmma_tf32: f64,
    pub wgmma_half: f64,
    pub wgmma_int8: f64,
    pub wgmma_latency: f64,
    /// A `bar.sync`: from the last warp's arrival to the warps going on, a base and a warp.
    pub barrier: f64,
    pub barrier_per_warp: f64,
    /// An mbarrier: from an arrival to the phase's completion being seen by a waiter.
    pub mbarrier: f64,
    /// The copy engine: from a TMA copy's issue to its first bytes landing.
    pub tma: f64,
    /// The L1's data path: shared wavefronts a clock, global requests a clock, and the further
    /// 128-byte lines of a request a clock.
    pub wavefronts: f64,
    pub requests: f64,
    pub lines: f64,
    /// The L1's bytes (256 KiB shared with shared memory), what a block's shared memory takes of
    /// it is rounded up to the carve-outs.
    pub l1_bytes: u32,
    /// The most bytes a clock one SM takes from the L2.
    pub l2_rate_one_sm: f64,
    /// What an SM holds at once: registers, warps, bytes of shared memory, blocks; and the
    /// sizes (KiB) the L1 may give shared memory (its carve-outs).
    pub registers: u32,
    pub warps: u32,
    pub shared_bytes: u32,
    pub blocks: u32,
    pub carveouts: &'static [u32],
}

impl Sm {
    /// The L1 left as a cache where `resident` blocks of `shared` bytes each hold shared memory:
    /// the carve-out is the smallest that holds them.
    pub fn l1_cache(&self, resident: u32, shared: u32) -> u32 {
        let need = resident.saturating_mul(shared + 1024);
        let largest = self.carveouts.last().copied().unwrap_or(0) * 1024;
        let carve = self.carveouts.iter().map(|k| k * 1024).find(|&c| c >= need).unwrap_or(largest);
        self.l1_bytes.saturating_sub(carve)
    }

    /// The blocks of `threads` threads, `registers` registers a thread and `shared` bytes of
    /// shared memory an SM holds at once (registers given out 256 to a warp at a time, and 1 KiB
    /// of shared memory a block the system keeps).
    pub fn resident_blocks(&self, registers: u32, threads: u32, shared: u32) -> u32 {
        let warps = threads.div_ceil(32).max(1);
        let per_warp = (registers.max(1) * 32).next_multiple_of(256);
        let by_registers = (self.registers / per_warp) / warps;
        let by_warps = self.warps / warps;
        let by_shared = self.shared_bytes / (shared + 1024);
        by_registers.min(by_warps).min(by_shared).min(self.blocks)
    }
}

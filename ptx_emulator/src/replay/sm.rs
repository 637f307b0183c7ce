//! The SM the replay runs warps on: its schedulers, the latency of each class of instruction,
//! and the rates of the units they wait for. Each constant names its source: a microbenchmark of
//! `calibration/throughput.cu` or `calibration/latency.cu` with its record under
//! `docs/src/results/runs/`, or, where none can measure it, a published figure or an estimate,
//! said so. Nothing here comes from the labs' timed runs, which the model is judged against.

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
    /// A load the L2 serves: idle, and while every SM streams from it.
    pub l2: f64,
    pub l2_loaded: f64,
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
    /// Bytes a clock the L2 gives all SMs together, and the most one SM takes.
    pub l2_rate: f64,
    pub l2_rate_one_sm: f64,
}

/// The H100 SXM's SM. "latency.cu" is `calibration/latency.cu`, its records
/// `2026-11-27-nvidia-h100-80gb-hbm3-model-latency.log` (the constants below) and
/// `2026-11-28-nvidia-h100-80gb-hbm3-model-latency.log` (the same again with the launch's, where
/// the L2 chase took 275.7); "throughput.cu" is
/// `calibration/throughput.cu`, its record `2026-11-27-nvidia-h100-80gb-hbm3-model-constants-2.log`.
pub const H100_SM: Sm = Sm {
    schedulers: 4,         // published
    issue: 3.38,           // throughput.cu `outer`: 3.38–3.39 instructions a clock
    fp32: 4.1,             // latency.cu: ffma and fadd dependent, 4.1
    alu: 4.1,              // latency.cu: imad, iadd, lop3 and shf dependent, 4.1 each
    slow: 22.1,            // latency.cu: cvt.rna.tf32.f32 dependent (three machine instructions), 22.1
    param: 4.1,            // estimate: ptxas folds parameters into constant operands (an ALU's latency)
    exchange: 26.0,        // latency.cu: shfl.sync dependent, 26.0
    shared: 23.0,          // latency.cu: shared load dependent, 23.0 (23.4 at 128 bits)
    l1_hit: 32.0,          // latency.cu: L1 hit dependent, 32.0
    local_l1: 29.0,        // latency.cu: local memory dependent (L1), 29.0
    l2: 284.0,             // latency.cu: L2 hit dependent, 283.8–284.3
    l2_loaded: 435.0,      // throughput.cu `chase_loaded`: 434 and 436 while every SM streams the L2
    mma_sync: 24.4,        // latency.cu: mma.sync m16n8k8 tf32 dependent, 24.4
    mma_sync_rate: 1350.0, // throughput.cu `mma_sync`: 1348–1351 FLOPs a clock
    wgmma_tf32: 2048.0,    // published: 494.7 TFLOP/s dense at 1830 MHz over 132 SMs (latency.cu: 2038)
    wgmma_half: 4096.0,    // published: 989.4 TFLOP/s dense
    wgmma_int8: 8192.0,    // published: 1978.9 TOPS dense
    wgmma_latency: 60.0,   // latency.cu: a round less the pipe's cycles, 118.0 − 64.3 and 195.3 − 127.9
    barrier: 12.3,         // latency.cu: bar.sync, 28.3 cycles at 8 warps and 76.3 at 32:
    barrier_per_warp: 2.0, //   12.3 + 2.0 a warp
    mbarrier: 120.0,       // latency.cu: mbarrier arrive + try_wait, 120.1 a round
    tma: 273.0,            // latency.cu: 1 KiB bulk copy + mbarrier, 425.5 a round, less the
    //                         shared read (23.0), the bytes (9.4) and the mbarrier (120.0)
    wavefronts: 1.0,           // published: 128 bytes a clock an SM
    requests: 0.93,            // throughput.cu `l1_requests`: 0.929 a clock
    lines: 1.0,                // throughput.cu `l1_lines`: 0.995–0.999 a clock
    l1_bytes: 256 * 1024,      // published
    l2_rate: 7.07e12 / 1.98e9, // throughput.cu `bulk`: the copy engine reads 7072–7395 GB/s at 1980 MHz
    l2_rate_one_sm: 109.0,     // latency.cu: bulk copies of 1 and 16 KiB, (565.6 − 425.5) clocks for 15 KiB
};

impl Sm {
    /// The L1 left as a cache where `resident` blocks of `shared` bytes each hold shared memory:
    /// the carve-out is the smallest of the H100's that holds them (published sizes, KiB).
    pub fn l1_cache(&self, resident: u32, shared: u32) -> u32 {
        const CARVEOUTS: [u32; 10] = [0, 8, 16, 32, 64, 100, 132, 164, 196, 228];
        let need = resident.saturating_mul(shared + 1024);
        let carve = CARVEOUTS.iter().map(|k| k * 1024).find(|&c| c >= need).unwrap_or(228 * 1024);
        self.l1_bytes.saturating_sub(carve)
    }
}

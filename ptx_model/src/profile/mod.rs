//! What the time model knows of a GPU, one profile a GPU and every number of that GPU in it:
//! its SMs and clocks, one SM's limits, latencies and rates ([`Sm`]), and the memory system the
//! SMs share ([`Memory`]). Each constant names its source: a microbenchmark of
//! `ptx_emulator/calibration/` run on that GPU, with its record under `docs/src/results/runs/`,
//! or, where none can measure it, a published figure or an estimate, said so. Nothing here comes
//! from the labs' timed runs, which the model is judged against.
//!
//! Records named below: "latency.cu" (`calibration/latency.cu`), "throughput.cu"
//! (`calibration/throughput.cu`), "loaded.cu" (`calibration/loaded.cu`), each run twice by
//! `scripts/gpu-model-runs.sh`. The H100's: `2026-11-27-nvidia-h100-80gb-hbm3-model-latency.log`,
//! `…-model-constants-2.log`. The H200's: `2026-11-28-nvidia-h200-model-latency.log`,
//! `…-model-constants.log`, `…-model-loaded-2.log`. A GPU none of these ran on (the H100 PCIe)
//! takes its figures from NVIDIA's spec sheet, and what no spec sheet gives from the nearest GPU
//! measured, each said so.
//!
//! A GPU is one [`Profile`], chosen once (`--gpu`, or by the name of the GPU a run opens) and
//! passed to everything that depends on the GPU; [`PROFILES`] lists them. Adding a GPU is adding
//! its profile there, and, where cuBLAS was run on it, the record its [`Cublas`] rates come from.

use ptx_emulator::Machine;

/// One GPU as the time model sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Profile {
    /// The name the report and `--gpu` use, and the name the driver gives such a GPU.
    pub name: &'static str,
    pub device_name: &'static str,
    /// What the emulator itself copies of the GPU: its SMs and a launch's limits.
    pub machine: Machine,
    /// The SM clock (MHz) held under SIMT work, and under the tensor cores at full rate: a GPU
    /// at its power limit lowers its clock (see [`Profile::clock_mhz`]).
    pub simt_mhz: f64,
    pub tensor_mhz: f64,
    /// The shortest time a launch takes, back to back (seconds), and what a launch adds to a
    /// kernel's own time where the kernel is longer.
    pub launch: f64,
    pub launch_gap: f64,
    /// Cycles the tensor cores stand idle between two wgmma of a warpgroup where ptxas has
    /// serialised them: the pipeline's drain, which back-to-back wgmma hide.
    pub wgmma_drain: f64,
    pub sm: Sm,
    pub memory: Memory,
    /// cuBLAS's rates recorded on this GPU, that a prediction is set beside; None for a GPU
    /// cuBLAS was never run on (a report says so where the share would be).
    pub cublas: Option<Cublas>,
}

/// cuBLAS's rates (GFLOP/s) recorded on a GPU at square sizes: (side, SGEMM, TF32 tensor-op
/// math), and the record they come from (under `docs/src/results/`; a test holds them to it).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cublas {
    pub record: &'static str,
    pub rates: &'static [(usize, f64, f64)],
}

/// The memory the SMs share: the L2 and DRAM.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Memory {
    /// The L2's bytes.
    pub l2_size: u64,
    /// Bytes a second the L2 delivers to the SMs and DRAM to the L2, the whole GPU.
    pub l2_rate: f64,
    pub dram_rate: f64,
    /// A load's cycles from its issue to its data, served by the L2 and by DRAM, at the loads
    /// the rest of the GPU puts on them.
    pub l2_latency: Curve,
    pub dram_latency: Curve,
}

/// A latency measured at several loads: (bytes a clock the whole GPU moves, cycles), the loads
/// rising. Between two points the latency is read on the straight line joining them; beyond the
/// last, on the last segment's line, up to the longest latency measured at any load.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Curve {
    pub points: &'static [(f64, f64)],
    pub most: f64,
}

impl Curve {
    /// The latency at `load` bytes a clock.
    pub fn at(&self, load: f64) -> f64 {
        let p = self.points;
        match p {
            [] => 0.0,
            [(_, y)] => *y,
            _ => {
                let i = p.iter().position(|&(x, _)| x > load).unwrap_or(p.len() - 1).clamp(1, p.len() - 1);
                let ((x0, y0), (x1, y1)) = (p[i - 1], p[i]);
                let y = y0 + (y1 - y0) * (load.max(0.0) - x0) / (x1 - x0);
                y.clamp(p[0].1, self.most.max(p[p.len() - 1].1))
            }
        }
    }

    /// The latency of an idle memory.
    pub fn idle(&self) -> f64 {
        self.points.first().map_or(0.0, |p| p.1)
    }
}

impl Profile {
    /// The clock a kernel holds: the SIMT clock, lowered toward the tensor clock in proportion
    /// to the share of the time the tensor cores are busy (`busy` in 0..=1).
    pub fn clock_mhz(&self, busy: f64) -> f64 {
        self.simt_mhz - (self.simt_mhz - self.tensor_mhz) * busy.clamp(0.0, 1.0)
    }

    /// The L2's bytes a clock of the SMs' (at the SIMT clock), the whole GPU.
    pub fn l2_bytes_a_clock(&self) -> f64 {
        self.memory.l2_rate / (self.simt_mhz * 1e6)
    }
}

/// The GPUs the model has a profile of: the one list the command line, the report's times on
/// each GPU and the tests read.
pub const PROFILES: [&Profile; 3] = [&H100, &H200, &H100_PCIE];

/// The profile of `name` (`h100`, `H200`, or the driver's name of such a GPU), if there is one:
/// a profile whose short or driver's name is `name` (in any case) first; else the one whose short
/// name `name` holds, the longest such name where several are held (so that a GPU whose name
/// holds another's, an "H100 PCIe" beside the "H100", is never taken for the other).
pub fn by_name(name: &str) -> Option<&'static Profile> {
    by_name_among(&PROFILES, name)
}

fn by_name_among(profiles: &[&'static Profile], name: &str) -> Option<&'static Profile> {
    let n = name.trim().to_ascii_lowercase();
    let exact =
        profiles.iter().find(|p| n == p.name.to_ascii_lowercase() || n == p.device_name.to_ascii_lowercase());
    exact
        .or_else(|| {
            profiles.iter().filter(|p| n.contains(&p.name.to_ascii_lowercase())).max_by_key(|p| p.name.len())
        })
        .copied()
}

/// The profile the command line chooses where `--gpu` names none (read there alone: everything
/// below the choice is handed the profile chosen).
pub const DEFAULT: &Profile = &H100;

/// The names of the known profiles, for a sentence: "H100, H200 or H100-PCIe".
pub fn known_names() -> String {
    let names: Vec<&str> = PROFILES.iter().map(|p| p.name).collect();
    match names.split_last() {
        Some((last, [])) => (*last).to_owned(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// The most shared memory a block of a Hopper GPU may opt in to: 227 KiB (published). The
/// emulator's launches and a step's checks made before a GPU is opened both read it.
pub const HOPPER_BLOCK_SHARED: u32 = 232_448;

/// The dense TF32 FLOPs a Hopper SM's tensor cores do a clock: the H100's SM's (published),
/// which a GPU run's peak reads too.
pub const HOPPER_TF32_RATE: f64 = H100.sm.wgmma_tf32_rate;

/// The drain of a serialised wgmma, in cycles: an estimate, not yet a measurement (a prediction
/// that counts it says so). It takes the tensor cores' pipeline to be as deep as one of the labs'
/// wgmma is long: an m64n256k8 TF32 product is 262,144 FLOPs, 128 cycles at 2048 a clock.
pub const WGMMA_DRAIN_ESTIMATE: f64 = 128.0;

/// The H100 SXM (80 GB HBM3). Its latencies under load have not been measured on an H100 by
/// `loaded.cu` yet: its L2 curve joins its two measured points, and its DRAM curve is the H200's
/// (the same SMs and L2 design, HBM3e for HBM3), as the book's appendix says.
pub const H100: Profile = Profile {
    name: "H100",
    device_name: "NVIDIA H100 80GB HBM3",
    machine: Machine {
        sms: 132,                        // published
        max_threads: 1024,               // published: a block's threads
        max_shared: HOPPER_BLOCK_SHARED, // published: 227 KiB a block
    },
    simt_mhz: 1980.0,    // measured: cuBLAS SGEMM and the FMA microbenchmarks hold 1959–1987
    tensor_mhz: 1420.0,  // measured: cuBLAS TF32 at 8192³ holds 1245–1515 at 700 W, 1424 on average
    launch: 4.0e-6,      // latency.cu: 3.14, 3.19, 4.61 and 5.03 µs a launch of an empty kernel
    launch_gap: 1.96e-6, // latency.cu `spin`: 1.88–1.96 µs beyond 10 and 50 µs kernels
    wgmma_drain: WGMMA_DRAIN_ESTIMATE, // estimate (see WGMMA_DRAIN_ESTIMATE)
    sm: Sm {
        schedulers: 4,            // published
        issue: 3.38,              // throughput.cu `outer`: 3.38–3.39 instructions a clock
        fp32: 4.1,                // latency.cu: ffma and fadd dependent, 4.1
        alu: 4.1,                 // latency.cu: imad, iadd, lop3 and shf dependent, 4.1 each
        slow: 22.1,               // latency.cu: cvt.rna.tf32.f32 dependent (three machine instructions)
        param: 4.1,               // estimate: ptxas folds parameters into constant operands
        exchange: 26.0,           // latency.cu: shfl.sync dependent, 26.0
        shared: 23.0,             // latency.cu: shared load dependent, 23.0 (23.4 at 128 bits)
        l1_hit: 32.0,             // latency.cu: L1 hit dependent, 32.0
        local_l1: 29.0,           // latency.cu: local memory dependent (L1), 29.0
        mma_sync_latency: 24.4,   // latency.cu: mma.sync m16n8k8 tf32 dependent, 24.4
        mma_sync_rate: 1350.0,    // throughput.cu `mma_sync`: 1348–1351 FLOPs a clock
        wgmma_tf32_rate: 2048.0,  // published: 494.7 TFLOP/s dense at 1830 MHz over 132 SMs
        wgmma_16bit_rate: 4096.0, // published: 989.4 TFLOP/s dense
        wgmma_int8_rate: 8192.0,  // published: 1978.9 TOPS dense
        wgmma_latency: 60.0,      // latency.cu: a round less the pipe's cycles, 118.0 − 64.3, 195.3 − 127.9
        barrier: 12.3,            // latency.cu: bar.sync, 28.3 cycles at 8 warps and 76.3 at 32:
        barrier_per_warp: 2.0,    // latency.cu, those runs: 12.3 + 2.0 a warp
        mbarrier: 120.0,          // latency.cu: mbarrier arrive + try_wait, 120.1 a round
        tma: 273.0,               // latency.cu: 1 KiB bulk copy + mbarrier, 425.5 a round, less the
        //                        shared read (23.0), the bytes (9.4) and the mbarrier (120.0)
        l1_wavefront_rate: 1.0, // published: 128 bytes a clock an SM
        l1_request_rate: 0.93,  // throughput.cu `l1_requests`: 0.929 a clock
        l1_line_rate: 1.0,      // throughput.cu `l1_lines`: 0.995–0.999 a clock
        l1_bytes: 256 * 1024,   // published
        l2_rate_one_sm: 109.0,  // latency.cu: bulk copies of 1 and 16 KiB, (565.6 − 425.5) clocks for 15 KiB
        registers: 65_536,      // published: per SM
        warps: 64,              // published: resident warps per SM
        shared_bytes: 233_472,  // published: 228 KiB of shared memory per SM
        blocks: 32,             // published: resident blocks per SM
        carveouts: &[0, 8, 16, 32, 64, 100, 132, 164, 196, 228], // published: KiB
    },
    memory: Memory {
        l2_size: 50 << 20,  // published
        l2_rate: 7.07e12,   // throughput.cu `bulk`: the copy engine reads 7041–7107 GB/s
        dram_rate: 3.09e12, // throughput.cu: a 2 GiB read, 3087–3099 GB/s
        // latency.cu: the L2 chase, 283.8–284.3 idle; throughput.cu `chase_loaded`: 434 and 436
        // while four blocks of 512 an SM stream the L2, a load taken as the L2's full rate (the
        // bandwidth that run carried was not recorded).
        l2_latency: Curve { points: &[(0.0, 284.0), (7.07e12 / 1.98e9, 435.0)], most: 435.0 },
        dram_latency: H200_DRAM_LATENCY, // estimate: the H200's, measured by loaded.cu
    },
    cublas: Some(Cublas {
        record: "runs/2026-11-26-nvidia-h100-80gb-hbm3-reference.md",
        rates: &[
            (256, 3950.0, 6070.0),
            (512, 18761.0, 34473.0),
            (1024, 39341.0, 146436.0),
            (2048, 49989.0, 352275.0),
            (4096, 51620.0, 363170.0),
            (8192, 51808.0, 372593.0),
        ],
    }),
};

/// loaded.cu's DRAM chase on the H200 at rising loads (bytes a clock of the whole GPU, cycles),
/// the mean of the two runs of `2026-11-28-nvidia-h200-model-loaded-2.log`, the first point with
/// no stream beside the chase. Past 2,303 bytes a clock the stream's rate stays at DRAM's
/// (2,331–2,341) while its loads queue longer, up to 2,257 cycles.
const H200_DRAM_LATENCY: Curve = Curve {
    points: &[
        (0.0, 673.7),
        (276.8, 717.2),
        (553.0, 780.1),
        (1104.6, 939.9),
        (1800.9, 1314.6),
        (2191.0, 1330.8),
        (2303.1, 1546.6),
    ],
    most: 2256.8,
};

/// The H200 (141 GB HBM3e): the H100's SMs, a larger L2 and faster DRAM, each figure measured on
/// an H200.
pub const H200: Profile = Profile {
    name: "H200",
    device_name: "NVIDIA H200",
    machine: Machine {
        sms: 132,                        // cudaGetDeviceProperties on the H200
        max_threads: 1024,               // published: a block's threads
        max_shared: HOPPER_BLOCK_SHARED, // published: 227 KiB a block
    },
    simt_mhz: 1980.0, // throughput.cu: nvidia-smi under cuBLAS SGEMM at 8192³, 1980 throughout
    tensor_mhz: 1525.0, // throughput.cu: under cuBLAS TF32 at 8192³, 1440–1575, 1525 on average
    launch: 4.4e-6,   // throughput.cu: 5.01 and 3.77 µs a launch of an empty kernel
    launch_gap: 1.34e-6, // latency.cu `spin`: 1.32–1.36 µs beyond 10 and 50 µs kernels
    wgmma_drain: WGMMA_DRAIN_ESTIMATE, // estimate (see WGMMA_DRAIN_ESTIMATE)
    sm: Sm {
        tma: 258.0, // latency.cu: 1 KiB bulk copy + mbarrier, 410.5 a round, less the
        //                        shared read (23.0), the bytes (9.4) and the mbarrier (120.0)
        l2_rate_one_sm: 107.0, // latency.cu: (553.9 − 410.5) clocks for 15 KiB
        // Every other latency and rate of latency.cu and throughput.cu measured the same on the
        // H200 as on the H100 to the figure kept (FMA 4.1, shared 23.0, L1 32.0, local 29.0,
        // shuffle 26.0, mma.sync 24.4 and 1348–1352 a clock, wgmma rounds 118.0 and 195.3,
        // bar.sync 28.3 and 76.3, mbarrier 120.1, issue 3.38–3.39, requests 0.929, lines
        // 0.995–0.999).
        ..H100.sm
    },
    memory: Memory {
        l2_size: 60 << 20,  // cudaGetDeviceProperties on the H200: 60 MiB
        l2_rate: 7.91e12,   // throughput.cu `bulk`: the copy engine reads 7872–7948 GB/s
        dram_rate: 4.42e12, // throughput.cu: a 2 GiB read, 4415 and 4419 GB/s
        l2_latency: Curve { points: H200_L2_POINTS, most: 806.1 }, // loaded.cu (see H200_L2_POINTS)
        dram_latency: H200_DRAM_LATENCY, // loaded.cu (see H200_DRAM_LATENCY)
    },
    cublas: Some(Cublas {
        record: "nvidia-h200.md",
        rates: &[
            (256, 4104.0, 6187.0),
            (512, 18800.0, 34706.0),
            (1024, 38116.0, 160084.0),
            (2048, 50267.0, 351563.0),
            (4096, 50974.0, 358816.0),
            (8192, 51102.0, 373508.0),
        ],
    }),
};

/// The H100 PCIe (80 GB HBM2e): the H100's SMs, fewer of them at lower clocks, and slower DRAM.
/// No calibration ran on one: its SMs, clocks, L2 and DRAM are NVIDIA's spec-sheet figures
/// (the H100 Tensor Core GPU datasheet), and what no spec sheet gives (latencies, the rates of
/// the SM's units, the launch) is the H100 SXM's, an estimate each. No cuBLAS run on an H100
/// PCIe is recorded, so a prediction for it is set beside none.
pub const H100_PCIE: Profile = Profile {
    name: "H100-PCIe",
    device_name: "NVIDIA H100 PCIe",
    machine: Machine {
        sms: 114,                        // spec sheet: 114 SMs
        max_threads: 1024,               // published: a block's threads
        max_shared: HOPPER_BLOCK_SHARED, // published: 227 KiB a block
    },
    simt_mhz: 1755.0, // spec sheet: 51.2 TFLOP/s FP32 over 114 SMs of 256 FLOPs a clock
    // estimate: the spec sheet's TF32 clock (378 TFLOP/s dense over 114 SMs of 2048 a clock,
    // 1620 MHz) lowered as the H100 SXM's measured tensor clock is below its own (1420 of 1830)
    tensor_mhz: 1257.0,
    launch: 4.0e-6,                    // estimate: the H100 SXM's, measured by latency.cu
    launch_gap: 1.96e-6,               // estimate: the H100 SXM's, measured by latency.cu
    wgmma_drain: WGMMA_DRAIN_ESTIMATE, // estimate (see WGMMA_DRAIN_ESTIMATE)
    sm: H100.sm, // estimate: the H100 SXM's SM, measured by latency.cu and throughput.cu
    memory: Memory {
        l2_size: 50 << 20,                  // spec sheet: 50 MB
        l2_rate: 6.27e12, // estimate: the H100 SXM's measured 7.07 TB/s at the lower clock, 1755 of 1980 MHz
        dram_rate: 2.0e12, // spec sheet: 2 TB/s of HBM2e, a peak (the H100 SXM reads 92% of its own)
        l2_latency: H100.memory.l2_latency, // estimate: the H100 SXM's, measured by latency.cu and throughput.cu
        dram_latency: H200_DRAM_LATENCY,    // estimate: the H200's, measured by loaded.cu
    },
    cublas: None, // no cuBLAS run on an H100 PCIe is recorded
};

/// loaded.cu's L2 chase on the H200: idle (279.4 and 279.5, `…-model-loaded.log`), then beside
/// a stream of rising rate, the mean of the two runs of `…-model-loaded-2.log` (whose four loads
/// in flight a thread reach the L2's rate; the first version's one at a time queued on the stream's
/// own polling). Past 2,962 bytes a clock the rate stays at 2,884–2,902 while the loads queue
/// longer, up to 806 cycles.
const H200_L2_POINTS: &[(f64, f64)] =
    &[(0.0, 279.5), (557.4, 314.5), (1110.8, 351.0), (2214.0, 445.5), (2838.4, 533.3), (2962.5, 568.3)];

#[cfg(test)]
mod tests;

/// One SM of a GPU: its schedulers, the latency of each class of instruction, the rates of the
/// units they wait for, and what it holds at once. The replay runs warps on it; the occupancy
/// calculator reads its limits.
#[derive(Clone, Copy, Debug, PartialEq)]
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
    pub mma_sync_latency: f64,
    pub mma_sync_rate: f64,
    /// wgmma: FLOPs (operations for INT8) an SM does a clock by operand kind, and the cycles
    /// from the tensor cores finishing a product to its group's wait seeing it.
    pub wgmma_tf32_rate: f64,
    pub wgmma_16bit_rate: f64,
    pub wgmma_int8_rate: f64,
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
    pub l1_wavefront_rate: f64,
    pub l1_request_rate: f64,
    pub l1_line_rate: f64,
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

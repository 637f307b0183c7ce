//! The report pinned: a GPU run's, an emulated run's and the CPU step's report, each built from
//! fixed facts and a verdict on fixed inputs, rendered and compared whole with the text under
//! `tests/golden/`. The records, the book's figure selectors and the GPU scripts read these
//! lines; a change of their format must be made here on purpose, not found in the next record.
//!
//! After an intended change: `UPDATE_GOLDEN=1 cargo test -p common --test report_golden`, then
//! read the diff of `tests/golden/` and update `docs/figures.txt`'s selectors that read the line.

use std::path::PathBuf;

use common::clock::Held;
use common::emulated::Traffic;
use common::gpu::{DeviceInfo, Limits, Resources};
use common::hooks::Paths;
use common::report::{Device, Emulation, KernelFacts, LastLaunch, Report};
use common::timing::Stats;
use common::verify::{self, Precision};
use common::{Geometry, Inputs, Param, Params, Shape, reference};

/// A 64×64×64 product of the default inputs, C the reference rounded to f32 but for one element
/// nudged by two units in the last place: a verdict with a worst element to show.
fn verdict(precision: Precision) -> common::verify::Verdict {
    let shape = Shape::new(64, 64, 64).unwrap();
    let want = reference::cpu(&Inputs::random(shape, 42));
    let mut c: Vec<f32> = want.c.iter().map(|&v| v as f32).collect();
    c[65] = f32::from_bits(c[65].to_bits() + 2);
    verify::verify(shape, &c, &want, precision)
}

fn h100() -> DeviceInfo {
    DeviceInfo {
        ordinal: 0,
        name: "NVIDIA H100 80GB HBM3".into(),
        compute_capability: (9, 0),
        sms: 132,
        clock_mhz: 1980,
        limits: Limits::SM90,
        smem_per_sm: 233_472,
        regs_per_sm: 65_536,
        max_threads_per_sm: 2048,
        max_blocks_per_sm: 32,
        l2_bytes: 50 << 20,
        total_mem: 80 << 30,
        driver_version: 13000,
        nvml: None,
    }
}

fn facts(adds: Option<(&'static str, String)>) -> KernelFacts {
    KernelFacts {
        params: Params::defaults(&[
            Param { name: "TILE", default: 32, help: "" },
            Param { name: "UNROLL", default: 32, help: "" },
        ]),
        geometry: Geometry { grid: (2, 2, 1), block: (32, 32, 1), dynamic_smem: 0, whole_rows: None },
        resources: Resources {
            registers: 32,
            static_smem: 8192,
            dynamic_smem: 0,
            local_bytes: 0,
            spill_bytes: 0,
            threads_per_block: 1024,
            blocks_per_sm: 2,
            occupancy: 1.0,
            resident_blocks: 264,
        },
        padded: None,
        why: Some("tile 128×128, no split: 1024 tiles fill 132 SMs in 7.8 waves".into()),
        predicted_us: Some(2890.0),
        adds,
    }
}

fn stats(median_ms: f64, sm_mhz: f64) -> Stats {
    let held = Some(Held {
        sm_mhz,
        watts: 690.0,
        readings: 100,
        joules: Some(690.0 * median_ms * 1e-3),
        no_energy: None,
    });
    Stats { median_ms, min_ms: median_ms * 0.98, max_ms: median_ms * 1.05, samples: 240, batch: 20, held }
}

/// The GPU report at 4096³ (rates as large as a real run's): cuBLAS SGEMM and TF32 beside the
/// kernel, a step's choice and model, its extra line, the FP32 path's line, a verdict (of a
/// 64³ product), the next launch, the baselines' errors and a note.
fn gpu_report() -> Report {
    Report {
        step: "step04_tiled".into(),
        device: Device::Gpu(h100()),
        shape: Shape::new(4096, 4096, 4096).unwrap(),
        inputs: "uniform, seed 42".into(),
        kernel: Some(facts(Some(("schedule", "66 clusters of 2 persistent blocks".into())))),
        time: stats(2.931, 1980.0),
        cublas: Some(stats(2.663, 1980.0)),
        cublas_tf32: Some(stats(0.372, 1425.0)),
        precision: Precision::Fp32,
        verdict: Some(verdict(Precision::Fp32)),
        last_launch: Some(LastLaunch::Same),
        baseline_errors: vec![("cuBLAS SGEMM", 5.7e-7), ("cuBLAS TF32", 2.6e-4)],
        notes: vec!["cuBLAS (libcublas) was not found: a note for the test".into()],
        paths: Some((Paths { own: "split in two".into(), ..Paths::new(3, 1, Some(0.004)) }, 0.02)),
    }
}

/// The emulated report: the traffic line of the step's kernel (shared, copy engine, multicast,
/// stores, wgmma), another kernel's line, the first round's tiles, and the predicted time.
fn emulated_report() -> Report {
    let traffic = Traffic {
        global_load_requests: 1024,
        global_load_sectors: 4096,
        global_store_requests: 128,
        global_store_sectors: 512,
        shared_load_requests: 2048,
        shared_load_wavefronts: 3072,
        shared_store_requests: 256,
        shared_store_wavefronts: 256,
        bulk_load_requests: 80,
        bulk_load_bytes: 524_288,
        bulk_load_sectors: 16_384,
        multicast_load_bytes: 262_144,
        multicast_bytes: 262_144,
        multicast_sectors: 8192,
        bulk_store_requests: 64,
        bulk_store_bytes: 262_144,
        sm_sectors_most: 12_288,
        sm_stores_most: 131_072,
        first_tiles: 4,
        wgmma_instructions: 512,
        barriers: 64,
        flops: 33_554_432,
        wgmma_tf32_flops: 33_554_432,
        l1_miss_sectors: 2048,
        load_phases: 8,
        blocks: 4,
        most_block_instructions: 25_000,
        most_block_wgmma_tf32_flops: 8_388_608,
        warp_instructions: 100_000,
        thread_instructions: 3_200_000,
        ..Traffic::default()
    };
    let other =
        Traffic { global_load_requests: 16, global_load_sectors: 64, blocks: 1, ..Traffic::default() };
    Report {
        device: Device::Emulated(Box::new(Emulation {
            traffic,
            others: vec![("split_a".into(), other)],
            seconds: 1.25,
            workers: 2,
            arch: "compute_90a",
            serialized_wgmma: false,
            recorded: Default::default(),
        })),
        shape: Shape::new(64, 64, 64).unwrap(),
        kernel: Some(KernelFacts { why: None, predicted_us: None, ..facts(None) }),
        time: Stats { median_ms: 0.0, min_ms: 0.0, max_ms: 0.0, samples: 0, batch: 1, held: None },
        cublas: None,
        cublas_tf32: None,
        precision: Precision::Tf32,
        verdict: Some(verdict(Precision::Tf32)),
        last_launch: None,
        baseline_errors: vec![],
        notes: vec![],
        paths: None,
        ..gpu_report()
    }
}

/// Step 01's report: the CPU, no kernel, no cuBLAS.
fn cpu_report() -> Report {
    Report {
        step: "step01_cpu_naive".into(),
        device: Device::Cpu,
        shape: Shape::new(64, 64, 64).unwrap(),
        kernel: None,
        time: Stats { median_ms: 12.5, min_ms: 12.0, max_ms: 13.0, samples: 40, batch: 1, held: None },
        cublas: None,
        cublas_tf32: None,
        last_launch: None,
        baseline_errors: vec![],
        notes: vec![],
        paths: None,
        ..gpu_report()
    }
}

fn golden(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests").join("golden").join(format!("{name}.txt"))
}

/// The report rendered equals its golden text, line for line (or, with UPDATE_GOLDEN set,
/// becomes it).
fn assert_golden(name: &str, report: &Report) {
    let got = report.to_string();
    let path = golden(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (UPDATE_GOLDEN=1 writes it)", path.display()));
    for (i, (g, w)) in got.lines().zip(want.lines()).enumerate() {
        assert_eq!(g, w, "{name} report, line {}: the format changed (see this file's docs)", i + 1);
    }
    assert_eq!(got.lines().count(), want.lines().count(), "{name} report: lines added or lost\n{got}");
}

#[test]
fn the_gpu_report_is_pinned() {
    assert_golden("gpu", &gpu_report());
}

#[test]
fn the_emulated_report_is_pinned() {
    assert_golden("emulated", &emulated_report());
}

#[test]
fn the_cpu_report_is_pinned() {
    assert_golden("cpu", &cpu_report());
}

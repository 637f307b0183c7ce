//! The report pinned: a GPU run's, an emulated run's and the CPU step's report, each built from
//! fixed facts and a verdict on fixed inputs, rendered as text and as JSON and compared whole
//! with `tests/golden/NAME.txt` and `NAME.json`. The older records and their figure selectors
//! read the text's lines, the newer ones and the scripts the JSON's fields; a change of either
//! form must be made here on purpose, not found in the next record. The text and the JSON are
//! two views of one report: each figure the text shows is checked against the JSON's field.
//!
//! After an intended change: `UPDATE_GOLDEN=1 cargo test -p common --test report_golden`, then
//! read the diff of `tests/golden/`; update `docs/figures.txt`'s selectors that read the line or
//! the field (and raise `common::emit::SCHEMA` where a field was renamed or removed).

use std::path::PathBuf;

use serde_json::Value;

use common::clock::Held;
use common::emulated::Traffic;
use common::emulated::profile::{self, Profile};
use common::gpu::{GpuFacts, LaunchLimits, Resources};
use common::hooks::Paths;
use common::report::{EmulatorInfo, KernelFacts, NextProduct, RanOn, Report};
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

fn h100() -> GpuFacts {
    GpuFacts {
        ordinal: 0,
        name: "NVIDIA H100 80GB HBM3".into(),
        compute_capability: (9, 0),
        sms: 132,
        clock_mhz: 1980,
        limits: LaunchLimits::SM90,
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
            spill_stores: 0,
            spill_loads: 0,
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
/// 64³ product), the next product, the baselines' errors and a note.
fn gpu_report() -> Report {
    Report {
        step: "step04_tiled".into(),
        device: RanOn::Gpu(h100()),
        shape: Shape::new(4096, 4096, 4096).unwrap(),
        inputs: "uniform, seed 42".into(),
        kernel: Some(facts(Some(("schedule", "66 clusters of 2 persistent blocks".into())))),
        time: stats(2.931, 1980.0),
        cublas: Some(stats(2.663, 1980.0)),
        cublas_tf32: Some(stats(0.372, 1425.0)),
        precision: Precision::Fp32,
        verdict: Some(verdict(Precision::Fp32)),
        next_product: Some(NextProduct::Same),
        baseline_errors: vec![("cuBLAS SGEMM", 5.7e-7), ("cuBLAS TF32", 2.6e-4)],
        notes: vec!["cuBLAS (libcublas) was not found: a note for the test".into()],
        paths: Some((Paths { own: "split in two".into(), ..Paths::new(3, 1, Some(0.004)) }, 0.02)),
        predicted: None,
    }
}

/// A naive 64×64×64 product in PTX (a thread a C element, K loads of A and of B each), run once
/// on the emulator with its warps recorded: what the time model's replay runs on. The replay is
/// deterministic (its hits and misses are drawn from a hash), so its figures can be pinned.
fn recorded_launch(gpu: &Profile) -> Vec<common::emulated::Recorded> {
    use common::emulated::{Arg, Config, Emulator};
    const PTX: &str = "
.version 8.0
.target sm_90
.address_size 64
.visible .entry matmul(.param .u64 pa, .param .u64 pb, .param .u64 pc)
{
    .reg .pred %p<2>;
    .reg .b32 %r<12>;
    .reg .f32 %f<4>;
    .reg .b64 %rd<10>;
    ld.param.u64 %rd1, [pa];
    ld.param.u64 %rd2, [pb];
    ld.param.u64 %rd3, [pc];
    mov.u32 %r1, %ctaid.y;
    mov.u32 %r2, %tid.y;
    mad.lo.s32 %r3, %r1, 32, %r2;
    mov.u32 %r4, %ctaid.x;
    mov.u32 %r5, %tid.x;
    mad.lo.s32 %r6, %r4, 32, %r5;
    mul.lo.s32 %r7, %r3, 64;
    mov.u32 %r8, %r6;
    mov.u32 %r9, 0;
    mov.f32 %f1, 0f00000000;
LOOP:
    mul.wide.s32 %rd4, %r7, 4;
    add.s64 %rd5, %rd1, %rd4;
    ld.global.f32 %f2, [%rd5];
    mul.wide.s32 %rd6, %r8, 4;
    add.s64 %rd7, %rd2, %rd6;
    ld.global.f32 %f3, [%rd7];
    fma.rn.f32 %f1, %f2, %f3, %f1;
    add.s32 %r7, %r7, 1;
    add.s32 %r8, %r8, 64;
    add.s32 %r9, %r9, 1;
    setp.lt.s32 %p1, %r9, 64;
    @%p1 bra LOOP;
    mad.lo.s32 %r10, %r3, 64, %r6;
    mul.wide.s32 %rd8, %r10, 4;
    add.s64 %rd9, %rd3, %rd8;
    st.global.f32 [%rd9], %f1;
    ret;
}
";
    let mut m = Emulator::new(PTX, gpu.machine).expect("the PTX reads");
    let bytes = 64 * 64 * 4;
    let (a, b, c) = (m.alloc(bytes, "A"), m.alloc(bytes, "B"), m.alloc(bytes, "C"));
    m.record = true;
    let grid = Config { grid: (2, 2, 1), block: (32, 32, 1), dynamic_shared: 0, sanitize: false };
    m.launch("matmul", grid, &[Arg::Ptr(a), Arg::Ptr(b), Arg::Ptr(c)]).expect("the launch runs");
    let recorded = m.take_replays();
    assert!(!recorded.is_empty(), "the launch was recorded");
    recorded
}

/// The emulated report for `gpu`: the traffic line of the step's kernel (shared, copy engine,
/// multicast, stores, wgmma, the blocks dealt to `gpu`'s SMs), another kernel's line, the first
/// round's tiles, and the predicted time with the replay's figures (of [`recorded_launch`]) set
/// beside `gpu`'s cuBLAS record, or saying it has none.
fn emulated_report(gpu: &'static Profile) -> Report {
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
    let mut report = Report {
        device: RanOn::Emulated(Box::new(EmulatorInfo {
            traffic,
            others: vec![("split_a".into(), other)],
            seconds: 1.25,
            workers: 2,
            arch: "compute_90a",
            gpu,
            serialized_wgmma: false,
            recorded: std::sync::Arc::new(recorded_launch(gpu)),
            depths: None,
        })),
        shape: Shape::new(64, 64, 64).unwrap(),
        kernel: Some(KernelFacts { why: None, predicted_us: None, ..facts(None) }),
        time: Stats { median_ms: 0.0, min_ms: 0.0, max_ms: 0.0, samples: 0, batch: 1, held: None },
        cublas: None,
        cublas_tf32: None,
        precision: Precision::Tf32,
        verdict: Some(verdict(Precision::Tf32)),
        next_product: None,
        baseline_errors: vec![],
        notes: vec![],
        paths: None,
        ..gpu_report()
    }
    .with_prediction();
    // How long the replay took is this machine's, like the emulation's seconds above: fixed.
    let replay = report.predicted.as_mut().and_then(|p| p.prediction.replay.as_mut());
    replay.expect("the recorded launch was replayed").seconds = 0.0;
    report
}

/// Step 01's report: the CPU, no kernel, no cuBLAS.
fn cpu_report() -> Report {
    Report {
        step: "step01_cpu_naive".into(),
        device: RanOn::Cpu,
        shape: Shape::new(64, 64, 64).unwrap(),
        kernel: None,
        time: Stats { median_ms: 12.5, min_ms: 12.0, max_ms: 13.0, samples: 40, batch: 1, held: None },
        cublas: None,
        cublas_tf32: None,
        next_product: None,
        baseline_errors: vec![],
        notes: vec![],
        paths: None,
        ..gpu_report()
    }
}

fn golden(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests").join("golden").join(file)
}

/// The report rendered as text and as JSON (indented, as `--format json` prints it) equals its
/// golden files, line for line (or, with UPDATE_GOLDEN set, becomes them).
fn assert_golden(name: &str, report: &Report) {
    assert_golden_file(&format!("{name}.txt"), &report.to_string());
    assert_golden_file(&format!("{name}.json"), &format!("{}\n", common::emit::json_text(report, true)));
}

fn assert_golden_file(name: &str, got: &str) {
    let path = golden(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (UPDATE_GOLDEN=1 writes it)", path.display()));
    for (i, (g, w)) in got.lines().zip(want.lines()).enumerate() {
        assert_eq!(g, w, "{name}, line {}: the report's form changed (see this file's docs)", i + 1);
    }
    assert_eq!(got.lines().count(), want.lines().count(), "{name} report: lines added or lost\n{got}");
}

#[test]
fn the_gpu_report_is_pinned() {
    assert_golden("gpu", &gpu_report());
}

#[test]
fn the_emulated_report_is_pinned() {
    assert_golden("emulated", &emulated_report(&profile::H200));
}

/// An emulated run copies the GPU chosen, SMs and all: on the H100 PCIe's profile (spec-sheet
/// figures, 114 SMs, no cuBLAS record) its report deals the blocks to 114 SMs and says that
/// there is no cuBLAS rate to set the prediction beside.
#[test]
fn the_emulated_report_on_a_gpu_of_114_sms_is_pinned() {
    let report = emulated_report(&profile::H100_PCIE);
    let text = report.to_string();
    assert!(text.contains("blocks dealt to 114 SMs in turn"), "{text}");
    assert!(text.contains("no cuBLAS run on the H100-PCIe is recorded"), "{text}");
    assert_golden("emulated-h100-pcie", &report);
}

/// A scaled run of a long K, emulated at two shorter depths (its `scaled` line names them), and
/// one that emulated another launch in the launch's place (its prediction says for what).
#[test]
fn the_report_of_a_scaled_run_at_two_depths_is_pinned() {
    let mut report = emulated_report(&profile::H200);
    report.shape = Shape::new(64, 64, 4096).unwrap();
    if let RanOn::Emulated(e) = &mut report.device {
        (e.traffic.scaled_ran, e.traffic.scaled_of) = (3, 4);
        e.depths = Some([256, 512]);
    }
    if let Some(p) = &mut report.predicted {
        p.stand_in = Some("the launch without Stream-K's sharing");
    }
    let text = report.to_string();
    assert!(text.contains("at K = 256 and 512 (the launch planned for K = 4096)"), "{text}");
    assert!(text.contains(" for the launch without Stream-K's sharing · "), "{text}");
    assert_golden("emulated-depths", &report);
}

/// A step with an FP32 path whose rows all took it (step 09 below K = 256): the verdict says it
/// is the FP32 path's alone, and a note says the kernel did not run and why.
#[test]
fn the_report_where_the_kernel_did_not_run_is_pinned() {
    let why_all = Some("K = 129 is below 256, where the step starts splitting".to_owned());
    let paths = Paths { own: "split in two".into(), why_all, ..Paths::new(4096, 0, None) };
    let report = Report { paths: Some((paths, 0.0)), notes: vec![], ..gpu_report() };
    assert_golden("fp32-path-only", &report);
    let text = report.to_string();
    assert!(text.contains("verify   PASS (the FP32 path alone: the kernel did not run) · "), "{text}");
    assert!(
        text.contains("note     the kernel did not run: all 4096 of A's rows took the FP32 path"),
        "{text}"
    );
}

#[test]
fn the_cpu_report_is_pinned() {
    assert_golden("cpu", &cpu_report());
}

/// The text line whose label (`time`, `per element`, …) is `label`.
fn line<'a>(text: &'a str, label: &str) -> Option<&'a str> {
    text.lines().find(|l| l.trim_start().strip_prefix(label).is_some_and(|rest| rest.starts_with(' ')))
}

fn number(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("{v} is not a number"))
}

/// Each figure the text shows that the JSON holds, as the text prints it, beside the label of
/// the line it is on; the checks that fail, in words.
fn disagreements(text: &str, json: &Value) -> Vec<String> {
    let mut want: Vec<(&str, String)> = Vec::new();
    let s = &json["shape"];
    want.push(("shape", format!("M={} N={} K={}", s["m"], s["n"], s["k"])));
    want.push(("shape", format!("inputs {}", json["inputs"].as_str().unwrap())));
    if let Some(r) = json["kernel"]["resources"].as_object() {
        want.push(("kernel", format!("{} registers/thread", r["registers"])));
        want.push(("kernel", format!("resident blocks/SM: {}", r["blocks_per_sm"])));
    }
    let d = &json["derived"];
    if json["time"]["samples"].as_u64().unwrap() > 0 {
        want.push(("time", format!("{:.3} ms median", number(&json["time"]["median_ms"]))));
        want.push(("time", format!("{} samples", json["time"]["samples"])));
        want.push(("speed", format!("{} GFLOP/s", common::report::rate(number(&d["gflops"])))));
    }
    if !d["share_of_cublas_sgemm"].is_null() {
        want.push(("speed", format!("{:.1}% of cuBLAS SGEMM", number(&d["share_of_cublas_sgemm"]))));
    }
    if !d["share_of_fp32_peak"].is_null() {
        want.push(("speed", format!("{:.1}% of FP32 peak", number(&d["share_of_fp32_peak"]))));
    }
    if !d["share_of_cublas_sgemm_per_clock"].is_null() {
        let per_clock = number(&d["share_of_cublas_sgemm_per_clock"]);
        want.push(("clock", format!("cuBLAS SGEMM {:.0} MHz", number(&json["cublas"]["held"]["sm_mhz"]))));
        want.push(("clock", format!("{per_clock:.1}% of its rate per clock")));
    }
    if let Some(held) = json["time"]["held"].as_object() {
        want.push((
            "clock",
            format!("SM {:.0} MHz, {:.0} W", number(&held["sm_mhz"]), number(&held["watts"])),
        ));
    }
    if let Some(v) = json["verdict"].as_object() {
        let pass = if d["passed"].as_bool().unwrap() { "PASS" } else { "FAIL" };
        want.push(("verify", format!("verify   {pass} ·")));
        want.push(("per element", format!("{} of {} outside", v["outside"], v["checked"])));
        let w = &v["worst"];
        want.push(("per element", format!("worst C[{},{}]", w["row"], w["col"])));
        want.push(("normwise", format!("‖ΔC‖/‖C‖ = {:.1e}", number(&d["relative_error"]))));
        want.push(("normwise", format!("limit {:.1e}", number(&d["relative_limit"]))));
    }
    if let Some(t) = json["device"]["emulated"]["traffic"].as_object() {
        let count = |k: &str| common::numbers::count(t[k].as_u64().unwrap());
        want.push(("traffic", format!("global loads {} requests", count("global_load_requests"))));
        want.push(("traffic", format!("{} sectors (", count("global_load_sectors"))));
        want.push(("traffic", format!("{} barriers", count("barriers"))));
    }
    if let Some(p) = json["predicted"].as_object() {
        want.push(("predicted", format!("· {:.0} GFLOP/s ·", number(&p["gflops"]))));
        match p.get("no_baseline").and_then(Value::as_str) {
            Some(none) => want.push(("predicted", format!("· {none} ·"))),
            None => want.push((
                "predicted",
                format!("· {:.0}% of {}", number(&p["share"]), p["baseline"]["name"].as_str().unwrap()),
            )),
        }
        want.push(("predicted", format!("at {:.0} MHz", number(&p["prediction"]["clock_mhz"]))));
        let gpu = p["gpu"].as_str().unwrap();
        want.push(("predicted", format!("predicted {gpu} ")));
        if let Some(r) = p["prediction"]["replay"].as_object() {
            let share = |k: &str| 100.0 * number(&r[k]);
            want.push(("replayed", format!("replayed {} of", r["replayed"])));
            want.push((
                "replayed",
                format!("issue {:.0}% busy · L1 {:.0}%", share("issue_busy"), share("l1_busy")),
            ));
            want.push(("replayed", format!("L2 share {:.0}%", share("l2_busy"))));
            want.push(("replayed", format!("waited {:.0} cycles in the L2", number(&r["l2_latency"]))));
            want.push((
                "replayed",
                format!("{:.0} from DRAM ({:.0}% of", number(&r["dram_latency"]), share("l2_miss")),
            ));
        }
        for (name, s) in p["seconds"].as_object().unwrap().iter().filter(|(n, _)| *n != gpu) {
            let s = number(s);
            want.push(("predicted", format!("· {name} {}", common::numbers::duration(s))));
        }
    }
    want.into_iter()
        .filter(|(label, shown)| !line(text, label).is_some_and(|l| l.contains(shown.as_str())))
        .map(|(label, shown)| format!("the {label} line does not show \"{shown}\""))
        .collect()
}

/// The JSON holds what the text shows: its schema, and each figure checked against the text's
/// line; a field broken on purpose is caught at its line.
#[test]
fn the_json_holds_what_the_text_shows() {
    let reports = [
        ("gpu", gpu_report()),
        ("emulated", emulated_report(&profile::H200)),
        ("emulated-h100-pcie", emulated_report(&profile::H100_PCIE)),
        ("cpu", cpu_report()),
    ];
    for (name, report) in reports {
        let json = common::emit::json(&report);
        assert_eq!(json["schema"], common::emit::SCHEMA, "{name}");
        assert_eq!(json["step"], report.step.as_str(), "{name}");
        let text = report.to_string();
        let wrong = disagreements(&text, &json);
        assert!(wrong.is_empty(), "{name}: {wrong:?}\n{text}\n{json:#}");
    }
    // Faults planted in the JSON: each is found at the line that shows the field.
    let mut gpu = common::emit::json(&gpu_report());
    gpu["time"]["median_ms"] = Value::from(2.932);
    gpu["verdict"]["checked"] = Value::from(4095);
    let wrong = disagreements(&gpu_report().to_string(), &gpu);
    assert_eq!(wrong.len(), 2, "{wrong:?}");
    assert!(
        wrong[0].starts_with("the time line") && wrong[1].starts_with("the per element line"),
        "{wrong:?}"
    );
    let mut emulated = common::emit::json(&emulated_report(&profile::H200));
    emulated["predicted"]["gflops"] = Value::from(61.0);
    let wrong = disagreements(&emulated_report(&profile::H200).to_string(), &emulated);
    assert!(wrong.len() == 1 && wrong[0].starts_with("the predicted line"), "{wrong:?}");
}

/// The time model's bottleneck is never called a limit (a limit bounds an error): not in the
/// predicted lines of the text, nor as a key anywhere under the JSON's `predicted`.
#[test]
fn the_bottleneck_is_never_called_a_limit() {
    fn keys(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => m.iter().for_each(|(k, v)| {
                out.push(k.clone());
                keys(v, out);
            }),
            Value::Array(a) => a.iter().for_each(|v| keys(v, out)),
            _ => {}
        }
    }
    for gpu in [&profile::H200, &profile::H100_PCIE] {
        let report = emulated_report(gpu);
        let text = report.to_string();
        let model: Vec<&str> = text
            .lines()
            .skip_while(|l| !l.trim_start().starts_with("predicted"))
            .take_while(|l| !l.trim_start().starts_with("verify"))
            .collect();
        assert!(!model.is_empty(), "{text}");
        assert!(model.iter().all(|l| !l.contains("limit")), "{}", model.join("\n"));
        let json: Value = serde_json::from_str(&common::emit::json_text(&report, false)).unwrap();
        let mut names = Vec::new();
        keys(&json["predicted"], &mut names);
        assert!(names.iter().all(|k| !k.contains("limit")), "{names:?}");
    }
}

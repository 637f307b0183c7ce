//! The report built by hand, no GPU: its text is the block the records quote, line for line,
//! and its JSON carries every field and figure.

use common::Precision;
use common::verify::{Normwise, Verdict, Worst};
use serde_json::Value;

use super::*;

fn stats(median_ms: f64, min_ms: f64, max_ms: f64) -> Stats {
    Stats { median_ms, min_ms, max_ms, samples: 20, batch: 4, held: None }
}

fn check(way: RingWay, run: Run) -> Check {
    Check { way, run, passed: true, worst_normwise: 0.66, reference: "cuBLAS DGEMM".into(), failures: vec![] }
}

/// Two H100s at the default shard, lab 12 as the product: the figures of the record
/// docs/src/results/runs/2026-11-27-4x-nvidia-h100-80gb-hbm3-step13.log (--gpus 2, run a), the
/// medians chosen so that what the text computes rounds to what that run printed.
fn two_h100s() -> RingReport {
    let shard = Shape { m: 1024, n: 4096, k: 4096 };
    let header = RunHeader {
        step: crate::NAME.into(),
        ranks: 2,
        gpus: 2,
        simulated: false,
        gpu: "NVIDIA H100 80GB HBM3".into(),
        sms: 132,
        nccl: Some("2.28.3".into()),
        exchange: Exchange { gather: Via::Nccl, ring: Via::Copies },
        global: Shape { m: 2048, n: 8192, k: 4096 },
        shard,
        inputs: "uniform, seed 42".into(),
        sms_left: 0,
        lab12_blocks: Some(132),
    };
    let run = ProductRun {
        product: ShardKernel::Lab12,
        checks: vec![
            check(RingWay::Baseline, Run::First),
            check(RingWay::Ring, Run::First),
            check(RingWay::Baseline, Run::LastTimed),
            check(RingWay::Ring, Run::LastTimed),
        ],
        reps: 20,
        parts: Parts { product: 0.090945, exchange: 0.0582, all_gather: 0.103, whole: 0.178 },
        baseline: stats(0.28051, 0.279, 0.283),
        ring: stats(0.19089, 0.190, 0.191),
    };
    RingReport { header, products: vec![run] }
}

/// The record's lines, but for the two that the program has worded since ("the parts alone
/// allow", "(the parts' medians)").
const TWO_H100S: &str = "\
step13_collective_matmul · C = A·B over several GPUs, the exchange hidden under the products
devices  2 × NVIDIA H100 80GB HBM3 · NCCL 2.28.3
exchange the baseline's all-gather by NCCL; the ring's shards by the copy engines
shape    M=2048 N=8192 K=4096: A's rows and B's columns in 2 shards of 1024×4096 and 4096×4096
         each rank ends with C's columns of its B, 2048 rows × 4096
inputs   uniform, seed 42
sms      0 of each GPU's 132 SMs left to the exchange; lab 12 runs 132 persistent blocks

product  lab 12's kernel on every rank
verify   baseline (first run): PASS on every rank · worst ‖ΔC‖ at 0.66 of the limit · cuBLAS DGEMM
verify   ring (first run): PASS on every rank · worst ‖ΔC‖ at 0.66 of the limit · cuBLAS DGEMM
verify   baseline (last timed run): PASS on every rank · worst ‖ΔC‖ at 0.66 of the limit · cuBLAS DGEMM
verify   ring (last timed run): PASS on every rank · worst ‖ΔC‖ at 0.66 of the limit · cuBLAS DGEMM
parts    alone, slowest GPU, median of 20:
         a shard's product      0.091 ms
         a ring step            0.058 ms  (288 GB/s a GPU each way)
         NCCL's all-gather      0.103 ms
         the gathered product    0.178 ms
baseline all-gather, then product      0.281 ms (min 0.279, max 0.283) · 490 TFLOP/s in all
ring     product under exchange        0.191 ms (min 0.190, max 0.191) · 720 TFLOP/s in all
speedup  1.47× the baseline (the parts alone allow 1.54×)
model    ring ≥ product + (G−1)·max(product, ring step) = 0.182 ms (the parts' medians), set by the products: the exchange hides under them
         the ring at 104.9% of its bound; 9.0 µs a round beyond it
";

/// Asserts `got` is `want` line for line, naming the first line that differs.
fn assert_lines(got: &str, want: &str) {
    for (n, (g, w)) in got.lines().zip(want.lines()).enumerate() {
        assert_eq!(g, w, "line {} differs", n + 1);
    }
    assert_eq!(got.lines().count(), want.lines().count(), "{got}");
    assert_eq!(got, want);
}

#[test]
fn the_text_is_the_recorded_block_line_for_line() {
    let report = two_h100s();
    assert_lines(&report.to_string(), TWO_H100S);
    // Streamed, the header then each block, it is the same text.
    assert_eq!(format!("{}{}", report.header, report.block(&report.products[0])), TWO_H100S);
    assert!(report.passed());
}

fn json(report: &RingReport) -> Value {
    let value: Value = serde_json::from_str(&report.json_text(false)).expect("the report's JSON");
    let pretty: Value = serde_json::from_str(&report.json_text(true)).expect("the report's JSON, indented");
    assert_eq!(value, pretty);
    value
}

fn close(v: &Value, want: f64) -> bool {
    v.as_f64().is_some_and(|x| (x - want).abs() <= 1e-9 * want.abs().max(1.0))
}

#[test]
fn the_json_carries_the_fields_and_the_figures() {
    let j = json(&two_h100s());
    assert_eq!(j["schema"], common::emit::SCHEMA);
    assert_eq!(j["step"], "step13_collective_matmul");
    for (key, want) in [("ranks", 2), ("gpus", 2), ("sms", 132), ("sms_left", 0), ("lab12_blocks", 132)] {
        assert_eq!(j[key], want, "{key}");
    }
    assert_eq!(j["simulated"], false);
    assert_eq!((&j["gpu"], &j["nccl"]), (&Value::from("NVIDIA H100 80GB HBM3"), &Value::from("2.28.3")));
    assert_eq!((&j["exchange"]["gather"], &j["exchange"]["ring"]), (&"nccl".into(), &"copies".into()));
    assert_eq!(
        (&j["global"]["m"], &j["global"]["n"], &j["global"]["k"]),
        (&2048.into(), &8192.into(), &4096.into())
    );
    assert_eq!(
        (&j["shard"]["m"], &j["shard"]["n"], &j["shard"]["k"]),
        (&1024.into(), &4096.into(), &4096.into())
    );
    assert_eq!(j["inputs"], "uniform, seed 42");
    assert_eq!(j["derived"]["passed"], true);

    let p = &j["products"][0];
    assert_eq!((&p["product"], &p["reps"]), (&"lab12".into(), &20.into()));
    let checks = p["checks"].as_array().expect("checks");
    let ways: Vec<_> = checks.iter().map(|c| (c["way"].as_str(), c["run"].as_str())).collect();
    assert_eq!(
        ways,
        [
            (Some("baseline"), Some("first")),
            (Some("ring"), Some("first")),
            (Some("baseline"), Some("last_timed")),
            (Some("ring"), Some("last_timed"))
        ]
    );
    for c in checks {
        assert_eq!((&c["passed"], &c["reference"]), (&true.into(), &"cuBLAS DGEMM".into()));
        assert!(close(&c["worst_normwise"], 0.66) && c["failures"] == Value::Array(vec![]), "{c}");
    }
    for (key, want) in [("product", 0.090945), ("exchange", 0.0582), ("all_gather", 0.103), ("whole", 0.178)]
    {
        assert!(close(&p["parts"][key], want), "parts.{key}: {}", p["parts"]);
    }
    for (way, median, min, max) in [("baseline", 0.28051, 0.279, 0.283), ("ring", 0.19089, 0.190, 0.191)] {
        let s = &p[way];
        assert!(
            close(&s["median_ms"], median) && close(&s["min_ms"], min) && close(&s["max_ms"], max),
            "{s}"
        );
    }
    let d = &p["derived"];
    let flops = 2.0 * 2.0 * 2048.0 * 4096.0 * 4096.0;
    for (key, want) in [
        ("ring_step_gb_s", 4.0 * 1024.0 * 4096.0 / 0.0582 / 1e6),
        ("baseline_tflops", flops / 0.28051e9),
        ("ring_tflops", flops / 0.19089e9),
        ("speedup", 0.28051 / 0.19089),
        ("best_speedup", (0.103 + 0.178) / (2.0 * 0.090945)),
        ("bound_ms", 2.0 * 0.090945),
        ("ring_of_bound", 100.0 * 0.19089 / (2.0 * 0.090945)),
        ("beyond_us_a_round", 1e3 * (0.19089 - 2.0 * 0.090945)),
    ] {
        assert!(close(&d[key], want), "derived.{key}: {} against {want}", d[key]);
    }
    assert_eq!((&d["bottleneck"], &d["passed"]), (&"products".into(), &true.into()));
}

/// A rank's C with NaN in it: every element outside its bound, the normwise error infinite.
fn nan_verdict() -> Verdict {
    Verdict {
        precision: Precision::Tf32,
        checked: 64 * 96,
        outside: 64 * 96,
        worst: Worst { row: 0, col: 0, got: f32::NAN, want: 1.5, bound: 1e-3 },
        normwise: Normwise { error: f64::INFINITY, norm: 40.0, expected: 1e-4, limit: 1e-3 },
        separates: true,
        mismatched: None,
        not_finite: (0, 0),
        source: "cuBLAS DGEMM",
    }
}

/// Three ranks simulated on one GPU, cuBLAS as the product, and the ring's last timed run wrong
/// on rank 1: the rank's FAIL line in place of the PASS line, and a run that did not pass.
#[test]
fn a_failed_check_names_its_rank_in_the_text_and_the_json() {
    let mut report = two_h100s();
    let h = &mut report.header;
    (h.ranks, h.gpus, h.simulated, h.gpu, h.nccl) = (3, 1, true, "NVIDIA H200".into(), None);
    h.exchange = Exchange { gather: Via::Copies, ring: Via::Copies };
    (h.shard, h.global, h.lab12_blocks) =
        (Shape { m: 32, n: 96, k: 128 }, Shape { m: 96, n: 288, k: 128 }, None);
    let run = &mut report.products[0];
    run.product = ShardKernel::Cublas;
    let verdict = nan_verdict();
    let failure = Failure { rank: 1, summary: verdict.summary(), verdict };
    run.checks[3] = Check {
        passed: false,
        worst_normwise: f64::INFINITY,
        failures: vec![failure],
        ..run.checks[3].clone()
    };

    let text = report.to_string();
    for want in [
        "device   3 ranks simulated on one NVIDIA H200 (copies stand in for NCCL; times are not a multi-GPU speed)\n",
        "shape    M=96 N=288 K=128: A's rows and B's columns in 3 shards of 32×128 and 128×96\n",
        "         each rank ends with C's columns of its B, 96 rows × 96\n",
        "sms      0 of each GPU's 132 SMs left to the exchange\n",
        "\nproduct  cuBLAS TF32 on every rank\n",
        "verify   ring (last timed run), rank 1: FAIL · FAIL · 6144 of 6144 outside the per-element bound",
        "  (0 GB/s a rank, the ranks sharing one GPU)\n",
        "         all-gather, copies     0.103 ms\n",
    ] {
        assert!(text.contains(want), "{want:?} missing from:\n{text}");
    }
    assert!(
        !text.contains("devices")
            && !text.contains("NCCL 2")
            && !text.contains("ring (last timed run): PASS")
    );
    assert_eq!(text.matches(": PASS on every rank").count(), 3, "{text}");
    assert!(!report.passed());

    let j = json(&report);
    assert_eq!((&j["simulated"], &j["nccl"], &j["lab12_blocks"]), (&true.into(), &Value::Null, &Value::Null));
    assert_eq!(
        (&j["derived"]["passed"], &j["products"][0]["derived"]["passed"]),
        (&false.into(), &false.into())
    );
    let failed = &j["products"][0]["checks"][3];
    // JSON has no infinity: a ratio that is not finite is null.
    assert_eq!((&failed["passed"], &failed["worst_normwise"]), (&false.into(), &Value::Null));
    assert_eq!(failed["failures"][0]["rank"], 1);
    assert!(failed["failures"][0]["summary"].as_str().is_some_and(|s| s.starts_with("FAIL · 6144 of 6144")));
    assert_eq!(failed["failures"][0]["verdict"]["outside"], 6144);
}

//! The gate's decision without a GPU: planted regressions, wrong results and lost entries
//! against a record, and the record's JSON.

use super::*;

fn entry(lab: &str, shape: &str, inputs: &str, share: f64) -> Entry {
    let baseline = if lab == "step08_wgmma_tma" { CUBLAS_TF32 } else { CUBLAS };
    Entry {
        lab: lab.into(),
        shape: shape.into(),
        inputs: inputs.into(),
        baseline: baseline.into(),
        share,
        gflops: 1000.0 * share,
        passed: true,
    }
}

const CUBE: &str = "4096x4096x4096";

fn record(entries: Vec<Entry>) -> GateRecord {
    GateRecord {
        device: "NVIDIA H200".into(),
        driver: "580.159.04 (CUDA 13.0)".into(),
        nvrtc: "13.0".into(),
        date: "2026-12-01".into(),
        command: "cargo run --release -p compare -- --gate --record".into(),
        reps: plan::REPS,
        entries,
    }
}

/// The record of the planted faults: step 11 at 2.72× SGEMM, step 08 at 0.90× TF32.
fn planted() -> GateRecord {
    record(vec![
        entry("step11_int8_crt", CUBE, "uniform", 2.72),
        entry("step08_wgmma_tma", CUBE, "uniform", 0.90),
    ])
}

/// The gate on `first`, with the entries `to_confirm` names measured again as `second` gives
/// them (None: that entry as first measured).
fn gate(record: &GateRecord, first: &[Entry], second: impl Fn(&Entry) -> Option<f64>) -> Outcome {
    let again: Vec<Entry> = to_confirm(record, first)
        .into_iter()
        .map(|e| Entry { share: second(&e).unwrap_or(e.share), ..e })
        .collect();
    judge(record, first, &again, |_| true)
}

#[test]
fn the_3_percent_rule_is_strict() {
    assert!(!below(0.97 * 2.0, 2.0) && !below(2.0, 2.0) && !below(2.5, 2.0));
    assert!(below(0.969 * 2.0, 2.0));
}

#[test]
fn a_planted_regression_measured_twice_fails_the_gate_in_one_line() {
    let run =
        [entry("step11_int8_crt", CUBE, "uniform", 2.20), entry("step08_wgmma_tma", CUBE, "uniform", 0.91)];
    assert_eq!(to_confirm(&planted(), &run), [run[0].clone()], "the one below 3% is measured again");
    let outcome = gate(&planted(), &run, |_| Some(2.19));
    assert!(!outcome.passed());
    assert_eq!(
        outcome.failures(),
        ["gate: FAIL step11_int8_crt 4096×4096×4096 uniform: 2.20× cuBLAS SGEMM, record 2.72× \
          (−19.1%, confirmed by a second run 2.19×)"]
    );
    assert_eq!(outcome.summary(), "gate: 1 of 2 at or above their record (within 3%)");
    let table = outcome.table();
    assert!(table.contains("| step11_int8_crt | 4096×4096×4096 | uniform | 2.72× | 2.19× | −19.5% | **FAIL** slower twice (first 2.20×) |"), "{table}");
    assert!(
        table.contains("| step08_wgmma_tma | 4096×4096×4096 | uniform | 0.900× | 0.910× | +1.1% | held |"),
        "{table}"
    );
}

#[test]
fn a_low_first_measurement_that_the_second_does_not_confirm_passes() {
    let run =
        [entry("step11_int8_crt", CUBE, "uniform", 2.20), entry("step08_wgmma_tma", CUBE, "uniform", 0.90)];
    let outcome = gate(&planted(), &run, |_| Some(2.70));
    assert!(outcome.passed(), "{:?}", outcome.failures());
    assert!(outcome.failures().is_empty());
    assert_eq!(outcome.rows[0].finding, Finding::HeldSecond);
    assert_eq!(outcome.summary(), "gate: 2 of 2 at or above their record (within 3%)");
    assert!(outcome.table().contains("| 2.72× | 2.70× | −0.7% | held on a second run (first 2.20×) |"));
}

#[test]
fn within_3_percent_is_not_measured_again() {
    let run =
        [entry("step11_int8_crt", CUBE, "uniform", 2.64), entry("step08_wgmma_tma", CUBE, "uniform", 0.874)];
    assert!(to_confirm(&planted(), &run).is_empty());
    assert!(gate(&planted(), &run, |_| panic!("nothing is measured again")).passed());
}

#[test]
fn an_entry_of_the_record_the_run_no_longer_measures_fails() {
    let run = [entry("step08_wgmma_tma", CUBE, "uniform", 0.90)];
    let outcome = gate(&planted(), &run, |_| None);
    assert!(!outcome.passed());
    assert_eq!(
        outcome.failures(),
        ["gate: FAIL step11_int8_crt 4096×4096×4096 uniform: in the record (2.72× cuBLAS SGEMM) but \
          not measured by this run"]
    );
    assert!(
        outcome.table().contains(
            "| step11_int8_crt | 4096×4096×4096 | uniform | 2.72× | – | – | **FAIL** not measured |"
        )
    );
    assert_eq!(outcome.summary(), "gate: 1 of 2 at or above their record (within 3%)");
    // With --steps 08 the record's step 11 is out of scope: not measured, and not missing.
    let only_08 = judge(&planted(), &run, &[], |lab| lab == "step08_wgmma_tma");
    assert!(only_08.passed() && only_08.rows.len() == 1, "{only_08:?}");
    assert_eq!(only_08.summary(), "gate: 1 of 1 at or above their record (within 3%)");
}

#[test]
fn an_entry_not_in_the_record_is_listed_and_does_not_fail() {
    let mut run = planted().entries;
    run.push(entry("step10_any_shape", "1x4096x4096", "uniform", 0.91));
    let outcome = gate(&planted(), &run, |_| None);
    assert!(outcome.passed());
    assert_eq!(
        outcome.unrecorded(),
        ["gate: not in the record: step10_any_shape 1×4096×4096 uniform (0.910× cuBLAS SGEMM)"]
    );
    assert!(
        outcome
            .table()
            .contains("| step10_any_shape | 1×4096×4096 | uniform | – | 0.910× | – | not in the record |")
    );
    assert_eq!(outcome.summary(), "gate: 2 of 2 at or above their record (within 3%)");
}

#[test]
fn a_wrong_result_fails_however_fast() {
    let mut run = planted().entries;
    run[0] = Entry { passed: false, share: 3.0, ..run[0].clone() };
    run.push(Entry { passed: false, ..entry("step09_3xtf32", CUBE, "gram", 1.5) });
    let outcome = gate(&planted(), &run, |_| None);
    assert_eq!(
        outcome.failures(),
        [
            "gate: FAIL step11_int8_crt 4096×4096×4096 uniform: a result failed verification (3.00× cuBLAS \
             SGEMM, record 2.72×)",
            "gate: FAIL step09_3xtf32 4096×4096×4096 gram: a result failed verification (1.50× cuBLAS \
             SGEMM, not in the record)",
        ]
    );
    // A second measurement that fails verification fails too.
    let run =
        [entry("step11_int8_crt", CUBE, "uniform", 2.0), entry("step08_wgmma_tma", CUBE, "uniform", 0.9)];
    let again = [Entry { passed: false, ..entry("step11_int8_crt", CUBE, "uniform", 2.7) }];
    let outcome = judge(&planted(), &run, &again, |_| true);
    assert_eq!(outcome.rows[0].finding, Finding::Wrong);
}

#[test]
fn a_share_against_another_baseline_is_not_compared() {
    let run = [
        Entry { baseline: CUBLAS_TF32.into(), ..entry("step11_int8_crt", CUBE, "uniform", 0.5) },
        entry("step08_wgmma_tma", CUBE, "uniform", 0.9),
    ];
    assert!(to_confirm(&planted(), &run).is_empty());
    let outcome = gate(&planted(), &run, |_| None);
    assert_eq!(
        outcome.failures(),
        ["gate: FAIL step11_int8_crt 4096×4096×4096 uniform: set against cuBLAS TF32 now and against \
          cuBLAS SGEMM in the record (record it again)"]
    );
}

#[test]
fn a_low_entry_not_measured_again_fails() {
    let run =
        [entry("step11_int8_crt", CUBE, "uniform", 2.0), entry("step08_wgmma_tma", CUBE, "uniform", 0.9)];
    let outcome = judge(&planted(), &run, &[], |_| true);
    assert_eq!(
        outcome.failures(),
        ["gate: FAIL step11_int8_crt 4096×4096×4096 uniform: 2.00× cuBLAS SGEMM, record 2.72× (−26.5%, not \
          measured a second time)"]
    );
}

#[test]
fn a_record_goes_to_json_and_back() {
    let made = Entry::measured(
        "step11_int8_crt",
        (1024, 1024, 4096),
        Family::LogNormal(2.0),
        CUBLAS,
        (123_456.789_12, 45_678.9),
        true,
    );
    assert_eq!(made.shape, "1024x1024x4096");
    assert_eq!(made.inputs, "lognormal:2");
    assert_eq!((made.share, made.gflops), (2.7027, 123_456.8));
    let r = record(vec![made, entry("step08_wgmma_tma", CUBE, "identity+noise:0.001", 0.9)]);
    let json = r.to_json();
    assert!(json.ends_with("}\n") && json.contains("\"share\": 2.7027"), "{json}");
    assert_eq!(GateRecord::parse(&json, "x.json").unwrap(), r);
    let md = r.markdown();
    assert!(md.starts_with("# The gate's record on NVIDIA H200\n"), "{md}");
    assert!(
        md.contains("| step11_int8_crt | 1024×1024×4096 | lognormal:2 | SGEMM | 123457 | 2.70× | PASS |"),
        "{md}"
    );
    let empty = record(vec![]);
    assert_eq!(GateRecord::parse(&empty.to_json(), "x.json").unwrap(), empty);
}

#[test]
fn a_bad_record_is_refused_in_one_sentence() {
    let good = record(vec![entry("step11_int8_crt", CUBE, "uniform", 2.72)]).to_json();
    for (text, says) in [
        ("{", "the gate record x.json is not one this program reads: EOF while parsing"),
        (&good.replace("\"reps\"", "\"repz\""), "unknown field `repz`"),
        (&good.replace("\"share\": 2.72,", ""), "missing field `share`"),
        (
            &good.replace(CUBE, "4096x4096"),
            "(step11_int8_crt 4096×4096 uniform): its shape '4096x4096' is not MxNxK",
        ),
        (&good.replace(CUBE, "0x4096x4096"), "its shape '0x4096x4096' is not MxNxK"),
        (&good.replace("uniform", "cauchy"), "(step11_int8_crt 4096×4096×4096 cauchy): "),
        (&good.replace("cublas_sgemm", "cublas_hgemm"), "its baseline 'cublas_hgemm' is neither"),
        (&good.replace("2.72", "-2.72"), "its share -2.72 or rate 2720 is not a positive number"),
    ] {
        let err = GateRecord::parse(text, "x.json").unwrap_err().to_string();
        assert!(err.contains(says) && !err.contains('\n'), "{says}: {err}");
    }
    let twice = record(vec![
        entry("step11_int8_crt", CUBE, "uniform", 2.7),
        entry("step11_int8_crt", CUBE, "uniform", 2.6),
    ]);
    let err = GateRecord::parse(&twice.to_json(), "x.json").unwrap_err().to_string();
    assert!(err.ends_with("(step11_int8_crt 4096×4096×4096 uniform): it is in the record twice"), "{err}");
}

#[test]
fn shares_and_changes_print_with_three_figures_and_a_minus_sign() {
    assert_eq!(
        (share(2.72), share(0.1224), share(0.0512)),
        ("2.72×".into(), "0.122×".into(), "0.0512×".into())
    );
    assert_eq!((change(2.20, 2.72), change(1.01, 1.0)), ("−19.1%".into(), "+1.0%".into()));
    assert_eq!(parse_shape("1024x1024x4096"), Some((1024, 1024, 4096)));
    assert_eq!((parse_shape("1024x1024"), parse_shape("ax1x1"), parse_shape("")), (None, None, None));
}

//! Spills in every entry point of step 11's kernel, not only `matmul`: none at the documented
//! sets and at every MODULI, and a spill planted in `reconstruct` named (the tuner leaves such a
//! set out; a run runs it and its report names the spill).

use common::Params;
use common::spills::{self, Spill};
use common::testing;
use step11_int8_crt::{MODULI, STEP};

const BIN: &str = env!("CARGO_BIN_EXE_step11_int8_crt");

/// `reconstruct` held to 32 registers (eight blocks of 256 a multiprocessor), too few for its
/// sums: ptxas spills them.
const SPILL_RECONSTRUCT: (&str, &str) = (
    "extern \"C\" __global__ void reconstruct(",
    "extern \"C\" __global__ void __launch_bounds__(256, 8) reconstruct(",
);

fn with(overrides: &[(&str, u32)]) -> Params {
    let overrides: Vec<(String, u32)> = overrides.iter().map(|&(n, v)| (n.to_owned(), v)).collect();
    Params::with_overrides(STEP.params, &overrides).unwrap()
}

/// Every entry point compiles without spilling: at the documented sets of STAGES, GROUP and
/// MODULI, at each MODULI the step takes, and with the count of moduli forced.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_no_entry_point_spills_at_any_moduli_or_documented_set() {
    let mut sets: Vec<Params> = (2..=8).map(|m| with(&[(MODULI.name, m)])).collect();
    for [stages, group, moduli] in [[4, 8, 8], [3, 8, 7], [2, 1, 7], [4, 16, 7]] {
        sets.push(with(&[("STAGES", stages), ("GROUP", group), (MODULI.name, moduli)]));
    }
    sets.push(with(&[("COUNT", 16)]));
    for params in sets {
        let compiled = STEP.compile(&params, "sm_90").unwrap_or_else(|e| panic!("{params}: {e}"));
        let spilling = spills::reported(&compiled).unwrap_or_else(|| panic!("{params}: no report"));
        assert_eq!(spilling, [], "{params}");
        assert!(spills::refuse(&STEP, &params, &spilling).is_ok());
    }
}

/// A spill planted in `reconstruct`, which a launch queues after `matmul`, is named in one
/// sentence with the entry point and the bytes ptxas reports (why the tuner leaves the set out);
/// `--compile-only` says a run runs the set and names the spill.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_a_spill_planted_in_reconstruct_is_named() {
    let planted = testing::edited(&STEP, &[SPILL_RECONSTRUCT]);
    let params = Params::defaults(STEP.params);
    let compiled = planted.compile(&params, "sm_90").unwrap();
    let spilling = spills::reported(&compiled).unwrap();
    let spill = spilling.iter().find(|(n, _)| n == "reconstruct").map(|(_, s)| *s);
    let spill = spill.unwrap_or_else(|| panic!("the plant spills nothing: {spilling:?}\n{}", compiled.log));
    let Spill::Code { stores, loads } = spill else {
        panic!("ptxas's report gives stores and loads: {spill:?}")
    };
    let err = spills::refuse(&planted, &params, &spilling).unwrap_err().to_string();
    let says = format!(
        "the kernel's entry point `reconstruct` spills registers to local memory ({stores} bytes stored and {loads} loaded by spill code)"
    );
    assert!(err.contains(&says) && !err.contains('\n'), "{err}");

    let path = testing::scratch_file("spilling_reconstruct.cu", planted.source);
    let (code, out, err) =
        testing::run_for_output(BIN, &["--compile-only", "--kernel", path.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains(&format!(
            "note     a run runs this set and its report names the spill: with {params} {says}"
        )),
        "{out}"
    );
    let notes = spills::notes(&compiled);
    assert!(
        notes.len() == 1 && notes[0].starts_with("`reconstruct` spills registers to local memory"),
        "{notes:?}"
    );
}

/// The machine code's entry points, read from its symbol table (what a run checks when a cached
/// compile leaves no report), are the ones ptxas reports.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_the_machine_code_lists_the_entry_points_ptxas_reports() {
    let compiled = STEP.compile(&Params::defaults(STEP.params), "sm_90").unwrap();
    let mut reported: Vec<String> =
        common::gpu::PtxasInfo::entries(&compiled.log).into_iter().map(|(n, _)| n).collect();
    let mut found = spills::entry_points(&compiled.cubin);
    reported.sort();
    found.sort();
    assert!(found.len() > 10 && found.contains(&"reconstruct".to_owned()), "{found:?}");
    assert_eq!(found, reported);
}

/// On a GPU the program runs the planted spill, verifies and times it, and its report names it.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_a_spill_planted_in_reconstruct_runs_and_is_named() {
    let planted = testing::edited(&STEP, &[SPILL_RECONSTRUCT]);
    let path = testing::scratch_file("spilling_reconstruct_gpu.cu", planted.source);
    let args = ["--size", "256", "--kernel", path.to_str().unwrap()];
    let ran = testing::run_for_report(BIN, &args, &[("CUDA_CACHE_DISABLE", "1")]);
    assert_eq!(ran.code, Some(0), "{}{}", ran.out, ran.err);
    assert!(ran.passed() && ran.out.contains("note     `reconstruct` spills registers"), "{}", ran.out);
}

//! ptxas's advisories on lab 08's wgmma code, which the emulator runs as written: a planted
//! missing `wgmma.fence` (C7519) and accumulators read before `wgmma.wait_group` (C7517) are each
//! named with their `.cu` line, the latter running on to the GPU's C; ptxas's serialisation of the
//! wgmma (C7518) is named and raises the predicted H100 time; the lab's own kernel and its
//! variants draw none.

use common::advisories::{self, Action, Advisory};
use common::emulated::{self, predict};
use common::run::EmulatorStep;
use common::testing::emulator;
use common::testing::{run_for_output, run_for_report, scratch_file};
use common::{GpuStep, Shape};
use step08_wgmma_tma::STEP;

/// The advisories of `step`'s compile for an H100 at its default parameters, as an emulated run
/// gets them (the compile alone: nothing is emulated).
fn advisories_of(step: &GpuStep) -> Vec<Advisory> {
    let shape = Shape { m: 256, n: 256, k: 256 };
    let (params, _) = step.params_for(shape, emulated::profile::H100.machine.sms, &[]).unwrap();
    EmulatorStep::new(step, params, shape, true, &emulated::profile::H100).unwrap().advisories
}

/// The 1-based line of `source` that holds `text` (the first such line).
fn line_of(source: &str, text: &str) -> u32 {
    let at = source.lines().position(|l| l.contains(text));
    at.map(|i| i as u32 + 1).unwrap_or_else(|| panic!("`{text}` is not in the kernel"))
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_a_missing_fence_is_named_at_the_wgmma_it_guards() {
    let planted = emulator::planted(&STEP, "            wgmma_fence();\n", "");
    let a = advisories_of(&planted);
    assert_eq!(a.len(), 1, "{a:?}");
    assert_eq!((a[0].code.as_str(), a[0].action), ("C7519", Action::ArriveInjected));
    // The wgmma's asm, in the helper `wgmma`, inlined at the consumer loop's call.
    let place = a[0].place.clone().expect("a line");
    let (helper, end) =
        (line_of(planted.source, "void wgmma(float"), line_of(planted.source, "ANCHOR_END: wgmma"));
    assert!((helper..end).contains(&place.line), "{place:?}");
    let call = line_of(planted.source, "wgmma(acc, frag[k8]");
    assert_eq!(place.call_site, Some((STEP.file.to_owned(), call)));
    let sentence = a[0].sentence();
    assert!(
        sentence.starts_with(&format!(
            "note: {}:{} (inlined at line {call}): ptxas advisory C7519:",
            STEP.file, place.line
        )),
        "{sentence}"
    );
    assert!(sentence.contains("wgmma_fence()") && sentence.lines().count() == 1, "{sentence}");
    assert!(!advisories::serialized(&a));
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_accumulators_read_before_the_wait_are_named_at_that_line() {
    // A clamp of the accumulators between the commit and the wait.
    let clamp = "            if (acc[0] > 1e30f) acc[0] = 1e30f;\n";
    let planted = emulator::planted(
        &STEP,
        "            wgmma_wait_all();\n",
        &format!("{clamp}            wgmma_wait_all();\n"),
    );
    let a = advisories_of(&planted);
    assert_eq!(a.len(), 1, "{a:?}");
    assert_eq!((a[0].code.as_str(), a[0].action), ("C7517", Action::WaitInjected));
    let line = line_of(planted.source, clamp.trim());
    assert_eq!(a[0].place.clone().map(|p| (p.line, p.call_site)), Some((line, None)));
    let sentence = a[0].sentence();
    assert!(
        sentence.starts_with(&format!("note: {}:{line}: ptxas advisory C7517:", STEP.file)),
        "{sentence}"
    );
    assert!(sentence.contains("wgmma_wait_all()"), "{sentence}");
    // ptxas's wait makes the line run after the wgmma on a GPU, as the emulator, which has the
    // sums at the issue, runs it: the same C (the H100 passes it too, unlike a write to A's
    // registers there), so the run goes on with the note rather than stop.
    for (m, n, k) in [(256, 256, 256), (300, 259, 133)] {
        let (_, verdict) = emulator::emulate(&planted, &[], Shape { m, n, k }).unwrap();
        assert!(verdict.passed(), "{m}×{n}×{k}");
    }
}

/// Only the lane that arrives waits for the wgmma: ptxas serialises them all and names no line.
/// (The emulator stops that kernel at a deadlock, its wait not being the warpgroup's, so the
/// predicted time's rise is checked on the lab's own counts, told the wgmma are serialised.)
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_serialised_wgmma_are_named_and_raise_the_predicted_time() {
    let planted = emulator::planted(
        &STEP,
        "            wgmma_wait_all();\n            if (lane == 0) mbar_arrive(&empty[s]);\n",
        "            if (lane == 0) { wgmma_wait_all(); mbar_arrive(&empty[s]); }\n",
    );
    let a = advisories_of(&planted);
    assert!(advisories::serialized(&a), "{a:?}");
    let serial = a.iter().find(|a| a.action == Action::Serialized).unwrap();
    assert!(serial.sentence().contains("`matmul` (ptxas names no line)"), "{}", serial.sentence());

    let shape = Shape { m: 256, n: 256, k: 256 };
    let (_, verdict, traffic) = emulator::emulate_counted(&STEP, &[], shape).unwrap();
    assert!(verdict.passed());
    // The H100's cycles for the product, without and with the serialisation.
    let cycles = |serialized: bool| {
        let (p, seconds) =
            common::predicted::launch(&predict::H100, (&traffic, &[]), (1, 0, serialized), shape, &[]);
        (seconds * p.clock_mhz * 1e6, p.unchecked)
    };
    let ((plain, _), (serial, unchecked)) = (cycles(false), cycles(true));
    // Two blocks, one an SM: each block's 2 consumers × 8 slices × 4 wgmma add a drain each.
    assert_eq!(traffic.wgmma_instructions / traffic.blocks / 4, 2 * 8 * 4);
    let drains = (2 * 8 * 4) as f64 * predict::WGMMA_DRAIN_ESTIMATE;
    assert!((serial - plain - drains).abs() < 0.01 * drains, "{plain} cycles, serialised {serial}");
    assert!(unchecked.iter().any(|u| u.contains("serialised its wgmma")), "{unchecked:?}");
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_the_labs_kernels_draw_no_advisories() {
    assert_eq!(advisories_of(&STEP), vec![]);
    for (file, source) in [
        (
            "step08_wgmma_tma/variants/transposing_prologue.cu",
            include_str!("../variants/transposing_prologue.cu"),
        ),
        (
            "step08_wgmma_tma/variants/in_pipeline_transpose.cu",
            include_str!("../variants/in_pipeline_transpose.cu"),
        ),
    ] {
        assert_eq!(advisories_of(&emulator::with_source(&STEP, file, source.into())), vec![], "{file}");
    }
    // The documented widths.
    let shape = Shape { m: 256, n: 256, k: 256 };
    for set in [&[("BM", 128), ("BN", 64), ("STAGES", 2)][..], &[("BM", 128), ("BN", 192), ("STAGES", 3)]] {
        let overrides: Vec<(String, u32)> = set.iter().map(|(n, v)| ((*n).to_owned(), *v)).collect();
        let (params, _) = STEP.params_for(shape, emulated::profile::H100.machine.sms, &overrides).unwrap();
        assert_eq!(
            EmulatorStep::new(&STEP, params, shape, true, &emulated::profile::H100).unwrap().advisories,
            vec![],
            "{set:?}"
        );
    }
}

/// A learner's run prints the advisory before the run's report, and the lab's own run none.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_an_emulated_run_prints_the_advisory_before_its_report() {
    const BIN: &str = env!("CARGO_BIN_EXE_step08_wgmma_tma");
    let planted = STEP.source.replacen("            wgmma_fence();\n", "", 1);
    let path = scratch_file("no_fence.cu", &planted);
    let path = path.to_str().unwrap();
    let ran = run_for_report(BIN, &["--emulate", "--kernel", path, "--size", "64"], &[]);
    let out = &ran.out;
    assert_eq!(ran.code, Some(0), "{out}{}", ran.err);
    let call = line_of(&planted, "wgmma(acc, frag[k8]");
    let first = out.lines().next().unwrap_or_default();
    assert!(first.starts_with(&format!("note: {path}:")), "{out}");
    assert!(first.contains(&format!("(inlined at line {call}): ptxas advisory C7519:")), "{out}");
    assert!(out.lines().nth(1).is_some_and(|l| l.contains("emulated on the CPU")), "{out}");
    assert!(ran.passed(), "{out}");
    let (code, out, err) = run_for_output(BIN, &["--emulate", "--size", "64"]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(!out.contains("advisory"), "{out}");
}

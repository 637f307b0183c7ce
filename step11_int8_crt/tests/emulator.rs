//! Step 11 on the PTX emulator: its whole sequence (the scaling and residues, the marks, the
//! bound, the second pass, the INT8 products from tensor maps of its own workspaces, the rebuild
//! and the FP32 path) run on the CPU within FP32's limits, at small and odd shapes, for the
//! kernel, its one-pass variant and every count of moduli; the exercise's starting file failing
//! as the chapter says.

use common::emulated;
use common::matrix::Family;
use common::run::EmulatorStep;
use common::testing::emulator::{self, EMULATED_SHAPES};
use common::testing::exercises::Exercise;
use common::verify::{self, Verdict};
use common::{GpuStep, Inputs, Shape, reference, testing};
use step11_int8_crt::coherent::{Ties, coherent};
use step11_int8_crt::{COUNT, MODULI, STEP};

/// Runs `step` (its parameters for the shape, then `overrides`) on `inputs` on the emulator, with
/// the race check on: its C, its verdict, and the moduli it took.
fn emulate(step: &GpuStep, overrides: &[(&str, u32)], inputs: &Inputs) -> (Vec<f32>, Verdict, usize) {
    let shape = inputs.shape;
    let overrides: Vec<(String, u32)> = overrides.iter().map(|(n, v)| ((*n).to_owned(), *v)).collect();
    let (params, _) = step.params_for(shape, emulated::profile::H100.machine.sms, &overrides).unwrap();
    let mut run = EmulatorStep::new(step, params, shape, false, &emulated::profile::H100).unwrap();
    let (c, _) = run.multiply(inputs, true).unwrap_or_else(|e| panic!("{} at {shape}: {e}", step.file));
    let moduli = run.paths.as_ref().and_then(|p| p.products).expect("the product's moduli");
    let verdict = verify::verify(shape, &c, &reference::cpu(inputs), step.precision);
    (c, verdict, moduli)
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_kernel_matches_the_reference() {
    emulator::assert_emulated_pass(&STEP, &[], EMULATED_SHAPES);
    // Two buffers and block-rows that do not divide the grid; eight moduli in the first pass.
    emulator::assert_emulated_pass(&STEP, &[("STAGES", 2), ("GROUP", 3)], &EMULATED_SHAPES[..2]);
    emulator::assert_emulated_pass(&STEP, &[(MODULI.name, 8)], &[(67, 45, 129)]);
}

/// The one-pass variant, whose blocks take their tile through every modulus and rebuild C
/// themselves (no `reconstruct` kernel queued).
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_one_pass_variant_matches_the_reference() {
    let v = GpuStep {
        file: "step11_int8_crt/variants/fused.cu",
        source: include_str!("../variants/fused.cu"),
        params: step11_int8_crt::FUSED_PARAMS,
        ..STEP
    };
    emulator::assert_emulated_pass(&v, &[], &EMULATED_SHAPES[..2]);
}

/// Every count the product can be forced to take, from the first pass's 7 to all 16 moduli: the
/// second pass's residues, the products that take the moduli beyond the first pass's, and the
/// wide rebuild (four 32-bit limbs) all run.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_every_count_of_moduli_matches_the_reference() {
    let x = Inputs::random(Shape::new(67, 45, 129).unwrap(), 5);
    for count in [7, 8, 9, 12, 16] {
        let (_, verdict, taken) = emulate(&STEP, &[(COUNT.name, count)], &x);
        assert!(verdict.passed(), "{count} moduli: {}", verdict.summary());
        assert_eq!(taken, count as usize, "the moduli the product took");
    }
}

/// Inputs whose rows span many binades (lognormal, σ = 3): the rule marks most vectors, the bound
/// (a bf16 wgmma product of the magnitudes) asks for more moduli than the first pass's, and the
/// second pass carries them; the product still holds FP32's limits.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_wide_rows_take_more_moduli_and_pass() {
    let shape = Shape::new(130, 257, 192).unwrap();
    let x = Inputs::family(shape, 9, Family::LogNormal(3.0));
    let (_, verdict, taken) = emulate(&STEP, &[], &x);
    assert!(verdict.passed(), "{}", verdict.summary());
    assert!(taken > 7, "the bound kept lognormal rows at the first pass's {taken} moduli");
}

/// NaN, infinities, zeros and the ends of FP32's range take the FP32 path, and C holds what FP32
/// gives there.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_special_inputs_pass() {
    for (m, n, k) in [(67, 45, 129), (33, 31, 33)] {
        let x = testing::special_inputs(Shape::new(m, n, k).unwrap(), 11);
        let (_, verdict, _) = emulate(&STEP, &[], &x);
        assert!(verdict.passed(), "{m}×{n}×{k}: {}", verdict.summary());
    }
}

/// The exercise's starting file, whose residues are all 0, fails as the chapter says: C is 0
/// wherever the FP32 path does not write it, a normwise error of 1.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_starting_file_fails_with_a_normwise_error_of_one() {
    let exercise = Exercise {
        file: "step11_int8_crt/exercises/residues.cu",
        start: include_str!("../exercises/residues.cu"),
        solution: include_str!("../exercises/residues.diff"),
        answer: include_str!("../src/kernel.cu"),
    };
    let started = emulator::with_source(&STEP, exercise.file, exercise.start.to_owned());
    emulator::assert_starting_files_fail(&STEP, &[exercise], (64, 64, 64));
    let (c, verdict, _) = emulate(&started, &[], &Inputs::random(Shape::new(64, 64, 64).unwrap(), 42));
    let written = c.iter().filter(|&&v| v != 0.0).count();
    assert_eq!(written, 0, "the starting file wrote something other than 0: {:?}", &c[..8]);
    assert!(verdict.summary().contains("‖ΔC‖/‖C‖ 1.0e0"), "{}", verdict.summary());
}

/// Inputs whose scaled entries are half-integers that rounding to nearest would take ½ from each
/// time while C cancels (`coherent`): the step passes them, in A and in B, at the rule's seven
/// moduli and at counts forced past it, each well inside FP32's limit. With its scaled entries
/// rounded to nearest instead (the planted fault), C is off by about itself, and it fails at
/// seven moduli where entries of one size set the scale (K = 256). At K = 129 a large first entry
/// sets it, against zeros in the other operand: the equilibration along K scales that column of
/// zero products down, the others then fit their integers exactly, and nothing is left to round.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_coherent_half_integers_pass_and_rounding_to_nearest_fails() {
    let nearest = testing::edited(&STEP, &[("return on && fabsf(v) >= 1.0f ? rounded : v;", "return v;")]);
    for ((m, n, k), moduli) in [((16, 16, 256), 7), ((9, 7, 129), 7), ((16, 12, 64), 8), ((12, 16, 96), 9)] {
        for ties in [Ties::A, Ties::B] {
            let x = coherent(Shape::new(m, n, k).unwrap(), moduli, ties).unwrap();
            let forced: Vec<(&str, u32)> =
                if moduli > 7 { vec![(COUNT.name, moduli as u32)] } else { vec![] };
            let (_, verdict, taken) = emulate(&STEP, &forced, &x);
            assert!(
                verdict.passed() && verdict.normwise.ratio() < 0.75,
                "{}, {m}×{n}×{k}: {}",
                x.source,
                verdict.summary()
            );
            assert_eq!(taken, moduli, "{}, {m}×{n}×{k}: the moduli the product took", x.source);
            if moduli == 7 && k >= 256 {
                let (_, verdict, _) = emulate(&nearest, &forced, &x);
                assert!(!verdict.passed(), "{}, {m}×{n}×{k}, to nearest: {}", x.source, verdict.summary());
            }
        }
    }
}

/// Every vector carried at one modulus fewer than the count the product takes (the fault of
/// tests/kernel.rs's `ONE_MODULUS_SHORT`).
const ONE_MODULUS_SHORT: (&str, &str) = (
    "double limit = sqrt(0.5 * TABLE.product[L]) * (1.0 - MARGIN);",
    "double limit = sqrt(0.5 * TABLE.product[L - 1]) * (1.0 - MARGIN);",
);

/// Data scaled along K (A's column p times 2^s_p, B's row p times 2^−s_p, s_p from −E to E),
/// whose product is the uniform family's: held to a strict FP32 product's limits, the step
/// passes at E = 12 and E = 40 (the equilibration along K takes the spread back out, and the
/// report says so), and one modulus fewer than the count the product takes fails.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_k_scaled_data_passes_fp32s_limits_and_a_modulus_short_fails() {
    let short = emulator::planted(&STEP, ONE_MODULUS_SHORT.0, ONE_MODULUS_SHORT.1);
    for (e, (m, n, k)) in [(12, (64, 64, 1024)), (40, (64, 64, 1024)), (12, (33, 70, 1000))] {
        let x = Inputs::family(Shape::new(m, n, k).unwrap(), 21, Family::KScaled(e));
        let (params, _) = STEP.params_for(x.shape, emulated::profile::H100.machine.sms, &[]).unwrap();
        let mut run = EmulatorStep::new(&STEP, params, x.shape, false, &emulated::profile::H100).unwrap();
        let (c, _) = run.multiply(&x, true).unwrap();
        let verdict = verify::verify(x.shape, &c, &reference::cpu(&x), STEP.precision);
        let needs = run.paths.as_ref().and_then(|p| p.more.clone()).expect("the needs line").1;
        assert!(verdict.passed(), "kscaled:{e} {m}×{n}×{k}: {}", verdict.summary());
        // The device's shifts are the host's (`equilibrate::shifts`).
        let shifts = step11_int8_crt::equilibrate::shifts(&x);
        let moved = shifts.iter().filter(|&&s| s != 0).count();
        let (lo, hi) = (shifts.iter().min().unwrap(), shifts.iter().max().unwrap());
        let says = format!(
            "along K: A's column k times 2^s and B's row k times 2^−s on {moved} of {k} (s from {lo} to {hi})"
        );
        assert!(needs.contains(&says), "kscaled:{e}: {needs}, not {says}");
        let (_, planted, _) = emulate(&short, &[], &x);
        assert!(!planted.passed(), "a modulus short, kscaled:{e} {m}×{n}×{k}: {}", planted.summary());
    }
    // Every significand bit drawn (the integers then round), scaled along K by 2^±12 and 2^±40:
    // FP32's limits still hold, and one modulus short still fails.
    for e in [12, 40] {
        let mut x = Inputs::random_full(Shape::new(64, 64, 1024).unwrap(), 23);
        let base = Inputs::family(x.shape, 23, Family::KScaled(e));
        let uniform = Inputs::random(x.shape, 23);
        for p in 0..1024 {
            // The same 2^s_p as kscaled:E: its entry over the uniform family's (both nonzero).
            let i = (0..64).find(|&i| uniform.a.at(i, p) != 0.0).unwrap();
            let up = base.a.at(i, p) / uniform.a.at(i, p);
            (0..64).for_each(|i| x.a.data[i * 1024 + p] *= up);
            x.b.data[p * 64..(p + 1) * 64].iter_mut().for_each(|v| *v /= up);
        }
        let (_, verdict, _) = emulate(&STEP, &[], &x);
        assert!(verdict.passed(), "full bits, scaled by 2^±{e}: {}", verdict.summary());
        let (_, planted, _) = emulate(&short, &[], &x);
        assert!(!planted.passed(), "a modulus short, full bits, 2^±{e}: {}", planted.summary());
    }
    // The uniform family needs no shift, and the report says none was made.
    let x = Inputs::random(Shape::new(64, 64, 256).unwrap(), 3);
    let (params, _) = STEP.params_for(x.shape, emulated::profile::H100.machine.sms, &[]).unwrap();
    let mut run = EmulatorStep::new(&STEP, params, x.shape, false, &emulated::profile::H100).unwrap();
    run.multiply(&x, true).unwrap();
    let needs = run.paths.as_ref().and_then(|p| p.more.clone()).expect("the needs line").1;
    assert!(needs.contains("none scaled"), "{needs}");
}

/// One block of each kind, scaled (`--emulate --scaled`), counts what the whole grid counts: the
/// product's blocks (every modulus along z), and the kernels around it, those after it (the
/// rebuild of C, the FP32 path) scaled too.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_scaled_counts_match_the_whole_emulation() {
    common::testing::emulator::assert_scaled_counts_match(&STEP, &[(512, 384, 256)]);
}

/// Compiled wide (64-bit offsets), the kernel gives the narrow kernel's C bit for bit, and its
/// PTX forms no global address from a 32-bit product of M, N or K; its offsets were 64-bit
/// already, so its narrow PTX forms none either.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_wide_offsets_give_the_same_c() {
    common::testing::wide_offsets::assert_wide_matches_narrow(&STEP, &[(67, 45, 129), (33, 7, 5)], false);
}

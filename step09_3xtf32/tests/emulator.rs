//! Step 09 on the PTX emulator: its whole launch (the marks, the split of A, the product with its
//! split of K, and the FP32 path's module beside it) run on the CPU within FP32's limits, at
//! small and odd shapes, for the kernel, its variants and its parameter sets; rows and columns
//! the split cannot carry sent down the FP32 path and computed there; the exercise's starting
//! file and planted faults failing where they must.

use common::emulated::{self, Traffic};
use common::run::EmulatorStep;
use common::testing::emulator::{self, EMULATED_SHAPES};
use common::testing::exercises::Exercise;
use common::verify::{self, Verdict};
use common::{GpuStep, Inputs, Precision, Shape, reference, testing};
use step09_3xtf32::STEP;

mod edge;

/// Runs `step` (its parameters for the shape, then `overrides`) on `inputs` on the emulator, with
/// the race check on: its C, its verdict against its own precision's limits, and the FLOPs the
/// FP32 path's kernels did.
fn emulate(step: &GpuStep, overrides: &[(&str, u32)], inputs: &Inputs) -> (Vec<f32>, Verdict, u64) {
    emulate_held(step, overrides, inputs, step.precision)
}

/// As [`emulate`], the verdict against `precision`'s limits.
fn emulate_held(
    step: &GpuStep,
    overrides: &[(&str, u32)],
    inputs: &Inputs,
    precision: Precision,
) -> (Vec<f32>, Verdict, u64) {
    let shape = inputs.shape;
    let overrides: Vec<(String, u32)> = overrides.iter().map(|(n, v)| ((*n).to_owned(), *v)).collect();
    let (params, _) = step.params_for(shape, emulated::profile::H100.machine.sms, &overrides).unwrap();
    let run = EmulatorStep::new(step, params, shape, false, &emulated::profile::H100)
        .and_then(|mut e| e.multiply(inputs, true));
    let (c, (_, others)) = run.unwrap_or_else(|e| panic!("{} at {shape}: {e}", step.file));
    let verdict = verify::verify(shape, &c, &reference::cpu(inputs), precision);
    (c, verdict, fp32_flops(&others))
}

/// The FLOPs of the FP32 path's product kernels: none where no row or column went there.
fn fp32_flops(others: &[(String, Traffic)]) -> u64 {
    others.iter().filter(|(entry, _)| entry.starts_with("fp32_")).map(|(_, t)| t.flops).sum()
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_kernel_matches_the_reference() {
    emulator::assert_emulated_pass(&STEP, &[], EMULATED_SHAPES);
    // One consumer and the deepest pipeline that fits, block-rows that do not divide the grid.
    emulator::assert_emulated_pass(&STEP, &[("BN", 64), ("STAGES", 5), ("GROUP", 3)], &EMULATED_SHAPES[..2]);
    // K split between three blocks a tile, also where K has fewer 32-deep tiles than blocks.
    emulator::assert_emulated_pass(&STEP, &[("SPLIT_K", 3)], &[(67, 45, 129), (33, 7, 5)]);
}

/// Where the tiles leave an H100's SMs idle, the launch splits K itself: six tiles of a K of
/// 1030 between four blocks each, the last of them adding the slices. Uniform inputs send
/// nothing down the FP32 path, whose kernels then leave at once.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_split_of_k_matches_the_reference() {
    let shape = Shape::new(130, 257, 1030).unwrap();
    let (params, _) = STEP.params_for(shape, emulated::profile::H100.machine.sms, &[]).unwrap();
    let geometry = EmulatorStep::new(&STEP, params, shape, false, &emulated::profile::H100).unwrap().geometry;
    assert_eq!(geometry.grid, (3, 2, 4), "the launch's own split of K");
    let (_, verdict, flops) = emulate(&STEP, &[], &Inputs::random(shape, 3));
    assert!(verdict.passed(), "{shape}: {}", verdict.summary());
    assert_eq!(flops, 0, "the FP32 path computed something for inputs it should leave alone");
}

/// `x` with rows `rows` of A and columns `cols` of B made too wide for the split: a row's
/// entries scaled by 2⁻⁶¹ and its first set to 1.5·2¹⁰⁰ (160 binades and more), a column's
/// scaled by 2⁻⁵⁰ and its fourth set to 1.25·2⁶⁰ (110 and more). The scaling carries neither:
/// their least entries, scaled, would make products below FP32's normal range.
fn widened(mut x: Inputs, rows: &[usize], cols: &[usize]) -> Inputs {
    let Shape { n, k, .. } = x.shape;
    for &i in rows {
        x.a.data[i * k..(i + 1) * k].iter_mut().for_each(|v| *v *= 2f32.powi(-61));
        x.a.data[i * k] = 1.5 * 2f32.powi(100);
    }
    for &j in cols {
        (0..k).for_each(|p| x.b.data[p * n + j] *= 2f32.powi(-50));
        x.b.data[(3 % k) * n + j] = 1.25 * 2f32.powi(60);
    }
    x
}

/// The rows of A and columns of B the split cannot carry in `x`: those with NaN or an infinity,
/// and `wide`'s.
fn apart(x: &Inputs, (wide_rows, wide_cols): (&[usize], &[usize])) -> (Vec<usize>, Vec<usize>) {
    let Shape { m, n, k } = x.shape;
    let rows = (0..m)
        .filter(|i| wide_rows.contains(i) || x.a.data[i * k..(i + 1) * k].iter().any(|v| !v.is_finite()));
    let cols = (0..n).filter(|j| wide_cols.contains(j) || (0..k).any(|p| !x.b.data[p * n + j].is_finite()));
    (rows.collect(), cols.collect())
}

/// The FP32 path's answer for C[i, j] where its K is one piece (K < 512): the products' FMAs in
/// the order of k, from zero.
fn fp32_chain(x: &Inputs, i: usize, j: usize) -> f32 {
    let Shape { n, k, .. } = x.shape;
    (0..k).fold(0.0f32, |acc, p| x.a.data[i * k + p].mul_add(x.b.data[p * n + j], acc))
}

/// The same float, NaN taken as equal to NaN.
fn same(got: f32, want: f32) -> bool {
    got == want || (got.is_nan() && want.is_nan())
}

/// Checks that C holds the FP32 path's answer, bit for bit, in every element of the marked rows
/// and in the marked columns of the other rows (where the 3×TF32 product would round otherwise),
/// and that the path did at least those elements' FLOPs.
fn assert_fp32_path_took(x: &Inputs, c: &[f32], flops: u64, (rows, cols): (&[usize], &[usize])) {
    let Shape { m, n, k } = x.shape;
    let elements = rows.len() * n + (m - rows.len()) * cols.len();
    assert!(
        flops >= (2 * k * elements) as u64,
        "{}: the FP32 path did {flops} FLOPs for {} rows and {} columns",
        x.shape,
        rows.len(),
        cols.len()
    );
    for i in 0..m {
        for j in 0..n {
            if rows.contains(&i) || cols.contains(&j) {
                let (got, want) = (c[i * n + j], fp32_chain(x, i, j));
                assert!(same(got, want), "{}: C[{i}, {j}] = {got:e}, the FP32 path's is {want:e}", x.shape);
            }
        }
    }
}

/// NaN and infinities (in four rows of A and three columns of B), a row of A and a column of B
/// too wide for the split: a few of each, which the FP32 path's few-rows and few-columns kernels
/// compute, while the product leaves them alone.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_rows_and_columns_apart_take_the_fp32_path() {
    for (m, n, k) in [(67, 45, 129), (33, 31, 33), (130, 257, 40)] {
        let shape = Shape::new(m, n, k).unwrap();
        let wide = (&[5][..], &[9][..]);
        let x = widened(testing::special_inputs(shape, 11), wide.0, wide.1);
        let (rows, cols) = apart(&x, wide);
        assert!(rows.len() == 5 && cols.len() == 4, "{shape}: rows {rows:?}, columns {cols:?} apart");
        let (c, verdict, flops) = emulate(&STEP, &[], &x);
        assert!(verdict.passed(), "{shape}: {}", verdict.summary());
        assert_fp32_path_took(&x, &c, flops, (&rows, &cols));
    }
}

/// More than sixteen rows and columns apart: the FP32 path's tiled kernels take them, a tile of
/// 128×256 at a time through the lists, with edges in every direction.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_many_rows_and_columns_apart_take_the_tiled_fp32_path() {
    let shape = Shape::new(150, 70, 100).unwrap();
    let (rows, cols): (Vec<usize>, Vec<usize>) =
        ((0..150).step_by(7).collect(), (1..70).step_by(3).collect());
    let x = widened(Inputs::random(shape, 5), &rows, &cols);
    assert_eq!(apart(&x, (&rows, &cols)), (rows.clone(), cols.clone()));
    let (c, verdict, flops) = emulate(&STEP, &[], &x);
    assert!(verdict.passed(), "{shape}: {}", verdict.summary());
    assert_fp32_path_took(&x, &c, flops, (&rows, &cols));
}

/// The GPU's test of the ends of FP32's range (`tests/kernel.rs`), on its inputs and shape: a row
/// of A in subnormals, a row of A and a column of B at 2⁻⁶⁰, a row at 2⁷⁰, a row spanning 140
/// binades whose least entry meets the least of a column spanning 97, and NaN and infinities,
/// beside a product whose nine tiles split K in two, so that the split's last blocks and the FP32
/// path both write C. The step passes FP32's check as the GPU test holds it (FP32's own limits,
/// without the split's allowance); three planted faults fail on the same inputs: the kernel edited
/// to mark nothing, rows judged without the columns they meet, and the scaling's exponent not
/// kept within FP32's. (The H100 gave these faults the same verdicts, worst elements and ratios:
/// `docs/src/results/runs/2026-11-26-nvidia-h100-80gb-hbm3-fp32-path-every-row-development.log`.)
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_subnormal_tiny_huge_and_non_finite_inputs_give_fp32s_answer() {
    let shape = Shape::new(320, 288, 512).unwrap();
    let x = edge::inputs(shape);
    let (params, _) = STEP.params_for(shape, emulated::profile::H100.machine.sms, &[]).unwrap();
    assert_eq!(
        EmulatorStep::new(&STEP, params, shape, false, &emulated::profile::H100).unwrap().geometry.grid,
        (3, 3, 2)
    );
    let carried = "return finite && (largest == 0.0f || (low >= 0x1p-100f && low * met >= 0x1p-100f));";
    let split_alone = emulator::planted(&STEP, carried, "return true;  // fault: nothing apart");
    let alone = "return finite && (largest == 0.0f || low >= 0x1p-100f);  // fault: met ignored";
    let unmet = emulator::planted(&STEP, carried, alone);
    let clamp = "return min(127, max(-126, 48 - ilogbf(largest)));";
    let unclamped = emulator::planted(&STEP, clamp, "return 48 - ilogbf(largest);  // fault");
    let (_, verdict, flops) = emulate_held(&STEP, &[], &x, Precision::Fp32);
    assert!(verdict.passed(), "the step: {}", verdict.summary());
    assert!(flops > 0, "nothing went down the FP32 path");
    for (what, step) in [("nothing apart", &split_alone), ("met ignored", &unmet), ("unclamped", &unclamped)]
    {
        let (_, verdict, _) = emulate_held(step, &[], &x, Precision::Fp32);
        assert!(!verdict.passed(), "the planted fault `{what}` passed: {}", verdict.summary());
    }
}

/// The measured alternatives in `variants/`, each the kernel with one change (kept as its diff),
/// run through the same launch: Kahan's compensated sum, one running sum, and the split done in the
/// pipeline (each warp's split handed to the consumers after `__syncwarp()`) keep FP32's limits;
/// letting the tensor cores sum all of K does not (their adds round toward zero), which the check
/// catches at a K of 300 (below 256 every row takes the FP32 path: `SPLIT_FROM_K`).
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_variants_match_the_reference_but_the_tensor_cores_own_sums() {
    let variant = |name: &str, diff: &str| {
        common::compile_only::with_diff(&STEP, &format!("step09_3xtf32/variants/{name}.diff"), diff).unwrap()
    };
    for (name, diff) in [
        ("no_flush", include_str!("../variants/no_flush.diff")),
        ("compensated", include_str!("../variants/compensated.diff")),
        ("in_pipeline", include_str!("../variants/in_pipeline.diff")),
    ] {
        emulator::assert_emulated_pass(&variant(name, diff), &[], &EMULATED_SHAPES[..3]);
    }
    let one = variant("one_accumulator", include_str!("../variants/one_accumulator.diff"));
    let (_, verdict, _) = emulate(&one, &[], &Inputs::random(Shape::new(67, 45, 300).unwrap(), 7));
    assert!(!verdict.passed(), "{}: the tensor cores' own sums passed: {}", one.file, verdict.summary());
}

/// The exercise's starting file, whose split keeps one TF32 part and one product, fails FP32's
/// check where K is deep enough for the limits to tell the precisions apart.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_starting_file_fails() {
    let exercises = [Exercise {
        file: "step09_3xtf32/exercises/split.cu",
        start: include_str!("../exercises/split.cu"),
        solution: include_str!("../exercises/split.diff"),
        answer: include_str!("../src/kernel.cu"),
    }];
    emulator::assert_starting_files_fail(&STEP, &exercises, (32, 32, 900));
}

/// Planted faults of the kernel's list (`tests/kernel.rs`) fail on the emulator where they must:
/// any of the three products left out, and the last term of K dropped, at a K deep enough for
/// FP32's limits to see a TF32-sized error or one missing term.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_planted_faults_fail() {
    let faults = [
        ("A's small part dropped", "                wgmma(part, big[k8], a_small + k, 1);\n", ""),
        (
            "the leading product dropped",
            "                wgmma(part, big[k8], a_big + k, 1);      // then the leading product\n",
            "",
        ),
        (
            "the last term of K dropped",
            "float2 lo = load_pair(bs, 8 * k8 + t, col), hi = load_pair(bs, 8 * k8 + t + 4, col);",
            "float2 lo = load_pair(bs, 8 * k8 + t, col), hi = load_pair(bs, 8 * k8 + t + 4, col);
                if (kt * BK + 8 * k8 + t == K - 1) lo = make_float2(0.0f, 0.0f);
                if (kt * BK + 8 * k8 + t + 4 == K - 1) hi = make_float2(0.0f, 0.0f);",
        ),
    ];
    for (what, find, replace) in faults {
        let step = emulator::planted(&STEP, find, replace);
        let (_, verdict, _) = emulate(&step, &[], &Inputs::random(Shape::new(32, 32, 900).unwrap(), 7));
        assert!(!verdict.passed(), "{what} passed at 32×32×900: {}", verdict.summary());
    }
}

/// One block of each kind, scaled (`--emulate --scaled`), counts what the whole grid counts.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_scaled_counts_match_the_whole_emulation() {
    common::testing::emulator::assert_scaled_counts_match(&step09_3xtf32::STEP, &[(256, 256, 128)]);
}

/// Below `SPLIT_FROM_K` three TF32 products cannot reach a strict FP32 product's accuracy (their
/// error stays near four units of roundoff of each term while FP32's sums err less at short K):
/// every row takes the FP32 path there, and C passes FP32's limits; from `SPLIT_FROM_K` on, the
/// split computes C and passes them too, on the uniform family and on data scaled along K.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_short_k_takes_the_fp32_path_and_every_k_holds_fp32s_limits() {
    use common::matrix::Family;
    for (k, apart) in [(9, true), (40, true), (255, true), (256, false), (300, false)] {
        for family in [Family::Uniform, Family::KScaled(12)] {
            let x = Inputs::family(Shape::new(130, 67, k).unwrap(), 5, family);
            let (_, verdict, fp32) = emulate(&STEP, &[], &x);
            assert!(verdict.passed(), "{family} at K = {k}: {}", verdict.summary());
            // The FP32 path's FLOPs count whole tiles: at least the product's where every row
            // goes there, none on uniform data where none does.
            let whole = 2 * 130 * 67 * k as u64;
            let says = format!("{family} at K = {k}: {fp32} FLOPs on the FP32 path, of {whole}");
            match (apart, family) {
                (true, _) => assert!(fp32 >= whole, "{says}"),
                (false, Family::Uniform) => assert_eq!(fp32, 0, "{says}"),
                _ => {}
            }
        }
    }
    assert_eq!(step09_3xtf32::apart::SPLIT_FROM_K, 256);
}

/// Compiled wide (64-bit offsets), the kernel gives the narrow kernel's C bit for bit, and its
/// PTX forms no global address from a 32-bit product of M, N or K; its offsets were 64-bit
/// already, so its narrow PTX forms none either.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_wide_offsets_give_the_same_c() {
    common::testing::wide_offsets::assert_wide_matches_narrow(&STEP, &[(67, 45, 129), (33, 7, 5)], false);
}

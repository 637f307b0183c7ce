use common::gpu::Limits;
use common::matrix::Inputs;
use common::testing::faults::{Class, Fault};
use common::testing::{self, Checker, DEEP, SHAPES, Variant};
use common::{Extension, Params, Precision, Shape};
use step11_int8_crt::MODULI;
use step11_int8_crt::{K_MAX, STEP};

/// The rule for rows and columns computed apart switched off: nothing is. A kernel whose integers
/// are kept short would otherwise see its own shortfall and compute those rows apart, right.
const RULE_OFF: (&str, &str) =
    ("return small > 0 && static_cast<float>(weight) * __int_as_float(q_bits) > 1.0f;", "return false;");

/// The choice of moduli made too lenient: the product takes six fewer than the rule asks for. (The
/// rule is a bound for the worst placement of each vector's small entries: on the identity plus
/// noise of 2⁻²⁴ at 512×512×4096 it asks for 16, and 11 still pass; at 2048³ 13 do, 12 do not.)
const SIX_MODULI_LENIENT: (&str, &str) = ("return MODULI + j;", "return MODULI + j - 6;");

/// The scaling one bit too generous: integers twice as large, sums up to 2·P.
const ONE_BIT_GENEROUS: (&str, &str) = (
    "return ilogb((limit - 0.5 * sqrt(static_cast<double>(K))) / sqrt(norm2));",
    "return ilogb((limit - 0.5 * sqrt(static_cast<double>(K))) / sqrt(norm2)) + 1;",
);

/// The wide rebuild's share of the faults in the rebuild: where the data calls for more moduli than
/// the first pass's (small K, say), `reconstruct_wide` writes C and `reconstruct` writes nothing.
const WIDE_DROP_MODULUS: (&str, &str) =
    ("            if (l >= L) break;", "            if (l >= L - 1) break;");
const WIDE_WRONG_WEIGHT: (&str, &str) = ("times(w, y);", "times(w, y + (l == 1));");
const WIDE_ZERO: (&str, &str) = (
    "? 0.0f\n                       : static_cast<float>(integer",
    "? 0.0f\n                       : 0.0f * static_cast<float>(integer",
);

/// The planted faults of this kernel (see `common::testing::faults`): held to FP32's limits, the
/// step must catch integers kept short of what the moduli hold, a modulus left out of the
/// reconstruction, a wrong weight, and what is summed or written wrong. A row or column the rule
/// computes apart is written again after `reconstruct` (at K = 9 a row of uniform entries may go
/// apart), so the faults in what `reconstruct` writes switch the rule off.
const FAULTS: &[Fault] = &[
    Fault {
        class: Class::ScaleTruncated,
        edits: &[
            (
                "return ilogb((limit - 0.5 * sqrt(static_cast<double>(K))) / sqrt(norm2));",
                "return ilogb((limit - 0.5 * sqrt(static_cast<double>(K))) / sqrt(norm2)) - 6;",
            ),
            RULE_OFF,
        ],
    },
    Fault {
        class: Class::DropModulus,
        edits: &[
            (
                "        for (int l = 0; l < MODULI; ++l) {\n            unsigned bytes",
                "        for (int l = 0; l < MODULI - 1; ++l) {\n            unsigned bytes",
            ),
            WIDE_DROP_MODULUS,
        ],
    },
    Fault {
        class: Class::WrongWeight,
        edits: &[
            (
                "t.weight[l] = static_cast<double>(weight(l));",
                "t.weight[l] = static_cast<double>(weight(l) + (l == 1 ? P / modulus(1) : 0));",
            ),
            WIDE_WRONG_WEIGHT,
        ],
    },
    Fault {
        class: Class::DropTerm,
        edits: &[("float scaled = scale(v[j]);", "float scaled = k0 + j == K - 1 ? 0.0f : scale(v[j]);")],
    },
    Fault {
        class: Class::DropSlice,
        edits: &[("int k_tiles = (K + BK - 1) / BK;", "int k_tiles = (K - 1) / BK;")],
    },
    Fault {
        class: Class::Zero,
        edits: &[
            (
                "c[v] = static_cast<float>(integer * __hiloint2double((1023 - ea - eb) << 20, 0));",
                "c[v] = 0.0f;",
            ),
            WIDE_ZERO,
        ],
    },
    Fault {
        class: Class::Row,
        edits: &[
            (
                "for (int i = blockIdx.y; i < M; i += gridDim.y) {",
                "for (int i = blockIdx.y; i < M - 1; i += gridDim.y) {",
            ),
            RULE_OFF,
        ],
    },
    Fault {
        class: Class::Column,
        edits: &[
            ("if (N % 4 == 0) {", "if (N % 4 == 0 && j0 + 4 < N) {"),
            (
                "for (int v = 0; v < 4 && j0 + v < N; ++v) row[j0 + v] = c[v];",
                "for (int v = 0; v < 4 && j0 + v < N - 1; ++v) row[j0 + v] = c[v];",
            ),
            RULE_OFF,
        ],
    },
];

/// Parameter sets the chapter and the tests use: the default, eight moduli, shallower pipelines,
/// the plain launch order and a longer walk down the block-rows. (Six moduli miss FP32's limits:
/// see the error against the number of moduli.)
const SETS: &[[u32; 3]] = &[[4, 8, 7], [4, 8, 8], [3, 8, 7], [2, 1, 7], [4, 16, 7]];

fn set(v: [u32; 3]) -> Params {
    testing::named_params(&STEP, ["STAGES", "GROUP", MODULI.name], v)
}

/// The shapes of `shapes` whose K the step serves.
fn served(shapes: &[(usize, usize, usize)]) -> Vec<(usize, usize, usize)> {
    shapes.iter().copied().filter(|s| s.2 <= K_MAX).collect()
}

#[test]
fn the_step_claims_fp32_from_int8_residues_on_hopper_alone() {
    assert_eq!(STEP.precision, Precision::Int8Crt);
    assert!(matches!(STEP.extension, Extension::OwnMaps { .. }));
    for (cc, device) in [((8, 0), "A100"), ((8, 9), "L4"), ((10, 0), "B200")] {
        let err = STEP.check_compute(cc, device).unwrap_err().to_string();
        assert!(err.starts_with("step11_int8_crt needs a GPU of compute capability 9.0 exactly"), "{err}");
    }
    STEP.check_compute((9, 0), "H100").unwrap();
    assert_eq!(STEP.target("sm_90"), "sm_90a");
}

#[test]
fn documented_sets_are_valid_and_bad_ones_refused() {
    let s = Shape::square(4096).unwrap();
    for &v in SETS {
        STEP.validate(&set(v), s, &Limits::SM90).unwrap_or_else(|e| panic!("{v:?}: {e}"));
    }
    for (v, shape, says) in [
        ([4, 8, 9], s, "MODULI must be 2 to 8"),
        ([5, 8, 7], s, "STAGES must be 2 to 4"),
        ([4, 0, 7], s, "GROUP must be 1 to 64"),
        ([4, 8, 7], Shape::new(8, 8, K_MAX + 1).unwrap(), "deeper than the 131072 terms"),
        ([4, 8, 2], Shape::new(8, 8, K_MAX).unwrap(), "raise MODULI"),
    ] {
        let err = STEP.validate(&set(v), shape, &Limits::SM90).unwrap_err().to_string();
        assert!(err.contains(says), "{v:?} {shape}: {err}");
    }
    // The deepest K served, with room for the integers to spare.
    STEP.validate(&set(SETS[0]), Shape::new(8, 8, K_MAX).unwrap(), &Limits::SM90).unwrap();
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_compiles_documented_sets_for_sm90a_without_spills() {
    for &v in SETS {
        let info = testing::nvrtc_check(&STEP, &set(v), "sm_90").unwrap_or_else(|e| panic!("{v:?}: {e}"));
        assert_eq!((info.spill_bytes(), info.stack_frame), (0, 0), "{v:?}: {info:?}");
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_matches_the_reference_on_many_shapes() {
    testing::assert_defaults_pass(&STEP, &served(SHAPES));
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_documented_sets_match_the_reference() {
    for &v in SETS {
        testing::assert_all_pass(&testing::gpu_check(&STEP, set(v), &served(SHAPES)).unwrap());
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_random_shapes_match_the_reference() {
    testing::gpu_property(&STEP, Params::defaults(STEP.params), 300, testing::random_shapes());
}

/// Values uniform in [-1, 1] with every bit of the significand drawn: the course's own inputs
/// are multiples of 2⁻²², which integers of 22 bits or more hold exactly, and would hide the
/// scaling's rounding.
fn full(shape: (usize, usize, usize), seed: u64) -> Inputs {
    Inputs::random_full(Shape::new(shape.0, shape.1, shape.2).unwrap(), seed)
}

/// The accuracy the step exists for: on the same inputs (all significand bits drawn), its
/// ‖ΔC‖/‖C‖ no larger than cuBLAS SGEMM's at 1024³, 4096³, 8192³ and K = 65536, and FP32's own
/// limits met, per element too.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_error_is_no_larger_than_cublas_sgemms_and_within_fp32s_limits() {
    let checker = Checker::defaults(&STEP).unwrap();
    for shape in
        [(1024, 1024, 1024), (4096, 4096, 4096), (8192, 8192, 8192), (1024, 1024, 65536), (64, 64, 16)]
    {
        let b = testing::beside_sgemm(&checker, &full(shape, 7)).unwrap();
        let (own, sgemm) = (b.verdict.normwise.relative(), b.sgemm.normwise.relative());
        println!("{shape:?}: ‖ΔC‖/‖C‖ {own:.2e}, cuBLAS SGEMM {sgemm:.2e}; as FP32: {}", b.verdict.summary());
        assert!(b.verdict.passed(), "{shape:?}: {}", b.verdict.summary());
        if shape.2 >= 1024 {
            assert!(own <= sgemm, "{shape:?}: {own:.2e} against cuBLAS SGEMM's {sgemm:.2e}");
        }
    }
}

/// The error against the number of moduli, at 4096³ on the same inputs, beside cuBLAS SGEMM's
/// and step 09's (the chapter's figure is this test's output), with the rule for rows computed
/// apart off, so that every element is the residues' arithmetic (with it, fewer moduli send rows
/// to FP32 dot products). Each modulus more keeps about 4 bits more of every operand, until
/// FP32's own 24 are held: the error falls by about 16 a modulus from 3 to 7, and 7 is the first
/// below SGEMM's.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_error_against_the_number_of_moduli() {
    let inputs = full((4096, 4096, 4096), 11);
    let step09 = testing::beside_sgemm(&Checker::defaults(&step09_3xtf32::STEP).unwrap(), &inputs).unwrap();
    let mut errors = Vec::new();
    let rule_off = testing::edited(&STEP, &[RULE_OFF]);
    for moduli in 3..=8 {
        let checker = Checker::new(&rule_off, set([4, 8, moduli])).unwrap();
        let b = testing::beside_sgemm(&checker, &inputs).unwrap();
        if moduli == 3 {
            println!("error against moduli at 4096³ (all significand bits drawn)");
            println!("cuBLAS SGEMM {:.3e}", b.sgemm.normwise.relative());
            println!("step09 {:.3e}", step09.verdict.normwise.relative());
        }
        println!("moduli {moduli} {:.3e}", b.verdict.normwise.relative());
        errors.push((moduli, b.verdict.normwise.relative(), b.sgemm.normwise.relative()));
    }
    for w in errors.windows(2) {
        assert!(
            w[1].1 < w[0].1 / 4.0 || w[1].1 < 1e-7,
            "{} moduli: {:.2e} after {:.2e}",
            w[1].0,
            w[1].1,
            w[0].1
        );
    }
    let at = |m: u32| errors.iter().find(|e| e.0 == m).unwrap();
    assert!(at(7).1 <= at(7).2 && at(6).1 > at(6).2, "{errors:?}");
    assert!(at(7).1 < step09.verdict.normwise.relative(), "{errors:?} against step 09's");
}

/// `inputs` with the entries of each row of A scaled by 2^u, u drawn from −spread to spread.
fn rows_spread(mut inputs: Inputs, spread: i32, seed: u64) -> Inputs {
    let mut state = seed;
    for x in inputs.a.data.iter_mut() {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let u = (state >> 33) as i32 % (2 * spread + 1) - spread;
        *x *= 2f32.powi(u);
    }
    inputs
}

/// Rows whose entries spread over 2^±20: the scaling keeps about 27 bits of the row's norm, so
/// an entry 2⁻ᵗ below the norm keeps about 27 − t bits and one 2⁻²⁰ below the largest keeps few;
/// an element made mostly of a row's small entries loses its digits. ‖ΔC‖/‖C‖, which the large
/// entries dominate, stays below SGEMM's, and FP32's per-element bound holds.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_rows_with_a_wide_range_of_magnitudes() {
    let checker = Checker::defaults(&STEP).unwrap();
    for seed in [1, 2] {
        let inputs = rows_spread(full((4096, 4096, 4096), seed), 20, seed);
        let b = testing::beside_sgemm(&checker, &inputs).unwrap();
        let (own, sgemm) = (b.verdict.normwise.relative(), b.sgemm.normwise.relative());
        println!(
            "rows spread over 2^±20, draw {seed}: ‖ΔC‖/‖C‖ {own:.2e}, cuBLAS SGEMM {sgemm:.2e}; step as FP32: {}; SGEMM: {}",
            b.verdict.summary(),
            b.sgemm.summary()
        );
        assert!(own <= sgemm, "draw {seed}: {own:.2e} against {sgemm:.2e}");
        assert!(b.verdict.passed(), "draw {seed}: {}", b.verdict.summary());
    }
}

/// Inputs the scaling cannot carry as numbers: zero rows and columns give zeros, rows and
/// columns holding NaN or infinity give what cuBLAS SGEMM gives (the plain FP32 dot product),
/// and rows and columns scaled across FP32's range keep FP32's accuracy, row by row: rows from
/// 2⁻¹⁰⁰ to 2⁹⁸ and two at 2⁻¹¹⁰ (whose exponent, above 127, takes the scaling's double branch),
/// columns from 2⁻²⁰ to 2¹⁹, each row's error measured against its own norm.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_zero_nan_infinite_and_extreme_inputs_give_what_sgemm_gives() {
    let checker = Checker::defaults(&STEP).unwrap();
    let (m, n, k) = (300, 260, 1000);
    let mut inputs = full((m, n, k), 5);
    for j in 0..k {
        inputs.a.data[3 * k + j] = 0.0; // row 3 of A zero
        inputs.b.data[j * n + 5] = 0.0; // column 5 of B zero
    }
    inputs.a.data[10 * k + 17] = f32::NAN;
    inputs.a.data[20 * k + 3] = f32::INFINITY;
    inputs.a.data[21 * k + 3] = f32::NEG_INFINITY;
    inputs.b.data[3 * n + 30] = f32::INFINITY;
    inputs.b.data[9 * n + 31] = f32::NAN;
    let row_scale = |i: usize| match i {
        98 | 99 => 2f32.powi(-110),
        100..200 => 2f32.powi(2 * (i as i32 - 150)),
        _ => 1.0,
    };
    for i in 98..200 {
        let s = row_scale(i);
        inputs.a.data[i * k..(i + 1) * k].iter_mut().for_each(|x| *x *= s);
    }
    for j in 200..240 {
        let s = 2f32.powi(j as i32 - 220);
        (0..k).for_each(|p| inputs.b.data[p * n + j] *= s);
    }
    let b = testing::beside_sgemm(&checker, &inputs).unwrap();
    for (idx, (&got, &want)) in b.c.iter().zip(&b.sgemm_c).enumerate() {
        let (i, j) = (idx / n, idx % n);
        let same_class = got.is_nan() == want.is_nan()
            && got.is_infinite() == want.is_infinite()
            && (!want.is_infinite() || got == want);
        assert!(same_class, "C[{i},{j}] = {got}, cuBLAS SGEMM {want}");
        if (i == 3 || j == 5) && want == 0.0 {
            assert_eq!(got, 0.0, "C[{i},{j}] of a zero row or column");
        }
    }
    // Rows 10, 20 and 21 and columns 30 and 31 hold NaN or infinity: 3n + 2m − 6 elements.
    let nonfinite = b.c.iter().filter(|x| !x.is_finite()).count();
    println!("special inputs: {nonfinite} elements NaN or infinite, as cuBLAS SGEMM's");
    assert_eq!(nonfinite, 3 * n + 2 * m - 6);
    // Each scaled row against the f64 product, relative to the row's own norm, on the columns
    // without special values; cuBLAS SGEMM's rows the same way, for scale.
    let (mut worst, mut sgemm_worst) = ((0.0f64, 0), 0.0f64);
    for i in (98..200).chain([0, 299]) {
        let (mut err, mut sgemm_err, mut norm) = (0.0f64, 0.0f64, 0.0f64);
        for j in (0..n).filter(|&j| ![5, 30, 31].contains(&j)) {
            let want: f64 = (0..k)
                .map(|p| f64::from(inputs.a.data[i * k + p]) * f64::from(inputs.b.data[p * n + j]))
                .sum();
            err += (f64::from(b.c[i * n + j]) - want).powi(2);
            sgemm_err += (f64::from(b.sgemm_c[i * n + j]) - want).powi(2);
            norm += want * want;
        }
        let relative = (err / norm).sqrt();
        if relative > worst.0 {
            worst = (relative, i);
        }
        sgemm_worst = sgemm_worst.max((sgemm_err / norm).sqrt());
    }
    println!(
        "rows scaled from 2^-110 to 2^98: worst row error {:.2e} (row {}), cuBLAS SGEMM's worst {sgemm_worst:.2e}",
        worst.0, worst.1
    );
    assert!(
        worst.0 < 1e-5 && worst.0 < 4.0 * sgemm_worst,
        "row {}: {:.2e} against SGEMM's {sgemm_worst:.2e}",
        worst.1,
        worst.0
    );
}

/// Where the Cauchy–Schwarz bound is tight: B = Aᵀ with entries in [0, 1], so C's diagonal is
/// ‖a_i‖², the largest sum the scaling allows for. The step is right there, and an exponent one
/// larger (integers twice as large, sums up to 2·P) is caught, which random inputs, whose sums
/// stay far below the bound, would let through.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_the_bound_holds_where_cauchy_schwarz_is_tight() {
    let (m, k) = (256, 4096);
    let mut inputs = full((m, m, k), 9);
    inputs.a.data.iter_mut().for_each(|x| *x = x.abs());
    for i in 0..m {
        for p in 0..k {
            inputs.b.data[p * m + i] = inputs.a.data[i * k + p];
        }
    }
    let b = testing::beside_sgemm(&Checker::defaults(&STEP).unwrap(), &inputs).unwrap();
    assert!(b.verdict.passed(), "{}", b.verdict.summary());
    let wide = testing::edited(&STEP, &[ONE_BIT_GENEROUS]);
    let caught = testing::beside_sgemm(&Checker::defaults(&wide).unwrap(), &inputs).unwrap();
    println!("B = Aᵀ ≥ 0: {}; integers twice as large: {}", b.verdict.summary(), caught.verdict.summary());
    assert!(!caught.verdict.passed(), "integers past the bound passed: {}", caught.verdict.summary());
}

/// The same inputs give the same bits from run to run: no atomics, every sum in a fixed order.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_runs_give_the_same_bits_twice() {
    let checker = Checker::defaults(&STEP).unwrap();
    for shape in [(4096, 4096, 4096), (1000, 1000, 1000), (33, 17, 100_003)] {
        let (first, second) = (checker.result(shape, 3).unwrap(), checker.result(shape, 3).unwrap());
        assert!(first.iter().zip(&second).all(|(a, b)| a.to_bits() == b.to_bits()), "{shape:?}");
    }
}

common::planted_fault_tests!(
    STEP,
    FAULTS,
    &served(&[SHAPES, DEEP].concat()),
    env!("CARGO_BIN_EXE_step11_int8_crt")
);

/// The measured alternative in `variants/`: the kernel with these edits.
const VARIANTS: &[Variant] = &[Variant {
    file: "step11_int8_crt/variants/fused.cu",
    source: include_str!("../variants/fused.cu"),
    edits: &[&[
        (
            r#"// What it buys: FP32 accuracy at several times cuBLAS SGEMM's speed (docs/src/step11.md
// measures both)."#,
            r#"// What it buys: FP32 accuracy at several times cuBLAS SGEMM's speed (docs/src/step11.md
// measures both).
//
// Variant: one pass. A block takes its tile through every modulus and keeps the remainder
// theorem's sum in registers, a double per element, so that no residue of C goes through memory
// and no reconstruct kernel runs; 128×128 tiles, to leave the registers for the sums."#,
        ),
        (
            r#"constexpr int REACH = MOST;"#,
            r#"constexpr int REACH = MODULI;  // variant: its rebuild in doubles holds no more"#,
        ),
        (
            r#"constexpr int BN = 256;                     // columns of C per block: the N of each wgmma"#,
            r#"constexpr int BN = 128;                     // variant: columns of C per block: the N of each wgmma"#,
        ),
        (
            r#"__device__ __forceinline__ void wgmma(int (&d)[BN / 2], unsigned long long a, unsigned long long b,
                                      int accumulate) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k32.s32.s8.s8 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
        "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, "
        "%111, "
        "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, "
        "%127}, "
        "%128, %129, p;\n}\n"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]),
          "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]),
          "+r"(d[14]), "+r"(d[15]), "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]),
          "+r"(d[21]), "+r"(d[22]), "+r"(d[23]), "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]),
          "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31]), "+r"(d[32]), "+r"(d[33]), "+r"(d[34]),
          "+r"(d[35]), "+r"(d[36]), "+r"(d[37]), "+r"(d[38]), "+r"(d[39]), "+r"(d[40]), "+r"(d[41]),
          "+r"(d[42]), "+r"(d[43]), "+r"(d[44]), "+r"(d[45]), "+r"(d[46]), "+r"(d[47]), "+r"(d[48]),
          "+r"(d[49]), "+r"(d[50]), "+r"(d[51]), "+r"(d[52]), "+r"(d[53]), "+r"(d[54]), "+r"(d[55]),
          "+r"(d[56]), "+r"(d[57]), "+r"(d[58]), "+r"(d[59]), "+r"(d[60]), "+r"(d[61]), "+r"(d[62]),
          "+r"(d[63]), "+r"(d[64]), "+r"(d[65]), "+r"(d[66]), "+r"(d[67]), "+r"(d[68]), "+r"(d[69]),
          "+r"(d[70]), "+r"(d[71]), "+r"(d[72]), "+r"(d[73]), "+r"(d[74]), "+r"(d[75]), "+r"(d[76]),
          "+r"(d[77]), "+r"(d[78]), "+r"(d[79]), "+r"(d[80]), "+r"(d[81]), "+r"(d[82]), "+r"(d[83]),
          "+r"(d[84]), "+r"(d[85]), "+r"(d[86]), "+r"(d[87]), "+r"(d[88]), "+r"(d[89]), "+r"(d[90]),
          "+r"(d[91]), "+r"(d[92]), "+r"(d[93]), "+r"(d[94]), "+r"(d[95]), "+r"(d[96]), "+r"(d[97]),
          "+r"(d[98]), "+r"(d[99]), "+r"(d[100]), "+r"(d[101]), "+r"(d[102]), "+r"(d[103]),
          "+r"(d[104]), "+r"(d[105]), "+r"(d[106]), "+r"(d[107]), "+r"(d[108]), "+r"(d[109]),
          "+r"(d[110]), "+r"(d[111]), "+r"(d[112]), "+r"(d[113]), "+r"(d[114]), "+r"(d[115]),
          "+r"(d[116]), "+r"(d[117]), "+r"(d[118]), "+r"(d[119]), "+r"(d[120]), "+r"(d[121]),
          "+r"(d[122]), "+r"(d[123]), "+r"(d[124]), "+r"(d[125]), "+r"(d[126]), "+r"(d[127])
        : "l"(a), "l"(b), "r"(accumulate));
}
"#,
            r#"__device__ __forceinline__ void wgmma(int (&d)[BN / 2], unsigned long long a, unsigned long long b,
                                      int accumulate) {
    // variant: the m64n128k32 form, 64 accumulators a thread
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k32.s32.s8.s8 {"
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
                 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
                 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
                 "%64, %65, p;\n}\n"
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]),
                   "+r"(d[6]), "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]),
                   "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]), "+r"(d[16]), "+r"(d[17]),
                   "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]),
                   "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]),
                   "+r"(d[30]), "+r"(d[31]), "+r"(d[32]), "+r"(d[33]), "+r"(d[34]), "+r"(d[35]),
                   "+r"(d[36]), "+r"(d[37]), "+r"(d[38]), "+r"(d[39]), "+r"(d[40]), "+r"(d[41]),
                   "+r"(d[42]), "+r"(d[43]), "+r"(d[44]), "+r"(d[45]), "+r"(d[46]), "+r"(d[47]),
                   "+r"(d[48]), "+r"(d[49]), "+r"(d[50]), "+r"(d[51]), "+r"(d[52]), "+r"(d[53]),
                   "+r"(d[54]), "+r"(d[55]), "+r"(d[56]), "+r"(d[57]), "+r"(d[58]), "+r"(d[59]),
                   "+r"(d[60]), "+r"(d[61]), "+r"(d[62]), "+r"(d[63])
                 : "l"(a), "l"(b), "r"(accumulate));
}
"#,
        ),
        (
            r#"// ANCHOR_END: residue"#,
            r#"// variant: sum += w·(acc mod M), for every element of the thread's tile.
template <int M_L>
__device__ __forceinline__ void add_residues(const int (&acc)[BN / 2], double (&sum)[BN / 2],
                                             double w) {
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) {
        int r = acc[i] % M_L;
        r += r < 0 ? M_L : 0;
        sum[i] = fma(w, __hiloint2double(0x43300000, r) - 4503599627370496.0, sum[i]);
    }
}
// ANCHOR_END: residue"#,
        ),
        (
            r#"    // The grid has a z for each of the first pass's MODULI moduli; where the data called for L
    // more, the block takes z, then z + MODULI, … below L in turn. The count of tiles, `it`, goes
    // on from one modulus to the next, and so do the barriers' phases.
    const int L = chosen(stats);
"#,
            r#""#,
        ),
        (
            r#"    if (role == 0) {
        // The producer: one thread keeps the copy engine STAGES tiles ahead of the consumers.
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(PRODUCER_REGS));
        for (int z = blockIdx.z, it0 = 0; z < L; z += gridDim.z, it0 += k_tiles) {
            if (threadIdx.x == 0) {
                for (int it = it0; it < it0 + k_tiles; ++it) {
                    int s = it % STAGES, kt = it - it0;
                    // Stage s was last filled for tile it - STAGES; wait until it has been used.
                    if (it >= STAGES) mbar_wait(&empty[s], (it / STAGES - 1) % 2);
                    mbar_expect_bytes(&full[s], STAGE_BYTES);
                    tma_load(As + s * A_TILE, &a_map, &full[s], kt * BK, row0, z);
                    tma_load(Bs + s * B_TILE, &b_map, &full[s], kt * BK, col0, z);
                }
            }
            // The consumers' strips are out. Producer and consumers meet at two different
            // places in the code, so the barrier is the unaligned kind, numbered apart from
            // the warpgroups' 1 to 3, and counts the whole block.
            if (z + gridDim.z < L) asm volatile("barrier.sync 4, %0;" ::"n"(THREADS) : "memory");
        }
    } else {
        // A consumer: a 64-row strip of the block's C, as BN/2 accumulators a thread.
        asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(CONSUMER_REGS));
        int lane = threadIdx.x % 32;
        for (int z = blockIdx.z, it0 = 0; z < L; z += gridDim.z, it0 += k_tiles) {
            // ANCHOR: consumer
            int acc[BN / 2] = {};

            for (int it = it0; it < it0 + k_tiles; ++it) {
                int s = it % STAGES;
                mbar_wait(&full[s], (it / STAGES) % 2);
                unsigned long long a = descriptor(As + s * A_TILE + (role - 1) * 64 * BK);
                unsigned long long b = descriptor(Bs + s * B_TILE);
                wgmma_fence();
#pragma unroll
                for (int k32 = 0; k32 < BK / 32; ++k32) {
                    wgmma(acc, a + (32 * k32 >> 4), b + (32 * k32 >> 4),
                          1);  // 32 bytes further along the rows
                }
                wgmma_commit();
                // The products of the tile before have now read their stage: hand it back.
                wgmma_wait<1>();
                if (it > it0 && lane == 0) mbar_arrive(&empty[(it - 1) % STAGES]);
            }
            wgmma_wait<0>();
            if (lane == 0) mbar_arrive(&empty[(it0 + k_tiles - 1) % STAGES]);
            // The strips below overwrite the pipeline's first tiles: wait until the other
            // consumer's products have read them too (barrier 3: the two consumer warpgroups).
            asm volatile("bar.sync 3, 256;" ::: "memory");

            // Each sum reduced modulo m_z, a byte each, into plane z of c_res.
            int pitch = (N + 15) / 16 * 16;
            unsigned char* out = c_res + static_cast<long long>(z) * M * pitch;
            unsigned char* strip = As + (role - 1) * 64 * STRIP_PITCH;
            int strip0 = row0 + 64 * (role - 1);
            switch (z) {
            case 0: store_residues<modulus(0)>(acc, strip, out, strip0, M, col0, N, pitch); break;
            case 1: store_residues<modulus(1)>(acc, strip, out, strip0, M, col0, N, pitch); break;
            case 2: store_residues<modulus(2)>(acc, strip, out, strip0, M, col0, N, pitch); break;
            case 3: store_residues<modulus(3)>(acc, strip, out, strip0, M, col0, N, pitch); break;
            case 4: store_residues<modulus(4)>(acc, strip, out, strip0, M, col0, N, pitch); break;
            case 5: store_residues<modulus(5)>(acc, strip, out, strip0, M, col0, N, pitch); break;
            case 6: store_residues<modulus(6)>(acc, strip, out, strip0, M, col0, N, pitch); break;
            case 7: store_residues<modulus(7)>(acc, strip, out, strip0, M, col0, N, pitch); break;
            case 8: store_residues<modulus(8)>(acc, strip, out, strip0, M, col0, N, pitch); break;
            case 9: store_residues<modulus(9)>(acc, strip, out, strip0, M, col0, N, pitch); break;
            case 10: store_residues<modulus(10)>(acc, strip, out, strip0, M, col0, N, pitch); break;
            case 11: store_residues<modulus(11)>(acc, strip, out, strip0, M, col0, N, pitch); break;
            case 12: store_residues<modulus(12)>(acc, strip, out, strip0, M, col0, N, pitch); break;
            case 13: store_residues<modulus(13)>(acc, strip, out, strip0, M, col0, N, pitch); break;
            case 14: store_residues<modulus(14)>(acc, strip, out, strip0, M, col0, N, pitch); break;
            default: store_residues<modulus(15)>(acc, strip, out, strip0, M, col0, N, pitch); break;
            }
            // ANCHOR_END: consumer
            // The copy engine may write where the strips were once every thread is here.
            if (z + gridDim.z < L) {
                asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
                asm volatile("barrier.sync 4, %0;" ::"n"(THREADS) : "memory");  // with the producer
            }
        }
    }
}
"#,
            r#"    if (role == 0) {
        // The producer: one thread keeps the copy engine STAGES tiles ahead of the consumers.
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(PRODUCER_REGS));
        if (threadIdx.x == 0) {
            for (int it = 0; it < MODULI * k_tiles; ++it) {  // variant: every modulus in turn
                int s = it % STAGES, z = it / k_tiles, kt = it % k_tiles;
                if (it >= STAGES) mbar_wait(&empty[s], (it / STAGES - 1) % 2);
                mbar_expect_bytes(&full[s], STAGE_BYTES);
                tma_load(As + s * A_TILE, &a_map, &full[s], kt * BK, row0, z);
                tma_load(Bs + s * B_TILE, &b_map, &full[s], kt * BK, col0, z);
            }
        }
    } else {
        // A consumer: a 64-row strip of the block's C, as BN/2 accumulators a thread.
        asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(CONSUMER_REGS));
        int lane = threadIdx.x % 32;
        // ANCHOR: consumer
        int acc[BN / 2] = {};
        double sum[BN / 2] = {};  // variant: Σ w_z·r_z for each element, over the moduli so far

        for (int z = 0, it = 0; z < MODULI; ++z) {
            for (int kt = 0; kt < k_tiles; ++kt, ++it) {
                int s = it % STAGES;
                mbar_wait(&full[s], (it / STAGES) % 2);
                unsigned long long a = descriptor(As + s * A_TILE + (role - 1) * 64 * BK);
                unsigned long long b = descriptor(Bs + s * B_TILE);
                wgmma_fence();
#pragma unroll
                for (int k32 = 0; k32 < BK / 32; ++k32) {
                    wgmma(acc, a + (32 * k32 >> 4), b + (32 * k32 >> 4), kt > 0 || k32 > 0);
                }
                wgmma_commit();
                wgmma_wait<1>();
                if (kt > 0 && lane == 0) mbar_arrive(&empty[(it - 1) % STAGES]);
            }
            wgmma_wait<0>();
            if (lane == 0) mbar_arrive(&empty[(it - 1) % STAGES]);
            switch (z) {
            case 0: add_residues<modulus(0)>(acc, sum, TABLE.weight[0]); break;
            case 1: add_residues<modulus(1)>(acc, sum, TABLE.weight[1]); break;
            case 2: add_residues<modulus(2)>(acc, sum, TABLE.weight[2]); break;
            case 3: add_residues<modulus(3)>(acc, sum, TABLE.weight[3]); break;
            case 4: add_residues<modulus(4)>(acc, sum, TABLE.weight[4]); break;
            case 5: add_residues<modulus(5)>(acc, sum, TABLE.weight[5]); break;
            case 6: add_residues<modulus(6)>(acc, sum, TABLE.weight[6]); break;
            default: add_residues<modulus(7)>(acc, sum, TABLE.weight[7]); break;
            }
        }

        // variant: C rebuilt here, as reconstruct does it; sum[4j + 2h + v] is row g + 8h,
        // column 8j + 2t + v of the warp's strip.
        const double p = static_cast<double>(P), inverse = 1.0 / static_cast<double>(P);
        int warp = (threadIdx.x / 32) % 4, g = lane / 4, t = lane % 4;
        int row = row0 + 64 * (role - 1) + 16 * warp + g;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            int m = row + 8 * h;
            if (m >= M) continue;
            int ea = exps[m];
#pragma unroll
            for (int j = 0; j < BN / 8; ++j) {
#pragma unroll
                for (int v = 0; v < 2; ++v) {
                    int n = col0 + 8 * j + 2 * t + v, eb = n < N ? exps[M + n] : 0;
                    if (n >= N) continue;
                    float c;
                    if (ea == NONFINITE || eb == NONFINITE) {
                        c = 0.0f;  // the FP32 path's row or column
                    } else {
                        double s = sum[4 * j + 2 * h + v];
                        c = static_cast<float>(fma(-rint(s * inverse), p, s) *
                                               __hiloint2double((1023 - ea - eb) << 20, 0));
                    }
                    C[static_cast<long long>(m) * N + n] = c;
                }
            }
        }
    }
}
// ANCHOR_END: consumer
"#,
        ),
        (
            r#"// ANCHOR: reconstruct
// C from the residues of its integers: s = Σ w_l·r_l ≡ c (mod P); the multiple of P nearest s
// taken away leaves c, the one integer within P/2 of zero, and the exponents of the row and the
// column scale it back. s reaches 2⁷⁵, so in doubles it is off by up to about 2²²: enough to find
// the multiple of P (c stays 2⁻¹⁹·P/2 away from ±P/2), not to give c, which may be far smaller.
// The same sum modulo 2³² in unsigned integers is exact, and gives the last bits. Adding 1.5·2⁵²
// (or 1.5·2⁶⁴) rounds a double to an integer (a multiple of 2¹²) whose low bits sit in the low
// word of its pattern, so that no conversion between doubles and 64-bit integers is needed. The
// rows on the FP32 path are left to it, and so are the columns (what is written there is
// written again). Four columns a thread, a row of C a block in y; five
// blocks a multiprocessor (48 registers), for loads enough in flight: left to itself the compiler
// takes 72 registers, three blocks fit, and the kernel takes half as long again.
extern "C" __global__ void __launch_bounds__(256, 5)
    reconstruct(const unsigned char* c_res, const int* exps, const int* marks, const int* stats,
                float* C, int M, int N) {
    int pitch = (N + 15) / 16 * 16;
    int j0 = 4 * (blockIdx.x * blockDim.x + threadIdx.x);
    if (j0 >= N || chosen(stats) != MODULI) return;  // more moduli: reconstruct_wide's
    const double p = static_cast<double>(P), inverse = 1.0 / static_cast<double>(P);
    const double two52 = 4503599627370496.0;  // 2⁵² + b, read as a double, is exact for a byte b
    const double round52 = 6755399441055744.0;  // 1.5·2⁵²: rounds |x| < 2⁵¹ to an integer
    const double round64 =
        27670116110564327424.0;  // 1.5·2⁶⁴: rounds |x| < 2⁶³ to a multiple of 2¹²
    const double int_bias = 4503601774854144.0;          // 2⁵² + 2³¹
    for (int i = blockIdx.y; i < M; i += gridDim.y) {
        if (marks[i]) continue;
        double s[4] = {};
        unsigned low[4] = {};
#pragma unroll
        for (int l = 0; l < MODULI; ++l) {
            unsigned bytes = *reinterpret_cast<const unsigned*>(
                c_res + (static_cast<long long>(l) * M + i) * pitch + j0);
#pragma unroll
            for (int v = 0; v < 4; ++v) {
                unsigned b = (bytes >> (8 * v)) & 0xFF;
                s[v] = fma(TABLE.weight[l], __hiloint2double(0x43300000, b) - two52, s[v]);
                low[v] += TABLE.low[l] * b;
            }
        }
        int ea = exps[i];
        float c[4];
#pragma unroll
        for (int v = 0; v < 4; ++v) {
            int j = min(j0 + v, N - 1), eb = exps[M + j];
            if (eb == NONFINITE) {
                c[v] = 0.0f;  // the FP32 path's column
            } else {
                double t = fma(s[v], inverse, round52);  // 1.5·2⁵² + q, q = the multiple
                double q = t - round52;
                double u = fma(-q, p, s[v]) + round64;  // 1.5·2⁶⁴ + c, c rounded to 2¹²
                double rounded = u - round64;
                // c − rounded is within ±2³¹: the difference of their low 32 bits is all of it.
                unsigned exact_low =
                    low[v] - static_cast<unsigned>(__double2loint(t)) * static_cast<unsigned>(P);
                int delta =
                    static_cast<int>(exact_low - (static_cast<unsigned>(__double2loint(u)) << 12));
                double integer =
                    rounded + (__hiloint2double(0x43300000, delta ^ 0x80000000) - int_bias);
                c[v] = static_cast<float>(integer * __hiloint2double((1023 - ea - eb) << 20, 0));
            }
        }
        store4(C + static_cast<long long>(i) * N, j0, N, c);
    }
}
// ANCHOR_END: reconstruct

// ANCHOR: reconstruct_wide
// C as reconstruct gives it, where count_further chose L moduli, more than the first pass's: P_L
// reaches 2¹²⁶, beyond what a double or a 64-bit integer holds. s = Σ w_l·r_l is summed exactly
// modulo 2¹²⁸ in four 32-bit limbs (each limb's sum of products stays below 2⁴⁵ in 64 bits), and
// the multiple of P_L to take away is q = round(s/P_L) = round(Σ r_l·(y_l/m_l)), which doubles
// give exactly (s/P_L stays 2⁻²¹ from a half-integer, their error is below 2⁻³⁶). s − q·P_L
// modulo 2¹²⁸ is c in two's complement; its magnitude becomes a double, then a float. Grid-
// stride over the rows, so that the launch costs little where it has nothing to do.
extern "C" __global__ void reconstruct_wide(const unsigned char* c_res, const int* exps,
                                            const int* marks, const int* stats, float* C, int M,
                                            int N)
{
    const int L = chosen(stats);
    int pitch = (N + 15) / 16 * 16;
    int j0 = 4 * (blockIdx.x * blockDim.x + threadIdx.x);
    if (j0 >= N || L == MODULI) return;
    for (int row = blockIdx.y; row < M; row += gridDim.y) {
        if (marks[row]) continue;
        unsigned long long limb[4][4] = {};  // [column][limb]
        double share[4] = {};
#pragma unroll
        for (int l = 0; l < MOST; ++l) {
            if (l >= L) break;
            unsigned bytes = *reinterpret_cast<const unsigned*>(
                c_res + (static_cast<long long>(l) * M + row) * pitch + j0);
#pragma unroll
            for (int v = 0; v < 4; ++v) {
                unsigned r = (bytes >> (8 * v)) & 0xFF;
#pragma unroll
                for (int j = 0; j < 4; ++j)
                    limb[v][j] += static_cast<unsigned long long>(TABLE.wide[L][l][j]) * r;
                share[v] = fma(TABLE.share[L][l], static_cast<double>(r), share[v]);
            }
        }
        int ea = exps[row];
        float c[4];
#pragma unroll
        for (int v = 0; v < 4; ++v) {
            int j = min(j0 + v, N - 1), eb = exps[M + j];
            unsigned q = static_cast<unsigned>(rint(share[v]));
#pragma unroll
            for (int k = 0; k < 4; ++k)
                limb[v][k] += static_cast<unsigned long long>(TABLE.minus[L][k]) * q;
            limb[v][1] += limb[v][0] >> 32;
            limb[v][2] += limb[v][1] >> 32;
            limb[v][3] += limb[v][2] >> 32;
            unsigned long long high = limb[v][3] << 32 | (limb[v][2] & 0xFFFFFFFFull),
                               low = limb[v][1] << 32 | (limb[v][0] & 0xFFFFFFFFull);
            bool negative = high >> 63;
            if (negative) {  // the magnitude: 2¹²⁸ − (high, low)
                low = ~low + 1;
                high = ~high + (low == 0);
            }
            double magnitude = fma(__ull2double_rn(high), 18446744073709551616.0,
                                   __ull2double_rn(low));
            double integer = negative ? -magnitude : magnitude;
            c[v] = eb == NONFINITE
                       ? 0.0f
                       : static_cast<float>(integer * __hiloint2double((1023 - ea - eb) << 20, 0));
        }
        store4(C + static_cast<long long>(row) * N, j0, N, c);
    }
}
// ANCHOR_END: reconstruct_wide
"#,
            r#"// variant: no reconstruct kernel; matmul writes C itself.
"#,
        ),
    ]],
}];

#[test]
fn the_variant_is_the_kernel_with_its_edits() {
    testing::assert_variants_are_edits(&STEP, VARIANTS);
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_compiles_the_variant_without_spills() {
    let v = VARIANTS[0].of(&STEP);
    let info = testing::nvrtc_check(&v, &Params::defaults(step11_int8_crt::FUSED_PARAMS), "sm_90").unwrap();
    assert_eq!((info.spill_bytes(), info.stack_frame), (0, 0), "{info:?}");
}

/// The one-pass variant computes the same product within FP32's limits, at every shape and at
/// 1000³ and 4096³. Its rebuild is the doubles alone (no room in registers for the exact low
/// bits), so its bits may differ from the kernel's in the last places of small elements.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_the_one_pass_variant_matches_the_reference() {
    let v = VARIANTS[0].of(&STEP);
    let shapes = [SHAPES, &[(1000, 1000, 1000), (4096, 4096, 4096)]].concat();
    testing::assert_all_pass(
        &testing::gpu_check(&v, Params::defaults(step11_int8_crt::FUSED_PARAMS), &served(&shapes)).unwrap(),
    );
}

/// The count of moduli the product takes, forced: the first pass's test of whether the data
/// needs more answers `moduli` whatever the data.
fn forced(moduli: u32) -> (&'static str, String) {
    (
        "__device__ __forceinline__ int chosen(const int* stats) { return max(MODULI, stats[2]); }",
        format!("__device__ __forceinline__ int chosen(const int* stats) {{ return {moduli}; }}"),
    )
}

/// The second pass and the wide rebuild at every count of moduli past the first pass's, forced on
/// inputs that need none of them: each passes FP32's check at a deep shape, an odd one and the
/// shortest K, and the faults of the wide rebuild fail (a weight off by one P_L/m_l, a modulus
/// left out of the sum, the integer's sign lost).
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_every_count_of_moduli_matches_the_reference() {
    let shapes = [(256, 256, 4096), (127, 129, 131), (17, 1000, 3)];
    for moduli in 8..=16 {
        let (find, replace) = forced(moduli);
        let step = testing::edited(&STEP, &[(find, &replace)]);
        let checker = Checker::defaults(&step).unwrap();
        for (i, &(m, n, k)) in shapes.iter().enumerate() {
            let inputs = full((m, n, k), 60 + i as u64);
            let v = checker.check_inputs(&inputs, &checker.reference(&inputs).unwrap()).unwrap().unwrap();
            println!("{moduli} moduli, {}: {}", inputs.shape, v.summary());
            assert!(v.passed(), "{moduli} moduli, {}: {}", inputs.shape, v.summary());
        }
    }
    let faults: [(&str, &str, &str); 3] = [
        ("a weight off by P_L/m_l", WIDE_WRONG_WEIGHT.0, WIDE_WRONG_WEIGHT.1),
        ("a modulus left out", WIDE_DROP_MODULUS.0, WIDE_DROP_MODULUS.1),
        (
            "the sign lost",
            "double integer = negative ? -magnitude : magnitude;",
            "double integer = magnitude;",
        ),
    ];
    for (what, find, replace) in faults {
        let (force, to) = forced(12);
        let step = testing::edited(&STEP, &[(force, &to), (find, replace)]);
        let checker = Checker::defaults(&step).unwrap();
        let inputs = full((256, 256, 4096), 70);
        let v = checker.check_inputs(&inputs, &checker.reference(&inputs).unwrap()).unwrap().unwrap();
        println!("planted, 12 moduli, {what}: {}", v.summary());
        assert!(!v.passed(), "{what} passed: {}", v.summary());
    }
}

/// Every family of inputs passes FP32's check, per element and normwise, at a deep shape, an odd
/// one and the two shortest K, and so does the identity plus noise of 2⁻²⁰, whose rows the
/// first pass's moduli cannot carry. Three faults only a family exposes fail: the rule switched
/// off (the first pass's moduli for every row) fails on the identity plus noise of 2⁻²⁰, the
/// count of moduli made too lenient fails on the identity plus noise of 2⁻²⁴, and the scaling one
/// bit too generous fails on `gram`, whose diagonal reaches the Cauchy–Schwarz bound.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_every_family_passes_and_the_faults_only_a_family_exposes_fail() {
    use common::matrix::Family;
    let checker = Checker::defaults(&STEP).unwrap();
    let shape = |(m, n, k)| Shape::new(m, n, k).unwrap();
    let noise = Family::IdentityNoise(f64::powi(2.0, -20));
    let mut cases: Vec<(Family, (usize, usize, usize))> = Vec::new();
    for family in Family::ALL.into_iter().chain([noise]) {
        for s in [(256, 256, 4096), (127, 129, 131), (17, 1000, 3), (1000, 17, 1)] {
            cases.push((family, s));
        }
    }
    cases.push((noise, (512, 512, 4096)));
    let mut failed = Vec::new();
    for (i, &(family, s)) in cases.iter().enumerate() {
        let inputs = Inputs::family(shape(s), 900 + i as u64, family);
        let reference = checker.reference(&inputs).unwrap();
        let v = checker.check_inputs(&inputs, &reference).unwrap().expect("the step serves every shape");
        println!("{family}, {}: {}", inputs.shape, v.summary());
        if !v.passed() {
            failed.push(format!("{family}, {}: {}", inputs.shape, v.summary()));
        }
    }
    assert!(failed.is_empty(), "{failed:#?}");
    let faults = [
        (RULE_OFF, noise, (512, 512, 4096), "nothing computed apart"),
        (
            SIX_MODULI_LENIENT,
            Family::IdentityNoise(f64::powi(2.0, -24)),
            (512, 512, 4096),
            "six moduli too few",
        ),
        (ONE_BIT_GENEROUS, Family::Gram, (256, 256, 4096), "the scaling one bit too generous"),
    ];
    for (edit, family, s, what) in faults {
        let step = testing::edited(&STEP, &[edit]);
        let faulty = Checker::defaults(&step).unwrap();
        let inputs = Inputs::family(shape(s), 950, family);
        let reference = faulty.reference(&inputs).unwrap();
        let v = faulty.check_inputs(&inputs, &reference).unwrap().unwrap();
        println!("planted, {what}, {family}, {}: {}", inputs.shape, v.summary());
        assert!(!v.passed(), "{what} passed on {family}: {}", v.summary());
        let other = Inputs::family(shape(s), 950, Family::Uniform);
        let v = faulty.check_inputs(&other, &faulty.reference(&other).unwrap()).unwrap().unwrap();
        println!("planted, {what}, uniform, {}: {}", other.shape, v.summary());
    }
}

use common::gpu::LaunchLimits;
use common::testing::faults::{FaultClass, PlantedFault};
use common::testing::{self, DEEP, SHAPES};
use common::{Extension, GpuStep, Params, Precision, Shape};
use step09_3xtf32::STEP;

mod edge;

/// A kept in one TF32 part: its small part written as zero.
const ONE_PART_A: (&str, &str) = ("two[1][j] = tf32(a - big);", "two[1][j] = 0.0f;");
/// B kept in one TF32 part: its small fragments zero.
const ONE_PART_B: (&str, &str) = ("small[k8][i] = __float_as_uint(tf32(v[i] - b));", "small[k8][i] = 0u;");
/// A and B rounded to bf16 before they are split.
const BF16: &[(&str, &str)] = &[
    ("float a = x[j] * f, big = tf32(a);", "float a = fault_bf16(x[j] * f), big = tf32(a);"),
    (
        "float v[4] = {lo.x * f.x, lo.y * f.y, hi.x * f.x, hi.y * f.y};",
        "float v[4] = {fault_bf16(lo.x * f.x), fault_bf16(lo.y * f.y), fault_bf16(hi.x * f.x),\n                              fault_bf16(hi.y * f.y)};",
    ),
];

/// The planted faults of this kernel (see `common::testing::faults`): held to FP32's limits,
/// the step must catch what is summed or written wrong and every way the split can lose its
/// precision: either operand, or both, in one TF32 part, any one of the three products left out,
/// and bf16 operands.
const FAULTS: &[PlantedFault] = &[
    PlantedFault { class: FaultClass::Tf32A, edits: &[ONE_PART_A] },
    PlantedFault { class: FaultClass::Tf32B, edits: &[ONE_PART_B] },
    PlantedFault { class: FaultClass::Tf32, edits: &[ONE_PART_A, ONE_PART_B] },
    PlantedFault { class: FaultClass::Bf16, edits: BF16 },
    PlantedFault {
        class: FaultClass::DropASmall,
        edits: &[("                wgmma(part, big[k8], a_small + k, 1);\n", "")],
    },
    PlantedFault {
        class: FaultClass::DropBSmall,
        // The next product takes over overwriting `part` on the slice's first step.
        edits: &[(
            "wgmma(part, small[k8], a_big + k, k8);   // the two corrections first,\n                wgmma(part, big[k8], a_small + k, 1);",
            "wgmma(part, big[k8], a_small + k, k8);",
        )],
    },
    PlantedFault {
        class: FaultClass::DropLeading,
        edits: &[(
            "                wgmma(part, big[k8], a_big + k, 1);      // then the leading product\n",
            "",
        )],
    },
    PlantedFault {
        class: FaultClass::DropTerm,
        edits: &[(
            "float2 lo = load_pair(bs, 8 * k8 + t, col), hi = load_pair(bs, 8 * k8 + t + 4, col);",
            "float2 lo = load_pair(bs, 8 * k8 + t, col), hi = load_pair(bs, 8 * k8 + t + 4, col);
                if (kt * BK + 8 * k8 + t == K - 1) lo = make_float2(0.0f, 0.0f);
                if (kt * BK + 8 * k8 + t + 4 == K - 1) hi = make_float2(0.0f, 0.0f);",
        )],
    },
    PlantedFault {
        class: FaultClass::DropSlice,
        edits: &[("int k_tiles = (K + BK - 1) / BK;", "int k_tiles = (K - 1) / BK;")],
    },
    PlantedFault {
        class: FaultClass::Zero,
        edits: &[
            ("make_float2(c0, c1);", "make_float2(0.0f, 0.0f);"),
            ("if (own0) c[0] = c0;", "if (own0) c[0] = 0.0f;"),
            ("if (own1) c[1] = c1;", "if (own1) c[1] = 0.0f;"),
        ],
    },
    PlantedFault {
        class: FaultClass::Row,
        edits: &[("if (m >= M || marks[m]) continue;", "if (m >= M - 1 || marks[m]) continue;")],
    },
    PlantedFault {
        class: FaultClass::Column,
        edits: &[
            ("bool own0 = n < N && ", "bool own0 = n < N - 1 && "),
            ("own1 = n + 1 < N && ", "own1 = n + 1 < N - 1 && "),
        ],
    },
];

/// Parameter sets the chapter and the tests use: the default, the same in plain launch order,
/// one consumer with the deepest pipeline that fits, and the shallowest; groups of block-rows
/// that do and do not divide the grid.
const SETS: &[[u32; 3]] = &[[128, 4, 8], [128, 4, 1], [64, 5, 3], [128, 2, 64], [64, 2, 16]];

/// The documented sets, as the tests check, compile and run them.
const DOCUMENTED: testing::Sets<3> =
    testing::Sets { step: &STEP, names: ["BN", "STAGES", "GROUP"], sets: SETS };

#[test]
fn the_step_claims_fp32_from_three_tf32_products_on_hopper_alone() {
    assert_eq!(STEP.precision, Precision::Tf32x3);
    assert!(matches!(STEP.extension, Extension::PartTensorMaps { .. }));
    for (cc, device) in [((8, 0), "A100"), ((8, 9), "L4"), ((10, 0), "B200")] {
        let err = STEP.check_compute(cc, device).unwrap_err().to_string();
        assert!(err.starts_with("step09_3xtf32 needs a GPU of compute capability 9.0 exactly"), "{err}");
        assert!(
            err.contains(&format!("{device} is {}.{}", cc.0, cc.1)) && err.contains("--compile-only"),
            "{err}"
        );
    }
    STEP.check_compute((9, 0), "H200").unwrap();
    assert_eq!(STEP.target("sm_90"), "sm_90a");
}

#[test]
fn documented_sets_are_valid_and_bad_ones_refused() {
    DOCUMENTED.assert_checked(
        &LaunchLimits::SM90,
        &[
            ([192, 4, 8], "BN must be 64 or 128"),
            ([128, 1, 8], "STAGES must be 2 to 8"),
            ([128, 4, 0], "GROUP must be 1 to 64"),
            ([128, 5, 8], "lower STAGES or BN"),
        ],
    );
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_compiles_documented_sets_for_sm90a_without_spills() {
    DOCUMENTED.assert_compile_without_spills(["sm_90"]);
}

common::reference_tests!(STEP);

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_documented_sets_match_the_reference() {
    DOCUMENTED.assert_pass_on_gpu(SHAPES);
}

/// The accuracy the step exists for: on the same inputs, its ‖ΔC‖/‖C‖ no larger than cuBLAS
/// SGEMM's at 1024³, 4096³, 8192³ and K = 2²⁰, and FP32's own limits (per element too) met
/// there and at K = 16, where the split's few units of roundoff per product (more than SGEMM's
/// 16 roundings add up to) still sit inside FP32's bound.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_error_is_no_larger_than_cublas_sgemms_and_within_fp32s_limits() {
    let shapes =
        [(1024, 1024, 1024), (4096, 4096, 4096), (8192, 8192, 8192), (256, 256, 1 << 20), (64, 64, 16)];
    for (shape, v, sgemm) in testing::errors_beside_sgemm(&STEP, &shapes).unwrap() {
        let own = v.normwise.relative();
        println!("{shape}: ‖ΔC‖/‖C‖ {own:.2e}, cuBLAS SGEMM {sgemm:.2e}; as FP32: {}", v.summary());
        assert!(v.passed(), "{shape}: {}", v.summary());
        if shape.k >= 1024 {
            assert!(own <= sgemm, "{shape}: {own:.2e} against cuBLAS SGEMM's {sgemm:.2e}");
        }
    }
}

/// The split of K (SPLIT_K) forced on shapes with edges, on a K shorter than the blocks that share
/// it (blocks with nothing to add), and on deep ones; and two planted faults in it that FAIL: the
/// last slice left out of the sum, and every block taking all of K.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_a_split_k_matches_the_reference_and_its_faults_fail() {
    let shapes = [(127, 129, 131), (1000, 17, 3), (300, 520, 4099), (64, 64, 65536), (1024, 1024, 1024)];
    for split in [2, 3, 16] {
        let params = testing::named_params(&STEP, ["SPLIT_K"], [split]);
        testing::assert_all_pass(&testing::gpu_check(&STEP, params, &shapes).unwrap());
    }
    let faults = [
        (
            "the last slice left out",
            "for (int z = 0; z < gridDim.z; ++z)",
            "for (int z = 0; z < gridDim.z - 1; ++z)",
        ),
        ("every block over all of K", "int kt_begin = blockIdx.z * k_tiles", "int kt_begin = 0 * k_tiles"),
    ];
    for (what, find, replace) in faults {
        let step = testing::edited(&STEP, &[(find, replace)]);
        let params = testing::named_params(&step, ["SPLIT_K"], [3]);
        // K of 256 or more: below it the FP32 path computes every row, around the kernel.
        for (shape, v) in testing::gpu_check(&step, params, &[(127, 129, 300), (300, 520, 4099)]).unwrap() {
            println!("{what}, {shape}: {}", v.summary());
            assert!(!v.passed(), "{what} passed at {shape}: {}", v.summary());
        }
    }
}

common::planted_fault_tests!(STEP, FAULTS, &[SHAPES, DEEP].concat(), env!("CARGO_BIN_EXE_step09_3xtf32"));

/// The measured alternatives in `variants/`, each the kernel with one small change, kept as that
/// change alone (`variants/NAME.diff`, whose first added lines name it).
const VARIANTS: [(&str, &str); 4] = [
    ("one_accumulator", include_str!("../variants/one_accumulator.diff")),
    ("no_flush", include_str!("../variants/no_flush.diff")),
    ("compensated", include_str!("../variants/compensated.diff")),
    ("in_pipeline", include_str!("../variants/in_pipeline.diff")),
];

/// The step with variant `name`'s kernel: its own with the variant's diff applied.
fn variant(name: &str) -> GpuStep {
    let (_, diff) = VARIANTS.iter().find(|(n, _)| *n == name).unwrap();
    common::compile_only::with_diff(&STEP, &format!("step09_3xtf32/variants/{name}.diff"), diff).unwrap()
}

/// Each variant is kept as its diff alone, applies to the kernel, and makes a kernel that opens
/// by naming the kernel it changes; compiler messages name the kernel and the diff.
#[test]
fn the_variants_are_the_kernel_with_their_diffs() {
    let copies = testing::copies::assert_copies(env!("CARGO_PKG_NAME"));
    let mut kept: Vec<(String, &str, bool)> =
        copies.iter().map(|c| (c.file.clone(), c.base.as_str(), c.text.is_none())).collect();
    kept.sort();
    let mut declared: Vec<(String, &str, bool)> =
        VARIANTS.iter().map(|(n, _)| (format!("step09_3xtf32/variants/{n}.diff"), STEP.file, true)).collect();
    declared.sort();
    assert_eq!(kept, declared);
    let v = variant("no_flush");
    assert_eq!(v.file, "step09_3xtf32/src/kernel.cu+step09_3xtf32/variants/no_flush.diff");
    assert!(v.source.starts_with("// Variant of step09_3xtf32/src/kernel.cu: one running sum"), "{}", v.file);
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_compiles_the_variants_without_spills() {
    for (name, _) in VARIANTS {
        let v = variant(name);
        let info = testing::nvrtc_check(&v, &Params::defaults(STEP.params), "sm_90").unwrap();
        assert_eq!((info.spill_bytes(), info.stack_frame), (0, 0), "{}: {info:?}", v.file);
    }
}

/// The split in the pipeline, Kahan's compensated sum and one running sum all keep FP32's
/// limits; letting the tensor cores sum all of K does not, which the check catches.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_variants_keep_fp32_accuracy_except_the_tensor_cores_own_sums() {
    let shapes = &[(127, 129, 131), (1000, 17, 1), (511, 513, 509), (2049, 2047, 97), (4096, 4096, 4096)];
    for name in ["in_pipeline", "compensated", "no_flush"] {
        testing::assert_all_pass(
            &testing::gpu_check(&variant(name), Params::defaults(STEP.params), shapes).unwrap(),
        );
    }
    let one =
        testing::gpu_check(&variant("one_accumulator"), Params::defaults(STEP.params), &[(4096, 4096, 4096)]);
    let (shape, v) = one.unwrap()[0];
    assert!(!v.normwise.passed(), "{shape}: the tensor cores' own sums passed: {}", v.summary());
}

/// Inputs near the ends of FP32's range and beyond what the split carries, beside cuBLAS SGEMM on
/// the same inputs: a row of A in subnormals, a row of A and a column of B at 2⁻⁶⁰ (their
/// products below FP32's range unless scaled), a row at 2⁷⁰, a row spanning 140 binades whose
/// least entry meets the least of a column spanning 97 (their scaled product would be subnormal),
/// and NaN and infinities. The scaling carries the first four; the rows and columns with NaN or
/// infinity, and the row of 140 binades, take the FP32 path, beside a product whose nine tiles
/// split K in two (on a GPU of 18 SMs or more), so the split's last blocks and the FP32 path
/// write C together. The step passes FP32's check and gives SGEMM's class for every element.
/// Three planted faults fail on the same inputs: the kernel edited to mark nothing (the split
/// alone: NaN and ∞), rows judged without the columns they meet, and the scaling's exponent not
/// kept within FP32's (2^s is then no float for the subnormal row).
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_subnormal_tiny_huge_and_non_finite_inputs_give_fp32s_answer() {
    let shape = Shape::new(320, 288, 512).unwrap();
    let (n, k) = (shape.n, shape.k);
    let x = edge::inputs(shape);
    assert!(x.a.data[3 * k..4 * k].iter().any(|v| v.is_subnormal()));
    let carried = "return finite && (largest == 0.0f || (low >= 0x1p-100f && low * met >= 0x1p-100f));";
    let split_alone = testing::edited(&STEP, &[(carried, "return true;  // fault: nothing apart")]);
    let alone = "return finite && (largest == 0.0f || low >= 0x1p-100f);  // fault: met ignored";
    let unmet = testing::edited(&STEP, &[(carried, alone)]);
    let clamp = "return min(127, max(-126, 48 - ilogbf(largest)));";
    let unclamped = testing::edited(&STEP, &[(clamp, "return 48 - ilogbf(largest);  // fault")]);
    for (step, apart) in [(&STEP, true), (&split_alone, false), (&unmet, false), (&unclamped, false)] {
        let checker = testing::Checker::defaults(step).unwrap();
        let b = testing::beside_sgemm(&checker, &x).unwrap();
        let (wrong, nonfinite) = testing::class_mismatches(&b.c, &b.sgemm_c, n);
        println!(
            "{}: {}; {nonfinite} elements not finite, {} of another class than SGEMM's; SGEMM: {}",
            if apart { "the step" } else { "a planted fault" },
            b.verdict.summary(),
            wrong.len(),
            b.sgemm.summary()
        );
        assert!(b.sgemm.passed(), "cuBLAS SGEMM: {}", b.sgemm.summary());
        if apart {
            assert!(
                b.verdict.passed() && wrong.is_empty(),
                "{}; {:?}",
                b.verdict.summary(),
                &wrong[..wrong.len().min(3)]
            );
        } else {
            assert!(!b.verdict.passed(), "a planted fault passed: {}", b.verdict.summary());
        }
    }
}

/// The same planted faults on the emulator, at shapes small enough to emulate (in CI).
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_planted_faults_are_caught() {
    common::testing::emulator::assert_faults_caught(&STEP, FAULTS);
}

use common::gpu::LaunchLimits;
use common::testing::faults::{FaultClass, PlantedFault};
use common::testing::{self, DEEP, SHAPES};
use common::tma::TRANSPOSE_ENTRY;
use common::{GpuStep, Params, Precision};
use step08_wgmma_tma::STEP;

/// A's tile cut to bf16 (truncated, as the tensor cores cut it to TF32) in shared memory, by all
/// consumers together, before their wgmma read it.
const BF16_A: (&str, &str) = (
    "            mbar_wait(&full[s], (kt / STAGES) % 2);\n",
    "            mbar_wait(&full[s], (kt / STAGES) % 2);
            for (int e = threadIdx.x - 128; e < A_TILE; e += 128 * CONSUMERS) {
                float* p = As + s * A_TILE + e;
                *p = __uint_as_float(__float_as_uint(*p) & 0xffff0000u);
            }
            asm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\");
            asm volatile(\"bar.sync 1, %0;\" ::\"n\"(128 * CONSUMERS) : \"memory\");\n",
);
/// B's fragments cut to bf16 (truncated) in registers.
const BF16_B: [(&str, &str); 4] = [
    ("frag[k8][0] = __float_as_uint(lo.x);", "frag[k8][0] = __float_as_uint(lo.x) & 0xffff0000u;"),
    ("frag[k8][1] = __float_as_uint(lo.y);", "frag[k8][1] = __float_as_uint(lo.y) & 0xffff0000u;"),
    ("frag[k8][2] = __float_as_uint(hi.x);", "frag[k8][2] = __float_as_uint(hi.x) & 0xffff0000u;"),
    ("frag[k8][3] = __float_as_uint(hi.y);", "frag[k8][3] = __float_as_uint(hi.y) & 0xffff0000u;"),
];

/// The planted faults of this kernel (see `common::testing::faults`): bf16 in place of the
/// truncated TF32 it claims, and what is summed or written.
const FAULTS: &[PlantedFault] = &[
    PlantedFault { class: FaultClass::Bf16A, edits: &[BF16_A] },
    PlantedFault { class: FaultClass::Bf16B, edits: &BF16_B },
    PlantedFault { class: FaultClass::Bf16, edits: &[BF16_A, BF16_B[0], BF16_B[1], BF16_B[2], BF16_B[3]] },
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
            ("make_float2(acc[4 * j + v], acc[4 * j + 2 + v]);", "make_float2(0.0f, 0.0f);"),
            ("if (n < N) c[0] = acc[4 * j + v];", "if (n < N) c[0] = 0.0f;"),
            ("if (n + 1 < N) c[1] = acc[4 * j + 2 + v];", "if (n + 1 < N) c[1] = 0.0f;"),
        ],
    },
    PlantedFault { class: FaultClass::Row, edits: &[("if (m >= M) continue;", "if (m >= M - 1) continue;")] },
    PlantedFault {
        class: FaultClass::Column,
        edits: &[
            ("if (N % 2 == 0 && n + 1 < N) {", "if (N % 2 == 0 && n + 1 < N - 1) {"),
            ("if (n < N) c[0]", "if (n < N - 1) c[0]"),
            ("if (n + 1 < N) c[1]", "if (n + 1 < N - 1) c[1]"),
        ],
    },
];

/// Parameter sets the chapter and the tests use: the default, a shallower pipeline in plain
/// launch order, a 128-row instruction with one, two and three consumers, and the deepest
/// pipeline that fits; groups of block-rows that do and do not divide the grid.
const SETS: &[[u32; 4]] = &[
    [256, 128, 4, 8],
    [256, 128, 2, 1],
    [128, 64, 4, 3],
    [128, 128, 6, 16],
    [128, 192, 4, 8],
    [256, 64, 5, 64],
];

/// The documented sets, as the tests check, compile and run them.
const DOCUMENTED: testing::Sets<4> =
    testing::Sets { step: &STEP, names: ["BM", "BN", "STAGES", "GROUP"], sets: SETS };

fn set(v: [u32; 4]) -> Params {
    DOCUMENTED.params(v)
}

#[test]
fn the_step_computes_in_tf32_on_hopper_alone() {
    assert_eq!(STEP.precision, Precision::Tf32Truncated);
    for (cc, device) in [((8, 0), "A100"), ((8, 9), "L4"), ((10, 0), "B200")] {
        let err = STEP.check_compute(cc, device).unwrap_err().to_string();
        assert!(err.starts_with("step08_wgmma_tma needs a GPU of compute capability 9.0 exactly"), "{err}");
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
            ([64, 128, 4, 8], "written for 128 or 256"),
            ([256, 96, 4, 8], "BN must be 64, 128 or 192"),
            ([256, 128, 1, 8], "STAGES must be 2 to 8"),
            ([256, 128, 4, 0], "GROUP must be 1 to 64"),
            ([256, 192, 4, 8], "do not fit in an SM's registers"),
            ([256, 128, 6, 8], "lower STAGES, BM or BN"),
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

common::planted_fault_tests!(STEP, FAULTS, &[SHAPES, DEEP].concat(), env!("CARGO_BIN_EXE_step08_wgmma_tma"));

/// The layout alternatives the chapter measures, in `variants/`. Each is a copy of the kernel
/// with one change, which its first lines name and the diff beside it (`variants/NAME.diff`)
/// holds.
const VARIANTS: &[GpuStep] = &[
    GpuStep {
        file: "step08_wgmma_tma/variants/transposing_prologue.cu",
        source: include_str!("../variants/transposing_prologue.cu"),
        ..STEP
    },
    GpuStep {
        file: "step08_wgmma_tma/variants/in_pipeline_transpose.cu",
        source: include_str!("../variants/in_pipeline_transpose.cu"),
        ..STEP
    },
];

#[test]
fn the_variants_are_the_kernel_with_their_diffs() {
    testing::copies::assert_copies(env!("CARGO_PKG_NAME"));
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_compiles_the_variants_for_sm90a_without_spills() {
    for v in VARIANTS {
        testing::Sets { step: v, ..DOCUMENTED }.assert_compile_without_spills(["sm_90"]);
    }
}

/// The host queues `transpose_b` for the one kernel that defines it, which it finds in the
/// compiled code.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_only_the_transposing_variant_has_a_prologue() {
    let params = Params::defaults(STEP.params);
    let has =
        |step: &GpuStep| step.compile(&params, &step.target("sm_90")).unwrap().has_function(TRANSPOSE_ENTRY);
    assert!(has(&VARIANTS[0]), "{}", VARIANTS[0].file);
    assert!(!has(&VARIANTS[1]) && !has(&STEP));
    assert!(STEP.compile(&params, "sm_90a").unwrap().has_function("matmul"));
}

/// Both variants get every shape right, those whose rows the copy engine cannot take included
/// (the prologue writes Bᵀ with padded rows; A is padded as for the kernel), with one, two and
/// three consumer warpgroups (so three buffers and named barriers in the in-pipeline
/// transpose). That the first named barrier keeps a consumer from rewriting its buffer while
/// its last wgmma still reads it is argued in the kernel rather than shown by a test.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_variants_match_the_reference() {
    for v in VARIANTS {
        for set_ in [SETS[0], SETS[2], SETS[4]] {
            testing::assert_all_pass(&testing::gpu_check(v, set(set_), SHAPES).unwrap());
        }
    }
}

/// The same planted faults on the emulator, at shapes small enough to emulate (in CI).
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_planted_faults_are_caught() {
    common::testing::emulator::assert_faults_caught(&STEP, FAULTS);
}

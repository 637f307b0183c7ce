use common::gpu::LaunchLimits;
use common::testing::faults::{FaultClass, PlantedFault};
use common::testing::{self, DEEP, SHAPES};
use common::{GpuStep, Params, Precision};
use step07_tf32_mma::{STAGES, STEP};

/// A's fragments rounded to bf16 instead of TF32.
const BF16_A: (&str, &str) = (
    "a0[h] = tf32(a0[h]), a1[h] = tf32(a1[h]);",
    "a0[h] = __float_as_uint(fault_bf16(__uint_as_float(a0[h]))), a1[h] = __float_as_uint(fault_bf16(__uint_as_float(a1[h])));",
);
/// B's fragments rounded to bf16 instead of TF32.
const BF16_B: [(&str, &str); 2] = [
    (
        "b[0] = tf32(__float_as_uint(lo.x)), b[1] = tf32(__float_as_uint(lo.y));",
        "b[0] = __float_as_uint(fault_bf16(lo.x)), b[1] = __float_as_uint(fault_bf16(lo.y));",
    ),
    (
        "b[2] = tf32(__float_as_uint(hi.x)), b[3] = tf32(__float_as_uint(hi.y));",
        "b[2] = __float_as_uint(fault_bf16(hi.x)), b[3] = __float_as_uint(fault_bf16(hi.y));",
    ),
];

/// The last slice of K left out: every stage and the kernel walk K in this one loop.
const DROP_SLICE: &[(&str, &str)] =
    &[("for (int k0 = 0; k0 < K; k0 += BK)", "for (int k0 = 0; k0 < K - BK; k0 += BK)")];

/// The planted faults of this kernel (see `common::testing::faults`): the precisions below TF32
/// rounded to nearest, and what is summed or written.
const FAULTS: &[PlantedFault] = &[
    PlantedFault { class: FaultClass::Bf16A, edits: &[BF16_A] },
    PlantedFault { class: FaultClass::Bf16B, edits: &BF16_B },
    PlantedFault { class: FaultClass::Bf16, edits: &[BF16_A, BF16_B[0], BF16_B[1]] },
    PlantedFault {
        class: FaultClass::Truncated,
        // No conversion: the tensor cores ignore the 13 low bits of what they read.
        edits: &[
            ("asm(\"cvt.rn.tf32.f32 %0, %1;\" : \"=r\"(r) : \"f\"(__uint_as_float(x)));", "r = x;"),
            ("asm(\"cvt.rna.tf32.f32 %0, %1;\" : \"=r\"(r) : \"f\"(__uint_as_float(x)));", "r = x;"),
        ],
    },
    PlantedFault {
        class: FaultClass::DropTerm,
        edits: &[
            // B's last row (k = K - 1) counts as outside, so its copies store zeros.
            ("B, k0 + s.row(i), col0 + s.c, K, N);", "B, k0 + s.row(i), col0 + s.c, K - 1, N);"),
        ],
    },
    PlantedFault { class: FaultClass::DropSlice, edits: DROP_SLICE },
    PlantedFault {
        class: FaultClass::Zero,
        edits: &[("C[(offset_t)row * N + col] = acc[j][i][e];", "C[(offset_t)row * N + col] = 0.0f;")],
    },
    PlantedFault {
        class: FaultClass::Row,
        edits: &[("if (row < M && col < N) C[", "if (row < M - 1 && col < N) C[")],
    },
    PlantedFault {
        class: FaultClass::Column,
        edits: &[("if (row < M && col < N) C[", "if (row < M && col < N - 1) C[")],
    },
];

/// Parameter sets the chapter and the tests use: the default (the fastest set measured on the
/// H200 that every sm_80 and newer GPU can launch),
/// 64×32 and 32×32 warps, a taller block with a shallower slice, a wider block, and a small
/// 64×64 block.
const SETS: &[[u32; 5]] = &[
    [128, 128, 32, 64, 64],
    [128, 128, 32, 64, 32],
    [128, 128, 32, 32, 32],
    [256, 128, 16, 64, 64],
    [128, 256, 16, 64, 64],
    [64, 64, 32, 32, 32],
];

/// The documented sets, as the tests check, compile and run them.
const DOCUMENTED: testing::Sets<5> =
    testing::Sets { step: &STEP, names: ["BM", "BN", "BK", "WM", "WN"], sets: SETS };

fn set(v: [u32; 5]) -> Params {
    DOCUMENTED.params(v)
}

#[test]
fn the_step_computes_in_tf32_on_sm80_and_newer() {
    assert_eq!(STEP.precision, Precision::Tf32);
    let err = STEP.check_compute((7, 5), "NVIDIA T4").unwrap_err().to_string();
    assert_eq!(err, "step07_tf32_mma needs a GPU of compute capability 8.0 or newer, and NVIDIA T4 is 7.5");
    STEP.check_compute((8, 0), "A100").unwrap();
    STEP.check_compute((9, 0), "H200").unwrap();
}

#[test]
fn documented_sets_are_valid_and_bad_ones_refused() {
    DOCUMENTED.assert_checked(
        &LaunchLimits::SM80,
        &[
            ([128, 128, 32, 24, 32], "multiples of 16"),
            ([128, 128, 12, 64, 32], "WM and WN multiples of 16, BK of 8"),
            ([128, 128, 32, 48, 32], "whole number of warp regions"),
            ([128, 128, 32, 64, 24], "WM and WN multiples of 16"),
            ([128, 128, 24, 64, 32], "BK/4 and BN/4 must divide"),
            ([256, 256, 32, 32, 32], "threads per block"),
            ([256, 256, 256, 64, 64], "bytes of A and B in shared memory"),
        ],
    );
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_compiles_documented_sets_without_spills() {
    DOCUMENTED.assert_compile_without_spills(testing::archs(&STEP).into_iter().map(|(arch, _)| arch));
}

common::reference_tests!(STEP);

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_documented_sets_match_the_reference() {
    DOCUMENTED.assert_pass_on_gpu(SHAPES);
}

common::planted_fault_tests!(STEP, FAULTS, &[SHAPES, DEEP].concat(), env!("CARGO_BIN_EXE_step07_tf32_mma"));

/// The variant that issues the kernel's MMAs alone (operands in registers), run in place of the
/// step's kernel with --no-verify to measure what the instructions cost.
const MMA_ONLY: GpuStep = GpuStep {
    file: "step07_tf32_mma/variants/mma_only.cu",
    source: include_str!("../variants/mma_only.cu"),
    ..STEP
};

/// The variant's and the stages' first lines name the kernel each copies and its change, and
/// each is that kernel with the diff beside it (`variants/mma_only.diff`, `stages/NAME.diff`)
/// applied. The variant copies the step's kernel; the first stage copies step 06's kernel, each
/// later stage the one before, and each says the idea it adds as `--help` says it.
#[test]
fn the_variant_and_each_stage_are_their_base_with_their_diff() {
    let copies = testing::copies::assert_copies(env!("CARGO_PKG_NAME"));
    let (stages, variants): (Vec<_>, Vec<_>) = copies.iter().partition(|c| c.file.contains("/stages/"));
    assert_eq!(
        variants.iter().map(|c| (c.file.as_str(), c.base.as_str())).collect::<Vec<_>>(),
        [(MMA_ONLY.file, STEP.file)]
    );
    assert_eq!(stages.len(), STAGES.len());
    let bases = [step06_prefetch::STEP.file].into_iter().chain(STAGES.iter().map(|s| s.file));
    for ((copy, stage), base) in stages.iter().zip(STAGES).zip(bases) {
        let said = (copy.file.as_str(), copy.base.as_str(), copy.change.as_str());
        assert_eq!(said, (stage.file, base, format!("{}.", stage.idea).as_str()));
    }
}

/// The step's kernel with each staged kernel in its place, in order.
fn stages() -> Vec<(&'static str, GpuStep)> {
    STAGES.iter().map(|s| (s.name, STEP.stage(s.name).unwrap())).collect()
}

#[test]
fn the_stages_are_in_order_and_each_differs_from_the_next() {
    for (i, s) in STAGES.iter().enumerate() {
        assert!(s.name.starts_with(&format!("{}_", i + 1)), "stage {} is not number {}", s.name, i + 1);
        assert!(s.file.ends_with(&format!("stages/{}.cu", s.name)), "{}", s.file);
        let said = format!("// Step 07, stage {} of {}, from ", i + 1, STAGES.len());
        assert!(s.source.starts_with(&said), "{} does not start with `{said}`", s.file);
    }
    let sources: Vec<_> = STAGES.iter().map(|s| s.source).chain([STEP.source]).collect();
    for pair in sources.windows(2) {
        assert_ne!(pair[0], pair[1]);
    }
}

/// A learner diffs step 06's kernel with the first stage, each stage with the next and the last
/// with the step's kernel: each diff adds one idea, at most 120 lines (the cp.async stage
/// removes more, step 06's whole copy path).
#[test]
fn each_diff_of_the_chain_is_short() {
    let chain: Vec<(&str, &str)> = [("step06", step06_prefetch::STEP.source)]
        .into_iter()
        .chain(STAGES.iter().map(|s| (s.name, s.source)))
        .chain([("kernel", STEP.source)])
        .collect();
    for pair in chain.windows(2) {
        let (_, n) = testing::lines_removed_and_added(pair[0].1, pair[1].1);
        assert!(n <= 120, "{} → {}: {n} lines added", pair[0].0, pair[1].0);
    }
    assert_eq!(testing::lines_removed_and_added("a\nb\nc\n", "a\nx\nc\nd\n").1, 2);
}

/// Every stage compiles for every architecture the step serves at the documented sets without
/// spills, except the first at the default set: a thread there holds 128 accumulators, and step
/// 06's staging 64 registers more for the next slice (16 pieces of 4 floats), and on sm_90 (the
/// chapter's GPU; sm_80 to sm_89 too, not sm_120) the compiler spills. That is what the second
/// stage's cp.async removes; the chapter runs stage 1 with `--param WN=32`.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_compiles_every_stage_without_spills_but_the_first_at_the_default() {
    for (name, step) in stages() {
        for (arch, _) in testing::archs(&STEP) {
            for &v in SETS {
                let info = testing::nvrtc_check(&step, &set(v), arch)
                    .unwrap_or_else(|e| panic!("{name} {arch} {v:?}: {e}"));
                let spills = info.spill_bytes() > 0 || info.stack_frame > 0;
                match (name, v == SETS[0], arch) {
                    ("1_mma_sync", true, "sm_90") => assert!(spills, "{name} {arch} {v:?}: {info:?}"),
                    ("1_mma_sync", true, _) => {}
                    _ => assert!(!spills, "{name} {arch} {v:?}: {info:?}"),
                }
            }
        }
    }
}

/// Every stage gives right answers on the awkward shapes (stage 1 with 64×32 warps, the set it
/// runs at without spilling), and the same planted fault (the last slice of K left out) fails
/// each of them: the check reaches the stages too.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_every_stage_matches_the_reference_and_a_planted_fault_fails() {
    for (name, step) in stages() {
        let params = if name == "1_mma_sync" { set(SETS[1]) } else { Params::defaults(STEP.params) };
        testing::assert_all_pass(&testing::gpu_check(&step, params.clone(), SHAPES).unwrap());
        let faulty = testing::edited(&step, DROP_SLICE);
        let results = testing::gpu_check(&faulty, params, &[(127, 129, 131), (67, 45, 129)]).unwrap();
        for (shape, verdict) in &results {
            assert!(!verdict.passed(), "{name} with the last slice dropped passed at {shape}");
        }
    }
}

/// The lines of `source` from the one that starts with `from` up to the first blank line, less
/// the book's anchor comments (`// ANCHOR: …`).
fn block<'a>(source: &'a str, from: &str) -> Vec<&'a str> {
    let start = source.lines().position(|l| l.starts_with(from)).unwrap_or_else(|| panic!("no `{from}`"));
    let lines = source.lines().skip(start).take_while(|l| !l.trim().is_empty());
    lines.filter(|l| !l.starts_with("// ANCHOR")).collect()
}

#[test]
fn the_mma_only_variant_keeps_the_kernels_tiles_mmas_and_columns() {
    // Its time means something only while it issues the kernel's MMAs in the kernel's launch.
    let constants = |s| -> Vec<&str> {
        block(s, "constexpr int WARPS_N").into_iter().filter(|l| l.starts_with("constexpr")).collect()
    };
    assert_eq!(constants(MMA_ONLY.source), constants(STEP.source));
    for from in ["__device__ __forceinline__ void mma(", "__device__ __forceinline__ int warp_col("] {
        assert_eq!(block(MMA_ONLY.source, from), block(STEP.source, from), "{from}");
    }
    let loop_ = "for (int k0 = 0; k0 < K; k0 += BK)";
    assert!(MMA_ONLY.source.contains(loop_) && STEP.source.contains(loop_));
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_compiles_the_mma_only_variant_without_spills() {
    let archs = testing::archs(&STEP).into_iter().map(|(arch, _)| arch);
    testing::Sets { step: &MMA_ONLY, ..DOCUMENTED }.assert_compile_without_spills(archs);
}

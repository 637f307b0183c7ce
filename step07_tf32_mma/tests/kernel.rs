use common::gpu::Limits;
use common::testing::faults::{Class, Fault};
use common::testing::{self, DEEP, SHAPES};
use common::{GpuStep, Params, Precision, Shape};
use step07_tf32_mma::STEP;

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

/// The planted faults of this kernel (see `common::testing::faults`): the precisions below TF32
/// rounded to nearest, and what is summed or written.
const FAULTS: &[Fault] = &[
    Fault { class: Class::Bf16A, edits: &[BF16_A] },
    Fault { class: Class::Bf16B, edits: &BF16_B },
    Fault { class: Class::Bf16, edits: &[BF16_A, BF16_B[0], BF16_B[1]] },
    Fault {
        class: Class::Truncated,
        // No conversion: the tensor cores ignore the 13 low bits of what they read.
        edits: &[
            ("asm(\"cvt.rn.tf32.f32 %0, %1;\" : \"=r\"(r) : \"f\"(__uint_as_float(x)));", "r = x;"),
            ("asm(\"cvt.rna.tf32.f32 %0, %1;\" : \"=r\"(r) : \"f\"(__uint_as_float(x)));", "r = x;"),
        ],
    },
    Fault {
        class: Class::DropTerm,
        edits: &[
            // B's last row (k = K - 1) counts as outside, so its copies store zeros.
            ("B, k0 + s.row(i), col0 + s.c, K, N);", "B, k0 + s.row(i), col0 + s.c, K - 1, N);"),
        ],
    },
    Fault {
        class: Class::DropSlice,
        edits: &[("for (int k0 = 0; k0 < K; k0 += BK)", "for (int k0 = 0; k0 < K - BK; k0 += BK)")],
    },
    Fault { class: Class::Zero, edits: &[("C[row * N + col] = acc[j][i][e];", "C[row * N + col] = 0.0f;")] },
    Fault { class: Class::Row, edits: &[("if (row < M && col < N) C[", "if (row < M - 1 && col < N) C[")] },
    Fault {
        class: Class::Column,
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

fn set(v: [u32; 5]) -> Params {
    testing::named_params(&STEP, ["BM", "BN", "BK", "WM", "WN"], v)
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
    let s = Shape::square(4096).unwrap();
    for &v in SETS {
        STEP.validate(&set(v), s, &Limits::SM80).unwrap_or_else(|e| panic!("{v:?}: {e}"));
    }
    let near_limit = Shape::new(1, 1, i32::MAX as usize - 8).unwrap();
    let err = STEP.validate(&set(SETS[0]), near_limit, &Limits::SM90).unwrap_err().to_string();
    assert!(err.contains("32-bit index limit"), "{err}");
    for (v, says) in [
        ([128, 128, 32, 24, 32], "multiples of 16"),
        ([128, 128, 12, 64, 32], "WM and WN multiples of 16, BK of 8"),
        ([128, 128, 32, 48, 32], "whole number of warp regions"),
        ([128, 128, 32, 64, 24], "WM and WN multiples of 16"),
        ([128, 128, 24, 64, 32], "BK/4 and BN/4 must divide"),
        ([256, 256, 32, 32, 32], "threads per block"),
        ([256, 256, 256, 64, 64], "bytes of A and B in shared memory"),
    ] {
        let err = STEP.validate(&set(v), s, &Limits::SM90).unwrap_err().to_string();
        assert!(err.contains(says), "{v:?}: {err}");
    }
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_compiles_documented_sets_without_spills() {
    for (arch, _) in testing::archs(&STEP) {
        for &v in SETS {
            let info =
                testing::nvrtc_check(&STEP, &set(v), arch).unwrap_or_else(|e| panic!("{arch} {v:?}: {e}"));
            assert_eq!((info.spill_bytes(), info.stack_frame), (0, 0), "{arch} {v:?}: {info:?}");
        }
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_matches_the_reference_on_many_shapes() {
    testing::assert_defaults_pass(&STEP, SHAPES);
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_documented_sets_match_the_reference() {
    for &v in SETS {
        testing::assert_all_pass(&testing::gpu_check(&STEP, set(v), SHAPES).unwrap());
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_random_shapes_match_the_reference() {
    testing::gpu_property(&STEP, Params::defaults(STEP.params), 500, testing::random_shapes());
}

common::planted_fault_tests!(STEP, FAULTS, &[SHAPES, DEEP].concat(), env!("CARGO_BIN_EXE_step07_tf32_mma"));

/// The variant that issues the kernel's MMAs alone (operands in registers), run in place of the
/// step's kernel with --no-verify to measure what the instructions cost.
const MMA_ONLY: GpuStep = GpuStep {
    file: "step07_tf32_mma/variants/mma_only.cu",
    source: include_str!("../variants/mma_only.cu"),
    ..STEP
};

/// The variant's first lines name the kernel it copies and its change, and it is that kernel
/// with the diff beside it (`variants/mma_only.diff`) applied.
#[test]
fn the_variant_is_the_kernel_with_its_diff() {
    let copies = testing::copies::assert_copies(env!("CARGO_PKG_NAME"));
    assert_eq!(copies.iter().map(|c| c.file.as_str()).collect::<Vec<_>>(), [MMA_ONLY.file]);
}

/// The lines of `source` from the one that starts with `from` up to the first blank line.
fn block<'a>(source: &'a str, from: &str) -> Vec<&'a str> {
    let start = source.lines().position(|l| l.starts_with(from)).unwrap_or_else(|| panic!("no `{from}`"));
    source.lines().skip(start).take_while(|l| !l.trim().is_empty()).collect()
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
    for (arch, _) in testing::archs(&STEP) {
        for &v in SETS {
            let info = testing::nvrtc_check(&MMA_ONLY, &set(v), arch)
                .unwrap_or_else(|e| panic!("{arch} {v:?}: {e}"));
            assert_eq!((info.spill_bytes(), info.stack_frame), (0, 0), "{arch} {v:?}: {info:?}");
        }
    }
}

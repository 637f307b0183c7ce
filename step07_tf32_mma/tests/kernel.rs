use common::gpu::Limits;
use common::testing::faults::{Class, Fault};
use common::testing::{self, ARCHS, DEEP, SHAPES};
use common::{Params, Precision, Shape};
use step07_tf32_mma::STEP;

/// The planted faults of this kernel (see `common::testing::faults`); a TF32 step plants those
/// that change what is summed or written.
const FAULTS: &[Fault] = &[
    Fault {
        class: Class::DropTerm,
        edits: &[
            // The 16-byte path copies 12 bytes of the last piece of a row and zero-fills the rest.
            (
                "copy16(dst, in ? &A[row * K + k] : A, in ? 16 : 0);",
                "copy16(dst, in ? &A[row * K + k] : A, in ? (k + 4 < K ? 16 : 12) : 0);",
            ),
            ("bool in = row < M && k + v < K;", "bool in = row < M && k + v < K - 1;"),
        ],
    },
    Fault {
        class: Class::DropSlice,
        edits: &[("for (int k0 = 0; k0 < K; k0 += BK)", "for (int k0 = 0; k0 < K - BK; k0 += BK)")],
    },
    Fault { class: Class::Zero, edits: &[("C[row * N + col] = acc[i][j][e];", "C[row * N + col] = 0.0f;")] },
    Fault { class: Class::Row, edits: &[("if (row < M && col < N) C[", "if (row < M - 1 && col < N) C[")] },
    Fault {
        class: Class::Column,
        edits: &[("if (row < M && col < N) C[", "if (row < M && col < N - 1) C[")],
    },
];

/// Parameter sets the chapter and the tests use: the default, narrower warps, a shallower
/// slice, taller and wider blocks, and square 64×64 warp regions.
const SETS: &[[u32; 5]] = &[
    [128, 128, 32, 64, 32],
    [128, 128, 32, 32, 32],
    [128, 128, 16, 64, 32],
    [256, 128, 32, 64, 32],
    [128, 256, 32, 64, 64],
    [64, 64, 32, 32, 32],
];

fn set(v: [u32; 5]) -> Params {
    let names = ["BM", "BN", "BK", "WM", "WN"];
    Params::with_overrides(
        STEP.params,
        &names.iter().zip(v).map(|(n, v)| ((*n).to_owned(), v)).collect::<Vec<_>>(),
    )
    .unwrap()
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
        ([128, 128, 32, 24, 32], "multiple of 16"),
        ([128, 128, 12, 64, 32], "multiple of 16, WN of 8, BK of 8"),
        ([128, 128, 32, 48, 32], "whole number of warp regions"),
        ([128, 40, 32, 64, 40], "multiple of 32"),
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
    for &(arch, _) in ARCHS {
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

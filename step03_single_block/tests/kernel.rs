use common::gpu::LaunchLimits;
use common::testing;
use common::testing::faults::{FaultClass, PlantedFault};
use common::{Params, Shape};
use proptest::prelude::*;
use step03_single_block::STEP;

/// The planted faults of this kernel (see `common::testing::faults`).
const FAULTS: &[PlantedFault] = &[
    PlantedFault {
        class: FaultClass::Tf32,
        edits: &[(
            "sum += As[row * K + k] * Bs[k * N + col];",
            "sum += fault_tf32(As[row * K + k]) * fault_tf32(Bs[k * N + col]);",
        )],
    },
    PlantedFault {
        class: FaultClass::Bf16,
        edits: &[(
            "sum += As[row * K + k] * Bs[k * N + col];",
            "sum += fault_bf16(As[row * K + k]) * fault_bf16(Bs[k * N + col]);",
        )],
    },
    PlantedFault {
        class: FaultClass::DropTerm,
        edits: &[("for (int k = 0; k < K; ++k)", "for (int k = 0; k < K - 1; ++k)")],
    },
    // No slices here: the last 16 terms stand in for one.
    PlantedFault {
        class: FaultClass::DropSlice,
        edits: &[("for (int k = 0; k < K; ++k)", "for (int k = 0; k < K - 16; ++k)")],
    },
    PlantedFault {
        class: FaultClass::Zero,
        edits: &[("C[row * N + col] = sum;", "C[row * N + col] = 0.0f;")],
    },
    PlantedFault {
        class: FaultClass::Row,
        edits: &[("if (row < M && col < N) {", "if (row < M - 1 && col < N) {")],
    },
    PlantedFault {
        class: FaultClass::Column,
        edits: &[("if (row < M && col < N) {", "if (row < M && col < N - 1) {")],
    },
];

/// Shapes one block can hold: M·N ≤ 1024 threads, and A and B within shared memory.
const SHAPES: &[(usize, usize, usize)] = &[
    (1, 1, 1),
    (1, 1, 7),
    (2, 3, 1),
    (7, 3, 5),
    (3, 7, 5),
    (13, 17, 19),
    (31, 33, 37),
    (32, 32, 32),
    (16, 64, 100),
    (64, 16, 100),
    (1, 1024, 3),
    (1024, 1, 3),
    (1, 1000, 1),
    (17, 31, 511),
    (8, 8, 2000),
    (1, 1, 20_000),
    (32, 32, 900),
    (5, 200, 111),
    (29, 35, 64),
    (30, 34, 777),
    (11, 93, 1),
];

fn params() -> Params {
    Params::defaults(STEP.params)
}

#[test]
fn default_shape_is_the_largest_square_one_block_holds() {
    assert_eq!((STEP.default_shape)(&LaunchLimits::SM90), Shape { m: 32, n: 32, k: 32 });
}

#[test]
fn shapes_beyond_one_block_are_refused_with_the_limit_and_the_next_step() {
    let err = STEP
        .validate(&params(), Shape::new(33, 32, 8).unwrap(), &LaunchLimits::SM90)
        .unwrap_err()
        .to_string();
    assert!(err.contains("1056 threads") && err.contains("step04_tiled"), "{err}");
    let err = STEP
        .validate(&params(), Shape::new(32, 32, 1000).unwrap(), &LaunchLimits::SM90)
        .unwrap_err()
        .to_string();
    assert!(err.contains("shared memory") && err.contains("step04_tiled"), "{err}");
    for &(m, n, k) in SHAPES {
        STEP.validate(&params(), Shape::new(m, n, k).unwrap(), &LaunchLimits::SM90).unwrap();
    }
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_compiles_without_spills() {
    for (arch, _) in testing::archs(&STEP) {
        let info = testing::nvrtc_check(&STEP, &params(), arch).unwrap();
        assert_eq!(info.spill_bytes(), 0, "{arch}: {info:?}");
        assert_eq!(info.static_smem, 0, "{arch}: A and B live in dynamic shared memory");
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_matches_the_reference_on_many_shapes() {
    testing::assert_defaults_pass(&STEP, SHAPES);
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_random_shapes_match_the_reference() {
    // Shapes one block holds: M·N ≤ 1024 threads, and A and B within Hopper's 227 KB of shared
    // memory (M·K + K·N ≤ 58112 floats).
    let shapes = (1usize..=32, 1usize..=32)
        .prop_flat_map(|(m, n)| (Just(m), Just(n), 1usize..=(58_112 / (m + n)).min(2048)));
    testing::gpu_property(&STEP, params(), 500, shapes);
}

common::planted_fault_tests!(STEP, FAULTS, SHAPES, env!("CARGO_BIN_EXE_step03_single_block"));

use common::testing::faults::{FaultClass, PlantedFault};
use common::testing::{self, DEEP, SHAPES};
use common::{Params, Shape};
use step02_gpu_naive::STEP;

/// The planted faults of this kernel (see `common::testing::faults`).
const FAULTS: &[PlantedFault] = &[
    PlantedFault {
        class: FaultClass::Tf32,
        edits: &[(
            "sum += A[(offset_t)row * K + k] * B[(offset_t)k * N + col];",
            "sum += fault_tf32(A[(offset_t)row * K + k]) * fault_tf32(B[(offset_t)k * N + col]);",
        )],
    },
    PlantedFault {
        class: FaultClass::Bf16,
        edits: &[(
            "sum += A[(offset_t)row * K + k] * B[(offset_t)k * N + col];",
            "sum += fault_bf16(A[(offset_t)row * K + k]) * fault_bf16(B[(offset_t)k * N + col]);",
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
        edits: &[("C[(offset_t)row * N + col] = sum;", "C[(offset_t)row * N + col] = 0.0f;")],
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

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_compiles_every_block_size_without_spills() {
    for (arch, limits) in testing::archs(&STEP) {
        for (block, coalesced) in [(8, 1), (16, 1), (32, 1), (32, 0)] {
            let params = Params::with_overrides(
                STEP.params,
                &[("BLOCK".into(), block), ("COALESCED".into(), coalesced)],
            )
            .unwrap();
            let info = testing::nvrtc_check(&STEP, &params, arch).unwrap();
            assert_eq!(info.spill_bytes(), 0, "{arch} BLOCK={block}: {info:?}");
            assert_eq!(info.static_smem, 0, "the naive kernel uses no shared memory");
            assert!(info.registers > 0 && info.registers <= 64, "{arch}: {info:?}");
            STEP.validate(&params, Shape::square(4096).unwrap(), &limits).unwrap();
        }
    }
}

#[test]
fn launch_covers_c_with_one_thread_per_element() {
    let p = Params::defaults(STEP.params);
    let l = (STEP.geometry)(&p, Shape::new(33, 65, 7).unwrap());
    assert_eq!(l.block, (32, 32, 1));
    assert_eq!(l.grid, (3, 2, 1));
    assert!(l.grid.0 * l.block.0 >= 65 && l.grid.1 * l.block.1 >= 33);
    let p = Params::with_overrides(STEP.params, &[("COALESCED".into(), 0)]).unwrap();
    assert_eq!((STEP.geometry)(&p, Shape::new(33, 65, 7).unwrap()).grid, (2, 3, 1));
}

#[test]
fn rejects_blocks_larger_than_the_device_allows() {
    let p = Params::with_overrides(STEP.params, &[("BLOCK".into(), 33)]).unwrap();
    let err = STEP.validate(&p, Shape::square(64).unwrap(), &common::gpu::LaunchLimits::SM90).unwrap_err();
    assert!(err.to_string().contains("BLOCK must be from 1 to 32"), "{err}");
}

common::reference_tests!(STEP);

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_uncoalesced_mapping_matches_the_reference() {
    let p = Params::with_overrides(STEP.params, &[("COALESCED".into(), 0)]).unwrap();
    testing::assert_all_pass(&testing::gpu_check(&STEP, p, SHAPES).unwrap());
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_small_blocks_match_the_reference() {
    let p = Params::with_overrides(STEP.params, &[("BLOCK".into(), 8)]).unwrap();
    testing::assert_all_pass(&testing::gpu_check(&STEP, p, &SHAPES[..12]).unwrap());
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_runs_and_verifies_without_cublas() {
    use clap::Parser;
    let args =
        common::cli::Args::try_parse_from(["step02_gpu_naive", "-m", "129", "-n", "65", "-k", "33"]).unwrap();
    // As on a machine where libcublas is missing: the run verifies against the CPU reference.
    assert!(common::run::run_gpu_with(&STEP, &args, || false).unwrap());
}

common::planted_fault_tests!(STEP, FAULTS, &[SHAPES, DEEP].concat(), env!("CARGO_BIN_EXE_step02_gpu_naive"));

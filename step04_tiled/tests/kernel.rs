use common::gpu::LaunchLimits;
use common::testing::faults::{FaultClass, PlantedFault};
use common::testing::{self, DEEP, SHAPES};
use common::{GpuStep, Params, Shape};
use step04_tiled::STEP;

/// The planted faults of this kernel (see `common::testing::faults`).
const FAULTS: &[PlantedFault] = &[
    PlantedFault {
        class: FaultClass::Tf32,
        edits: &[("sum += As[ty][k] * Bs[k][tx];", "sum += fault_tf32(As[ty][k]) * fault_tf32(Bs[k][tx]);")],
    },
    PlantedFault {
        class: FaultClass::Bf16,
        edits: &[("sum += As[ty][k] * Bs[k][tx];", "sum += fault_bf16(As[ty][k]) * fault_bf16(Bs[k][tx]);")],
    },
    PlantedFault {
        class: FaultClass::DropTerm,
        edits: &[("(row < M && k0 + tx < K) ?", "(row < M && k0 + tx < K - 1) ?")],
    },
    PlantedFault {
        class: FaultClass::DropSlice,
        edits: &[("for (int k0 = 0; k0 < K; k0 += TILE)", "for (int k0 = 0; k0 < K - TILE; k0 += TILE)")],
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

fn tile(t: u32) -> Params {
    Params::with_overrides(STEP.params, &[("TILE".into(), t)]).unwrap()
}

/// B transposed by the host, with `pad` floats after each row of the B tile.
fn transposed(pad: u32) -> Params {
    Params::with_overrides(STEP.params, &[("BT".into(), 1), ("PAD".into(), pad)]).unwrap()
}

/// The variant that leaves the reuse to the L1 cache, run in place of the step's kernel.
const L1_CACHE: GpuStep = GpuStep {
    file: "step04_tiled/variants/l1_cache.cu",
    source: include_str!("../variants/l1_cache.cu"),
    ..STEP
};

/// The variant's first lines name the kernel it copies and its change, and it is that kernel
/// with the diff beside it (`variants/l1_cache.diff`) applied.
#[test]
fn the_variant_is_the_kernel_with_its_diff() {
    let copies = testing::copies::assert_copies(env!("CARGO_PKG_NAME"));
    assert_eq!(copies.iter().map(|c| c.file.as_str()).collect::<Vec<_>>(), [L1_CACHE.file]);
}

#[test]
fn only_the_transposed_b_tile_without_padding_conflicts() {
    // Per k a warp reads a broadcast of A (half a wavefront: four k per 16-byte load, two
    // wavefronts each) and B: one wavefront for a row of Bs, 32 per four k for an unpadded
    // column, one once padded. Nsight Compute counts 1.5, 8.5 and 1.5 wavefronts per FMA.
    let shared = |p: &Params| (STEP.intensity)(p).shared.unwrap();
    assert_eq!(shared(&Params::defaults(STEP.params)), 64.0 / (128.0 * 1.5));
    assert_eq!(shared(&transposed(0)), 64.0 / (128.0 * 8.5));
    assert_eq!(shared(&transposed(1)), 64.0 / (128.0 * 1.5));
    assert_eq!((STEP.intensity)(&tile(16)).global, 4.0);
    assert!((STEP.b_transposed)(&transposed(0)) && !(STEP.b_transposed)(&Params::defaults(STEP.params)));
    let bad = Params::with_overrides(STEP.params, &[("BT".into(), 2)]).unwrap();
    let err = STEP.validate(&bad, Shape::square(64).unwrap(), &LaunchLimits::SM90).unwrap_err().to_string();
    assert!(err.contains("BT=2 must be 0"), "{err}");
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_compiles_every_tile_size_without_spills() {
    for (arch, limits) in testing::archs(&STEP) {
        for t in [8, 16, 32] {
            let info = testing::nvrtc_check(&STEP, &tile(t), arch).unwrap();
            let rolled =
                Params::with_overrides(STEP.params, &[("TILE".into(), t), ("UNROLL".into(), 1)]).unwrap();
            assert_eq!(testing::nvrtc_check(&STEP, &rolled, arch).unwrap().spill_bytes(), 0);
            assert_eq!(info.spill_bytes(), 0, "{arch} TILE={t}: {info:?}");
            assert_eq!(info.static_smem, 2 * 4 * t * t, "{arch} TILE={t}: two TILE×TILE float tiles");
            STEP.validate(&tile(t), Shape::square(4096).unwrap(), &limits).unwrap();
        }
        for pad in [0, 1] {
            let info = testing::nvrtc_check(&STEP, &transposed(pad), arch).unwrap();
            assert_eq!(info.spill_bytes(), 0, "{arch} BT=1 PAD={pad}: {info:?}");
            assert_eq!(info.static_smem, 4 * 32 * (32 + 32 + pad), "{arch} PAD={pad}: As, and Bs padded");
        }
        let info = testing::nvrtc_check(&L1_CACHE, &Params::defaults(STEP.params), arch).unwrap();
        assert_eq!((info.spill_bytes(), info.static_smem), (0, 0), "{arch} l1_cache: {info:?}");
    }
}

#[test]
fn tiles_larger_than_a_block_are_refused() {
    let err =
        STEP.validate(&tile(64), Shape::square(64).unwrap(), &LaunchLimits::SM90).unwrap_err().to_string();
    assert!(err.contains("4096 threads") && err.contains("from 1 to 32"), "{err}");
    assert!(STEP.validate(&tile(0), Shape::square(64).unwrap(), &LaunchLimits::SM90).is_err());
}

common::reference_tests!(STEP);

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_tiles_8_and_16_match_the_reference() {
    for t in [8, 16] {
        testing::assert_all_pass(&testing::gpu_check(&STEP, tile(t), SHAPES).unwrap());
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_b_transposed_by_the_host_with_and_without_padding_matches_the_reference() {
    for pad in [0, 1] {
        testing::assert_all_pass(&testing::gpu_check(&STEP, transposed(pad), SHAPES).unwrap());
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_the_l1_cache_variant_matches_the_reference() {
    testing::assert_all_pass(&testing::gpu_check(&L1_CACHE, Params::defaults(STEP.params), SHAPES).unwrap());
}

common::planted_fault_tests!(STEP, FAULTS, &[SHAPES, DEEP].concat(), env!("CARGO_BIN_EXE_step04_tiled"));

use common::gpu::Limits;
use common::testing::{self, ARCHS, SHAPES};
use common::{Params, Shape};
use step04_tiled::STEP;

fn tile(t: u32) -> Params {
    Params::with_overrides(STEP.params, &[("TILE".into(), t)]).unwrap()
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_compiles_every_tile_size_without_spills() {
    for &(arch, limits) in ARCHS {
        for t in [8, 16, 32] {
            let info = testing::nvrtc_check(&STEP, &tile(t), arch).unwrap();
            let rolled =
                Params::with_overrides(STEP.params, &[("TILE".into(), t), ("UNROLL".into(), 1)]).unwrap();
            assert_eq!(testing::nvrtc_check(&STEP, &rolled, arch).unwrap().spill_bytes(), 0);
            assert_eq!(info.spill_bytes(), 0, "{arch} TILE={t}: {info:?}");
            assert_eq!(info.static_smem, 2 * 4 * t * t, "{arch} TILE={t}: two TILE×TILE float tiles");
            STEP.validate(&tile(t), Shape::square(4096).unwrap(), &limits).unwrap();
        }
    }
}

#[test]
fn tiles_larger_than_a_block_are_refused() {
    let err = STEP.validate(&tile(64), Shape::square(64).unwrap(), &Limits::SM90).unwrap_err().to_string();
    assert!(err.contains("4096 threads") && err.contains("from 1 to 32"), "{err}");
    assert!(STEP.validate(&tile(0), Shape::square(64).unwrap(), &Limits::SM90).is_err());
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_matches_the_reference_on_many_shapes() {
    testing::assert_defaults_pass(&STEP, SHAPES);
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_tiles_8_and_16_match_the_reference() {
    for t in [8, 16] {
        testing::assert_all_pass(&testing::gpu_check(&STEP, tile(t), SHAPES).unwrap());
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_random_shapes_match_the_reference() {
    testing::gpu_property(&STEP, Params::defaults(STEP.params), 500, testing::random_shapes());
}

use common::Params;
use common::testing::thread_tile::{self, FAULTS};
use common::testing::{self, DEEP, SHAPES};
use step06_prefetch::{STEP, VARIANTS};

#[test]
fn documented_sets_are_valid_and_bad_ones_refused() {
    thread_tile::assert_sets_checked(&STEP);
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_compiles_documented_sets_without_spills() {
    thread_tile::assert_sets_compile(&STEP);
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_an_edit_that_does_not_compile_shows_the_log() {
    thread_tile::assert_broken_edit_reported(&STEP);
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_matches_the_reference_on_many_shapes() {
    testing::assert_defaults_pass(&STEP, SHAPES);
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_documented_sets_match_the_reference() {
    thread_tile::assert_sets_correct_on_gpu(&STEP);
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_random_shapes_match_the_reference() {
    testing::gpu_property(&STEP, Params::defaults(STEP.params), 500, testing::random_shapes());
}

common::planted_fault_tests!(STEP, FAULTS, &[SHAPES, DEEP].concat(), env!("CARGO_BIN_EXE_step06_prefetch"));

/// The Stream-K variant beside the kernel (variants/stream_k.cu), with its own launch: blocks
/// that share the last tile rows and rows padded to 16 bytes.
mod stream_k {
    use super::*;
    use common::testing::faults;
    use common::testing::thread_tile::STREAM_K_FAULTS;

    fn variant() -> common::GpuStep {
        let v = &VARIANTS[0];
        STEP.with_variant(v, v.source, v.file)
    }

    #[test]
    fn a_copy_named_like_the_variant_gets_its_launch() {
        let dir = std::env::temp_dir().join(format!("step06-variant-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (copy, other) = (dir.join("stream_k.cu"), dir.join("kernel.cu"));
        std::fs::write(&copy, VARIANTS[0].source).unwrap();
        std::fs::write(&other, STEP.source).unwrap();
        let step = common::compile_only::with_kernel(&STEP, &copy).unwrap();
        let plain = common::compile_only::with_kernel(&STEP, &other).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(matches!(step.schedule, common::Schedule::StreamK) && step.pads_rows);
        assert!(step.params.iter().any(|p| p.name == "SHARE"));
        assert_eq!(step.source, VARIANTS[0].source);
        assert!(matches!(plain.schedule, common::Schedule::Tiles) && !plain.pads_rows);
        assert!(!plain.params.iter().any(|p| p.name == "SHARE"));
    }

    #[test]
    fn documented_sets_are_valid_and_bad_ones_refused() {
        thread_tile::assert_sets_checked(&variant());
    }

    #[test]
    fn the_shapes_of_the_overwrite_fault_are_shared() {
        thread_tile::assert_shared_shapes_share(&variant());
    }

    #[test]
    fn planted_faults_apply_to_the_variant() {
        faults::assert_faults_apply(&variant(), STREAM_K_FAULTS);
    }

    #[test]
    #[ignore = "needs libnvrtc"]
    fn nvrtc_compiles_documented_sets_and_faults_without_spills() {
        thread_tile::assert_sets_compile(&variant());
        faults::assert_faults_compile(&variant(), STREAM_K_FAULTS);
    }

    #[test]
    #[ignore = "needs an NVIDIA GPU"]
    fn gpu_matches_the_reference_and_planted_faults_are_caught() {
        testing::assert_defaults_pass(&variant(), SHAPES);
        testing::assert_exact(&variant(), &[SHAPES, DEEP].concat());
        faults::assert_caught(&variant(), STREAM_K_FAULTS);
    }

    #[test]
    #[ignore = "needs an NVIDIA GPU"]
    fn gpu_a_shared_tile_piece_that_overwrites_the_sum_fails() {
        thread_tile::assert_overwrite_caught_on_gpu(&variant());
    }
}

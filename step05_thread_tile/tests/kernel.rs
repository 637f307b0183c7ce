use common::Params;
use common::testing::thread_tile::{self, FAULTS};
use common::testing::{self, DEEP, SHAPES};
use step05_thread_tile::{STAGES, STEP};

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
fn the_shapes_of_the_overwrite_fault_are_shared() {
    thread_tile::assert_shared_shapes_share(&STEP);
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_a_shared_tile_piece_that_overwrites_the_sum_fails() {
    thread_tile::assert_overwrite_caught_on_gpu(&STEP);
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_random_shapes_match_the_reference() {
    testing::gpu_property(&STEP, Params::defaults(STEP.params), 500, testing::random_shapes());
}

common::planted_fault_tests!(
    STEP,
    FAULTS,
    &[SHAPES, DEEP].concat(),
    env!("CARGO_BIN_EXE_step05_thread_tile")
);

/// The step's kernel with each staged kernel in its place, in order.
fn stages() -> Vec<(&'static str, common::GpuStep)> {
    STAGES.iter().map(|s| (s.name, STEP.stage(s.name).unwrap())).collect()
}

#[test]
fn the_stages_are_in_order_and_each_differs_from_the_next() {
    let names: Vec<_> = STAGES.iter().map(|s| s.name).collect();
    for (i, name) in names.iter().enumerate() {
        assert!(name.starts_with(&format!("{}_", i + 1)), "stage {name} is not number {}", i + 1);
    }
    let sources: Vec<_> = STAGES.iter().map(|s| s.source).chain([STEP.source]).collect();
    for pair in sources.windows(2) {
        assert_ne!(pair[0], pair[1]);
    }
    for s in STAGES {
        assert!(s.file.ends_with(&format!("stages/{}.cu", s.name)), "{}", s.file);
    }
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_compiles_every_stage_without_spills() {
    for (name, step) in stages() {
        for (arch, _) in testing::archs(&STEP) {
            let info = testing::nvrtc_check(&step, &Params::defaults(STEP.params), arch).unwrap();
            assert_eq!(info.spill_bytes(), 0, "{name} {arch}: {info:?}");
        }
    }
}

/// Every stage gives right answers on the awkward shapes, and the same planted fault (the last
/// slice of K left out) fails each of them: the check reaches the stages too.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_every_stage_matches_the_reference_and_a_planted_fault_fails() {
    let params = Params::defaults(STEP.params);
    for (name, step) in stages() {
        testing::assert_all_pass(&testing::gpu_check(&step, params.clone(), SHAPES).unwrap());
        let faulty = testing::apply_edits(step.source, thread_tile::STAGE_DROP_SLICE).unwrap();
        let faulty = common::GpuStep { source: Box::leak(faulty.into_boxed_str()), ..step };
        let results =
            testing::gpu_check(&faulty, params.clone(), &[(127, 129, 131), (64, 64, 65536)]).unwrap();
        for (shape, verdict) in &results {
            assert!(!verdict.passed(), "{name} with the last slice dropped passed at {shape}");
        }
    }
}

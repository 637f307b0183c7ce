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

common::reference_tests!(STEP);

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_documented_sets_match_the_reference() {
    thread_tile::assert_sets_correct_on_gpu(&STEP);
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

/// Each stage's first lines name the kernel before it (step 04's for the first) and the idea it
/// adds, as `--help` says it, and each is that kernel with the diff beside it
/// (`stages/NAME.diff`) applied.
#[test]
fn each_stage_is_the_one_before_with_its_diff() {
    let copies = testing::copies::assert_copies(env!("CARGO_PKG_NAME"));
    assert_eq!(copies.len(), STAGES.len());
    let bases = [step04_tiled::STEP.file].into_iter().chain(STAGES.iter().map(|s| s.file));
    for ((copy, stage), base) in copies.iter().zip(STAGES).zip(bases) {
        let said = (copy.file.as_str(), copy.base.as_str(), copy.change.as_str());
        assert_eq!(said, (stage.file, base, format!("{}.", stage.idea).as_str()));
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
        // Every documented set (the one-dimensional tile the chapter runs at stage 1 among them),
        // for Hopper: no spills and no stack frame.
        for &v in thread_tile::DOCUMENTED {
            let info = testing::nvrtc_check(&step, &thread_tile::params(&STEP, v), "sm_90").unwrap();
            assert!(info.spill_bytes() == 0 && info.stack_frame == 0, "{name} {v:?}: {info:?}");
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
        let faulty = testing::edited(&step, thread_tile::STAGE_DROP_SLICE);
        let results =
            testing::gpu_check(&faulty, params.clone(), &[(127, 129, 131), (64, 64, 65536)]).unwrap();
        for (shape, verdict) in &results {
            assert!(!verdict.passed(), "{name} with the last slice dropped passed at {shape}");
        }
    }
}

/// Lines that differ between two texts (removed plus added), as `diff` counts them.
fn changed_lines(a: &str, b: &str) -> usize {
    let (removed, added) = testing::lines_removed_and_added(a, b);
    removed + added
}

/// A learner diffs step 04's kernel with the first stage, each stage with the next and the last
/// with the step's kernel: each diff is one idea, at most 90 lines.
#[test]
fn each_diff_of_the_chain_is_short() {
    let chain: Vec<(&str, &str)> = [("step04", step04_tiled::STEP.source)]
        .into_iter()
        .chain(STAGES.iter().map(|s| (s.name, s.source)))
        .chain([("kernel", STEP.source)])
        .collect();
    for pair in chain.windows(2) {
        let n = changed_lines(pair[0].1, pair[1].1);
        assert!(n <= 90, "{} → {}: {n} lines differ", pair[0].0, pair[1].0);
    }
    assert_eq!(changed_lines("a\nb\nc\n", "a\nx\nc\nd\n"), 3);
}

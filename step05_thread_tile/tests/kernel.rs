use common::gpu::Limits;
use common::testing::{self, ARCHS, SHAPES};
use common::{Params, Shape};
use step05_thread_tile::STEP;

/// The documented parameter sets (BM, BN, BK, WM, WN, TM, TN; MINB stays 1): this step's default
/// first, the other thread-tile step's default, then the course's one-dimensional thread tile
/// (TN = 1), small tiles, rectangular block, warp and thread tiles, and the large thread tile.
pub const DOCUMENTED: &[[u32; 7]] = &[
    [128, 128, 16, 64, 32, 8, 8],
    [128, 256, 16, 128, 16, 8, 8],
    [128, 128, 8, 64, 32, 8, 8],
    [64, 64, 8, 8, 32, 8, 1],
    [64, 64, 8, 32, 16, 4, 4],
    [128, 64, 16, 64, 32, 8, 8],
    [64, 128, 16, 32, 32, 4, 8],
    [128, 256, 8, 64, 64, 16, 8],
];

fn params(v: [u32; 7]) -> Params {
    let names = ["BM", "BN", "BK", "WM", "WN", "TM", "TN"];
    let o: Vec<(String, u32)> = names.iter().zip(v).map(|(n, v)| ((*n).to_owned(), v)).collect();
    Params::with_overrides(STEP.params, &o).unwrap()
}

#[test]
fn documented_sets_are_valid_and_bad_ones_refused() {
    let s = Shape::square(4096).unwrap();
    for &v in DOCUMENTED {
        STEP.validate(&params(v), s, &Limits::SM90).unwrap();
    }
    for (v, says) in [
        ([128, 128, 8, 64, 32, 3, 8], "whole number"),
        ([128, 128, 8, 64, 64, 8, 8], "exactly 32 thread tiles"),
        ([128, 128, 6, 64, 32, 8, 8], "multiples of 4"),
        ([256, 256, 8, 32, 32, 8, 4], "2048 threads"),
        ([1024, 1024, 32, 256, 128, 32, 32], "shared memory"),
        ([128, 128, 8, 64, 32, 0, 8], "at least 1"),
    ] {
        let err = STEP.validate(&params(v), s, &Limits::SM90).unwrap_err().to_string();
        assert!(err.contains(says), "{v:?}: {err}");
    }
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_compiles_documented_sets_without_spills() {
    for &(arch, _) in ARCHS {
        for &v in DOCUMENTED {
            let info = testing::nvrtc_check(&STEP, &params(v), arch).unwrap();
            assert_eq!(info.spill_bytes(), 0, "{arch} {v:?}: {info:?}");
            assert_eq!(info.stack_frame, 0, "{arch} {v:?}: {info:?}");
            assert_eq!(info.static_smem, 0, "{arch} {v:?}: tiles live in dynamic shared memory");
        }
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_matches_the_reference_on_many_shapes() {
    let results = testing::gpu_check(&STEP, Params::defaults(STEP.params), SHAPES).unwrap();
    assert!(results.len() >= 20);
    testing::assert_all_pass(&results);
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_documented_sets_match_the_reference() {
    for &v in &DOCUMENTED[1..] {
        testing::assert_all_pass(&testing::gpu_check(&STEP, params(v), &SHAPES[..17]).unwrap());
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_random_shapes_match_the_reference() {
    testing::gpu_property(&STEP, Params::defaults(STEP.params), 500, testing::random_shapes());
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_an_edit_that_does_not_compile_shows_the_log() {
    // A learner's edit that drops a semicolon.
    let edited = STEP.source.replace("acc[i][j] += a[i] * b[j];", "acc[i][j] += a[i] * b[j]");
    assert_ne!(edited, STEP.source);
    let step = common::GpuStep { source: Box::leak(edited.into_boxed_str()), ..STEP };
    let err = step.compile(&Params::defaults(STEP.params), "sm_90").unwrap_err().to_string();
    assert!(
        err.starts_with(&format!("the kernel {} does not compile for sm_90; NVRTC says:", STEP.file)),
        "{err}"
    );
    assert!(err.contains("src/kernel.cu(") && err.contains("error"), "{err}");
}

//! The checks the two thread-tile steps (05 and 06) share: they take the same parameters.

use crate::gpu::LaunchLimits;
use crate::matrix::Shape;
use crate::params::Params;
use crate::step::{GpuStep, Schedule};

use super::SHAPES;
use super::faults::{FaultClass, PlantedFault};

/// Faults both forms of the kernel share: the same lines in steps 05, 06 and the variant.
const TF32: PlantedFault = PlantedFault {
    class: FaultClass::Tf32,
    edits: &[("acc[i][j] += a[i] * b[j];", "acc[i][j] += fault_tf32(a[i]) * fault_tf32(b[j]);")],
};
const BF16: PlantedFault = PlantedFault {
    class: FaultClass::Bf16,
    edits: &[("acc[i][j] += a[i] * b[j];", "acc[i][j] += fault_bf16(a[i]) * fault_bf16(b[j]);")],
};
/// Both paths of fetch_tiles: the slices inside A and B, and those at their edges.
const DROP_TERM: PlantedFault = PlantedFault {
    class: FaultClass::DropTerm,
    edits: &[
        (
            "a_next[i] = load4_inside<VEC>(A, row0 + e / (BK / 4), k0 + 4 * (e % (BK / 4)), K);",
            "a_next[i] = load4_inside<VEC>(A, row0 + e / (BK / 4), k0 + 4 * (e % (BK / 4)), K);
                int c = k0 + 4 * (e % (BK / 4));
                if (c + 0 == K - 1) a_next[i].x = 0.0f;
                if (c + 1 == K - 1) a_next[i].y = 0.0f;
                if (c + 2 == K - 1) a_next[i].z = 0.0f;
                if (c + 3 == K - 1) a_next[i].w = 0.0f;",
        ),
        (
            "a_next[i] = load4(A, row0 + e / (BK / 4), k0 + 4 * (e % (BK / 4)), M, K, K % 4 == 0);",
            "a_next[i] = load4(A, row0 + e / (BK / 4), k0 + 4 * (e % (BK / 4)), M, K, K % 4 == 0);
            int c = k0 + 4 * (e % (BK / 4));
            if (c + 0 == K - 1) a_next[i].x = 0.0f;
            if (c + 1 == K - 1) a_next[i].y = 0.0f;
            if (c + 2 == K - 1) a_next[i].z = 0.0f;
            if (c + 3 == K - 1) a_next[i].w = 0.0f;",
        ),
    ],
};
const ROW: PlantedFault = PlantedFault {
    class: FaultClass::Row,
    edits: &[("if (row >= M) continue;", "if (row >= M - 1) continue;")],
};

/// The planted faults of the thread-tile kernels (the same lines in steps 05 and 06).
pub const FAULTS: &[PlantedFault] = &[
    TF32,
    BF16,
    DROP_TERM,
    PlantedFault {
        class: FaultClass::DropSlice,
        // The last slice fetched but not multiplied.
        edits: &[("if (active) compute_tile(", "if (active && k0 + BK < K) compute_tile(")],
    },
    PlantedFault {
        class: FaultClass::Zero,
        edits: &[
            (
                "make_float4(acc[i][j + 0], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3])",
                "make_float4(0.0f, 0.0f, 0.0f, 0.0f)",
            ),
            ("= acc[i][j + v];", "= 0.0f;"),
        ],
    },
    ROW,
    PlantedFault {
        class: FaultClass::Column,
        edits: &[("col + 3 < N", "col + 3 < N - 1"), ("if (col + v < N)", "if (col + v < N - 1)")],
    },
];

/// The planted faults of step06's Stream-K variant (variants/stream_k.cu): its loop runs over a
/// piece's [k_lo, k_hi), and its writes may add to C.
pub const STREAM_K_FAULTS: &[PlantedFault] = &[
    TF32,
    BF16,
    DROP_TERM,
    PlantedFault {
        class: FaultClass::DropSlice,
        // A whole tile's last slice, and each piece's of a shared one, fetched but not multiplied.
        // (An edit of the loop's bounds changes the registers it needs, and the kernel spills.)
        edits: &[("if (active) compute_tile(", "if (active && k0 + BK < k_hi) compute_tile(")],
    },
    PlantedFault {
        class: FaultClass::Zero,
        edits: &[
            (
                "make_float4(acc[i][j + 0], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3])",
                "make_float4(0.0f, 0.0f, 0.0f, 0.0f)",
            ),
            ("*c = add ? __ldcg(c) + acc[i][j + v] : acc[i][j + v];", "*c = add ? __ldcg(c) : 0.0f;"),
        ],
    },
    ROW,
    PlantedFault {
        class: FaultClass::Column,
        // The last run of 4 columns left unwritten: the launch pads N to a multiple of 4 (see
        // crate::pad), so where N is not one, the kernel's last column is padding and an
        // off-by-one there changes nothing in C.
        edits: &[("col + 3 < N", "col + 3 < N - 4"), ("if (col + v < N)", "if (col + v < N - 4)")],
    },
];

/// The last slice of K left out of the staged kernels of step05, which walk all of K in one loop.
pub const STAGE_DROP_SLICE: &[(&str, &str)] =
    &[("for (int k0 = 0; k0 < K; k0 += BK) {", "for (int k0 = 0; k0 < K - BK; k0 += BK) {")];

/// In the Stream-K variant, a later piece of a shared tile overwriting the earlier pieces' sum in
/// C instead of adding to it.
pub const OVERWRITE: &[(&str, &str)] = &[("bool add = p.k_lo > 0;", "bool add = false;")];

/// Shapes whose tiles blocks share on an H200, with one or two blocks per SM (one tile of 257
/// slices; 1000³, whose 32 or 64 tiles are fewer than the SMs; 64×64×65536; 4097³'s last tile
/// rows): a fault in the turns they take must fail there. [`assert_shared_shapes_share`] checks
/// that the host's layout does share them.
pub const SHARED: &[(usize, usize, usize)] =
    &[(127, 129, 4099), (1000, 1000, 1000), (64, 64, 65536), (4097, 4097, 4097)];

/// The order of the values in a documented set; MINB (and STAGES-like extras) keep their defaults.
pub const NAMES: [&str; 7] = ["BM", "BN", "BK", "WM", "WN", "TM", "TN"];

/// The documented sets: the thread-tile steps' defaults, then the course's one-dimensional
/// thread tile (TN = 1), small tiles, rectangular block, warp and thread tiles, and the large
/// thread tile.
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

/// `step`'s parameters with the seven values of `v` (see [`NAMES`]).
pub fn params(step: &GpuStep, v: [u32; 7]) -> Params {
    super::named_params(step, NAMES, v)
}

/// Every documented set is valid on Hopper; sets that cannot work are refused with the reason.
pub fn assert_sets_checked(step: &GpuStep) {
    let s = Shape::square(4096).unwrap();
    assert!(
        DOCUMENTED.iter().any(|&v| params(step, v) == Params::defaults(step.params)),
        "the default is documented"
    );
    for &v in DOCUMENTED {
        step.validate(&params(step, v), s, &LaunchLimits::SM90).unwrap();
    }
    if let Schedule::StreamK = step.schedule {
        let no_share = Params::with_overrides(step.params, &[("SHARE".into(), 2)]).unwrap();
        let err = step.validate(&no_share, s, &LaunchLimits::SM90).unwrap_err().to_string();
        assert!(err.contains("SHARE is 0"), "{err}");
    }
    for (v, says) in [
        ([128, 128, 8, 64, 32, 3, 8], "whole number"),
        ([128, 128, 8, 64, 64, 8, 8], "exactly 32 thread tiles"),
        ([128, 128, 6, 64, 32, 8, 8], "multiples of 4"),
        ([256, 256, 8, 32, 32, 8, 4], "2048 threads"),
        ([1024, 1024, 32, 256, 128, 32, 32], "shared memory"),
        ([128, 128, 8, 64, 32, 0, 8], "at least 1"),
    ] {
        let err = step.validate(&params(step, v), s, &LaunchLimits::SM90).unwrap_err().to_string();
        assert!(err.contains(says), "{v:?}: {err}");
    }
}

/// Every documented set compiles for every architecture the step serves with no spills and no
/// stack frame (register arrays indexed only by unrolled loops), or the step's checks refuse it
/// there in one sentence (too much shared memory for a Turing GPU).
pub fn assert_sets_compile(step: &GpuStep) {
    for (arch, limits) in super::archs(step) {
        for &v in DOCUMENTED {
            if let Err(e) = step.validate(&params(step, v), Shape::square(4096).unwrap(), &limits) {
                assert!(!e.to_string().contains('\n'), "{arch} {v:?}: {e}");
                continue;
            }
            let info = super::nvrtc_check(step, &params(step, v), arch).unwrap();
            assert_eq!(info.spill_bytes(), 0, "{arch} {v:?}: {info:?}");
            assert_eq!(info.stack_frame, 0, "{arch} {v:?}: {info:?}");
            // Tiles live in dynamic shared memory; the only static bytes are the Stream-K
            // variant's: a shared block's list of pieces (two of five ints) and their count.
            let most = if let Schedule::StreamK = step.schedule { 48 } else { 0 };
            assert!(info.static_smem <= most, "{arch} {v:?}: {info:?}");
        }
    }
}

/// Every documented set gives right answers on the awkward shapes.
pub fn assert_sets_correct_on_gpu(step: &GpuStep) {
    for &v in DOCUMENTED {
        super::assert_all_pass(&super::gpu_check(step, params(step, v), &SHAPES[..17]).unwrap());
    }
}

/// The host's layout shares tiles at every shape of [`SHARED`] on an H200's 132 SMs, with one or
/// two blocks per SM (no GPU needed): otherwise the overwrite fault could not show there.
pub fn assert_shared_shapes_share(step: &GpuStep) {
    let params = Params::defaults(step.params);
    for &(m, n, k) in SHARED {
        let geometry = step.validate(&params, Shape::new(m, n, k).unwrap(), &LaunchLimits::SM90).unwrap();
        let slices = (k as u32).div_ceil(params.get("BK"));
        for resident in [132, 264] {
            let (whole, rows) =
                crate::stream_k::stream_k_layout(geometry.grid.1, geometry.grid.0, slices, resident);
            assert!(whole < rows, "{} at {m}×{n}×{k} with {resident} blocks: no tile shared", step.name);
        }
    }
}

/// A planted fault in the turns of the blocks sharing a tile (a later piece overwriting) fails
/// at shapes with shared tiles, where the kernel itself passes.
pub fn assert_overwrite_caught_on_gpu(step: &GpuStep) {
    let params = Params::defaults(step.params);
    super::assert_all_pass(&super::gpu_check(step, params.clone(), SHARED).unwrap());
    let faulty = super::edited(step, OVERWRITE);
    for (shape, verdict) in super::gpu_check(&faulty, params, SHARED).unwrap() {
        assert!(!verdict.passed(), "{} with a piece overwriting the sum passed at {shape}", step.name);
    }
}

/// A learner's edit that drops a semicolon gives NVRTC's log, naming the kernel's file.
pub fn assert_broken_edit_reported(step: &GpuStep) {
    let edited = step.source.replace("acc[i][j] += a[i] * b[j];", "acc[i][j] += a[i] * b[j]");
    assert_ne!(edited, step.source);
    let broken = GpuStep { source: Box::leak(edited.into_boxed_str()), ..*step };
    let err = broken.compile(&Params::defaults(step.params), "sm_90").unwrap_err().to_string();
    assert!(
        err.starts_with(&format!("the kernel {} does not compile for sm_90; NVRTC says:", step.file)),
        "{err}"
    );
    assert!(err.contains("src/kernel.cu(") && err.contains("error"), "{err}");
}

/// Through the program, without a GPU: sets that do not divide or do not fit are refused in a
/// sentence before any GPU is looked for.
pub fn assert_bad_sets_refused_without_a_gpu(bin: &str) {
    super::assert_bad_sets_refused_without_a_gpu(
        bin,
        &[
            (&["--param", "TM=3"], "whole number of warp regions"),
            (&["--param", "WN=64"], "exactly 32 thread tiles"),
            (&["--param", "BK=6"], "multiples of 4"),
            (&["--param", "BK=512", "--param", "BM=256", "--param", "BN=256"], "shared memory"),
        ],
    );
}

/// Through the program, on the GPU: a set whose compiled kernel spills is refused in a sentence.
pub fn assert_spilling_set_refused_by_program(bin: &str) {
    let args =
        ["--size", "256", "--param", "WM=64", "--param", "WN=128", "--param", "TM=16", "--param", "TN=16"];
    super::assert_clear_error(bin, &args, &[], "spills");
}

use common::gpu::LaunchLimits;
use common::matrix::SUITE;
use common::testing::faults::{self, FaultClass, PlantedFault, SPLIT_SHAPES};
use common::testing::thread_tile::{OVERWRITE, STREAM_K_FAULTS};
use common::testing::{self, Checker, DEEP, SHAPES};
use common::{Params, Shape};
use step10_any_shape::{SHORT, SHORT_COLS, SHORT_K, SHORT_THREADS, STEP, TILES, choose, tiles};

/// SM counts of the GPUs the rule is checked for: a T4's 40 up to an H200's 132 and beyond.
const SMS: &[u32] = &[40, 108, 114, 132, 144];

/// The short side's kernels with the last 16 entries of K left out (the last block of a split).
const SHORT_DROP_SLICE: (&str, &str) = (
    "k_hi = min(K, int(quads * (blockIdx.z + 1) / gridDim.z) * 4);",
    "k_hi = min(blockIdx.z + 1 == gridDim.z ? K - 16 : K, int(quads * (blockIdx.z + 1) / gridDim.z) * 4);",
);
/// The short side's kernels writing zeros: few rows (both stores), few columns and short K.
const SHORT_ZERO: [(&str, &str); 4] = [
    ("make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);", "make_float4(0.0f, 0.0f, 0.0f, 0.0f);"),
    ("c[j] = acc[i][j];", "c[j] = 0.0f;"),
    (
        "out[static_cast<long long>(row0 + w) * R + j] = sum[w][j];",
        "out[static_cast<long long>(row0 + w) * R + j] = 0.0f;",
    ),
    ("c[32 * j] = acc[j];", "c[32 * j] = 0.0f;"),
];
/// Short K leaving its last row of C (M − 1) or its last column (N − 1) unwritten.
const SHORT_K_ROW: (&str, &str) = ("if (row >= M) break;", "if (row >= M - 1) break;");
const SHORT_K_COLUMN: (&str, &str) = ("if (col0 + 32 * j < N)", "if (col0 + 32 * j < N - 1)");

/// step10's planted faults: step 06's Stream-K variant's (the same lines; a dropped slice and C
/// all zero also in the short side's kernels, for the shapes of those faults with one or two rows
/// and columns once the rule takes the short side there; C all zero, a row or a column unwritten
/// also in short K's, though the rule takes a tile at the faults' one shape of K ≤ 16, 17×33×9:
/// `gpu_short_k_faults_are_caught` forces short K on them), and the split's sum missing a slice
/// or counting one twice (the tiles' and the short side's split alike).
const FAULTS: &[PlantedFault] = &[
    STREAM_K_FAULTS[0],
    STREAM_K_FAULTS[1],
    STREAM_K_FAULTS[2],
    PlantedFault { class: FaultClass::DropSlice, edits: &[STREAM_K_FAULTS[3].edits[0], SHORT_DROP_SLICE] },
    PlantedFault {
        class: FaultClass::Zero,
        edits: &[
            STREAM_K_FAULTS[4].edits[0],
            STREAM_K_FAULTS[4].edits[1],
            SHORT_ZERO[0],
            SHORT_ZERO[1],
            SHORT_ZERO[2],
            SHORT_ZERO[3],
        ],
    },
    PlantedFault { class: FaultClass::Row, edits: &[STREAM_K_FAULTS[5].edits[0], SHORT_K_ROW] },
    PlantedFault {
        class: FaultClass::Column,
        edits: &[STREAM_K_FAULTS[6].edits[0], STREAM_K_FAULTS[6].edits[1], SHORT_K_COLUMN],
    },
    PlantedFault {
        class: FaultClass::SplitDropped,
        edits: &[
            ("for (int z = 1; z < slices; ++z)", "for (int z = 1; z < slices - 1; ++z)"),
            ("sum = partials[z * count + i];", "sum = z == 0 ? 0.0f : partials[z * count + i];"),
        ],
    },
    PlantedFault {
        class: FaultClass::SplitDoubled,
        edits: &[
            ("float sum = partials[i];", "float sum = 2.0f * partials[i];"),
            (
                "sum = partials[z * count + i];",
                "sum = z == 0 ? 2.0f * partials[z * count + i] : partials[z * count + i];",
            ),
        ],
    },
];

fn shape((m, n, k): (usize, usize, usize)) -> Shape {
    Shape::new(m, n, k).unwrap()
}

fn chosen(s: (usize, usize, usize), sms: u32) -> Params {
    STEP.params_for(shape(s), sms, &[]).unwrap().0
}

#[test]
fn the_choice_is_valid_at_every_shape_and_sm_count() {
    for &s in SHAPES.iter().chain(DEEP).chain(SUITE).chain(SPLIT_SHAPES) {
        for &sms in SMS {
            let p = chosen(s, sms);
            STEP.validate(&p, shape(s), &LaunchLimits::SM90)
                .unwrap_or_else(|e| panic!("{s:?} on {sms} SMs: {e}"));
            STEP.validate(&p, shape(s), &LaunchLimits::for_arch("sm_75").unwrap())
                .unwrap_or_else(|e| panic!("{s:?} on {sms} SMs, sm_75: {e}"));
        }
    }
}

/// Tall products whose smaller tiles would need more than 65535 rows of blocks, and short K
/// where a split could outnumber K's slices.
const EDGE_SHAPES: &[(usize, usize, usize)] =
    &[(4_194_300, 9, 1), (2_000_000, 64, 3), (8_000_000, 9, 2), (1, 8, 484), (7, 9, 33), (100, 100, 17)];

#[test]
fn the_choice_is_valid_at_tall_and_shallow_shapes() {
    for &s in EDGE_SHAPES {
        for &sms in SMS {
            let p = chosen(s, sms);
            STEP.validate(&p, shape(s), &LaunchLimits::SM90)
                .unwrap_or_else(|e| panic!("{s:?} on {sms} SMs: {e}"));
        }
        for c in step10_any_shape::cuts(shape(s)) {
            assert!(c.split as usize <= s.2.div_ceil(16), "{s:?}: {c:?} splits past K's slices");
        }
    }
}

#[test]
fn every_tile_is_a_valid_set() {
    for t in TILES {
        let p = testing::named_params(
            &STEP,
            ["BM", "BN", "WM", "WN", "TM", "TN"],
            [t.bm, t.bn, t.wm, t.wn, t.tm, t.tn],
        );
        STEP.validate(&p, shape((4096, 4096, 4096)), &LaunchLimits::SM90).unwrap();
    }
}

#[test]
fn large_products_keep_step06s_tile_unsplit() {
    for s in [(4096, 4096, 4096), (8192, 8192, 8192), (2048, 4096, 11008), (4097, 4097, 4097)] {
        let p = chosen(s, 132);
        assert_eq!((p.get("BM"), p.get("BN"), p.get("SPLIT")), (128, 256, 1), "{s:?}: {p}");
    }
}

#[test]
fn deep_products_with_few_tiles_are_split() {
    for &s in SPLIT_SHAPES {
        for sms in [114, 132, 144] {
            assert!(chosen(s, sms).get("SPLIT") > 1, "{s:?} on {sms} SMs: {}", chosen(s, sms));
        }
    }
}

/// The split's planted faults (a slice dropped or doubled, a sum in no fixed order) edit both sum
/// kernels and are run at SPLIT_SHAPES, which the rule splits (above): their C must go to each
/// kernel at least once, or a fault in the other would go unseen.
#[test]
fn the_split_shapes_reach_both_sum_kernels() {
    let few = SPLIT_SHAPES.iter().filter(|s| s.0 * s.1 < step10_any_shape::FEW_ELEMENTS).count();
    assert!(
        few > 0 && few < SPLIT_SHAPES.len(),
        "{few} of {} split shapes go to sum_few",
        SPLIT_SHAPES.len()
    );
}

/// Shapes with a short side, for each path: few rows (M ≤ 8) against wide B, few columns (N ≤ 16)
/// against tall A, on long rows and on short ones (K of 64 or less: several rows to a warp), both
/// short with a long K, and sides that are not multiples of 4.
const SHORT_SHAPES: &[(usize, usize, usize)] = &[
    (1, 4096, 4096),
    (8, 1000, 4097),
    (3, 4099, 2049),
    (4099, 3, 2049),
    (4096, 1, 4096),
    (1000, 8, 4097),
    (2, 2, 1 << 20),
    (5, 7, 33),
    (1, 1, 1),
    (7, 9, 300),
    (70001, 4, 16),
    (3001, 13, 9),
    (5000, 16, 64),
    (999, 11, 1000),
];

/// The launch's blocks for the short side are the kernel's (whose static_assert ties them to its
/// warps): a block of another size would index its shared sums out of bounds. The model counts the
/// blocks an SM holds at once as the kernel's launch bounds ask for them, and short K's depth and
/// rows as the kernel takes them. A number that differs stops the compile with a message naming it.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_the_host_and_the_kernel_agree_on_the_short_side() {
    let [rows, cols] = tiles::SHORT_PER_SM;
    // Short K (PATH 3) takes the last branch of BLOCKS_PER_SM, that of few columns.
    assert_eq!(tiles::SHORT_K_PER_SM, cols);
    for (path, per_sm) in [(1, rows), (2, cols), (3, tiles::SHORT_K_PER_SM)] {
        let p = Params::with_overrides(STEP.params, &[("PATH".into(), path)]).unwrap();
        testing::assert_kernel_agrees(
            &STEP,
            &p,
            "sm_90",
            [
                ("THREADS", "SHORT_THREADS".to_owned(), u64::from(SHORT_THREADS)),
                ("SHORT_GROUPS", "SHORT_THREADS / 32".to_owned(), u64::from(SHORT_THREADS / 32)),
                (
                    "BLOCKS_PER_SM",
                    format!("the model's blocks an SM holds at PATH = {path}"),
                    u64::from(per_sm),
                ),
                ("SHORT_K", "SHORT_K".to_owned(), SHORT_K as u64),
                ("SK_ROWS", "SHORT_K_ROWS".to_owned(), step10_any_shape::SHORT_K_ROWS as u64),
            ],
        );
    }
}

/// The lines of the short side's kernels that lay out lanes and rows as the model counts them
/// (code, not constants a compile could check).
#[test]
fn the_short_sides_lanes_and_rows_are_the_kernels() {
    let short = step10_any_shape::INCLUDES[0].text;
    // Few rows lays its lanes across C's columns as the model counts them.
    assert!(short.contains("while (lanes < 32 && 4 * lanes < N) lanes *= 2;"));
    assert_eq!(
        [1, 4, 5, 13, 16, 17, 64, 65, 128, 4096].map(step10_any_shape::few_rows_lanes),
        [1, 1, 2, 4, 4, 8, 16, 32, 32, 32]
    );
    // Short K's blocks take the kernel's columns.
    let line = format!("int col0 = blockIdx.x * {} + lane;", step10_any_shape::SHORT_K_COLUMNS);
    assert!(short.contains(&line), "{line}");
    // And the rows a warp of few columns takes as the kernel does.
    assert!(
        short.contains("return short_rows ? (R <= 4 ? 8 : R <= 8 ? 4 : 2) : (R > 8 ? 1 : R >= 4 ? 4 : 1);")
    );
    let rows =
        |k| (1..=SHORT_COLS).map(|n| step10_any_shape::few_cols_warp_rows(n, k, 1)).collect::<Vec<_>>();
    // Long rows: 4 from 4 to 8 columns, else 1; short ones (K = 16: 4 lanes a row, 8 rows at
    // once), 8, 4 or 2 turns of 8 rows.
    assert_eq!(rows(1000), [1, 1, 1, 4, 4, 4, 4, 4, 1, 1, 1, 1, 1, 1, 1, 1]);
    assert_eq!(rows(16), [64, 64, 64, 64, 32, 32, 32, 32, 16, 16, 16, 16, 16, 16, 16, 16]);
    assert!(short.contains("while (lanes < 32 && lanes < quads) lanes *= 2;"));
    assert_eq!(step10_any_shape::few_cols_lanes(16, 1), 4);
    assert_eq!(step10_any_shape::few_cols_lanes(65, 1), 32);
    assert_eq!(step10_any_shape::few_cols_lanes(1000, 16), 16);
}

#[test]
fn a_path_where_no_side_is_short_is_refused_in_one_sentence() {
    for (path, split, s, what) in [
        (1, 1, (9, 64, 64), "rows"),
        (2, 1, (64, 17, 64), "columns"),
        (3, 1, (64, 64, 17), "K at most 16"),
        (3, 2, (64, 64, 16), "SPLIT is 1"),
        (4, 1, (1, 1, 1), "not 4"),
    ] {
        let p =
            Params::with_overrides(STEP.params, &[("PATH".into(), path), ("SPLIT".into(), split)]).unwrap();
        let e = STEP.validate(&p, shape(s), &LaunchLimits::SM90).unwrap_err().to_string();
        assert!(e.contains(what) && !e.contains('\n'), "{e}");
    }
    for &s in SHORT_SHAPES {
        let path = if s.1 <= SHORT_COLS { 2 } else { 1 };
        let p = Params::with_overrides(STEP.params, &[("PATH".into(), path)]).unwrap();
        STEP.validate(&p, shape(s), &LaunchLimits::SM90).unwrap_or_else(|e| panic!("{s:?}: {e}"));
    }
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_the_short_side_compiles_without_spills() {
    for (arch, _) in testing::archs(&STEP) {
        for path in [1, 2, 3] {
            let p = Params::with_overrides(STEP.params, &[("PATH".into(), path)]).unwrap();
            let info = testing::nvrtc_check(&STEP, &p, arch).unwrap();
            assert_eq!(info.spill_stores + info.spill_loads, 0, "{arch} {p}: {info:?}");
        }
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_forced_paths_and_splits_match_the_reference() {
    for path in [1, 2] {
        let shapes: Vec<_> = [SHAPES, DEEP, SHORT_SHAPES]
            .concat()
            .into_iter()
            .filter(|s| if path == 1 { s.0 <= SHORT } else { s.1 <= SHORT_COLS })
            .collect();
        for split in [1, 2, 3, 7, 64, 256] {
            let p = Params::with_overrides(STEP.params, &[("PATH".into(), path), ("SPLIT".into(), split)])
                .unwrap();
            testing::assert_all_pass(&testing::gpu_check(&STEP, p, &shapes).unwrap());
        }
    }
    // Short K, K whole, on every shape with K of at most 16 (among them one taller than a launch's
    // 65535 rows of 64-row blocks, whose blocks go round again).
    let shapes: Vec<_> = [SHAPES, DEEP, SHORT_SHAPES, SHORT_K_SHAPES]
        .concat()
        .into_iter()
        .filter(|s| s.2 <= SHORT_K)
        .collect();
    let p = Params::with_overrides(STEP.params, &[("PATH".into(), 3)]).unwrap();
    testing::assert_all_pass(&testing::gpu_check(&STEP, p, &shapes).unwrap());
}

/// Short K's planted faults, each alone: C all zero, its last row, its last column unwritten.
const SHORT_K_FAULTS: [(&str, &[(&str, &str)]); 3] =
    [("zero", &[SHORT_ZERO[3]]), ("row", &[SHORT_K_ROW]), ("column", &[SHORT_K_COLUMN])];

#[test]
fn short_k_faults_apply() {
    for (what, edits) in SHORT_K_FAULTS {
        let whole = testing::whole(&STEP);
        let edited = testing::apply_edits(&whole, edits).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_ne!(edited, whole, "{what}");
    }
}

/// The rule does not take short K at the planted faults' shapes (17×33×9, the only one with K ≤ 16,
/// goes to a tile), so short K's faults are run here with PATH=3 forced: each must fail at some
/// shape, and the unedited kernel pass at all of them.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_short_k_faults_are_caught() {
    let shapes = [(17, 33, 9), (129, 127, 9), (1000, 77, 8), (2, 4099, 15), (4099, 2, 16)];
    let p = Params::with_overrides(STEP.params, &[("PATH".into(), 3)]).unwrap();
    testing::assert_all_pass(&testing::gpu_check(&STEP, p.clone(), &shapes).unwrap());
    for (what, edits) in SHORT_K_FAULTS {
        let faulty = testing::edited(&STEP, edits);
        let results = testing::gpu_check(&faulty, p.clone(), &shapes).unwrap();
        assert!(results.iter().any(|(_, v)| !v.passed()), "short K with its {what} fault passed every shape");
    }
}

/// Products with a short K, of every K from 1 to 16, N below, at and above one block's 128
/// columns, and one taller than a launch's rows of blocks.
const SHORT_K_SHAPES: &[(usize, usize, usize)] = &[
    (1447, 1239, 4),
    (8431, 829, 10),
    (1, 1, 16),
    (3, 5, 1),
    (65, 129, 2),
    (200, 257, 3),
    (64, 128, 5),
    (100, 300, 6),
    (77, 1000, 7),
    (1000, 77, 8),
    (129, 127, 9),
    (511, 33, 11),
    (33, 511, 12),
    (4096, 4096, 13),
    (999, 999, 14),
    (2, 4099, 15),
    (4099, 2, 16),
    (4_194_500, 3, 2),
];

#[test]
fn the_choice_says_why_predicts_and_names_what_param_forced() {
    let (_, c) = STEP.params_for(shape((64, 64, 65536)), 132, &[]).unwrap();
    let c = c.unwrap();
    let why = &c.why;
    assert!(why.contains("split") && why.contains("predicted") && !why.contains('\n'), "{why}");
    assert!(c.predicted_us.is_some_and(|p| p > 0.0), "{c:?}");
    // Forced: the reason says so, and the prediction (made for the rule's parameters) is dropped.
    let (p, c) = STEP.params_for(shape((64, 64, 65536)), 132, &[("SPLIT".into(), 3)]).unwrap();
    let c = c.unwrap();
    assert_eq!(p.get("SPLIT"), 3);
    assert!(c.why.ends_with("--param sets SPLIT=3") && c.predicted_us.is_none(), "{c:?}");
    let c = choose(shape((4096, 4096, 4096)), 132).unwrap();
    assert!(c.why.starts_with("tile 128×256"), "{}", c.why);
}

#[test]
fn a_split_out_of_range_is_refused_in_one_sentence() {
    for bad in [0, 257] {
        let p = Params::with_overrides(STEP.params, &[("SPLIT".into(), bad)]).unwrap();
        let e = STEP.validate(&p, shape((64, 64, 4096)), &LaunchLimits::SM90).unwrap_err().to_string();
        assert!(e.contains("SPLIT is the number of blocks") && !e.contains('\n'), "{e}");
    }
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_every_tile_compiles_without_spills() {
    for (arch, _) in testing::archs(&STEP) {
        for t in TILES {
            let p = testing::named_params(
                &STEP,
                ["BM", "BN", "WM", "WN", "TM", "TN"],
                [t.bm, t.bn, t.wm, t.wn, t.tm, t.tn],
            );
            let info = testing::nvrtc_check(&STEP, &p, arch).unwrap();
            assert_eq!(info.spill_stores + info.spill_loads, 0, "{arch} {p}: {info:?}");
            // The rule counts `per_sm` blocks of the tile on an SM of sm_90's 65536 registers.
            if arch == "sm_90" {
                let threads = (t.bm / t.wm) * (t.bn / t.wn) * 32;
                let regs = info.registers.next_multiple_of(8);
                assert!(regs * threads * t.per_sm <= 65536, "{p}: {regs} registers × {threads} threads");
                assert!(regs * threads * (t.per_sm + 1) > 65536, "{p}: more than {} blocks fit", t.per_sm);
            }
        }
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_matches_the_reference_on_many_shapes() {
    testing::assert_defaults_pass(&STEP, &[SHAPES, DEEP].concat());
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_matches_the_reference_at_every_shape_of_the_suite() {
    testing::assert_defaults_pass(&STEP, &[SUITE, SPLIT_SHAPES, SHORT_SHAPES].concat());
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_forced_splits_match_the_reference() {
    for split in [2, 3, 7, 64, 256] {
        for t in [TILES[2], TILES[3]] {
            let p = Params::with_overrides(
                STEP.params,
                &[
                    ("BM".into(), t.bm),
                    ("BN".into(), t.bn),
                    ("WM".into(), t.wm),
                    ("WN".into(), t.wn),
                    ("TM".into(), t.tm),
                    ("TN".into(), t.tn),
                    ("SPLIT".into(), split),
                ],
            )
            .unwrap();
            testing::assert_all_pass(&testing::gpu_check(&STEP, p, &[SHAPES, DEEP].concat()).unwrap());
        }
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_random_shapes_match_the_reference() {
    testing::gpu_property_with(&Checker::defaults(&STEP).unwrap(), 500, testing::random_shapes());
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_a_shared_tile_piece_that_overwrites_the_sum_fails() {
    let checker = Checker::defaults(&STEP).unwrap();
    let shared = SHARED;
    for (i, &s) in shared.iter().enumerate() {
        assert!(checker.check(s, 40 + i as u64, false).unwrap().1.passed());
    }
    let faulty = testing::edited(&STEP, OVERWRITE);
    let checker = Checker::defaults(&faulty).unwrap();
    for (i, &s) in shared.iter().enumerate() {
        let (s, v) = checker.check(s, 40 + i as u64, false).unwrap();
        assert!(!v.passed(), "a piece overwriting the sum passed at {s}");
    }
}

/// Shapes where the rule leaves K whole and Stream-K's layout shares the last tile rows on the
/// 132 SMs of an H100 or H200 (step06's tile: one block per SM).
const SHARED: &[(usize, usize, usize)] = &[(4097, 4097, 4097), (4096, 4096, 4096)];

#[test]
fn the_overwrite_fault_runs_where_tiles_are_shared() {
    for &s in SHARED {
        let p = chosen(s, 132);
        let launch = STEP.validate(&p, shape(s), &LaunchLimits::SM90).unwrap();
        let slices = (s.2 as u32).div_ceil(p.get("BK"));
        let (whole, rows) = common::stream_k::stream_k_layout(launch.grid.1, launch.grid.0, slices, 132);
        assert!(p.get("SPLIT") == 1 && p.get("SHARE") == 1 && whole < rows, "{s:?}: {p}");
    }
}

/// A sum whose order changes from run to run: each thread adds its slices forwards or backwards,
/// as the low bit of its clock says; in `sum_slices`, then in `sum_few`.
const UNORDERED_SLICES: (&str, &str) = (
    "for (int z = 1; z < slices; ++z) sum += partials[z * count + i];",
    "bool back = clock64() & 1;
            sum = 0.0f;
            for (int z = 0; z < slices; ++z) sum += partials[(back ? slices - 1 - z : z) * count + i];",
);
const UNORDERED_FEW: (&str, &str) = (
    "sum = partials[z * count + i];",
    "bool back = clock64() & 1;
            int n = (slices - g + groups - 1) / groups;
            for (int y = 0; y < n; ++y) sum += partials[(g + (back ? n - 1 - y : y) * groups) * count + i];
            z = slices - groups;",
);

/// Each shape of `shapes` run twice on the same inputs, with whether C had the same bits both times.
fn same_bits_twice<'a>(
    step: &common::GpuStep,
    shapes: impl Iterator<Item = &'a (usize, usize, usize)>,
) -> Vec<((usize, usize, usize), bool)> {
    let checker = Checker::defaults(step).unwrap();
    shapes
        .map(|&s| {
            let (a, b) = (checker.result(s, 7).unwrap(), checker.result(s, 7).unwrap());
            (s, a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits()))
        })
        .collect()
}

/// The split shapes whose C goes to `sum_few` (`few`: fewer than FEW_ELEMENTS elements) or to
/// `sum_slices`.
fn split_shapes_summed_by(few: bool) -> impl Iterator<Item = &'static (usize, usize, usize)> {
    SPLIT_SHAPES.iter().filter(move |s| (s.0 * s.1 < step10_any_shape::FEW_ELEMENTS) == few)
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_split_and_shared_sums_are_the_same_in_every_run() {
    // Every shape where the rule splits K or Stream-K shares tiles, and the short sides.
    let same = same_bits_twice(&STEP, SPLIT_SHAPES.iter().chain(SHARED).chain(SHORT_SHAPES));
    assert!(same.iter().all(|&(_, s)| s), "C differed between two runs: {same:?}");
    // Planted, one sum kernel at a time: its sum in no fixed order must change C's bits at a split
    // shape that kernel sums.
    for (edit, few, kernel) in [(UNORDERED_SLICES, false, "sum_slices"), (UNORDERED_FEW, true, "sum_few")] {
        let same = same_bits_twice(&testing::edited(&STEP, &[edit]), split_shapes_summed_by(few));
        assert!(
            same.iter().any(|&(_, s)| !s),
            "{kernel} in no fixed order gave the same bits at each of its split shapes: {same:?}"
        );
    }
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_the_unordered_sums_compile() {
    for edit in [UNORDERED_SLICES, UNORDERED_FEW] {
        testing::edited(&STEP, &[edit]).compile(&Params::defaults(STEP.params), "sm_90").unwrap();
    }
}

#[test]
fn the_split_faults_apply() {
    faults::assert_faults_apply(&STEP, FAULTS);
}

common::planted_fault_tests!(
    STEP,
    FAULTS,
    &[SHAPES, DEEP, SUITE].concat(),
    env!("CARGO_BIN_EXE_step10_any_shape")
);

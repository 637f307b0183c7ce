use common::gpu::{LaunchLimits, PtxasInfo};
use common::spills::{self, Spill};
use common::testing::faults::{FaultClass, PlantedFault};
use common::testing::{self, DEEP, SHAPES};
use common::{GpuStep, Params, Precision};
use step12_persistent_clusters::{CUT_ENTRY, CUT_SPILL_MOST, STAGES, STEP, VARIANTS};

/// A's tile cut to bf16 (truncated, as the tensor cores cut it to TF32) in shared memory, by all
/// consumers together, before their wgmma read it.
const BF16_A: (&str, &str) = (
    "                mbar_wait(&full[s], (it / STAGES) % 2);\n",
    "                mbar_wait(&full[s], (it / STAGES) % 2);
                for (int e = threadIdx.x - 128; e < A_TILE; e += 128 * CONSUMERS) {
                    float* p = As + s * A_TILE + e;
                    *p = __uint_as_float(__float_as_uint(*p) & 0xffff0000u);
                }
                asm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\");
                asm volatile(\"bar.sync 15, %0;\" ::\"n\"(128 * CONSUMERS) : \"memory\");\n",
);
/// B's fragments cut to bf16 (truncated) in registers.
const BF16_B: [(&str, &str); 4] = [
    ("frag[k8][0] = __float_as_uint(lo.x);", "frag[k8][0] = __float_as_uint(lo.x) & 0xffff0000u;"),
    ("frag[k8][1] = __float_as_uint(lo.y);", "frag[k8][1] = __float_as_uint(lo.y) & 0xffff0000u;"),
    ("frag[k8][2] = __float_as_uint(hi.x);", "frag[k8][2] = __float_as_uint(hi.x) & 0xffff0000u;"),
    ("frag[k8][3] = __float_as_uint(hi.y);", "frag[k8][3] = __float_as_uint(hi.y) & 0xffff0000u;"),
];

/// What the two stores write to C: through the boxes (rows of 16-byte multiples) and directly.
const STAGED: &str = "make_float2(acc[4 * j + v], acc[4 * j + 2 + v]));";
const DIRECT: [&str; 2] = ["if (n < N) c[0] = acc[4 * j + v];", "if (n + 1 < N) c[1] = acc[4 * j + 2 + v];"];
const SUM_PIECES: &str = "for (int c = cut.x; c < cut.x + cut.y; ++c) {";
const STAGE_PAIR: &str = "store_pair(cs + (warp / 2) * C_BOX, 8 * j + 2 * t + v - q * C_ROWS, col,";

/// The planted faults of this kernel (see `common::testing::faults`): bf16 in place of the
/// truncated TF32 it claims, what is summed or written, and what the schedule and the cluster
/// hand out. Through the boxes, a row or column "not written" keeps what the box held before.
const FAULTS: &[PlantedFault] = &[
    PlantedFault { class: FaultClass::Bf16A, edits: &[BF16_A] },
    PlantedFault { class: FaultClass::Bf16B, edits: &BF16_B },
    PlantedFault { class: FaultClass::Bf16, edits: &[BF16_A, BF16_B[0], BF16_B[1], BF16_B[2], BF16_B[3]] },
    PlantedFault {
        class: FaultClass::DropTerm,
        edits: &[(
            "float2 hi = load_pair(bs, 8 * k8 + t + 4, col);",
            "float2 hi = load_pair(bs, 8 * k8 + t + 4, col);
                    if (kt * BK + 8 * k8 + t == K - 1) lo = make_float2(0.0f, 0.0f);
                    if (kt * BK + 8 * k8 + t + 4 == K - 1) hi = make_float2(0.0f, 0.0f);",
        )],
    },
    PlantedFault {
        class: FaultClass::DropSlice,
        edits: &[("int k_tiles = (K + BK - 1) / BK;", "int k_tiles = (K - 1) / BK;")],
    },
    PlantedFault {
        class: FaultClass::Zero,
        edits: &[
            (STAGED, "make_float2(0.0f, 0.0f));"),
            (DIRECT[0], "if (n < N) c[0] = 0.0f;"),
            (DIRECT[1], "if (n + 1 < N) c[1] = 0.0f;"),
        ],
    },
    PlantedFault {
        class: FaultClass::Row,
        edits: &[
            (
                STAGE_PAIR,
                "if (origin.x + 8 * j + 2 * t + v != M - 1) store_pair(cs + (warp / 2) * C_BOX, 8 * j + 2 * t + v - q * C_ROWS, col,",
            ),
            ("if (m >= M) continue;", "if (m >= M - 1) continue;"),
        ],
    },
    PlantedFault {
        class: FaultClass::Column,
        edits: &[
            (
                STAGE_PAIR,
                "if (origin.y + 32 * box + col + 1 != N - 1) store_pair(cs + (warp / 2) * C_BOX, 8 * j + 2 * t + v - q * C_ROWS, col,",
            ),
            ("if (n < N) c[0]", "if (n < N - 1) c[0]"),
            ("if (n + 1 < N) c[1]", "if (n + 1 < N - 1) c[1]"),
        ],
    },
    // The sum of a cut unit's pieces leaves out the last, or adds the first twice.
    PlantedFault {
        class: FaultClass::SplitDropped,
        edits: &[(SUM_PIECES, "for (int c = cut.x; c < cut.x + cut.y - 1; ++c) {")],
    },
    PlantedFault {
        class: FaultClass::SplitDoubled,
        edits: &[
            (SUM_PIECES, "for (int c = cut.x - 1; c < cut.x + cut.y; ++c) {"),
            (
                "tiles + schedule.slot(c, work.unit, rank);",
                "tiles + schedule.slot(max(c, cut.x), work.unit, rank);",
            ),
        ],
    },
    // The scheduler never hands out the last unit that goes whole, nor the last unit it cuts:
    // their tiles are never computed.
    PlantedFault {
        class: FaultClass::TileSkipped,
        edits: &[
            (
                "int own = whole > c ? (whole - c + clusters - 1) / clusters : 0;",
                "int own = whole - 1 > c ? (whole - 1 - c + clusters - 1) / clusters : 0;",
            ),
            (
                "long long last = min(first + share, static_cast<long long>(units - whole) * k_tiles);",
                "long long last = min(first + share, static_cast<long long>(units - whole - 1) * k_tiles);",
            ),
        ],
    },
    // The last unit is numbered as the one before it: that one is computed twice, the last never.
    PlantedFault {
        class: FaultClass::TileTwice,
        edits: &[(
            "    int first = tile / (GROUP * units_n) * GROUP;",
            "    if (tile > 0 && tile == tiles_m * units_n - 1) --tile;
    int first = tile / (GROUP * units_n) * GROUP;",
        )],
    },
    // A block frees each buffer in its peer as soon as its own copies have landed, before its
    // products have read them: the peer's next box of A may land while they still read.
    PlantedFault {
        class: FaultClass::PeerNotAwaited,
        edits: &[
            (
                "                mbar_wait(&full[s], (it / STAGES) % 2);\n",
                "                mbar_wait(&full[s], (it / STAGES) % 2);
                if (lane < CLUSTER && lane != rank) mbar_arrive_cluster(&empty[s], lane);\n",
            ),
            ("if (kt > k_begin && lane < CLUSTER)", "if (kt > k_begin && lane == rank)"),
            (
                "            if (lane < CLUSTER) mbar_arrive_cluster(",
                "            if (lane == rank) mbar_arrive_cluster(",
            ),
        ],
    },
];

/// Parameter sets the chapter and the tests use: the default; no clusters, a shallower pipeline
/// in plain order; a 128-row instruction with one, two and three consumers; clusters of four;
/// the deepest pipeline that fits; groups of block-rows that do and do not divide the grid.
const SETS: &[[u32; 5]] = &[
    [256, 128, 4, 8, 2],
    [256, 128, 2, 1, 1],
    [128, 64, 4, 3, 2],
    [128, 128, 6, 16, 4],
    [128, 192, 4, 8, 2],
    [256, 64, 5, 64, 4],
];

/// The documented sets, as the tests check, compile and run them.
const DOCUMENTED: testing::Sets<5> =
    testing::Sets { step: &STEP, names: ["BM", "BN", "STAGES", "GROUP", "CLUSTER"], sets: SETS };

fn set(v: [u32; 5]) -> Params {
    DOCUMENTED.params(v)
}

/// The stages as steps of their own, for the tests that run every stage.
fn stages() -> Vec<GpuStep> {
    STAGES.iter().map(|s| GpuStep { file: s.file, source: s.source, ..STEP }).collect()
}

#[test]
fn the_step_computes_in_tf32_on_hopper_alone() {
    assert_eq!(STEP.precision, Precision::Tf32Truncated);
    for (cc, device) in [((8, 0), "A100"), ((8, 9), "L4"), ((10, 0), "B200")] {
        let err = STEP.check_compute(cc, device).unwrap_err().to_string();
        assert!(
            err.starts_with("step12_persistent_clusters needs a GPU of compute capability 9.0 exactly"),
            "{err}"
        );
        assert!(
            err.contains(&format!("{device} is {}.{}", cc.0, cc.1)) && err.contains("--compile-only"),
            "{err}"
        );
    }
    STEP.check_compute((9, 0), "H200").unwrap();
    assert_eq!(STEP.target("sm_90"), "sm_90a");
}

#[test]
fn documented_sets_are_valid_and_bad_ones_refused() {
    DOCUMENTED.assert_checked(
        &LaunchLimits::SM90,
        &[
            ([64, 128, 4, 8, 2], "written for 128 or 256"),
            ([256, 96, 4, 8, 2], "BN must be 64, 128 or 192"),
            ([256, 128, 1, 8, 2], "STAGES must be 2 to 8"),
            ([256, 128, 4, 0, 2], "GROUP must be 1 to 64"),
            ([256, 128, 4, 8, 3], "CLUSTER must be 1, 2 or 4"),
            ([256, 192, 4, 8, 2], "do not fit in an SM's registers"),
            ([256, 128, 5, 8, 2], "lower STAGES, BM or BN"),
        ],
    );
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_compiles_documented_sets_and_stages_for_sm90a_without_spills() {
    for step in std::iter::once(STEP).chain(stages()) {
        testing::Sets { step: &step, ..DOCUMENTED }.assert_compile_without_spills(["sm_90"]);
    }
    // The kernel's twin that cuts units, too: nothing at the default set; at the others, at
    // most a few words of the pieces' bookkeeping (108 bytes stored and loaded at one set), what
    // the step allows it, never the accumulators (hundreds of bytes, which the loop adding the
    // pieces can cost). A run accepts every set: no entry point spills beyond that.
    for &v in SETS {
        let compiled = STEP.compile(&set(v), "sm_90").unwrap_or_else(|e| panic!("{v:?}: {e}"));
        let log = &compiled.log;
        let info =
            PtxasInfo::parse_entry(log, CUT_ENTRY).unwrap_or_else(|| panic!("{v:?}: no report: {log}"));
        let most = if v == SETS[0] { (0, 0) } else { (CUT_SPILL_MOST, 16) };
        let within = info.spill_bytes() <= most.0 && info.stack_frame <= most.1;
        assert!(within, "{CUT_ENTRY} {v:?}: {info:?}");
        let spilling = spills::reported(&compiled).unwrap();
        spills::refuse(&STEP, &set(v), &spilling).unwrap_or_else(|e| panic!("{v:?}: {e}"));
    }
    // Beyond the allowance, or in the kernel itself, a spill is refused.
    let over =
        [(CUT_ENTRY.to_owned(), Spill::Code { stores: CUT_SPILL_MOST / 2, loads: CUT_SPILL_MOST / 2 + 1 })];
    let err = spills::refuse(&STEP, &set(SETS[0]), &over).unwrap_err().to_string();
    let says =
        format!("({} bytes stored and {} loaded by spill code)", CUT_SPILL_MOST / 2, CUT_SPILL_MOST / 2 + 1);
    assert!(err.contains(&format!("`{CUT_ENTRY}` spills registers to local memory {says}")), "{err}");
    let matmul = [("matmul".to_owned(), Spill::Code { stores: 4, loads: 4 })];
    assert!(spills::refuse(&STEP, &set(SETS[0]), &matmul).is_err());
}

common::reference_tests!(STEP);

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_documented_sets_match_the_reference() {
    DOCUMENTED.assert_pass_on_gpu(SHAPES);
}

/// Every stage, with clusters of one, two and four.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_stages_match_the_reference() {
    for stage in stages() {
        for v in [SETS[0], SETS[1], SETS[3]] {
            testing::assert_all_pass(&testing::gpu_check(&stage, set(v), SHAPES).unwrap());
        }
    }
}

/// The variants (ping-pong consumers; B multicast in 2×2 clusters) at their defaults, at the
/// shapes and where every cluster walks several tiles; ping-pong with clusters of two and one
/// consumer too.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_variants_match_the_reference() {
    let many = [(2600, 2600, 40), (3000, 2100, 97), (4096, 4096, 512)];
    for v in VARIANTS {
        let step = STEP.with_variant(v, v.source, v.file);
        let defaults = Params::defaults(step.params);
        testing::assert_all_pass(&testing::gpu_check(&step, defaults, &[SHAPES, &many].concat()).unwrap());
    }
    let ping_pong = STEP.with_variant(&VARIANTS[0], VARIANTS[0].source, VARIANTS[0].file);
    for v in [[256, 128, 4, 8, 2], [256, 64, 4, 8, 1]] {
        let p = testing::named_params(&ping_pong, ["BM", "BN", "STAGES", "GROUP", "CLUSTER"], v);
        testing::assert_all_pass(&testing::gpu_check(&ping_pong, p, &many).unwrap());
    }
}

common::planted_fault_tests!(
    STEP,
    FAULTS,
    &[SHAPES, DEEP].concat(),
    env!("CARGO_BIN_EXE_step12_persistent_clusters")
);

#[test]
fn the_stages_are_the_kernel_with_their_diffs() {
    testing::copies::assert_copies(env!("CARGO_PKG_NAME"));
}

/// The same planted faults on the emulator, at shapes small enough to emulate (in CI).
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_planted_faults_are_caught() {
    common::testing::emulator::assert_faults_caught(&STEP, FAULTS);
}

use common::gpu::Limits;
use common::step::TRANSPOSE_ENTRY;
use common::testing::faults::{Class, Fault};
use common::testing::{self, DEEP, Edits, SHAPES, Variant};
use common::{GpuStep, Params, Precision, Shape};
use step08_wgmma_tma::STEP;

/// A's tile cut to bf16 (truncated, as the tensor cores cut it to TF32) in shared memory, by all
/// consumers together, before their wgmma read it.
const BF16_A: (&str, &str) = (
    "            mbar_wait(&full[s], (kt / STAGES) % 2);\n",
    "            mbar_wait(&full[s], (kt / STAGES) % 2);
            for (int e = threadIdx.x - 128; e < A_TILE; e += 128 * CONSUMERS) {
                float* p = As + s * A_TILE + e;
                *p = __uint_as_float(__float_as_uint(*p) & 0xffff0000u);
            }
            asm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\");
            asm volatile(\"bar.sync 1, %0;\" ::\"n\"(128 * CONSUMERS) : \"memory\");\n",
);
/// B's fragments cut to bf16 (truncated) in registers.
const BF16_B: [(&str, &str); 4] = [
    ("frag[k8][0] = __float_as_uint(lo.x);", "frag[k8][0] = __float_as_uint(lo.x) & 0xffff0000u;"),
    ("frag[k8][1] = __float_as_uint(lo.y);", "frag[k8][1] = __float_as_uint(lo.y) & 0xffff0000u;"),
    ("frag[k8][2] = __float_as_uint(hi.x);", "frag[k8][2] = __float_as_uint(hi.x) & 0xffff0000u;"),
    ("frag[k8][3] = __float_as_uint(hi.y);", "frag[k8][3] = __float_as_uint(hi.y) & 0xffff0000u;"),
];

/// The planted faults of this kernel (see `common::testing::faults`): bf16 in place of the
/// truncated TF32 it claims, and what is summed or written.
const FAULTS: &[Fault] = &[
    Fault { class: Class::Bf16A, edits: &[BF16_A] },
    Fault { class: Class::Bf16B, edits: &BF16_B },
    Fault { class: Class::Bf16, edits: &[BF16_A, BF16_B[0], BF16_B[1], BF16_B[2], BF16_B[3]] },
    Fault {
        class: Class::DropTerm,
        edits: &[(
            "float2 lo = load_pair(bs, 8 * k8 + t, col), hi = load_pair(bs, 8 * k8 + t + 4, col);",
            "float2 lo = load_pair(bs, 8 * k8 + t, col), hi = load_pair(bs, 8 * k8 + t + 4, col);
                if (kt * BK + 8 * k8 + t == K - 1) lo = make_float2(0.0f, 0.0f);
                if (kt * BK + 8 * k8 + t + 4 == K - 1) hi = make_float2(0.0f, 0.0f);",
        )],
    },
    Fault {
        class: Class::DropSlice,
        edits: &[("int k_tiles = (K + BK - 1) / BK;", "int k_tiles = (K - 1) / BK;")],
    },
    Fault {
        class: Class::Zero,
        edits: &[
            ("make_float2(acc[4 * j + v], acc[4 * j + 2 + v]);", "make_float2(0.0f, 0.0f);"),
            ("if (n < N) c[0] = acc[4 * j + v];", "if (n < N) c[0] = 0.0f;"),
            ("if (n + 1 < N) c[1] = acc[4 * j + 2 + v];", "if (n + 1 < N) c[1] = 0.0f;"),
        ],
    },
    Fault { class: Class::Row, edits: &[("if (m >= M) continue;", "if (m >= M - 1) continue;")] },
    Fault {
        class: Class::Column,
        edits: &[
            ("if (N % 2 == 0 && n + 1 < N) {", "if (N % 2 == 0 && n + 1 < N - 1) {"),
            ("if (n < N) c[0]", "if (n < N - 1) c[0]"),
            ("if (n + 1 < N) c[1]", "if (n + 1 < N - 1) c[1]"),
        ],
    },
];

/// Parameter sets the chapter and the tests use: the default, a shallower pipeline in plain
/// launch order, a 128-row instruction with one, two and three consumers, and the deepest
/// pipeline that fits; groups of block-rows that do and do not divide the grid.
const SETS: &[[u32; 4]] = &[
    [256, 128, 4, 8],
    [256, 128, 2, 1],
    [128, 64, 4, 3],
    [128, 128, 6, 16],
    [128, 192, 4, 8],
    [256, 64, 5, 64],
];

fn set(v: [u32; 4]) -> Params {
    testing::named_params(&STEP, ["BM", "BN", "STAGES", "GROUP"], v)
}

#[test]
fn the_step_computes_in_tf32_on_hopper_alone() {
    assert_eq!(STEP.precision, Precision::Tf32Truncated);
    for (cc, device) in [((8, 0), "A100"), ((8, 9), "L4"), ((10, 0), "B200")] {
        let err = STEP.check_compute(cc, device).unwrap_err().to_string();
        assert!(err.starts_with("step08_wgmma_tma needs a GPU of compute capability 9.0 exactly"), "{err}");
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
    let s = Shape::square(4096).unwrap();
    for &v in SETS {
        STEP.validate(&set(v), s, &Limits::SM90).unwrap_or_else(|e| panic!("{v:?}: {e}"));
    }
    let near_limit = Shape::new(1, 1, i32::MAX as usize - 8).unwrap();
    let err = STEP.validate(&set(SETS[0]), near_limit, &Limits::SM90).unwrap_err().to_string();
    assert!(err.contains("32-bit index limit"), "{err}");
    for (v, says) in [
        ([64, 128, 4, 8], "written for 128 or 256"),
        ([256, 96, 4, 8], "BN must be 64, 128 or 192"),
        ([256, 128, 1, 8], "STAGES must be 2 to 8"),
        ([256, 128, 4, 0], "GROUP must be 1 to 64"),
        ([256, 192, 4, 8], "do not fit in an SM's registers"),
        ([256, 128, 6, 8], "lower STAGES, BM or BN"),
    ] {
        let err = STEP.validate(&set(v), s, &Limits::SM90).unwrap_err().to_string();
        assert!(err.contains(says), "{v:?}: {err}");
    }
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_compiles_documented_sets_for_sm90a_without_spills() {
    for &v in SETS {
        let info = testing::nvrtc_check(&STEP, &set(v), "sm_90").unwrap_or_else(|e| panic!("{v:?}: {e}"));
        assert_eq!((info.spill_bytes(), info.stack_frame), (0, 0), "{v:?}: {info:?}");
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_matches_the_reference_on_many_shapes() {
    testing::assert_defaults_pass(&STEP, SHAPES);
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_documented_sets_match_the_reference() {
    for &v in SETS {
        testing::assert_all_pass(&testing::gpu_check(&STEP, set(v), SHAPES).unwrap());
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_random_shapes_match_the_reference() {
    testing::gpu_property(&STEP, Params::defaults(STEP.params), 500, testing::random_shapes());
}

common::planted_fault_tests!(STEP, FAULTS, &[SHAPES, DEEP].concat(), env!("CARGO_BIN_EXE_step08_wgmma_tma"));

/// Both layout variants: Bᵀ's slice is wgmma's first operand from shared memory, through a
/// descriptor like A's, instead of registers.
const SHARED_OPERANDS: Edits = &[
    (
        "// d (a 64×BM tile of Cᵀ, BM/2 floats a thread) += a (64×8 of Bᵀ, 4 per thread) · the 8×BM\n// slice of Aᵀ that desc points at. The braces list every accumulator register.\n",
        "// d (a 64×BM tile of Cᵀ, BM/2 floats a thread) += the 64×8 slice of Bᵀ that a points at\n// (variant: in shared memory) · the 8×BM slice of Aᵀ that desc points at. The braces list\n// every accumulator register.\n",
    ),
    (
        "void wgmma(float (&d)[BM / 2], const unsigned (&a)[4],\n",
        "void wgmma(float (&d)[BM / 2], unsigned long long a,\n",
    ),
    ("setp.ne.b32 p, %133, 0;", "setp.ne.b32 p, %130, 0;"),
    ("\"{%128, %129, %130, %131}, %132, p, 1, 1;\\n}\\n\"", "\"%128, %129, p, 1, 1;\\n}\\n\""),
    (
        "\"+f\"(d[127])\n            : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"l\"(desc), \"r\"(1));",
        "\"+f\"(d[127])\n            : \"l\"(a), \"l\"(desc), \"r\"(1));",
    ),
    ("setp.ne.b32 p, %69, 0;", "setp.ne.b32 p, %66, 0;"),
    ("\"{%64, %65, %66, %67}, %68, p, 1, 1;\\n}\\n\"", "\"%64, %65, p, 1, 1;\\n}\\n\""),
    (
        "\"+f\"(d[63])\n            : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"l\"(desc), \"r\"(1));",
        "\"+f\"(d[63])\n            : \"l\"(a), \"l\"(desc), \"r\"(1));",
    ),
];

/// A transposing prologue: `transpose_b` writes Bᵀ before each launch; the copies bring its
/// K-major rows.
const TRANSPOSING_PROLOGUE: Edits = &[
    (
        "// ANCHOR: kernel\n",
        "// variant: Bᵀ, written in front of every launch into N rows of K floats `pitch` apart, so that\n// B's tiles arrive K-major like A's. Each 32×32 tile goes through shared memory, so that reads\n// of B and writes of Bᵀ both run along rows. The host launches it with 256 threads a block,\n// 8 warps: a constant stride lets the compiler unroll the row loops.\nextern \"C\" __global__ void transpose_b(const float* B, float* Bt, int K, int N, int pitch)\n{\n    __shared__ float tile[32][33];\n    int tiles_n = (N + 31) / 32;\n    long long tiles = static_cast<long long>((K + 31) / 32) * tiles_n;\n    int x = threadIdx.x % 32, y = threadIdx.x / 32;  // warp y takes rows y, y + 8, y + 16, y + 24\n    for (long long i = blockIdx.x; i < tiles; i += gridDim.x) {\n        int k0 = static_cast<int>(i / tiles_n) * 32, n0 = static_cast<int>(i % tiles_n) * 32;\n        for (int r = y; r < 32; r += 8) {\n            if (k0 + r < K && n0 + x < N)\n                tile[r][x] = B[static_cast<long long>(k0 + r) * N + n0 + x];\n        }\n        __syncthreads();\n        for (int r = y; r < 32; r += 8) {\n            if (n0 + r < N && k0 + x < K)\n                Bt[static_cast<long long>(n0 + r) * pitch + k0 + x] = tile[x][r];\n        }\n        __syncthreads();\n    }\n}\n\n// ANCHOR: kernel\n",
    ),
    (
        "tma_load(Bs + s * B_TILE + b * B_BOX, &b_map, &full[s], col0 + 32 * b, kt * BK);",
        "tma_load(Bs + s * B_TILE + b * B_BOX, &b_map, &full[s], kt * BK,\n                             col0 + 32 * b);  // variant: 32 rows of Bᵀ",
    ),
    (
        "        int box = 2 * (role - 1) + warp / 2;  // the 32-column box of B this warp reads\n        int col = fragment_col(g, warp % 2);\n",
        "",
    ),
    (
        "            const float* bs = Bs + s * B_TILE + box * B_BOX;\n            // Fragments of Bᵀ: rows g, g + 8 are columns col, col + 1 of B; k is t and t + 4.\n            unsigned frag[BK / 8][4];\n#pragma unroll\n            for (int k8 = 0; k8 < BK / 8; ++k8) {\n                float2 lo = load_pair(bs, 8 * k8 + t, col), hi = load_pair(bs, 8 * k8 + t + 4, col);\n                frag[k8][0] = __float_as_uint(lo.x);\n                frag[k8][1] = __float_as_uint(lo.y);\n                frag[k8][2] = __float_as_uint(hi.x);\n                frag[k8][3] = __float_as_uint(hi.y);\n            }\n            wgmma_fence();\n",
        "            // variant: the strip's 64 rows of Bᵀ, K-major like A's tile.\n            unsigned long long b_desc = descriptor(Bs + s * B_TILE + (role - 1) * 64 * BK);\n            wgmma_fence();\n",
    ),
    (
        "wgmma(acc, frag[k8], desc + (8 * k8 * 4 >> 4));  // 8 floats further along the rows",
        "wgmma(acc, b_desc + (8 * k8 * 4 >> 4),\n                      desc + (8 * k8 * 4 >> 4));  // 8 floats further along the rows",
    ),
];

/// A transpose inside the pipeline: each consumer warpgroup rewrites its columns of the B tile
/// as K-major rows in shared memory of its own.
const IN_PIPELINE_TRANSPOSE: Edits = &[
    (
        "        int box = 2 * (role - 1) + warp / 2;  // the 32-column box of B this warp reads\n        int col = fragment_col(g, warp % 2);\n",
        "        // variant: the warpgroup rewrites its 64 columns of each B tile as 64 K-major rows; a\n        // thread moves 16 k of one column.\n        __shared__ __align__(1024) float bt[CONSUMERS][64 * BK];\n        float* own = bt[role - 1];\n        int tn = threadIdx.x % 64, tk = threadIdx.x % 128 / 64 * 16;\n",
    ),
    (
        "            const float* bs = Bs + s * B_TILE + box * B_BOX;\n            // Fragments of Bᵀ: rows g, g + 8 are columns col, col + 1 of B; k is t and t + 4.\n            unsigned frag[BK / 8][4];\n#pragma unroll\n            for (int k8 = 0; k8 < BK / 8; ++k8) {\n                float2 lo = load_pair(bs, 8 * k8 + t, col), hi = load_pair(bs, 8 * k8 + t + 4, col);\n                frag[k8][0] = __float_as_uint(lo.x);\n                frag[k8][1] = __float_as_uint(lo.y);\n                frag[k8][2] = __float_as_uint(hi.x);\n                frag[k8][3] = __float_as_uint(hi.y);\n            }\n            wgmma_fence();\n",
        "            const float* bs = Bs + s * B_TILE + (2 * (role - 1) + tn / 32) * B_BOX;\n            asm volatile(\"bar.sync %0, 128;\" ::\"r\"(role)\n                         : \"memory\");  // variant: the last wgmma is done with own\n#pragma unroll\n            for (int k = tk; k < tk + 16; k += 4) {\n                float4 v;\n                v.x = bs[k * 32 + 4 * ((tn % 32 / 4) ^ (k % 8)) + tn % 4];\n                v.y = bs[(k + 1) * 32 + 4 * ((tn % 32 / 4) ^ ((k + 1) % 8)) + tn % 4];\n                v.z = bs[(k + 2) * 32 + 4 * ((tn % 32 / 4) ^ ((k + 2) % 8)) + tn % 4];\n                v.w = bs[(k + 3) * 32 + 4 * ((tn % 32 / 4) ^ ((k + 3) % 8)) + tn % 4];\n                *reinterpret_cast<float4*>(own + tn * BK + 4 * ((k / 4) ^ (tn % 8))) = v;\n            }\n            asm volatile(\"fence.proxy.async.shared::cta;\" ::\n                             : \"memory\");  // the tensor cores read own next\n            asm volatile(\"bar.sync %0, 128;\" ::\"r\"(role) : \"memory\");\n            unsigned long long b_desc = descriptor(own);\n            wgmma_fence();\n",
    ),
    (
        "wgmma(acc, frag[k8], desc + (8 * k8 * 4 >> 4));  // 8 floats further along the rows",
        "wgmma(acc, b_desc + (8 * k8 * 4 >> 4),\n                      desc + (8 * k8 * 4 >> 4));  // 8 floats further along the rows",
    ),
];

/// Both layout variants: accumulator rows are Bᵀ's rows in order, 8 columns of C apart.
const NATURAL_ORDER: Edits = &[
    (
        "        // acc[4j + 2h + v] is Cᵀ at row g + 8h, column 8j + 2t + v of the strip: C's row\n        // row0 + 8j + 2t + v, column col (+1 when h = 1) of the warp's box.\n        int n = col0 + 32 * box + col;\n",
        "        // acc[4j + 2h + v] is Cᵀ at row 16·warp + g + 8h, column 8j + 2t + v of the strip: C's\n        // row row0 + 8j + 2t + v, column n (+8 when h = 1). variant: rows of Bᵀ in their order.\n        int n = col0 + 64 * (role - 1) + 16 * warp + g;\n",
    ),
    (
        "                if (N % 2 == 0 && n + 1 < N) {\n                    *reinterpret_cast<float2*>(c) = make_float2(acc[4 * j + v], acc[4 * j + 2 + v]);\n                } else {\n                    if (n < N) c[0] = acc[4 * j + v];\n                    if (n + 1 < N) c[1] = acc[4 * j + 2 + v];\n                }\n",
        "                if (n < N) c[0] = acc[4 * j + v];\n                if (n + 8 < N) c[8] = acc[4 * j + 2 + v];\n",
    ),
];

/// The layout alternatives the chapter measures, in `variants/`.
const VARIANTS: &[Variant] = &[
    Variant {
        file: "step08_wgmma_tma/variants/transposing_prologue.cu",
        source: include_str!("../variants/transposing_prologue.cu"),
        edits: &[SHARED_OPERANDS, TRANSPOSING_PROLOGUE, NATURAL_ORDER],
    },
    Variant {
        file: "step08_wgmma_tma/variants/in_pipeline_transpose.cu",
        source: include_str!("../variants/in_pipeline_transpose.cu"),
        edits: &[SHARED_OPERANDS, IN_PIPELINE_TRANSPOSE, NATURAL_ORDER],
    },
];

#[test]
fn the_variants_are_the_kernel_with_their_edits() {
    testing::assert_variants_are_edits(&STEP, VARIANTS);
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_compiles_the_variants_for_sm90a_without_spills() {
    for v in VARIANTS {
        for &set_ in SETS {
            let info = testing::nvrtc_check(&v.of(&STEP), &set(set_), "sm_90").unwrap();
            assert_eq!((info.spill_bytes(), info.stack_frame), (0, 0), "{} {set_:?}: {info:?}", v.file);
        }
    }
}

/// The host queues `transpose_b` for the one kernel that defines it, which it finds in the
/// compiled code.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_only_the_transposing_variant_has_a_prologue() {
    let params = Params::defaults(STEP.params);
    let has =
        |step: &GpuStep| step.compile(&params, &step.target("sm_90")).unwrap().has_function(TRANSPOSE_ENTRY);
    assert!(has(&VARIANTS[0].of(&STEP)), "{}", VARIANTS[0].file);
    assert!(!has(&VARIANTS[1].of(&STEP)) && !has(&STEP));
    assert!(STEP.compile(&params, "sm_90a").unwrap().has_function("matmul"));
}

/// Both variants get every shape right, those whose rows the copy engine cannot take included
/// (the prologue writes Bᵀ with padded rows; A is padded as for the kernel), with one, two and
/// three consumer warpgroups (so three buffers and named barriers in the in-pipeline
/// transpose). That the first named barrier keeps a consumer from rewriting its buffer while
/// its last wgmma still reads it is argued in the kernel rather than shown by a test.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_variants_match_the_reference() {
    for v in VARIANTS {
        for set_ in [SETS[0], SETS[2], SETS[4]] {
            testing::assert_all_pass(&testing::gpu_check(&v.of(&STEP), set(set_), SHAPES).unwrap());
        }
    }
}

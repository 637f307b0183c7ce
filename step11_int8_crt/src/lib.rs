//! Step 11: FP32 accuracy from the INT8 tensor cores: operands scaled to integers, multiplied
//! exactly through their residues modulo a few moduli, and rebuilt by the Chinese remainder theorem.

use common::gpu::LaunchLimits;
use common::includes::Include;
use common::{
    Extension, Geometry, GpuStep, Intensity, LaunchVariant, Param, Params, Precision, Shape, TmaBox,
};

/// How many of the kernel's moduli the first pass takes, and so how many INT8 products it runs
/// where the data needs no more.
pub const MODULI: Param = Param {
    name: "MODULI",
    default: 7,
    help: "moduli, one INT8 product each: their product bounds the integers the product can hold (2 to 8)",
};

/// A count of moduli forced on every row and column (`--moduli N` sets it and MODULI), the rule
/// and the bound then off; 0 lets the data choose.
pub const COUNT: Param = Param {
    name: "COUNT",
    default: 0,
    help: "0: the data chooses how many moduli; 2 to 16 forces that many on every row and column (--moduli N)",
};

// ANCHOR: params
/// The block computes a 128×256 tile of one modulus's product: two consumer warpgroups, each a
/// 64-row strip with four m64n256k32 INT8 wgmmas per 128-deep tile, and a producer warpgroup
/// that keeps STAGES tiles of A's and Bᵀ's residues in flight. Blocks are handed tiles GROUP
/// block-rows at a time; the grid has one z per modulus of the first pass. MODULI is that pass's
/// count: the scaling asks the data whether it needs more (up to 16), and the blocks then take
/// them in turn.
pub const PARAMS: &[Param] = &[
    Param {
        name: "STAGES",
        default: 4,
        help: "tiles of A's and B's residues in shared memory at once (2 to 4)",
    },
    Param {
        name: "GROUP",
        default: 8,
        help: "block-rows the launch order walks down before moving right (1 to 64)",
    },
    MODULI,
    COUNT,
];
// ANCHOR_END: params

/// The values the tuner tries (`--tune`); MODULI stays as given (it sets the accuracy).
pub const SEARCH: &[(&str, &[u32])] = &[("STAGES", &[2, 3, 4]), ("GROUP", &[1, 4, 8, 16])];

/// The one-pass variant's parameters: its 128×128 tiles leave room for six buffers, and FUSED
/// (which only the launch reads) gives it its own grid, one block per tile for all the moduli.
pub const FUSED_PARAMS: &[Param] = &[
    Param {
        name: "STAGES",
        default: 6,
        help: "tiles of A's and B's residues in shared memory at once (2 to 6)",
    },
    PARAMS[1],
    MODULI,
    COUNT,
    Param {
        name: "FUSED",
        default: 1,
        help: "1: one pass, the moduli's products summed on chip (the variant's launch)",
    },
];

/// The measured alternative beside the kernel (docs/src/log/step11.md): the moduli's products
/// accumulated on chip in one pass, no residues of C in memory and no reconstruct kernel.
pub const VARIANTS: &[LaunchVariant] = &[LaunchVariant {
    file: "step11_int8_crt/variants/fused.cu",
    idea: "one pass: each block takes its tile through every modulus and rebuilds C from sums kept in registers",
    source: include_str!("../variants/fused.cu"),
    params: FUSED_PARAMS,
    search: &[("STAGES", &[4, 5, 6]), ("GROUP", &[1, 4, 8, 16])],
    schedule: common::Schedule::Tiles,
    pads_rows: false,
    mark: "fused_product.cuh",
}];

/// Whether `p` is the one-pass variant's set.
fn fused(p: &Params) -> bool {
    p.find("FUSED") == Some(1)
}

/// Columns of C per block: 256, or the one-pass variant's 128.
fn bn(p: &Params) -> u32 {
    if fused(p) { 128 } else { BN }
}

/// Rows and columns of C per block, and the depth of a tile in bytes (one 128-byte row of the
/// swizzle: 128 residues of K).
const BM: u32 = 128;
const BN: u32 = 256;
const BK: u32 = 128;

pub mod coherent;
pub mod equilibrate;
pub mod hooks;
pub mod residues;
pub mod sequence;

pub use residues::{MODULUS, MOST, product, room};

/// The deepest K the step serves: its INT8 sums stay exact in int32 while K·127² < 2³¹ (the odd
/// moduli's residues lie within ±127), up to K = 133144; 2¹⁷ is the power of two below. The sums
/// of modulus 256 (residues down to −128) may wrap, which changes nothing modulo 256.
pub const K_MAX: usize = 1 << 17;

/// The bits the scaling keeps of the largest entry of a row of the course's inputs (uniform in
/// [−1, 1], so ‖a‖ ≈ √(K/3)): log₂ of the integer that entry becomes, 2^e with e the exponent the
/// kernel picks. The table of docs/src/step11-arithmetic.md is this function's values.
pub fn bits_kept(moduli: usize, k: usize) -> i32 {
    (room(moduli, k) / (k as f64 / 3.0).sqrt()).log2().floor() as i32
}

/// The fewest moduli (up to 8) that keep `bits` bits of the course's inputs at depth `k`.
pub fn moduli_for(bits: i32, k: usize) -> Option<usize> {
    (2..=8).find(|&l| room(l, k) > 0.0 && bits_kept(l, k) >= bits)
}

/// A producer warpgroup and two consumers.
const THREADS: u32 = 384;

/// STAGES tiles of A's and Bᵀ's residues, a full and an empty barrier per buffer, and 1024 bytes to
/// align the tiles for the swizzle.
fn smem_bytes(p: &Params) -> u32 {
    p.get("STAGES") * (BK * (BM + bn(p)) + 16) + 1024
}

// ANCHOR: geometry
fn geometry(p: &Params, s: Shape) -> Geometry {
    Geometry {
        grid: (
            (s.n as u32).div_ceil(bn(p)),
            (s.m as u32).div_ceil(BM),
            if fused(p) { 1 } else { p.get(MODULI.name) },
        ),
        block: (THREADS, 1, 1),
        dynamic_smem: smem_bytes(p),
        whole_rows: None,
    }
}

/// A's residues come in boxes of 128 rows of 128 bytes, Bᵀ's in 256 rows of 128 bytes.
fn a_box(_: &Params) -> TmaBox {
    TmaBox { rows: BM, cols: BK }
}

fn b_box(p: &Params) -> TmaBox {
    TmaBox { rows: bn(p), cols: BK }
}
// ANCHOR_END: geometry

// ANCHOR: check
fn check(p: &Params, s: Shape, limits: &LaunchLimits) -> Result<(), String> {
    let [stages, group, moduli, count] = ["STAGES", "GROUP", MODULI.name, COUNT.name].map(|n| p.get(n));
    if !(2..=8).contains(&moduli) {
        return Err(format!("{p}: MODULI must be 2 to 8, the moduli the first pass knows"));
    }
    let reach = if fused(p) { moduli } else { MOST as u32 };
    if count != 0 && !(moduli..=reach).contains(&count) {
        return Err(format!(
            "{p}: COUNT must be 0 (the data chooses) or {moduli} to {reach}: at least the first pass's MODULI \
             (--moduli N sets both)"
        ));
    }
    let most = if fused(p) { 6 } else { 4 };
    if !(2..=most).contains(&stages) {
        return Err(format!("{p}: STAGES must be 2 to {most}"));
    }
    if p.find("FUSED").is_some_and(|f| f != 1) {
        return Err(format!("{p}: FUSED is 1 in the one-pass variant, whose launch it picks"));
    }
    if !(1..=64).contains(&group) {
        return Err(format!("{p}: GROUP must be 1 to 64 block-rows"));
    }
    if s.k > K_MAX {
        return Err(format!(
            "K = {} is deeper than the {K_MAX} terms whose INT8 sums stay exact in 32-bit integers; \
             split K into products of at most {K_MAX} and add them",
            s.k
        ));
    }
    let taken = moduli.max(count);
    if room(taken as usize, s.k) < 2.0 * (s.k as f64).sqrt() {
        return Err(format!(
            "{p}: the product of {taken} moduli leaves less than a bit of each entry for sums of {} terms; \
             raise MODULI",
            s.k
        ));
    }
    if smem_bytes(p) > limits.max_smem_per_block {
        return Err(format!(
            "{p} keeps {} bytes of tiles and barriers in shared memory, more than the {} bytes a block may have; \
             lower STAGES",
            smem_bytes(p),
            limits.max_smem_per_block
        ));
    }
    Ok(())
}
// ANCHOR_END: check

/// What the kernel, its variant and the hands-on starting file include: the scaling, the choice of
/// paths and moduli, the INT8 products, and the one-pass variant's products in their place.
pub const INCLUDES: &[Include] = &[
    Include {
        name: "scaling.cuh",
        file: "step11_int8_crt/src/scaling.cuh",
        text: include_str!("scaling.cuh"),
    },
    Include { name: "choose.cuh", file: "step11_int8_crt/src/choose.cuh", text: include_str!("choose.cuh") },
    Include {
        name: "int8_product.cuh",
        file: "step11_int8_crt/src/int8_product.cuh",
        text: include_str!("int8_product.cuh"),
    },
    Include {
        name: "fused_product.cuh",
        file: "step11_int8_crt/variants/fused_product.cuh",
        text: include_str!("../variants/fused_product.cuh"),
    },
];

pub const STEP: GpuStep = GpuStep {
    name: "step11_int8_crt",
    idea: "FP32 accuracy from INT8 tensor cores: integers multiplied exactly through their residues, rebuilt by the remainder theorem",
    file: "step11_int8_crt/src/kernel.cu",
    source: include_str!("kernel.cu"),
    includes: INCLUDES,
    params: PARAMS,
    search: SEARCH,
    geometry,
    check,
    precision: Precision::Int8Crt,
    intensity,
    min_compute: (9, 0),
    extension: Extension::OwnMaps { a: a_box, b: b_box },
    variants: VARIANTS,
    hooks: &hooks::ResidueHooks,
    ..GpuStep::DEFAULT
};

/// Counted in the product's own FLOPs (2·M·N·K), as the rates are, for the INT8 products alone:
/// each of MODULI products brings a 128-deep tile of residues, 128·(BM + BN) bytes, for
/// 2·BM·BN·128 of the product's FLOPs over all of them. Shared memory: per 32-deep step a
/// consumer's wgmma reads 64×32 bytes of A and 256×32 of Bᵀ.
fn intensity(p: &Params) -> Intensity {
    let (bm, bn, moduli) = (f64::from(BM), f64::from(bn(p)), f64::from(p.get(MODULI.name)));
    Intensity {
        global: 2.0 * bm * bn / ((bm + bn) * moduli),
        shared: Some(2.0 * 64.0 * bn / ((64.0 + bn) * moduli)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The host and kernel.cu agree on the numbers they share: the tile, the moduli, the margin
    /// of the scaling and the blocks of the scaling and rebuilding kernels (a number that
    /// differs stops the compile with a message naming it).
    #[test]
    #[ignore = "needs libnvrtc"]
    fn nvrtc_the_host_and_the_kernel_agree_on_their_numbers() {
        let host = |file: &str, name: &str| format!("{file}'s {name}");
        let mut shared = vec![
            ("BM".to_owned(), host("lib.rs", "BM"), BM.to_string()),
            ("BN".to_owned(), host("lib.rs", "BN"), BN.to_string()),
            ("BK".to_owned(), host("lib.rs", "BK"), BK.to_string()),
            ("MOST".to_owned(), host("residues.rs", "MOST"), MOST.to_string()),
            // `{:?}` writes the shortest decimal that reads back as the same double.
            ("MARGIN".to_owned(), host("residues.rs", "MARGIN"), format!("{:?}", residues::MARGIN)),
            ("NORM_CHUNK".to_owned(), host("residues.rs", "NORM_CHUNK"), residues::NORM_CHUNK.to_string()),
            ("SCALE_TILE".to_owned(), host("residues.rs", "SCALE_TILE"), residues::SCALE_TILE.to_string()),
            (
                "REBUILD_COLS".to_owned(),
                host("residues.rs", "REBUILD_COLS"),
                residues::REBUILD_COLS.to_string(),
            ),
        ];
        for (l, m) in MODULUS.iter().enumerate() {
            shared.push((
                format!("modulus({l})"),
                host("residues.rs", &format!("MODULUS[{l}]")),
                m.to_string(),
            ));
        }
        common::testing::assert_kernel_agrees(&STEP, &Params::defaults(PARAMS), "sm_90", shared);
    }

    /// The margin is the 2⁻²⁰ of docs/src/step11-arithmetic.md.
    #[test]
    fn the_margin_is_the_chapters() {
        assert_eq!(residues::MARGIN, 2f64.powi(-20));
    }

    /// The moduli are pairwise coprime, so the remainder theorem applies; the first eight have a
    /// product below 2⁶⁴, which the first pass's 64-bit weights need, and all of them one below
    /// 2¹²⁸, which the wide rebuild's four limbs hold with room for the sign.
    #[test]
    fn the_moduli_are_coprime_and_their_product_fits_64_bits() {
        fn gcd(a: u64, b: u64) -> u64 {
            if b == 0 { a } else { gcd(b, a % b) }
        }
        for (i, &a) in MODULUS.iter().enumerate() {
            for &b in &MODULUS[i + 1..] {
                assert_eq!(gcd(a, b), 1, "{a} and {b}");
            }
        }
        assert!(product(8) < 1 << 64);
        assert!(product(MOST) < 1 << 126);
    }

    /// The arithmetic of docs/src/step11-arithmetic.md: 22 bits at 4096 with 7 moduli (the exponent
    /// the kernel picks on the course's inputs), 21 at 8192, four fewer with 6 moduli; and 22 bits
    /// at K = 65536 take 8 moduli, where 7 keep 20.
    #[test]
    fn the_bits_kept_are_the_chapters() {
        assert_eq!(bits_kept(7, 4096), 22);
        assert_eq!(bits_kept(7, 8192), 21);
        assert_eq!(bits_kept(6, 4096), 18);
        assert_eq!(bits_kept(8, 4096), 26);
        assert_eq!(bits_kept(7, 65536), 20);
        assert_eq!(moduli_for(22, 4096), Some(7));
        assert_eq!(moduli_for(22, 65536), Some(8));
        assert_eq!(moduli_for(30, 4096), None);
        // The appendix's table of log₂ P, to two decimals.
        let bits: Vec<String> = (3..=8).map(|l| format!("{:.2}", (product(l) as f64).log2())).collect();
        assert_eq!(bits, ["23.98", "31.95", "39.90", "47.81", "55.71", "63.58"]);
    }

    /// The int32 sums of the odd moduli stay exact up to K_MAX; 256's wrap only by multiples of
    /// 2³², which 256 divides.
    #[test]
    fn int32_sums_are_exact_up_to_k_max() {
        assert!(K_MAX as i64 * 127 * 127 <= i64::from(i32::MAX));
        assert_eq!(i64::from(i32::MAX) / (127 * 127), 133_144);
        assert_eq!((1u64 << 32) % 256, 0);
    }
}

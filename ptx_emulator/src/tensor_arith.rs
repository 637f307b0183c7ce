//! How a Hopper (H100, sm_90) tensor core adds up a TF32 dot product, bit for bit.
//!
//! One output element of one k8 step of `mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32`, or
//! of `wgmma.mma_async ... m64nNk8.f32.tf32.tf32`, is d = c + a₀b₀ + … + a₇b₇. The PTX ISA gives
//! the operation and the TF32 operand format, not the order or precision of the additions
//! inside. The hardware does not round the exact sum once: it is a fused adder of fixed width, and
//! [`tf32_dot`] follows what it does, in these steps:
//!
//! 1. **Read the inputs.** a and b are read as TF32: the low 13 bits of each f32 are dropped
//!    (truncated, not rounded), which leaves 10 bits of mantissa (a NaN whose payload lay only
//!    there reads as ∞). c is read as a full f32. Subnormals keep their bits: nothing is flushed.
//! 2. **Special values first.** A NaN anywhere, ∞·0, or +∞ and −∞ together give the canonical
//!    NaN 0x7fffffff; otherwise an infinity, if there is one, is the result.
//! 3. **Exact products.** Each product of two 11-bit significands is exact (22 bits); its
//!    exponent is the sum of the two exponents (a subnormal counts as exponent −126).
//! 4. **One largest exponent for all nine terms.** The eight products and c go into the same
//!    adder together: c is not added at the end, and on Hopper the k8 is not split into two k4
//!    halves (Ampere does split it). The adder looks for the largest exponent among the nine;
//!    a zero term (a zero product, or c = 0) takes part in that choice as exponent −133.
//! 5. **Align and chop.** Each term is shifted to that largest exponent, and only 25 bits below
//!    it are kept; the bits shifted out are dropped, each term on its own, toward zero (its
//!    magnitude is cut, whatever its sign). This is where the low bits of small products and
//!    of c go when a larger term is present, even if the large terms later cancel.
//! 6. **Exact sum.** The nine chopped terms are integers in units of 2^(largest − 25); their
//!    sum is exact, so the order of the k's does not matter.
//! 7. **Round once more, toward zero.** The sum is normalised and cut to f32 by truncation
//!    (round toward zero, not to nearest), subnormal results included. A sum beyond f32's range
//!    becomes ±∞ (not the largest finite value), and a zero result is always +0.
//!
//! [`tf32_dot_exact`] is the simpler model the emulator began with (TF32 inputs, exact products,
//! one rounding to nearest of an f64 sum). It disagrees with the hardware wherever steps 5 and 7
//! matter: on random inputs of like sizes nearly half of single k8 steps differ in the last bits,
//! and more of a long K's sums do.
//!
//! The algorithm is the one published by Xie, Wang, Yang and Yang in "MMA-Sim: Bit-Accurate
//! Reference Model of Tensor Cores and Matrix Cores" (arXiv:2511.10909): a truncated fused
//! dot-product-add, for Hopper's TF32 with 25 kept bits, rounding toward zero, the eight
//! products of a k8 in one sum, and the same arithmetic for `mma.sync` and `wgmma`. Their
//! reference code is at github.com/microsoft/MMA-Sim, whose later versions give zero terms the
//! exponent −133 on Hopper. On an H100 (CUDA 13.0, driver 580) this function
//! matched `mma.sync` (SASS `HMMA.1688.F32.TF32`) and `wgmma` (SASS `HGMMA`) on all of about
//! three million elements, random and hand-picked, and the two instructions agreed bit for bit.
//!
//! [`s8_dot`] is the integer path (`wgmma ... .s32.s8.s8` and the like): exact, wrapping.

/// Bits kept below the largest exponent when the terms are lined up.
const KEPT_BITS: i32 = 25;
/// The exponent a zero term is given when the largest exponent is chosen; it matters only when
/// every nonzero term is below 2^-132.
const ZERO_EXP: i32 = -133;
const NAN: u32 = 0x7fff_ffff;
const INF: u32 = 0x7f80_0000;
const SIGN: u32 = 0x8000_0000;

/// A finite f32 as (negative, integer significand, exponent of its last bit, exponent of its
/// leading bit as the adder sees it).
fn unpack(bits: u32) -> (bool, u64, i32, i32) {
    let biased = ((bits >> 23) & 0xff) as i32;
    let frac = u64::from(bits & 0x7f_ffff);
    let neg = bits & SIGN != 0;
    // A subnormal sits at exponent −126 with no hidden bit: its bits are kept as they are.
    if biased == 0 { (neg, frac, -149, -126) } else { (neg, frac | 1 << 23, biased - 150, biased - 127) }
}

/// x × 2^by, dropping the bits that fall below 1. A shift up by 64 or more happens only to a
/// zero product whose exponent comes from a huge factor (0 · 2¹²⁷): it stays zero.
fn shift(x: u64, by: i32) -> u64 {
    if by >= 0 {
        x.checked_shl(by as u32).unwrap_or(0)
    } else {
        x.checked_shr(by.unsigned_abs()).unwrap_or(0)
    }
}

/// NaN and ∞ decide the result before any alignment happens.
fn special(a: &[u32; 8], b: &[u32; 8], c: u32) -> Option<u32> {
    let mag = |x: u32| x & !SIGN;
    // Each of the nine terms as (is NaN, is infinite, sign); ∞·0 is a NaN.
    let products = a.iter().zip(b).map(|(&x, &y)| {
        let inf = mag(x) == INF || mag(y) == INF;
        (mag(x) > INF || mag(y) > INF || inf && (mag(x) == 0 || mag(y) == 0), inf, (x ^ y) & SIGN)
    });
    let (mut nan, mut inf) = (false, [false; 2]); // inf: [some +∞ term, some −∞ term]
    for (is_nan, is_inf, sign) in products.chain([(mag(c) > INF, mag(c) == INF, c & SIGN)]) {
        nan |= is_nan;
        inf[(sign >> 31) as usize] |= is_inf;
    }
    match inf {
        _ if nan => Some(NAN),
        [true, true] => Some(NAN),
        [true, false] => Some(INF),
        [false, true] => Some(INF | SIGN),
        [false, false] => None,
    }
}

/// ±mag × 2^lsb cut to f32 toward zero; ±∞ past f32's range.
fn to_f32_toward_zero(neg: bool, mag: u64, lsb: i32) -> u32 {
    if mag == 0 {
        return 0;
    }
    let sign = if neg { SIGN } else { 0 };
    let exp = 63 - mag.leading_zeros() as i32 + lsb; // exponent of the leading bit
    if exp > 127 {
        return sign | INF;
    }
    // The last bit f32 keeps: 23 below the leading one, never below 2^-149 (subnormals).
    let kept = shift(mag, lsb - (exp - 23).max(-149)) as u32;
    if kept == 0 {
        return 0; // the hardware writes no −0: a zero result is +0, whatever the signs in it
    }
    // A normal result's hidden bit in `kept` adds the 1 that makes (exp + 126) the biased exponent.
    sign | ((((exp + 126).max(0) as u32) << 23) + kept)
}

/// One element of one k8 step of a Hopper TF32 tensor-core product: c + Σ aₖbₖ, as f32 bits.
/// The same arithmetic serves `mma.sync` m16n8k8 and `wgmma` m64nNk8.
pub fn tf32_dot(a: &[u32; 8], b: &[u32; 8], c: u32) -> u32 {
    let (a, b) = (a.map(|x| x & 0xffff_e000), b.map(|x| x & 0xffff_e000));
    // Only an input whose exponent is all ones (an infinity or a NaN) makes a special value, and
    // one always does: the rare case is looked at term by term, the others pass one test.
    let all_ones = a.iter().chain(&b).fold(c & INF == INF, |any, &x| any | (x & INF == INF));
    if all_ones && let Some(bits) = special(&a, &b, c) {
        return bits;
    }
    // The nine terms as (negative, significand, last bit's exponent, exponent the adder compares).
    let mut terms = [(false, 0u64, 0i32, 0i32); 9];
    for (k, term) in terms.iter_mut().take(8).enumerate() {
        let ((na, sa, la, ea), (nb, sb, lb, eb)) = (unpack(a[k]), unpack(b[k]));
        *term = (na != nb, sa * sb, la + lb, ea + eb);
    }
    terms[8] = unpack(c);
    let largest = terms.iter().map(|&(_, s, _, e)| if s == 0 { ZERO_EXP } else { e }).max().unwrap_or(0);
    let unit = largest - KEPT_BITS;
    let sum: i64 = terms
        .iter()
        .map(|&(neg, sig, lsb, _)| {
            let chopped = shift(sig, lsb - unit) as i64;
            if neg { -chopped } else { chopped }
        })
        .sum();
    to_f32_toward_zero(sum < 0, sum.unsigned_abs(), unit)
}

/// The emulator's first model, kept to compare against: TF32 inputs, exact products, the sum
/// in f64 and one rounding to nearest f32.
pub fn tf32_dot_exact(a: &[u32; 8], b: &[u32; 8], c: u32) -> u32 {
    let tf32 = |x: u32| f64::from(f32::from_bits(x & 0xffff_e000));
    let sum: f64 = a.iter().zip(b).map(|(&x, &y)| tf32(x) * tf32(y)).sum::<f64>();
    ((sum + f64::from(f32::from_bits(c))) as f32).to_bits()
}

/// An integer tensor-core dot product (`.s32.s8.s8`, `.s32.u8.s8`, …): the bytes come already
/// sign- or zero-extended; the dot product is exact and is added to c wrapping around, as
/// without `.satfinite`.
pub fn s8_dot(a: &[i32], b: &[i32], c: i32) -> i32 {
    assert_eq!(a.len(), b.len(), "s8_dot needs as many bytes of a as of b");
    a.iter().zip(b).fold(c, |acc, (&x, &y)| acc.wrapping_add(x.wrapping_mul(y)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ONE: u32 = 0x3f80_0000;
    const NEG: u32 = 0x8000_0000;
    /// The f32 bits of 2^e, for a normal e.
    fn p2(e: i32) -> u32 {
        ((e + 127) as u32) << 23
    }
    /// Eight entries: `head`, then +0.
    fn v(head: &[u32]) -> [u32; 8] {
        let mut x = [0; 8];
        x[..head.len()].copy_from_slice(head);
        x
    }
    /// (hardware model, exact model).
    fn both(a: [u32; 8], b: [u32; 8], c: u32) -> (u32, u32) {
        (tf32_dot(&a, &b, c), tf32_dot_exact(&a, &b, c))
    }

    #[test]
    fn small_products_vanish_in_alignment() {
        // c = 1 sets the largest exponent 0, so the last kept bit is 2^-25; each 2^-26 is half of
        // it and is cut to 0, giving 1.0. Exactly, 1 + 7·2^-26 = 1 + 1.75·2^-24 rounds up to 1 + 2^-23.
        let a = v(&[0, p2(-26), p2(-26), p2(-26), p2(-26), p2(-26), p2(-26), p2(-26)]);
        assert_eq!(both(a, [ONE; 8], ONE), (ONE, ONE + 1));
    }

    #[test]
    fn twenty_five_bits_are_kept_and_no_more() {
        // c = 1, products -0.5 and seven 2^-25 (one unit each): 0.5 + 7·2^-25 = 0.5 + 3.5·2^-24,
        // cut to f32's 2^-24 steps above 0.5: mantissa 3. To nearest (ties to even) gives 4.
        let a = v(&[0xbf00_0000, p2(-25), p2(-25), p2(-25), p2(-25), p2(-25), p2(-25), p2(-25)]);
        assert_eq!(both(a, [ONE; 8], ONE), (0x3f00_0003, 0x3f00_0004));
        // Seven 2^-26 are cut to nothing before 1 and -0.5 cancel: 0.5 exactly, where the exact
        // sum 0.5 + 1.75·2^-24 rounds to 0.5 + 2·2^-24. c is in the same sum: were it added last,
        // the products' own sum would keep 3·2^-25 and the result would be 0x3f000001.
        let a = v(&[0xbf00_0000, p2(-26), p2(-26), p2(-26), p2(-26), p2(-26), p2(-26), p2(-26)]);
        assert_eq!(both(a, [ONE; 8], ONE), (0x3f00_0000, 0x3f00_0002));
    }

    #[test]
    fn the_result_is_rounded_toward_zero() {
        // 1 + 1.5·2^-24 (3 units of 2^-25 after alignment) is 0.75 ulp above 1: cut to 1.0,
        // where to nearest goes up. Negated, it is cut to -1.0: toward zero, not down.
        assert_eq!(both(v(&[ONE, 0x33c0_0000]), [ONE; 8], 0), (ONE, ONE + 1));
        assert_eq!(both(v(&[0xbf80_0000, 0xb3c0_0000]), [ONE; 8], 0), (0xbf80_0000, 0xbf80_0001));
        // Each term is cut toward zero too: 1 - 2^-26 keeps 1.0 (cutting down, to -1 unit of
        // 2^-25, would leave 1 - 2^-25 and then 0x3f7fffff).
        assert_eq!(tf32_dot(&v(&[ONE, p2(-26) | NEG]), &[ONE; 8], 0), ONE);
    }

    #[test]
    fn inputs_lose_their_low_13_bits() {
        // 0x3f801fff is 1 + 0.9998·2^-10: truncated to TF32 it is 1.0 (rounding would give 0x3f802000).
        assert_eq!(both(v(&[0x3f80_1fff]), [ONE; 8], 0), (ONE, ONE));
        // A NaN whose payload lies in those bits becomes ∞; c keeps all its bits, so a NaN stays one.
        assert_eq!(tf32_dot(&v(&[0x7f80_0001]), &[ONE; 8], 0), INF);
        assert_eq!(tf32_dot(&[0; 8], &[ONE; 8], 0x7f80_0001), NAN);
    }

    #[test]
    fn huge_products_cancel_in_the_fused_sum() {
        // 2^127·4 - 2^127·4 + 1: the products are 2^129, beyond f32 but fine in the adder; their
        // exponent puts the last kept bit at 2^104, so c = 1 is cut to 0 and the result is +0.
        let (a, b) = (v(&[p2(127), p2(127) | NEG]), v(&[p2(2), p2(2)]));
        assert_eq!(both(a, b, ONE), (0, ONE));
    }

    #[test]
    fn subnormals_are_kept_and_tiny_results_cut() {
        // 2^-130 (a subnormal input) times 1 is exact.
        assert_eq!(tf32_dot(&v(&[0x0008_0000]), &[ONE; 8], 0), 0x0008_0000);
        // 2^-75 · 1.5·2^-75 = 1.5·2^-150, under the smallest subnormal: cut to +0, where to
        // nearest gives 2^-149.
        assert_eq!(both(v(&[p2(-75)]), v(&[0x1a40_0000]), 0), (0, 1));
    }

    #[test]
    fn a_zero_term_counts_as_exponent_minus_133() {
        // c = 0 and six zero products sit at -133, above the products 2^-149 and -2^-158, so
        // the last kept bit is 2^-158: 2^-149 - 2^-158 is cut to 0 at f32's 2^-149 steps...
        let b = v(&[p2(-74), p2(-79)]);
        assert_eq!(tf32_dot(&v(&[p2(-75), p2(-79) | NEG]), &b, 0), 0);
        // ...while -2^-159 is half a unit and vanishes, leaving 2^-149.
        assert_eq!(tf32_dot(&v(&[p2(-75), p2(-80) | NEG]), &b, 0), 1);
        // The zero product 0·2^127 does not count as exponent -126 + 127: c's last bit survives.
        assert_eq!(tf32_dot(&[0; 8], &v(&[p2(127)]), 0x3a80_0001), 0x3a80_0001);
    }

    #[test]
    fn zero_results_are_positive() {
        // (-0)·0 + … + (-0) is -0 to IEEE arithmetic, +0 here; so are 1 - 1 and a tiny
        // negative sum cut to zero (-2^-150).
        assert_eq!(both([NEG; 8], [0; 8], NEG), (0, NEG));
        assert_eq!(tf32_dot(&v(&[0xbf80_0000]), &[ONE; 8], ONE), 0);
        assert_eq!(tf32_dot(&v(&[p2(-75) | NEG]), &v(&[p2(-75)]), 0), 0);
    }

    #[test]
    fn nan_and_infinity() {
        assert_eq!(tf32_dot(&[0; 8], &[0; 8], 0xffc0_0001), NAN); // NaN in: the canonical NaN out
        assert_eq!(tf32_dot(&v(&[INF]), &[0; 8], ONE), NAN); // ∞·0
        assert_eq!(tf32_dot(&v(&[INF]), &[ONE; 8], INF | SIGN), NAN); // +∞ - ∞
        assert_eq!(tf32_dot(&v(&[0, 0, 0, INF]), &[ONE; 8], 0x7f7f_ffff), INF);
        assert_eq!(tf32_dot(&v(&[0, 0, 0, INF]), &v(&[0, 0, 0, ONE | NEG]), ONE), INF | SIGN);
        // Finite inputs past f32's range: 2^127·2^127, and max + max, become ∞, not the largest float.
        assert_eq!(tf32_dot(&v(&[p2(127)]), &v(&[p2(127)]), 0), INF);
        assert_eq!(tf32_dot(&v(&[0x7f7f_ffff]), &[ONE; 8], 0x7f7f_ffff), INF);
    }

    #[test]
    fn the_order_of_the_products_does_not_matter() {
        // Products from 2^-48 to 1.7, some cut in alignment: every rotation gives the same bits.
        let a =
            [0x3fc00000, 0xb5a00000, 0x40400000, 0x30800000, 0xbf400000, 0x3f802000, 0xc2c80000, 0x34000000];
        let b =
            [0x3f900000, 0x40000000, 0xbe800000, 0x49000000, 0x3f800000, 0xbf806000, 0x3c23e000, 0x33000000];
        let first = tf32_dot(&a, &b, 0x3dcc_cccd);
        for turn in 1..8 {
            let (mut ra, mut rb) = (a, b);
            ra.rotate_left(turn);
            rb.rotate_left(turn);
            assert_eq!(tf32_dot(&ra, &rb, 0x3dcc_cccd), first, "rotated by {turn}");
        }
    }

    #[test]
    fn matches_elements_recorded_on_an_h100() {
        // Random elements where mma.sync and wgmma both gave `hardware` and the exact model is 1
        // to 6 ulps off: inputs of like size, nearly cancelling pairs, one large product.
        // Each row: a₀…a₇, b₀…b₇, c, hardware, exact.
        let cases: [[u32; 19]; 3] = [
            [
                0x41e59387, 0x3e9621ee, 0xc16ef891, 0xbede62ae, 0x402aa14f, 0xbf246bde, 0x41cb2794,
                0x415a6f68, 0xc0dc2104, 0x3e852a41, 0x3f457f79, 0xc18c90a9, 0xc19b5ca6, 0xbfd6e618,
                0xc03e7058, 0xbe3fbc82, 0x41ca4543, 0xc3984d14, 0xc3984d15,
            ],
            [
                0x4086a65c, 0xc086265c, 0x3f5324a1, 0xbf53a4a1, 0x41746360, 0xc1744360, 0x3ec9b9c5,
                0xbec939c5, 0x403e90e3, 0x403e90e3, 0xc09a0125, 0xc09a0125, 0x3f4043db, 0x3f4043db,
                0xc05705f9, 0xc05705f9, 0x3ea7fb0e, 0x3ec5ee08, 0x3ec5ee0e,
            ],
            [
                0x431e79b5, 0xb80fa8a1, 0x3a7f4fef, 0xb2d09882, 0xba580787, 0xb8ed3e70, 0x3788ebd8,
                0xb5cf38d8, 0x3e41ca82, 0xbe901750, 0xc13d0ce6, 0xbffe0ff2, 0x3fa3ee9d, 0xbf9600a2,
                0x3fdab1f7, 0xbe0f7331, 0x3cc7ed9a, 0x41efd2ec, 0x41efd2ed,
            ],
        ];
        for x in cases {
            let (a, b) = (x[..8].try_into().unwrap(), x[8..16].try_into().unwrap());
            assert_eq!(both(a, b, x[16]), (x[17], x[18]));
        }
    }

    #[test]
    fn s8_dot_is_exact_and_wraps() {
        let (a, b) = ([-128; 32], [-128; 32]);
        assert_eq!(s8_dot(&a, &b, 0), 32 * 16384); // 2^19: no intermediate overflow
        assert_eq!(s8_dot(&[255, -1], &[127, 1], 5), 255 * 127 - 1 + 5); // u8 × s8
        assert_eq!(s8_dot(&[1], &[1], i32::MAX), i32::MIN); // wraps, no .satfinite
    }

    #[test]
    fn a_zero_product_of_a_huge_factor_stays_zero() {
        // 2¹²⁷ · 0 with nothing else: the zero term's exponent −133 is the largest, and the
        // product's own exponent lies far above it; the sum is +0 (this shift overflowed once).
        let mut a = [0u32; 8];
        a[0] = 0x7f00_0000;
        assert_eq!(tf32_dot(&a, &[0; 8], 0), 0);
    }
}

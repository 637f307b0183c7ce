//! One thread's arithmetic, as the PTX ISA defines it: integers at their width (wrapping,
//! shifts clamped), IEEE FP32 and FP64 rounded to nearest with `fma` fused, and the
//! conversions between them. Values travel as the bits of a 64-bit register.

use crate::inst::{BoolOp, Cmp, IntOp, Round, Ty, UnOp};

/// The canonical NaN the GPU returns from an invalid FP32 operation.
const NAN32: u32 = 0x7fff_ffff;
const NAN64: u64 = 0x7fff_ffff_ffff_ffff;

#[inline]
fn mask(bits: u32) -> u64 {
    if bits >= 64 { u64::MAX } else { (1u64 << bits) - 1 }
}

/// `v` read as a signed value of `bits` bits.
#[inline]
pub fn sext(v: u64, bits: u32) -> i64 {
    let shift = 64 - bits;
    ((v << shift) as i64) >> shift
}

/// `v` as a value of type `ty`, widened to 64 bits (signed types sign-extended).
#[inline]
pub fn widen(v: u64, ty: Ty) -> i128 {
    let bits = ty.bits();
    if ty.signed() { i128::from(sext(v, bits)) } else { i128::from(v & mask(bits)) }
}

/// `prmt.b32` in its default mode (PTX ISA §9.7.8.7): the eight bytes of {b, a} (a the low four)
/// numbered 0 to 7; each of the result's bytes is the one the matching nibble of c names (its
/// low three bits), or that byte's sign copied to all eight bits when the nibble's top bit is set.
pub fn permute(a: u64, b: u64, c: u64) -> u64 {
    let bytes = ((b & 0xffff_ffff) << 32) | (a & 0xffff_ffff);
    let mut out = 0u32;
    for i in 0..4 {
        let nibble = (c >> (4 * i)) & 0xf;
        let byte = (bytes >> (8 * (nibble & 7))) as u8;
        let byte = if nibble & 8 != 0 { if byte & 0x80 != 0 { 0xff } else { 0 } } else { byte };
        out |= u32::from(byte) << (8 * i);
    }
    u64::from(out)
}

#[inline]
pub fn int(op: IntOp, ty: Ty, a: u64, b: u64) -> u64 {
    let bits = ty.bits();
    if bits == 32 {
        let (x, y) = (a as u32, b as u32);
        let signed = ty.signed();
        let r = match op {
            IntOp::Add => x.wrapping_add(y),
            IntOp::Sub => x.wrapping_sub(y),
            IntOp::MulLo => x.wrapping_mul(y),
            IntOp::MulHi if signed => ((i64::from(x as i32) * i64::from(y as i32)) >> 32) as u32,
            IntOp::MulHi => ((u64::from(x) * u64::from(y)) >> 32) as u32,
            IntOp::Min if signed => (x as i32).min(y as i32) as u32,
            IntOp::Min => x.min(y),
            IntOp::Max if signed => (x as i32).max(y as i32) as u32,
            IntOp::Max => x.max(y),
            IntOp::Div if y == 0 => u32::MAX,
            IntOp::Div if signed => (x as i32).wrapping_div(y as i32) as u32,
            IntOp::Div => x / y,
            IntOp::Rem if y == 0 => x,
            IntOp::Rem if signed => (x as i32).wrapping_rem(y as i32) as u32,
            IntOp::Rem => x % y,
            IntOp::And => x & y,
            IntOp::Or => x | y,
            IntOp::Xor => x ^ y,
            IntOp::Shl => x.checked_shl(y).unwrap_or(0),
            IntOp::Shr if signed => ((x as i32) >> y.min(31)) as u32,
            IntOp::Shr => x.checked_shr(y).unwrap_or(0),
        };
        return u64::from(r);
    }
    // Other widths: computed wide, then cut to the type's bits. A shift's amount is 32 bits.
    let (x, y) = (widen(a, ty), widen(b, ty));
    let shift = (b as u32).min(bits);
    let r: i128 = match op {
        IntOp::Add => x + y,
        IntOp::Sub => x - y,
        IntOp::MulLo => x.wrapping_mul(y),
        IntOp::MulHi => x.wrapping_mul(y) >> bits,
        IntOp::Min => x.min(y),
        IntOp::Max => x.max(y),
        IntOp::Div if y == 0 => -1,
        IntOp::Div => x.wrapping_div(y),
        IntOp::Rem if y == 0 => x,
        IntOp::Rem => x.wrapping_rem(y),
        IntOp::And => x & y,
        IntOp::Or => x | y,
        IntOp::Xor => x ^ y,
        IntOp::Shl if shift >= bits => 0,
        IntOp::Shl => x << shift,
        IntOp::Shr if ty.signed() => x >> shift.min(bits - 1),
        IntOp::Shr if shift >= bits => 0,
        IntOp::Shr => x >> shift,
    };
    (r as u64) & mask(bits)
}

/// The full product of two `ty` values (mul.wide), at twice their width.
#[inline]
pub fn mul_wide(ty: Ty, a: u64, b: u64) -> u64 {
    let r = widen(a, ty) * widen(b, ty);
    (r as u64) & mask(2 * ty.bits())
}

#[inline]
fn f32_in(v: u64, ftz: bool) -> f32 {
    let f = f32::from_bits(v as u32);
    if ftz && f.is_subnormal() { f32::from_bits((v as u32) & 0x8000_0000) } else { f }
}

#[inline]
fn f32_out(f: f32, ftz: bool) -> u64 {
    let f = if ftz && f.is_subnormal() { f32::from_bits(f.to_bits() & 0x8000_0000) } else { f };
    u64::from(if f.is_nan() { NAN32 } else { f.to_bits() })
}

#[inline]
fn f64_out(f: f64) -> u64 {
    if f.is_nan() { NAN64 } else { f.to_bits() }
}

/// min/max as PTX defines them: a NaN operand gives the other one, and -0 is below +0.
fn min_max<T: PartialOrd + Copy>(a: T, b: T, a_nan: bool, b_nan: bool, a_neg: bool, min: bool) -> T {
    if a_nan {
        return b;
    }
    if b_nan {
        return a;
    }
    if a == b {
        // ±0: the sign decides.
        return if min == a_neg { a } else { b };
    }
    if (a < b) == min { a } else { b }
}

#[inline]
pub fn fma32(a: u64, b: u64, c: u64, ftz: bool) -> u64 {
    f32_out(f32_in(a, ftz).mul_add(f32_in(b, ftz), f32_in(c, ftz)), ftz)
}

/// [`fma32`] for all 32 lanes at once, from each lane's bits of `a`, `b` and `c`: the same
/// results, lane by lane. Where the CPU has fused multiply-add instructions, the products are
/// formed with them eight lanes at a time; elsewhere (and as in [`fma32`] on a build for any
/// x86-64), each lane's is a call to the C library's `fmaf`. Both round once, as IEEE 754 says.
pub fn fma32_lanes(a: &[u64; 32], b: &[u64; 32], c: &[u64; 32], ftz: bool) -> [u64; 32] {
    let inputs = |v: &[u64; 32]| v.map(|x| f32_in(x, ftz));
    let (x, y, z) = (inputs(a), inputs(b), inputs(c));
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("fma") && std::arch::is_x86_feature_detected!("avx") {
        // SAFETY: the CPU has the instructions the function is compiled for, as just checked.
        return unsafe { fused_lanes(&x, &y, &z) }.map(|f| f32_out(f, ftz));
    }
    std::array::from_fn(|l| f32_out(x[l].mul_add(y[l], z[l]), ftz))
}

/// x·y + z for each lane, rounded once, with the CPU's fused multiply-add instructions.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx,fma")]
fn fused_lanes(x: &[f32; 32], y: &[f32; 32], z: &[f32; 32]) -> [f32; 32] {
    std::array::from_fn(|l| x[l].mul_add(y[l], z[l]))
}

#[inline]
pub fn fma64(a: u64, b: u64, c: u64) -> u64 {
    f64_out(f64::from_bits(a).mul_add(f64::from_bits(b), f64::from_bits(c)))
}

use crate::inst::FloatOp;

#[inline]
pub fn float(op: FloatOp, ty: Ty, a: u64, b: u64, ftz: bool) -> u64 {
    if ty == Ty::F64 {
        let (x, y) = (f64::from_bits(a), f64::from_bits(b));
        return match op {
            FloatOp::Add => f64_out(x + y),
            FloatOp::Sub => f64_out(x - y),
            FloatOp::Mul => f64_out(x * y),
            FloatOp::Div => f64_out(x / y),
            FloatOp::Min | FloatOp::Max => {
                let r = min_max(x, y, x.is_nan(), y.is_nan(), x.is_sign_negative(), op == FloatOp::Min);
                f64_out(r)
            }
        };
    }
    let (x, y) = (f32_in(a, ftz), f32_in(b, ftz));
    match op {
        FloatOp::Add => f32_out(x + y, ftz),
        FloatOp::Sub => f32_out(x - y, ftz),
        FloatOp::Mul => f32_out(x * y, ftz),
        FloatOp::Div => f32_out(x / y, ftz),
        FloatOp::Min | FloatOp::Max => {
            f32_out(min_max(x, y, x.is_nan(), y.is_nan(), x.is_sign_negative(), op == FloatOp::Min), ftz)
        }
    }
}

pub fn unary(op: UnOp, ty: Ty, a: u64) -> u64 {
    let bits = ty.bits();
    match (op, ty) {
        (UnOp::Not, Ty::Pred) => a ^ 1,
        (UnOp::Not, _) => !a & mask(bits),
        (UnOp::Neg, Ty::F32) => a ^ 0x8000_0000,
        (UnOp::Neg, Ty::F64) => a ^ (1 << 63),
        (UnOp::Neg, _) => (widen(a, ty).wrapping_neg() as u64) & mask(bits),
        (UnOp::Abs, Ty::F32) => a & 0x7fff_ffff,
        (UnOp::Abs, Ty::F64) => a & !(1 << 63),
        (UnOp::Abs, _) => (widen(a, ty).unsigned_abs() as u64) & mask(bits),
        (UnOp::Popc, _) => u64::from((a & mask(bits)).count_ones()),
        (UnOp::Clz, _) => u64::from((a & mask(bits)).leading_zeros() - (64 - bits)),
        (UnOp::Brev, _) => (a & mask(bits)).reverse_bits() >> (64 - bits),
        (UnOp::Sqrt, Ty::F32) => f32_out(f32::from_bits(a as u32).sqrt(), false),
        (UnOp::Sqrt, _) => f64_out(f64::from_bits(a).sqrt()),
        (UnOp::Rcp, Ty::F32) => f32_out(1.0 / f32::from_bits(a as u32), false),
        (UnOp::Rcp, _) => f64_out(1.0 / f64::from_bits(a)),
    }
}

pub fn compare(cmp: Cmp, ty: Ty, a: u64, b: u64) -> bool {
    if ty.float() {
        let (x, y) = if ty == Ty::F64 {
            (f64::from_bits(a), f64::from_bits(b))
        } else {
            (f64::from(f32::from_bits(a as u32)), f64::from(f32::from_bits(b as u32)))
        };
        let unordered = x.is_nan() || y.is_nan();
        return match cmp {
            Cmp::Eq => x == y,
            Cmp::Ne => !unordered && x != y,
            Cmp::Lt => x < y,
            Cmp::Le => x <= y,
            Cmp::Gt => x > y,
            Cmp::Ge => x >= y,
            Cmp::Equ => unordered || x == y,
            Cmp::Neu => unordered || x != y,
            Cmp::Ltu => unordered || x < y,
            Cmp::Leu => unordered || x <= y,
            Cmp::Gtu => unordered || x > y,
            Cmp::Geu => unordered || x >= y,
            Cmp::Num => !unordered,
            Cmp::Nan => unordered,
        };
    }
    let (x, y) = (widen(a, ty), widen(b, ty));
    match cmp {
        Cmp::Eq | Cmp::Equ => x == y,
        Cmp::Ne | Cmp::Neu => x != y,
        Cmp::Lt | Cmp::Ltu => x < y,
        Cmp::Le | Cmp::Leu => x <= y,
        Cmp::Gt | Cmp::Gtu => x > y,
        Cmp::Ge | Cmp::Geu => x >= y,
        Cmp::Num => true,
        Cmp::Nan => false,
    }
}

#[inline]
pub fn boolean(op: BoolOp, a: bool, b: bool) -> bool {
    match op {
        BoolOp::And => a && b,
        BoolOp::Or => a || b,
        BoolOp::Xor => a ^ b,
    }
}

/// cvt: between integer widths (sign- or zero-extended by the source type, cut to the
/// destination's), integers and floats, and f32 to TF32 (rounded to nearest, ties away with
/// `.rna` or to even with `.rn`, to 10 bits of mantissa; the low 13 bits zero).
pub fn convert(to: Ty, from: Ty, round: Round, ftz: bool, a: u64) -> u64 {
    match (to.float() || to == Ty::Tf32, from.float()) {
        (false, false) => (widen(a, from) as u64) & mask(to.bits()),
        (true, false) => {
            // The nearest float, then one step toward the direction the rounding asks for where
            // it lies on the wrong side (PTX ISA §9.7.9.21, cvt's floating-point rounding).
            let v = widen(a, from);
            if to == Ty::F64 {
                let r = v as f64;
                directed(r, (r as i128).cmp(&v), round, up64, |x| -up64(-x)).to_bits()
            } else {
                let r = v as f32;
                u64::from(directed(r, (r as i128).cmp(&v), round, up32, |x| -up32(-x)).to_bits())
            }
        }
        (false, true) => {
            let x = if from == Ty::F64 { f64::from_bits(a) } else { f64::from(f32_in(a, ftz)) };
            let r = match round {
                Round::Zero | Round::None => x.trunc(),
                Round::Down => x.floor(),
                Round::Up => x.ceil(),
                Round::Nearest => x.round_ties_even(),
                Round::NearestAway => x.round(),
            };
            // Out of range saturates and NaN gives 0, as `as` does.
            let v: i128 = match (to.signed(), to.bits()) {
                (true, 64) => i128::from(r as i64),
                (true, 32) => i128::from(r as i32),
                (true, 16) => i128::from(r as i16),
                (true, _) => i128::from(r as i8),
                (false, 64) => i128::from(r as u64),
                (false, 32) => i128::from(r as u32),
                (false, 16) => i128::from(r as u16),
                (false, _) => i128::from(r as u8),
            };
            (v as u64) & mask(to.bits())
        }
        (true, true) => match (to, from) {
            (Ty::Tf32, _) => {
                let bits = a as u32;
                let f = f32::from_bits(bits);
                if f.is_nan() {
                    return u64::from(NAN32);
                }
                if f.is_infinite() {
                    return u64::from(bits);
                }
                // Half of the last kept bit, less one where a tie goes to the even neighbour and
                // the kept part is even already.
                let half = match round {
                    Round::Nearest => 0xfff + ((bits >> 13) & 1),
                    _ => 0x1000,
                };
                let magnitude = (bits & 0x7fff_ffff) + half;
                u64::from((bits & 0x8000_0000) | (magnitude & 0x7fff_e000))
            }
            (Ty::F64, Ty::F32) => f64::from(f32_in(a, ftz)).to_bits(),
            (Ty::F32, Ty::F64) => {
                let x = f64::from_bits(a);
                let r = x as f32;
                let side = f64::from(r).partial_cmp(&x).unwrap_or(std::cmp::Ordering::Equal);
                f32_out(directed(r, side, round, up32, |x| -up32(-x)), ftz)
            }
            // The same width: a rounding modifier rounds to an integral value (rni, rzi, rmi,
            // rpi), none converts nothing.
            (Ty::F64, Ty::F64) => f64_out(integral(f64::from_bits(a), round)),
            _ => f32_out(integral(f64::from(f32_in(a, ftz)), round) as f32, ftz),
        },
    }
}

/// `r`, the float nearest a value it lies `side` of (Greater: r is above it), moved one step
/// where `round` wants the other side: toward zero, down or up. Rounding to nearest keeps `r`.
fn directed<F: Copy + PartialOrd + Default>(
    r: F,
    side: std::cmp::Ordering,
    round: Round,
    up: fn(F) -> F,
    down: fn(F) -> F,
) -> F {
    use std::cmp::Ordering::{Greater, Less};
    let zero = F::default();
    match (round, side) {
        (Round::Down, Greater) => down(r),
        (Round::Up, Less) => up(r),
        (Round::Zero, Greater) if r > zero => down(r),
        (Round::Zero, Less) if r < zero => up(r),
        _ => r,
    }
}

/// The next f64 above `x` (`x` itself for NaN and +∞).
fn up64(x: f64) -> f64 {
    match x {
        _ if x.is_nan() || x == f64::INFINITY => x,
        0.0 => f64::from_bits(1),
        _ if x > 0.0 => f64::from_bits(x.to_bits() + 1),
        _ => f64::from_bits(x.to_bits() - 1),
    }
}

/// The next f32 above `x` (`x` itself for NaN and +∞).
fn up32(x: f32) -> f32 {
    match x {
        _ if x.is_nan() || x == f32::INFINITY => x,
        0.0 => f32::from_bits(1),
        _ if x > 0.0 => f32::from_bits(x.to_bits() + 1),
        _ => f32::from_bits(x.to_bits() - 1),
    }
}

/// `x` rounded to an integral value as `round` says (no rounding: `x` itself).
fn integral(x: f64, round: Round) -> f64 {
    match round {
        Round::Nearest => x.round_ties_even(),
        Round::Zero => x.trunc(),
        Round::Down => x.floor(),
        Round::Up => x.ceil(),
        Round::NearestAway => x.round(),
        Round::None => x,
    }
}

/// bfi: `b` with its `len` bits from `pos` replaced by the low bits of `a`.
pub fn bit_insert(ty: Ty, a: u64, b: u64, pos: u64, len: u64) -> u64 {
    let bits = u64::from(ty.bits());
    let (pos, len) = (pos & 0xff, len & 0xff);
    if len == 0 || pos >= bits {
        return b & mask(ty.bits());
    }
    let len = len.min(bits - pos);
    let field = mask(len as u32) << pos;
    ((b & !field) | ((a << pos) & field)) & mask(ty.bits())
}

/// bfe: `len` bits of `a` from `pos`, sign-extended for signed types.
pub fn bit_extract(ty: Ty, a: u64, pos: u64, len: u64) -> u64 {
    let bits = u64::from(ty.bits());
    let (pos, len) = (pos & 0xff, len & 0xff);
    if len == 0 {
        return 0;
    }
    let v = a & mask(ty.bits());
    let field = if pos >= bits { 0 } else { (v >> pos) & mask(len.min(64) as u32) };
    if ty.signed() {
        let top = (pos + len - 1).min(bits - 1);
        let sign = (v >> top) & 1;
        let used = len.min(bits.saturating_sub(pos));
        if sign == 1 { (field | !mask(used as u32)) & mask(ty.bits()) } else { field }
    } else {
        field
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_wrap_and_shifts_clamp() {
        assert_eq!(int(IntOp::Add, Ty::S32, 0xffff_ffff, 2), 1);
        assert_eq!(int(IntOp::Shl, Ty::B32, 1, 40), 0);
        assert_eq!(int(IntOp::Shr, Ty::S32, 0x8000_0000, 40), 0xffff_ffff);
        assert_eq!(int(IntOp::Div, Ty::S32, (-7i32) as u32 as u64, 2), (-3i32) as u32 as u64);
        assert_eq!(int(IntOp::Div, Ty::S64, (-7i64) as u64, 2), (-3i64) as u64);
        assert_eq!(mul_wide(Ty::S32, (-3i32) as u32 as u64, 4), (-12i64) as u64);
        assert_eq!(mul_wide(Ty::U32, 0xffff_ffff, 2), 0x1_ffff_fffe);
        assert_eq!(int(IntOp::MulHi, Ty::S32, (-1i32) as u32 as u64, 2), 0xffff_ffff);
    }

    /// Directed rounding of f64 and of integers to floats, and rounding to an integral value
    /// (PTX ISA §9.7.9.21): each result on the side its mode names, exact values kept, and the
    /// largest float where an overflow rounds toward zero.
    #[test]
    fn conversions_round_in_the_direction_asked() {
        let to32 =
            |round, x: f64| f32::from_bits(convert(Ty::F32, Ty::F64, round, false, x.to_bits()) as u32);
        let third = 1.0f64 / 3.0;
        let (near, below, above) = (third as f32, to32(Round::Down, third), to32(Round::Up, third));
        assert!(f64::from(below) < third && f64::from(above) > third, "{below:e} {above:e}");
        assert_eq!(above.to_bits() - below.to_bits(), 1);
        assert!(near == below || near == above);
        assert_eq!(to32(Round::Zero, third), below);
        assert_eq!(to32(Round::Zero, -third), -below);
        assert_eq!(to32(Round::Down, -third), -above);
        assert_eq!(to32(Round::Up, 0.5), 0.5);
        assert_eq!(to32(Round::Zero, 1e39), f32::MAX);
        assert_eq!(to32(Round::Up, 1e39), f32::INFINITY);
        assert_eq!(to32(Round::Down, -1e39), f32::NEG_INFINITY);
        assert_eq!(to32(Round::Up, 1e-300), f32::from_bits(1));
        // 2²⁴ + 1 lies between two floats; 2²⁴ + 2 is one.
        let int = |round, v: i64| f32::from_bits(convert(Ty::F32, Ty::S64, round, false, v as u64) as u32);
        assert_eq!(int(Round::Up, (1 << 24) + 1), 16_777_218.0);
        assert_eq!(int(Round::Zero, (1 << 24) + 1), 16_777_216.0);
        assert_eq!(int(Round::Down, -(1 << 24) - 1), -16_777_218.0);
        assert_eq!(int(Round::Zero, -(1 << 24) - 1), -16_777_216.0);
        assert_eq!(int(Round::Down, (1 << 24) + 2), 16_777_218.0);
        let wide = |round, v: u64| f64::from_bits(convert(Ty::F64, Ty::U64, round, false, v));
        assert_eq!(wide(Round::Up, (1 << 53) + 1), 9_007_199_254_740_994.0);
        assert_eq!(wide(Round::Down, (1 << 53) + 1), 9_007_199_254_740_992.0);
        let same = |round, x: f32| {
            f32::from_bits(convert(Ty::F32, Ty::F32, round, false, u64::from(x.to_bits())) as u32)
        };
        assert_eq!(same(Round::Zero, -2.7), -2.0);
        assert_eq!(same(Round::Down, -2.2), -3.0);
        assert_eq!(same(Round::Up, 2.2), 3.0);
        assert_eq!(same(Round::Nearest, 2.5), 2.0);
        assert_eq!(same(Round::None, 2.7), 2.7);
    }

    #[test]
    fn floats_fuse_and_convert() {
        let f = |x: f32| u64::from(x.to_bits());
        // (1 + 2^-23)·(1 - 2^-23) - 1 is -2^-46 only when fused.
        let (a, b) = (1.0 + f32::EPSILON, 1.0 - f32::EPSILON);
        assert_eq!(f32::from_bits(fma32(f(a), f(b), f(-1.0), false) as u32), -(2f32.powi(-46)));
        assert_eq!(
            convert(Ty::Tf32, Ty::F32, Round::NearestAway, false, f(1.0 + 2f32.powi(-11))),
            f(1.0 + 2f32.powi(-10))
        );
        assert_eq!(convert(Ty::Tf32, Ty::F32, Round::NearestAway, false, f(1.0 + 2f32.powi(-12))), f(1.0));
        // To even: 1 + 2⁻¹¹ is a tie between 1 and 1 + 2⁻¹⁰, and 1 is even; 1 + 3·2⁻¹¹ goes up.
        assert_eq!(convert(Ty::Tf32, Ty::F32, Round::Nearest, false, f(1.0 + 2f32.powi(-11))), f(1.0));
        assert_eq!(
            convert(Ty::Tf32, Ty::F32, Round::Nearest, false, f(1.0 + 3.0 * 2f32.powi(-11))),
            f(1.0 + 2.0 * 2f32.powi(-10))
        );
        assert_eq!(
            convert(Ty::Tf32, Ty::F32, Round::Nearest, false, f(1.0 + 2f32.powi(-11) + 2f32.powi(-20))),
            f(1.0 + 2f32.powi(-10))
        );
        assert_eq!(convert(Ty::S64, Ty::S32, Round::None, false, 0xffff_fffe), (-2i64) as u64);
        assert_eq!(convert(Ty::U32, Ty::U64, Round::None, false, 0x1_0000_0005), 5);
        assert_eq!(convert(Ty::S32, Ty::F32, Round::Zero, false, f(-2.7)), (-2i32) as u32 as u64);
        assert_eq!(float(FloatOp::Min, Ty::F32, f(f32::NAN), f(3.0), false), f(3.0));
        assert_eq!(float(FloatOp::Add, Ty::F32, f(f32::INFINITY), f(f32::NEG_INFINITY), false), 0x7fff_ffff);
        assert!(compare(Cmp::Ltu, Ty::F32, f(f32::NAN), f(1.0)));
        assert!(!compare(Cmp::Lt, Ty::F32, f(f32::NAN), f(1.0)));
    }

    #[test]
    fn bit_fields() {
        assert_eq!(bit_insert(Ty::B32, 0b101, 0xffff_0000, 4, 3), 0xffff_0050);
        assert_eq!(bit_extract(Ty::U32, 0xf0, 4, 4), 0xf);
        assert_eq!(bit_extract(Ty::S32, 0xf0, 4, 4), 0xffff_ffff);
    }

    /// A warp's 32 lanes of fma at once give each lane's fma32 bits: normal, subnormal, zero,
    /// infinite and NaN operands, with and without flushing subnormals.
    #[test]
    fn a_warps_fused_multiply_adds_are_each_lanes() {
        let mut seed = 1u64;
        let mut bits = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let x = (seed >> 32) as u32;
            let v = match seed >> 61 {
                0 => x & 0x807f_ffff,
                1 => x | 0x7f80_0000,
                2 => x & 0x8000_0000,
                _ => (x & 0x87ff_ffff) | 0x3800_0000,
            };
            u64::from(v)
        };
        for round in 0..20_000 {
            let (a, b, c): ([u64; 32], [u64; 32], [u64; 32]) = (
                std::array::from_fn(|_| bits()),
                std::array::from_fn(|_| bits()),
                std::array::from_fn(|_| bits()),
            );
            let ftz = round % 2 == 1;
            let lanes = fma32_lanes(&a, &b, &c, ftz);
            for l in 0..32 {
                assert_eq!(lanes[l], fma32(a[l], b[l], c[l], ftz), "{:x} {:x} {:x} {ftz}", a[l], b[l], c[l]);
            }
        }
    }
}

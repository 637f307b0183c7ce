//! Inputs on which rounding to nearest errs the same way on every term of every dot product while
//! C cancels: what step 11's unbiased rounding is for (the book's appendix on how many moduli
//! step 11 takes, `docs/src/step11-moduli.md`, "Rounding without bias"), and what its tests run.
//!
//! Each vector of the tied operand (a row of A, or a column of B) alternates between
//! +(n + ½)·2⁻ᵉ and −(n + 3/2)·2⁻ᵉ, with e the exponent the step scales it by and n even: once
//! scaled, both are half-integers, and rounding to nearest (ties to even) takes ½ from both. The
//! other operand is one value along K, so the K errors of ½ add up to K/2 units, while C, the sum
//! of the alternating entries times that value, cancels to about a (2n)th of |A||B|. Where the
//! product takes more than seven moduli, or K is too short for entries of one magnitude to fall on
//! half-integers, a large first entry sets the exponent and the other operand is 0 there.

use crate::residues::{exponent, room};
use common::matrix::{Inputs, Matrix, Shape};

/// Which operand holds the half-integers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ties {
    A,
    B,
}

/// One tied vector of `k` entries for a product of `moduli` moduli, in units of the step's
/// scale: +(n + ½) and −(n + 3/2) by turns over an even number of places (a last odd place holds
/// 0), and where these cannot set the scale themselves, a large first entry. Returns them and the
/// first k of the alternation (0 or 1).
fn tied(k: usize, moduli: usize, variant: usize) -> (Vec<f64>, usize) {
    let room = room(moduli, k);
    let alternation = |n: f64, from: usize| {
        let end = from + (k - from) / 2 * 2;
        (0..k).map(move |p| match p {
            p if p < from || p >= end => 0.0,
            p if (p - from) % 2 == 0 => n + 0.5,
            _ => -(n + 1.5),
        })
    };
    // Every entry of about one size: the vector's length, about (n + 1)·√K, within (room/2,
    // room] (so that the step's exponent is the one that makes these units), and n + 3/2 below 2²³
    // (an f32 holds it exactly).
    let n = 2.0 * (0.375 * room / (k as f64).sqrt()).floor() + 2.0 * variant as f64;
    if moduli == 7 && n + 1.5 < 8_388_608.0 && (n + 1.0) * (k as f64).sqrt() > 0.5 * room {
        return (alternation(n, 0).collect(), 0);
    }
    // Else a first entry of 3/4 of the room, kept to 16 significant bits, sets the length, and
    // the alternation is of half-integers near 2²¹: at K ≥ 64 none is small for the rule
    // (below 2²⁷/K), so that each keeps what FP32's bound asks of it.
    let head = 2f64.powi((0.75 * room).log2().floor() as i32 - 15);
    let first = (0.75 * room / head).floor() * head;
    let mut units: Vec<f64> = alternation(2_097_152.0 + 2.0 * variant as f64, 1).collect();
    units[0] = first;
    (units, 1)
}

/// The exponent the step's `exponent_for` gives a vector of f32 `values` at `moduli` moduli.
fn exponent_for(values: &[f32], moduli: usize) -> i32 {
    exponent(values.iter().map(|&x| f64::from(x) * f64::from(x)).sum(), values.len(), moduli)
}

/// M×K A and K×N B, coherent in `ties`, for a product that takes `moduli` moduli: 7, the rule's
/// count on these inputs where K allows entries of one size (from K = 256 or so), or a count
/// forced with `--moduli`. Returns the inputs, or why these cannot be made at this shape.
pub fn coherent(shape: Shape, moduli: usize, ties: Ties) -> Result<Inputs, String> {
    let Shape { m, n, k } = shape;
    let vectors = if ties == Ties::A { m } else { n };
    let (mut tied_rows, mut from) = (Vec::new(), 0);
    for v in 0..vectors {
        let (units, start) = tied(k, moduli, v % 64);
        // The scale that makes the largest entry about 1: the step's exponent must then be e.
        let e = units.iter().fold(0.0f64, |m, x| m.max(x.abs())).log2().floor() as i32;
        let values: Vec<f32> = units.iter().map(|&x| (x * 2f64.powi(-e)) as f32).collect();
        let exact = values.iter().zip(&units).all(|(&x, &u)| f64::from(x) * 2f64.powi(e) == u);
        if !exact || exponent_for(&values, moduli) != e {
            return Err(format!("no coherent inputs at {shape} and {moduli} moduli"));
        }
        tied_rows.push(values);
        from = start;
    }
    // The other operand: one value along K (1 + v/4096, held exactly at any scale the step takes),
    // 0 where the tied vectors hold their large first entry.
    let other = |v: usize, p: usize| if p < from { 0.0 } else { 1.0 + (v % 4096) as f32 / 4096.0 };
    let (a, b) = match ties {
        Ties::A => (
            Matrix { rows: m, cols: k, data: tied_rows.concat() },
            Matrix { rows: k, cols: n, data: (0..k * n).map(|x| other(x % n, x / n)).collect() },
        ),
        Ties::B => (
            Matrix { rows: m, cols: k, data: (0..m * k).map(|x| other(x / k, x % k)).collect() },
            Matrix { rows: k, cols: n, data: (0..k * n).map(|x| tied_rows[x % n][x / n]).collect() },
        ),
    };
    let source = format!("half-integers in {ties:?} at {moduli} moduli, C cancelling");
    Ok(Inputs { shape, a, b, exact: false, source })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// At every shape and count the tests use, each tied vector's entries, scaled by the exponent
    /// the kernel picks, are half-integers (but for a large first entry and a last zero), and the
    /// two the alternation takes round to nearest the same way: down by ½.
    #[test]
    #[ignore = "slow unoptimised: .ci/run runs it in release"]
    fn slow_scaled_entries_are_half_integers_that_round_down() {
        let cases = [
            ((16, 16, 256), 7),
            ((24, 20, 300), 7),
            ((8, 8, 1024), 7),
            ((9, 7, 129), 7),
            ((127, 129, 65536), 7),
            ((256, 256, 16384), 8),
            ((130, 257, 4096), 9),
            ((16, 12, 64), 8),
            ((12, 16, 96), 9),
            ((8, 8, 200), 12),
            ((256, 256, 4096), 7),
            ((1000, 1000, 1000), 7),
            ((2, 3, 65536), 7),
            ((4, 4, 16384), 8),
            ((3, 5, 4096), 9),
        ];
        for ((m, n, k), moduli) in cases {
            for ties in [Ties::A, Ties::B] {
                let x = coherent(Shape::new(m, n, k).unwrap(), moduli, ties).unwrap();
                let vectors: Vec<Vec<f32>> = match ties {
                    Ties::A => x.a.data.chunks(k).map(<[f32]>::to_vec).collect(),
                    Ties::B => (0..n).map(|j| (0..k).map(|p| x.b.at(p, j)).collect()).collect(),
                };
                for v in vectors {
                    let e = exponent_for(&v, moduli);
                    let scaled: Vec<f64> = v.iter().map(|&x| f64::from(x) * 2f64.powi(e)).collect();
                    let halves = scaled.iter().filter(|s| s.fract().abs() == 0.5).count();
                    assert!(
                        halves >= k - 2,
                        "{m}×{n}×{k}, {moduli} moduli, {ties:?}: {halves} half-integers"
                    );
                    let down =
                        scaled.iter().filter(|s| s.fract().abs() == 0.5).all(|s| s.round_ties_even() < *s);
                    assert!(down, "{m}×{n}×{k}, {moduli} moduli, {ties:?}: not all round down");
                }
            }
        }
    }
}

//! Inputs drawn for the tests: random ones with NaN and infinities planted, ones that look like a
//! user's data, and random shapes for property tests.

use proptest::prelude::*;

use crate::matrix::{Inputs, Shape};

/// Random inputs of `shape` with NaN, +∞ and −∞ planted in A and in B, placed so that each
/// kind reaches C alone, an infinity meets a zero (∞·0 = NaN) and +∞ meets −∞ (NaN), at any
/// shape (positions wrap around small sides).
pub fn special_inputs(shape: Shape, seed: u64) -> Inputs {
    let Shape { m, n, k } = shape;
    let mut x = Inputs::random(shape, seed);
    let a = |i: usize, p: usize| (i % m) * k + p % k;
    let b = |p: usize, j: usize| (p % k) * n + j % n;
    x.a.data[a(m / 2, 1)] = f32::NAN;
    x.a.data[a(m / 3, k / 2)] = f32::INFINITY;
    x.a.data[a(m / 4, k / 2)] = f32::NEG_INFINITY;
    x.a.data[a(m.saturating_sub(1), 0)] = f32::INFINITY;
    x.a.data[a(m.saturating_sub(1), k.saturating_sub(1))] = f32::NEG_INFINITY;
    x.b.data[b(k / 2, n / 3)] = 0.0;
    x.b.data[b(3, n / 2)] = f32::INFINITY;
    x.b.data[b(5, n / 4)] = f32::NAN;
    x.b.data[b(k.saturating_sub(2), n.saturating_sub(1))] = f32::NEG_INFINITY;
    x
}

/// Inputs with the features that once cost the FP32 steps their accuracy, as a user would bring
/// them: the identity plus noise of 2⁻²⁰, log-normal magnitudes, rows of A like a softmax with one
/// dominant entry against a B of one-hot columns, a row of A in subnormals, and NaN and ±∞.
pub fn real_looking_inputs() -> Vec<(&'static str, Inputs)> {
    use crate::matrix::{Family, Matrix};
    use rand::{Rng, SeedableRng};
    let shape = |m, n, k| Shape::new(m, n, k).expect("a valid shape");
    let mut subnormal = Inputs::random(shape(256, 256, 256), 31);
    subnormal.a.data[..256].iter_mut().for_each(|v| *v *= 1e-39);
    let (m, n, k) = (192, 160, 1024);
    let mut rng = rand::rngs::StdRng::seed_from_u64(32);
    let mut a = Matrix { rows: m, cols: k, data: vec![0.0; m * k] };
    for i in 0..m {
        let logits: Vec<f64> =
            (0..k).map(|p| if p == i % k { 20.0 } else { rng.random_range(-3.0..3.0) }).collect();
        let total: f64 = logits.iter().map(|z| z.exp()).sum();
        for (v, z) in a.data[i * k..(i + 1) * k].iter_mut().zip(&logits) {
            *v = (z.exp() / total) as f32;
        }
    }
    let mut b = Matrix { rows: k, cols: n, data: vec![0.0; k * n] };
    for j in 0..n {
        b.data[(j * 7 % k) * n + j] = 1.0;
    }
    let softmax =
        Inputs::from_matrices(a, b, "softmax rows, one-hot columns".to_owned()).expect("matching shapes");
    vec![
        (
            "identity+noise 2⁻²⁰",
            Inputs::family(shape(256, 256, 1024), 33, Family::IdentityNoise(f64::powi(2.0, -20))),
        ),
        ("log-normal σ = 2", Inputs::family(shape(256, 256, 256), 34, Family::LogNormal(2.0))),
        ("softmax rows, one-hot columns", softmax),
        ("a row of A subnormal", subnormal),
        ("NaN and ±∞", special_inputs(shape(200, 136, 300), 35)),
    ]
}

/// Random shapes for property tests: mostly 1 to 300 in each dimension, one case in twenty up
/// to 2048.
pub fn random_shapes() -> impl Strategy<Value = (usize, usize, usize)> {
    let small = (1usize..=300, 1usize..=300, 1usize..=300);
    let large = (1usize..=2048, 1usize..=2048, 1usize..=2048);
    prop_oneof![19 => small, 1 => large]
}

//! Row-major f32 matrices and the problem shape.

use std::fmt;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Largest element count of one matrix: the kernels index with 32-bit `int`.
pub const MAX_ELEMENTS: usize = i32::MAX as usize;

/// The suite of shapes (M, N, K) that `compare --suite` measures and step10's tests check: small
/// and odd squares, a transformer layer's products, a matrix–vector product, deep and thin ones.
pub const SUITE: &[(usize, usize, usize)] = &[
    (256, 256, 256),
    (512, 512, 512),
    (1024, 1024, 1024),
    (2048, 2048, 2048),
    (4096, 4096, 4096),
    (8192, 8192, 8192),
    (1000, 1000, 1000),
    (4097, 4097, 4097),
    (16, 4096, 4096),
    (128, 4096, 4096),
    (512, 11008, 4096),
    (2048, 4096, 11008),
    (8192, 1024, 4096),
    (1, 4096, 4096),
    (64, 64, 65536),
    (128, 128, 16384),
    (4096, 64, 4096),
];

/// The shape of C = A·B: A is M×K, B is K×N, C is M×N.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    pub m: usize,
    pub n: usize,
    pub k: usize,
}

impl Shape {
    /// A shape every kernel can index: all dimensions at least 1 and no matrix larger than
    /// `MAX_ELEMENTS`.
    pub fn new(m: usize, n: usize, k: usize) -> Result<Self, String> {
        if m == 0 || n == 0 || k == 0 {
            return Err(format!(
                "the shape {m}×{n}×{k} has a zero dimension; M, N and K must each be at least 1"
            ));
        }
        for (name, rows, cols) in [("A", m, k), ("B", k, n), ("C", m, n)] {
            if rows.checked_mul(cols).is_none_or(|e| e > MAX_ELEMENTS) {
                return Err(format!(
                    "{name} would have {rows}×{cols} elements, more than the {MAX_ELEMENTS} that \
                     32-bit kernel indices can address; choose a smaller shape"
                ));
            }
        }
        Ok(Self { m, n, k })
    }

    pub fn square(size: usize) -> Result<Self, String> {
        Self::new(size, size, size)
    }

    /// Floating-point operations of one product: a multiply and an add per term.
    pub fn flops(&self) -> f64 {
        2.0 * self.m as f64 * self.n as f64 * self.k as f64
    }

    /// Bytes of A, B and C in f32.
    pub fn f32_bytes(&self) -> u64 {
        4 * (self.m * self.k + self.k * self.n + self.m * self.n) as u64
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "M={} N={} K={}", self.m, self.n, self.k)
    }
}

/// A dense row-major matrix: element (r, c) is `data[r * cols + c]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Matrix {
    pub rows: usize,
    pub cols: usize,
    pub data: Vec<f32>,
}

impl Matrix {
    /// Values drawn uniformly from [-1, 1]: non-constant, signed, so that wrong indexing
    /// or a missed term shows up, and cancellation is exercised.
    pub fn random(rows: usize, cols: usize, rng: &mut StdRng) -> Self {
        let data = (0..rows * cols).map(|_| rng.random_range(-1.0f32..=1.0)).collect();
        Self { rows, cols, data }
    }

    pub fn at(&self, row: usize, col: usize) -> f32 {
        self.data[row * self.cols + col]
    }

    /// Values drawn uniformly from [-1, 1] with all 24 bits of the significand drawn:
    /// [`Matrix::random`]'s values are multiples of 2⁻²² (the generator's step), these are not.
    pub fn random_full(rows: usize, cols: usize, rng: &mut StdRng) -> Self {
        let data = (0..rows * cols).map(|_| rng.random_range(-1.0f64..=1.0) as f32).collect();
        Self { rows, cols, data }
    }

    /// Whole numbers drawn uniformly from -3 to 3: see [`Inputs::integers`].
    pub fn integers(rows: usize, cols: usize, rng: &mut StdRng) -> Self {
        let data = (0..rows * cols).map(|_| rng.random_range(-INT_MAX..=INT_MAX) as f32).collect();
        Self { rows, cols, data }
    }
}

/// Largest magnitude of the exact inputs: |products| ≤ 9, so every partial sum of up to
/// K = 2²⁰ terms stays below 2²⁴ and is an integer f32 holds exactly.
pub const INT_MAX: i32 = 3;

/// The two operands of one run, reproducible from the seed.
#[derive(Clone, Debug)]
pub struct Inputs {
    pub shape: Shape,
    pub a: Matrix,
    pub b: Matrix,
    /// Small integers: any correct f32 summation gives the exact result.
    pub exact: bool,
}

impl Inputs {
    /// Independent values uniform in [-1, 1]: the inputs every limit in `verify` is derived for.
    pub fn random(shape: Shape, seed: u64) -> Self {
        let mut rng = StdRng::seed_from_u64(seed);
        let a = Matrix::random(shape.m, shape.k, &mut rng);
        let b = Matrix::random(shape.k, shape.n, &mut rng);
        Self { shape, a, b, exact: false }
    }

    /// As [`Inputs::random`], with every bit of each significand drawn (see
    /// [`Matrix::random_full`]): for a product that rounds its operands to integers, whose
    /// error [`Inputs::random`]'s coarser values would hide.
    pub fn random_full(shape: Shape, seed: u64) -> Self {
        let mut rng = StdRng::seed_from_u64(seed);
        let a = Matrix::random_full(shape.m, shape.k, &mut rng);
        let b = Matrix::random_full(shape.k, shape.n, &mut rng);
        Self { shape, a, b, exact: false }
    }

    /// Whole numbers from -3 to 3. Every product and partial sum is an integer below 2²⁴ for
    /// K up to 2²⁰, so f32 arithmetic is exact in any order (and TF32 holds the operands
    /// exactly): a correct kernel matches the reference bit for bit, and a misplaced or missing
    /// term shows at any K.
    pub fn integers(shape: Shape, seed: u64) -> Self {
        let mut rng = StdRng::seed_from_u64(seed);
        let a = Matrix::integers(shape.m, shape.k, &mut rng);
        let b = Matrix::integers(shape.k, shape.n, &mut rng);
        Self { shape, a, b, exact: true }
    }

    /// [`Inputs::integers`] if `exact`, else [`Inputs::random`].
    pub fn new(shape: Shape, seed: u64, exact: bool) -> Self {
        if exact { Self::integers(shape, seed) } else { Self::random(shape, seed) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The default inputs are multiples of 2⁻²²; the full ones mostly are not.
    #[test]
    fn full_inputs_use_every_bit_of_the_significand() {
        let s = Shape::new(64, 64, 64).unwrap();
        let on_grid = |m: &Matrix| m.data.iter().filter(|&&x| (x * 4_194_304.0).fract() == 0.0).count();
        let (coarse, full) = (Inputs::random(s, 3), Inputs::random_full(s, 3));
        assert_eq!(on_grid(&coarse.a), 64 * 64);
        // Values of [½, 1) fall on the grid one time in four, smaller ones more rarely.
        assert!(on_grid(&full.a) < 64 * 64 / 4, "{}", on_grid(&full.a));
        assert!(full.a.data.iter().all(|x| (-1.0..=1.0).contains(x)));
    }

    #[test]
    fn shapes_reject_zero_and_oversized_dimensions() {
        assert!(Shape::new(0, 4, 4).is_err());
        assert!(Shape::new(4, 0, 4).is_err());
        assert!(Shape::new(4, 4, 0).is_err());
        let err = Shape::new(70_000, 70_000, 1).unwrap_err();
        assert!(err.contains("C would have"), "{err}");
        assert!(Shape::new(1, 1, 1).is_ok());
        assert!(Shape::new(46_340, 46_340, 1).is_ok());
    }

    #[test]
    fn flops_and_bytes() {
        let s = Shape::new(2, 3, 4).unwrap();
        assert_eq!(s.flops(), 48.0);
        assert_eq!(s.f32_bytes(), 4 * (8 + 12 + 6));
        assert_eq!(s.to_string(), "M=2 N=3 K=4");
    }

    #[test]
    fn random_fill_is_seeded_in_range_and_not_constant() {
        let s = Shape::new(33, 17, 65).unwrap();
        let x = Inputs::random(s, 7);
        let y = Inputs::random(s, 7);
        let z = Inputs::random(s, 8);
        assert_eq!(x.a, y.a);
        assert_eq!(x.b, y.b);
        assert_ne!(x.a, z.a);
        assert_eq!(x.a.data.len(), 33 * 65);
        assert_eq!(x.b.data.len(), 65 * 17);
        assert!(x.a.data.iter().all(|v| (-1.0..=1.0).contains(v)));
        let first = x.a.data[0];
        assert!(x.a.data.iter().any(|&v| v != first));
    }

    #[test]
    fn integer_fill_keeps_every_partial_sum_exact_up_to_k_2_20() {
        let x = Inputs::integers(Shape::new(3, 4, 500).unwrap(), 7);
        assert!(x.exact && !Inputs::random(x.shape, 7).exact);
        for v in x.a.data.iter().chain(&x.b.data) {
            assert!(v.fract() == 0.0 && v.abs() <= INT_MAX as f32);
        }
        assert!(x.a.data.iter().any(|&v| v < 0.0) && x.a.data.iter().any(|&v| v > 0.0));
        let largest_sum = (INT_MAX * INT_MAX) as f64 * (1 << 20) as f64;
        assert!(largest_sum < (1u32 << 24) as f64);
    }
}

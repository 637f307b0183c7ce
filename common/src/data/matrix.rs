//! Row-major f32 matrices and the problem shape.

use std::fmt;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The most elements a matrix may have for a kernel to form every offset into it in a 32-bit
/// `int`; a product with a larger matrix compiles its kernels wide ([`Shape::wide`]).
pub const NARROW_ELEMENTS: usize = i32::MAX as usize;

/// The most elements a matrix may have at all: 2⁴⁸ (a petabyte of f32), past any machine's
/// memory, so that every count of bytes a run makes of its matrices fits in 64 bits.
pub const MAX_ELEMENTS: usize = 1 << 48;

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

/// The seed of [`held_out`]'s shapes.
pub const HELD_OUT_SEED: u64 = 0x6e1d_0075;

/// Shapes no rule of the course is fitted on, to measure it on: `count` shapes with M, N and K
/// each log-uniform over [1, 16384] (rounded to a whole number), redrawn while M·N·K > 2³⁶, from
/// [`HELD_OUT_SEED`]. The same list every time; `compare --held-out` measures it.
pub fn held_out(count: usize) -> Vec<(usize, usize, usize)> {
    held_out_from(HELD_OUT_SEED, count)
}

/// [`held_out`]'s draw from another seed: a fresh set of shapes, for `compare --held-out --seed`.
pub fn held_out_from(seed: u64, count: usize) -> Vec<(usize, usize, usize)> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut side = move || (rng.random_range(0.0..(16384f64).ln())).exp().round().max(1.0) as usize;
    let mut shapes = Vec::with_capacity(count);
    while shapes.len() < count {
        let (m, n, k) = (side(), side(), side());
        if (m as u128) * (n as u128) * (k as u128) <= 1 << 36 {
            shapes.push((m, n, k));
        }
    }
    shapes
}

/// The shape of C = A·B: A is M×K, B is K×N, C is M×N.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Shape {
    pub m: usize,
    pub n: usize,
    pub k: usize,
}

impl Shape {
    /// A shape: all dimensions at least 1, and no matrix past [`MAX_ELEMENTS`]. Whether
    /// it fits in memory is the run's to say (`run/budget.rs`), and whether a kernel's launch can
    /// cover it, the step's.
    pub fn new(m: usize, n: usize, k: usize) -> Result<Self, String> {
        if m == 0 || n == 0 || k == 0 {
            return Err(format!(
                "the shape {m}×{n}×{k} has a zero dimension; M, N and K must each be at least 1"
            ));
        }
        for (name, rows, cols) in [("A", m, k), ("B", k, n), ("C", m, n)] {
            if rows.checked_mul(cols).is_none_or(|e| e > MAX_ELEMENTS) {
                return Err(format!(
                    "{name} would have {rows}×{cols} elements, more than the 2^48 any machine's \
                     memory holds; choose a smaller shape"
                ));
            }
        }
        Ok(Self { m, n, k })
    }

    /// The elements of the largest of A, B and C.
    pub fn largest_matrix(&self) -> usize {
        (self.m * self.k).max(self.k * self.n).max(self.m * self.n)
    }

    /// Whether some matrix has more than [`NARROW_ELEMENTS`] elements, so that an offset
    /// row·ld + col into it can pass 2³¹ − 1: its kernels are then compiled wide
    /// ([`crate::params::WIDE`]), forming such offsets in 64 bits.
    pub fn wide(&self) -> bool {
        self.largest_matrix() > NARROW_ELEMENTS
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
    pub fn at(&self, row: usize, col: usize) -> f32 {
        self.data[row * self.cols + col]
    }

    /// Values drawn uniformly from [-1, 1] with all 24 bits of the significand drawn:
    /// [`Inputs::random`]'s values are multiples of 2⁻²² (the generator's step), these are not.
    pub fn random_full(rows: usize, cols: usize, rng: &mut StdRng) -> Self {
        let data = (0..rows * cols).map(|_| rng.random_range(-1.0f64..=1.0) as f32).collect();
        Self { rows, cols, data }
    }
}

/// Largest magnitude of the exact inputs: |products| ≤ 9, so every partial sum of up to
/// K = 2²⁰ terms stays below 2²⁴ and is an integer f32 holds exactly.
pub const INT_MAX: i32 = 3;

/// The families of random inputs a run can draw (`--inputs KIND`). Each stresses the check or a
/// kernel in its own way: a mean that is not zero makes partial sums grow with K, magnitudes
/// spread over many binades make few terms dominate, a dominant entry per row leaves the rest of
/// the row far below it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Family {
    /// Uniform in [−1, 1] (the default; multiples of 2⁻²², as the course has always drawn them).
    Uniform,
    /// Standard normal.
    Normal,
    /// Uniform in [0, 1]: no cancellation, partial sums grow like K.
    Positive,
    /// Magnitudes e^(σ·z), z standard normal, with random signs.
    LogNormal(f64),
    /// A random sign, a significand uniform in [1, 2) and an exponent drawn uniformly from −E to E.
    Wide(i32),
    /// A uniform in [0, 1] and B's column j row (j mod M) of A: B = Aᵀ when N = M, a Gram matrix.
    Gram,
    /// The identity plus uniform noise in [−ε, ε]: one entry of each row and column dominates.
    IdentityNoise(f64),
    /// Whole numbers from −3 to 3, for which f32 arithmetic is exact (see [`Inputs::integers`]).
    Integers,
    /// Uniform in [0, 1] times 2^−E: every product lies below 2^−2E, among FP32's subnormals
    /// (below 2⁻¹²⁶) for E ≥ 63, while C = Σ of K positive products stays normal once K·2^−2E/4
    /// passes 2⁻¹²⁶ (E = 66 from K = 256).
    Tiny(i32),
    /// Uniform in [−1, 1], then A's column p times 2^s_p and B's row p times 2^−s_p, s_p a whole
    /// number drawn uniformly from −E to E: A·B's terms are the uniform family's exactly, but the
    /// rows of A and the columns of B spread over 2E binades along K, as moving scales between
    /// activations and weights leaves them.
    KScaled(i32),
    /// Uniform in [−1, 1] with a NaN in every 16th row of A (from row 3) and an infinity in every
    /// 16th column of B (from column 5): the rows and columns a step with an FP32 path sends down
    /// it, among others its kernel multiplies.
    NonFinite,
}

/// The largest E of `tiny:E`: products of 2^−2E − 1 and below round to zero in FP32.
pub const TINY_MAX: i32 = 75;
/// The largest E of `kscaled:E`: entries stay below 2^61, far inside FP32's range.
pub const KSCALED_MAX: i32 = 60;

/// The largest E of `wide:E`: products reach 2^(2E+2), and sums of 2²⁰ of them must stay finite.
pub const WIDE_MAX: i32 = 50;

impl Family {
    /// Every family, with the parameters the tests and the book's table use.
    pub const ALL: [Family; 8] = [
        Family::Uniform,
        Family::Normal,
        Family::Positive,
        Family::LogNormal(2.0),
        Family::Wide(20),
        Family::Gram,
        Family::IdentityNoise(1e-3),
        Family::Integers,
    ];

    /// Parses `uniform`, `normal`, `positive`, `lognormal:σ`, `wide:E`, `gram`,
    /// `identity+noise:ε` or `integers`, or says in one sentence what it takes.
    pub fn parse(s: &str) -> Result<Family, String> {
        const KINDS: &str = "uniform, normal, positive, lognormal:σ, wide:E, gram, identity+noise:ε, \
                             integers, tiny:E, kscaled:E or nonfinite";
        let (name, arg) = match s.trim().split_once(':') {
            Some((n, a)) => (n, Some(a)),
            None => (s.trim(), None),
        };
        let number = |what: &str, lo: f64, hi: f64| -> Result<f64, String> {
            let a = arg.ok_or_else(|| format!("'{name}' takes a value: write {name}:{what}"))?;
            match a.trim().parse::<f64>() {
                Ok(v) if v.is_finite() && (lo..=hi).contains(&v) => Ok(v),
                _ => Err(format!("the {what} of {name}, '{a}', must be a number from {lo} to {hi}")),
            }
        };
        let plain = |f: Family| match arg {
            None => Ok(f),
            Some(_) => Err(format!("'{name}' takes no value; write just {name}")),
        };
        match name {
            "uniform" => plain(Family::Uniform),
            "normal" => plain(Family::Normal),
            "positive" => plain(Family::Positive),
            "gram" => plain(Family::Gram),
            "integers" => plain(Family::Integers),
            "nonfinite" => plain(Family::NonFinite),
            "lognormal" => number("σ", 0.0, 4.0).map(Family::LogNormal),
            "wide" | "tiny" | "kscaled" => {
                let max = match name {
                    "wide" => WIDE_MAX,
                    "tiny" => TINY_MAX,
                    _ => KSCALED_MAX,
                };
                let e = number("E", 0.0, f64::from(max))?;
                if e.fract() != 0.0 {
                    return Err(format!("the E of {name}, '{e}', must be a whole number of binades"));
                }
                let e = e as i32;
                Ok(match name {
                    "wide" => Family::Wide(e),
                    "tiny" => Family::Tiny(e),
                    _ => Family::KScaled(e),
                })
            }
            "identity+noise" => number("ε", 0.0, 1.0).map(Family::IdentityNoise),
            _ => Err(format!("'{s}' is not a family of inputs; choose {KINDS}")),
        }
    }

    fn draw(self, rng: &mut StdRng) -> f32 {
        let sign = |rng: &mut StdRng| if rng.random::<bool>() { 1.0 } else { -1.0 };
        match self {
            Family::Uniform | Family::KScaled(_) | Family::NonFinite => rng.random_range(-1.0f32..=1.0),
            Family::Tiny(e) => (rng.random_range(0.0f64..=1.0) * 2f64.powi(-e)) as f32,
            Family::Normal => normal(rng) as f32,
            Family::Positive | Family::Gram => rng.random_range(0.0f64..=1.0) as f32,
            Family::LogNormal(sigma) => (sign(rng) * (sigma * normal(rng)).exp()) as f32,
            Family::Wide(e) => {
                let m: f64 = rng.random_range(1.0..2.0);
                (sign(rng) * m * 2f64.powi(rng.random_range(-e..=e))) as f32
            }
            Family::IdentityNoise(eps) => (eps * rng.random_range(-1.0f64..=1.0)) as f32,
            Family::Integers => rng.random_range(-INT_MAX..=INT_MAX) as f32,
        }
    }
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Family::Uniform => f.write_str("uniform"),
            Family::Normal => f.write_str("normal"),
            Family::Positive => f.write_str("positive"),
            Family::LogNormal(s) => write!(f, "lognormal:{s}"),
            Family::Wide(e) => write!(f, "wide:{e}"),
            Family::Gram => f.write_str("gram"),
            Family::IdentityNoise(e) => write!(f, "identity+noise:{e}"),
            Family::Integers => f.write_str("integers"),
            Family::Tiny(e) => write!(f, "tiny:{e}"),
            Family::KScaled(e) => write!(f, "kscaled:{e}"),
            Family::NonFinite => f.write_str("nonfinite"),
        }
    }
}

/// A standard normal value (Box–Muller).
fn normal(rng: &mut StdRng) -> f64 {
    let u: f64 = rng.random_range(f64::MIN_POSITIVE..1.0);
    let v: f64 = rng.random();
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

/// The two operands of one run, reproducible from the seed.
#[derive(Clone, Debug)]
pub struct Inputs {
    pub shape: Shape,
    pub a: Matrix,
    pub b: Matrix,
    /// Small integers: any correct f32 summation gives the exact result.
    pub exact: bool,
    /// What they are, for the report: a family and its seed, or the files they came from.
    pub source: String,
}

impl Inputs {
    /// Whether A or B holds NaN or an infinity.
    pub fn has_nonfinite(&self) -> bool {
        self.a.data.iter().chain(&self.b.data).any(|v| !v.is_finite())
    }

    /// The same inputs with every NaN and infinity set to zero: the elements of C they do not
    /// reach are unchanged, and the growth of the sums is measured on them.
    pub fn finite_part(&self) -> Inputs {
        let zeroed = |m: &Matrix| Matrix {
            rows: m.rows,
            cols: m.cols,
            data: m.data.iter().map(|&v| if v.is_finite() { v } else { 0.0 }).collect(),
        };
        Inputs { a: zeroed(&self.a), b: zeroed(&self.b), source: self.source.clone(), ..*self }
    }

    /// Independent values uniform in [-1, 1]: the course's default inputs.
    pub fn random(shape: Shape, seed: u64) -> Self {
        Self::family(shape, seed, Family::Uniform)
    }

    /// As [`Inputs::random`], with every bit of each significand drawn (see
    /// [`Matrix::random_full`]): for a product that rounds its operands to integers, whose
    /// error [`Inputs::random`]'s coarser values would hide.
    pub fn random_full(shape: Shape, seed: u64) -> Self {
        let mut rng = StdRng::seed_from_u64(seed);
        let a = Matrix::random_full(shape.m, shape.k, &mut rng);
        let b = Matrix::random_full(shape.k, shape.n, &mut rng);
        Self {
            shape,
            a,
            b,
            exact: false,
            source: format!("uniform [−1, 1] with every significand bit, seed {seed}"),
        }
    }

    /// Whole numbers from -3 to 3. Every product and partial sum is an integer below 2²⁴ for
    /// K up to 2²⁰, so f32 arithmetic is exact in any order (and TF32 holds the operands
    /// exactly): a correct kernel matches the reference bit for bit, and a misplaced or missing
    /// term shows at any K.
    pub fn integers(shape: Shape, seed: u64) -> Self {
        Self::family(shape, seed, Family::Integers)
    }

    /// [`Inputs::integers`] if `exact`, else [`Inputs::random`].
    pub fn new(shape: Shape, seed: u64, exact: bool) -> Self {
        Self::family(shape, seed, if exact { Family::Integers } else { Family::Uniform })
    }

    /// A and B drawn from `family` with `seed`.
    pub fn family(shape: Shape, seed: u64, family: Family) -> Self {
        let mut rng = StdRng::seed_from_u64(seed);
        let Shape { m, n, k } = shape;
        let mut fill = |rows: usize, cols: usize| Matrix {
            rows,
            cols,
            data: (0..rows * cols).map(|_| family.draw(&mut rng)).collect(),
        };
        let mut a = fill(m, k);
        let mut b = match family {
            // Column j of B is row (j mod M) of A.
            Family::Gram => {
                let data = (0..k * n).map(|i| a.data[(i % n) % m * k + i / n]).collect();
                Matrix { rows: k, cols: n, data }
            }
            _ => fill(k, n),
        };
        if let Family::IdentityNoise(_) = family {
            for i in 0..m.min(k) {
                a.data[i * k + i] += 1.0;
            }
            for j in 0..k.min(n) {
                b.data[j * n + j] += 1.0;
            }
        }
        if let Family::KScaled(e) = family {
            // Powers of two: each scaled entry and each product is exact, and a_ip·b_pj unchanged.
            for p in 0..k {
                let s = rng.random_range(-e..=e);
                let (up, down) = (2f32.powi(s), 2f32.powi(-s));
                (0..m).for_each(|i| a.data[i * k + p] *= up);
                b.data[p * n..(p + 1) * n].iter_mut().for_each(|v| *v *= down);
            }
        }
        if family == Family::NonFinite {
            for i in (3..m).step_by(16) {
                a.data[i * k + i % k] = f32::NAN;
            }
            for j in (5..n).step_by(16) {
                b.data[(j % k) * n + j] = if j % 32 == 5 { f32::INFINITY } else { f32::NEG_INFINITY };
            }
        }
        Self { shape, a, b, exact: family == Family::Integers, source: format!("{family}, seed {seed}") }
    }

    /// A and B read from files; their shapes must chain (A is M×K, B is K×N).
    pub fn from_matrices(a: Matrix, b: Matrix, source: String) -> Result<Self, String> {
        if a.cols != b.rows {
            return Err(format!(
                "A is {}×{} and B is {}×{}: A's columns (K = {}) must equal B's rows ({})",
                a.rows, a.cols, b.rows, b.cols, a.cols, b.rows
            ));
        }
        let shape = Shape::new(a.rows, b.cols, a.cols)?;
        Ok(Self { shape, a, b, exact: false, source })
    }
}

/// Bᵀ (N×K, row-major) of a row-major K×N matrix `b`.
pub fn transpose(b: &[f32], k: usize, n: usize) -> Vec<f32> {
    assert_eq!(b.len(), k * n, "B must hold K·N elements");
    let mut bt = vec![0.0f32; k * n];
    for (p, row) in b.chunks_exact(n.max(1)).enumerate() {
        for (j, &v) in row.iter().enumerate() {
            bt[j * k + p] = v;
        }
    }
    bt
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_held_out_shapes_are_fixed_in_range_and_not_the_suite() {
        let shapes = held_out(48);
        assert_eq!(shapes, held_out(48), "the same list every time");
        assert_eq!(shapes, held_out_from(HELD_OUT_SEED, 48));
        let other = held_out_from(HELD_OUT_SEED + 1, 48);
        assert!(other.iter().all(|s| !shapes.contains(s)), "another seed draws other shapes");
        assert_eq!(shapes.len(), 48);
        for &(m, n, k) in &shapes {
            assert!([m, n, k].iter().all(|&s| (1..=16384).contains(&s)), "{m}×{n}×{k}");
            assert!(m * n * k <= 1 << 36, "{m}×{n}×{k}");
            assert!(!SUITE.contains(&(m, n, k)), "{m}×{n}×{k} is in the suite");
        }
        // Log-uniform: short sides and long ones both drawn.
        let sides: Vec<usize> = shapes.iter().flat_map(|&(m, n, k)| [m, n, k]).collect();
        assert!(sides.iter().filter(|&&s| s <= 8).count() >= 10, "{sides:?}");
        assert!(sides.iter().filter(|&&s| s >= 2048).count() >= 10, "{sides:?}");
    }

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
        let err = Shape::new(1 << 24, 1 << 25, 1).unwrap_err();
        assert!(err.contains("C would have 16777216×33554432 elements, more than the 2^48"), "{err}");
        assert!(Shape::new(1 << 24, 1 << 24, 1).is_ok(), "2^48 elements exactly");
        assert!(Shape::new(usize::MAX, 2, 1).is_err(), "a count past usize is refused, not wrapped");
        assert!(Shape::new(1, 1, 1).is_ok());
        assert!(Shape::new(70_000, 70_000, 1).is_ok());
    }

    /// Wide exactly where some matrix passes 2³¹ − 1 elements: A, B or C, each alone.
    #[test]
    fn a_shape_is_wide_exactly_past_narrow_elements() {
        let narrow = [(46_340, 46_340, 1), (2_097_151, 1, 1024), (1, 1 << 20, 2047), (65_535, 32_768, 1)];
        for (m, n, k) in narrow {
            assert!(!Shape::new(m, n, k).unwrap().wide(), "{m}×{n}×{k}");
        }
        // 2^31 − 1 is prime: each matrix at exactly the limit is one row (or column) of it, and
        // still narrow.
        let int = NARROW_ELEMENTS;
        assert!(!Shape::new(1, 1, int).unwrap().wide(), "A and B of 2^31 − 1");
        assert!(!Shape::new(int, 1, 1).unwrap().wide(), "A and C of 2^31 − 1");
        assert!(!Shape::new(1, int, 1).unwrap().wide(), "B and C of 2^31 − 1");
        let wide = [(2_097_152, 1, 1024), (1, 2_097_152, 1024), (2_097_152, 1024, 1), (65_536, 32_768, 8)];
        for (m, n, k) in wide {
            let s = Shape::new(m, n, k).unwrap();
            assert!(s.wide() && s.largest_matrix() == NARROW_ELEMENTS + 1, "{m}×{n}×{k}");
        }
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
    fn every_family_parses_from_what_it_prints_and_bad_kinds_say_why() {
        for f in Family::ALL.into_iter().chain([Family::Tiny(66), Family::KScaled(40)]) {
            assert_eq!(Family::parse(&f.to_string()), Ok(f));
        }
        assert_eq!(Family::parse("lognormal:1.5"), Ok(Family::LogNormal(1.5)));
        for (bad, says) in [
            ("cauchy", "not a family"),
            ("wide", "takes a value"),
            ("wide:51", "from 0 to 50"),
            ("wide:2.5", "whole number"),
            ("lognormal:x", "must be a number"),
            ("identity+noise:2", "from 0 to 1"),
            ("gram:3", "takes no value"),
            ("tiny:76", "from 0 to 75"),
            ("kscaled:61", "from 0 to 60"),
            ("kscaled:1.5", "whole number"),
        ] {
            let e = Family::parse(bad).unwrap_err();
            assert!(e.contains(says) && !e.contains('\n'), "{bad}: {e}");
        }
    }

    #[test]
    fn families_have_the_features_they_are_named_for() {
        let s = Shape::new(40, 30, 50).unwrap();
        let all = |x: &Inputs, f: fn(f32) -> bool| x.a.data.iter().chain(&x.b.data).all(|&v| f(v));
        let mean = |v: &[f32]| v.iter().map(|&x| f64::from(x)).sum::<f64>() / v.len() as f64;
        assert!(all(&Inputs::family(s, 1, Family::Positive), |v| (0.0..=1.0).contains(&v)));
        let normal = Inputs::family(s, 1, Family::Normal);
        let var = normal.a.data.iter().map(|&x| f64::from(x).powi(2)).sum::<f64>() / 2000.0;
        assert!(mean(&normal.a.data).abs() < 0.1 && (0.8..1.2).contains(&var), "{var}");
        let wide = Inputs::family(s, 1, Family::Wide(20));
        assert!(all(&wide, |v| (2f32.powi(-20)..2f32.powi(21)).contains(&v.abs())));
        let exps: std::collections::BTreeSet<i32> =
            wide.a.data.iter().map(|v| v.abs().log2().floor() as i32).collect();
        assert!(exps.len() > 30, "{exps:?}");
        let ln = Inputs::family(s, 1, Family::LogNormal(2.0));
        assert!(ln.a.data.iter().any(|&v| v.abs() > 50.0) && ln.a.data.iter().any(|&v| v.abs() < 0.02));
        assert!(ln.a.data.iter().any(|&v| v < 0.0) && ln.a.data.iter().any(|&v| v > 0.0));
        let gram = Inputs::family(s, 1, Family::Gram);
        for (p, j) in [(0, 0), (7, 3), (49, 29)] {
            assert_eq!(gram.b.at(p, j), gram.a.at(j % 40, p));
        }
        let id = Inputs::family(s, 1, Family::IdentityNoise(1e-3));
        for i in 0..40 {
            for p in 0..50 {
                let v = id.a.at(i, p);
                assert!(if i == p { (v - 1.0).abs() <= 1e-3 } else { v.abs() <= 1e-3 }, "{i} {p} {v}");
            }
        }
        assert!(Inputs::family(s, 1, Family::Integers).exact && !gram.exact);
        // Tiny: every product among FP32's subnormals.
        let tiny = Inputs::family(s, 1, Family::Tiny(66));
        assert!(all(&tiny, |v| (0.0..=2f32.powi(-66)).contains(&v)));
        // K-scaled: the products are the uniform family's, bit for bit; the entries are not.
        let (ks, u) = (Inputs::family(s, 1, Family::KScaled(12)), Inputs::random(s, 1));
        assert_ne!(ks.a, u.a);
        for (i, j, p) in [(0, 0, 0), (39, 29, 49), (5, 7, 11)] {
            assert_eq!(ks.a.at(i, p) * ks.b.at(p, j), u.a.at(i, p) * u.b.at(p, j));
        }
        let exps: std::collections::BTreeSet<i32> =
            ks.a.data.iter().map(|v| v.abs().log2().floor() as i32).collect();
        assert!(exps.len() > 15, "{exps:?}");
        assert_eq!(gram.source, "gram, seed 1");
        // The default is the same matrices as before the families existed.
        assert_eq!(Inputs::random(s, 9).a, Inputs::new(s, 9, false).a);
    }

    #[test]
    fn matrices_from_files_must_chain() {
        let m = |rows, cols| Matrix { rows, cols, data: vec![1.0; rows * cols] };
        let x = Inputs::from_matrices(m(3, 4), m(4, 5), "files".into()).unwrap();
        assert_eq!(x.shape, Shape::new(3, 5, 4).unwrap());
        let e = Inputs::from_matrices(m(3, 4), m(5, 5), "files".into()).unwrap_err();
        assert!(e.contains("A's columns (K = 4) must equal B's rows (5)"), "{e}");
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

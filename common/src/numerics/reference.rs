//! The f64 reference result that every kernel is checked against.
//!
//! It is computed by implementations that share no code with the kernels: the `matrixmultiply`
//! crate's DGEMM on the CPU (threaded over row bands here), or cuBLAS DGEMM on the device
//! (see [`crate::cublas`]). Besides C = A·B it measures what the limits of [`crate::verify`] are
//! derived from, all from the data itself: |A|·|B|, which the per-element bound scales with;
//! S² = Σ_ij Σ_p (a_ip·b_pj)², the squared terms; and how the partial sums of the dot products
//! grow along K (see [`Growth`]), which sets how large a correct kernel's rounding errors are.

use std::sync::Mutex;

use anyhow::Result;

use crate::matrix::{Inputs, Shape};
use crate::progress;

/// C = A·B and |A|·|B|, both accumulated in f64 from the f32 inputs, and the growth of the
/// partial sums.
#[derive(Clone, Debug)]
pub struct Reference {
    pub c: Vec<f64>,
    pub abs: Vec<f64>,
    /// What the normwise limit is derived from.
    pub growth: Growth,
    /// The inputs were small integers: C must be matched exactly.
    pub exact: bool,
    /// Which implementation produced it, for the report.
    pub source: &'static str,
}

/// Points along K at which the partial products are measured (fewer when K is shorter).
pub const CHUNKS: usize = 16;

/// Products per tensor-core add (the k of the TF32 instructions the course uses).
pub const GROUP: usize = 8;

/// What the data says about the size of a correct kernel's rounding errors, all summed over the
/// elements of C: the normwise limit of [`crate::verify`] is derived from it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Growth {
    /// S² = Σ_ij Σ_p (a_ip·b_pj)²: the squared terms.
    pub terms_sq: f64,
    /// Σ_ij Σ_k s_k², the squared partial sums of every dot product summed in the order of p:
    /// measured at [`CHUNKS`] points along K and filled in between (see [`compute`]). For inputs
    /// of mean zero it is about (K + 1)/2·S²; where the terms do not cancel it grows like K·‖C‖².
    pub partial_sq: f64,
    /// ‖C‖²_F.
    pub norm_sq: f64,
    /// ‖H‖²_F, H_ij = Σ_g s_g the sum of the partial sums after each group of [`GROUP`] terms:
    /// what the tensor cores' adds, each rounding toward zero, err by together.
    pub coherent_sq: f64,
    /// ⟨C, H⟩.
    pub coherent_dot: f64,
    /// β: the mean relative error of one f32 add rounded to nearest that points toward zero, in
    /// units of u, where a sample of the dot products shows one (see [`rounding_bias`]); 0 where
    /// the sums' errors cancel.
    pub bias: f64,
    /// β_TC: the same for the tensor cores' sums, from a sample of the dot products summed as
    /// [`tensor_core_dot`] does (see [`tensor_core_bias`]); 0 where the sample shows none.
    pub tc_bias: f64,
    /// (Σ g)²/Σ g² with g_ij = c_ij² + T_ij/2 (T = (A∘A)·(B∘B)): how many elements share the error
    /// evenly; fewer than M·N when the magnitudes are spread out.
    pub spread: f64,
    /// What rounding A's rows and B's columns to integers, without bias, at the scale of a
    /// product of seven moduli may add to ‖ΔC‖² in expectation (step 11's operands:
    /// [`integer_rounding_sq`](crate::numerics::integer_rounding::integer_rounding_sq)).
    pub integer_rounding_sq: f64,
    /// The elements the normwise check sums (those of C within f32's range): each may lose to
    /// FP32's underflow what [`underflow_sq`](crate::verify::underflow_sq) counts.
    pub elements: f64,
    /// K, the length of every dot product.
    pub k: usize,
}

impl Growth {
    /// The expectation of every quantity for independent inputs of mean zero, per unit of S²:
    /// the model the course's default inputs follow, where no data is at hand.
    pub fn mean_zero(shape: Shape) -> Growth {
        let k = shape.k as f64;
        let g = shape.k.div_ceil(GROUP) as f64;
        Growth {
            terms_sq: 1.0,
            partial_sq: (k + 1.0) / 2.0,
            norm_sq: 1.0,
            coherent_sq: (g + 1.0) * (2.0 * g + 1.0) / 6.0,
            coherent_dot: (g + 1.0) / 2.0,
            bias: 0.0,
            tc_bias: 0.0,
            spread: shape.m as f64 * shape.n as f64,
            // Inputs uniform in [−1, 1] with every bit drawn: ‖a‖² = K/3 for every row and column,
            // so R = ½·M·N·(K/3)·4^−e against S² = M·N·K/9. (The default inputs, multiples of 2⁻²²,
            // are held exactly up to K = 4096, and round less beyond.)
            integer_rounding_sq: 1.5
                * 4f64.powi(-crate::numerics::integer_rounding::integer_exponent(k / 3.0, shape.k)),
            // Per unit of S², underflow's absolute errors are of no size.
            elements: 0.0,
            k: shape.k,
        }
    }
}

/// Σ_p ‖column p of A‖²·‖row p of B‖² over p in `range`: the squared terms of every dot product
/// that fall in it, in O(MK + KN).
pub fn terms_sq_in(inputs: &Inputs, range: std::ops::Range<usize>) -> f64 {
    let Shape { m: _, n, k } = inputs.shape;
    let mut col_a = vec![0.0f64; range.len()];
    for row in inputs.a.data.chunks(k) {
        for (s, &v) in col_a.iter_mut().zip(&row[range.clone()]) {
            *s += f64::from(v) * f64::from(v);
        }
    }
    inputs.b.data[range.start * n..range.end * n]
        .chunks(n)
        .zip(&col_a)
        .map(|(row, ca)| ca * row.iter().map(|&v| f64::from(v).powi(2)).sum::<f64>())
        .sum()
}

/// S² = Σ_ij Σ_p (a_ip·b_pj)², the sum of every squared term of every dot product.
pub fn terms_sq(inputs: &Inputs) -> f64 {
    terms_sq_in(inputs, 0..inputs.shape.k)
}

/// What computes the reference's products in f64: the CPU or cuBLAS. It holds one pair of
/// operands and one M×N accumulator at a time.
pub trait Engine {
    /// Takes A (M×K) and B (K×N), row-major, and sets the accumulator to zero.
    fn load(&mut self, a: Vec<f64>, b: Vec<f64>) -> Result<()>;
    /// Accumulator += A[:, range] · B[range, :].
    fn accumulate(&mut self, range: std::ops::Range<usize>) -> Result<()>;
    /// ‖accumulator‖²_F.
    fn norm_sq(&mut self) -> Result<f64>;
    /// The accumulator, row-major M×N.
    fn result(&mut self) -> Result<Vec<f64>>;
}

/// `op` of every element of `v`, in f64, on every core: the reference's copies of A and B are its
/// longest work on the host (a matrix of 2³¹ elements takes 17 GB each time), and each element's
/// value is the same whichever thread makes it.
fn in_f64(v: &[f32], op: fn(f64) -> f64) -> Vec<f64> {
    let mut out = vec![0.0f64; v.len()];
    let workers = std::thread::available_parallelism().map_or(1, |p| p.get());
    let part = v.len().div_ceil(workers).max(1 << 16);
    std::thread::scope(|scope| {
        for (to, from) in out.chunks_mut(part).zip(v.chunks(part)) {
            scope.spawn(move || to.iter_mut().zip(from).for_each(|(t, &x)| *t = op(f64::from(x))));
        }
    });
    out
}

/// The reference by `engine`: C in [`CHUNKS`] slices of K, measuring ‖C‖² after each (the
/// partial products), then |A|·|B|, (A∘A)·(B∘B) for how the error spreads over the elements, and
/// C weighted by the number of tensor-core groups each term is summed into.
pub fn compute(engine: &mut dyn Engine, inputs: &Inputs, source: &'static str) -> Result<Reference> {
    let Shape { m, n, k } = inputs.shape;
    let f = in_f64;
    // With NaN or infinities in the inputs, the growth is measured on their finite part (which
    // leaves every finite element of C as it is), and C and |A|·|B| on the inputs themselves.
    let special = inputs.has_nonfinite();
    let finite_part;
    let whole = inputs;
    let inputs = if special {
        finite_part = whole.finite_part();
        &finite_part
    } else {
        whole
    };
    let (a, b) = (&inputs.a.data, &inputs.b.data);

    engine.load(f(a, |x| x), f(b, |x| x))?;
    let chunks = CHUNKS.min(k);
    let (mut partial_sq, mut before) = (0.0, 0.0);
    for j in 0..chunks {
        let range = j * k / chunks..(j + 1) * k / chunks;
        let len = range.len() as f64;
        engine.accumulate(range.clone())?;
        let after = engine.norm_sq()?;
        // The partial sums after each of the chunk's `len` terms: a straight path from the last
        // measured point to this one, whose squares lie under the chord between the two
        // (convexity), plus the wander of a sum of `len` terms pinned at both ends (a bridge:
        // (len² − 1)/(6·len) of its terms' squares). With one term a chunk, it is exact.
        partial_sq += (len - 1.0) / 2.0 * before
            + (len + 1.0) / 2.0 * after
            + (len * len - 1.0) / (6.0 * len) * terms_sq_in(inputs, range);
        before = after;
    }
    let mut c = engine.result()?;

    let (wa, wb) = (&whole.a.data, &whole.b.data);
    engine.load(f(wa, f64::abs), f(wb, f64::abs))?;
    engine.accumulate(0..k)?;
    let abs = engine.result()?;

    engine.load(f(a, |x| x * x), f(b, |x| x * x))?;
    engine.accumulate(0..k)?;
    let squares = engine.result()?;
    // g_ij = c_ij² + T_ij/2 is, up to a factor, the expected Σ_k s_k² of element ij: the
    // elements share the error in proportion to it.
    let (mut sum_g, mut sum_g2) = (0.0, 0.0);
    for (cv, t) in c.iter().zip(&squares) {
        let g = cv * cv + t / 2.0;
        sum_g += g;
        sum_g2 += g * g;
    }
    drop(squares);

    // Row p of B weighted by how many groups of GROUP terms, from p's own to the last, add it.
    let groups = k.div_ceil(GROUP);
    let mut weighted = f(b, |x| x);
    for (p, row) in weighted.chunks_mut(n.max(1)).enumerate() {
        let w = (groups - p / GROUP) as f64;
        row.iter_mut().for_each(|v| *v *= w);
    }
    engine.load(f(a, |x| x), weighted)?;
    engine.accumulate(0..k)?;
    let h = engine.result()?;
    let coherent_sq = h.iter().map(|v| v * v).sum();
    let coherent_dot = h.iter().zip(&c).map(|(x, y)| x * y).sum();
    drop(h);
    if special {
        engine.load(f(wa, |x| x), f(wb, |x| x))?;
        engine.accumulate(0..k)?;
        c = engine.result()?;
    }

    let growth = Growth {
        terms_sq: terms_sq(inputs),
        partial_sq,
        // Over the elements the normwise check sums, those within f32's range (an infinity or a
        // NaN of the whole inputs would make every limit zero).
        norm_sq: c.iter().filter(|v| v.abs() <= f64::from(f32::MAX)).map(|v| v * v).sum(),
        coherent_sq,
        coherent_dot,
        bias: rounding_bias(inputs),
        tc_bias: tensor_core_bias(inputs),
        spread: if sum_g2 > 0.0 { sum_g * sum_g / sum_g2 } else { (m * n) as f64 },
        integer_rounding_sq: crate::numerics::integer_rounding::integer_rounding_sq(whole),
        elements: c.iter().filter(|v| v.abs() <= f64::from(f32::MAX)).count() as f64,
        k,
    };
    Ok(Reference { c, abs, growth, exact: whole.exact, source })
}

/// Dot products [`rounding_bias`] sums in f32.
pub const BIAS_SAMPLE: usize = 64;

/// Whether f32 adds rounded to nearest lose a share of the terms in one direction on these
/// inputs, and how much, from [`BIAS_SAMPLE`] of the dot products summed one term after another.
///
/// Rounding to nearest errs by as much up as down when a term's bits below the sum's last place
/// are spread evenly. They are not when many terms are far smaller than the sum they are added to
/// (a long K whose terms do not cancel, many of them near zero): those are lost, all in the same
/// direction, and the error grows like u·Σ_k s_k rather than like u·√(Σ_k s_k²). The sample fits
/// e = −β·u·Σ_k s_k by least squares and returns β where it stands three standard errors above
/// zero, else 0.
pub fn rounding_bias(inputs: &Inputs) -> f64 {
    sampled_bias(inputs, |i, j| {
        let (mut acc, mut exact, mut path) = (0.0f32, 0.0f64, 0.0f64);
        for p in 0..inputs.shape.k {
            let (a, b) = (inputs.a.at(i, p), inputs.b.at(p, j));
            acc = a.mul_add(b, acc);
            exact += f64::from(a) * f64::from(b);
            path += exact;
        }
        (f64::from(acc) - exact, path)
    })
}

/// Bits the tensor cores keep below an f32 significand when they line up the products of a group
/// and the accumulator (see [`tensor_core_dot`]).
pub const ALIGN_BITS: i32 = 2;

/// `x` rounded to nearest, ties away from zero, keeping `bits` stored fraction bits (1 to 22).
pub fn keep_bits(x: f32, bits: u32) -> f32 {
    let drop = 23 - bits;
    f32::from_bits((x.to_bits() + (1 << (drop - 1))) & !((1u32 << drop) - 1))
}

/// `x` rounded to TF32 (10 stored fraction bits) to nearest, ties away from zero.
pub fn tf32(x: f32) -> f32 {
    keep_bits(x, 10)
}

/// A dot product of `k` terms summed as the tensor cores sum it: a group of [`GROUP`] exact
/// products and the f32 accumulator are lined up on the largest one's exponent, each cut toward
/// zero to [`ALIGN_BITS`] bits below that exponent's f32 last place, added exactly, and the sum
/// cut toward zero to f32. With mixed signs the cuts cancel, and the accumulator's own cut
/// (about 0.72·u of it on average) is what remains; where the terms share the sum's sign (a
/// positive product, a Gram matrix), every product smaller than the sum loses its low bits in
/// the same direction too, and the error about doubles. On an H100, step 07's mma.sync at
/// 64×64×65536 erred by ‖ΔC‖/‖C‖ = 4.5·10⁻⁴ on positive inputs (the families record of
/// 2026-11-23) and 3.0·10⁻⁴ on uniform ones (the limits record of 2026-11-22); this model, on
/// 8×8×65536 of the same families, by 4.5·10⁻⁴ and, over the seeds 5, 21 and 42, 2.6 to
/// 3.5·10⁻⁴ (with no extra bits 13·10⁻⁴ and 2.1·10⁻⁴ at seed 5; with three, 3.0·10⁻⁴ and
/// 2.7·10⁻⁴). The two bits are fitted to the first figure.
pub fn tensor_core_dot(k: usize, term: impl Fn(usize) -> f64) -> f32 {
    let mut acc = 0.0f32;
    let mut group = [0.0f64; GROUP];
    for p0 in (0..k).step_by(GROUP) {
        let len = GROUP.min(k - p0);
        group[..len].iter_mut().enumerate().for_each(|(q, v)| *v = term(p0 + q));
        acc = tensor_core_add(acc, &group[..len]);
    }
    acc
}

/// One tensor-core add of [`tensor_core_dot`]: `acc` plus the exact products of one group.
pub fn tensor_core_add(acc: f32, group: &[f64]) -> f32 {
    let top = group.iter().fold(f64::from(acc).abs(), |t, v| t.max(v.abs()));
    if top == 0.0 || !top.is_finite() {
        return (f64::from(acc) + group.iter().sum::<f64>()) as f32;
    }
    // The f32 last place of the largest addend (read from its exponent bits; f32's last place
    // stops shrinking at its smallest normal exponent), ALIGN_BITS finer: every addend is cut to it.
    let exponent = (((top.to_bits() >> 52) & 0x7ff) as i32 - 1023).max(-126);
    let quantum = 2f64.powi(exponent - 23 - ALIGN_BITS);
    let cut = |v: f64| (v / quantum).trunc() * quantum;
    toward_zero(cut(f64::from(acc)) + group.iter().map(|&v| cut(v)).sum::<f64>())
}

/// `v` rounded to f32 toward zero; beyond f32's range, an infinity (as the tensor cores give).
fn toward_zero(v: f64) -> f32 {
    if v.abs() > f64::from(f32::MAX) {
        return if v > 0.0 { f32::INFINITY } else { f32::NEG_INFINITY };
    }
    let r = v as f32;
    if f64::from(r).abs() > v.abs() { f32::from_bits(r.to_bits() - 1) } else { r }
}

/// The tensor cores' counterpart of [`rounding_bias`]: [`BIAS_SAMPLE`] of the dot products, their
/// operands rounded to TF32, summed by [`tensor_core_dot`], and e = −β_TC·u·H fitted, H = Σ_g s_g
/// the partial sums after each group (what the model's coherent term scales). For inputs of
/// mean zero β_TC comes out near 0.5 to 0.7, under the model's C_RZ; where the products share
/// the sum's sign, near 1.8.
pub fn tensor_core_bias(inputs: &Inputs) -> f64 {
    sampled_bias(inputs, |i, j| {
        let k = inputs.shape.k;
        let term = |p: usize| f64::from(tf32(inputs.a.at(i, p))) * f64::from(tf32(inputs.b.at(p, j)));
        let (mut exact, mut path) = (0.0f64, 0.0f64);
        for p in 0..k {
            exact += term(p);
            if (p + 1) % GROUP == 0 || p + 1 == k {
                path += exact;
            }
        }
        (f64::from(tensor_core_dot(k, term)) - exact, path)
    })
}

/// Fits e = −β·u·w over [`BIAS_SAMPLE`] dot products (every element of a small C, else a seeded
/// sample), `sum(i, j)` giving element ij's error e and weight w; β where it stands three
/// standard errors above zero (for one dot product: its own, where it points toward zero), else 0.
fn sampled_bias(inputs: &Inputs, sum: impl Fn(usize, usize) -> (f64, f64)) -> f64 {
    use rand::{Rng, SeedableRng};
    let Shape { m, n, k: _ } = inputs.shape;
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x5eed);
    let u = f64::from(f32::EPSILON) / 2.0;
    let (mut ew, mut ww, mut samples) = (0.0, 0.0, Vec::new());
    let elements: Vec<(usize, usize)> = if m * n <= BIAS_SAMPLE {
        (0..m * n).map(|e| (e / n, e % n)).collect()
    } else {
        (0..BIAS_SAMPLE).map(|_| (rng.random_range(0..m), rng.random_range(0..n))).collect()
    };
    for (i, j) in elements {
        let (e, path) = sum(i, j);
        let w = u * path;
        if !(e.is_finite() && w.is_finite()) {
            return 0.0;
        }
        ew += e * w;
        ww += w * w;
        samples.push((e, w));
    }
    if ww == 0.0 {
        return 0.0;
    }
    let beta = -ew / ww;
    if samples.len() == 1 {
        return beta.max(0.0);
    }
    let residual: f64 =
        samples.iter().map(|(e, w)| (e + beta * w).powi(2)).sum::<f64>() / (samples.len() - 1) as f64;
    let standard_error = (residual / ww).sqrt();
    if beta > 3.0 * standard_error { beta } else { 0.0 }
}

/// Rows of C each worker computes per call: small enough for a smooth progress bar,
/// large enough to keep DGEMM efficient.
const BAND_ROWS: usize = 64;

/// The CPU's engine: matrixmultiply's DGEMM over bands of rows, on every core.
struct Cpu {
    shape: Shape,
    a: Vec<f64>,
    b: Vec<f64>,
    c: Vec<f64>,
    bar: indicatif::ProgressBar,
}

impl Engine for Cpu {
    fn load(&mut self, a: Vec<f64>, b: Vec<f64>) -> Result<()> {
        (self.a, self.b) = (a, b);
        self.c.iter_mut().for_each(|v| *v = 0.0);
        Ok(())
    }

    fn accumulate(&mut self, range: std::ops::Range<usize>) -> Result<()> {
        let Shape { m: _, n, k } = self.shape;
        let (a, b) = (&self.a, &self.b);
        let bands = Mutex::new(self.c.chunks_mut(BAND_ROWS * n).enumerate().collect::<Vec<_>>());
        let workers = std::thread::available_parallelism().map_or(1, |p| p.get());
        let bar = &self.bar;
        std::thread::scope(|scope| {
            for _ in 0..workers {
                scope.spawn(|| {
                    while let Some((band, c_band)) = bands.lock().ok().and_then(|mut v| v.pop()) {
                        let rows = c_band.len() / n;
                        let a0 = band * BAND_ROWS * k + range.start;
                        dgemm_rows(rows, n, range.len(), k, &a[a0..], &b[range.start * n..], c_band);
                        bar.inc(range.len() as u64);
                    }
                });
            }
        });
        Ok(())
    }

    fn norm_sq(&mut self) -> Result<f64> {
        Ok(self.c.iter().map(|v| v * v).sum())
    }

    fn result(&mut self) -> Result<Vec<f64>> {
        Ok(self.c.clone())
    }
}

/// The reference on the CPU, on every core.
pub fn cpu(inputs: &Inputs) -> Reference {
    let s = inputs.shape;
    let bands = s.m.div_ceil(BAND_ROWS) as u64;
    // Four products of K terms each; the bar counts terms per band.
    let bar = progress::bar("reference", 4 * bands * s.k as u64, 4.0 * s.flops());
    let mut engine = Cpu { shape: s, a: vec![], b: vec![], c: vec![0.0; s.m * s.n], bar };
    let r = compute(&mut engine, inputs, "CPU DGEMM").expect("the CPU engine does not fail");
    engine.bar.finish_and_clear();
    r
}

/// `c[..rows×n] += a[..rows, ..k] · b[..k, ..n]`, row-major, A's rows `lda` apart.
fn dgemm_rows(rows: usize, n: usize, k: usize, lda: usize, a: &[f64], b: &[f64], c: &mut [f64]) {
    assert!(rows == 0 || (a.len() >= (rows - 1) * lda + k && b.len() >= k * n && c.len() >= rows * n));
    if rows == 0 || k == 0 {
        return;
    }
    // SAFETY: the assertion above keeps every access of the row-major strides in bounds.
    unsafe {
        matrixmultiply::dgemm(
            rows,
            k,
            n,
            1.0,
            a.as_ptr(),
            lda as isize,
            1,
            b.as_ptr(),
            n as isize,
            1,
            1.0,
            c.as_mut_ptr(),
            n as isize,
            1,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plain f64 triple loop, the definition of the product.
    fn by_definition(inputs: &Inputs) -> Vec<f64> {
        let Shape { m, n, k } = inputs.shape;
        let mut c = vec![0.0; m * n];
        for i in 0..m {
            for j in 0..n {
                c[i * n + j] =
                    (0..k).map(|p| f64::from(inputs.a.at(i, p)) * f64::from(inputs.b.at(p, j))).sum();
            }
        }
        c
    }

    #[test]
    fn cpu_reference_matches_the_definition_across_bands() {
        for (m, n, k) in [(1, 1, 1), (7, 3, 5), (130, 33, 17), (65, 1, 129)] {
            let inputs = Inputs::random(Shape::new(m, n, k).unwrap(), 3);
            let r = cpu(&inputs);
            let want = by_definition(&inputs);
            for (got, want) in r.c.iter().zip(&want) {
                assert!((got - want).abs() <= 1e-12 * (1.0 + want.abs()), "{got} vs {want}");
            }
            for (i, abs) in r.abs.iter().enumerate() {
                assert!(*abs >= r.c[i].abs() - 1e-12);
            }
            let squares: f64 = (0..m * n)
                .map(|e| {
                    let (i, j) = (e / n, e % n);
                    (0..k)
                        .map(|p| (f64::from(inputs.a.at(i, p)) * f64::from(inputs.b.at(p, j))).powi(2))
                        .sum::<f64>()
                })
                .sum();
            let g = &r.growth;
            assert!((g.terms_sq - squares).abs() <= 1e-12 * squares, "{} vs {squares}", g.terms_sq);
            // Σ_ij Σ_k s_k² in the order of p, against its estimate from the chunks.
            let partial: f64 = (0..m * n)
                .map(|e| {
                    let (i, j) = (e / n, e % n);
                    let mut s = 0.0;
                    (0..k)
                        .map(|p| {
                            s += f64::from(inputs.a.at(i, p)) * f64::from(inputs.b.at(p, j));
                            s * s
                        })
                        .sum::<f64>()
                })
                .sum();
            if k <= CHUNKS {
                // Every partial sum is measured.
                assert!((g.partial_sq - partial).abs() <= 1e-12 * partial, "{} vs {partial}", g.partial_sq);
            } else {
                assert!((g.partial_sq / partial - 1.0).abs() < 0.35, "{} vs {partial}", g.partial_sq);
            }
        }
    }
}

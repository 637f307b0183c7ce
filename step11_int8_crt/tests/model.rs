//! A CPU model of step 11's arithmetic, bit for bit where it matters: each row of A and column of
//! B scaled by the power of two the kernel picks (`exponent_for`), rounded to integers, their
//! product exact (what the residues and the rebuild give while |c′| < P/2), scaled back. It shows
//! on the CPU why the step loses FP32 on rows whose entries lie far below their norm, and what a
//! second level (the rounding residue scaled again and multiplied too) would buy, and models the
//! rule by which the step computes apart, in FP32, the rows and columns its scaling cannot carry,
//! and the bound of |A||B| by which it chooses how many moduli the others take.

use common::matrix::{Family, Matrix};
use common::testing::SHAPES;
use common::verify::{Verdict, verify};
use common::{Inputs, Precision, Shape, reference};
use step11_int8_crt::residues;

use residues::exponent as exponent_for;

/// The kernel's `Coins`: the coins of a run of entries, 1 + t each, from a hash of the run's place
/// (its first key) stepped by a linear congruential sequence, t its top 23 bits.
fn coins(key_of_run: u32, count: usize) -> Vec<f64> {
    let mut key = key_of_run;
    key ^= key >> 16;
    key = key.wrapping_mul(0x85EB_CA6B);
    key ^= key >> 13;
    key = key.wrapping_mul(0xC2B2_AE35);
    let mut x = key ^ key >> 16;
    (0..count)
        .map(|_| {
            x = x.wrapping_mul(0x2C92_77B5).wrapping_add(0xAC56_4B05);
            f64::from(f32::from_bits(0x3F80_0000 | x >> 9))
        })
        .collect()
}

/// Which operand a vector belongs to: the kernel's `key_a` and `key_b` give the place of entry
/// k of row i of A, or of column j of B.
#[derive(Clone, Copy)]
enum OperandSide {
    A,
    B,
}

fn key(operand: OperandSide, vector: usize, k: usize) -> u32 {
    match operand {
        OperandSide::A => (vector as u32).wrapping_mul(0x9E37_79B9).wrapping_add(k as u32),
        OperandSide::B => {
            (vector as u32).wrapping_mul(0x7FEB_352D).wrapping_add(k as u32).wrapping_add(0x68E3_1DA4)
        }
    }
}

/// The kernel's `unbiased` rounding of a scaled entry, the k-th of its vector: from K = 4 on, an
/// entry of magnitude 1 or more rounds up where 1 + its fraction is above its coin (that of its
/// place in the first pass's runs of 16), and every other entry rounds to nearest; with `on`
/// false, every entry rounds to nearest.
fn unbiased(v: f64, operand: OperandSide, vector: usize, k_of: usize, k: usize, on: bool) -> i64 {
    if !on || k < 4 || v.abs() < 1.0 {
        return v.round_ties_even() as i64;
    }
    let whole = v.floor();
    let run = k_of - k_of % 16;
    let coin = coins(key(operand, vector, run), k_of % 16 + 1)[k_of % 16];
    (if v - whole + 1.0 > coin { whole + 1.0 } else { whole }) as i64
}

/// Rows (of A, or columns of B) scaled and rounded: the integers and each row's exponent.
struct Scaled {
    ints: Vec<Vec<i64>>,
    exps: Vec<i32>,
}

fn scale(rows: &[Vec<f64>], operand: OperandSide, k: usize, moduli: usize, unbiased_on: bool) -> Scaled {
    let exps: Vec<i32> =
        rows.iter().map(|r| exponent_for(r.iter().map(|v| v * v).sum(), k, moduli)).collect();
    let ints = rows
        .iter()
        .zip(&exps)
        .enumerate()
        .map(|(i, (r, &e))| {
            r.iter()
                .enumerate()
                .map(|(p, &v)| unbiased(v * 2f64.powi(e), operand, i, p, k, unbiased_on))
                .collect()
        })
        .collect();
    Scaled { ints, exps }
}

/// What the rounding left of each row, in the row's own units.
fn residue(rows: &[Vec<f64>], s: &Scaled) -> Vec<Vec<f64>> {
    rows.iter()
        .zip(s.ints.iter().zip(&s.exps))
        .map(|(r, (q, &e))| r.iter().zip(q).map(|(&v, &n)| v - n as f64 * 2f64.powi(-e)).collect())
        .collect()
}

/// C from one or two levels of scaled integers: level 1 alone is the step as it is; with two,
/// A ≈ A₁ + A₂ and B ≈ B₁ + B₂ and C = A₁B₁ + A₁B₂ + A₂B₁ (three integer products).
fn model(x: &Inputs, moduli: usize, levels: usize) -> Vec<f32> {
    model_rounded(x, moduli, levels, true)
}

/// [`model`] with the scaled entries rounded without bias (`unbiased`, the step) or to nearest.
fn model_rounded(x: &Inputs, moduli: usize, levels: usize, unbiased: bool) -> Vec<f32> {
    let Shape { m, n, k } = x.shape;
    let rows: Vec<Vec<f64>> = (0..m).map(|i| (0..k).map(|p| f64::from(x.a.at(i, p))).collect()).collect();
    let cols: Vec<Vec<f64>> = (0..n).map(|j| (0..k).map(|p| f64::from(x.b.at(p, j))).collect()).collect();
    let (a1, b1) = (
        scale(&rows, OperandSide::A, k, moduli, unbiased),
        scale(&cols, OperandSide::B, k, moduli, unbiased),
    );
    let mut parts = vec![(&a1, &b1)];
    let (a2, b2);
    if levels == 2 {
        a2 = scale(&residue(&rows, &a1), OperandSide::A, k, moduli, unbiased);
        b2 = scale(&residue(&cols, &b1), OperandSide::B, k, moduli, unbiased);
        parts.push((&a1, &b2));
        parts.push((&a2, &b1));
    }
    let mut c = vec![0.0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut sum = 0.0f64;
            for (a, b) in &parts {
                let exact: i128 =
                    a.ints[i].iter().zip(&b.ints[j]).map(|(&p, &q)| i128::from(p) * i128::from(q)).sum();
                assert!((exact.unsigned_abs() as f64) < residues::product(moduli) as f64 / 2.0);
                sum += exact as f64 * 2f64.powi(-(a.exps[i] + b.exps[j]));
            }
            c[i * n + j] = sum as f32;
        }
    }
    c
}

/// The kernel's rule for rows and columns computed apart (`apart_rule` in kernel.cu): an entry
/// other than zero is small when its scaled value (a float) is below 2²⁷/K; q is an operand's
/// largest ‖·‖∞/‖·‖₁ (as a float); a vector with s > 0 small entries and z zeros is computed apart
/// when (2s + z)·q > 1, q of the other operand. Returns which rows and which columns are.
fn apart(rows: &[Vec<f64>], cols: &[Vec<f64>], k: usize, moduli: usize) -> (Vec<bool>, Vec<bool>) {
    let limit = 134_217_728.0f32 / k as f32;
    let stats = |vectors: &[Vec<f64>]| -> (Vec<(i32, i32)>, f32) {
        let mut q = 0.0f32;
        let counts = vectors
            .iter()
            .map(|v| {
                let (l1, linf) = v.iter().fold((0.0f64, 0.0f64), |(s, m), x| (s + x.abs(), m.max(x.abs())));
                if l1 > 0.0 {
                    q = q.max((linf / l1) as f32);
                }
                let e = exponent_for(v.iter().map(|x| x * x).sum(), k, moduli);
                let small =
                    v.iter().filter(|&&x| x != 0.0 && ((x * 2f64.powi(e)) as f32).abs() < limit).count();
                let zeros = v.iter().filter(|&&x| x == 0.0).count();
                ((2 * small + zeros) as i32, small as i32)
            })
            .collect();
        (counts, q)
    };
    let ((s_a, q_a), (s_b, q_b)) = (stats(rows), stats(cols));
    let out = |s: &[(i32, i32)], q: f32| s.iter().map(|&(w, s)| s > 0 && w as f32 * q > 1.0).collect();
    (out(&s_a, q_b), out(&s_b, q_a))
}

/// The step as it is: one level of seven moduli, and the rows and columns the rule sends apart
/// computed as FP32 dot products, one term after another. Also returns how many rows and
/// columns went apart.
fn step(x: &Inputs) -> (Vec<f32>, usize) {
    let Shape { m, n, k } = x.shape;
    let rows: Vec<Vec<f64>> = (0..m).map(|i| (0..k).map(|p| f64::from(x.a.at(i, p))).collect()).collect();
    let cols: Vec<Vec<f64>> = (0..n).map(|j| (0..k).map(|p| f64::from(x.b.at(p, j))).collect()).collect();
    let (row_apart, col_apart) = apart(&rows, &cols, k, 7);
    let mut c = model(x, 7, 1);
    for i in 0..m {
        for j in (0..n).filter(|&j| row_apart[i] || col_apart[j]) {
            c[i * n + j] = (0..k).fold(0.0f32, |s, p| x.a.at(i, p).mul_add(x.b.at(p, j), s));
        }
    }
    let count = row_apart.iter().chain(&col_apart).filter(|&&a| a).count();
    (c, count)
}

fn check(x: &Inputs, c: &[f32]) -> Verdict {
    verify(x.shape, c, &reference::cpu(x), Precision::Int8Crt)
}

/// The class shapes small enough for a CPU model of every family in a test.
fn shapes() -> impl Iterator<Item = (usize, usize, usize)> {
    SHAPES.iter().copied().filter(|&(m, n, k)| m * n * k <= 1 << 21)
}

/// One level, seven moduli: the model fails per element on `identity+noise` and `wide` inputs, as
/// the GPU did, and passes on the default inputs.
#[test]
#[ignore = "slow unoptimised: .ci/run runs it in release"]
fn slow_one_level_loses_fp32_on_spread_out_rows_as_the_gpu_did() {
    for (m, n, k) in shapes() {
        let x = Inputs::family(Shape::new(m, n, k).unwrap(), 7, Family::Uniform);
        let v = check(&x, &model(&x, 7, 1));
        assert!(v.passed(), "uniform {m}×{n}×{k}: {}", v.summary());
    }
    for family in [Family::IdentityNoise(0.001), Family::Wide(20)] {
        let x = Inputs::family(Shape::new(64, 64, 64).unwrap(), 7, family);
        let v = check(&x, &model(&x, 7, 1));
        assert!(v.outside > 0, "{family}: {}", v.summary());
    }
}

/// Two levels hold FP32 per element and normwise on every family at every class shape the model
/// runs, with the same seven moduli: the residue of a row keeps the bits its first scaling lost.
#[test]
#[ignore = "slow unoptimised: .ci/run runs it in release"]
fn slow_two_levels_hold_fp32_on_every_family() {
    for family in Family::ALL {
        for (m, n, k) in shapes() {
            let x = Inputs::family(Shape::new(m, n, k).unwrap(), 7, family);
            let v = check(&x, &model(&x, 7, 2));
            assert!(v.passed(), "{family} {m}×{n}×{k}: {}", v.summary());
        }
    }
}
/// The choices side by side, printed for the chapter: seven moduli and one level (the step),
/// more moduli and one level, and two levels of seven or of five. Nine moduli give a row eight
/// more bits, which is enough for `identity+noise:0.001` here (with eight, errors of up to a unit
/// leave its worst element just outside the bound) and not for `wide:20`; two levels of five
/// moduli (fifteen INT8 products against seven) hold every family.
#[test]
#[ignore = "slow unoptimised: .ci/run runs it in release"]
fn slow_more_moduli_or_a_second_level_side_by_side() {
    let failed = |family: Family, (m, n, k): (usize, usize, usize), moduli, levels| {
        let x = Inputs::family(Shape::new(m, n, k).unwrap(), 7, family);
        let v = check(&x, &model(&x, moduli, levels));
        println!(
            "{family} {m}×{n}×{k}, {moduli} moduli, {levels} level(s): {} outside, worst {:.2} of the bound, {:.3} of the normwise limit",
            v.outside,
            v.worst.ratio(),
            v.normwise.ratio()
        );
        !v.passed()
    };
    for family in Family::ALL {
        for shape in [(128, 128, 128), (255, 257, 253)] {
            let spread = matches!(family, Family::Wide(_) | Family::IdentityNoise(_));
            let one = failed(family, shape, 7, 1);
            assert!(!one || spread, "{family} {shape:?}: seven moduli fail");
            assert!(!failed(family, shape, 7, 2) && !failed(family, shape, 5, 2), "{family} {shape:?}");
            if family == Family::IdentityNoise(0.001) {
                assert!(one && !failed(family, shape, 9, 1), "{shape:?}");
            }
        }
    }
    assert!(
        failed(Family::Wide(20), (128, 128, 128), 7, 1) && failed(Family::Wide(20), (128, 128, 128), 8, 1)
    );
}

/// The step's rule, modelled: on every family at every class shape the model runs, and on the
/// identity plus noise of 2⁻²⁰ that failed on the GPU before the rule, one level of seven moduli
/// with the rows and columns the rule sends apart computed in FP32 holds FP32's limits, per
/// element and normwise. And on the course's inputs at a deep shape nothing goes apart, so the
/// step keeps its speed there.
#[test]
#[ignore = "slow unoptimised: .ci/run runs it in release"]
fn slow_the_rule_holds_fp32_on_every_family_and_sends_nothing_apart_on_the_default_inputs() {
    let noise = Family::IdentityNoise(f64::powi(2.0, -20));
    for family in Family::ALL.into_iter().chain([noise]) {
        for (m, n, k) in shapes() {
            let x = Inputs::family(Shape::new(m, n, k).unwrap(), 7, family);
            let (c, _) = step(&x);
            let v = check(&x, &c);
            assert!(v.passed(), "{family} {m}×{n}×{k}: {}", v.summary());
        }
    }
    // A review's counterexamples to an earlier form of the rule: a row with zeros, whose small
    // entry meets the one column entry where the row is not zero; and a row whose small entries
    // underflow to zero once scaled, so that only the input tells they are not zero.
    let k = 64;
    let mut a = Matrix { rows: 1, cols: k, data: vec![0.0; k] };
    a.data[0] = 1.0;
    a.data[1] = 2f32.powi(-30);
    let mut b = Matrix { rows: k, cols: 1, data: vec![1.0; k] };
    b.data[0] = 0.0;
    let x = Inputs::from_matrices(a, b, "a row with zeros".to_owned()).unwrap();
    assert!(check(&x, &step(&x).0).passed(), "a row with zeros");
    let mut a = Matrix { rows: 1, cols: k, data: vec![2f32.powi(-60); k] };
    a.data[0] = 2f32.powi(120);
    let mut b = Matrix { rows: k, cols: 1, data: vec![1.0; k] };
    b.data[0] = 0.0;
    let x = Inputs::from_matrices(a, b, "small entries that underflow once scaled".to_owned()).unwrap();
    assert!(check(&x, &step(&x).0).passed(), "entries that underflow once scaled");
    // The inputs the GPU tests bring as .npy files, all but the one with NaN and infinities.
    for (name, x) in common::testing::real_looking_inputs().into_iter().filter(|(_, x)| !x.has_nonfinite()) {
        let v = check(&x, &step(&x).0);
        assert!(v.passed(), "{name}: {}", v.summary());
    }
    for (m, n, k) in [(64, 64, 4096), (48, 40, 8192)] {
        let x = Inputs::family(Shape::new(m, n, k).unwrap(), 7, Family::Uniform);
        let (c, count) = step(&x);
        assert_eq!(count, 0, "uniform {m}×{n}×{k}: rows or columns sent apart");
        assert!(check(&x, &c).passed());
    }
}

/// x rounded toward zero to an f32, then to a bf16 (the high 16 bits), as the kernel's
/// `bf16_down` does after its exact double product.
fn bf16_down(x: f64) -> f64 {
    let mut f = x as f32;
    if f64::from(f) > x {
        f = f32::from_bits(f.to_bits() - 1);
    }
    f64::from(f32::from_bits(f.to_bits() & 0xFFFF_0000))
}

/// The kernel's bound (`bound_rule`) and `choose_moduli`, modelled: every vector scaled for the
/// first pass's seven; magnitudes |x|·2^(e+23) rounded down to bf16 and raised to 2⁻⁶³ where x is
/// not zero; each element's `lower` (half the sum of their products, less what raising adds);
/// each vector's ratio, the largest over its elements; its need, the fewest moduli from seven
/// whose exponent grows past the ratio (17: none does). `lenient` divides every ratio (1: the
/// kernel). Returns the needs of the rows and of the columns.
fn bound_needs(rows: &[Vec<f64>], cols: &[Vec<f64>], k: usize, lenient: f64) -> (Vec<usize>, Vec<usize>) {
    let floor = 2f64.powi(-63);
    let side = |vectors: &[Vec<f64>]| {
        let exps: Vec<i32> =
            vectors.iter().map(|v| exponent_for(v.iter().map(|x| x * x).sum(), k, 7)).collect();
        let mags: Vec<Vec<f64>> = vectors
            .iter()
            .zip(&exps)
            .map(|(v, &e)| {
                v.iter()
                    .map(|&x| if x == 0.0 { 0.0 } else { bf16_down(x.abs() * 2f64.powi(e + 23)).max(floor) })
                    .collect()
            })
            .collect();
        // ‖x‖₁·2^e + K/2 and 2⁻⁶³·‖x‖₁·2^(e+23): the numerator and the share of raising.
        let norms: Vec<(f64, f64)> = vectors
            .iter()
            .zip(&exps)
            .map(|(v, &e)| {
                let l1: f64 = v.iter().map(|x| x.abs()).sum();
                if l1 == 0.0 { (0.0, 0.0) } else { (l1 * 2f64.powi(e) + k as f64, l1 * 2f64.powi(e - 40)) }
            })
            .collect();
        (exps, mags, norms)
    };
    let ((ea, ma, na), (eb, mb, nb)) = (side(rows), side(cols));
    let (mut row_ratio, mut col_ratio) = (vec![0.0f64; rows.len()], vec![0.0f64; cols.len()]);
    let scale = 2f64.powi(72) / k as f64;
    for i in 0..rows.len() {
        for j in 0..cols.len() {
            let sum: f64 = ma[i].iter().zip(&mb[j]).map(|(a, b)| a * b).sum();
            if na[i].0 == 0.0 || nb[j].0 == 0.0 || sum == 0.0 {
                continue;
            }
            let lower = (0.5 * sum - na[i].1 - nb[j].1 - k as f64 * 2f64.powi(-126)).max(0.0);
            row_ratio[i] = row_ratio[i].max(nb[j].0 * scale / lower / lenient);
            col_ratio[j] = col_ratio[j].max(na[i].0 * scale / lower / lenient);
        }
    }
    let need = |vectors: &[Vec<f64>], exps: &[i32], ratios: &[f64]| -> Vec<usize> {
        vectors
            .iter()
            .zip(exps.iter().zip(ratios))
            .map(|(v, (&e, &r))| {
                let norm2: f64 = v.iter().map(|x| x * x).sum();
                (7..=16).find(|&l| 2f64.powi(exponent_for(norm2, k, l) - e) >= r).unwrap_or(17)
            })
            .collect()
    };
    (need(rows, &ea, &row_ratio), need(cols, &eb, &col_ratio))
}

/// The step with the bound: the rule at seven; where it leaves vectors, their needs from the
/// bound and the count `choose_moduli`'s costs pick; every vector scaled for that count, and the
/// vectors needing more computed as FP32 dot products. Returns C and the count.
fn step_with_bound(x: &Inputs, lenient: f64) -> (Vec<f32>, usize) {
    let Shape { m, n, k } = x.shape;
    let rows: Vec<Vec<f64>> = (0..m).map(|i| (0..k).map(|p| f64::from(x.a.at(i, p))).collect()).collect();
    let cols: Vec<Vec<f64>> = (0..n).map(|j| (0..k).map(|p| f64::from(x.b.at(p, j))).collect()).collect();
    let (row_marked, col_marked) = apart(&rows, &cols, k, 7);
    let (mut row_need, mut col_need) = (vec![7; m], vec![7; n]);
    if row_marked.iter().chain(&col_marked).any(|&a| a) {
        let (r, c) = bound_needs(&rows, &cols, k, lenient);
        row_need
            .iter_mut()
            .zip(r.iter().zip(&row_marked))
            .for_each(|(n, (&b, &a))| *n = if a { b } else { 7 });
        col_need
            .iter_mut()
            .zip(c.iter().zip(&col_marked))
            .for_each(|(n, (&b, &a))| *n = if a { b } else { 7 });
    }
    let least = 4e7 / (m * n) as f64;
    let cost = |l: usize| {
        let over_r = row_need.iter().filter(|&&v| v > l).count();
        let over_c = col_need.iter().filter(|&&v| v > l).count();
        l as f64
            + f64::from(u8::from(l > 7))
            + least * f64::from(u8::from(over_r > 0))
            + least * f64::from(u8::from(over_c > 0))
            + 20.0 * (over_r as f64 / m as f64 + over_c as f64 / n as f64)
    };
    let l = (7..=16).min_by(|&a, &b| cost(a).total_cmp(&cost(b))).unwrap_or(7);
    let mut c = model(x, l, 1);
    for i in 0..m {
        for j in (0..n).filter(|&j| row_need[i] > l || col_need[j] > l) {
            c[i * n + j] = (0..k).fold(0.0f32, |s, p| x.a.at(i, p).mul_add(x.b.at(p, j), s));
        }
    }
    (c, l)
}

/// The bound, on the CPU: every family at the class shapes, the identity plus noise of 2⁻²⁰ and
/// of 2⁻²⁴ at 128×128×4096, `wide:20` and `lognormal:2` at 64×64×4096 hold FP32's limits with the
/// count it picks, and that count is seven on `wide:20` (the rule alone would take more). The
/// bound made 2¹² too lenient fails on the identity plus noise of 2⁻²⁴, as on the GPU.
#[test]
#[ignore = "slow unoptimised: .ci/run runs it in release"]
fn slow_the_bound_holds_fp32_on_every_family_and_a_lenient_one_fails() {
    let noise = |e: i32| Family::IdentityNoise(f64::powi(2.0, e));
    for family in Family::ALL.into_iter().chain([noise(-20)]) {
        for (m, n, k) in shapes() {
            let x = Inputs::family(Shape::new(m, n, k).unwrap(), 7, family);
            let (c, l) = step_with_bound(&x, 1.0);
            let v = check(&x, &c);
            assert!(v.passed(), "{family} {m}×{n}×{k}, {l} moduli: {}", v.summary());
        }
    }
    let cases = [(noise(-20), 128), (noise(-24), 128), (Family::Wide(20), 64), (Family::LogNormal(2.0), 64)];
    for (family, side) in cases {
        let x = Inputs::family(Shape::new(side, side, 4096).unwrap(), 9, family);
        let (c, l) = step_with_bound(&x, 1.0);
        let v = check(&x, &c);
        println!("{family} {side}×{side}×4096: {l} moduli, {}", v.summary());
        assert!(v.passed(), "{family}, {l} moduli: {}", v.summary());
        if family == Family::Wide(20) {
            assert_eq!(l, 7, "wide:20 took {l} moduli");
        }
    }
    let x = Inputs::family(Shape::new(128, 128, 4096).unwrap(), 9, noise(-24));
    let (c, l) = step_with_bound(&x, 4096.0);
    let v = check(&x, &c);
    println!("the bound 2¹² too lenient, identity+noise:2⁻²⁴: {l} moduli, {}", v.summary());
    assert!(!v.passed(), "a bound 2¹² too lenient passed with {l} moduli: {}", v.summary());
}

/// The kernel's `reconstruct`, simulated operation for operation: the sum of weights times
/// residues in doubles (fused multiply-adds), the nearest multiple of P taken away, and the last
/// bits from the same sum modulo 2³² in unsigned integers, the integers read from the low words of
/// doubles rounded by adding 1.5·2⁵² and 1.5·2⁶⁴.
fn rebuild(residues: &[u64], moduli: usize, exact_low: bool) -> i64 {
    let p = residues::product(moduli);
    let (mut s, mut low) = (0.0f64, 0u32);
    for (l, &r) in residues.iter().enumerate() {
        let m = u128::from(residues::MODULUS[l]);
        let q = p / m;
        let y = (1..m).find(|y| q % m * y % m == 1).unwrap();
        let w = (q * y) as u64;
        s = (w as f64).mul_add(r as f64, s);
        low = low.wrapping_add((w as u32).wrapping_mul(r as u32));
    }
    let (round52, round64) = (1.5 * 2f64.powi(52), 1.5 * 2f64.powi(64));
    let t = s.mul_add(1.0 / p as f64, round52);
    let q = t - round52;
    let near = (-q).mul_add(p as f64, s);
    if !exact_low {
        return near.round_ties_even() as i64;
    }
    let u = near + round64;
    let rounded = u - round64;
    let low_word = |x: f64| x.to_bits() as u32;
    let exact = low.wrapping_sub(low_word(t).wrapping_mul(p as u32));
    let delta = exact.wrapping_sub(low_word(u) << 12) as i32;
    rounded as i64 + i64::from(delta)
}

/// The rebuild gives every integer within the scaling's reach exactly, with seven moduli and
/// with eight, small and large, while the doubles alone miss small ones by thousands of units
/// (what a review found an element of C could lose at K near 2¹⁷).
#[test]
#[ignore = "slow unoptimised: .ci/run runs it in release"]
fn slow_the_rebuild_is_exact_where_the_doubles_alone_are_not() {
    for moduli in [7, 8] {
        let p = residues::product(moduli) as i128;
        let reach = (residues::room(moduli, 1) * residues::room(moduli, 1)) as i128;
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut worst_doubles = 0i64;
        let edges = [0, 1, -1, 2, -3, 1_102_436, -1_102_436, reach, -reach, reach - 1, -(reach - 1)];
        let randoms = (0..200_000).map(|t| {
            let r = (next() as i128) % reach;
            if t % 2 == 0 { r } else { r >> (next() % 50) }
        });
        for c in edges.into_iter().chain(randoms) {
            let res: Vec<u64> =
                residues::MODULUS[..moduli].iter().map(|&m| c.rem_euclid(i128::from(m)) as u64).collect();
            assert!(c.abs() < p / 2);
            assert_eq!(i128::from(rebuild(&res, moduli, true)), c, "{moduli} moduli, c = {c}");
            worst_doubles = worst_doubles.max((i128::from(rebuild(&res, moduli, false)) - c).abs() as i64);
        }
        println!("{moduli} moduli: the doubles alone err by up to {worst_doubles} units");
        assert!(worst_doubles > 1000, "{moduli} moduli: {worst_doubles}");
    }
}

/// Inputs whose scaled entries are half-integers that rounding to nearest takes ½ from, each
/// time, while C cancels (`coherent`): at the rule's seven moduli and at counts forced past it,
/// in A or in B, at shapes of several sizes, the step's unbiased rounding (of A and B equilibrated
/// along K, as the step cuts them) holds FP32's limits with room to spare. Rounding to nearest
/// puts C off by about itself and fails at seven moduli where K is 256 or more;
/// at a forced count its units are 16 times finer than the seven moduli the limit allows for, and
/// it fails only from K of several thousand on (the GPU's tests run it there).
#[test]
fn coherent_half_integers_pass_unbiased_and_fail_to_nearest() {
    use step11_int8_crt::coherent::{Ties, coherent};
    let cases = [
        ((16, 16, 256), 7),
        ((24, 20, 300), 7),
        ((8, 8, 1024), 7),
        ((9, 7, 129), 7),
        ((16, 12, 64), 8),
        ((12, 16, 96), 9),
        ((8, 8, 200), 12),
    ];
    for ((m, n, k), moduli) in cases {
        for ties in [Ties::A, Ties::B] {
            let x = coherent(Shape::new(m, n, k).unwrap(), moduli, ties).unwrap();
            // The residues are cut from A and B equilibrated along K, as the step cuts them.
            let e = step11_int8_crt::equilibrate::equilibrated(&x);
            let unbiased = check(&x, &model_rounded(&e, moduli, 1, true));
            assert!(unbiased.passed(), "{}, {m}×{n}×{k}: {}", x.source, unbiased.summary());
            assert!(unbiased.normwise.ratio() < 0.75, "{}, {m}×{n}×{k}: {}", x.source, unbiased.summary());
            let nearest = check(&x, &model_rounded(&e, moduli, 1, false));
            // Below K = 256 a large first entry sets the scale against zeros in the other
            // operand: equilibrated, that column no longer counts, and nothing is left to round.
            if k < 256 {
                continue;
            }
            assert!(nearest.normwise.relative() > 0.5, "{}, {m}×{n}×{k}: {}", x.source, nearest.summary());
            if moduli == 7 {
                assert!(!nearest.passed(), "{}, {m}×{n}×{k}, to nearest: {}", x.source, nearest.summary());
            }
        }
    }
}

/// The coins of a run are as good as independent: over 20 000 runs, the covariance of the 16
/// rounding errors of entries with one fraction has no direction of weights (signs and sizes of
/// the other operand's entries) in which their sum varies much more than 16 independent errors'
/// would. A run's coins stepped by a constant instead (0.43 apart, modulo 1) have one, 5.7 times
/// the variance at a fraction of ½: this test fails them.
#[test]
fn a_runs_coins_leave_no_direction_of_larger_variance() {
    for fraction in [0.5, 0.25, 0.4334, 0.9] {
        let runs = 20_000;
        let mut cov = [[0.0f64; 16]; 16];
        for r in 0..runs {
            let c = coins(key(OperandSide::A, r, 16 * r), 16);
            let e: Vec<f64> = c.iter().map(|&c| f64::from(u8::from(1.0 + fraction > c)) - fraction).collect();
            for i in 0..16 {
                for j in 0..16 {
                    cov[i][j] += e[i] * e[j] / runs as f64;
                }
            }
        }
        // The largest eigenvalue, by power iteration, against the variance of one error.
        let mut v = [1.0f64; 16];
        let mut largest = 0.0;
        for _ in 0..200 {
            let w: Vec<f64> = (0..16).map(|i| (0..16).map(|j| cov[i][j] * v[j]).sum()).collect();
            largest = w.iter().map(|x| x * x).sum::<f64>().sqrt();
            v.iter_mut().zip(&w).for_each(|(v, w)| *v = w / largest);
        }
        let one = fraction * (1.0 - fraction);
        assert!(largest / one < 1.25, "fraction {fraction}: {:.2} times one error's variance", largest / one);
    }
}

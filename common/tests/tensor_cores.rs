//! The tensor cores' TF32 arithmetic on the GPU against the emulator's model of it, bit for bit.
//!
//! `ptx_emulator::tensor_arith::tf32_dot` says how a Hopper tensor core adds up one k8 step of
//! `mma.sync … m16n8k8 … .tf32` or `wgmma … m64nNk8 … .tf32`: the truncated operands, one
//! largest exponent for the eight products and c, 25 bits kept below it, the sum cut toward
//! zero. The emulator's TF32 labs are judged equal to the GPU bit for bit on that model; this
//! test is where the model itself is judged. `tensor_probe.cu` computes tens of thousands of
//! small products D = A(64×8)·B(8×8) + C with both instructions, over input families chosen
//! to reach every step of the model (operands of like sizes and of wide ranges, raw bit
//! patterns, nearly cancelling pairs, tiny and subnormal values, values near overflow, zeros,
//! infinities and NaNs) and over hand-picked cases, and every element of both D's must equal the
//! model's. The naive model (`tf32_dot_exact`: TF32 operands, one rounding of the exact sum) is
//! counted beside it, to show what the model's details are for.
//!
//! `cargo test --release -p common --test tensor_cores -- --ignored --nocapture gpu_` prints a
//! table per family and one of the hand-picked cases; from a machine without a GPU, the bundle
//! runs it (`bash .gpu/run tests "gpu_tensor_cores --nocapture"`).

use std::time::Instant;

use common::gpu::{self, Gpu, Kernel, PtxasInfo};
use cudarc::driver::{LaunchConfig, PushKernelArg};
use ptx_emulator::tensor_arith::{tf32_dot, tf32_dot_exact};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const PROBE: &str = include_str!("tensor_probe.cu");
const PROBE_FILE: &str = "common/tests/tensor_probe.cu";
const ENTRY: &str = "tensor_probe";

/// The shape of one problem: D (ROWS×COLS) = A (ROWS×K) · B (K×COLS) + C.
const ROWS: usize = 64;
const COLS: usize = 8;
const K: usize = 8;
const A_WORDS: usize = ROWS * K;
const B_WORDS: usize = K * COLS;
const C_WORDS: usize = ROWS * COLS;
/// Words of one problem as the kernel reads them: A, B (B[k][n]) and C, each row-major.
const PROBLEM_WORDS: usize = A_WORDS + B_WORDS + C_WORDS;
/// Words of one problem's result: mma.sync's D, then wgmma's.
const RESULT_WORDS: usize = 2 * C_WORDS;
/// Threads of the block that computes one problem: one warpgroup.
const THREADS: u32 = 128;

/// Random problems per family: 14 families of 2048 give about 15 million elements, which the GPU
/// computes in milliseconds and the host checks in a few seconds.
const PROBLEMS_PER_FAMILY: usize = 2048;
const SEED: u64 = 20_261_124;

const SIGN: u32 = 0x8000_0000;
const ONE: u32 = 0x3f80_0000;
const NEG_ONE: u32 = 0xbf80_0000;
const INF: u32 = 0x7f80_0000;
const NEG_INF: u32 = 0xff80_0000;
const MAX: u32 = 0x7f7f_ffff;
const ZEROS: [u32; 8] = [0; 8];
const ONES: [u32; 8] = [ONE; 8];

/// Values that are not ordinary: signed zeros, ±1, ±∞, NaNs (0x7f800001 and 0xff800001 are NaNs
/// only in the 13 bits TF32 drops), the largest finite values, the smallest subnormals, 1.5, 2⁻²⁵
/// and a subnormal 2⁻¹²⁷.
const SPECIAL: [u32; 16] = [
    0,
    SIGN,
    ONE,
    NEG_ONE,
    INF,
    NEG_INF,
    0x7fc0_0000,
    0x7f80_0001,
    0xff80_0001,
    MAX,
    MAX | SIGN,
    1,
    SIGN | 1,
    0x3fc0_0000,
    0x3300_0000,
    0x0040_0000,
];

/// How one element of A, B or C is drawn.
#[derive(Clone, Copy, Debug)]
enum Draw {
    /// A random sign and mantissa at an exponent uniform in `lo..=hi` (see [`at_exponent`]).
    Exp(i32, i32),
    /// Any 32 bits: NaNs, infinities and subnormals included.
    Bits,
    /// Any 32 bits with exponent bit 1 cleared, so the exponent is never all ones: every finite
    /// value, no NaN or ∞.
    FiniteBits,
    /// A random sign and random low `bits` bits: subnormals (and with 24 bits the smallest
    /// normals).
    Low(u32),
    /// Zero half the time, otherwise `Exp(lo, hi)`.
    ZeroOr(i32, i32),
    /// One of [`SPECIAL`] with probability `p` (in hundredths), otherwise `Exp(-3, 3)`.
    Special(u32),
    /// `Exp(first)` at k = 0 and `Exp(rest)` at every other k: one product dominates each row.
    Lead((i32, i32), (i32, i32)),
}

/// A random sign and mantissa at exponent `exp` (unbiased): a normal f32, or below −126 the
/// subnormal (or zero, below −149) that the same significand gives when shifted down, as an
/// underflowing value would be.
fn at_exponent(rng: &mut StdRng, exp: i32) -> u32 {
    let sign = rng.random::<u32>() & SIGN;
    let mantissa = rng.random::<u32>() & 0x7f_ffff;
    if exp < -126 {
        sign | (1 << 23 | mantissa) >> (-126 - exp).min(24)
    } else {
        sign | ((exp + 127) as u32) << 23 | mantissa
    }
}

impl Draw {
    /// One element; `k` is its index along K (which only `Lead` looks at).
    fn draw(self, rng: &mut StdRng, k: usize) -> u32 {
        let exp = |rng: &mut StdRng, (lo, hi): (i32, i32)| {
            let e = rng.random_range(lo..=hi);
            at_exponent(rng, e)
        };
        match self {
            Draw::Exp(lo, hi) => exp(rng, (lo, hi)),
            Draw::Bits => rng.random(),
            Draw::FiniteBits => rng.random::<u32>() & !(1 << 24),
            Draw::Low(bits) => (rng.random::<u32>() & SIGN) | rng.random::<u32>() >> (32 - bits),
            Draw::ZeroOr(lo, hi) => {
                if rng.random_bool(0.5) {
                    0
                } else {
                    exp(rng, (lo, hi))
                }
            }
            Draw::Special(p) => {
                if rng.random_range(0..100) < p {
                    SPECIAL[rng.random_range(0..SPECIAL.len())]
                } else {
                    exp(rng, (-3, 3))
                }
            }
            Draw::Lead(first, rest) => exp(rng, if k == 0 { first } else { rest }),
        }
    }
}

/// A family of random problems: how A's, B's and C's elements are drawn, and whether the k's
/// go in nearly cancelling pairs: a at k = 2j + 1 is −a at 2j with its last TF32 bits changed,
/// and B's row 2j + 1 is a copy of row 2j, so each pair of products almost cancels.
struct ProblemFamily {
    name: &'static str,
    a: Draw,
    b: Draw,
    c: Draw,
    pairs: bool,
}

const fn family(name: &'static str, a: Draw, b: Draw, c: Draw, pairs: bool) -> ProblemFamily {
    ProblemFamily { name, a, b, c, pairs }
}

use Draw::*;

const FAMILIES: &[ProblemFamily] = &[
    family("like sizes: exponents −4…4", Exp(-4, 4), Exp(-4, 4), Exp(-4, 4), false),
    family("wide: exponents −40…40, c's −60…60", Exp(-40, 40), Exp(-40, 40), Exp(-60, 60), false),
    family("wide, in cancelling pairs: −12…12", Exp(-12, 12), Exp(-12, 12), Exp(-30, 30), true),
    family("cancelling pairs, c below them", Exp(-3, 3), Exp(-3, 3), Exp(-30, 0), true),
    family("one dominant product per row", Lead((0, 10), (-30, -10)), Exp(-3, 3), Exp(-30, 5), false),
    family("small products under c", Exp(-14, -8), Exp(-14, -8), Exp(-2, 2), false),
    family("raw bit patterns", Bits, Bits, Bits, false),
    family("raw bit patterns, finite", FiniteBits, FiniteBits, FiniteBits, false),
    family("tiny products, c zero or tiny", Exp(-100, -40), Exp(-100, -40), ZeroOr(-149, -120), false),
    family("products near underflow, c subnormal", Exp(-80, -60), Exp(-80, -60), Low(23), false),
    family("subnormal operands", Exp(-150, -110), Exp(-150, -100), Low(24), false),
    family("near overflow: exponents 100…127", Exp(100, 127), Exp(100, 127), Exp(100, 127), false),
    family("cancelling pairs beyond f32's range", Exp(120, 127), Exp(0, 8), Exp(-10, 127), true),
    family("zeros, infinities, NaNs, extremes", Special(70), Special(70), Special(100), false),
];

/// One problem of `family`, as the kernel reads it.
fn random_problem(family: &ProblemFamily, rng: &mut StdRng) -> [u32; PROBLEM_WORDS] {
    let mut words = [0; PROBLEM_WORDS];
    let (a, rest) = words.split_at_mut(A_WORDS);
    let (b, c) = rest.split_at_mut(B_WORDS);
    for (i, x) in a.iter_mut().enumerate() {
        *x = family.a.draw(rng, i % K);
    }
    for (i, x) in b.iter_mut().enumerate() {
        *x = family.b.draw(rng, i / COLS);
    }
    for x in c.iter_mut() {
        *x = family.c.draw(rng, 0);
    }
    if family.pairs {
        for row in a.chunks_exact_mut(K) {
            for j in (0..K).step_by(2) {
                // Bits 13 to 15 are TF32's last three: the pair differs by a few of its units.
                row[j + 1] = row[j] ^ SIGN ^ rng.random_range(0..8u32) << 13;
            }
        }
        for j in (0..K).step_by(2) {
            b.copy_within(j * COLS..(j + 1) * COLS, (j + 1) * COLS);
        }
    }
    words
}

/// A hand-picked case: one dot product, a·b + c, at D's row 0 and column 0; every other element
/// of its problem is 0·0 + 0.
struct Hand {
    what: &'static str,
    a: [u32; 8],
    b: [u32; 8],
    c: u32,
}

/// 2^e, for a normal exponent e.
const fn pow2(e: i32) -> u32 {
    ((e + 127) as u32) << 23
}

/// `x` at k = 0, zeros after.
const fn first(x: u32) -> [u32; 8] {
    two(x, 0)
}

/// `x` at k = 0, `y` at k = 1, zeros after.
const fn two(x: u32, y: u32) -> [u32; 8] {
    let mut v = [0; 8];
    v[0] = x;
    v[1] = y;
    v
}

/// `x` at k = 0, `rest` at every other k.
const fn then_all(x: u32, rest: u32) -> [u32; 8] {
    let mut v = [rest; 8];
    v[0] = x;
    v
}

const fn hand(what: &'static str, a: [u32; 8], b: [u32; 8], c: u32) -> Hand {
    Hand { what, a, b, c }
}

/// Each step of the model at its edge: the sign of a zero sum, terms below the 25 kept bits,
/// truncation of the sum, TF32's dropped bits, subnormals, NaN and ∞, overflow, and zero terms
/// beside a tiny c.
const HAND: &[Hand] = &[
    hand("eight −0 products, c −0", [SIGN; 8], ZEROS, SIGN),
    hand("eight +0 products, c −0", ZEROS, ZEROS, SIGN),
    hand("eight −0 products, c +0", [SIGN; 8], ZEROS, 0),
    hand("−1 + 1: exact cancellation", first(NEG_ONE), ONES, ONE),
    hand("1 − 1, c the negative one", first(ONE), ONES, NEG_ONE),
    hand("−2⁻¹⁶⁰ + −0: under every f32", first(pow2(-80) | SIGN), first(pow2(-80)), SIGN),
    hand("−2⁻¹⁵⁰: half the smallest subnormal", first(pow2(-75) | SIGN), first(pow2(-75)), 0),
    hand("2⁻¹⁴⁹ − 2⁻¹⁴⁹ (c)", first(pow2(-75)), first(pow2(-74)), SIGN | 1),
    hand("1 + 7 × 2⁻²⁶: below the kept bits", then_all(0, pow2(-26)), ONES, ONE),
    hand("1 + 1.5 × 2⁻²⁴: the sum truncated", two(ONE, 0x33c0_0000), ONES, 0),
    hand("−1 − 1.5 × 2⁻²⁴: toward zero", two(NEG_ONE, 0xb3c0_0000), ONES, 0),
    hand("1 − 0.5 + 7 × 2⁻²⁵: at the last kept bit", then_all(0xbf00_0000, pow2(-25)), ONES, ONE),
    hand("1 − 0.5 + 7 × 2⁻²⁶: below it", then_all(0xbf00_0000, pow2(-26)), ONES, ONE),
    hand("1 − 2⁻²⁶: a negative term chopped", two(ONE, pow2(-26) | SIGN), ONES, 0),
    hand("0x3f801fff: its low 13 bits dropped", first(0x3f80_1fff), ONES, 0),
    hand("a subnormal operand, 2⁻¹³⁰", first(0x0008_0000), ONES, 0),
    hand("2⁻⁷⁵ × 1.5 × 2⁻⁷⁵: under 2⁻¹⁴⁹", first(pow2(-75)), first(0x1a40_0000), 0),
    hand("a NaN operand", first(0xffc0_0001), ONES, 0),
    hand("0x7f800001: NaN in dropped bits only", first(0x7f80_0001), ONES, 0),
    hand("0x7f800001 × 0", first(0x7f80_0001), ZEROS, 0),
    hand("a NaN c", ZEROS, ONES, 0xffc0_0001),
    hand("∞ × 0", first(INF), ZEROS, 0),
    hand("∞ + c = −∞", first(INF), ONES, NEG_INF),
    hand("∞ × −1 + ∞ × 1", two(INF, INF), two(NEG_ONE, ONE), 0),
    hand("∞ + 1", first(INF), ONES, ONE),
    hand("2¹²⁷ × 2¹²⁷", first(pow2(127)), first(pow2(127)), 0),
    hand("2¹²⁷ × 2: just beyond f32", first(pow2(127)), first(pow2(1)), 0),
    hand("the largest f32, twice", first(MAX), ONES, MAX),
    hand("2¹²⁹ − 2¹²⁹ + 1", two(pow2(127), pow2(127) | SIGN), two(pow2(2), pow2(2)), ONE),
    hand("2⁻¹⁴⁹ − 2⁻¹⁵⁸", two(pow2(-75), pow2(-79) | SIGN), two(pow2(-74), pow2(-79)), 0),
    hand("2⁻¹⁴⁹ − 2⁻¹⁵⁹", two(pow2(-75), pow2(-80) | SIGN), two(pow2(-74), pow2(-79)), 0),
    hand("zero products, one b 2¹²⁷; c 2⁻¹⁰(1 + 2⁻²³)", ZEROS, first(pow2(127)), pow2(-10) | 1),
    hand("zero products; c 2⁻¹⁰(1 + 2⁻²³)", ZEROS, ONES, pow2(-10) | 1),
];

/// A hand-picked case as a problem: a in A's row 0, b in B's column 0, c in C's first element.
fn hand_problem(case: &Hand) -> [u32; PROBLEM_WORDS] {
    let mut words = [0; PROBLEM_WORDS];
    words[..K].copy_from_slice(&case.a);
    for (k, &b) in case.b.iter().enumerate() {
        words[A_WORDS + k * COLS] = b;
    }
    words[A_WORDS + B_WORDS] = case.c;
    words
}

/// Every problem, the hand-picked cases first and then `per_family` of each family, and the
/// group each belongs to: a family's index, or `FAMILIES.len()` for the hand-picked cases.
fn problems(per_family: usize) -> (Vec<u32>, Vec<usize>) {
    let mut words: Vec<u32> = HAND.iter().flat_map(hand_problem).collect();
    let mut groups = vec![FAMILIES.len(); HAND.len()];
    // A thread and a seed per family: each family's problems depend on its index alone.
    let families: Vec<Vec<u32>> = std::thread::scope(|s| {
        let drawing: Vec<_> = (FAMILIES.iter().enumerate())
            .map(|(i, family)| {
                s.spawn(move || {
                    let mut rng = StdRng::seed_from_u64(SEED + i as u64);
                    (0..per_family).flat_map(|_| random_problem(family, &mut rng)).collect()
                })
            })
            .collect();
        drawing.into_iter().map(|h| h.join().expect("a thread drawing problems panicked")).collect()
    });
    for (i, family) in families.into_iter().enumerate() {
        words.extend(family);
        groups.extend(std::iter::repeat_n(i, per_family));
    }
    (words, groups)
}

/// One element of D: its inputs, what the two instructions gave, and what the models say.
#[derive(Clone, Copy, Debug)]
struct ProductElement {
    problem: usize,
    row: usize,
    col: usize,
    a: [u32; 8],
    b: [u32; 8],
    c: u32,
    mma: u32,
    wgmma: u32,
    model: u32,
    exact: u32,
}

impl ProductElement {
    fn new(problem: usize, input: &[u32], result: &[u32], row: usize, col: usize) -> Self {
        let a: [u32; 8] = std::array::from_fn(|k| input[row * K + k]);
        let b: [u32; 8] = std::array::from_fn(|k| input[A_WORDS + k * COLS + col]);
        let c = input[A_WORDS + B_WORDS + row * COLS + col];
        let (mma, wgmma) = (result[row * COLS + col], result[C_WORDS + row * COLS + col]);
        ProductElement {
            problem,
            row,
            col,
            a,
            b,
            c,
            mma,
            wgmma,
            model: tf32_dot(&a, &b, c),
            exact: tf32_dot_exact(&a, &b, c),
        }
    }

    fn agrees(&self) -> bool {
        self.mma == self.model && self.wgmma == self.model
    }
}

/// A group's counts of elements.
#[derive(Clone, Copy, Debug, Default)]
struct Tally {
    problems: usize,
    elements: usize,
    mma_model: usize,
    wgmma_model: usize,
    mma_wgmma: usize,
    mma_exact: usize,
}

impl Tally {
    fn add(&mut self, e: &ProductElement) {
        self.elements += 1;
        self.mma_model += usize::from(e.mma == e.model);
        self.wgmma_model += usize::from(e.wgmma == e.model);
        self.mma_wgmma += usize::from(e.mma == e.wgmma);
        self.mma_exact += usize::from(e.mma == e.exact);
    }

    fn merge(&mut self, other: &Tally) {
        self.problems += other.problems;
        self.elements += other.elements;
        self.mma_model += other.mma_model;
        self.wgmma_model += other.wgmma_model;
        self.mma_wgmma += other.mma_wgmma;
        self.mma_exact += other.mma_exact;
    }
}

/// Mismatches kept for the report.
const SHOWN: usize = 10;

/// Compares every element of every problem with the models, on every core: the tallies per
/// group, and the first mismatches.
fn compare(inputs: &[u32], results: &[u32], groups: &[usize]) -> (Vec<Tally>, Vec<ProductElement>) {
    let threads = std::thread::available_parallelism().map_or(4, |n| n.get());
    let per_thread = groups.len().div_ceil(threads);
    let parts: Vec<(Vec<Tally>, Vec<ProductElement>)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..groups.len())
            .step_by(per_thread)
            .map(|start| {
                s.spawn(move || {
                    let mut tallies = vec![Tally::default(); FAMILIES.len() + 1];
                    let mut mismatches = Vec::new();
                    for p in start..(start + per_thread).min(groups.len()) {
                        let input = &inputs[p * PROBLEM_WORDS..(p + 1) * PROBLEM_WORDS];
                        let result = &results[p * RESULT_WORDS..(p + 1) * RESULT_WORDS];
                        let tally = &mut tallies[groups[p]];
                        tally.problems += 1;
                        for row in 0..ROWS {
                            for col in 0..COLS {
                                let e = ProductElement::new(p, input, result, row, col);
                                tally.add(&e);
                                if !e.agrees() && mismatches.len() < SHOWN {
                                    mismatches.push(e);
                                }
                            }
                        }
                    }
                    (tallies, mismatches)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("a comparing thread panicked")).collect()
    });
    let mut tallies = vec![Tally::default(); FAMILIES.len() + 1];
    let mut mismatches = Vec::new();
    for (part, shown) in parts {
        for (total, t) in tallies.iter_mut().zip(&part) {
            total.merge(t);
        }
        mismatches.extend(shown);
    }
    mismatches.truncate(SHOWN);
    (tallies, mismatches)
}

/// The families' table, in markdown.
fn table(tallies: &[Tally]) -> String {
    let mut out = String::from(
        "| inputs | problems | elements | mma.sync = model | wgmma = model | mma.sync = wgmma \
         | mma.sync = naive model |\n|---|---:|---:|---:|---:|---:|---:|\n",
    );
    let names = FAMILIES.iter().map(|f| f.name).chain(["hand-picked cases"]);
    let mut total = Tally::default();
    for (name, t) in names.zip(tallies) {
        total.merge(t);
        out += &row(name, t);
    }
    out + &row("**all**", &total)
}

fn row(name: &str, t: &Tally) -> String {
    let share = 100.0 * t.mma_exact as f64 / t.elements.max(1) as f64;
    format!(
        "| {name} | {} | {} | {} | {} | {} | {} ({share:.1}%) |\n",
        t.problems, t.elements, t.mma_model, t.wgmma_model, t.mma_wgmma, t.mma_exact
    )
}

/// Each hand-picked case's element, in markdown.
fn hand_table(inputs: &[u32], results: &[u32]) -> String {
    let mut out = String::from(
        "| hand-picked case | mma.sync | wgmma | model | naive model |\n|---|---|---|---|---|\n",
    );
    for (p, case) in HAND.iter().enumerate() {
        let input = &inputs[p * PROBLEM_WORDS..(p + 1) * PROBLEM_WORDS];
        let e = ProductElement::new(p, input, &results[p * RESULT_WORDS..(p + 1) * RESULT_WORDS], 0, 0);
        out += &format!(
            "| {} | {:08x} | {:08x} | {:08x} | {:08x} |\n",
            case.what, e.mma, e.wgmma, e.model, e.exact
        );
    }
    out
}

/// The GPU, which must be a Hopper: wgmma is an sm_90a instruction.
fn hopper() -> Gpu {
    let gpu = gpu::open("the tensor-core probe", 0).unwrap_or_else(|e| panic!("{e:#}"));
    let (major, minor) = gpu.info.compute_capability;
    assert_eq!(
        (major, minor),
        (9, 0),
        "the probe's wgmma needs a GPU of compute capability 9.0 (an H100 or H200); {} is {major}.{minor}",
        gpu.info.name
    );
    gpu
}

/// Runs the probe on every problem: mma.sync's D and wgmma's, one after the other, per problem;
/// and the device, in words.
fn run_probe(gpu: &Gpu, inputs: &[u32]) -> (Vec<u32>, String) {
    let info = &gpu.info;
    let compiled = gpu::compile(PROBE, PROBE_FILE, "sm_90a", &[]).unwrap_or_else(|e| panic!("{e:#}"));
    let kernel = Kernel::load_entry(gpu, compiled, ENTRY).unwrap_or_else(|e| panic!("{e:#}"));
    let problems = inputs.len() / PROBLEM_WORDS;
    let stream = &gpu.stream;
    let input = stream.clone_htod(inputs).expect("copying the problems to the GPU");
    // Poisoned: 0xffffffff is a NaN that neither the tensor cores nor the model give (their NaN
    // is 0x7fffffff), so an element no thread writes fails.
    let mut output = stream.clone_htod(&vec![u32::MAX; problems * RESULT_WORDS]).expect("allocating D");
    let config =
        LaunchConfig { grid_dim: (problems as u32, 1, 1), block_dim: (THREADS, 1, 1), shared_mem_bytes: 0 };
    let mut launch = stream.launch_builder(&kernel.func);
    launch.arg(&input).arg(&mut output);
    // SAFETY: the arguments match `tensor_probe(const unsigned* in, unsigned* out)`; `in` holds
    // PROBLEM_WORDS and `out` RESULT_WORDS for each of the grid's blocks.
    unsafe { launch.launch(config) }.expect("launching the probe");
    stream.synchronize().expect("the probe failed while running");
    let results = stream.clone_dtoh(&output).expect("copying D back from the GPU");
    let nvrtc = gpu::nvrtc_version().map_or("?".into(), |(major, minor)| format!("{major}.{minor}"));
    let device = format!("{}, driver {}, NVRTC {nvrtc}", info.name, info.driver_version);
    (results, device)
}

#[test]
#[ignore = "needs an H100 or H200"]
fn gpu_tensor_cores_compute_as_the_emulator_models_them() {
    let gpu = hopper();
    let (inputs, groups) = problems(PROBLEMS_PER_FAMILY);
    let started = Instant::now();
    let (results, device) = run_probe(&gpu, &inputs);
    let ran = started.elapsed();
    let (tallies, mismatches) = compare(&inputs, &results, &groups);
    println!(
        "{device}: {} problems D = A(64×8)·B(8×8) + C, each by 4 mma.sync m16n8k8 and 1 wgmma m64n8k8 \
         (TF32), seed {SEED}; compile, GPU and copies {:.2} s, all {:.2} s\n",
        groups.len(),
        ran.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    println!("{}", table(&tallies));
    println!("{}", hand_table(&inputs, &results));
    if !mismatches.is_empty() {
        println!("elements that differ from the model (problem, row, column; inputs and results in hex):");
        for e in &mismatches {
            let group = FAMILIES.get(groups[e.problem]).map_or_else(|| HAND[e.problem].what, |f| f.name);
            println!(
                "  {group}: problem {} D[{}][{}]: a {:08x?} b {:08x?} c {:08x}: mma.sync {:08x} wgmma {:08x} \
                 model {:08x} naive {:08x}",
                e.problem, e.row, e.col, e.a, e.b, e.c, e.mma, e.wgmma, e.model, e.exact
            );
        }
    }
    let total = tallies.iter().fold(Tally::default(), |mut t, g| {
        t.merge(g);
        t
    });
    assert_eq!(total.elements, groups.len() * C_WORDS);
    assert!(
        total.mma_model == total.elements && total.wgmma_model == total.elements,
        "of {} elements, mma.sync gave {} and wgmma {} other than tf32_dot's (the first are above)",
        total.elements,
        total.elements - total.mma_model,
        total.elements - total.wgmma_model
    );
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_the_tensor_core_probe_compiles_for_sm90a() {
    // The host's layout of a problem and its result, checked against the kernel's.
    let source = format!(
        "{PROBE}\nstatic_assert(PROBLEM_WORDS == {PROBLEM_WORDS}, \"the host's PROBLEM_WORDS differs\");\n\
         static_assert(RESULT_WORDS == {RESULT_WORDS}, \"the host's RESULT_WORDS differs\");\n"
    );
    let compiled = gpu::compile(&source, PROBE_FILE, "sm_90a", &[]).unwrap_or_else(|e| panic!("{e:#}"));
    assert!(compiled.has_function(ENTRY), "no {ENTRY} in the machine code");
    let info = PtxasInfo::parse_entry(&compiled.log, ENTRY).unwrap_or_else(|| {
        panic!("no ptxas report (a cached compile? set CUDA_CACHE_DISABLE=1); NVRTC's log:\n{}", compiled.log)
    });
    assert_eq!((info.spill_bytes(), info.stack_frame), (0, 0), "{info:?}");
    assert_eq!(info.static_smem as usize, 4 * B_WORDS, "B's copy for wgmma: {info:?}");
}

/// The problems are what the kernel and the comparison expect: each hand-picked case where its
/// element is read, and families that hold what they are named for.
#[test]
fn the_problems_hold_what_they_are_named_for() {
    const EACH: usize = 16;
    let (inputs, groups) = problems(EACH);
    assert_eq!(groups.len(), HAND.len() + FAMILIES.len() * EACH);
    assert_eq!(inputs.len(), groups.len() * PROBLEM_WORDS);
    for (p, case) in HAND.iter().enumerate() {
        let e = ProductElement::new(p, &inputs[p * PROBLEM_WORDS..], &[0; RESULT_WORDS], 0, 0);
        assert_eq!((e.a, e.b, e.c), (case.a, case.b, case.c), "{}", case.what);
    }
    let family = |name: &str| {
        let i = FAMILIES.iter().position(|f| f.name == name).unwrap();
        assert!(groups[HAND.len() + i * EACH..][..EACH].iter().all(|&g| g == i));
        let start = HAND.len() + i * EACH;
        &inputs[start * PROBLEM_WORDS..(start + EACH) * PROBLEM_WORDS]
    };
    let is_subnormal = |x: &&u32| *x & INF == 0 && *x & 0x7f_ffff != 0;
    let is_nan = |x: &u32| x & !SIGN > INF;
    let subnormal = family("subnormal operands");
    assert!(subnormal.iter().filter(is_subnormal).count() > subnormal.len() / 4);
    assert!(family("raw bit patterns, finite").iter().all(|x| x & INF != INF));
    assert!(family("raw bit patterns").iter().any(is_nan));
    let special = family("zeros, infinities, NaNs, extremes");
    assert!(special.iter().any(is_nan) && special.contains(&INF) && special.contains(&NEG_INF));
    // A cancelling pair: a at k = 1 is −a at k = 0 but for TF32's last three bits, and B's row 1
    // is its row 0.
    let pairs = family("cancelling pairs, c below them");
    assert_eq!((pairs[0] ^ pairs[1]) & !(7 << 13), SIGN);
    assert_eq!(pairs[A_WORDS..A_WORDS + COLS], pairs[A_WORDS + COLS..A_WORDS + 2 * COLS]);
}

/// The probe on the emulator, whose tensor cores compute `tf32_dot`: every element must be the
/// model's, so the kernel's fragments, B's shared-memory layout and descriptor, and the host's
/// reading of the results agree, as the PTX ISA lays them out. This says nothing of the model
/// (the emulator is the model); it keeps the probe and this file in step without a GPU.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_the_probe_on_the_emulator_lays_out_its_problems_as_the_host_does() {
    use ptx_emulator::{Arg, Config, Emulator};
    let ptx = common::emulated::ptx(PROBE, PROBE_FILE, common::emulated::HOPPER_PTX_ARCH, &[])
        .unwrap_or_else(|e| panic!("{e:#}"));
    let mut machine = Emulator::new(&ptx, ptx_model::profile::H100.machine).unwrap_or_else(|e| panic!("{e}"));
    let (inputs, groups) = problems(4);
    let as_f32 = |words: &[u32]| words.iter().map(|&x| f32::from_bits(x)).collect::<Vec<_>>();
    let input = machine.alloc(4 * inputs.len(), "the problems");
    let output = machine.alloc(4 * groups.len() * RESULT_WORDS, "the results");
    machine.write_f32(input, &as_f32(&inputs)).unwrap();
    machine.write_f32(output, &as_f32(&vec![u32::MAX; groups.len() * RESULT_WORDS])).unwrap();
    let config = Config {
        grid: (groups.len() as u32, 1, 1),
        block: (THREADS, 1, 1),
        dynamic_shared: 0,
        sanitize: true,
    };
    machine.launch(ENTRY, config, &[Arg::Ptr(input), Arg::Ptr(output)]).unwrap_or_else(|e| panic!("{e}"));
    let results: Vec<u32> =
        machine.read_f32(output, groups.len() * RESULT_WORDS).unwrap().iter().map(|x| x.to_bits()).collect();
    let (tallies, mismatches) = compare(&inputs, &results, &groups);
    assert!(mismatches.is_empty(), "{}{mismatches:x?}", table(&tallies));
}

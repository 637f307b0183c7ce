//! Where a test checks a step: the shapes that break kernels, and a step's parameters set as a
//! test names them.

use crate::params::Params;
use crate::step::GpuStep;

/// Shapes that break kernels: ones, primes, thin and flat, one past a power of two, and
/// sizes no tile divides. (M, N, K).
pub const SHAPES: &[(usize, usize, usize)] = &[
    (1, 1, 1),
    (1, 1, 7),
    (7, 3, 5),
    (2, 3, 1),
    (13, 17, 19),
    (31, 37, 41),
    (33, 65, 17),
    (64, 64, 64),
    (127, 129, 131),
    (128, 128, 128),
    (1000, 17, 1),
    (17, 1000, 3),
    (1, 1, 1000),
    (1, 513, 257),
    (257, 1, 129),
    (255, 257, 253),
    (511, 513, 509),
    (1000, 1000, 1000),
    (1024, 1024, 1024),
    (4097, 33, 129),
    (33, 4097, 129),
    (2049, 2047, 97),
    (4097, 4097, 1),
    (3, 5, 200_000),
    (1, 1, 1 << 20),
];

/// Deep shapes, K up to 2²⁰: where a per-element bound alone would miss a dropped slice.
pub const DEEP: &[(usize, usize, usize)] =
    &[(64, 64, 65536), (2, 2, 65536), (1, 1, 1 << 20), (33, 17, 100_003)];

/// `step`'s parameters with `names` set to `values` (a test's documented set).
pub fn named_params<const N: usize>(step: &GpuStep, names: [&str; N], values: [u32; N]) -> Params {
    let overrides: Vec<(String, u32)> = names.iter().zip(values).map(|(n, v)| ((*n).to_owned(), v)).collect();
    Params::with_overrides(step.params, &overrides).expect("the step declares these parameters")
}

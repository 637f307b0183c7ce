//! Step 11's equilibration along K (`equilibrate.cu`): a shift s_k for each k, exact powers of two
//! that leave A·B as it was when A's column k is taken times 2^s_k and B's row k times 2^−s_k,
//! chosen so that each k's largest magnitude in A's column and in B's row meet halfway, less the
//! shift common to every k (which would change no row's integers). The scaling to integers that
//! follows gives a whole row of A (column of B) one power of two, so data whose scales were moved
//! along K between A and B (activations and weights) would otherwise keep few bits of the entries
//! far below their row's largest, and miss FP32's accuracy. One kernel, queued at the head of
//! every product ([`crate::sequence`]), reads A and B once and leaves the shifts; the kernels that
//! cut the residues apply them as they read A and B (`along_k` in `scaling.cuh`), so no scaled
//! copy is written, and the FP32 path reads the unscaled A and B (the same products).

use anyhow::Result;

use common::Shape;
use common::hooks::{CudaSource, Queue};

pub const SOURCE: &str = include_str!("equilibrate.cu");
pub const FILE: &str = "step11_int8_crt/src/equilibrate.cu";
/// The module, loaded beside the step's on its first product.
pub const MODULE: CudaSource = CudaSource { source: SOURCE, file: FILE };

pub const ENTRY: &str = "equilibrate";

/// Threads of a block (THREADS in the kernel): eight warps.
pub const THREADS: u32 = 256;
/// Columns of A a block takes (A_COLS in the kernel).
pub const A_COLS: usize = 128;
/// About how many blocks take A's columns, and how many warps B's rows, where the shape has that
/// many pieces: enough to keep every SM's loads in flight, few enough that each piece's atomics
/// stay a small part of its reads.
const A_BLOCKS: usize = 1024;
const B_WARPS: usize = 8192;
/// The fewest rows of A, and columns of B, a piece takes.
const A_LEAST_ROWS: usize = 64;
const B_LEAST_COLS: usize = 1024;

/// How many chunks of rows A's columns are cut into, and pieces B's rows, for `shape`.
pub fn chunks(shape: Shape) -> (usize, usize) {
    let Shape { m, n, k } = shape;
    let a = A_BLOCKS.div_ceil(k.div_ceil(A_COLS)).clamp(1, m.div_ceil(A_LEAST_ROWS).max(1));
    let b = B_WARPS.div_ceil(k).clamp(1, n.div_ceil(B_LEAST_COLS).max(1));
    (a, b)
}

/// The kernel's blocks for `shape`: those of B's pieces (eight a block), then those of A's.
pub fn blocks(shape: Shape) -> u32 {
    let (a, b) = chunks(shape);
    let warps = (THREADS / 32) as usize;
    let total = (shape.k * b).div_ceil(warps) + shape.k.div_ceil(A_COLS) * a;
    u32::try_from(total).unwrap_or(u32::MAX)
}

/// What the equilibration did, from its summary (the most negative shift as −s, the largest,
/// and how many of the K are not 0), in words for the report.
pub fn words(summary: &[i32], k: usize) -> String {
    let (lowest, highest, count) = (-summary[0], summary[1], summary[2]);
    if count <= 0 {
        "along K: A's columns and B's rows already balanced, none scaled".to_owned()
    } else {
        format!(
            "along K: A's column k times 2^s and B's row k times 2^−s on {count} of {k} (s from {lowest} to \
             {highest}), A·B unchanged, so that the integers keep FP32's bits"
        )
    }
}

/// The words of the last product's equilibration, read from its summary (None before any).
pub fn taken(q: &mut dyn Queue, summary: &'static str, k: usize) -> Result<Option<String>> {
    Ok(q.read_i32(summary, 0, 3)?.map(|s| words(&s, k)))
}

/// The equilibration on the host, as `equilibrate.cu` computes it: each k's shift s_k, for the
/// CPU models of the step and the tests. 0 for a k whose column of A and row of B are both zeros.
pub fn shifts(inputs: &common::Inputs) -> Vec<i32> {
    let common::Shape { m, n, k } = inputs.shape;
    let bits = |v: f32| {
        let b = v.to_bits() & 0x7fff_ffff;
        (b != 0 && b < 0x7f80_0000).then_some(b as i32)
    };
    let exponent = |b: i32| (b >> 23) - 127;
    // (largest, smallest) nonzero finite magnitudes' bits of A's column p and of B's row p.
    let range = |values: &mut dyn Iterator<Item = f32>| {
        values
            .filter_map(bits)
            .fold(None, |r: Option<(i32, i32)>, b| Some(r.map_or((b, b), |(h, l)| (h.max(b), l.min(b)))))
    };
    let ranges: Vec<_> = (0..k)
        .map(|p| {
            (range(&mut (0..m).map(|i| inputs.a.at(i, p))), range(&mut (0..n).map(|j| inputs.b.at(p, j))))
        })
        .collect();
    let balance = |a: (i32, i32), b: (i32, i32)| {
        let (ea, eb, ea_lo, eb_lo) = (exponent(a.0), exponent(b.0), exponent(a.1), exponent(b.1));
        let lowest = (-126 - ea_lo).min(0).max(eb - 126).max(-126);
        let highest = (126 - ea).min((126 + eb_lo).max(0)).min(126);
        ((eb - ea) >> 1, lowest, highest)
    };
    let halves: Vec<i32> = ranges.iter().filter_map(|&(a, b)| Some(balance(a?, b?).0)).collect();
    let mean = if halves.is_empty() {
        0
    } else {
        (halves.iter().sum::<i32>() as f32 / halves.len() as f32).round_ties_even() as i32
    };
    ranges
        .iter()
        .map(|&(a, b)| match (a, b) {
            (Some(a), Some(b)) => {
                let (half, lowest, highest) = balance(a, b);
                if lowest <= highest { (half - mean).clamp(lowest, highest) } else { 0 }
            }
            (Some(a), None) => (-126 - exponent(a.1)).clamp(-126, 0),
            (None, Some(b)) => (126 + exponent(b.1)).clamp(0, 126),
            (None, None) => 0,
        })
        .collect()
}

/// `inputs` with A's column k times 2^s_k and B's row k times 2^−s_k ([`shifts`]): the same
/// product, as the step's residues see it.
pub fn equilibrated(inputs: &common::Inputs) -> common::Inputs {
    let (n, k) = (inputs.shape.n, inputs.shape.k);
    let s = shifts(inputs);
    let mut x = inputs.clone();
    for row in x.a.data.chunks_mut(k) {
        row.iter_mut().zip(&s).for_each(|(v, &e)| *v *= 2f32.powi(e));
    }
    for (row, &e) in x.b.data.chunks_mut(n).zip(&s) {
        row.iter_mut().for_each(|v| *v *= 2f32.powi(-e));
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Data scaled along K is taken back to the uniform family's scale (up to one shift common to
    /// every k), and its products stay bit for bit what they were.
    #[test]
    fn the_host_shifts_undo_a_scaling_along_k_and_keep_the_product() {
        use common::matrix::Family;
        let s = common::Shape::new(40, 30, 64).unwrap();
        let x = common::Inputs::family(s, 3, Family::KScaled(40));
        let y = equilibrated(&x);
        let u = common::Inputs::random(s, 3);
        for (i, j, p) in [(0, 0, 0), (39, 29, 63), (7, 11, 31)] {
            assert_eq!(y.a.at(i, p) * y.b.at(p, j), x.a.at(i, p) * x.b.at(p, j));
        }
        let spread = |z: &common::Inputs| {
            let e: Vec<i32> =
                z.a.data.iter().filter(|v| **v != 0.0).map(|v| v.abs().log2().floor() as i32).collect();
            e.iter().max().unwrap() - e.iter().min().unwrap()
        };
        assert!(
            spread(&x) > 60 && spread(&y) <= spread(&u) + 4,
            "{} {} {}",
            spread(&x),
            spread(&y),
            spread(&u)
        );
    }

    /// Every shape gets at least one piece of each operand, and no more pieces than it has rows
    /// (A) or columns (B) to give them; a 4096³ product about a thousand blocks of A's columns.
    #[test]
    fn the_pieces_cover_every_shape() {
        for (m, n, k) in
            [(1, 1, 1), (4096, 4096, 4096), (4_194_304, 4, 16), (257, 1, 65_537), (7, 3_000_000, 2)]
        {
            let s = Shape::new(m, n, k).unwrap();
            let (a, b) = chunks(s);
            assert!(a >= 1 && b >= 1 && a <= m.max(1) && b <= n.max(1), "{m}×{n}×{k}: {a}, {b}");
            assert!(blocks(s) >= 1);
        }
        assert_eq!(chunks(Shape::new(4096, 4096, 4096).unwrap()), (32, 2));
        assert_eq!(blocks(Shape::new(4096, 4096, 4096).unwrap()), 1024 + 1024);
    }

    #[test]
    fn the_summary_reads_as_words() {
        assert_eq!(words(&[0, 0, 0], 64), "along K: A's columns and B's rows already balanced, none scaled");
        let w = words(&[12, 11, 60], 64);
        assert!(w.contains("on 60 of 64 (s from -12 to 11)"), "{w}");
    }

    /// The module compiles for Hopper without spilling.
    #[test]
    #[ignore = "needs libnvrtc"]
    fn nvrtc_the_equilibration_compiles_without_spills() {
        let c = common::gpu::compile(SOURCE, FILE, "sm_90a", &[]).unwrap();
        assert!(c.has_function(ENTRY), "no {ENTRY}");
        let ptxas = common::gpu::PtxasInfo::parse_entry(&c.log, ENTRY).expect("ptxas's report");
        assert_eq!(ptxas.spill_bytes(), 0, "{ENTRY} spills");
    }
}

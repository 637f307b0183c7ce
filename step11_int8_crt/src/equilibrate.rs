//! Step 11's equilibration along K (`equilibrate.cu`): A's column k times 2^s_k and B's row k
//! times 2^−s_k, exact powers of two that leave A·B as it was, chosen so that each k's largest
//! magnitude in A's column and in B's row meet halfway, less the shift common to every k (which
//! would change no row's integers). The scaling to integers that follows
//! gives a whole row of A (column of B) one power of two, so data whose scales were moved along K
//! between A and B (activations and weights) would otherwise keep few bits of the entries far
//! below their row's largest, and miss FP32's accuracy. Queued at the head of every product
//! ([`crate::sequence`]); the residues are cut from the scaled copies, and the FP32 path reads the
//! unscaled A and B (the same products).

use anyhow::Result;

use common::hooks::{CudaSource, Queue};

pub const SOURCE: &str = include_str!("equilibrate.cu");
pub const FILE: &str = "step11_int8_crt/src/equilibrate.cu";
/// The module, loaded beside the step's on its first product.
pub const MODULE: CudaSource = CudaSource { source: SOURCE, file: FILE };

pub const RANGE_A_ENTRY: &str = "k_range_a";
pub const RANGE_B_ENTRY: &str = "k_range_b";
pub const SHIFTS_ENTRY: &str = "k_shifts";
pub const CENTER_ENTRY: &str = "k_center";
pub const SCALE_ENTRY: &str = "k_scale";

/// Rows of A a block of `k_range_a` reads (CHUNK in the kernel).
pub const CHUNK: usize = 256;
/// Most blocks in y of `k_range_a` and `k_range_b`, and of `k_scale` (whose blocks go round).
pub const RANGE_BLOCKS_Y: usize = 64;
pub const SCALE_BLOCKS: usize = 8192;

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

    #[test]
    fn the_summary_reads_as_words() {
        assert_eq!(words(&[0, 0, 0], 64), "along K: A's columns and B's rows already balanced, none scaled");
        let w = words(&[12, 11, 60], 64);
        assert!(w.contains("on 60 of 64 (s from -12 to 11)"), "{w}");
    }

    /// The module compiles for Hopper without spilling, with its five entry points.
    #[test]
    #[ignore = "needs libnvrtc"]
    fn nvrtc_the_equilibration_compiles_without_spills() {
        let c = common::gpu::compile(SOURCE, FILE, "sm_90a", &[]).unwrap();
        for entry in [RANGE_A_ENTRY, RANGE_B_ENTRY, SHIFTS_ENTRY, CENTER_ENTRY, SCALE_ENTRY] {
            assert!(c.has_function(entry), "no {entry}");
            let ptxas = common::gpu::PtxasInfo::parse_entry(&c.log, entry).expect("ptxas's report");
            assert_eq!(ptxas.spill_bytes(), 0, "{entry} spills");
        }
    }
}

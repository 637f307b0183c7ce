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

#[cfg(test)]
mod tests {
    use super::*;

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

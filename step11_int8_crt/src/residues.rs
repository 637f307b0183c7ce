//! Step 11's own product (its hooks are in `hooks.rs`): a product computed from the residues of
//! A and B modulo a few moduli, one INT8 product per modulus. Every launch queues,
//! in this order (timing counts them all):
//!
//! ```text
//! (stats zeroed: stats_len(shape) ints; the equilibration's ranges and summary zeroed)
//! equilibrate(const float* A, const float* B, int* range, int* shift, int* summary, int M,
//!             int N, int K, int a_chunks, int b_chunks)
//!     from its own module (`equilibrate.cu`): one read of A and of B, and the last block to
//!     finish turns their ranges along K into a shift s_k for each k; every kernel below reads
//!     A's column k times 2^s_k and B's row k times 2^−s_k (A·B unchanged)
//! scale_rows(const float* A, const int* shift, signed char* a_res, int* exps, int* stats,
//!            double* norms, double* l1, int M, int K, int pitch)
//!     one block per row of A, of K/16 threads rounded up to a warp, at most 256: the row's
//!     exponent for MODULI moduli into exps[i], Σx² into norms[i] and Σ|x| into l1[i], its
//!     residues into plane l of a_res (planes of M rows of pitch bytes, pitch = K rounded up to
//!     16), and what the kernel's rule for rows it computes apart needs into stats
//! col_norms(const float* B, const int* shift, double* part, int K, int N)
//!     blocks of 32 columns by 256 rows of B: sums of squares into part[chunk·N + n], sums of
//!     magnitudes and largest magnitudes into two more planes of chunks·N
//! scale_cols(const float* B, const int* shift, const double* part, signed char* b_res,
//!            int* exps, int* stats, double* norms, double* l1, int M, int K, int N, int pitch)
//!     blocks of 32 columns by 128 rows: as scale_rows for B's columns (exps + M is passed;
//!     Σx² into norms[M + n], Σ|x| into l1[M + n]), the residues of Bᵀ into b_res (planes of N
//!     rows of pitch bytes)
//! mark_paths(const int* exps, int* stats, int* marks, int M, int N)
//!     marks[v] for a row of A (v = i) or column of B (v = M + j): 1 on the FP32 path, 0 carried
//!     at MODULI moduli, 2 to be looked at again, and the flag in stats if any is 2
//! magnitudes_rows(const float* A, const int* shift, const int* exps, const double* l1,
//!                 const int* stats, unsigned short* mag_a, float2* sl1, int M, int N, int K,
//!                 int kpitch)
//! magnitudes_cols(const float* B, const int* shift, const int* exps, const double* l1,
//!                 const int* stats, unsigned short* mag_b, float2* sl1, int M, int N, int K,
//!                 int kpitch)
//!     where the flag is set: |A| and |B|ᵀ scaled and rounded down to bf16 (rows of kpitch
//!     entries, K rounded up to 8), and each vector's two scaled norms into sl1 (blocks of rows
//!     in turn; 32 columns by 128 of K a block)
//! bound(int M, int N, int K, int* stats, const float2* sl1, CUtensorMap a_map, CUtensorMap b_map)
//!     where the flag is set: the bf16 product of the magnitudes, 128×256 tiles, and each row's
//!     and column's ratio into stats; the maps are of mag_a and mag_b, two coordinates {k, row}
//! choose_moduli(const int* exps, const double* norms, int* stats, int* marks, int M, int N, int K)
//!     where the flag is set, one block: each vector's need, L (stats[2] where above MODULI), the
//!     histogram of needs, and marks 0 or 1
//! rescale_rows(const float* A, const int* shift, signed char* a_res, int* exps,
//!              const int* stats, const double* norms, int M, int K, int pitch)
//! rescale_cols(const float* B, const int* shift, signed char* b_res, int* exps,
//!              const int* stats, const double* norms, int M, int K, int N, int pitch)
//!     where L > MODULI, the exponents and L planes of residues again; else they return at once
//!     (grids of fewer blocks, which take the rows and tiles further on in turn)
//! matmul(int M, int N, int K, const float* A, const float* B, float* C,
//!        unsigned char* c_res, const int* exps, const int* marks, const int* stats,
//!        CUtensorMap a_map, CUtensorMap b_map)
//!     the step's grid, one z per modulus of the first pass (a block takes z, z + MODULI, … below
//!     L); the maps are of a_res and b_res, three coordinates {k, row, modulus}; c_res holds MOST
//!     planes of M rows of N bytes rounded up to 16
//! reconstruct(const unsigned char* c_res, const int* exps, const int* marks, const int* stats,
//!             float* C, int M, int N)
//!     blocks of 1024 columns (four a thread), a row of C a block in y (rows further on taken in
//!     turn), where L = MODULI; reconstruct_wide (the same arguments, fewer blocks in y) where
//!     L > MODULI; queued only when the kernel defines them (a kernel that rebuilds C itself
//!     does not)
//! the FP32 path of the marked rows and columns (step 09's `fp32_path`)
//! ```
//!
//! The list is written once, as data, in [`crate::sequence`], which plays it on either device;
//! this file holds the arithmetic the host shares with the kernels.

use anyhow::Result;

use common::Shape;

/// The moduli step 11's kernel knows, in the order it takes them: the first pass takes the first
/// MODULI, and the data may call for up to [`MOST`].
pub const MODULUS: [u64; MOST] =
    [256, 255, 253, 251, 247, 241, 239, 233, 229, 227, 223, 217, 211, 199, 197, 193];

/// How many moduli the kernel knows: their product stays below 2¹²⁸.
pub const MOST: usize = 16;

/// P, the product of the first `moduli` moduli.
pub fn product(moduli: usize) -> u128 {
    MODULUS[..moduli].iter().map(|&m| u128::from(m)).product()
}

/// How far the integers of a row can reach, T = √(P/2)·(1 − [`MARGIN`]), less the √K their
/// rounding may add (each entry moves by less than 1). A row of K equal entries then keeps
/// room/√K of each: the step asks for at least 2 (one bit).
pub fn room(moduli: usize, k: usize) -> f64 {
    (product(moduli) as f64 / 2.0).sqrt() * (1.0 - MARGIN) - (k as f64).sqrt()
}

/// The kernel's `exponent_for` on the host: the exponent e a vector of K entries with Σx² =
/// `norm2` is scaled by at `moduli` moduli, the largest with 2^e·‖x‖ ≤ [`room`] (`ilogb` of the
/// quotient, read off its exponent field); 0 for a vector of zeros.
pub fn exponent(norm2: f64, k: usize, moduli: usize) -> i32 {
    if norm2 == 0.0 {
        return 0;
    }
    ((room(moduli, k) / norm2.sqrt()).to_bits() >> 52 & 0x7ff) as i32 - 1023
}

/// T's margin below √(P/2), 2⁻²⁰: the kernel's `exponent_for` leaves the same.
pub const MARGIN: f64 = 1.0 / 1_048_576.0;

/// The entry points the extension queues around `matmul`.
pub const ROWS_ENTRY: &str = "scale_rows";
pub const NORMS_ENTRY: &str = "col_norms";
pub const COLS_ENTRY: &str = "scale_cols";
pub const MARKS_ENTRY: &str = "mark_paths";
pub const RESCALE_ROWS_ENTRY: &str = "rescale_rows";
pub const RESCALE_COLS_ENTRY: &str = "rescale_cols";
pub const RECONSTRUCT_ENTRY: &str = "reconstruct";
pub const RECONSTRUCT_WIDE_ENTRY: &str = "reconstruct_wide";
pub const MAGNITUDE_ROWS_ENTRY: &str = "magnitudes_rows";
pub const MAGNITUDE_COLS_ENTRY: &str = "magnitudes_cols";
pub const BOUND_ENTRY: &str = "bound";
pub const CHOOSE_ENTRY: &str = "choose_moduli";

/// The bound's tiles (kernel.cu's BM × BOUND_BN, 64 bf16 deep) and its four pipeline buffers of them in
/// shared memory, with their barriers and the swizzle's alignment.
pub(crate) const BOUND_ROWS: u32 = 128;
pub(crate) const BOUND_COLS: u32 = 256;
pub(crate) const BOUND_DEPTH: u32 = 64;
pub(crate) const BOUND_SMEM: u32 = 4 * (128 * (BOUND_ROWS + BOUND_COLS) + 16) + 1024;
/// Entries of each vector's count histogram in the statistics (kernel.cu's HIST_LEN): counts 0 to
/// MOST, and one for more than MOST.
pub const HIST_LEN: usize = MOST + 2;

/// Rows of B a block of `col_norms` sums.
pub const NORM_CHUNK: usize = 256;
/// Rows of K in a tile of `scale_cols` and `rescale_cols`.
pub const SCALE_TILE: usize = 128;
/// Columns of C a thread of the rebuild kernels takes: a block of 256 threads takes 1024.
pub const REBUILD_COLS: usize = 4;

/// The pitch, in bytes, of a residue matrix of `cols` columns: rows 16-byte aligned, as the copy
/// engine and 16-byte stores want them.
pub fn pitch(cols: usize) -> usize {
    cols.div_ceil(16) * 16
}

/// The ints of the statistics (kernel.cu's layout): q_A, q_B and the count taken; 2s + z and s
/// for each vector; the flag; the histogram of needs for rows and for columns; each vector's
/// ratio and need.
pub fn stats_len(shape: Shape) -> usize {
    3 + 4 * (shape.m + shape.n) + 1 + 2 * HIST_LEN
}

/// Where the flag and the histograms start in the statistics.
fn flag_at(shape: Shape) -> usize {
    3 + 2 * (shape.m + shape.n)
}

/// The pitch, in bf16 entries, of a matrix of magnitudes `k` deep: rows 16-byte aligned.
pub fn bf16_pitch(k: usize) -> usize {
    k.div_ceil(8) * 8
}

/// The moduli a product of `shape` took, read from its statistics by `read(from, len)`, and what
/// each row and column needed, in words; `first` the first pass's count, `forced` whether
/// `--moduli` forced it.
pub fn moduli_taken(
    mut read: impl FnMut(usize, usize) -> Result<Vec<i32>>,
    shape: Shape,
    first: usize,
    forced: bool,
) -> Result<(usize, String)> {
    let chosen = read(2, 1)?[0];
    let taken = first.max(chosen.max(0) as usize);
    let flag = read(flag_at(shape), 1 + 2 * HIST_LEN)?;
    let words = if forced {
        format!("{taken} moduli forced on every row and column (--moduli); no rule, no bound")
    } else if flag[0] == 0 {
        format!("every row and column is carried at the first pass's {first} moduli (the rule)")
    } else {
        needs_words(&flag[1..=HIST_LEN], &flag[1 + HIST_LEN..], first)
    };
    Ok((taken, words))
}

/// The histogram of needs, rows' and columns', in words: "7 for 4090 rows and 4096 columns, 9 for
/// 6 rows, more than 16 for 1 column".
fn needs_words(rows: &[i32], cols: &[i32], first: usize) -> String {
    let plural = |n: i32, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    let parts: Vec<String> = (0..HIST_LEN)
        .filter(|&l| rows[l] > 0 || cols[l] > 0)
        .map(|l| {
            let whom = match (rows[l], cols[l]) {
                (r, 0) => plural(r, "row"),
                (0, c) => plural(c, "column"),
                (r, c) => format!("{} and {}", plural(r, "row"), plural(c, "column")),
            };
            if l > MOST { format!("more than {MOST} for {whom}") } else { format!("{l} for {whom}") }
        })
        .collect();
    format!("the fewest moduli the rule or the bound allows (first pass {first}): {}", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The verifier holds step 11 to the rounding of seven moduli through its own copy of their
    /// product and of the exponent (common sits below the steps): the two must agree.
    #[test]
    fn the_verifiers_copy_of_the_scale_is_the_kernels() {
        assert_eq!(u128::from(common::verify::INT8_CRT_PRODUCT), product(7));
        for k in [1, 3, 4, 129, 4096, 65536, crate::K_MAX] {
            for norm2 in [1e-30, 0.37, 1.0, k as f64 / 3.0, 2.5e7, 1e30] {
                assert_eq!(
                    common::verify::integer_exponent(norm2, k),
                    exponent(norm2, k, 7),
                    "{norm2} at K = {k}"
                );
            }
        }
    }

    /// The needs line names each count with the rows and columns that needed it, and "more than
    /// 16" for the last entry of the histogram.
    #[test]
    fn the_needs_line_reads_the_histogram() {
        let (mut rows, mut cols) = (vec![0; HIST_LEN], vec![0; HIST_LEN]);
        rows[7] = 4055;
        cols[7] = 4060;
        rows[8] = 41;
        cols[8] = 36;
        cols[MOST + 1] = 1;
        assert_eq!(
            needs_words(&rows, &cols, 7),
            "the fewest moduli the rule or the bound allows (first pass 7): 7 for 4055 rows and 4060 columns, \
             8 for 41 rows and 36 columns, more than 16 for 1 column"
        );
    }
}

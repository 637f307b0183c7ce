//! Step 11's own product (its hooks, `ResidueHooks`): a product computed from the residues of
//! A and B modulo a few moduli, one INT8 product per modulus. Every launch queues,
//! in this order (timing counts them all):
//!
//! ```text
//! (stats zeroed: stats_len(shape) ints)
//! scale_rows(const float* A, signed char* a_res, int* exps, int* stats, double* norms,
//!            double* l1, int M, int K, int pitch)
//!     one block per row of A, of K/16 threads rounded up to a warp, at most 256: the row's
//!     exponent for MODULI moduli into exps[i], Σx² into norms[i] and Σ|x| into l1[i], its
//!     residues into plane l of a_res (planes of M rows of pitch bytes, pitch = K rounded up to
//!     16), and what the kernel's rule for rows it computes apart needs into stats
//! col_norms(const float* B, double* part, int K, int N)
//!     blocks of 32 columns by 256 rows of B: sums of squares into part[chunk·N + n], sums of
//!     magnitudes and largest magnitudes into two more planes of chunks·N
//! scale_cols(const float* B, const double* part, signed char* b_res, int* exps, int* stats,
//!            double* norms, double* l1, int M, int K, int N, int pitch)
//!     blocks of 32 columns by 128 rows: as scale_rows for B's columns (exps + M is passed;
//!     Σx² into norms[M + n], Σ|x| into l1[M + n]), the residues of Bᵀ into b_res (planes of N
//!     rows of pitch bytes)
//! mark_paths(const int* exps, int* stats, int* marks, int M, int N)
//!     marks[v] for a row of A (v = i) or column of B (v = M + j): 1 on the FP32 path, 0 carried
//!     at MODULI moduli, 2 to be looked at again, and the flag in stats if any is 2
//! magnitudes_rows(const float* A, const int* exps, const double* l1, const int* stats,
//!                 unsigned short* mag_a, float2* sl1, int M, int N, int K, int kpitch)
//! magnitudes_cols(const float* B, const int* exps, const double* l1, const int* stats,
//!                 unsigned short* mag_b, float2* sl1, int M, int N, int K, int kpitch)
//!     where the flag is set: |A| and |B|ᵀ scaled and rounded down to bf16 (rows of kpitch
//!     entries, K rounded up to 8), and each vector's two scaled norms into sl1 (blocks of rows
//!     in turn; 32 columns by 128 of K a block)
//! bound(int M, int N, int K, int* stats, const float2* sl1, CUtensorMap a_map, CUtensorMap b_map)
//!     where the flag is set: the bf16 product of the magnitudes, 128×256 tiles, and each row's
//!     and column's ratio into stats; the maps are of mag_a and mag_b, two coordinates {k, row}
//! choose_moduli(const int* exps, const double* norms, int* stats, int* marks, int M, int N, int K)
//!     where the flag is set, one block: each vector's need, L (stats[2] where above MODULI), the
//!     histogram of needs, and marks 0 or 1
//! rescale_rows(const float* A, signed char* a_res, int* exps, const int* stats,
//!              const double* norms, int M, int K, int pitch)
//! rescale_cols(const float* B, signed char* b_res, int* exps, const int* stats,
//!              const double* norms, int M, int K, int N, int pitch)
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
//! The list is written once, in [`crate::sequence`]; this file plays it on a GPU, where the
//! workspaces are kept from launch to launch and grown when a shape needs more.

use std::collections::HashMap;
use std::sync::Mutex;

use anyhow::{Result, anyhow};
use cudarc::driver::sys::CUfunction_attribute as FnAttr;
use cudarc::driver::{CudaFunction, CudaSlice, DevicePtr, LaunchArgs, LaunchConfig, PushKernelArg};

use common::Shape;
use common::gpu::{Gpu, Kernel};
use common::hooks::{
    EmulatedCall, EmulatedOperands, Hooks, KernelCall, Operands, OwnProduct, Paths, ReportLine, StepOption,
};
use common::params::Params;
use common::tma::{Element, TensorMap, TmaBox, encode_as};
use step09_3xtf32::fp32_path::Fp32Path;

use crate::MODULI;
use crate::sequence::{Buf, Item, Val, Work, on_emulator, read_stats, sequence};

/// Pushes resolved arguments onto a launch, in order.
fn push<'a>(builder: &mut LaunchArgs<'a>, args: &'a [Resolved]) {
    for arg in args {
        match arg {
            Resolved::I32(i) => builder.arg(i),
            Resolved::Ptr(p) => builder.arg(p),
            Resolved::Map(m) => builder.arg(m),
        };
    }
}

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

/// The bound's tiles (kernel.cu's BM × BOUND_BN, 64 bf16 deep) and its four stages of them in
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

/// Device bytes a product of `shape` needs besides A, B and C, whatever the first pass's count:
/// every workspace of the sequence ([`Work`]: the residues of A, of Bᵀ and of C for all
/// [`MOST`] moduli the data may call for, the bound's magnitudes, the exponents, norms,
/// statistics and marks), and the FP32 path's lists.
pub fn workspace_bytes(shape: Shape) -> u64 {
    Work::ALL
        .iter()
        .fold(0u64, |sum, w| sum.saturating_add(w.bytes(shape, true)))
        .saturating_add(step09_3xtf32::fp32_path::workspace_bytes(shape))
}

/// The entry points of one compiled kernel, and the workspaces its launches keep: the GPU's
/// player of [`sequence`].
pub struct Residues {
    entries: HashMap<&'static str, CudaFunction>,
    rebuilds: bool,
    state: Mutex<State>,
    fp32: Fp32Path,
}

#[derive(Default)]
struct State {
    /// One slot per [`Work`], in the order of [`Work::ALL`].
    works: [Option<CudaSlice<u8>>; Work::ALL.len()],
    /// The maps of the last launch, and what each was encoded for.
    maps: Vec<(MapKey, TensorMap)>,
    /// The first pass's moduli at the last launch, its shape, and whether the count was forced.
    first: usize,
    shape: Option<Shape>,
    forced: bool,
}

/// What a map is encoded for: the element, the address, the dimensions and the box.
type MapKey = (Element, u64, [usize; 4], TmaBox);

/// An argument resolved for the GPU: an int, or a device address or a map, by value.
enum Resolved {
    I32(i32),
    Ptr(u64),
    Map(TensorMap),
}

impl Residues {
    /// Finds the entry points in the step's module.
    pub fn new(kernel: &Kernel) -> Result<Self> {
        let rebuilds = kernel.has_entry(RECONSTRUCT_ENTRY);
        let mut entries = HashMap::new();
        let mut names = vec![
            ROWS_ENTRY,
            NORMS_ENTRY,
            COLS_ENTRY,
            MARKS_ENTRY,
            RESCALE_ROWS_ENTRY,
            RESCALE_COLS_ENTRY,
            MAGNITUDE_ROWS_ENTRY,
            MAGNITUDE_COLS_ENTRY,
            BOUND_ENTRY,
            CHOOSE_ENTRY,
        ];
        if rebuilds {
            names.extend([RECONSTRUCT_ENTRY, RECONSTRUCT_WIDE_ENTRY]);
        }
        for name in names {
            entries.insert(name, kernel.entry(name)?);
        }
        entries[BOUND_ENTRY]
            .set_attribute(FnAttr::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, BOUND_SMEM as i32)
            .map_err(|e| anyhow!("could not give the bound {BOUND_SMEM} bytes of shared memory: {e:?}"))?;
        Ok(Self { entries, rebuilds, state: Mutex::default(), fp32: Fp32Path::default() })
    }

    /// Queues one product C = A·B of the call's shape with a first pass of MODULI moduli: the
    /// items of [`sequence`] in order, on the GPU's stream. The boxes are counted in bytes of the
    /// residues.
    fn queue(&self, call: &KernelCall, (a, b, c): Operands) -> Result<()> {
        let (gpu, shape) = (call.gpu, call.shape);
        let boxes =
            call.boxes.ok_or_else(|| anyhow!("step 11's launch needs the boxes of its tensor maps"))?;
        let mut state = self.state.lock().map_err(|_| anyhow!("the residues' state lock was poisoned"))?;
        state.first = call.params.get(MODULI.name) as usize;
        state.shape = Some(shape);
        state.forced = call.params.find(crate::COUNT.name).is_some_and(|c| c > 0);
        let mut at = [0u64; Work::ALL.len()];
        for (i, work) in Work::ALL.into_iter().enumerate() {
            let bytes = usize::try_from(work.bytes(shape, self.rebuilds))?;
            let w = common::pad::workspace(gpu, &mut state.works[i], bytes)?;
            if work.zeroed() {
                gpu.stream.memset_zeros(w).map_err(|e| anyhow!("zeroing the statistics: {e:?}"))?;
            }
            at[i] = w.device_ptr(&gpu.stream).0;
        }
        let operand = |s: &CudaSlice<f32>| s.device_ptr(&gpu.stream).0;
        let [pa, pb, pc] = [operand(a), operand(b), operand(c)];
        let address = |buf: Buf| match buf {
            Buf::A => pa,
            Buf::B => pb,
            Buf::C => pc,
            Buf::Work(work, offset) => at[work as usize] + offset as u64,
        };
        let mut resolve = |vals: &[Val]| -> Result<Vec<Resolved>> {
            let mut out = Vec::with_capacity(vals.len());
            for v in vals {
                out.push(match *v {
                    Val::I32(i) => Resolved::I32(i),
                    Val::Ptr(buf) => Resolved::Ptr(address(buf)),
                    Val::Map { element, of, dims, bx } => {
                        let key = (element, at[of as usize], dims, bx);
                        let found = state.maps.iter().find(|(k, _)| *k == key).map(|(_, m)| *m);
                        let map = match found {
                            Some(map) => map,
                            None => {
                                let map = encode_as(element, key.1, dims, bx)?;
                                state.maps.truncate(7);
                                state.maps.insert(0, (key, map));
                                map
                            }
                        };
                        Resolved::Map(map)
                    }
                });
            }
            Ok(out)
        };
        for item in sequence(shape, self.rebuilds, boxes) {
            match item {
                Item::Kernel { entry, grid, block, smem, args } => {
                    let args = resolve(&args)?;
                    let mut builder = gpu.stream.launch_builder(&self.entries[entry]);
                    push(&mut builder, &args);
                    let cfg =
                        LaunchConfig { grid_dim: grid, block_dim: (block, 1, 1), shared_mem_bytes: smem };
                    // SAFETY: the arguments match the signatures in the module docs, as
                    // `sequence` lists them; the workspaces hold what those signatures address
                    // for `shape` (allocated above at the sizes `Work::bytes` gives), and A, B and
                    // C hold the shape (checked by the caller).
                    unsafe { builder.launch(cfg) }
                        .map_err(|e| anyhow!("the kernel's {entry} failed to launch: {e:?}"))?;
                }
                Item::Product { args } => {
                    let args = resolve(&args)?;
                    let mut builder = call.args((a, b, &mut *c));
                    push(&mut builder, &args);
                    // SAFETY: as for the kernels above; the maps address the residue workspaces.
                    unsafe { builder.launch(call.cfg) }
                        .map_err(|e| anyhow!("the kernel failed to launch: {e:?}"))?;
                }
                Item::Fp32Path { marks } => self.fp32.enqueue(gpu, (a, b, &mut *c), address(marks), shape)?,
            }
        }
        Ok(())
    }

    /// The moduli the last product took (after it has finished): the first pass's, or more where
    /// the data called for them; and what each row and column needed, in words.
    pub fn moduli(&self, gpu: &Gpu) -> Result<Option<(usize, String)>> {
        let state = self.state.lock().map_err(|_| anyhow!("the residues' state lock was poisoned"))?;
        let (Some(stats), Some(shape)) = (&state.works[Work::Stats as usize], state.shape) else {
            return Ok(None);
        };
        let read = |from: usize, len: usize| {
            let mut bytes = vec![0u8; 4 * len];
            gpu.stream
                .memcpy_dtoh(&stats.slice(4 * from..4 * (from + len)), &mut bytes)
                .map_err(|e| anyhow!("reading the moduli the product took: {e:?}"))?;
            Ok(bytes.chunks_exact(4).map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
        };
        moduli_taken(read, shape, state.first, state.forced).map(Some)
    }
}

/// The moduli a product of `shape` took, read from its statistics by `read(from, len)`, and what
/// each row and column needed, in words; `first` the first pass's count, `forced` whether
/// `--moduli` forced it.
pub fn moduli_taken(
    read: impl Fn(usize, usize) -> Result<Vec<i32>>,
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

/// Step 11's hooks: every launch is the residues' ([`Residues`]).
pub struct ResidueHooks;

impl Hooks for ResidueHooks {
    /// The same sequence on the emulator ([`crate::sequence::on_emulator`]), with the moduli the
    /// product took read after it, as a GPU run reads them.
    fn emulate(&self, call: &mut EmulatedCall, operands: EmulatedOperands) -> Result<()> {
        let boxes =
            call.boxes.ok_or_else(|| anyhow!("step 11's launch needs the boxes of its tensor maps"))?;
        let rebuilds = call.machine.has_kernel(RECONSTRUCT_ENTRY);
        let items = sequence(call.shape, rebuilds, boxes);
        let stats = on_emulator(call, operands, &items)?;
        let first = call.params.get(MODULI.name) as usize;
        let forced = call.params.find(crate::COUNT.name).is_some_and(|c| c > 0);
        let read = |from, len| read_stats(call, stats, from, len);
        let (taken, needs) = moduli_taken(read, call.shape, first, forced)?;
        call.paths = call.paths.take().map(|p| with_moduli(p, Some((taken, needs))));
        Ok(())
    }

    /// `--moduli N`: N moduli forced on every row and column.
    fn option(&self) -> Option<StepOption> {
        Some(StepOption {
            long: "moduli",
            value_name: "N",
            help: "Force how many moduli this step takes on every row and column, 2 to 16, its rule and bound off (its parameters COUNT = N and MODULI = N, or 8 above 8): to see how few the data would need",
            range: (2, 16),
            apply: force_moduli,
        })
    }

    fn own_product(&self, kernel: &Kernel) -> Result<Option<Box<dyn OwnProduct>>> {
        Ok(Some(Box::new(Residues::new(kernel)?)))
    }

    fn workspace_bytes(&self, _params: &Params, shape: Shape) -> u64 {
        workspace_bytes(shape)
    }

    fn report_line(&self, params: &Params, _shape: Shape, _grid: (u32, u32, u32)) -> ReportLine {
        Some((
            "moduli",
            format!(
                "{} INT8 products, one per modulus, or up to {MOST} where the data needs more (the paths line says how many), after A and B are scaled to integers and cut into residues, before C is rebuilt from them (all counted in the time)",
                params.get(MODULI.name)
            ),
        ))
    }
}

impl OwnProduct for Residues {
    fn enqueue(&self, call: &KernelCall, operands: Operands) -> Result<()> {
        self.queue(call, operands)
    }

    fn time_paths_next(&self, gpu: &Gpu) -> Result<bool> {
        self.fp32.time_next(gpu).map(|()| true)
    }

    /// The FP32 path's counts, with the moduli the product took.
    fn paths(&self, gpu: &Gpu) -> Result<Option<Paths>> {
        let moduli = self.moduli(gpu)?;
        Ok(self.fp32.paths(gpu)?.map(|p| with_moduli(p, moduli)))
    }
}

/// The FP32 path's counts with the step's own words: the moduli the product took, and how many
/// each row and column needed.
fn with_moduli(paths: Paths, moduli: Option<(usize, String)>) -> Paths {
    let own = match &moduli {
        Some((taken, _)) => format!("scaled to integers ({taken} moduli)"),
        None => "scaled to integers".to_owned(),
    };
    let (products, more) = match moduli {
        Some((taken, needs)) => (Some(taken), Some(("needs", needs))),
        None => (None, None),
    };
    Paths { own, products, more, ..paths }
}

/// `--moduli N` as parameters: MODULI first, so that a `--param MODULI` given as well still wins,
/// and COUNT last.
fn force_moduli(n: u32, params: &mut Vec<(String, u32)>) {
    params.insert(0, (MODULI.name.to_owned(), n.min(8)));
    params.push((crate::COUNT.name.to_owned(), n));
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

    #[test]
    fn the_workspace_counts_every_residue_plane() {
        let s = Shape::new(3, 5, 7).unwrap();
        // 16 moduli × (3 + 5 rows of 16 bytes + 3 rows of 16); the bf16 magnitudes of 8 vectors
        // 8 deep; exponents, statistics (3, 4 for each of 8 vectors, the flag and two
        // histograms of 18), marks; each vector's two scaled norms (floats), Σx² and ‖·‖₁ (doubles),
        // one chunk of norms in three planes; the FP32 path's lists, counts and the pieces of
        // sixteen split blocks (one tile's K in sixteen).
        assert_eq!(
            workspace_bytes(s),
            16 * (8 * 16 + 3 * 16)
                + 2 * 8 * 8
                + 4 * 8
                + 4 * (3 + 4 * 8 + 1 + 2 * 18)
                + 4 * 8
                + 8 * 8
                + 2 * 8 * 8
                + 3 * 8 * 5
                + 4 * (11 + 3 + 256 + 16 * 128 * 256)
        );
        assert_eq!(pitch(16), 16);
        assert_eq!(pitch(17), 32);
    }
}

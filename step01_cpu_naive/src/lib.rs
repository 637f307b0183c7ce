//! Step 01: the textbook triple loop on the CPU.
//!
//! C[i][j] is the dot product of row i of A with column j of B. Each term is one multiply and
//! one add, so the product costs 2·M·N·K floating-point operations; this loop performs them one
//! at a time on one core, accumulating in f32 as the GPU kernels will. It is the baseline every
//! later step is measured against, and the definition the kernels must agree with.

// The loop, from matmul.rs; with `STEP01_LOOP=FILE`, from FILE, a copy of matmul.rs that is yours
// to change (build.rs chooses, and docs/src/step01.md's exercise 3 uses it).
include!(env!("STEP01_LOOP_FILE"));

/// The size a run uses when none is given: a few seconds at most on a laptop.
pub const DEFAULT_SIZE: usize = 512;

pub const IDEA: &str = "the textbook triple loop on one CPU core, the baseline and the definition";

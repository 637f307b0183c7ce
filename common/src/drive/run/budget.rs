//! A run's memory budget: the bytes a shape needs on the device and on the host, what is free
//! (the driver's figure, `/proc`'s), and the one-sentence refusal of a shape that does not fit,
//! before anything is allocated.

use anyhow::{Result, bail};

use crate::gpu::Gpu;
use crate::matrix::Shape;
use crate::params::Params;
use crate::step::GpuStep;

/// Device memory the run needs: A, B and C, and a second C for cuBLAS.
pub fn memory_needed(shape: Shape, with_cublas: bool) -> u64 {
    shape.f32_bytes() + if with_cublas { 4 * (shape.m * shape.n) as u64 } else { 0 }
}

/// Refuses a shape whose buffers, and `extra` bytes a step needs besides them (Bᵀ), do not fit
/// in `free` bytes, before any allocation fails.
pub fn check_fits(shape: Shape, with_cublas: bool, extra: u64, free: u64, device: &str) -> Result<()> {
    let need = memory_needed(shape, with_cublas).saturating_add(extra);
    if need > free {
        bail!(
            "the shape {shape} needs {:.2} GiB of GPU memory but {device} has {:.2} GiB free; choose a smaller shape",
            gib(need),
            gib(free)
        );
    }
    Ok(())
}

fn gib(bytes: u64) -> f64 {
    bytes as f64 / (1u64 << 30) as f64
}

/// Bytes of Bᵀ a kernel that wants it needs besides A, B and C (on the device, and twice on the
/// host while it is made: B copied back and Bᵀ).
pub(super) fn transposed_b_bytes(step: &GpuStep, params: &Params, shape: Shape) -> u64 {
    if (step.b_transposed)(params) { 4 * (shape.k * shape.n) as u64 } else { 0 }
}

/// Device bytes a step's launch needs besides A, B and C: Bᵀ, the padded copies of a step whose
/// launch pads rows, and what the step's own product adds (its hooks: step 10's slices of a split
/// product, step 11's residues), which launches on the shape the kernel multiplies (padded where
/// the launch pads rows).
pub(super) fn device_workspace_bytes(step: &GpuStep, params: &Params, shape: Shape) -> u64 {
    let padded = step.padded_shape(params, shape);
    (transposed_b_bytes(step, params, shape) + crate::pad::workspace_bytes(padded))
        .saturating_add(step.hooks.workspace_bytes(params, padded.unwrap_or(shape)))
}

/// [`check_fits`] on the GPU's free memory (its whole memory where the driver gives no figure).
pub(super) fn check_memory(gpu: &Gpu, shape: Shape, with_cublas: bool, extra: u64) -> Result<()> {
    let free = gpu.ctx.mem_get_info().map(|(free, _)| free as u64).unwrap_or(gpu.info.total_mem as u64);
    check_fits(shape, with_cublas, extra, free, &gpu.info.name)
}

/// The most bytes one buffer of the emulator's global memory holds: its buffers lie 2³⁶ bytes
/// apart in its address space (`ptx_emulator::memory::BUFFER_SHIFT`).
pub const EMULATOR_BUFFER_BYTES: u64 = 1 << ptx_emulator::memory::BUFFER_SHIFT;

/// The longest a whole emulation may take (a day), at the emulator's fastest rate on this
/// machine's threads: past it a shape is refused, as beyond the emulator.
pub const EMULATION_LIMIT_SECONDS: f64 = 86_400.0;

/// Refuses, before anything is drawn or allocated, a shape the emulator cannot take: a matrix
/// larger than one of its buffers holds, or, for a `whole` emulation (not `--scaled`), a product
/// that would take longer than [`EMULATION_LIMIT_SECONDS`] at `flops_per_second`.
pub fn check_emulator_fits(shape: Shape, whole: bool, flops_per_second: f64) -> Result<()> {
    let Shape { m, n, k } = shape;
    for (name, rows, cols) in [("A", m, k), ("B", k, n), ("C", m, n)] {
        let bytes = 4 * (rows * cols) as u64;
        if bytes > EMULATOR_BUFFER_BYTES {
            bail!(
                "{name} of the shape {shape} takes {:.1} GiB, more than the {:.0} GiB one buffer of the \
                 emulator holds; choose a smaller shape, or run it on a GPU",
                gib(bytes),
                gib(EMULATOR_BUFFER_BYTES)
            );
        }
    }
    let seconds = shape.flops() / flops_per_second;
    if whole && seconds > EMULATION_LIMIT_SECONDS {
        bail!(
            "emulating {shape} whole would take at least {:.0} days here ({:.0} GFLOP at {:.0} MFLOP/s), \
             past the day an emulated run may take; choose a smaller shape, add --scaled to predict \
             its time from a few blocks, or run it on a GPU",
            seconds / EMULATION_LIMIT_SECONDS,
            shape.flops() / 1e9,
            flops_per_second / 1e6
        );
    }
    Ok(())
}

/// Host memory a run needs at its peak: A and B in f32, the result, and with verification the
/// f64 reference (C and |A|·|B|) with its work arrays (A, B, |A| and |B| in f64).
pub fn host_memory_needed(shape: Shape, verify: bool) -> u64 {
    let (ab, c) = ((shape.m * shape.k + shape.k * shape.n) as u64, (shape.m * shape.n) as u64);
    // Verifying: the reference's C and |A|·|B| and one more M×N product at a time, in f64, and
    // two pairs of f64 operands while one replaces the other.
    4 * ab + 4 * c + if verify { 16 * ab + 24 * c } else { 0 }
}

/// Host memory this program can still take: the kernel's MemAvailable, or what is left under
/// the process's address-space limit (`ulimit -v`) when that is lower; None when neither can be
/// read.
pub fn host_memory_available() -> Option<u64> {
    let field = |text: &str, name: &str, col: usize| -> Option<u64> {
        text.lines().find(|l| l.starts_with(name))?.split_whitespace().nth(col)?.parse().ok()
    };
    let read = |path: &str| std::fs::read_to_string(path).ok();
    let available = read("/proc/meminfo").and_then(|t| field(&t, "MemAvailable:", 1)).map(|kib| kib * 1024);
    // "Max address space   <soft> <hard> bytes"; "unlimited" does not parse. What is mapped
    // already (VmSize, in KiB) counts against it.
    let limit = read("/proc/self/limits").and_then(|t| field(&t, "Max address space", 3));
    let mapped = read("/proc/self/status").and_then(|t| field(&t, "VmSize:", 1)).map(|kib| kib * 1024);
    let left = limit.map(|l| l.saturating_sub(mapped.unwrap_or(0)));
    match (available, left) {
        (Some(a), Some(l)) => Some(a.min(l)),
        (a, l) => a.or(l),
    }
}

/// Refuses, before anything is allocated, a shape whose host buffers, and `extra` bytes a step
/// needs besides them, exceed `available` bytes; `emulated`: the extra bytes hold the emulator's
/// global memory (A, B, C and the step's workspaces), which the sentence names.
pub fn check_host_fits(
    shape: Shape,
    verify: bool,
    (extra, emulated): (u64, bool),
    available: Option<u64>,
) -> Result<()> {
    let need = host_memory_needed(shape, verify) + extra;
    match available {
        Some(free) if need > free => bail!(
            "the shape {shape} needs {:.1} GiB of host memory for {}{} but this machine has {:.1} GiB \
             available; choose a smaller shape{}",
            gib(need),
            if verify { "the inputs, the result and the f64 reference" } else { "the inputs and the result" },
            if emulated { " (with the emulator's copies of A, B and C)" } else { "" },
            gib(free),
            if verify { " or add --no-verify" } else { "" }
        ),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_beyond_free_memory_are_refused_before_allocating() {
        let s = Shape::square(1024).unwrap();
        assert_eq!(memory_needed(s, false), 3 * 4 * 1024 * 1024);
        assert_eq!(memory_needed(s, true), 4 * 4 * 1024 * 1024);
        assert!(check_fits(s, true, 0, 16 << 20, "GPU").is_ok());
        assert!(check_fits(s, true, 1, 16 << 20, "GPU").is_err(), "Bᵀ's bytes count too");
        let err = check_fits(s, true, 0, (16 << 20) - 1, "Test GPU").unwrap_err().to_string();
        assert!(err.contains("needs 0.02 GiB of GPU memory but Test GPU has 0.02 GiB free"), "{err}");
    }

    #[test]
    fn host_memory_counts_inputs_result_and_reference() {
        let s = Shape::new(2, 3, 5).unwrap();
        // A and B: 10 + 15 elements; C: 6.
        assert_eq!(host_memory_needed(s, false), 4 * 25 + 4 * 6);
        assert_eq!(host_memory_needed(s, true), 20 * 25 + 28 * 6);
    }

    #[test]
    fn shapes_beyond_host_memory_are_refused_in_one_sentence() {
        let s = Shape::new(46_340, 46_340, 1).unwrap();
        let err = check_host_fits(s, true, (0, false), Some(24 << 30)).unwrap_err().to_string();
        assert!(err.starts_with("the shape M=46340 N=46340 K=1 needs 56.0 GiB of host memory"), "{err}");
        assert!(err.contains("24.0 GiB available") && err.contains("--no-verify"), "{err}");
        assert!(check_host_fits(s, false, (0, false), Some(24 << 30)).is_ok());
        let err = check_host_fits(s, false, (24 << 30, true), Some(24 << 30)).unwrap_err().to_string();
        assert!(err.contains("(with the emulator's copies of A, B and C)"), "extra bytes count too: {err}");
        assert!(check_host_fits(s, true, (0, false), None).is_ok(), "no figure to check against");
    }

    /// A matrix past one of the emulator's buffers is refused whole or scaled; a whole emulation
    /// past a day at the rate given is refused, a scaled one is not.
    #[test]
    fn shapes_beyond_the_emulator_are_refused_in_one_sentence() {
        let rate = 184e6;
        assert!(check_emulator_fits(Shape::square(2048).unwrap(), true, rate).is_ok());
        // 50000³: 2.5·10¹⁴ FLOP, at 184 MFLOP/s about 16 days.
        let big = Shape::square(50_000).unwrap();
        let err = check_emulator_fits(big, true, rate).unwrap_err().to_string();
        assert!(
            err.starts_with("emulating M=50000 N=50000 K=50000 whole would take at least 16 days"),
            "{err}"
        );
        assert!(err.contains("past the day an emulated run may take") && !err.contains('\n'), "{err}");
        assert!(check_emulator_fits(big, false, rate).is_ok(), "a scaled run emulates a few blocks");
        // A: 2^34 + 1 floats, one past 64 GiB.
        let tall = Shape::new((1 << 34) + 1, 1, 1).unwrap();
        let err = check_emulator_fits(tall, false, rate).unwrap_err().to_string();
        assert!(err.contains("A of the shape") && err.contains("more than the 64 GiB one buffer"), "{err}");
    }

    /// Hooks whose launch needs one float per element of the C it is given.
    struct PerElement;

    impl crate::hooks::Hooks for PerElement {
        fn workspace_bytes(&self, _params: &Params, shape: Shape) -> u64 {
            4 * (shape.m * shape.n) as u64
        }
    }

    #[test]
    fn the_hooks_budget_the_shape_the_kernel_multiplies() {
        const STEP: GpuStep =
            GpuStep { name: "test", pads_rows: true, hooks: &PerElement, ..GpuStep::DEFAULT };
        let params = Params::defaults(&[]);
        // N = 5 is padded to 8: the hooks count the padded C, 3 × 8, beside the padded copies.
        let odd = Shape::new(3, 5, 7).unwrap();
        let padded = crate::pad::padded_shape(odd);
        assert_eq!(padded, Some(Shape::new(3, 8, 8).unwrap()));
        assert_eq!(
            device_workspace_bytes(&STEP, &params, odd),
            crate::pad::workspace_bytes(padded) + 4 * 3 * 8
        );
        // A shape that needs no padding is budgeted as it is.
        let even = Shape::new(64, 64, 64).unwrap();
        assert_eq!(device_workspace_bytes(&STEP, &params, even), 4 * 64 * 64);
    }
}

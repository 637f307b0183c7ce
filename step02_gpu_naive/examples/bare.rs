//! Step 02 without the framework: what `common` does for every lab, written out once with cudarc.
//!
//!     cargo run --release -p step02_gpu_naive --example bare

use std::process::ExitCode;

use cudarc::driver::{CudaContext, LaunchConfig, PushKernelArg};
use cudarc::nvrtc::{CompileOptions, compile_ptx_with_opts};

/// The kernel's -D constants, at the defaults of step02_gpu_naive/src/lib.rs.
const BLOCK: u32 = 32;
const COALESCED: u32 = 1;

fn main() -> ExitCode {
    // SAFETY: each call only tries to open a shared library.
    let driver = unsafe { cudarc::driver::sys::is_culib_present() };
    let nvrtc = unsafe { cudarc::nvrtc::sys::is_culib_present() };
    if !driver || !nvrtc {
        let missing = if driver { "NVRTC (libnvrtc)" } else { "NVIDIA driver (libcuda)" };
        eprintln!("bare needs an NVIDIA GPU, its driver and NVRTC, and found no {missing}.");
        return ExitCode::FAILURE;
    }
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("bare: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Multiplies on the GPU and checks the product: true when every element passes. (Public so
/// that the step's tests can run it too.)
// ANCHOR: run
pub fn run() -> anyhow::Result<bool> {
    let (m, n, k) = (256, 200, 384);
    let input = |len: usize, seed: usize| -> Vec<f32> {
        (0..len).map(|i| ((i * 7919 + seed) % 1000) as f32 / 500.0 - 1.0).collect()
    };
    let (a, b) = (input(m * k, 1), input(k * n, 2));

    // 1. Compile for this GPU, the constants passed as -D defines.
    let ctx = CudaContext::new(0)?;
    let (major, minor) = ctx.compute_capability()?;
    let options = vec![
        format!("--gpu-architecture=compute_{major}{minor}"),
        format!("-DBLOCK={BLOCK}"),
        format!("-DCOALESCED={COALESCED}"),
        // The type of an offset into A, B or C: int, as no matrix here passes 2^31 - 1 elements.
        "-Doffset_t=int".to_owned(),
    ];
    let kernel = include_str!("../src/kernel.cu");
    let ptx = compile_ptx_with_opts(kernel, CompileOptions { options, ..Default::default() })?;
    let matmul = ctx.load_module(ptx)?.load_function("matmul")?;

    // 2. Allocate: A and B copied to the GPU, C zeroed.
    let stream = ctx.default_stream();
    let (a_gpu, b_gpu) = (stream.clone_htod(&a)?, stream.clone_htod(&b)?);
    let mut c_gpu = stream.alloc_zeros::<f32>(m * n)?;

    // 3. Launch BLOCK×BLOCK blocks, x along the columns of C, the grid rounded up.
    let cfg = LaunchConfig {
        grid_dim: ((n as u32).div_ceil(BLOCK), (m as u32).div_ceil(BLOCK), 1),
        block_dim: (BLOCK, BLOCK, 1),
        shared_mem_bytes: 0,
    };
    let (mi, ni, ki) = (m as i32, n as i32, k as i32);
    let mut launch = stream.launch_builder(&matmul);
    launch.arg(&mi).arg(&ni).arg(&ki).arg(&a_gpu).arg(&b_gpu).arg(&mut c_gpu);
    // SAFETY: the arguments match matmul(int, int, int, const float*, const float*, float*),
    // and the buffers hold M·K, K·N and M·N floats.
    unsafe { launch.launch(cfg) }?;

    // 4. Copy C back (this waits for the kernel to finish).
    let c = stream.clone_dtoh(&c_gpu)?;

    // 5. Verify each element: its error relative to the sum of its terms' sizes, at most K·ε.
    let mut worst = 0.0f64;
    for (i, j) in (0..m).flat_map(|i| (0..n).map(move |j| (i, j))) {
        let terms = (0..k).map(|p| f64::from(a[i * k + p]) * f64::from(b[p * n + j]));
        let (want, size) = terms.fold((0.0, 0.0), |(s, t), x| (s + x, t + x.abs()));
        worst = worst.max((f64::from(c[i * n + j]) - want).abs() / size.max(f64::MIN_POSITIVE));
    }
    let limit = k as f64 * f64::from(f32::EPSILON);
    println!("{m}×{k} times {k}×{n}: max relative error {worst:.1e}, limit {limit:.1e}");
    println!("{}", if worst <= limit { "PASS" } else { "FAIL" });
    Ok(worst <= limit)
}
// ANCHOR_END: run

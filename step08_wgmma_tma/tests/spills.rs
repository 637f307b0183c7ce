//! A learner's kernel that spills: the step's kernel without `setmaxnreg`, which ptxas makes
//! spill, runs (on the emulator here, on a GPU alike) and its report names the spill.

use common::testing;
use step08_wgmma_tma::STEP;

const BIN: &str = env!("CARGO_BIN_EXE_step08_wgmma_tma");

/// The kernel without its two `setmaxnreg` instructions.
fn without_setmaxnreg() -> String {
    let kept: Vec<&str> = STEP.source.lines().filter(|l| !l.contains("asm volatile(\"setmaxnreg")).collect();
    assert_eq!(kept.len() + 2, STEP.source.lines().count(), "the kernel has two setmaxnreg lines");
    kept.join("\n") + "\n"
}

/// `--compile-only` names the spill and says a run runs the set; the emulated run verifies it
/// and its report's `spills` line gives the bytes stored and loaded a thread.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_a_kernel_without_setmaxnreg_spills_runs_and_names_its_spill() {
    let path = testing::scratch_file("without_setmaxnreg.cu", &without_setmaxnreg());
    let kernel = path.to_str().unwrap();
    let (code, out, err) = testing::run_for_output(BIN, &["--compile-only", "--kernel", kernel]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("note     a run runs this set and its report names the spill"), "{out}");
    let no_gpu = [("CUDA_VISIBLE_DEVICES", "")];
    let ran =
        testing::run_for_report(BIN, &["--kernel", kernel, "-m", "256", "-n", "128", "-k", "64"], &no_gpu);
    assert_eq!(ran.code, Some(0), "{}{}", ran.out, ran.err);
    assert!(ran.passed(), "{}", ran.out);
    let line =
        ran.out.lines().find(|l| l.starts_with("  spills   ")).unwrap_or_else(|| panic!("{}", ran.out));
    assert!(line.contains("B stored and") && line.contains("B loaded a thread by spill code"), "{line}");
}

/// On a GPU the same kernel runs, verified and timed, its spill named.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_a_kernel_without_setmaxnreg_runs_and_names_its_spill() {
    let path = testing::scratch_file("without_setmaxnreg_gpu.cu", &without_setmaxnreg());
    let args = ["--kernel", path.to_str().unwrap(), "--size", "4096"];
    let ran = testing::run_for_report(BIN, &args, &[("CUDA_CACHE_DISABLE", "1")]);
    assert_eq!(ran.code, Some(0), "{}{}", ran.out, ran.err);
    assert!(ran.passed() && ran.out.contains("  spills   registers spilled"), "{}", ran.out);
}

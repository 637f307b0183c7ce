//! A step's program run the way a learner runs it, as a separate process: its exit code, its
//! output, its one-sentence refusals, its files and its options.

use super::faults;
use super::inputs::real_looking_inputs;
use crate::gpu;
use crate::step::GpuStep;

/// The program at `bin` (the path Cargo gave the test at build time), or, when the tests were
/// moved to another machine as `gpu-bundle` does, the program of that name in `../bin` beside
/// the running test binary.
pub fn program(bin: &str) -> std::path::PathBuf {
    let built = std::path::PathBuf::from(bin);
    if built.exists() {
        return built;
    }
    let name = built.file_name().unwrap_or_default();
    std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.join("bin").join(name)))
        .filter(|p| p.exists())
        .unwrap_or(built)
}

/// Runs a step's program with `args` and extra environment; returns its exit code and stderr.
pub fn run_program(bin: &str, args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String) {
    let (code, _, stderr) = run_command(std::process::Command::new(program(bin)).args(args), env);
    (code, stderr)
}

/// Runs a step's program under an address-space limit of `kib` KiB (`ulimit -v`).
pub fn run_program_limited(bin: &str, kib: u64, args: &[&str]) -> (Option<i32>, String) {
    let script = format!("ulimit -v {kib} && exec \"$0\" \"$@\"");
    let mut command = std::process::Command::new("sh");
    command.arg("-c").arg(script).arg(program(bin)).args(args);
    let (code, _, stderr) = run_command(&mut command, &[]);
    (code, stderr)
}

/// Runs `bin` with `args` and NVRTC's cache off; returns its exit code, standard output and
/// standard error.
pub fn run_for_output(bin: &str, args: &[&str]) -> (Option<i32>, String, String) {
    run_command(std::process::Command::new(program(bin)).args(args), &[("CUDA_CACHE_DISABLE", "1")])
}

/// A run's outcome: its exit code, standard output and error, and the report it wrote as JSON
/// (`--json-to`; None where it wrote none).
pub struct Ran {
    pub code: Option<i32>,
    pub out: String,
    pub err: String,
    pub report: Option<serde_json::Value>,
}

impl Ran {
    /// Whether the report says every check passed (`derived.passed`).
    pub fn passed(&self) -> bool {
        self.report.as_ref().and_then(|r| r["derived"]["passed"].as_bool()) == Some(true)
    }

    /// Whether the report says the check of C failed.
    pub fn failed(&self) -> bool {
        self.report.as_ref().and_then(|r| r["derived"]["passed"].as_bool()) == Some(false)
    }
}

/// Runs `bin` with `args` and extra environment, NVRTC's cache off, asking for its report as
/// JSON beside the text (`--json-to`), and reads that report back.
pub fn run_for_report(bin: &str, args: &[&str], env: &[(&str, &str)]) -> Ran {
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = std::path::Path::new(bin).file_name().unwrap_or_default().to_string_lossy().into_owned();
    let json =
        std::env::temp_dir().join(format!("matmul-course-report-{name}-{}-{n}.json", std::process::id()));
    let mut command = std::process::Command::new(program(bin));
    command.args(args).arg("--json-to").arg(&json).env("CUDA_CACHE_DISABLE", "1");
    let (code, out, err) = run_command(&mut command, env);
    let report = std::fs::read_to_string(&json).ok().map(|text| {
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: not JSON ({e}):\n{text}", json.display()))
    });
    let _ = std::fs::remove_file(&json);
    Ran { code, out, err, report }
}

fn run_command(command: &mut std::process::Command, env: &[(&str, &str)]) -> (Option<i32>, String, String) {
    let out = command
        .envs(env.iter().copied())
        .env("RUST_BACKTRACE", "1")
        .output()
        .unwrap_or_else(|e| panic!("could not start {command:?}: {e}"));
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

/// Asserts the program refuses `args` the way a learner can act on: a non-zero exit that is
/// not a panic's, a first line `error: …` that says `says`, and no panic message or backtrace.
pub fn assert_clear_error(bin: &str, args: &[&str], env: &[(&str, &str)], says: &str) {
    assert_clear_outcome(args, run_program(bin, args, env), says);
}

/// Through the program, with no GPU visible: each parameter set is refused with its sentence,
/// before anything needs a GPU.
pub fn assert_bad_sets_refused_without_a_gpu(bin: &str, cases: &[(&[&str], &str)]) {
    for (params, says) in cases {
        let mut args = vec!["--size", "256"];
        args.extend_from_slice(params);
        assert_clear_error(bin, &args, &[("CUDA_VISIBLE_DEVICES", "")], says);
    }
}

/// [`assert_clear_error`] on the outcome of a run already made.
pub fn assert_clear_outcome(args: &[&str], (code, stderr): (Option<i32>, String), says: &str) {
    let first = stderr.lines().next().unwrap_or_default();
    assert!(matches!(code, Some(c) if c != 0 && c != 101), "{args:?}: exit code {code:?}\n{stderr}");
    assert!(first.starts_with("error: ") && first.contains(says), "{args:?}: expected `{says}` in\n{stderr}");
    assert!(!stderr.contains("panicked") && !stderr.contains("backtrace"), "{args:?}: a panic\n{stderr}");
    // One sentence: clap may add a blank line and a pointer to --help, nothing more.
    let extra: Vec<&str> = stderr.lines().skip(1).filter(|l| !l.trim().is_empty()).collect();
    assert!(extra.iter().all(|l| l.contains("--help")), "{args:?}: more than one sentence\n{stderr}");
}

/// Through the program: A written by the test as f64 in Fortran order (`.npy`), B as a bf16
/// tensor of a `.safetensors` file, both read by the step, C saved with --save-c and compared
/// with the f64 product of what the step read; and the files' errors refused in one sentence.
pub fn assert_file_round_trip(bin: &str) {
    use npyz::WriterBuilder;
    let (m, n, k) = (37usize, 29usize, 53usize);
    let a: Vec<f64> = (0..m * k).map(|i| ((i * 7919) % 1000) as f64 / 500.0 - 1.0).collect();
    let b: Vec<f32> = (0..k * n).map(|i| ((i * 104_729) % 997) as f32 / 100.0 - 5.0).collect();
    let a_path = scratch_file("a.npy", "");
    // Fortran order: column c of A holds a[r·k + c] for every r.
    let columns: Vec<f64> =
        (0..k).flat_map(|c| (0..m).map(move |r| (r, c))).map(|(r, c)| a[r * k + c]).collect();
    let mut w = npyz::WriteOptions::new()
        .default_dtype()
        .shape(&[m as u64, k as u64])
        .order(npyz::Order::Fortran)
        .writer(std::io::BufWriter::new(std::fs::File::create(&a_path).unwrap()))
        .begin_nd()
        .unwrap();
    w.extend(columns).unwrap();
    w.finish().unwrap();
    let b_path = scratch_file("b.safetensors", "");
    let bytes: Vec<u8> = b.iter().flat_map(|&v| half::bf16::from_f32(v).to_le_bytes()).collect();
    let view = safetensors::tensor::TensorView::new(safetensors::Dtype::BF16, vec![k, n], &bytes).unwrap();
    std::fs::write(&b_path, safetensors::serialize([("w", view)], None).unwrap()).unwrap();
    let c_path = scratch_file("c.npy", "");
    let (a_arg, b_arg, c_arg) =
        (a_path.display().to_string(), format!("{}:w", b_path.display()), c_path.display().to_string());
    let out = std::process::Command::new(program(bin))
        .args(["--a", &a_arg, "--b", &b_arg, "--save-c", &c_arg, "--reps", "1"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains(&format!("M={m} N={n} K={k}")) && stdout.contains("inputs A from"), "{stdout}");
    let c = crate::files::read_matrix(&c_arg, "C").unwrap().matrix;
    assert_eq!((c.rows, c.cols), (m, n));
    for i in 0..m {
        for j in 0..n {
            let (mut want, mut abs) = (0.0f64, 0.0f64);
            for p in 0..k {
                let t =
                    f64::from(a[i * k + p] as f32) * f64::from(half::bf16::from_f32(b[p * n + j]).to_f32());
                want += t;
                abs += t.abs();
            }
            let got = f64::from(c.at(i, j));
            assert!((got - want).abs() <= 1e-5 * abs, "C[{i},{j}] = {got}, want {want}");
        }
    }
    let none = [("CUDA_VISIBLE_DEVICES", "")];
    assert_clear_error(bin, &["--a", "/nonexistent/a.npy", "--b", &b_arg], &none, "cannot be opened");
    assert_clear_error(bin, &["--a", &a_arg, "--b", &a_arg], &none, "must equal B's rows");
    assert_clear_error(
        bin,
        &["--a", &a_arg, "--b", &format!("{}:x", b_path.display())],
        &none,
        "no tensor of that name",
    );
    assert_clear_error(bin, &["--a", &a_arg, "--b", &b_arg, "-k", "7"], &none, "the files give K = 53");
    assert_clear_error(bin, &["--inputs", "cauchy"], &none, "not a family of inputs");
}

/// Each of [`real_looking_inputs`] written to `.npy` files and given to the step's program with
/// `--a` and `--b`: the program verifies C and passes (every element within FP32's bound, or of
/// the reference's class where it is not finite), and exits with 0.
pub fn assert_npy_inputs_pass(bin: &str) {
    let dir = std::env::temp_dir().join(format!("matmul-course-npy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (i, (name, x)) in real_looking_inputs().into_iter().enumerate() {
        let (a, b) = (dir.join(format!("a{i}.npy")), dir.join(format!("b{i}.npy")));
        crate::files::write_npy(&a, x.a.rows, x.a.cols, &x.a.data).unwrap();
        crate::files::write_npy(&b, x.b.rows, x.b.cols, &x.b.data).unwrap();
        let (a, b) = (a.to_str().unwrap().to_owned(), b.to_str().unwrap().to_owned());
        let ran = run_for_report(bin, &["--a", &a, "--b", &b, "--reps", "1", "--no-cublas"], &[]);
        println!("{name}:\n{}{}", ran.out, ran.err);
        assert_eq!(ran.code, Some(0), "{name}: {}", ran.err);
        assert!(ran.passed(), "{name}: {}", ran.out);
    }
}

/// A scratch file for a test: `name` under the system's temporary folder, unique to this process.
pub fn scratch_file(name: &str, contents: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("matmul-course-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, contents).unwrap();
    path
}

/// `--compile-only` compiles the step for sm_80 and sm_90 and prints its resources and ptxas's
/// output; an edited kernel given with `--kernel` that does not compile gets NVRTC's log, under
/// the edited file's name. Needs NVRTC, not a GPU.
pub fn assert_compile_only(bin: &str, step: &GpuStep) {
    for (arch, cc) in [("sm_80", (8, 0)), ("sm_90", (9, 0))] {
        let (code, out, err) = run_for_output(bin, &["--compile-only", "--arch", arch]);
        if step.check_compute(cc, arch).is_err() {
            // A step for one architecture alone (sm_90a) refuses the others in one sentence.
            assert_eq!(code, Some(1), "{out}");
            assert!(
                err.starts_with(&format!("error: {} needs a GPU of compute capability", step.name)),
                "{err}"
            );
            continue;
        }
        assert_eq!(code, Some(0), "{err}");
        let compiled = format!("{} ({}) compiled for {}", step.name, step.file, step.target(arch));
        for says in [compiled.as_str(), "registers/thread", "spills: none", "ptxas says:"] {
            assert!(out.contains(says), "`{says}` missing:\n{out}");
        }
    }
    // The machine code, for cuobjdump: an ELF file that holds the kernel's entry point.
    let cubin = std::env::temp_dir().join(format!("{}-{}.cubin", step.name, std::process::id()));
    let target = if step.check_compute((9, 0), "sm_90").is_ok() { "sm_90" } else { "sm_80" };
    let (code, out, err) =
        run_for_output(bin, &["--compile-only", "--arch", target, "--cubin", cubin.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("written to") && out.contains("cuobjdump -sass"), "{out}");
    let code = std::fs::read(&cubin).unwrap();
    std::fs::remove_file(&cubin).unwrap();
    let compiled = gpu::Compiled::new(target, code, None, String::new());
    assert!(
        compiled.cubin.starts_with(b"\x7fELF") && compiled.has_function("matmul"),
        "not a cubin with matmul"
    );
    let broken = step.source.replacen("__global__", "__global__ oops", 1);
    let broken = scratch_file(&format!("{}-broken.cu", step.name), &broken);
    let path = broken.to_str().unwrap();
    let (code, _, err) = run_for_output(bin, &["--compile-only", "--kernel", path]);
    std::fs::remove_file(&broken).unwrap();
    assert_eq!(code, Some(1), "{err}");
    assert!(err.starts_with(&format!("error: the kernel {path} does not compile for")), "{err}");
    assert!(err.contains("oops"), "NVRTC's log is shown:\n{err}");
}

/// Through the program on the GPU: `--kernel` runs an edited copy of the kernel; a copy with a
/// comment added passes and names its file, and the same copy with `fault` planted fails.
pub fn assert_kernel_option(bin: &str, step: &GpuStep, fault: &faults::PlantedFault) {
    // 32×32×256: a shape every step serves, step03's one block included, and deep enough that
    // step 09 runs its kernel (below K = 256 its FP32 path computes every row, around it).
    let shape = ["-m", "32", "-n", "32", "-k", "256"];
    let same = format!("// a learner's copy\n{}", step.source);
    let same = scratch_file(&format!("{}-same.cu", step.name), &same);
    let ran = run_for_report(bin, &[&shape[..], &["--kernel", same.to_str().unwrap()]].concat(), &[]);
    assert_eq!(ran.code, Some(0), "{}{}", ran.out, ran.err);
    let step_field = ran.report.as_ref().and_then(|r| r["step"].as_str().map(str::to_owned));
    let label = format!("{} (kernel from {})", step.name, same.display());
    assert!(ran.passed() && step_field.as_deref() == Some(label.as_str()), "{}", ran.out);
    let wrong = scratch_file(
        &format!("{}-wrong.cu", step.name),
        &faults::apply(&crate::testing::whole(step), fault).unwrap(),
    );
    let ran = run_for_report(bin, &[&shape[..], &["--kernel", wrong.to_str().unwrap()]].concat(), &[]);
    for file in [same, wrong] {
        std::fs::remove_file(file).unwrap();
    }
    assert_eq!(ran.code, Some(1), "{}{}", ran.out, ran.err);
    assert!(ran.failed() && ran.err.starts_with("error: the result is wrong"), "{}{}", ran.out, ran.err);
}

/// `bin --help` names everything in `says` and lists none of the options in `absent`.
pub fn assert_help(bin: &str, says: &[&str], absent: &[&str]) {
    let out = std::process::Command::new(program(bin)).arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{help}");
    for s in says {
        assert!(help.contains(s), "`{s}` missing from --help:\n{help}");
    }
    for a in absent {
        assert!(!help.contains(&format!("{a} ")), "--help lists {a}, which the step refuses:\n{help}");
    }
}

/// The bad inputs every GPU step must refuse without a GPU (so CI checks them too). Hiding the
/// devices (`CUDA_VISIBLE_DEVICES=`) makes a GPU machine look like one without a GPU.
pub fn assert_common_bad_inputs_refused(bin: &str) {
    let no_gpu = [("CUDA_VISIBLE_DEVICES", "")];
    for (args, says) in [
        (&["--size", "0"][..], "at least 1"),
        (&["--size", "-5"][..], "at least 1"),
        (&["-m", "12", "-n", "abc"][..], "not a whole number"),
        (&["-k", "999999999"][..], "more than the 64 GiB one buffer of the emulator holds"),
        (&["--param", "WIDE=2"][..], "WIDE is 1 (64-bit offsets) or 0 (32-bit ones)"),
        (
            &["--param", "WIDE=0", "-m", "100000", "-n", "100000", "-k", "1"][..],
            "--param WIDE=0 asks for 32-bit offsets, but a matrix of M=100000 N=100000 K=1 has 10000000000 elements",
        ),
        (&["-k", "99999999999"][..], "larger than 2147483647, the largest `int`"),
        (&["--reps", "0"][..], "repetition"),
        (&["--param", "TILE"][..], "NAME=VALUE"),
        (&["--param", "=3"][..], "names no parameter"),
        (&["--param", "TILE=99999999999"][..], "outside 0 to 4294967295"),
        (&["--seed", "-1"][..], "the seed must be a whole number"),
        (&["--param", "NOPE=4"][..], "--param NOPE"),
        (&["--kernel", "/no/such/kernel.cu"][..], "could not read the kernel /no/such/kernel.cu"),
        (&["--arch", "sm_90"][..], "--arch goes with --compile-only"),
        (&["--cubin", "k.cubin"][..], "--cubin goes with --compile-only"),
        (&["--compile-only", "--arch", "90"][..], "not an architecture this course compiles for"),
        (
            &["--emulate", "--gpu", "A100"][..],
            "'A100' is no GPU the time model has a profile of; choose H100, H200",
        ),
    ] {
        assert_clear_error(bin, args, &no_gpu, says);
    }
}

/// Without a GPU, a step the emulator runs says so in one line and runs there at a small odd
/// shape, verified (33×31 outputs: within one block of step 03's 1024 threads). It needs NVRTC,
/// and says so where it is missing.
pub fn assert_runs_on_the_emulator_without_a_gpu(bin: &str) {
    assert!(crate::gpu::nvrtc_present(), "this test needs NVRTC (libnvrtc) on the library path");
    let no_gpu = [("CUDA_VISIBLE_DEVICES", "")];
    let ran = run_for_report(bin, &["-m", "33", "-n", "31", "-k", "33"], &no_gpu);
    let out = &ran.out;
    assert_eq!(ran.code, Some(0), "{out}{}", ran.err);
    let first = out.lines().next().unwrap_or_default();
    assert!(first.starts_with("note: ") && first.contains("runs on the PTX emulator"), "{out}");
    assert!(out.contains("emulated on the CPU") && ran.passed(), "{out}");
    let report = ran.report.as_ref().unwrap();
    let traffic = &report["device"]["emulated"]["traffic"];
    // Every lab stores C with ordinary stores (its loads may all be copies: cp.async, TMA):
    // its kernel, or where a step sends every row down its FP32 path (step 09 at short K),
    // the kernels of that path.
    let stores = |t: &serde_json::Value| t["global_store_requests"].as_u64().unwrap_or(0);
    let others = report["device"]["emulated"]["others"].as_array().cloned().unwrap_or_default();
    let other_stores: u64 = others.iter().map(|o| stores(&o[1])).sum();
    assert!(stores(traffic) + other_stores > 0, "{report:#}");
    assert!(report["predicted"]["seconds"]["H100"].as_f64().is_some_and(|s| s > 0.0), "{report:#}");
    // With --format json standard output is the report alone; the note goes to standard error.
    let (code, out, err) = run_command(
        std::process::Command::new(program(bin))
            .args(["-m", "33", "-n", "31", "-k", "33", "--format", "json"]),
        &no_gpu,
    );
    assert_eq!(code, Some(0), "{out}{err}");
    let json: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}:\n{out}"));
    assert_eq!(json["schema"], crate::emit::SCHEMA, "{out}");
    assert!(err.starts_with("note: ") && err.contains("runs on the PTX emulator"), "{err}");
}

/// Without a GPU and without NVRTC, a step the emulator runs says in one sentence that NVRTC is
/// missing. It needs a machine without NVRTC.
pub fn assert_needs_nvrtc_without_a_gpu(bin: &str) {
    assert!(!crate::gpu::nvrtc_present(), "this machine has NVRTC; run this test where it has not");
    assert_clear_error(bin, &[], &[("CUDA_VISIBLE_DEVICES", "")], "NVRTC (libnvrtc) was not found");
}

/// The tests of a step's program that every GPU step passes alike, written once:
/// `common::program_tests!(BIN);` in the step's `tests/cli.rs`, where `BIN` is the path Cargo
/// gives the tests (`env!("CARGO_BIN_EXE_…")`). It adds `bad_inputs_are_refused_in_one_sentence`
/// ([`assert_common_bad_inputs_refused`]), and two ignored tests of a machine without a GPU:
/// `nvrtc_program_runs_on_the_emulator_without_a_gpu` ([`assert_runs_on_the_emulator_without_a_gpu`],
/// which needs NVRTC) and `without_the_compiler_library_the_program_asks_for_nvrtc`
/// ([`assert_needs_nvrtc_without_a_gpu`], which needs a machine without it). The step's own
/// refusals and `--help` stay in its file.
#[macro_export]
macro_rules! program_tests {
    ($bin:expr) => {
        #[test]
        fn bad_inputs_are_refused_in_one_sentence() {
            $crate::testing::assert_common_bad_inputs_refused($bin);
        }

        /// Without a GPU the step runs on the PTX emulator, verified.
        #[test]
        #[ignore = "needs libnvrtc"]
        fn nvrtc_program_runs_on_the_emulator_without_a_gpu() {
            $crate::testing::assert_runs_on_the_emulator_without_a_gpu($bin);
        }

        /// Without a GPU and without NVRTC the step says that it needs NVRTC.
        #[test]
        #[ignore = "needs a machine without libnvrtc"]
        fn without_the_compiler_library_the_program_asks_for_nvrtc() {
            $crate::testing::assert_needs_nvrtc_without_a_gpu($bin);
        }
    };
}

/// Runs `--emulate --every-path` of the program at `bin`, on `kernel` where given; returns its
/// exit code and its output, one case a line.
pub fn run_every_path(bin: &str, kernel: Option<&std::path::Path>) -> (Option<i32>, String) {
    let mut command = std::process::Command::new(program(bin));
    command.args(["--emulate", "--every-path"]);
    if let Some(k) = kernel {
        command.arg("--kernel").arg(k);
    }
    let (code, out, err) = run_command(&mut command, &[]);
    (code, format!("{out}{err}"))
}

/// The verdict lines of an `--every-path` run, by the path each case reaches: its text after the
/// path's name (`PASS · reached: …` or `FAIL · …`).
pub fn every_path_lines(out: &str, paths: &[&str]) -> Vec<(String, String)> {
    paths
        .iter()
        .map(|&path| {
            let line = out
                .lines()
                .find(|l| {
                    l.trim_start().starts_with(path) && (l.contains(" PASS · ") || l.contains(" FAIL · "))
                })
                .unwrap_or_else(|| panic!("no line for the case \"{path}\" in:\n{out}"));
            (path.to_owned(), line.trim_start()[path.len()..].trim().to_owned())
        })
        .collect()
}

/// Asserts that `--emulate --every-path` of the program at `bin` passes and that every case of
/// `cases` (the step's list) reports its path reached.
pub fn assert_every_path_reached(bin: &str, cases: &[crate::paths::PathCase]) {
    let (code, out) = run_every_path(bin, None);
    assert_eq!(code, Some(0), "{out}");
    let paths: Vec<&str> = cases.iter().map(|c| c.path).collect();
    for (path, line) in every_path_lines(&out, &paths) {
        assert!(line.starts_with("PASS · reached: "), "{path}: {line}\n{out}");
    }
}

/// Asserts that `--emulate --every-path` on a copy of the step's kernel `source` with `old`
/// replaced by `new` (one planted fault) fails, and that the case `caught` is among those that
/// fail.
pub fn assert_every_path_catches(bin: &str, source: &str, (old, new): (&str, &str), caught: &str) {
    assert_eq!(source.matches(old).count(), 1, "the fault's line must occur once: {old}");
    let tag: String = caught.chars().filter(char::is_ascii_alphanumeric).collect();
    let dir = std::env::temp_dir().join(format!("every-path-fault-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("fault.cu");
    std::fs::write(&file, source.replace(old, new)).unwrap();
    let (code, out) = run_every_path(bin, Some(&file));
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(code, Some(1), "the fault passed every path:\n{out}");
    let (_, line) = every_path_lines(&out, &[caught]).remove(0);
    assert!(line.starts_with("FAIL"), "{caught}: {line}\n{out}");
}

//! `cargo xtask gpu-bundle`: builds the workspace's programs, test binaries and bench binaries in
//! release mode and gathers them in `.gpu/` at the repository root, packed (xz, a few MiB: the
//! device's working tree is limited to 64 MiB) with a runner script that unpacks them on first
//! use, so that a machine that has an NVIDIA GPU but no Rust toolchain can run them.
//!
//! ```text
//! cargo xtask gpu-bundle             build everything, write .gpu/
//! cargo xtask gpu-bundle --no-bench  skip the criterion bench binaries (faster)
//! cargo xtask gpu-bundle --bins      the programs alone (fastest: for timing and profiling runs)
//! ```
//!
//! Then, on the GPU machine, from the repository root (carry the folder .gpu):
//!
//! ```text
//! bash .gpu/run tests [FILTER]            every test binary with --include-ignored, sharded over
//!                                         the machine's GPUs: a shard a GPU, the longest binaries
//!                                         first, then the two-GPU tests (step 13's gpu_nccl_…) on
//!                                         a pair of GPUs; a line a binary and the failures, then
//!                                         `gpu tests: N passed, M failed`; the logs in $OUT
//! bash .gpu/run tests --list-shards       which binary goes to which shard; runs nothing
//! bash .gpu/run emulator [FILTER]         the emulator tests (nvrtc_emulat…, which `tests` leaves
//!                                         out) of every binary at once, over the cores
//! bash .gpu/run bench [FILTER] [ARGS...]  every bench binary with --bench; criterion output is
//!                                         packed into $OUT/criterion.tar.gz when $OUT is set
//! bash .gpu/run bin NAME [ARGS...]        one of the workspace's programs (e.g. a step's binary)
//! bash .gpu/run list                      what the bundle holds
//! ```
//!
//! On a machine of four GPUs, `bash .gpu/run tests` runs the whole suite in one call (the step-13
//! two-GPU tests on a pair), and `bash .gpu/run emulator` the emulator tests over the cores. The
//! runner is `scripts/gpu-run` (GPUS=N, TEST_TIMEOUT=S, DURATIONS=FILE: its header);
//! `scripts/check-gpu-runner.sh` checks its sharding without a GPU.
//!
//! Programs must not read files from the source tree at run time (use `include_str!` for
//! kernels): the GPU machine has the repository at another path and no target/ folder.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

/// What goes in the bundle beside the programs.
pub struct BundleParts {
    pub tests: bool,
    pub benches: bool,
}

/// The bundle's three folders.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Folder {
    Bin,
    Tests,
    Benches,
}

impl Folder {
    fn name(self) -> &'static str {
        match self {
            Folder::Bin => "bin",
            Folder::Tests => "tests",
            Folder::Benches => "benches",
        }
    }

    /// Whether cargo's artifact goes in this folder.
    fn wants(self, artifact: &Value) -> bool {
        let kinds = artifact["target"]["kind"].as_array().into_iter().flatten();
        let mut kinds = kinds.filter_map(Value::as_str);
        match self {
            Folder::Bin => kinds.any(|k| k == "bin"),
            Folder::Tests => artifact["profile"]["test"].as_bool() == Some(true),
            Folder::Benches => kinds.any(|k| k == "bench"),
        }
    }
}

/// An executable cargo built, from one line of its JSON messages: (its path, the name it gets
/// in `folder`), where the line is an executable artifact that folder wants.
fn artifact(line: &str, folder: Folder) -> Option<(PathBuf, String)> {
    let message: Value = serde_json::from_str(line).ok()?;
    if message["reason"] != "compiler-artifact" || !folder.wants(&message) {
        return None;
    }
    let exe = PathBuf::from(message["executable"].as_str()?);
    let file = exe.file_name()?.to_string_lossy().into_owned();
    let name = message["target"]["name"].as_str().unwrap_or(&file).to_owned();
    let kind: Vec<&str> = message["target"]["kind"].as_array()?.iter().filter_map(Value::as_str).collect();
    let kind = kind.join(",");
    let manifest = Path::new(message["manifest_path"].as_str().unwrap_or(""));
    let krate = manifest.parent().and_then(Path::file_name).unwrap_or_default().to_string_lossy();
    let base = match folder {
        Folder::Bin => name,
        // A test binary is named by its crate's folder and its target (CRATE.kernel, CRATE.lib,
        // CRATE.bin), the same from build to build where cargo's name ends in a hash: the
        // runner's logs, its summary and a durations file from an earlier run name binaries so.
        Folder::Tests if kind == "test" => format!("{krate}.{name}"),
        Folder::Tests if kind.contains("lib") => format!("{krate}.lib"),
        Folder::Tests if name == krate => format!("{krate}.{kind}"),
        Folder::Tests => format!("{krate}.{kind}-{name}"),
        Folder::Benches => file,
    };
    Some((exe, base))
}

/// Runs `cargo ARGS --message-format=json` at `root` and copies each executable `folder` wants
/// into it, stripped.
fn collect(root: &Path, args: &[&str], dest: &Path, folder: Folder) -> Result<(), String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let shown = format!("cargo {}", args.join(" "));
    let out = Command::new(cargo)
        .args(args)
        .arg("--message-format=json")
        .current_dir(root)
        .output()
        .map_err(|e| format!("{shown} cannot be run ({e})"))?;
    if !out.status.success() {
        eprint!("{}", String::from_utf8_lossy(&out.stderr));
        return Err(format!("{shown} failed"));
    }
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Some((exe, mut base)) = artifact(line, folder) else { continue };
        // Two alike: cargo's name.
        if folder == Folder::Tests && dest.join(&base).exists() {
            base = exe.file_name().unwrap_or_default().to_string_lossy().into_owned();
        }
        let to = dest.join(&base);
        std::fs::copy(&exe, &to)
            .map_err(|e| format!("{} cannot be copied to {} ({e})", exe.display(), to.display()))?;
        // A binary strip cannot read stays as it is.
        let _ = Command::new("strip").arg(&to).stderr(Stdio::null()).status();
    }
    Ok(())
}

/// Records `/.gpu/` in git's exclude file (a worktree's .git is a file), as the bundle is no
/// source.
fn exclude(root: &Path) -> Result<(), String> {
    let out = Command::new("git")
        .args(["rev-parse", "--git-path", "info/exclude"])
        .current_dir(root)
        .output()
        .map_err(|e| format!("git cannot be run ({e})"))?;
    if !out.status.success() {
        return Err(format!("{} is not in a git repository", root.display()));
    }
    let path = root.join(String::from_utf8_lossy(&out.stdout).trim());
    let now = std::fs::read_to_string(&path).unwrap_or_default();
    if now.lines().any(|l| l == "/.gpu/") {
        return Ok(());
    }
    let write = || {
        std::fs::create_dir_all(path.parent().unwrap_or(root))?;
        std::fs::write(&path, format!("{now}/.gpu/\n"))
    };
    write().map_err(|e| format!("{} cannot be written ({e})", path.display()))
}

/// Packs `bin`, `tests` and `benches` of `gpu` into `gpu/pack.tar.xz` (tar, then xz) and
/// removes them.
fn pack(gpu: &Path) -> Result<(), String> {
    let file = std::fs::File::create(gpu.join("pack.tar.xz"))
        .map_err(|e| format!("the pack cannot be written ({e})"))?;
    let mut tar = Command::new("tar")
        .args(["-C"])
        .arg(gpu)
        .args(["-cf", "-", "bin", "tests", "benches"])
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("tar cannot be run ({e})"))?;
    let xz = Command::new("xz")
        .args(["-T0", "-6"])
        .stdin(tar.stdout.take().ok_or("tar gives no output")?)
        .stdout(file)
        .status()
        .map_err(|e| format!("xz cannot be run ({e})"))?;
    let tarred = tar.wait().map_err(|e| format!("tar did not finish ({e})"))?;
    if !tarred.success() || !xz.success() {
        return Err("tar and xz could not pack .gpu".into());
    }
    for folder in [Folder::Bin, Folder::Tests, Folder::Benches] {
        std::fs::remove_dir_all(gpu.join(folder.name())).map_err(|e| format!("{} ({e})", folder.name()))?;
    }
    Ok(())
}

/// Builds and packs the bundle into `root/.gpu`.
pub fn run(root: &Path, parts: BundleParts) -> Result<(), String> {
    exclude(root)?;
    let gpu = root.join(".gpu");
    if gpu.exists() {
        std::fs::remove_dir_all(&gpu).map_err(|e| format!(".gpu cannot be removed ({e})"))?;
    }
    for folder in [Folder::Bin, Folder::Tests, Folder::Benches] {
        std::fs::create_dir_all(gpu.join(folder.name())).map_err(|e| format!(".gpu cannot be made ({e})"))?;
    }
    eprintln!("gpu-bundle: building programs");
    collect(root, &["build", "--release", "--workspace", "--bins"], &gpu.join("bin"), Folder::Bin)?;
    if parts.tests {
        eprintln!("gpu-bundle: building test binaries");
        collect(root, &["test", "--release", "--workspace", "--no-run"], &gpu.join("tests"), Folder::Tests)?;
    }
    if parts.benches {
        eprintln!("gpu-bundle: building bench binaries");
        collect(root, &["bench", "--workspace", "--no-run"], &gpu.join("benches"), Folder::Benches)?;
    }
    // The runner (its verbs: the header above; how it shards: its own header) travels beside the
    // pack.
    let runner = gpu.join("run");
    std::fs::copy(root.join("scripts/gpu-run"), &runner)
        .map_err(|e| format!("scripts/gpu-run cannot be copied ({e})"))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let executable = std::fs::Permissions::from_mode(0o755);
        std::fs::set_permissions(&runner, executable).map_err(|e| format!(".gpu/run ({e})"))?;
    }
    eprintln!("gpu-bundle: packing");
    pack(&gpu)?;
    let _ = Command::new("du").args(["-sh", ".gpu"]).current_dir(root).stdout(std::io::stderr()).status();
    eprintln!(
        "gpu-bundle: done; carry the folder .gpu and run 'bash .gpu/run tests' (or emulator, bench, bin NAME) there"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(name: &str, kind: &str, test: bool, exe: Option<&str>) -> String {
        serde_json::json!({
            "reason": "compiler-artifact",
            "manifest_path": "/repo/step04_tiled/Cargo.toml",
            "target": {"name": name, "kind": [kind]},
            "profile": {"test": test},
            "executable": exe,
        })
        .to_string()
    }

    #[test]
    fn programs_keep_their_names_and_tests_are_named_by_crate_and_target() {
        let exe = Some("/t/release/deps/x-0123abcd");
        let named = |line: String, folder| artifact(&line, folder).map(|(_, name)| name);
        assert_eq!(
            named(message("step04_tiled", "bin", false, Some("/t/release/step04_tiled")), Folder::Bin)
                .unwrap(),
            "step04_tiled"
        );
        assert_eq!(
            named(message("kernel", "test", true, exe), Folder::Tests).unwrap(),
            "step04_tiled.kernel"
        );
        assert_eq!(
            named(message("step04_tiled", "lib", true, exe), Folder::Tests).unwrap(),
            "step04_tiled.lib"
        );
        assert_eq!(
            named(message("step04_tiled", "bin", true, exe), Folder::Tests).unwrap(),
            "step04_tiled.bin"
        );
        assert_eq!(named(message("tool", "bin", true, exe), Folder::Tests).unwrap(), "step04_tiled.bin-tool");
        assert_eq!(named(message("speed", "bench", true, exe), Folder::Benches).unwrap(), "x-0123abcd");
    }

    #[test]
    fn each_folder_takes_only_its_executables() {
        let exe = Some("/t/x");
        assert_eq!(
            artifact(&message("step04_tiled", "lib", false, None), Folder::Bin),
            None,
            "no executable"
        );
        assert_eq!(
            artifact(&message("step04_tiled", "bin", true, exe), Folder::Bin).map(|a| a.1).as_deref(),
            Some("step04_tiled")
        );
        assert_eq!(artifact(&message("kernel", "test", false, exe), Folder::Tests), None, "not a test build");
        assert_eq!(artifact(&message("step04_tiled", "bin", false, exe), Folder::Benches), None);
        assert_eq!(artifact("{\"reason\":\"build-finished\",\"success\":true}", Folder::Bin), None);
        assert_eq!(artifact("not json", Folder::Tests), None);
    }
}

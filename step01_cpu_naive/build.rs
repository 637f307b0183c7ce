//! Chooses the loop lab 01 compiles: `src/matmul.rs`, or the file `STEP01_LOOP` names (a path
//! from the repository's root, or an absolute one), so that a learner runs a copy of the loop
//! through the lab's program and its checks without editing the lab (docs/src/step01.md,
//! exercise 3). lib.rs includes the file this script names in `STEP01_LOOP_FILE`.

use std::path::PathBuf;

fn main() {
    println!("cargo::rerun-if-env-changed=STEP01_LOOP");
    let crate_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    // An empty variable is no variable: the lab's own loop.
    let file = match std::env::var_os("STEP01_LOOP").filter(|v| !v.is_empty()) {
        None => crate_dir.join("src/matmul.rs"),
        Some(named) => crate_dir.join("..").join(&named),
    };
    // Run again when the file changes or goes, so that a file deleted after a build is refused
    // in the sentence below rather than by the compiler.
    println!("cargo::rerun-if-changed={}", file.display());
    if !file.is_file() {
        let named = std::env::var("STEP01_LOOP").unwrap_or_default();
        println!(
            "cargo::error=STEP01_LOOP names {named}, which is not a file: give a path from the repository's root, such as mine/matmul.rs"
        );
        return;
    }
    println!("cargo::rustc-env=STEP01_LOOP_FILE={}", file.display());
}

//! One meaning for each module name: no two modules of the workspace's crates (a file or a folder
//! under a crate's `src/`) share a name, unless the two mean one thing, as listed below with why.
//! A module whose name is taken fails here: name it for its own idea. `mod.rs`, `lib.rs`,
//! `main.rs` and `tests` (a module's unit tests beside it) are no names of their own.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Names two modules share because they mean one thing, and why.
const ONE_MEANING: &[(&str, &str)] = &[
    ("run", "a program's run: common's for every lab (drive/run/), step 13's for its own program"),
    ("report", "the report as a typed value: common's for a lab, step 13's for its ring"),
    ("hooks", "a step's hooks: common's trait (contract/hooks.rs), step 11's implementation of it"),
    ("record", "a record of the book: its line written (common), read back (compare), read for figures"),
];

const NO_NAMES: &[&str] = &["mod", "lib", "main", "tests"];

/// Every module under `dir` (a crate's `src/`), by name, with its path.
fn modules(dir: &Path, out: &mut Vec<(String, PathBuf)>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            // A folder holding Rust is a module (its mod.rs); `bin/` holds programs, not modules.
            if name != "bin"
                && std::fs::read_dir(&path)
                    .into_iter()
                    .flatten()
                    .flatten()
                    .any(|e| e.path().extension().is_some_and(|x| x == "rs") || e.path().is_dir())
            {
                out.push((name, path.clone()));
            }
            modules(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") && !NO_NAMES.contains(&name.as_str()) {
            out.push((name, path));
        }
    }
}

/// Every module name used more than once, with its paths.
fn twice(root: &Path) -> BTreeMap<String, Vec<PathBuf>> {
    let mut all = Vec::new();
    for crate_dir in std::fs::read_dir(root).unwrap().flatten() {
        let src = crate_dir.path().join("src");
        if crate_dir.path().join("Cargo.toml").is_file() && src.is_dir() {
            modules(&src, &mut all);
        }
    }
    let mut by_name: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for (name, path) in all {
        by_name.entry(name).or_default().push(path.strip_prefix(root).unwrap().to_path_buf());
    }
    by_name.retain(|_, paths| paths.len() > 1);
    by_name
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

#[test]
fn no_two_modules_share_a_name_for_two_ideas() {
    let wrong: Vec<String> = twice(&root())
        .into_iter()
        .filter(|(name, _)| !ONE_MEANING.iter().any(|(n, _)| n == name))
        .map(|(name, paths)| format!("`{name}` names {} modules: {paths:?}", paths.len()))
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Every name kept for one meaning is still used twice (a rename leaves no stale entry).
#[test]
fn every_name_kept_is_still_shared() {
    let shared = twice(&root());
    for (name, _) in ONE_MEANING {
        assert!(shared.contains_key(*name), "`{name}` is no longer shared: take it out of ONE_MEANING");
    }
}

/// A module planted with a name another crate's module has is caught, as a file or a folder.
#[test]
fn a_planted_module_of_a_taken_name_is_caught() {
    let dir = std::env::temp_dir().join(format!("module-names-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    for (krate, file) in [("one", "src/order.rs"), ("two", "src/order/mod.rs"), ("two", "src/lib.rs")] {
        let path = dir.join(krate).join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "").unwrap();
        std::fs::write(dir.join(krate).join("Cargo.toml"), "").unwrap();
    }
    let found = twice(&dir);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(found.keys().collect::<Vec<_>>(), ["order"]);
}

//! `ARCHITECTURE.md`'s table of rules ("What the code keeps, and what holds it") names only what
//! exists: each file or folder where a rule lives or is held, and each test, macro, function or
//! type that holds one. A renamed test or moved file the page still names fails here.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// The table's rows, each its cells "where it lives" and "the test that holds it".
fn rows(page: &str) -> Vec<(String, String)> {
    let section = page.split("## What the code keeps").nth(1).expect("the page's table of rules");
    let section = section.split("\n## ").next().unwrap();
    section
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| rule"))
        .map(|l| {
            let cells: Vec<&str> = l.split(" | ").collect();
            assert_eq!(cells.len(), 3, "a row of three cells: {l}");
            (cells[1].to_string(), cells[2].trim_end_matches(" |").to_string())
        })
        .collect()
}

/// The names in backquotes of `cell`.
fn quoted(cell: &str) -> Vec<&str> {
    cell.split('`').skip(1).step_by(2).collect()
}

/// Every `.rs` file of the workspace's crates.
fn sources(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut folders = vec![root.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            if path.is_dir() && !name.starts_with('.') && name != "target" && name != "docs" {
                folders.push(path);
            } else if name.ends_with(".rs") {
                found.push(path);
            }
        }
    }
    found
}

/// Where `path` is (as the page writes it: from the root, or from a crate's folder, its `src/` or
/// its `tests/`, for "each step's `tests/kernel.rs`" or `testing/faults.rs`), if anywhere.
fn find(root: &Path, path: &str) -> Option<PathBuf> {
    let crates =
        std::fs::read_dir(root).unwrap().map(|e| e.unwrap().path()).filter(|p| p.join("Cargo.toml").exists());
    let mut bases = vec![root.to_path_buf()];
    for c in crates {
        bases.extend([c.join("src"), c.join("tests"), c]);
    }
    bases.iter().map(|b| b.join(path.trim_end_matches('/'))).find(|p| p.exists())
}

/// What is wrong with one name of a cell, if anything; `code` is the workspace's source.
fn check(root: &Path, code: &str, name: &str) -> Option<String> {
    // A command: its script, if it runs one (`scripts/earlier-runs.py --check`).
    let name = match name.split_once(' ') {
        Some((first, _)) if first.contains('/') => first,
        Some(_) => return None,
        None => name,
    };
    // A pattern over the steps (`stepNN_…/exercises/`) stands for many.
    if name.contains("NN") {
        return None;
    }
    let (file, item) = match name.rsplit_once("::") {
        Some((path, item)) if path.contains('.') => (Some(path), Some(item)),
        Some((_, item)) => (None, Some(item)),
        None if name.contains('/') || name.contains('.') => (Some(name), None),
        None => (None, Some(name)),
    };
    let mut code = code.to_string();
    if let Some(file) = file {
        let Some(found) = find(root, file) else {
            return Some(format!("`{name}`: no file or folder {file}"));
        };
        // An item named in a file is that file's.
        if item.is_some() {
            code = std::fs::read_to_string(found).unwrap();
        }
    }
    let item = item?;
    let defined = if let Some(macro_name) = item.strip_suffix('!') {
        code.contains(&format!("macro_rules! {macro_name} "))
    } else if item.chars().next().is_some_and(char::is_uppercase) {
        // A type, or a constant (`FAULTS`, each step's own).
        ["struct ", "enum ", "trait ", "type ", "const ", "static "]
            .iter()
            .any(|kind| code.contains(&format!("{kind}{item}")))
    } else if let Some((before, after)) = item.split_once('…') {
        // A family of tests: one at least starts and ends so.
        code.split("fn ").skip(1).any(|f| {
            let f = f.split('(').next().unwrap();
            f.starts_with(before) && f.ends_with(after)
        })
    } else {
        ["fn ", "mod ", "pub mod "].iter().any(|kind| code.contains(&format!("{kind}{item}(")))
            || code.contains(&format!("mod {item};"))
            || code.contains(&format!("fn {item}<"))
            || find(root, item).is_some()
    };
    (!defined).then(|| format!("`{name}`: nothing of the workspace is called {item}"))
}

#[test]
fn the_rules_name_only_what_exists() {
    let root = root();
    let page = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let code: String = sources(&root).iter().map(|p| std::fs::read_to_string(p).unwrap()).collect();
    let mut wrong = Vec::new();
    for (lives, held) in rows(&page) {
        for name in quoted(&lives).into_iter().chain(quoted(&held)) {
            wrong.extend(check(&root, &code, name));
        }
    }
    assert!(wrong.is_empty(), "ARCHITECTURE.md's rules name what is not there:\n{}", wrong.join("\n"));
}

/// A test, file, macro or type the code does not have is caught, however the page names it.
#[test]
fn a_name_that_is_not_there_is_caught() {
    let root = root();
    let code: String = sources(&root).iter().map(|p| std::fs::read_to_string(p).unwrap()).collect();
    for missing in [
        "nvrtc_every_kernel_compiles_for_sm_80_and_sm_90",
        "nvrtc_the_host_and_the_kernel_disagree_…",
        "import_circles.rs::a_module_with_modules_is_a_file",
        "common/tests/layers.rs",
        "scripts/check-everything.sh --check",
        "unplanted_fault_tests!",
        "testing::NoSuchSets",
    ] {
        assert!(check(&root, &code, missing).is_some(), "not caught: {missing}");
    }
    for present in
        ["import_circles.rs::a_module_with_modules_is_a_folder", "planted_fault_tests!", "testing::Sets"]
    {
        assert_eq!(check(&root, &code, present), None);
    }
}

//! The libraries build no doc tests (`doctest = false`) and the targets that hold no tests build
//! no test binary (`test = false`): the tests' build on a fresh clone is shorter by those
//! binaries. A doc test, or a test, added where its target says so would never run: it fails here.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// The `.rs` files under `folder`, its subfolders included.
fn sources(folder: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut folders = vec![folder.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                found.push(path);
            }
        }
    }
    found
}

/// The manifest's `[lib]` or `[[bin]]` sections, each its header and its lines.
fn sections(manifest: &str) -> Vec<(String, Vec<String>)> {
    let mut found: Vec<(String, Vec<String>)> = Vec::new();
    for line in manifest.lines() {
        if line.starts_with('[') {
            found.push((line.to_string(), Vec::new()));
        } else if let Some((_, lines)) = found.last_mut() {
            lines.push(line.trim().to_string());
        }
    }
    found.retain(|(header, _)| header == "[lib]" || header == "[[bin]]");
    found
}

/// The lines of `text` that would be a test: `#[test]` or `#[cfg(test)]`.
fn tests_in(text: &str) -> Vec<String> {
    text.lines().filter(|l| l.contains("#[test]") || l.contains("#[cfg(test)]")).map(str::to_string).collect()
}

/// The lines of `text` that open a doc comment's code block rustdoc would run as a doc test.
fn doc_tests_in(text: &str) -> Vec<String> {
    let mut open = false;
    let mut found = Vec::new();
    for line in text.lines() {
        let t = line.trim_start();
        let Some(doc) = t.strip_prefix("///").or_else(|| t.strip_prefix("//!")) else { continue };
        let Some(info) = doc.trim_start().strip_prefix("```") else { continue };
        if !open {
            let info = info.trim();
            let runs =
                info.is_empty() || info.split(',').all(|w| ["rust", "should_panic", "no_run"].contains(&w));
            if runs {
                found.push(line.to_string());
            }
        }
        open = !open;
    }
    found
}

/// What `test = false` or `doctest = false` leaves unbuilt, each with the crate and target.
fn unbuilt(root: &Path) -> Vec<String> {
    let mut faults = Vec::new();
    let crates =
        std::fs::read_dir(root).unwrap().map(|e| e.unwrap().path()).filter(|p| p.join("Cargo.toml").exists());
    for krate in crates {
        let manifest = std::fs::read_to_string(krate.join("Cargo.toml")).unwrap();
        let name = krate.file_name().unwrap().to_string_lossy().to_string();
        for (header, lines) in sections(&manifest) {
            let says = |key: &str| lines.iter().any(|l| l == &format!("{key} = false"));
            let files: Vec<PathBuf> = if header == "[lib]" {
                let bins = [krate.join("src/main.rs")];
                sources(&krate.join("src"))
                    .into_iter()
                    .filter(|p| !bins.contains(p) && !p.starts_with(krate.join("src/bin")))
                    .collect()
            } else {
                let bin = lines
                    .iter()
                    .find_map(|l| l.strip_prefix("name = "))
                    .unwrap()
                    .trim_matches('"')
                    .to_string();
                let file = if bin == name {
                    krate.join("src/main.rs")
                } else {
                    krate.join(format!("src/bin/{bin}.rs"))
                };
                assert!(file.exists(), "{name}'s [[bin]] {bin}: no {}", file.display());
                vec![file]
            };
            for file in files {
                let text = std::fs::read_to_string(&file).unwrap();
                let at = file.strip_prefix(root).unwrap().display().to_string();
                if says("test") {
                    faults.extend(
                        tests_in(&text).into_iter().map(|l| format!("{at} ({header} test = false): {l}")),
                    );
                }
                if says("doctest") {
                    faults.extend(
                        doc_tests_in(&text).into_iter().map(|l| format!("{at} (doctest = false): {l}")),
                    );
                }
            }
        }
    }
    faults
}

#[test]
fn no_test_is_left_unbuilt() {
    let faults = unbuilt(&root());
    assert!(faults.is_empty(), "tests their targets do not build:\n{}", faults.join("\n"));
}

#[test]
fn a_doc_test_or_a_test_where_none_is_built_is_found() {
    assert_eq!(doc_tests_in("/// ```\n/// let x = 1;\n/// ```\nfn f() {}"), ["/// ```"]);
    assert_eq!(doc_tests_in("//! ```rust,no_run\n//! f();\n//! ```"), ["//! ```rust,no_run"]);
    assert!(doc_tests_in("/// ```text\n/// a table\n/// ```\n/// ```sh\n/// cargo run\n/// ```").is_empty());
    assert!(doc_tests_in("/// ```ignore\n/// x\n/// ```").is_empty());
    assert_eq!(tests_in("fn a() {}\n#[cfg(test)]\nmod tests {}").len(), 1);
    let manifest = "[package]\nname = \"x\"\n\n[lib]\ntest = false\n\n[[bin]]\nname = \"x\"\ntest = false\n";
    let found = sections(manifest);
    assert_eq!(found.len(), 2);
    assert!(found.iter().all(|(_, lines)| lines.contains(&"test = false".to_string())));
}

//! One name for each idea: no two types of the workspace (structs, enums, unions, traits and type
//! aliases, in any crate's `src/`, `tests/`, `benches/` or `examples/`) share a name, so that a
//! name read anywhere means one thing, as the glossary (`docs/src/glossary.md`, "The code's
//! words") gives it. A new type that takes a name already in use fails here: name it for its own
//! idea.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The associated types of the standard traits, which every implementation names alike.
const ASSOCIATED: &[&str] = &["Item", "Output", "Error", "Err", "Target", "IntoIter", "Value"];

/// The types `source` defines, each with its line: `struct`, `enum`, `union`, `trait` and `type`,
/// with or without `pub`, at any indentation; comments left out.
fn defined(source: &str) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    for (i, line) in source.lines().enumerate() {
        let mut words = line.split_whitespace().peekable();
        if words.peek().is_some_and(|w| w.starts_with("//")) {
            continue;
        }
        while words.peek().is_some_and(|w| w.starts_with("pub") || *w == "unsafe") {
            words.next();
        }
        let (Some(kind), Some(name)) = (words.next(), words.next()) else { continue };
        if !matches!(kind, "struct" | "enum" | "union" | "trait" | "type") {
            continue;
        }
        let name: String = name.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        if name.is_empty() || !name.starts_with(|c: char| c.is_ascii_uppercase()) {
            continue;
        }
        if kind == "type" && ASSOCIATED.contains(&name.as_str()) {
            continue;
        }
        out.push((name, i + 1));
    }
    out
}

/// Every type of the workspace's members: name → the places that define it.
fn types() -> BTreeMap<String, Vec<String>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).expect("the workspace's Cargo.toml");
    let members = manifest.split("members = [").nth(1).and_then(|m| m.split(']').next()).expect("members");
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for member in members.split(',').map(|m| m.trim().trim_matches('"')).filter(|m| !m.is_empty()) {
        let mut files = Vec::new();
        for dir in ["src", "tests", "benches", "examples"] {
            sources(&root.join(member).join(dir), &mut files);
        }
        for file in files {
            let source = std::fs::read_to_string(&file).expect("a source file");
            let shown = file.strip_prefix(&root).unwrap_or(&file).display().to_string();
            for (name, line) in defined(&source) {
                out.entry(name).or_default().push(format!("{shown}:{line}"));
            }
        }
    }
    out
}

#[test]
fn no_two_types_share_a_name() {
    let types = types();
    assert!(types.len() > 300, "{} types read", types.len());
    let shared: Vec<String> = types
        .iter()
        .filter(|(_, places)| places.len() > 1)
        .map(|(name, places)| format!("`{name}` names {} types: {}", places.len(), places.join(", ")))
        .collect();
    assert!(shared.is_empty(), "{}", shared.join("\n"));
}

/// The reading sees a definition however it is written, and not an associated type, a
/// comment, a function or a lower-case name.
#[test]
fn a_definition_is_read_however_it_is_written() {
    let source = [
        "pub struct Shape {",
        "    pub(crate) enum Limit { A }",
        "  type Item = u32;",
        "// struct Comment;",
        "trait Device<'a> {",
        "pub(super) type Product<'p> = u8;",
        "fn struct_like() {}",
        "unsafe trait Raw {}",
    ]
    .join("\n");
    let source = source.as_str();
    let names: Vec<String> = defined(source).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["Shape", "Limit", "Device", "Product", "Raw"]);
}

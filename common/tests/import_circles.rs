//! No crate of the workspace has an import circle: within each crate, the modules that one module
//! names through `crate::` never lead back to it. (A circle makes two files one unit that cannot
//! be read, changed or tested apart.)

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

/// The module a file defines: its stem, or its folder's name for a `mod.rs`.
fn module_of(path: &Path) -> String {
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
    match stem {
        "mod" => {
            path.parent().and_then(|p| p.file_name()).and_then(|s| s.to_str()).unwrap_or_default().to_owned()
        }
        _ => stem.to_owned(),
    }
}

/// The crate's modules that `source` names through `crate::` outside its tests and comments:
/// in each path, the last segment that is one of `modules`.
fn uses(source: &str, modules: &[String]) -> Vec<String> {
    let code = source.split("#[cfg(test)]").next().unwrap_or(source);
    let code: String =
        code.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n");
    let mut found = Vec::new();
    for (at, _) in code.match_indices("crate::") {
        if code[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_') {
            continue; // `step09_3xtf32::…` and the like: another crate.
        }
        let rest = &code[at + "crate::".len()..];
        let path: String =
            rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':' || *c == '{').collect();
        let mut paths: Vec<String> = Vec::new();
        match path.split_once('{') {
            Some((prefix, _)) => {
                let group = rest[prefix.len() + 1..].split('}').next().unwrap_or("");
                paths.extend(group.split(',').map(|p| format!("{prefix}{}", p.trim())));
            }
            None => paths.push(path),
        }
        for p in paths {
            if let Some(m) = p.split("::").filter(|s| modules.iter().any(|m| m == s)).last()
                && !found.contains(&m.to_owned())
            {
                found.push(m.to_owned());
            }
        }
    }
    found
}

/// The first circle among the modules of `graph` (module → the modules it uses), if any.
fn circle(graph: &BTreeMap<String, Vec<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, Vec<String>>,
        path: &mut Vec<String>,
        done: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|p| p == node) {
            let mut c = path[at..].to_vec();
            c.push(node.to_owned());
            return Some(c);
        }
        if done.iter().any(|d| d == node) {
            return None;
        }
        path.push(node.to_owned());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(c) = visit(next, graph, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.push(node.to_owned());
        None
    }
    let mut done = Vec::new();
    graph.keys().find_map(|node| visit(node, graph, &mut Vec::new(), &mut done))
}

/// Each crate's graph of modules, from the workspace's members.
fn crates() -> Vec<(String, BTreeMap<String, Vec<String>>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).expect("the workspace's Cargo.toml");
    let members = manifest.split("members = [").nth(1).and_then(|m| m.split(']').next()).expect("members");
    let mut out = Vec::new();
    for member in members.split(',').map(|m| m.trim().trim_matches('"')).filter(|m| !m.is_empty()) {
        let mut files = Vec::new();
        sources(&root.join(member).join("src"), &mut files);
        let modules: Vec<String> = files.iter().map(|f| module_of(f)).collect();
        let mut graph = BTreeMap::new();
        for file in &files {
            let source = std::fs::read_to_string(file).expect("a source file");
            let me = module_of(file);
            let used = uses(&source, &modules).into_iter().filter(|m| *m != me).collect();
            graph.insert(me, used);
        }
        out.push((member.to_owned(), graph));
    }
    out
}

#[test]
fn no_crate_has_an_import_circle() {
    let crates = crates();
    assert!(crates.len() >= 16, "{} crates read", crates.len());
    for (name, graph) in crates {
        if let Some(c) = circle(&graph) {
            panic!("{name} has an import circle: {}", c.join(" → "));
        }
    }
}

/// The check sees a circle through plain uses and groups, and not one through a comment, a test
/// or another crate's path.
#[test]
fn a_circle_is_caught() {
    let modules: Vec<String> = ["residues", "sequence", "hooks"].map(String::from).to_vec();
    assert_eq!(uses("use crate::sequence::{Work, play};\n", &modules), ["sequence"]);
    assert_eq!(uses("use crate::{residues::MOST, sequence};\n", &modules), ["residues", "sequence"]);
    assert!(uses("// crate::hooks\n#[cfg(test)]\nuse crate::hooks;\n", &modules).is_empty());
    assert!(uses("use step09_3xtf32::hooks::X;\n", &modules).is_empty());
    let graph = |edges: &[(&str, &str)]| {
        let mut g: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (a, b) in edges {
            g.entry((*a).to_owned()).or_default().push((*b).to_owned());
        }
        g
    };
    let found = circle(&graph(&[("hooks", "sequence"), ("sequence", "residues"), ("residues", "sequence")]));
    assert_eq!(found, Some(["sequence", "residues", "sequence"].map(String::from).to_vec()));
    assert_eq!(
        circle(&graph(&[("hooks", "sequence"), ("sequence", "residues"), ("hooks", "residues")])),
        None
    );
}

//! No crate of the workspace has an import circle: within each crate, the modules that one module
//! names (through `crate::`, `super::`, `self::`, or a child module's name in a `mod.rs` or the
//! crate's root) never lead back to it. A circle makes two files one unit that cannot be read,
//! changed or tested apart.
//!
//! A module is named by its path from the crate's root (`exec::state` for `src/exec/state.rs`,
//! `exec` for `src/exec/mod.rs`), and a path such as `super::trace_hooks::Recorder` leads to the
//! deepest module it names (`exec::trace_hooks`). A name that a `mod.rs` or the root hands on
//! with `pub use` leads to the module that defines it: the hand-on is a face, not a use. Test
//! modules, comments and `$crate::` paths (a macro's body, compiled where it expands) are left
//! out, and so is a module's use of what a module holding it defines (`crate::Fault` from
//! `lib.rs`, `super::Device` from a `mod.rs`): the module tree already makes the one part of the
//! other. A circle is between modules neither of which holds the other.

use std::collections::{BTreeMap, BTreeSet};
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

/// The module a file under `src/` defines, as its path from the crate's root: `exec/state.rs` is
/// `exec::state`, `exec/mod.rs` is `exec`, `lib.rs` is the root (empty).
fn module_of(relative: &Path) -> String {
    let mut parts: Vec<String> =
        relative.iter().map(|p| p.to_string_lossy().trim_end_matches(".rs").to_owned()).collect();
    let root = parts.len() == 1 && matches!(parts[0].as_str(), "lib" | "main");
    if root || parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts.join("::")
}

/// `source` without comments and without the code only tests build: a `#[cfg(test)]` item
/// (a `mod tests { … }` to its closing brace, or one line).
fn code_of(source: &str) -> String {
    let lines: Vec<&str> = source
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .map(|l| l.split(" // ").next().unwrap_or(l))
        .collect();
    let mut out = String::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim() == "#[cfg(test)]" {
            i += 1;
            // The item it marks: to the brace that closes its first opened one, or its line.
            let mut depth = 0i64;
            let mut opened = false;
            while i < lines.len() {
                let l = lines[i];
                depth += l.matches('{').count() as i64 - l.matches('}').count() as i64;
                opened |= l.contains('{');
                i += 1;
                if (opened && depth <= 0) || (!opened && l.trim_end().ends_with(';')) {
                    break;
                }
            }
            continue;
        }
        out.push_str(lines[i]);
        out.push('\n');
        i += 1;
    }
    out
}

/// The paths a use-tree names, with its groups expanded: `a::{b, c::{d, e}}` is `a::b`,
/// `a::c::d` and `a::c::e`.
fn expand(tree: &str) -> Vec<String> {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else { return vec![tree.to_owned()] };
    let prefix = &tree[..open];
    let close = tree.rfind('}').unwrap_or(tree.len());
    let inner = &tree[open + 1..close];
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    parts
        .into_iter()
        .filter(|p| !p.trim().is_empty())
        .flat_map(|p| expand(&format!("{prefix}{}", p.trim())))
        .collect()
}

/// The paths `code` names from where a path can start inside the crate: each `crate::…`,
/// `super::…` and `self::…`, and each `CHILD::…` where `children` are the modules a `mod.rs` or
/// the root declares; a `use` statement's groups expanded.
fn paths(code: &str, children: &[String]) -> Vec<String> {
    // `$crate::` in a macro's body is the calling crate's path, resolved where the macro expands.
    let starts =
        |at: usize| !code[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == ':' || c == '$');
    let mut found = Vec::new();
    let mut heads: Vec<String> = ["crate::", "super::", "self::"].map(String::from).to_vec();
    heads.extend(children.iter().map(|c| format!("{c}::")));
    for head in &heads {
        for (at, _) in code.match_indices(head.as_str()) {
            if !starts(at) {
                continue;
            }
            let rest = &code[at..];
            let mut depth = 0;
            let end = rest
                .char_indices()
                .find(|&(_, c)| {
                    match c {
                        '{' => depth += 1,
                        '}' if depth > 0 => depth -= 1,
                        _ => {}
                    }
                    !(c.is_alphanumeric()
                        || c == '_'
                        || c == ':'
                        || c == '{'
                        || c == '}'
                        || c == ','
                        || c == ' ')
                        || (depth == 0 && (c == ',' || c == '}' || c == ' '))
                })
                .map_or(rest.len(), |(i, _)| i);
            found.extend(expand(&rest[..end]));
        }
    }
    found
}

/// What a module's `pub use` hands on under a name of its own: (module, name) → the module the
/// name leads to (itself, for a module; the module that defines it, for an item).
type Faces = BTreeMap<(String, String), String>;

/// The module of the crate a path leads to from module `me` (`is_root_like`: `me` is a `mod.rs`
/// or the root, whose children a bare name reaches): the deepest module of `modules` it names,
/// through the names the modules on the way hand on (`crate::Shape` leads to `data::matrix`
/// where the root has `pub use matrix::Shape` and `pub use data::matrix`).
fn target(
    path: &str,
    me: &str,
    is_root_like: bool,
    modules: &BTreeSet<String>,
    faces: &Faces,
) -> Option<String> {
    let mut base: Vec<&str> = if me.is_empty() { Vec::new() } else { me.split("::").collect() };
    let mut segments = path.split("::").map(str::trim).filter(|s| !s.is_empty()).peekable();
    match segments.peek().copied() {
        Some("crate") => {
            base.clear();
            segments.next();
        }
        Some("self") => {
            segments.next();
        }
        Some("super") => {
            while segments.peek() == Some(&"super") {
                segments.next();
                base.pop()?;
            }
        }
        _ if !is_root_like => return None,
        _ => {}
    }
    let mut at = base.join("::");
    let mut deepest = modules.contains(&at).then(|| at.clone());
    for s in segments {
        let next = if at.is_empty() { s.to_owned() } else { format!("{at}::{s}") };
        if modules.contains(&next) {
            at = next;
        } else if let Some(handed) = faces.get(&(at.clone(), s.to_owned())) {
            at = handed.clone();
        } else {
            break;
        }
        deepest = Some(at.clone());
    }
    deepest
}

/// The names each `mod.rs` and the root hand on with `pub use`, resolved in turn until none
/// changes (a name may be handed on through another).
fn faces_of(files: &[(String, bool, String)], modules: &BTreeSet<String>) -> Faces {
    let mut faces = Faces::new();
    for _ in 0..4 {
        for (me, root_like, source) in files.iter().filter(|(_, r, _)| *r) {
            let code = code_of(source);
            let handed = code
                .split(';')
                .map(str::trim)
                .filter_map(|st| st.strip_prefix("pub use ").or_else(|| st.strip_prefix("pub(crate) use ")));
            for path in handed.flat_map(expand) {
                let name = path.rsplit("::").next().unwrap_or_default().trim().to_owned();
                if let Some(to) = target(&path, me, *root_like, modules, &faces) {
                    faces.insert((me.clone(), name), to);
                }
            }
        }
    }
    faces
}

/// Whether module `a` holds module `b` (the root holds every other).
fn is_ancestor(a: &str, b: &str) -> bool {
    a != b && (a.is_empty() || b.starts_with(&format!("{a}::")))
}

/// One crate's graph: each module → the modules of the crate its code names, from the files
/// under `src` (binaries apart: they are crates of their own).
fn graph_of(files: &[(String, bool, String)]) -> BTreeMap<String, BTreeSet<String>> {
    let modules: BTreeSet<String> = files.iter().map(|(m, _, _)| m.clone()).collect();
    let faces = faces_of(files, &modules);
    let mut graph = BTreeMap::new();
    for (me, root_like, source) in files {
        let prefix = if me.is_empty() { String::new() } else { format!("{me}::") };
        let children: Vec<String> = if *root_like {
            modules
                .iter()
                .filter_map(|m| m.strip_prefix(&prefix).filter(|c| !c.contains("::") && !c.is_empty()))
                .filter(|c| !me.is_empty() || !c.is_empty())
                .map(str::to_owned)
                .collect()
        } else {
            Vec::new()
        };
        // What a `pub use` hands on is the face's, not a use of its own (see `faces_of`).
        let code: String = code_of(source)
            .split_inclusive(';')
            .filter(|st| {
                let st = st.trim_start();
                !st.starts_with("pub use ") && !st.starts_with("pub(crate) use ")
            })
            .collect();
        let used = paths(&code, &children)
            .iter()
            .filter_map(|p| target(p, me, *root_like, &modules, &faces))
            .filter(|m| m != me && !is_ancestor(m, me))
            .collect();
        graph.insert(me.clone(), used);
    }
    graph
}

/// The first circle among the modules of `graph` (module → the modules it uses), if any.
fn circle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|p| p == node) {
            let mut c = path[at..].to_vec();
            c.push(node.to_owned());
            return Some(c);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_owned());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(c) = visit(next, graph, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(node.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    graph.keys().find_map(|node| visit(node, graph, &mut Vec::new(), &mut done))
}

/// Each crate's graph of modules, from the workspace's members.
fn crates() -> Vec<(String, BTreeMap<String, BTreeSet<String>>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).expect("the workspace's Cargo.toml");
    let members = manifest.split("members = [").nth(1).and_then(|m| m.split(']').next()).expect("members");
    let mut out = Vec::new();
    for member in members.split(',').map(|m| m.trim().trim_matches('"')).filter(|m| !m.is_empty()) {
        let src = root.join(member).join("src");
        let mut found = Vec::new();
        sources(&src, &mut found);
        let has_lib = src.join("lib.rs").exists();
        let files: Vec<(String, bool, String)> = found
            .iter()
            .filter_map(|f| {
                let relative = f.strip_prefix(&src).ok()?;
                let binary = relative.starts_with("bin") || (has_lib && relative == Path::new("main.rs"));
                let root_like = matches!(relative.file_name()?.to_str()?, "mod.rs" | "lib.rs" | "main.rs");
                let source = std::fs::read_to_string(f).expect("a source file");
                (!binary).then(|| (module_of(relative), root_like, source))
            })
            .collect();
        out.push((member.to_owned(), graph_of(&files)));
    }
    out
}

#[test]
fn no_crate_has_an_import_circle() {
    let crates = crates();
    assert!(crates.len() >= 16, "{} crates read", crates.len());
    let emulator = &crates.iter().find(|(n, _)| n == "ptx_emulator").expect("the emulator").1;
    assert!(emulator.len() > 40, "{} of the emulator's modules read", emulator.len());
    let mut found = Vec::new();
    for (name, mut graph) in crates {
        // Every circle, one at a time: the first found, then the rest with its last edge taken out.
        while let Some(c) = circle(&graph) {
            found.push(format!("{name} has an import circle: {}", c.join(" → ")));
            let (from, to) = (&c[c.len() - 2], &c[c.len() - 1]);
            graph.get_mut(from).map(|e| e.remove(to));
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

fn graph(files: &[(&str, bool, &str)]) -> BTreeMap<String, BTreeSet<String>> {
    let files: Vec<(String, bool, String)> =
        files.iter().map(|(m, r, s)| ((*m).to_owned(), *r, (*s).to_owned())).collect();
    graph_of(&files)
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|n| (*n).to_owned()).collect()
}

/// The check sees a circle through plain uses and groups, and not one through a comment, a test
/// or another crate's path.
#[test]
fn a_circle_through_crate_paths_is_caught() {
    let g = graph(&[
        ("", true, "mod residues;\nmod sequence;\nmod hooks;\n"),
        ("hooks", false, "use crate::{residues::MOST, sequence};\n// crate::hooks\n"),
        (
            "sequence",
            false,
            "use crate::sequence::{Work, play};\nuse step09_3xtf32::hooks::X;\n$crate::hooks::f();\n",
        ),
        ("residues", false, "#[cfg(test)]\nmod tests {\n    use crate::hooks;\n}\n"),
    ]);
    assert_eq!(g["hooks"], set(&["residues", "sequence"]));
    assert!(g["sequence"].is_empty() && g["residues"].is_empty());
    assert_eq!(circle(&g), None);
    let g = graph(&[("a", false, "fn f(x: &crate::b::B) {}\n"), ("b", false, "use crate::a::A;\n")]);
    assert_eq!(circle(&g), Some(["a", "b", "a"].map(String::from).to_vec()));
}

/// A circle through `super::`, `self::` and a `mod.rs`'s child names is seen, with the module
/// named by its whole path: the machine's state holding a recorder whose hooks read the state.
#[test]
fn a_circle_through_super_and_self_is_caught() {
    let g = graph(&[
        ("exec", true, "mod state;\nmod trace_hooks;\npub use state::Cluster;\n"),
        ("exec::state", false, "pub struct Cluster { trace: Option<Box<super::trace_hooks::Recorder>> }\n"),
        ("exec::trace_hooks", false, "use super::state::{Cluster, Lanes, Warp};\n"),
        ("replay", true, "pub mod trace;\nuse self::trace::Trace;\n"),
        ("replay::trace", false, "use super::super::exec::{state::Warp};\n"),
    ]);
    assert!(g["exec"].is_empty(), "a hand-on is no use: {:?}", g["exec"]);
    assert_eq!(g["replay"], set(&["replay::trace"]));
    assert_eq!(g["replay::trace"], set(&["exec::state"]));
    assert_eq!(
        circle(&g),
        Some(["exec::state", "exec::trace_hooks", "exec::state"].map(String::from).to_vec())
    );
    // Two files of one name in different folders are different modules.
    let g = graph(&[
        ("exec", true, "mod watch;\n"),
        ("watch", false, "use crate::exec::watch::W;\n"),
        ("exec::watch", false, "use crate::watch::V;\n"),
    ]);
    assert_eq!(circle(&g), Some(["exec::watch", "watch", "exec::watch"].map(String::from).to_vec()));
}

#[test]
fn a_use_tree_expands_to_its_paths() {
    assert_eq!(expand("a::{b, c::{d, e}}"), ["a::b", "a::c::d", "a::c::e"]);
    assert_eq!(
        paths("use super::{x::Y, z};\nlet q = self::w::f();\n", &[]),
        ["super::x::Y", "super::z", "self::w::f"]
    );
}

/// A name the root hands on leads to the module that defines it, not to the root: a module
/// that takes `crate::Shape` makes no circle with a root that hands `Shape` on.
#[test]
fn a_name_handed_on_leads_to_its_module() {
    let g = graph(&[
        ("", true, "mod data;\npub use data::{files, matrix};\npub use matrix::Shape;\n"),
        ("data", true, "pub mod files;\npub mod matrix;\n"),
        ("data::files", false, "use crate::Shape;\nuse crate::matrix::Inputs;\n"),
        ("data::matrix", false, "pub struct Shape;\n"),
    ]);
    assert_eq!(g["data::files"], set(&["data::matrix"]));
    assert!(g[""].is_empty());
    assert_eq!(circle(&g), None);
    // Where the root itself defines what a module takes, the module uses what holds it.
    let g =
        graph(&[("", true, "mod a;\nuse a::f;\npub struct Fault;\n"), ("a", false, "use crate::Fault;\n")]);
    assert_eq!(circle(&g), None, "the root holds `a`: its use of the root is no tie");
}

/// One module layout: a module with modules of its own is a folder with its `mod.rs`, never a
/// file `NAME.rs` beside a folder `NAME/`.
#[test]
fn a_module_with_modules_is_a_folder() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for (member, _) in crates() {
        sources(&root.join(member).join("src"), &mut files);
    }
    assert!(files.len() > 100, "{} files read", files.len());
    let beside: Vec<String> = files
        .iter()
        .filter(|f| f.with_extension("").is_dir())
        .map(|f| f.strip_prefix(&root).unwrap_or(f).display().to_string())
        .collect();
    assert!(beside.is_empty(), "a file beside its folder (make it the folder's mod.rs): {beside:?}");
}

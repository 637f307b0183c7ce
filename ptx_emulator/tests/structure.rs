//! The machine's parts (`src/exec/`) depend one way: each uses only the parts of its own level
//! and those below, so a reader can take them bottom up. The levels are the list in
//! `src/exec/mod.rs`'s opening comment, read from there: one bullet a level, the highest first.
//! A use is any path through `super::` or `crate::exec::` (a `use` line, grouped or not, a type,
//! a function) and any call of a method defined only in a part above. And the crate depends on
//! none of the crates that read what it records.

use std::collections::BTreeMap;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src/exec");

/// `source` without its comments (no string of the machine's imports holds two slashes).
fn without_comments(source: &str) -> String {
    source.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n")
}

/// The parts named in the bullets of `mod_rs`'s opening comment, a level a bullet, highest first.
/// A bullet's parts are its links, [`name`]; other words in backquotes are words.
fn levels(mod_rs: &str) -> Vec<Vec<String>> {
    let mut levels: Vec<Vec<String>> = Vec::new();
    for line in mod_rs.lines().take_while(|l| l.starts_with("//!")) {
        let text = line.trim_start_matches("//!");
        if text.starts_with(" - ") {
            levels.push(Vec::new());
        } else if !text.starts_with("   ") {
            continue;
        }
        let Some(level) = levels.last_mut() else { continue };
        for piece in text.split("[`").skip(1) {
            // A link elsewhere (`crate::watch`) is no part.
            if let Some((name, _)) = piece.split_once("`]")
                && !name.contains("::")
            {
                level.push(name.to_owned());
            }
        }
    }
    levels
}

/// The first segment of every path that follows `prefix` in `code`, groups opened
/// (`super::{a::X, b}` gives `a` and `b`).
fn first_segments(code: &str, prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (at, _) in code.match_indices(prefix) {
        let rest = code[at + prefix.len()..].trim_start();
        if let Some(group) = rest.strip_prefix('{') {
            // Top-level items of the group only.
            let mut depth = 0;
            let mut item = String::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        out.push(std::mem::take(&mut item));
                        continue;
                    }
                    _ => {}
                }
                if depth == 0 {
                    item.push(c);
                }
            }
            out.push(item);
        } else {
            out.push(rest.to_owned());
        }
    }
    out.iter()
        .map(|s| s.trim().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect::<String>())
        .filter(|s| !s.is_empty())
        .collect()
}

/// The items a source defines: functions, types, traits and constants, by name.
fn defined(source: &str) -> Vec<String> {
    let mut names = Vec::new();
    for keyword in ["fn ", "struct ", "enum ", "trait ", "type ", "const "] {
        for rest in source.split(keyword).skip(1) {
            let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            if !name.is_empty() {
                names.push(name);
            }
        }
    }
    names
}

/// Every use of `part` (its code given) that reaches a part of a higher level than its own.
fn wrong_uses(sources: &BTreeMap<String, String>, level: &BTreeMap<String, usize>) -> Vec<String> {
    let mut wrong = Vec::new();
    let defines: BTreeMap<&String, Vec<String>> = sources.iter().map(|(p, s)| (p, defined(s))).collect();
    let owner = |name: &str| -> Option<&String> {
        // The part that defines an item; `mod` (re-exports) last, so a type re-exported there
        // is its own part's.
        let mut found: Vec<&String> =
            defines.iter().filter(|(_, d)| d.iter().any(|d| d == name)).map(|(p, _)| *p).collect();
        found.sort_by_key(|p| (p.as_str() == "mod", level[*p]));
        found.first().copied()
    };
    for (part, source) in sources {
        let code = without_comments(source);
        let mut reached: Vec<(String, String)> = Vec::new();
        for prefix in ["super::", "crate::exec::"] {
            for seg in first_segments(&code, prefix) {
                let target =
                    if sources.contains_key(&seg) { Some(seg.clone()) } else { owner(&seg).cloned() };
                if let Some(t) = target {
                    reached.push((t, seg));
                }
            }
        }
        // Methods and functions called without a path: those defined in no part at or below
        // this one's level are above it.
        for (other, names) in &defines {
            if level[*other] <= level[part] {
                continue;
            }
            for name in names {
                let lower = defines.iter().any(|(p, d)| level[*p] <= level[part] && d.contains(name));
                let called =
                    ["self.", "cta.", "Self::"].iter().any(|how| code.contains(&format!("{how}{name}(")));
                if !lower && called {
                    reached.push(((*other).clone(), name.clone()));
                }
            }
        }
        for (target, what) in reached {
            if target != *part && level[&target] > level[part] {
                wrong.push(format!("{part} uses `{what}` of {target}, which is above it"));
            }
        }
    }
    wrong.sort();
    wrong.dedup();
    wrong
}

fn the_parts() -> (BTreeMap<String, String>, BTreeMap<String, usize>) {
    let mod_rs = std::fs::read_to_string(format!("{DIR}/mod.rs")).unwrap();
    let levels = levels(&mod_rs);
    let mut level = BTreeMap::new();
    let mut sources = BTreeMap::new();
    for (i, names) in levels.iter().rev().enumerate() {
        for name in names {
            level.insert(name.clone(), i);
            let source = std::fs::read_to_string(format!("{DIR}/{name}.rs"))
                .unwrap_or_else(|_| panic!("src/exec/mod.rs lists `{name}`, which is no file of src/exec"));
            sources.insert(name.clone(), source);
        }
    }
    level.insert("mod".into(), levels.len());
    sources.insert("mod".into(), mod_rs);
    (sources, level)
}

#[test]
fn the_parts_of_the_machine_depend_one_way() {
    let (sources, level) = the_parts();
    let wrong = wrong_uses(&sources, &level);
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn every_part_is_in_the_list_of_mod_rs() {
    let (sources, _) = the_parts();
    for entry in std::fs::read_dir(DIR).unwrap() {
        let file = entry.unwrap().file_name().into_string().unwrap();
        let name = file.trim_end_matches(".rs");
        assert!(
            sources.contains_key(name),
            "src/exec/{file} is missing from the list of parts in src/exec/mod.rs"
        );
    }
}

/// A planted use of each kind from a low part to a high one is seen: a `use` line, a grouped
/// one, a type by its path, a type re-exported by `mod.rs`, and a method.
#[test]
fn a_use_from_below_is_caught_in_every_form() {
    let (sources, level) = the_parts();
    for plant in [
        "use super::schedule::Rounds;",
        "use super::{lanes::Lanes, schedule::Rounds};",
        "fn f(x: super::schedule::Rounds) {}",
        "fn f(c: &crate::exec::deadlock::Report) {}",
        "fn f(&self) { self.run_rounds(); }",
    ] {
        let mut planted = sources.clone();
        planted.get_mut("lanes").unwrap().push_str(&format!("\n{plant}\n"));
        let mut more = planted.clone();
        // A method only a high part defines.
        more.get_mut("schedule").unwrap().push_str("\nfn run_rounds() {}\nstruct Rounds;\n");
        more.get_mut("deadlock").unwrap().push_str("\nstruct Report;\n");
        let wrong = wrong_uses(&more, &level);
        assert!(wrong.iter().any(|w| w.starts_with("lanes uses")), "not seen: {plant}");
    }
}

/// The machine depends on neither the time model (`ptx_model`) nor the pictures (`ptx_pictures`),
/// not even in its tests: they read what it records, and it runs without them.
#[test]
fn the_machine_depends_on_neither_the_model_nor_the_pictures() {
    let manifest = include_str!("../Cargo.toml");
    for other in ["ptx_model", "ptx_pictures"] {
        let named = manifest.lines().any(|l| l.split(['=', '.', ' ']).next() == Some(other));
        assert!(!named, "ptx_emulator/Cargo.toml names {other}, which depends on the machine");
    }
}

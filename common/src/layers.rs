//! The crate's layers, checked: every module uses only modules of its own layer or those below,
//! and no two modules use each other, directly or through others. The table below is the map of
//! `ARCHITECTURE.md` ("`common`'s layers"), which names each module in its layer; a module
//! missing from either fails the test.

use std::collections::BTreeMap;

/// One module of the table: its layer, name, file (under `src/`) and source.
macro_rules! m {
    ($layer:literal, $name:literal, $path:literal) => {
        LayerModule { layer: $layer, name: $name, path: $path, source: include_str!($path) }
    };
}

struct LayerModule {
    layer: u32,
    name: &'static str,
    path: &'static str,
    source: &'static str,
}

/// Every module of the crate but the root, bottom layer first.
const MODULES: &[LayerModule] = &[
    m!(0, "files", "data/files.rs"),
    m!(0, "matrix", "data/matrix.rs"),
    m!(0, "patch", "data/patch.rs"),
    m!(0, "progress", "data/progress.rs"),
    m!(1, "advisories", "hardware/advisories.rs"),
    m!(1, "clock", "hardware/clock.rs"),
    m!(1, "emulated", "hardware/emulated.rs"),
    m!(1, "gpu", "hardware/gpu.rs"),
    m!(1, "stream_hold", "hardware/stream_hold.rs"),
    m!(1, "timing", "hardware/timing.rs"),
    m!(1, "watchdog", "hardware/watchdog.rs"),
    m!(2, "cublas", "numerics/cublas.rs"),
    m!(2, "integer_rounding", "numerics/integer_rounding.rs"),
    m!(2, "reference", "numerics/reference.rs"),
    m!(2, "verify", "numerics/verify/mod.rs"),
    m!(2, "error_model", "numerics/verify/error_model.rs"),
    m!(2, "precision", "numerics/verify/precision.rs"),
    m!(2, "verdict", "numerics/verify/verdict.rs"),
    m!(3, "product", "contract/product.rs"),
    m!(3, "emulator_queue", "contract/emulator_queue.rs"),
    m!(3, "gpu_queue", "contract/gpu_queue.rs"),
    m!(3, "hooks", "contract/hooks.rs"),
    m!(3, "step_kernel", "contract/step_kernel.rs"),
    m!(3, "paths", "contract/paths.rs"),
    m!(3, "queue", "contract/queue.rs"),
    m!(3, "pad", "contract/pad.rs"),
    m!(3, "params", "contract/params.rs"),
    m!(3, "includes", "contract/includes.rs"),
    m!(3, "spills", "contract/spills.rs"),
    m!(3, "step", "contract/step.rs"),
    m!(3, "stream_k", "contract/stream_k.rs"),
    m!(3, "tile_checks", "contract/tile_checks.rs"),
    m!(3, "tma", "contract/tma.rs"),
    m!(4, "carried", "present/carried.rs"),
    m!(4, "cli", "present/cli.rs"),
    m!(4, "emit", "present/emit.rs"),
    m!(4, "numbers", "present/numbers.rs"),
    m!(4, "predicted", "present/predicted.rs"),
    m!(4, "record", "present/record.rs"),
    m!(4, "report", "present/report.rs"),
    m!(5, "bench", "drive/bench.rs"),
    m!(5, "compile_only", "drive/compile_only.rs"),
    m!(5, "every_path", "drive/every_path.rs"),
    m!(5, "run", "drive/run/mod.rs"),
    m!(5, "device", "drive/run/device.rs"),
    m!(5, "ask", "drive/run/ask.rs"),
    m!(5, "judge", "drive/run/judge.rs"),
    m!(5, "budget", "drive/run/budget.rs"),
    m!(5, "cpu", "drive/run/cpu.rs"),
    m!(5, "emulate", "drive/run/emulate.rs"),
    m!(5, "depth", "drive/run/depth.rs"),
    m!(5, "timed", "drive/run/timed.rs"),
    m!(5, "predict_only", "drive/run/predict_only.rs"),
    m!(5, "measure", "drive/measure.rs"),
    m!(5, "tune", "drive/tune.rs"),
    m!(6, "testing", "testing/mod.rs"),
    m!(6, "checker", "testing/checker.rs"),
    m!(6, "copies", "testing/copies.rs"),
    m!(6, "command_line", "testing/command_line.rs"),
    m!(6, "edits", "testing/edits.rs"),
    m!(6, "emulator", "testing/emulator.rs"),
    m!(6, "exercises", "testing/exercises.rs"),
    m!(6, "inputs", "testing/inputs.rs"),
    m!(6, "nvrtc", "testing/nvrtc.rs"),
    m!(6, "access_picture", "testing/access_picture.rs"),
    m!(6, "wide_offsets", "testing/wide_offsets.rs"),
    m!(6, "sets", "testing/sets.rs"),
    m!(6, "shapes", "testing/shapes.rs"),
    m!(6, "faults", "testing/faults.rs"),
    m!(6, "thread_tile", "testing/thread_tile.rs"),
];

/// The layers' folders, bottom first: each names its modules in its `mod.rs`.
const FOLDERS: &[(u32, &str, &str)] = &[
    (0, "data", include_str!("data/mod.rs")),
    (1, "hardware", include_str!("hardware/mod.rs")),
    (2, "numerics", include_str!("numerics/mod.rs")),
    (3, "contract", include_str!("contract/mod.rs")),
    (4, "present", include_str!("present/mod.rs")),
    (5, "drive", include_str!("drive/mod.rs")),
    (6, "testing", include_str!("testing/mod.rs")),
];

/// The crate's root, whose `pub use` lines put modules and types at `common::`.
const ROOT: &str = include_str!("lib.rs");

/// `source` without its comments: a line's `//` and what follows (no string of this crate's
/// imports holds two slashes).
fn without_comments(source: &str) -> String {
    source.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n")
}

/// The paths a `use` tree or a qualified name spells from `text` on (just past `crate::` or
/// `super::`), each as its segments: `a::b::C` is one, `{a::B, c::{d, e}}` three. Whitespace
/// and line breaks inside a group are skipped.
fn paths(text: &str) -> Vec<Vec<String>> {
    fn tree(chars: &[char], at: &mut usize, prefix: &[String], out: &mut Vec<Vec<String>>) {
        let skip = |at: &mut usize| {
            while *at < chars.len() && chars[*at].is_whitespace() {
                *at += 1;
            }
        };
        skip(at);
        if chars.get(*at) == Some(&'{') {
            *at += 1;
            loop {
                tree(chars, at, prefix, out);
                skip(at);
                match chars.get(*at) {
                    Some(',') => *at += 1,
                    Some('}') => {
                        *at += 1;
                        return;
                    }
                    _ => return,
                }
                skip(at);
                if chars.get(*at) == Some(&'}') {
                    *at += 1;
                    return;
                }
            }
        }
        let start = *at;
        while *at < chars.len() && (chars[*at].is_alphanumeric() || chars[*at] == '_') {
            *at += 1;
        }
        let mut path = prefix.to_vec();
        path.push(chars[start..*at].iter().collect());
        if chars.get(*at) == Some(&':') && chars.get(*at + 1) == Some(&':') {
            *at += 2;
            tree(chars, at, &path, out);
        } else {
            out.push(path);
        }
    }
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    tree(&chars, &mut 0, &[], &mut out);
    out
}

/// What the root puts at `common::`: (name, the module it is, or the module a type comes from).
fn root_names() -> Vec<(String, &'static str)> {
    let code = without_comments(ROOT);
    let mut names = Vec::new();
    for statement in code.split(';') {
        let Some(at) = statement.find("pub use ") else { continue };
        for path in paths(&statement[at + "pub use ".len()..]) {
            let (Some(last), Some(from)) = (path.last(), path.iter().rev().nth(1)) else { continue };
            let module = MODULES
                .iter()
                .find(|m| m.name == last.as_str() && FOLDERS.iter().any(|f| f.1 == from.as_str()))
                .or_else(|| MODULES.iter().find(|m| m.name == from.as_str()));
            if let Some(m) = module {
                names.push((last.clone(), m.name));
            }
        }
    }
    names
}

/// The module a path names, read from `dir` (the folder the path starts in, "" for the root):
/// down through folders and modules with modules as far as the path goes, so that
/// `drive::tune::Tuned` is `tune` and `hardware::watchdog::wait` is `watchdog`; at the root, a name the
/// root re-exports is the module it is or comes from.
fn module_of(path: &[String], dir: &str, root: &[(String, &'static str)]) -> Option<&'static str> {
    let mut dir = dir.to_owned();
    let mut found = None;
    for (i, seg) in path.iter().enumerate() {
        let join = |file: &str| if dir.is_empty() { file.to_owned() } else { format!("{dir}/{file}") };
        if let Some(m) = MODULES.iter().find(|m| m.path == join(&format!("{seg}.rs"))) {
            return Some(m.name);
        }
        if let Some(m) = MODULES.iter().find(|m| m.path == join(&format!("{seg}/mod.rs"))) {
            found = Some(m.name);
        } else if !(dir.is_empty() && FOLDERS.iter().any(|f| f.1 == seg.as_str())) {
            if i == 0 && dir.is_empty() {
                return root.iter().find(|r| r.0 == *seg).map(|r| r.1);
            }
            return found;
        }
        dir = join(seg);
    }
    found
}

/// The modules the source of `module` uses through `crate::` or `super::`, comments aside:
/// qualified names, `use` lines, grouped or not, and the types the root re-exports.
fn uses(module: &LayerModule, root: &[(String, &'static str)]) -> Vec<&'static str> {
    let code = without_comments(module.source);
    // `super::` starts in the folder above the module's own: its file's folder, or, for a
    // `mod.rs`, the folder above that.
    let own_dir = module.path.rsplit_once('/').map_or("", |(d, _)| d);
    let parent = if module.path.ends_with("/mod.rs") {
        own_dir.rsplit_once('/').map_or("", |(d, _)| d)
    } else {
        own_dir
    };
    let mut found = Vec::new();
    for (prefix, dir) in [("crate::", ""), ("super::", parent)] {
        for (at, _) in code.match_indices(prefix) {
            for path in paths(&code[at + prefix.len()..]) {
                let m = module_of(&path, dir, root).or_else(|| {
                    // `super::Name` inside a folder's module: the folder's own module.
                    MODULES
                        .iter()
                        .find(|m| prefix == "super::" && m.path == format!("{dir}/mod.rs"))
                        .map(|m| m.name)
                });
                if let Some(m) = m
                    && m != module.name
                    && !found.contains(&m)
                {
                    found.push(m);
                }
            }
        }
    }
    found
}

fn graph() -> BTreeMap<&'static str, Vec<&'static str>> {
    let root = root_names();
    MODULES.iter().map(|m| (m.name, uses(m, &root))).collect()
}

#[test]
fn every_module_uses_only_its_layer_and_those_below() {
    let layer: BTreeMap<&str, u32> = MODULES.iter().map(|m| (m.name, m.layer)).collect();
    for (module, deps) in graph() {
        for dep in deps {
            assert!(
                layer[dep] <= layer[module],
                "{module} (layer {}) uses {dep} (layer {})",
                layer[module],
                layer[dep]
            );
        }
    }
}

#[test]
fn no_modules_use_each_other() {
    let g = graph();
    // Depth-first search from every module: reaching the module again is a cycle.
    for start in MODULES.iter().map(|m| m.name) {
        let mut stack: Vec<Vec<&str>> = g[start].iter().map(|&d| vec![start, d]).collect();
        while let Some(path) = stack.pop() {
            let last = *path.last().unwrap();
            assert_ne!(last, start, "an import cycle: {}", path.join(" → "));
            if path[..path.len() - 1].contains(&last) {
                continue;
            }
            for &next in &g[last] {
                let mut longer = path.clone();
                longer.push(next);
                stack.push(longer);
            }
        }
    }
}

/// Each layer's public modules are in the table, in their layer, and at the crate's root, so
/// that a path does not change when a module's layer does.
#[test]
fn the_table_names_every_module_of_every_layer_and_the_root_has_each() {
    let root = root_names();
    for &(layer, folder, mod_rs) in FOLDERS {
        for line in mod_rs.lines().filter(|l| l.starts_with("pub mod ")) {
            let name = line.trim_start_matches("pub mod ").trim_end_matches(';');
            assert!(
                MODULES.iter().any(|m| m.name == name && m.layer == layer),
                "{name} is not in layer {layer}'s table"
            );
            assert!(
                // `testing` is itself public at the root, and its modules are reached through it.
                root.iter().any(|r| r.0 == name && r.1 == name) || folder == "testing",
                "{folder}/{name} is public but not at the crate's root (`pub use {folder}::{name}` in lib.rs)"
            );
        }
    }
}

fn module(name: &str) -> &'static LayerModule {
    MODULES.iter().find(|m| m.name == name).unwrap()
}

/// A planted use of each kind that breaks the layers, as `verify` (numerics) would write it:
/// each is seen, as the module it names.
#[test]
fn a_use_from_below_is_caught_in_every_form() {
    let root = root_names();
    let planted = |source: &'static str| {
        let verify = module("verify");
        uses(&LayerModule { source, ..*verify }, &root)
    };
    // A module at the root, and a comment that does not count.
    assert_eq!(planted("use crate::run::Buffers;\n// crate::step in a comment does not count\n"), ["run"]);
    // Through the layer's folder, two folders deep.
    assert_eq!(planted("use crate::drive::tune::Tuned;"), ["tune"]);
    assert_eq!(planted("let t = crate::drive::run::timed::GpuRun::new();"), ["timed"]);
    // Grouped, nested and over lines.
    assert_eq!(
        planted(
            "use crate::{\n    matrix::Shape,\n    drive::{measure::Recipe, run::Buffers},\n    cli::Args,\n};"
        ),
        ["matrix", "measure", "run", "cli"]
    );
    // A type the root re-exports, named bare at the root.
    assert_eq!(planted("fn f(s: &crate::GpuStep, c: crate::Choice) {}"), ["step"]);
    // A path through the layer folder `hardware` names the module inside it.
    assert_eq!(planted("crate::hardware::watchdog::wait(gpu, 1);"), ["watchdog"]);
    assert_eq!(planted("use crate::drive::run::device::Device;"), ["device"]);
    // `super::` inside a folder: the folder's own modules.
    let timed = module("timed");
    assert_eq!(
        uses(&LayerModule { source: "use super::ask::Asked; use super::Buffers;", ..*timed }, &root),
        ["ask", "run"]
    );
    // And each breaks the rule: the layer check fails on it.
    let layer = |n: &str| module(n).layer;
    for bad in ["tune", "timed", "measure", "cli", "step"] {
        assert!(layer(bad) > layer("verify"), "{bad}");
    }
}

/// Every type the root re-exports is found from `lib.rs` itself, so that none is missed.
#[test]
fn every_root_type_is_mapped() {
    let root = root_names();
    for name in
        ["Inputs", "Shape", "GpuStep", "Choice", "LaunchVariant", "Geometry", "Params", "TmaBox", "Precision"]
    {
        assert!(root.iter().any(|r| r.0 == name), "{name}");
    }
}

/// The map in `ARCHITECTURE.md` names each module of the table in the row of its layer.
#[test]
fn the_architecture_page_maps_every_module_in_its_layer() {
    let page = include_str!("../../ARCHITECTURE.md");
    let section = page.split("### `common`'s layers").nth(1).expect("the page's section on common's layers");
    let rows: Vec<&str> =
        section.lines().filter(|l| l.starts_with("| ") && !l.starts_with("| layer")).collect();
    for m in MODULES {
        let (layer, name) = (m.layer, m.name);
        let row = rows
            .iter()
            .find(|r| r.starts_with(&format!("| {layer} |")))
            .unwrap_or_else(|| panic!("ARCHITECTURE.md has no row for layer {layer}"));
        assert!(
            row.contains(&format!("`{name}`")),
            "ARCHITECTURE.md does not name `{name}` in layer {layer}'s row"
        );
    }
}

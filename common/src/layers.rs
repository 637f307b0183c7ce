//! The crate's layers, checked: every module uses only modules of its own layer or those below,
//! and no two modules use each other, directly or through others. The table below is the map of
//! `ARCHITECTURE.md` ("`common`'s layers"), which names each module in its layer; a module
//! missing from either fails the test.

use std::collections::BTreeMap;

/// (layer, module, source), bottom layer first.
const MODULES: &[(u32, &str, &str)] = &[
    (0, "files", include_str!("data/files.rs")),
    (0, "matrix", include_str!("data/matrix.rs")),
    (0, "patch", include_str!("data/patch.rs")),
    (0, "progress", include_str!("data/progress.rs")),
    (1, "advisories", include_str!("device/advisories.rs")),
    (1, "clock", include_str!("device/clock.rs")),
    (1, "emulated", include_str!("device/emulated.rs")),
    (1, "gpu", include_str!("device/gpu.rs")),
    (1, "stream_hold", include_str!("device/stream_hold.rs")),
    (1, "timing", include_str!("device/timing.rs")),
    (1, "watch", include_str!("device/watch.rs")),
    (2, "cublas", include_str!("numerics/cublas.rs")),
    (2, "integer_rounding", include_str!("numerics/integer_rounding.rs")),
    (2, "reference", include_str!("numerics/reference.rs")),
    (2, "verify", include_str!("numerics/verify/mod.rs")),
    (2, "error_model", include_str!("numerics/verify/error_model.rs")),
    (2, "precision", include_str!("numerics/verify/precision.rs")),
    (2, "verdict", include_str!("numerics/verify/verdict.rs")),
    (3, "product", include_str!("contract/product.rs")),
    (3, "emulator_queue", include_str!("contract/emulator_queue.rs")),
    (3, "gpu_queue", include_str!("contract/gpu_queue.rs")),
    (3, "hooks", include_str!("contract/hooks.rs")),
    (3, "step_kernel", include_str!("contract/step_kernel.rs")),
    (3, "paths", include_str!("contract/paths.rs")),
    (3, "queue", include_str!("contract/queue.rs")),
    (3, "pad", include_str!("contract/pad.rs")),
    (3, "params", include_str!("contract/params.rs")),
    (3, "includes", include_str!("contract/includes.rs")),
    (3, "spills", include_str!("contract/spills.rs")),
    (3, "step", include_str!("contract/step.rs")),
    (3, "stream_k", include_str!("contract/stream_k.rs")),
    (3, "tile_checks", include_str!("contract/tile_checks.rs")),
    (3, "tma", include_str!("contract/tma.rs")),
    (4, "cli", include_str!("present/cli.rs")),
    (4, "emit", include_str!("present/emit.rs")),
    (4, "numbers", include_str!("present/numbers.rs")),
    (4, "predicted", include_str!("present/predicted.rs")),
    (4, "report", include_str!("present/report.rs")),
    (5, "bench", include_str!("drive/bench.rs")),
    (5, "compile_only", include_str!("drive/compile_only.rs")),
    (5, "run", include_str!("drive/run/mod.rs")),
    (5, "device", include_str!("drive/run/device.rs")),
    (5, "shared", include_str!("drive/run/shared.rs")),
    (5, "memory", include_str!("drive/run/memory.rs")),
    (5, "cpu", include_str!("drive/run/cpu.rs")),
    (5, "emulate", include_str!("drive/run/emulate.rs")),
    (5, "timed", include_str!("drive/run/timed.rs")),
    (5, "predict", include_str!("drive/run/predict.rs")),
    (5, "measure", include_str!("drive/measure.rs")),
    (5, "tune", include_str!("drive/tune.rs")),
    (6, "testing", include_str!("testing/mod.rs")),
    (6, "checker", include_str!("testing/checker.rs")),
    (6, "copies", include_str!("testing/copies.rs")),
    (6, "command_line", include_str!("testing/command_line.rs")),
    (6, "edits", include_str!("testing/edits.rs")),
    (6, "emulator", include_str!("testing/emulator.rs")),
    (6, "exercises", include_str!("testing/exercises.rs")),
    (6, "inputs", include_str!("testing/inputs.rs")),
    (6, "nvrtc", include_str!("testing/nvrtc.rs")),
    (6, "picture", include_str!("testing/picture.rs")),
    (6, "sets", include_str!("testing/sets.rs")),
    (6, "shapes", include_str!("testing/shapes.rs")),
    (6, "faults", include_str!("testing/faults.rs")),
    (6, "thread_tile", include_str!("testing/thread_tile.rs")),
];

/// The layers' folders: each names its modules in its `mod.rs`.
const FOLDERS: &[(u32, &str)] = &[
    (0, include_str!("data/mod.rs")),
    (1, include_str!("device/mod.rs")),
    (2, include_str!("numerics/mod.rs")),
    (3, include_str!("contract/mod.rs")),
    (4, include_str!("present/mod.rs")),
    (5, include_str!("drive/mod.rs")),
    (6, include_str!("testing/mod.rs")),
];

/// The types the crate's root re-exports, and the module each comes from.
const ROOT_TYPES: &[(&str, &str)] = &[
    ("Inputs", "matrix"),
    ("Matrix", "matrix"),
    ("Shape", "matrix"),
    ("Extension", "step"),
    ("GpuStep", "step"),
    ("Intensity", "step"),
    ("Geometry", "step"),
    ("Param", "params"),
    ("Params", "params"),
    ("Schedule", "step"),
    ("Stage", "step"),
    ("TmaBox", "tma"),
    ("Precision", "verify"),
];

/// The modules `source` uses through `crate::` (or, inside `testing`, `super::`), comments aside.
fn uses(source: &str, own: &str) -> Vec<&'static str> {
    let mut found = Vec::new();
    for line in source.lines().map(str::trim).filter(|l| !l.starts_with("//")) {
        for prefix in ["crate::", "super::"] {
            for (at, _) in line.match_indices(prefix) {
                let name: String = line[at + prefix.len()..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                let module = MODULES
                    .iter()
                    .map(|m| m.1)
                    .chain(ROOT_TYPES.iter().filter(|t| t.0 == name).map(|t| t.1))
                    .find(|&m| m == name || ROOT_TYPES.iter().any(|t| t.0 == name && t.1 == m));
                if let Some(m) = module
                    && m != own
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
    MODULES.iter().map(|&(_, name, source)| (name, uses(source, name))).collect()
}

#[test]
fn every_module_uses_only_its_layer_and_those_below() {
    let layer: BTreeMap<&str, u32> = MODULES.iter().map(|m| (m.1, m.0)).collect();
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
    for &(_, start, _) in MODULES {
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

#[test]
fn the_table_names_every_module_of_every_layer() {
    for &(layer, mod_rs) in FOLDERS {
        for line in mod_rs.lines().filter(|l| l.starts_with("pub mod ")) {
            let name = line.trim_start_matches("pub mod ").trim_end_matches(';');
            assert!(
                MODULES.iter().any(|m| m.1 == name && m.0 == layer),
                "{name} is not in layer {layer}'s table"
            );
        }
    }
}

/// The check sees a use that breaks the layers: `verify` (numerics) reaching up to `run`.
#[test]
fn a_use_from_below_is_caught() {
    let planted = "use crate::run::Buffers;\n// crate::step in a comment does not count\n";
    assert_eq!(uses(planted, "verify"), ["run"]);
    assert!(uses("let s: crate::Shape = todo!();", "tma").contains(&"matrix"));
}

/// The map in `ARCHITECTURE.md` names each module of the table in the row of its layer.
#[test]
fn the_architecture_page_maps_every_module_in_its_layer() {
    let page = include_str!("../../ARCHITECTURE.md");
    let section = page.split("### `common`'s layers").nth(1).expect("the page's section on common's layers");
    let rows: Vec<&str> =
        section.lines().filter(|l| l.starts_with("| ") && !l.starts_with("| layer")).collect();
    for &(layer, name, _) in MODULES {
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

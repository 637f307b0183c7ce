//! Step 10's modules import one way: `split` (the launch's parameters and sum) below `tiles`, then
//! `calibration`, then `model` (the rule), with `lib.rs` on top. A module may use those before it
//! in `BELOW_FIRST`, never one after it, so the crate has no import cycle.

/// Each module's source, bottom first.
const BELOW_FIRST: &[(&str, &str)] = &[
    ("split", include_str!("../src/split.rs")),
    ("tiles", include_str!("../src/tiles.rs")),
    ("calibration", include_str!("../src/calibration.rs")),
    ("model", include_str!("../src/model.rs")),
];

/// The crate's modules that `source` names through `crate::`, outside its tests and comments.
fn uses(source: &str) -> Vec<String> {
    let code = source.split("#[cfg(test)]").next().unwrap_or(source);
    let code: String =
        code.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n");
    let mut found = Vec::new();
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        let names: Vec<&str> = match rest.strip_prefix('{') {
            Some(group) => group.split('}').next().unwrap_or("").split(',').collect(),
            None => vec![rest],
        };
        for name in names {
            let name: String = name.trim().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            if !name.is_empty() && !found.contains(&name) {
                found.push(name);
            }
        }
    }
    found
}

#[test]
fn each_module_uses_only_the_modules_below_it() {
    for (i, (module, source)) in BELOW_FIRST.iter().enumerate() {
        let above: Vec<&str> = BELOW_FIRST[i + 1..].iter().map(|m| m.0).collect();
        for used in uses(source) {
            assert!(!above.contains(&used.as_str()), "{module} uses {used}, which sits above it");
            assert!(used != "STEP" && used != "PARAMS", "{module} uses lib.rs's {used}, which sits above it");
        }
    }
}

/// The check sees a use from below, plain or in a group, and not one in a comment or a test.
#[test]
fn a_use_from_below_is_caught() {
    assert_eq!(uses("use crate::model::choose;\n"), ["model"]);
    assert_eq!(uses("use crate::{tiles::Way, calibration};\n"), ["tiles", "calibration"]);
    assert!(uses("// crate::model in a comment\n#[cfg(test)]\nuse crate::model;\n").is_empty());
}

//! The machine's parts (`src/exec/`) depend one way: each file calls only the methods of the
//! files below it in this list, so a reader can take them bottom up; and the crate depends on
//! none of the crates that read what it records.

/// Bottom first.
const PARTS: &[(&str, &str)] = &[
    ("lanes", include_str!("../src/exec/lanes.rs")),
    ("state", include_str!("../src/exec/state.rs")),
    ("names", include_str!("../src/exec/names.rs")),
    ("operand_tags", include_str!("../src/exec/operand_tags.rs")),
    ("timeline_hooks", include_str!("../src/exec/timeline_hooks.rs")),
    ("trace_hooks", include_str!("../src/exec/trace_hooks.rs")),
    ("shadows", include_str!("../src/exec/shadows.rs")),
    ("global_watch", include_str!("../src/exec/global_watch.rs")),
    ("global_order", include_str!("../src/exec/global_order.rs")),
    ("order", include_str!("../src/exec/order.rs")),
    ("async_proxy", include_str!("../src/exec/async_proxy.rs")),
    ("picture", include_str!("../src/exec/picture.rs")),
    ("operands", include_str!("../src/exec/operands.rs")),
    ("access", include_str!("../src/exec/access.rs")),
    ("collective", include_str!("../src/exec/collective.rs")),
    ("fragments", include_str!("../src/exec/fragments.rs")),
    ("tensor", include_str!("../src/exec/tensor.rs")),
    ("mbarrier", include_str!("../src/exec/mbarrier.rs")),
    ("tma", include_str!("../src/exec/tma.rs")),
    ("cluster", include_str!("../src/exec/cluster.rs")),
    ("instruction", include_str!("../src/exec/instruction.rs")),
    ("deadlock", include_str!("../src/exec/deadlock.rs")),
    ("schedule", include_str!("../src/exec/schedule.rs")),
    ("mod", include_str!("../src/exec/mod.rs")),
];

/// The functions a file defines (`fn name(`).
fn defined(source: &str) -> Vec<String> {
    source
        .split("fn ")
        .skip(1)
        .filter_map(|rest| {
            let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            let after = &rest[name.len()..];
            ((after.starts_with('(') || after.starts_with('<')) && !name.is_empty()).then_some(name)
        })
        .collect()
}

/// Whether `source` calls `name` as a method of the cluster (`self.`, `cta.`, `Self::`) or as
/// the function of part `above`.
fn calls(source: &str, name: &str, above: &str) -> bool {
    ["self.", "cta.", "Self::", &format!("{above}::")]
        .iter()
        .any(|how| source.contains(&format!("{how}{name}(")))
}

#[test]
fn the_parts_of_the_machine_depend_one_way() {
    let mut wrong = Vec::new();
    for (i, (part, source)) in PARTS.iter().enumerate() {
        for (above, other) in &PARTS[i + 1..] {
            for name in defined(other) {
                // Names defined in a lower part too are that part's (new, run, …).
                let lower = PARTS[..=i].iter().any(|(_, s)| defined(s).contains(&name));
                if !lower && calls(source, &name, above) {
                    wrong.push(format!("{part} calls `{name}` of {above}, which is above it"));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn every_part_is_listed() {
    let files = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/src/exec")).unwrap().count();
    assert_eq!(files, PARTS.len(), "a file of src/exec is missing from PARTS");
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

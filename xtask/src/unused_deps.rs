//! `cargo xtask unused-deps`: dependencies nothing uses, and features a member forgets. For each
//! member of the workspace, every crate named under `[dependencies]` or `[dev-dependencies]` must
//! appear (its name with `-` as `_`) in the member's Rust sources (src, tests, benches,
//! examples); every crate of `[workspace.dependencies]` must be used by a member; and a member
//! whose sources use a module that another member builds only with a feature
//! (`#[cfg(feature = "F")]` before `pub mod M;` or `pub use …::M;` in its src/lib.rs, as
//! `common::testing`) must turn that feature on where it depends on it. A dependency nothing uses
//! costs every fresh clone its build; a forgotten feature goes unseen in `cargo test
//! --workspace`, where another member turns it on, and breaks `cargo test -p MEMBER`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;
use toml::Value;

static GATE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r#"^#\[cfg\(feature = "([\w-]+)"\)\]$"#).unwrap());
static GATED_ITEM: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^pub (?:mod |use [\w:]*::)(\w+);$").unwrap());
const SECTIONS: [&str; 2] = ["dependencies", "dev-dependencies"];

/// Whether `name` appears in `text` as a whole word (or path).
fn names(text: &str, name: &str) -> bool {
    Regex::new(&format!(r"\b{}\b", regex::escape(name))).is_ok_and(|re| re.is_match(text))
}

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut dirs = vec![dir.to_owned()];
    while let Some(dir) = dirs.pop() {
        for path in std::fs::read_dir(&dir).into_iter().flatten().flatten().map(|e| e.path()) {
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// A member's Rust sources, one text.
fn sources(member: &Path) -> String {
    let folders = ["src", "tests", "benches", "examples"];
    let files = folders.iter().flat_map(|f| rust_files(&member.join(f)));
    files.map(|f| std::fs::read_to_string(f).unwrap_or_default()).collect::<Vec<_>>().join("\n")
}

/// The modules of a member's root that are built only with a feature: {module: feature}.
fn gated_modules(member: &Path) -> BTreeMap<String, String> {
    let lib = std::fs::read_to_string(member.join("src/lib.rs")).unwrap_or_default();
    let mut gated = BTreeMap::new();
    let mut feature: Option<String> = None;
    for line in lib.lines().map(str::trim) {
        if let Some(found) = GATE.captures(line) {
            feature = Some(found[1].to_owned());
            continue;
        }
        if let (Some(f), Some(item)) = (&feature, GATED_ITEM.captures(line)) {
            gated.insert(item[1].to_owned(), f.clone());
        }
        feature = None;
    }
    gated
}

/// A manifest's table `section` (empty when it has none).
fn table<'a>(manifest: &'a Value, section: &str) -> impl Iterator<Item = (&'a String, &'a Value)> {
    manifest.get(section).and_then(Value::as_table).into_iter().flatten()
}

/// The features `manifest` turns on for `dep`, in either section.
fn features_on(manifest: &Value, dep: &str) -> BTreeSet<String> {
    let spec = SECTIONS.iter().filter_map(|s| manifest.get(s).and_then(|t| t.get(dep)));
    let lists = spec.filter_map(|spec| spec.get("features").and_then(Value::as_array));
    lists.flatten().filter_map(Value::as_str).map(str::to_owned).collect()
}

fn read_manifest(path: &Path, shown: &str) -> Result<Value, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{shown} cannot be read ({e})"))?;
    text.parse().map_err(|e| format!("{shown} is not valid TOML ({e})"))
}

/// Every fault of the workspace at `root`, one line each; an error where a manifest cannot be
/// read.
pub fn check(root: &Path) -> Result<Vec<String>, String> {
    let workspace = read_manifest(&root.join("Cargo.toml"), "Cargo.toml")?;
    let workspace = workspace.get("workspace").ok_or("Cargo.toml has no [workspace] table")?;
    let members = workspace.get("members").and_then(Value::as_array).ok_or("Cargo.toml lists no members")?;
    let mut manifests = Vec::new();
    for member in members.iter().filter_map(Value::as_str) {
        let shown = format!("{member}/Cargo.toml");
        manifests.push((member, read_manifest(&root.join(&shown), &shown)?));
    }
    let package = |manifest: &Value| {
        manifest.get("package").and_then(|p| p.get("name")).and_then(Value::as_str).unwrap_or("").to_owned()
    };
    let by_name: BTreeMap<String, &str> =
        manifests.iter().map(|(m, manifest)| (package(manifest), *m)).collect();
    let mut faults = Vec::new();
    let mut declared = BTreeSet::new();
    for (member, manifest) in &manifests {
        let text = sources(&root.join(member));
        let own = package(manifest);
        for section in SECTIONS {
            for (dep, spec) in table(manifest, section) {
                declared.insert(dep.clone());
                // A dev-dependency on the member itself turns features on for its own tests.
                let features = spec.get("features").and_then(Value::as_array).is_some_and(|f| !f.is_empty());
                if *dep == own && features {
                    continue;
                }
                if !names(&text, &dep.replace('-', "_")) {
                    faults.push(format!(
                        "{member}/Cargo.toml: [{section}] {dep} is used nowhere in {member}'s sources"
                    ));
                }
            }
        }
        let deps: BTreeSet<&String> =
            SECTIONS.iter().flat_map(|s| table(manifest, s).map(|(d, _)| d)).collect();
        for dep in deps {
            let Some(dep_member) = by_name.get(dep).filter(|_| *dep != own) else { continue };
            let on = features_on(manifest, dep);
            for (module, feature) in gated_modules(&root.join(dep_member)) {
                let path = format!("{}::{module}", dep.replace('-', "_"));
                if names(&text, &path) && !on.contains(&feature) {
                    faults.push(format!(
                        "{member}/Cargo.toml: {member} uses {path}, which needs {dep}'s feature \"{feature}\": \
                         add {dep} = {{ workspace = true, features = [\"{feature}\"] }} to its [dev-dependencies]"
                    ));
                }
            }
        }
    }
    for (dep, _) in table(workspace, "dependencies") {
        if !declared.contains(dep) {
            faults.push(format!("Cargo.toml: [workspace.dependencies] {dep} is declared by no member"));
        }
    }
    Ok(faults.into_iter().map(|f| format!("unused-deps: {f}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A workspace of two members: `lib_a`, whose module `testing` needs its feature "testing",
    /// and `app`, which uses it with the feature on.
    fn workspace(test: &str) -> PathBuf {
        let root = std::env::temp_dir().join(format!("xtask-unused-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let write = |path: &str, text: &str| {
            std::fs::create_dir_all(root.join(path).parent().unwrap()).unwrap();
            std::fs::write(root.join(path), text).unwrap();
        };
        write(
            "Cargo.toml",
            "[workspace]\nmembers = [\"lib_a\", \"app\"]\n\n[workspace.dependencies]\nlib-a = { path = \"lib_a\" }\n\
             regex = \"1\"\n",
        );
        write("lib_a/Cargo.toml", "[package]\nname = \"lib-a\"\n\n[features]\ntesting = []\n");
        write("lib_a/src/lib.rs", "pub mod plain;\n#[cfg(feature = \"testing\")]\npub mod testing;\n");
        write(
            "app/Cargo.toml",
            "[package]\nname = \"app\"\n\n[dependencies]\nlib-a.workspace = true\n\n[dev-dependencies]\n\
             lib-a = { workspace = true, features = [\"testing\"] }\nregex.workspace = true\n",
        );
        write("app/src/main.rs", "fn main() { lib_a::plain::f(); }\n");
        write("app/tests/t.rs", "use lib_a::testing::helper;\nuse regex::Regex;\n");
        root
    }

    #[test]
    fn a_workspace_that_uses_every_dependency_passes() {
        let root = workspace("pass");
        assert_eq!(check(&root).unwrap(), Vec::<String>::new());
        std::fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn an_unused_dependency_and_a_forgotten_feature_are_found() {
        let root = workspace("faults");
        std::fs::write(root.join("app/tests/t.rs"), "use lib_a::testing::helper;\n").unwrap();
        let manifest = std::fs::read_to_string(root.join("app/Cargo.toml")).unwrap();
        std::fs::write(root.join("app/Cargo.toml"), manifest.replace(", features = [\"testing\"]", ""))
            .unwrap();
        assert_eq!(
            check(&root).unwrap(),
            [
                "unused-deps: app/Cargo.toml: [dev-dependencies] regex is used nowhere in app's sources",
                "unused-deps: app/Cargo.toml: app uses lib_a::testing, which needs lib-a's feature \"testing\": \
                 add lib-a = { workspace = true, features = [\"testing\"] } to its [dev-dependencies]",
            ]
        );
        std::fs::write(root.join("app/Cargo.toml"), "[package]\nname = \"app\"\n").unwrap();
        let faults = check(&root).unwrap();
        assert_eq!(
            faults[0],
            "unused-deps: Cargo.toml: [workspace.dependencies] lib-a is declared by no member"
        );
        assert_eq!(
            faults[1],
            "unused-deps: Cargo.toml: [workspace.dependencies] regex is declared by no member"
        );
        std::fs::write(root.join("app/Cargo.toml"), "[package\n").unwrap();
        assert!(check(&root).unwrap_err().starts_with("app/Cargo.toml is not valid TOML ("));
        std::fs::remove_dir_all(root).unwrap();
    }
}

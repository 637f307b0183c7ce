//! The one list of labs (`labs.tsv` at the repository's root) against every place that lists them:
//! the workspace, compare's steps, the book's summary, the README's and the introduction's tables,
//! and the scripts. A lab added in one place only fails here, naming the place that lacks it.

use std::path::{Path, PathBuf};

/// One line of `labs.tsv`.
#[derive(Debug)]
struct Lab {
    number: String,
    krate: String,
    title: String,
    precision: String,
    needs: String,
    emulates: bool,
    idea: String,
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn labs() -> Vec<Lab> {
    read("labs.tsv")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f.len(), 7, "labs.tsv: seven tab-separated fields a line: {l}");
            assert!(matches!(f[5], "yes" | "no"), "labs.tsv: emulates is yes or no: {l}");
            Lab {
                number: f[0].to_owned(),
                krate: f[1].to_owned(),
                title: f[2].to_owned(),
                precision: f[3].to_owned(),
                needs: f[4].to_owned(),
                emulates: f[5] == "yes",
                idea: f[6].to_owned(),
            }
        })
        .collect()
}

#[test]
fn the_list_is_numbered_in_order_and_names_each_crate_by_its_number() {
    let labs = labs();
    assert!(labs.len() >= 13);
    for (i, lab) in labs.iter().enumerate() {
        assert_eq!(lab.number, format!("{:02}", i + 1), "{lab:?}");
        assert!(lab.krate.starts_with(&format!("step{}_", lab.number)), "{lab:?}");
        assert!(matches!(lab.needs.as_str(), "cpu" | "gpu" | "gpu-8.0" | "hopper" | "gpus"), "{lab:?}");
    }
}

#[test]
fn the_workspace_holds_every_lab_and_no_other_step() {
    let manifest = read("Cargo.toml");
    let members = manifest.split("members = [").nth(1).and_then(|m| m.split(']').next()).unwrap();
    let steps: Vec<&str> =
        members.split(',').map(|m| m.trim().trim_matches('"')).filter(|m| m.starts_with("step")).collect();
    let labs: Vec<String> = labs().into_iter().map(|l| l.krate).collect();
    assert_eq!(steps, labs, "the workspace's members against labs.tsv");
}

/// Compare runs every lab of one GPU, in order, each with the precision and the compute
/// capability the list gives.
#[test]
fn compare_runs_every_lab_of_one_gpu() {
    let labs: Vec<Lab> = labs().into_iter().filter(|l| l.needs != "cpu" && l.needs != "gpus").collect();
    let names: Vec<&str> = compare::GPU_STEPS.iter().map(|s| s.name).collect();
    let want: Vec<&str> = labs.iter().map(|l| l.krate.as_str()).collect();
    assert_eq!(names, want, "compare's GPU_STEPS against labs.tsv");
    for (step, lab) in compare::GPU_STEPS.iter().zip(&labs) {
        assert_eq!(format!("{:?}", step.precision), lab.precision, "{}'s precision", lab.krate);
        let cc = match lab.needs.as_str() {
            "hopper" => (9, 0),
            "gpu-8.0" => (8, 0),
            _ => (7, 5),
        };
        assert_eq!(step.min_compute, cc, "{}'s compute capability against needs {}", lab.krate, lab.needs);
    }
}

#[test]
fn the_books_summary_lists_every_chapter_in_order() {
    let summary = read("docs/src/SUMMARY.md");
    let chapter =
        |l: &&str| l.strip_prefix("- [Step ").is_some_and(|r| r.len() > 3 && r.as_bytes()[2] == b':');
    let chapters: Vec<&str> = summary.lines().filter(chapter).collect();
    let want: Vec<String> =
        labs().iter().map(|l| format!("- [Step {}: {}](step{}.md)", l.number, l.title, l.number)).collect();
    assert_eq!(chapters, want, "docs/src/SUMMARY.md's chapters against labs.tsv");
}

/// The README (and its template) give each lab's number, crate and idea; the introduction links
/// each lab's chapter; both in the list's order.
#[test]
fn the_readme_and_the_introduction_list_every_lab() {
    let labs = labs();
    for file in ["README.md", "docs/readme.md"] {
        let rows: Vec<String> = read(file)
            .lines()
            .filter(|l| l.starts_with("| ") && l.as_bytes().get(2).is_some_and(u8::is_ascii_digit))
            .map(|l| l.split(" | ").take(3).collect::<Vec<_>>().join(" | "))
            .collect();
        let want: Vec<String> =
            labs.iter().map(|l| format!("| {} | `{}` | {}", l.number, l.krate, l.idea)).collect();
        assert_eq!(rows, want, "{file}'s table against labs.tsv");
    }
    let intro = read("docs/src/introduction.md");
    let rows: Vec<&str> =
        intro.lines().filter(|l| l.starts_with("| [")).map(|l| l.split(" | ").next().unwrap()).collect();
    let want: Vec<String> = labs.iter().map(|l| format!("| [{}](step{}.md)", l.number, l.number)).collect();
    assert_eq!(rows, want, "docs/src/introduction.md's table against labs.tsv");
}

/// Every `stepNN_name` in `text` (`step`, two digits, `_`, then lower-case letters, digits and
/// `_`, not ending in `_`), outside a longer word, and whether it stands where only a crate's name
/// can: after `-p ` or `bin ` or `release/`, or before `/` or `::`.
fn step_names(text: &str) -> Vec<(&str, bool)> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    for (at, _) in text.match_indices("step") {
        let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
        if at > 0 && word(bytes[at - 1]) {
            continue;
        }
        let rest = &bytes[at + 4..];
        if rest.len() < 4 || !rest[0].is_ascii_digit() || !rest[1].is_ascii_digit() || rest[2] != b'_' {
            continue;
        }
        let len = 3 + rest[3..]
            .iter()
            .take_while(|&&b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
            .count();
        let name = text[at..at + 4 + len].trim_end_matches('_');
        if name.len() > 7 {
            let after = &text[at + name.len()..];
            let before = &text[..at];
            let crate_only = after.starts_with('/')
                || after.starts_with("::")
                || ["-p ", "bin ", "release/"].iter().any(|b| before.ends_with(b));
            out.push((name, crate_only));
        }
    }
    out
}

#[test]
fn crate_names_are_found_in_text() {
    assert_eq!(
        step_names("-p step04_tiled -- x step12_persistent_clusters/src step02_uncoalesced"),
        [("step04_tiled", true), ("step12_persistent_clusters", true), ("step02_uncoalesced", false)]
    );
    assert!(step_names("stepNN_yours mystep04_tiled step4_x").is_empty());
}

/// Every crate a script, CI or the figures name is a lab of the list; the scripts that run every
/// lab the emulator runs (its comparison with the GPU, the sanitizer's and the profiler's
/// sweeps) name each.
#[test]
fn the_scripts_name_only_labs_and_the_sweeps_every_one() {
    let labs = labs();
    let known: Vec<&str> = labs.iter().map(|l| l.krate.as_str()).collect();
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(root().join("scripts")).unwrap().flatten().map(|e| e.path()).collect();
    files.extend([".ci/run", "docs/figures.txt", "CONTRIBUTING.md"].map(|f| root().join(f)));
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for (name, crate_only) in step_names(&text) {
            // A crate must be a lab's; a label (a record's, a profile's) must name a lab's number.
            let known = match crate_only {
                true => known.contains(&name),
                false => {
                    known.contains(&name)
                        || labs.iter().any(|l| name.starts_with(&format!("step{}_", l.number)))
                }
            };
            assert!(known, "{} names {name}, which labs.tsv does not list", file.display());
        }
    }
    for sweep in ["scripts/emulator-vs-gpu.sh", "scripts/sanitize.sh", "scripts/profile.sh"] {
        let text = read(sweep);
        for lab in labs.iter().filter(|l| l.emulates) {
            assert!(text.contains(&lab.krate), "{sweep} does not run {}", lab.krate);
        }
    }
}

/// `scripts/README.md` names every script in the folder, and no script that is not there.
#[test]
fn the_scripts_index_lists_every_script() {
    let index = read("scripts/README.md");
    let listed: Vec<&str> =
        index.lines().filter_map(|l| l.strip_prefix("| `")).filter_map(|l| l.split('`').next()).collect();
    let mut present: Vec<String> = std::fs::read_dir(root().join("scripts"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != "README.md")
        .collect();
    present.sort();
    let mut sorted = listed.clone();
    sorted.sort();
    assert_eq!(sorted, present, "scripts/README.md against the folder");
}

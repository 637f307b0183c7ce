//! The one list of labs (`labs.tsv` at the repository's root) against every place that lists them:
//! the workspace, compare's steps, the book's summary, the README's and the introduction's tables,
//! and the scripts. A lab added in one place only fails here, naming the place that lacks it.

use std::collections::BTreeSet;
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
    // Every file is compared before any failure is reported, so that one run names them all.
    let mut wrong = Vec::new();
    for file in ["README.md", "docs/readme.md"] {
        let rows: Vec<String> = read(file)
            .lines()
            .filter(|l| l.starts_with("| ") && l.as_bytes().get(2).is_some_and(u8::is_ascii_digit))
            .map(|l| l.split(" | ").take(3).collect::<Vec<_>>().join(" | "))
            .collect();
        let want: Vec<String> =
            labs.iter().map(|l| format!("| {} | `{}` | {}", l.number, l.krate, l.idea)).collect();
        if rows != want {
            wrong.push(format!("{file}'s table against labs.tsv: has {rows:#?}, wants {want:#?}"));
        }
    }
    let intro = read("docs/src/introduction.md");
    let rows: Vec<String> = intro
        .lines()
        .filter(|l| l.starts_with("| ["))
        .map(|l| l.split(" | ").next().unwrap().to_owned())
        .collect();
    let want: Vec<String> = labs.iter().map(|l| format!("| [{}](step{}.md)", l.number, l.number)).collect();
    if rows != want {
        wrong.push(format!(
            "docs/src/introduction.md's table against labs.tsv: has {rows:#?}, wants {want:#?}"
        ));
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
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

/// Every crate a script, CI or the figures name is a lab of the list.
#[test]
fn the_scripts_name_only_labs() {
    let labs = labs();
    let known: Vec<&str> = labs.iter().map(|l| l.krate.as_str()).collect();
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(root().join("scripts")).unwrap().flatten().map(|e| e.path()).collect();
    files.extend(
        [".ci/run", "docs/figures.txt", "CONTRIBUTING.md", "ARCHITECTURE.md"].map(|f| root().join(f)),
    );
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
}

/// The entries of the bash array `name=(` … `)` in `text`, one quoted entry a line; blank lines
/// and comments are skipped, and anything else is an error that names the line.
fn bash_array(text: &str, name: &str) -> Result<Vec<String>, String> {
    let open = format!("{name}=(");
    let mut lines = text.lines().skip_while(|l| l.trim() != open);
    if lines.next().is_none() {
        return Err(format!("no line `{open}`"));
    }
    let mut entries = Vec::new();
    for line in lines {
        let line = line.trim();
        if line == ")" {
            return Ok(entries);
        }
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        match line.strip_prefix('"').and_then(|l| l.strip_suffix('"')) {
            Some(entry) if !entry.contains('"') => entries.push(entry.to_owned()),
            _ => return Err(format!("{open} holds `{line}`, which is not one quoted entry")),
        }
    }
    Err(format!("{open} is not closed by a line `)`"))
}

#[test]
fn a_bash_array_is_read_entry_by_entry() {
    let text =
        "x=1\nruns=(\n  # step09_3xtf32 in a comment\n  \"step02_gpu_naive|a\"\n\n  \"b|c\"\n)\n\"after\"\n";
    assert_eq!(bash_array(text, "runs").unwrap(), ["step02_gpu_naive|a", "b|c"]);
    assert!(bash_array(text, "other").unwrap_err().contains("no line `other=(`"));
    assert!(bash_array("runs=(\n  step02 \"a\"\n)", "runs").unwrap_err().contains("`step02 \"a\"`"));
    assert!(bash_array("runs=(\n  \"a\"\n", "runs").unwrap_err().contains("not closed"));
}

/// The sweeps over every lab the emulator runs (its comparison with the GPU bit for bit, the
/// sanitizer's and the profiler's): the crate field of their array's entries, as a set, is
/// exactly labs.tsv's emulated labs. A comment that names a lab does not count.
#[test]
fn the_sweeps_run_every_emulated_lab_and_no_other() {
    let labs = labs();
    let want: BTreeSet<&str> = labs.iter().filter(|l| l.emulates).map(|l| l.krate.as_str()).collect();
    let mut wrong = Vec::new();
    for (file, array, field) in [
        ("scripts/emulator-vs-gpu.sh", "bit_cases", 0),
        ("scripts/sanitize.sh", "configs", 0),
        ("scripts/profile.sh", "profiles", 1),
    ] {
        let entries = bash_array(&read(file), array).unwrap_or_else(|e| panic!("{file}: {e}"));
        let got: BTreeSet<&str> = entries
            .iter()
            .map(|e| e.split('|').nth(field).unwrap_or_else(|| panic!("{file}: `{e}` has no field {field}")))
            .collect();
        let missing: Vec<_> = want.difference(&got).collect();
        let extra: Vec<_> = got.difference(&want).collect();
        if !missing.is_empty() {
            wrong.push(format!("{file}'s {array}=( does not run {missing:?}, which labs.tsv emulates"));
        }
        if !extra.is_empty() {
            wrong.push(format!("{file}'s {array}=( runs {extra:?}, which labs.tsv does not emulate"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The labs of each table headed `| lab |` in `text`, in order: a row's first cell is a lab's
/// number, or its number linked to its chapter (`[04](step04.md)`); rows of another kind (a
/// lab's second line, cuBLAS) are not labs.
fn lab_tables(text: &str) -> Vec<Vec<String>> {
    let mut tables: Vec<Vec<String>> = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        if line.starts_with("| lab |") {
            tables.push(Vec::new());
            inside = true;
            continue;
        }
        inside &= line.starts_with('|');
        let Some(table) = tables.last_mut().filter(|_| inside) else { continue };
        let cell = line.split('|').nth(1).unwrap_or("").trim();
        let number = match cell.strip_prefix('[').and_then(|c| c.split_once("](")) {
            Some((n, link)) => {
                assert_eq!(link, format!("step{n}.md)"), "a row links another lab's chapter: {line}");
                n
            }
            None => cell,
        };
        if number.len() == 2 && number.bytes().all(|b| b.is_ascii_digit()) {
            table.push(number.to_owned());
        }
    }
    tables
}

#[test]
fn a_tables_labs_are_its_rows_numbers() {
    let text = "| lab | x |\n| --- | --- |\n| [02](step02.md) | a |\n| | b |\n| 04 | c |\n| cuBLAS | d |\n\n| 05 | e |\n";
    assert_eq!(lab_tables(text), [["02", "04"]]);
}

/// The script of the page "Without a GPU" times every lab that runs without a GPU (on the CPU,
/// or on the emulator), in the list's order.
#[test]
fn the_script_without_a_gpu_runs_every_lab_that_can() {
    let labs = labs();
    let file = "scripts/without-a-gpu.sh";
    let text = read(file);
    let runs = text.split("<<'RUNS'\n").nth(1).and_then(|r| r.split("\nRUNS").next());
    let mut crates: Vec<&str> = runs
        .unwrap_or_else(|| panic!("{file}: no here-document <<'RUNS'"))
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    crates.dedup();
    let want: Vec<&str> =
        labs.iter().filter(|l| l.needs == "cpu" || l.emulates).map(|l| l.krate.as_str()).collect();
    assert_eq!(crates, want, "{file}'s RUNS against labs.tsv's labs of the CPU or the emulator");
}

/// The page "Without a GPU" gives every lab a row, those it cannot run included.
#[test]
fn the_page_without_a_gpu_lists_every_lab() {
    let labs = labs();
    let file = "docs/src/without-a-gpu.md";
    let all: Vec<&str> = labs.iter().map(|l| l.number.as_str()).collect();
    assert_eq!(lab_tables(&read(file)), [all], "{file}'s table against every lab of labs.tsv");
}

/// The results page's tables: the main run's rates (every lab of one GPU or the CPU), the roofline's
/// intensities and the predicted shares (every lab of one GPU); lab 03 has no row in any, since
/// it serves only products that fit one block.
#[test]
fn the_results_page_gives_each_lab_its_rows() {
    let labs = labs();
    let numbers = |keep: fn(&Lab) -> bool| -> Vec<String> {
        labs.iter().filter(|l| l.number != "03" && keep(l)).map(|l| l.number.clone()).collect()
    };
    let rates = numbers(|l| l.needs != "gpus");
    let one_gpu = numbers(|l| l.needs != "gpus" && l.needs != "cpu");
    let file = "docs/src/results.md";
    assert_eq!(
        lab_tables(&read(file)),
        [rates, one_gpu.clone(), one_gpu],
        "{file}'s three tables (the rates, the roofline's intensities, the predicted shares) against labs.tsv"
    );
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

/// The scripts whose lists of labs a test above checks against labs.tsv.
const CHECKED: [&str; 4] =
    ["scripts/emulator-vs-gpu.sh", "scripts/sanitize.sh", "scripts/profile.sh", "scripts/without-a-gpu.sh"];

/// Where `text`, a script, names two labs or more and neither reads labs.tsv nor says which labs
/// it runs and why in a line `# Labs: …`: Some(the labs' numbers it names).
fn unowned_list(text: &str) -> Option<BTreeSet<String>> {
    let numbers: BTreeSet<String> = step_names(text).iter().map(|(name, _)| name[4..6].to_owned()).collect();
    let owned = text.contains("labs.tsv") || text.lines().any(|l| l.starts_with("# Labs: "));
    (numbers.len() >= 2 && !owned).then_some(numbers)
}

#[test]
fn a_list_without_labs_tsv_or_a_labs_line_is_found() {
    let list = "run step02_gpu_naive; run step04_tiled\n";
    assert_eq!(unowned_list(list).map(|n| n.len()), Some(2));
    assert_eq!(unowned_list(&format!("# Labs: 02 and 04, the coalescing pair.\n{list}")), None);
    assert_eq!(unowned_list(&format!("labs=$(cut -f2 labs.tsv)\n{list}")), None);
    assert_eq!(unowned_list("run step02_gpu_naive twice: step02_gpu_naive\n"), None);
}

/// Every script that names labs owns its list: drawn from labs.tsv, checked above, or a subset
/// it declares in a line `# Labs: …` (which labs and why), so that a new lab is missed nowhere
/// unnoticed.
#[test]
fn every_script_that_names_labs_owns_its_list() {
    let mut wrong = Vec::new();
    for entry in std::fs::read_dir(root().join("scripts")).unwrap().flatten() {
        let path = entry.path();
        let name = format!("scripts/{}", path.file_name().unwrap().to_string_lossy());
        if CHECKED.contains(&name.as_str()) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else { continue };
        if let Some(numbers) = unowned_list(&text) {
            wrong.push(format!(
                "{name} names labs {numbers:?} but neither reads labs.tsv nor says in a `# Labs: …` line which labs it runs and why"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

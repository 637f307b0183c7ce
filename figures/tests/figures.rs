//! Every figure the README and the book quote is read from its record; kernels quote none (their
//! headers name their chapter).
//!
//! A page of the book, or `docs/readme.md` (the README's template), writes a reference where a
//! measured figure goes:
//!
//! ```text
//! step 06 reaches {{#figure h200.step06_prefetch.4096.share}} of cuBLAS at 4096³
//! ```
//!
//! `docs/figures.txt` says, for each id, which record holds the figure (a results page or a
//! run's log under `docs/src/results/`), the regular expression that finds it there, and how it
//! is printed (decimals, % sign, digits grouped, divided by 1000, scientific notation). The
//! book's preprocessor fills each reference with the figure linked to its record,
//! `[91.8%](results/nvidia-h200.md)`; `cargo run -p figures -- readme` writes README.md the same
//! way. So a figure cannot disagree with its record: these tests check that every reference
//! resolves, that every catalog line is used and still finds its figure, that README.md is what
//! the command writes now (a figure edited by hand, or a record measured again, shows here), and
//! that no page is left with a quote of the old form, a link whose title was the pattern.
//!
//! After a record is measured again: `cargo run -p figures -- readme`, then read again the text
//! around the figures that changed (`git diff README.md` shows them; the book follows by itself).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use figures::Repo;
use figures::catalog::Catalog;
use figures::mentions::{self, Page};
use figures::record::Records;
use figures::regex_links::old_quotes;

fn repo() -> Repo {
    Repo::at(Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap())
}

/// The path of `file` as the repository names it.
fn shown(repo: &Repo, file: &Path) -> String {
    file.strip_prefix(repo.root()).unwrap_or(file).display().to_string()
}

/// The README's template and every page of the book: the files that may write references.
fn quoting_files(repo: &Repo) -> Vec<PathBuf> {
    let mut files = vec![repo.template()];
    files.extend(repo.pages());
    files
}

fn read(file: &Path) -> String {
    std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{} cannot be read: {e}", file.display()))
}

#[test]
fn every_reference_resolves() {
    let repo = repo();
    let catalog = Catalog::load(&repo.catalog()).unwrap_or_else(|why| panic!("{why}"));
    let mut records = Records::new(&repo.src());
    let (mut wrong, mut references) = (Vec::new(), 0);
    for file in quoting_files(&repo) {
        let text = read(&file);
        references += mentions::mentions(&text).len();
        let relative = file.strip_prefix(repo.src()).map(Path::to_owned);
        let page = match &relative {
            Ok(path) => Page::Book(path),
            Err(_) => Page::Readme,
        };
        if let Err(errors) = mentions::fill(&text, page, &catalog, &mut records) {
            wrong.extend(
                errors.into_iter().map(|(line, why)| format!("{}:{line}: {why}", shown(&repo, &file))),
            );
        }
    }
    assert!(wrong.is_empty(), "references that do not resolve:\n{}", wrong.join("\n"));
    assert!(references > 500, "only {references} references found");
}

/// The figures a page quotes and the ids its `{{#record}}`s name records by: both use an entry.
fn uses(text: &str) -> Vec<mentions::Mention> {
    let mut all = mentions::mentions(text);
    all.extend(mentions::record_mentions(text));
    all
}

#[test]
fn every_catalog_entry_is_used_and_finds_its_figure() {
    let repo = repo();
    let catalog = Catalog::load(&repo.catalog()).unwrap_or_else(|why| panic!("{why}"));
    let mut records = Records::new(&repo.src());
    let used: std::collections::HashSet<String> =
        quoting_files(&repo).iter().flat_map(|f| uses(&read(f))).map(|r| r.id).collect();
    let mut wrong = Vec::new();
    for entry in &catalog.entries {
        if let Err(why) = entry.pick(&mut records) {
            wrong.push(format!("docs/figures.txt:{}: {}: {why}", entry.line, entry.id));
        }
        if !used.contains(&entry.id) {
            wrong.push(format!(
                "docs/figures.txt:{}: {} is quoted nowhere: remove its line",
                entry.line, entry.id
            ));
        }
    }
    assert!(wrong.is_empty(), "catalog lines that are wrong:\n{}", wrong.join("\n"));
}

#[test]
fn readme_is_written_from_its_template() {
    let repo = repo();
    let want = figures::readme::render(&repo).unwrap_or_else(|errors| panic!("{}", errors.join("\n")));
    let have = read(&repo.readme());
    if have != want {
        let (n, (h, w)) = have
            .lines()
            .chain(std::iter::repeat(""))
            .zip(want.lines().chain(std::iter::repeat("")))
            .enumerate()
            .find(|(_, (h, w))| h != w)
            .unwrap();
        panic!(
            "README.md is not what docs/readme.md and the records say: run `cargo run -p figures -- readme` \
             (first difference, line {}:\n  README.md says   {h}\n  it should say    {w})",
            n + 1
        );
    }
}

#[test]
fn no_page_quotes_a_pattern() {
    let repo = repo();
    let mut files = vec![repo.readme()];
    files.extend(quoting_files(&repo));
    let mut wrong = Vec::new();
    for file in files {
        let quotes = old_quotes(&read(&file));
        if !quotes.is_empty() {
            let mut lines: Vec<String> = quotes.iter().map(|q| q.line.to_string()).collect();
            lines.dedup();
            if lines.len() > 8 {
                lines.truncate(8);
                lines.push("…".to_owned());
            }
            let name = shown(&repo, &file);
            wrong.push(format!(
                "{name} quotes {} figures with a pattern for a link title (lines {}): \
                 write each as {{{{#figure ID}}}} with its line in docs/figures.txt",
                quotes.len(),
                lines.join(", ")
            ));
        }
    }
    assert!(wrong.is_empty(), "quotes of the old form:\n{}", wrong.join("\n"));
}

/// Every step's kernel, with its variants and stages (a variant kept as its diff alone, by its
/// diff).
fn kernel_files(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(root).unwrap().flatten() {
        let kernel = entry.path().join("src/kernel.cu");
        if kernel.exists() {
            files.push(kernel);
        }
        for folder in ["variants", "stages"] {
            if let Ok(dir) = std::fs::read_dir(entry.path().join(folder)) {
                files.extend(dir.flatten().map(|e| e.path()).filter(|p| {
                    p.extension().is_some_and(|e| e == "cu")
                        || (p.extension().is_some_and(|e| e == "diff") && !p.with_extension("cu").exists())
                }));
            }
        }
    }
    files.sort();
    files
}

/// A kernel's header names its chapter instead of quoting figures: no reference, no quote.
#[test]
fn kernels_quote_no_figures() {
    let repo = repo();
    let kernels = kernel_files(repo.root());
    assert!(kernels.len() > 10, "{kernels:?}");
    for file in kernels {
        let text = read(&file);
        let lines: Vec<usize> = mentions::mentions(&text)
            .into_iter()
            .map(|r| r.line)
            .chain(old_quotes(&text).into_iter().map(|q| q.line))
            .collect();
        assert!(
            lines.is_empty(),
            "{} quotes figures at lines {lines:?}: name the chapter instead",
            shown(&repo, &file)
        );
    }
    // The check sees a quote in a comment, in either form.
    assert_eq!(old_quotes("// [46.8](../x.md \"speed ([\\d.]+)\") TFLOP/s").len(), 1);
    assert_eq!(mentions::mentions("// {{#figure h200.step06_prefetch.4096.tflops}} TFLOP/s").len(), 1);
}

/// What mdbook sends: the context and a book of one chapter.
fn mdbook_input(repo: &Repo, content: &str) -> String {
    let chapter = serde_json::json!({"Chapter": {"name": "Step 06", "content": content, "number": [6],
        "sub_items": [], "path": "step06.md", "source_path": "step06.md", "parent_names": []}});
    let context = serde_json::json!({"root": repo.root().join("docs"), "config": {"book": {"src": "src"}},
        "renderer": "html", "mdbook_version": "0.4.52"});
    let book = serde_json::json!({"sections": [chapter], "__non_exhaustive": null});
    serde_json::json!([context, book]).to_string()
}

/// The program as cargo built it, or, where the tests run from a bundle on another machine, the
/// copy in the bundle's `bin/` beside the tests' folder.
fn program() -> std::path::PathBuf {
    let built = std::path::PathBuf::from(env!("CARGO_BIN_EXE_figures"));
    if built.exists() {
        return built;
    }
    std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.join("bin").join("figures")))
        .filter(|p| p.exists())
        .unwrap_or(built)
}

/// Runs the program with `args` and `input` on standard input: success, stdout, stderr.
fn figures(args: &[&str], input: &str) -> (bool, String, String) {
    use std::io::Write;
    let mut child = Command::new(program())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[test]
fn the_preprocessor_speaks_mdbooks_protocol() {
    let repo = repo();
    assert!(figures(&["supports", "html"], "").0);
    let catalog = Catalog::load(&repo.catalog()).unwrap();
    let entry = &catalog.entries[0];
    let text = format!("at {{{{#figure {id}}}}} ({{{{#record {id}}}}}).", id = entry.id);
    let (ok, out, err) = figures(&[], &mdbook_input(&repo, &text));
    assert!(ok, "{err}");
    let book: serde_json::Value = serde_json::from_str(&out).unwrap();
    let content = book["sections"][0]["Chapter"]["content"].as_str().unwrap();
    let figure = entry.print(&mut Records::new(&repo.src())).unwrap();
    let name = entry.record.rsplit('/').next().unwrap();
    assert_eq!(content, format!("at {figure} ([{name}]({})).", entry.record));

    let (ok, out, err) = figures(&[], &mdbook_input(&repo, "\n{{#figure h200.no-such-figure}}"));
    assert!(!ok && out.is_empty());
    assert_eq!(
        err,
        "figures: docs/src/step06.md:2: the figure h200.no-such-figure is not in docs/figures.txt\n"
    );

    let (ok, _, err) = figures(&["nonsense"], "");
    assert!(!ok && err.starts_with("figures: usage: "), "{err}");
    let (ok, _, err) = figures(&[], "not json");
    assert!(!ok && err.starts_with("figures: mdbook's input is not [context, book] as JSON"), "{err}");
}

/// Records whose lines a script cut from the report before recording them (columns dropped):
/// their selectors read that cut form, not the report's.
const CUT_RECORDS: &[&str] = &["2026-11-26-nvidia-h100-80gb-hbm3-step12-development.log"];

/// The labels of the report's lines (`common/src/present/report.rs`).
const LABELS: &[&str] = &[
    "shape", "params", "launch", "choice", "model", "kernel", "paths", "needs", "time", "speed", "verify",
    "traffic", "tiles", "schedule", "split", "moduli", "note",
];

/// `selector` with each literal run of digits (outside classes, quantifiers and escapes) made
/// `\d+`: a selector picks one run by its shape or size, and the check is of the line's form.
fn any_numbers(selector: &str) -> String {
    let (mut out, mut class, mut quantifier, mut escaped) = (String::new(), false, false, false);
    let mut chars = selector.chars().peekable();
    while let Some(c) = chars.next() {
        if escaped {
            escaped = false;
            out.push(c);
            continue;
        }
        match c {
            '\\' => escaped = true,
            '[' if !class => class = true,
            ']' if class => class = false,
            '{' if !class => quantifier = true,
            '}' if quantifier => quantifier = false,
            _ => {}
        }
        if c.is_ascii_digit() && !class && !quantifier {
            while chars.peek().is_some_and(char::is_ascii_digit) {
                chars.next();
            }
            out.push_str("\\d+");
        } else {
            out.push(c);
        }
    }
    out
}

/// Every selector that reads a line of the report (its last line starts with two spaces and a
/// report label) matches a line of the reports that common's golden tests pin
/// (`common/tests/golden/`), numbers aside: a change of the report's format fails the golden
/// tests first, and, once their texts are written again, here, at each selector it breaks.
#[test]
fn report_line_selectors_match_the_pinned_reports() {
    let repo = repo();
    let golden = repo.root().join("common").join("tests").join("golden");
    let fixtures: String =
        ["gpu", "emulated", "cpu"].map(|n| read(&golden.join(format!("{n}.txt")))).concat();
    let catalog = Catalog::load(&repo.catalog()).unwrap_or_else(|why| panic!("{why}"));
    let (mut checked, mut wrong) = (0, Vec::new());
    for entry in &catalog.entries {
        if CUT_RECORDS.iter().any(|r| entry.record.ends_with(r)) {
            continue;
        }
        // A field selector reads the JSON, which the golden JSON pins.
        let figures::catalog::Selector::Text(selector) = &entry.selector else { continue };
        let selector = selector.as_str();
        let line = selector.rsplit("\\n").next().unwrap_or(selector);
        let plain = line.replace("\\x20", " ");
        let Some(rest) = plain.strip_prefix("  ") else { continue };
        if !LABELS.iter().any(|l| rest.starts_with(l) && rest[l.len()..].starts_with(' ')) {
            continue;
        }
        checked += 1;
        let flags = if selector.starts_with("(?s)") { "(?ms)" } else { "(?m)" };
        let general = regex::Regex::new(&format!("{flags}{}", any_numbers(line)))
            .unwrap_or_else(|e| panic!("{}: {e}", entry.id));
        if !general.is_match(&fixtures) {
            wrong.push(format!("docs/figures.txt:{}: {}: {line}", entry.line, entry.id));
        }
    }
    assert!(checked >= 80, "only {checked} selectors read report lines: the check has lost its way");
    assert!(wrong.is_empty(), "selectors that no pinned report line matches:\n{}", wrong.join("\n"));
}

#[test]
fn numbers_in_a_selector_become_any_number() {
    assert_eq!(any_numbers(r"shape    M=8192 .*?· ([\d.]+)%"), r"shape    M=\d+ .*?· ([\d.]+)%");
    assert_eq!(any_numbers(r"(?:[^·]*· ){2}(\d+) of 132"), r"(?:[^·]*· ){2}(\d+) of \d+");
}

//! The two lists of the book's records, written from the files under `docs/src/results/`:
//!
//! - the page of earlier runs, `docs/src/results/earlier.md`: every record but the main run's
//!   pages, newest first, grouped by date and device;
//! - the records part of `docs/src/SUMMARY.md`, everything after its separator line `---`: every
//!   `.md` record the sidebar does not show already.
//!
//! mdBook renders only the pages SUMMARY.md lists, and a figure's link leads to its record's
//! page, so every `.md` record must be listed there; `docs/wide.css` hides what follows the
//! separator from the sidebar, so that the sidebar holds the course alone and the page of earlier
//! runs lists the records. The main run's pages are the `results/` pages listed before the
//! separator. `cargo xtask earlier-runs` writes both; `cargo xtask earlier-runs --check`, which
//! `cargo xtask docs` runs, writes nothing and names each list that is not current.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;

use crate::Repo;

/// The line that ends the sidebar's course and opens the records part (mdBook's separator).
pub static SEPARATOR: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?m)^-{3,}\s*$").unwrap());
static LINK: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\]\(([^)]+)\)").unwrap());
static DATED: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^(\d{4}-\d\d-\d\d)-(.*)\.(md|log)$").unwrap());
static DEVICE_PREFIX: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^nvidia-h(100|200)(-80gb-hbm3)?-").unwrap());
static CODE_TIME: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"code(\d\d)(\d\d)T(\d\d)(\d\d)").unwrap());

const RECORDS_PART: &str = "# Records\n\n\
    <!-- Written by `cargo xtask earlier-runs`; docs/wide.css hides this part from the sidebar. -->\n\n";

/// SUMMARY.md as (the course, the records part): the text before and after the separator.
pub fn split_summary(text: &str) -> Result<(&str, &str), String> {
    let m = SEPARATOR
        .find(text)
        .ok_or_else(|| "docs/src/SUMMARY.md has no separator line `---` before its records".to_owned())?;
    Ok((&text[..m.start()], &text[m.end()..]))
}

/// The `results/` pages the sidebar shows: the main run's, and the page of earlier runs.
fn shown_results(course: &str) -> BTreeSet<String> {
    LINK.captures_iter(course).map(|c| c[1].to_owned()).filter(|t| t.starts_with("results/")).collect()
}

/// Every file under `dir`, directories among them, sorted as paths (part by part).
pub fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut dirs = vec![dir.to_owned()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path.clone());
            }
            found.push(path);
        }
    }
    found.sort();
    found
}

/// Every record under docs/src/results/ (`.md` and `.log`), relative to docs/src.
fn records(src: &Path) -> Vec<String> {
    walk(&src.join("results"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "md" || e == "log"))
        .filter_map(|p| p.strip_prefix(src).ok().map(|r| r.to_string_lossy().replace('\\', "/")))
        .collect()
}

/// A record's date (or "undated"), its device, and the rest of its name.
fn date_device(rel: &str) -> (String, &'static str, String) {
    let name = rel.rsplit_once('/').map_or(rel, |(_, name)| name);
    let (date, rest) = match DATED.captures(name) {
        Some(c) => (c[1].to_owned(), c[2].to_owned()),
        None => ("undated".to_owned(), name.rsplit_once('.').map_or(name, |(stem, _)| stem).to_owned()),
    };
    let device = if rest.contains("h100") {
        "H100"
    } else if rest.contains("h200") {
        "H200"
    } else {
        "no GPU"
    };
    (date, device, rest)
}

fn earlier_page(src: &Path, listed: &BTreeSet<String>) -> String {
    let mut groups: BTreeMap<(String, &str), Vec<String>> = BTreeMap::new();
    for rel in records(src) {
        if !listed.contains(&rel) {
            let (date, device, _) = date_device(&rel);
            groups.entry((date, device)).or_default().push(rel);
        }
    }
    let mut out = vec![
        "# Earlier runs\n".to_owned(),
        "Every record this book quotes apart from [the main run](../results.md), newest first, \
         by date and device: the runs a chapter quotes beside the main run, and those behind \
         the [performance log](../performance.md). A `.md` record is a page of this book; a `.log` \
         record is the program's output as it was printed, every command before its output.\n"
            .to_owned(),
    ];
    // Newest first; the undated records, the oldest, last.
    let mut keys: Vec<&(String, &str)> = groups.keys().collect();
    keys.sort_by_key(|(date, device)| std::cmp::Reverse((date != "undated", date.clone(), *device)));
    for key in keys {
        out.push(format!("## {}, {}\n", key.0, key.1));
        for rel in &groups[key] {
            let name = rel.rsplit_once('/').map_or(rel.as_str(), |(_, n)| n);
            out.push(format!("- [{name}]({})", rel.strip_prefix("results/").unwrap_or(rel)));
        }
        out.push(String::new());
    }
    out.join("\n")
}

/// A hidden record's name in SUMMARY.md, which is also its page's title in the browser.
fn title(src: &Path, rel: &str) -> String {
    let (date, device, rest) = date_device(rel);
    if date == "undated" {
        let text = std::fs::read_to_string(src.join(rel)).unwrap_or_default();
        let first = text.split('\n').next().unwrap_or("");
        let first = first.trim_start_matches(['#', ' ']).trim();
        return if first.is_empty() { rest } else { first.to_owned() };
    }
    let rest = DEVICE_PREFIX.replace(&rest, "").replace('-', " ");
    let rest = CODE_TIME.replace_all(&rest, "(code of ${1}-${2} ${3}:${4})");
    format!("{date} {device}: {rest}")
}

fn summary(src: &Path, text: &str) -> Result<String, String> {
    let (course, _) = split_summary(text)?;
    let shown = shown_results(course);
    let entries: String = records(src)
        .into_iter()
        .filter(|rel| rel.ends_with(".md") && !shown.contains(rel))
        .map(|rel| format!("- [{}]({rel})\n", title(src, &rel)))
        .collect();
    Ok(format!("{}\n\n---\n\n{RECORDS_PART}{entries}", course.trim_end()))
}

/// Writes both lists where they are not current (`check`: writes nothing). Returns one line per
/// list written or, with `check`, per list that is stale; an error if SUMMARY.md cannot be read
/// or has no separator, or if a list cannot be written.
pub fn run(repo: &Repo, check: bool) -> Result<Vec<String>, Vec<String>> {
    let src = repo.src();
    let summary_path = src.join("SUMMARY.md");
    let earlier_path = src.join("results/earlier.md");
    let fail = |why: String| vec![format!("earlier-runs: {why}")];
    let now_summary = std::fs::read_to_string(&summary_path)
        .map_err(|e| fail(format!("docs/src/SUMMARY.md cannot be read ({e})")))?;
    let new_summary = summary(&src, &now_summary).map_err(fail)?;
    let new_earlier = earlier_page(&src, &shown_results(split_summary(&now_summary).map_err(fail)?.0));
    let mut lines = Vec::new();
    let mut stale = false;
    for (path, new) in [(&summary_path, new_summary), (&earlier_path, new_earlier)] {
        let now = std::fs::read_to_string(path).unwrap_or_default();
        if now == new {
            continue;
        }
        let shown = path.strip_prefix(repo.root()).unwrap_or(path).display().to_string();
        if check {
            stale = true;
            lines.push(format!(
                "earlier-runs: {shown} does not list the records under docs/src/results/ as they are \
                 (run `cargo xtask earlier-runs`)"
            ));
        } else {
            std::fs::write(path, new).map_err(|e| fail(format!("{shown} cannot be written ({e})")))?;
            lines.push(format!("earlier-runs: wrote {shown}"));
        }
    }
    if stale { Err(lines) } else { Ok(lines) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small book: two course pages, the main run's page, and three records.
    fn book(test: &str) -> Repo {
        let root = std::env::temp_dir().join(format!("figures-earlier-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("docs/src/results/runs")).unwrap();
        let write = |path: &str, text: &str| std::fs::write(root.join(path), text).unwrap();
        write(
            "docs/src/SUMMARY.md",
            "# Summary\n\n- [Intro](intro.md)\n- [Results](results.md)\n  - [H200](results/nvidia-h200.md)\n\
             - [Earlier](results/earlier.md)\n\n---\n\nstale\n",
        );
        write("docs/src/results/nvidia-h200.md", "# H200\n");
        write("docs/src/results/runs/2026-01-02-nvidia-h200-step06-code0101T1200.md", "# r\n");
        write("docs/src/results/runs/2026-01-02-h100-step06.log", "log\n");
        write("docs/src/results/old.md", "## An old run\n");
        Repo::at(&root)
    }

    #[test]
    fn both_lists_are_written_then_current() {
        let repo = book("write");
        let check = run(&repo, true).unwrap_err();
        assert_eq!(check.len(), 2, "{check:?}");
        assert!(check[0].starts_with("earlier-runs: docs/src/SUMMARY.md does not list the records"));
        assert_eq!(
            run(&repo, false).unwrap(),
            ["earlier-runs: wrote docs/src/SUMMARY.md", "earlier-runs: wrote docs/src/results/earlier.md"]
        );
        assert_eq!(run(&repo, true).unwrap(), Vec::<String>::new());
        let summary = std::fs::read_to_string(repo.src().join("SUMMARY.md")).unwrap();
        assert!(summary.ends_with(
            "- [Earlier](results/earlier.md)\n\n---\n\n# Records\n\n\
             <!-- Written by `cargo xtask earlier-runs`; docs/wide.css hides this part from the sidebar. -->\n\n\
             - [An old run](results/old.md)\n\
             - [2026-01-02 H200: step06 (code of 01-01 12:00)](results/runs/2026-01-02-nvidia-h200-step06-code0101T1200.md)\n"
        ));
        let earlier = std::fs::read_to_string(repo.src().join("results/earlier.md")).unwrap();
        let headings: Vec<&str> = earlier.lines().filter(|l| l.starts_with("## ")).collect();
        assert_eq!(headings, ["## 2026-01-02, H200", "## 2026-01-02, H100", "## undated, no GPU"]);
        assert!(earlier.contains("- [old.md](old.md)\n"), "{earlier}");
        assert!(!earlier.contains("nvidia-h200.md"), "the main run's page is in the sidebar: {earlier}");
        std::fs::remove_dir_all(repo.root()).unwrap();
    }

    #[test]
    fn a_new_record_makes_both_lists_stale_and_no_separator_is_an_error() {
        let repo = book("stale");
        run(&repo, false).unwrap();
        std::fs::write(repo.src().join("results/runs/2026-02-03-h200-new.md"), "# new\n").unwrap();
        assert_eq!(run(&repo, true).unwrap_err().len(), 2);
        std::fs::write(repo.src().join("SUMMARY.md"), "# Summary\n- [Intro](intro.md)\n").unwrap();
        let error = run(&repo, true).unwrap_err();
        assert_eq!(
            error,
            ["earlier-runs: docs/src/SUMMARY.md has no separator line `---` before its records"]
        );
        std::fs::remove_dir_all(repo.root()).unwrap();
    }
}

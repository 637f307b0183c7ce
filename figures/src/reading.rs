//! What a reader of the README and the book meets, checked against the course's rules
//! (`cargo xtask reading`, which `cargo xtask docs` runs after building the book):
//!
//! - a step chapter, an appendix, the introduction or "Your data": at most 3,000 words outside
//!   code blocks; "Measuring correctly": at most 1,500;
//! - README.md: at most 150 lines and 20 links, its two set-up commands within its first 40 lines;
//! - no commit hash in the text a reader sees of those pages and the README (history goes to the
//!   performance log and the records);
//! - no line wider than 100 columns in a kernel (every .cu of a step: its kernel, stages, variants
//!   and exercises, and the lines a variant kept as its diff alone adds) or in a code block the
//!   built book shows;
//! - every record under docs/src/results/ listed on the page of earlier runs, and none named by a
//!   commit hash (links show a record's name);
//! - the sidebar holds the course alone: at most 40 entries before SUMMARY.md's separator line
//!   `---`, only records after it, and docs/wide.css hiding what follows it (docs/book.toml says
//!   why);
//! - a lab chapter (docs/src/stepNN.md) keeps at most 8 measured figures (`{{#figure …}}`) in its
//!   running text: tables and code blocks do not count, and the rest go to a table at the end or
//!   to an appendix, so that the few that carry the lesson stand out;
//! - no chapter or appendix speaks of the workshop ("current code", "same device session", "the
//!   day before"): a chapter teaches the code as it is, and history goes to the performance log.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::{NoExpand, Regex};

use crate::Repo;
use crate::earlier::{SEPARATOR, walk};

pub const WORDS: usize = 3000;
pub const MEASURING_WORDS: usize = 1500;
pub const README_LINES: usize = 150;
pub const README_LINKS: usize = 20;
pub const COLUMNS: usize = 100;
pub const SIDEBAR_ENTRIES: usize = 40;
pub const README_SETUP_LINE: usize = 40;
pub const RUNNING_FIGURES: usize = 8;
/// Words of the workshop, not of the course: each a phrase, matched across line breaks, any case.
const WORKSHOP: [&str; 3] = ["current code", "same device session", "the day before"];
/// Pages that tell history or hold records: the performance log and the results.
const HISTORY: [&str; 3] = ["performance.md", "results.md", "SUMMARY.md"];

fn re(pattern: &str) -> Regex {
    Regex::new(pattern).unwrap()
}

static LAB: LazyLock<Regex> = LazyLock::new(|| re(r"step\d\d\.md$"));
static ENTRY: LazyLock<Regex> = LazyLock::new(|| re(r"(?m)^\s*(?:[-*]\s+)?\[[^\]]*\]\(([^)]*)\)"));
/// The rule in docs/wide.css that hides the records part of the sidebar.
static HIDE: LazyLock<Regex> = LazyLock::new(|| re(r"li\.spacer\s*~\s*li\s*\{[^}]*display:\s*none"));
static FENCE: LazyLock<Regex> = LazyLock::new(|| re(r"^\s*(```|~~~)"));
static LINK_TARGET: LazyLock<Regex> = LazyLock::new(|| re(r"\]\([^)]*\)"));
static LINK: LazyLock<Regex> = LazyLock::new(|| re(r"\]\([^)]+\)"));
static LINKED: LazyLock<Regex> = LazyLock::new(|| re(r"\]\(([^)]+)\)"));
static PAGE_LINK: LazyLock<Regex> = LazyLock::new(|| re(r"\]\(([^)]+\.md)\)"));
static FIGURE: LazyLock<Regex> = LazyLock::new(|| re(r"\{\{#figure [^}]*\}\}"));
static TAG: LazyLock<Regex> = LazyLock::new(|| re(r"<[^>]+>"));
static CODE_BLOCK: LazyLock<Regex> = LazyLock::new(|| re(r"(?s)<pre><code[^>]*>(.*?)</code></pre>"));
static EXPONENT: LazyLock<Regex> = LazyLock::new(|| re(r"^\d+e\d+$"));

fn is_fence(line: &str) -> bool {
    FENCE.is_match(line)
}

/// The text a reader sees: link targets, HTML tags and (unless `keep_code`) code blocks out.
fn visible(text: &str, keep_code: bool) -> String {
    let mut out = Vec::new();
    let mut fence = false;
    for line in text.split('\n') {
        if is_fence(line) {
            fence = !fence;
            continue;
        }
        if line.contains("{{#include") || (fence && !keep_code) {
            continue;
        }
        let line = LINK_TARGET.replace_all(line, "]");
        // A figure reads as one word; a record's reference is counted as written (two words,
        // where its link shows one), so that the count is never below what a reader meets.
        let line = FIGURE.replace_all(&line, "9");
        out.push(TAG.replace_all(&line, " ").into_owned());
    }
    out.join("\n")
}

/// The figures of a page's running text: outside code blocks and outside table rows.
fn running_figures(text: &str) -> usize {
    let mut count = 0;
    let mut fence = false;
    for line in text.split('\n') {
        if is_fence(line) {
            fence = !fence;
            continue;
        }
        if !fence && !line.trim_start().starts_with('|') {
            count += line.matches("{{#figure ").count();
        }
    }
    count
}

/// A character of a word, a path or a name, which a commit hash is never beside.
fn joins(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '/' | '.' | '-')
}

/// Words that look like commit hashes: 7 to 40 hex digits with neither a word's character nor
/// `/`, `.` or `-` on either side, a letter and a digit among them; not a number in scientific
/// notation (7.7037239e1).
pub fn hashes(text: &str) -> Vec<String> {
    let hex = |c: char| matches!(c, '0'..='9' | 'a'..='f');
    let chars: Vec<char> = text.chars().collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if !hex(chars[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len() && hex(chars[i]) {
            i += 1;
        }
        let free = (start == 0 || !joins(chars[start - 1])) && (i == chars.len() || !joins(chars[i]));
        let word: String = chars[start..i].iter().collect();
        if free
            && (7..=40).contains(&(i - start))
            && word.contains(|c: char| c.is_ascii_lowercase())
            && word.contains(|c: char| c.is_ascii_digit())
            && !EXPONENT.is_match(&word)
        {
            found.push(word);
        }
    }
    found
}

/// The book's pages for the learner: every page in SUMMARY.md but the results and the log.
fn reader_pages(src: &Path, summary: &str) -> Vec<PathBuf> {
    PAGE_LINK
        .captures_iter(summary)
        .map(|c| c[1].to_owned())
        .filter(|t| !t.starts_with("results/") && !t.starts_with("log/") && !HISTORY.contains(&t.as_str()))
        .map(|t| src.join(t))
        .collect()
}

/// What the sidebar shows and hides: faults, one line each.
fn sidebar(root: &Path, summary: &str) -> Vec<String> {
    let Some(m) = SEPARATOR.find(summary) else {
        return vec![
            "docs/src/SUMMARY.md: no separator line `---` before the records, so the sidebar lists every \
             record (run `cargo xtask earlier-runs`)"
                .to_owned(),
        ];
    };
    let mut faults = Vec::new();
    let shown = ENTRY.captures_iter(&summary[..m.start()]).count();
    if shown > SIDEBAR_ENTRIES {
        faults.push(format!(
            "docs/src/SUMMARY.md: the sidebar shows {shown} entries, over {SIDEBAR_ENTRIES}: it holds the \
             course alone (a record goes after the separator `---`, where docs/wide.css hides it)"
        ));
    }
    for c in ENTRY.captures_iter(&summary[m.end()..]) {
        let target = &c[1];
        if !target.starts_with("results/") || target == "results/earlier.md" {
            faults.push(format!(
                "docs/src/SUMMARY.md: {target} is listed after the separator `---`, where the sidebar \
                 hides it; only records go there"
            ));
        }
    }
    let css = std::fs::read_to_string(root.join("docs/wide.css")).unwrap_or_default();
    if !HIDE.is_match(&css) {
        faults.push(
            "docs/wide.css: no rule `ol.chapter > li.spacer ~ li { display: none; }`, so the sidebar shows \
             every record listed after SUMMARY.md's separator"
                .to_owned(),
        );
    }
    faults
}

/// Faults for each phrase of the workshop in the text a reader sees, with its line.
fn workshop(shown: &str, text: &str) -> Vec<String> {
    let mut lines = Vec::new();
    for line in text.split('\n') {
        let line = if is_fence(line) { "" } else { line };
        // Keep the line count: a fault names the line of the source.
        lines.push(if line.contains("{{#include") { String::new() } else { visible(line, true) });
    }
    let seen = lines.join("\n");
    let mut faults = Vec::new();
    for phrase in WORKSHOP {
        let words: Vec<String> = phrase.split(' ').map(regex::escape).collect();
        for m in re(&format!(r"(?i){}", words.join(r"\s+"))).find_iter(&seen) {
            let n = seen[..m.start()].matches('\n').count() + 1;
            let said = m.as_str().split_whitespace().collect::<Vec<_>>().join(" ");
            faults.push(format!(
                "{shown}:{n}: \"{said}\": a chapter teaches the code as it is, with no time or session in it \
                 (history goes to the performance log)"
            ));
        }
    }
    faults
}

/// `path` relative to `root`, with `/` between its parts.
fn rel(root: &Path, path: &Path) -> String {
    path.strip_prefix(root).unwrap_or(path).to_string_lossy().replace('\\', "/")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

fn columns(line: &str) -> usize {
    line.chars().count()
}

/// The text of HTML with its character references decoded (those mdBook writes in code).
fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let end = rest.find(';').filter(|&e| e <= 10);
        let decoded = end.and_then(|e| match &rest[1..e] {
            "lt" => Some('<'),
            "gt" => Some('>'),
            "amp" => Some('&'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            "nbsp" => Some('\u{a0}'),
            entity => {
                let number = entity.strip_prefix('#')?;
                let code = match number.strip_prefix(['x', 'X']) {
                    Some(hex) => u32::from_str_radix(hex, 16).ok()?,
                    None => number.parse().ok()?,
                };
                char::from_u32(code)
            }
        });
        match (decoded, end) {
            (Some(c), Some(e)) => {
                out.push(c);
                rest = &rest[e + 1..];
            }
            _ => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The pages' faults: words, hashes, the workshop's words, a lab's running figures.
fn pages(root: &Path, pages: &[PathBuf]) -> Vec<String> {
    let mut faults = Vec::new();
    for page in pages {
        let Ok(text) = std::fs::read_to_string(page) else { continue };
        let shown = rel(root, page);
        let name = page.file_name().unwrap_or_default().to_string_lossy();
        let cap = if name == "measuring.md" { MEASURING_WORDS } else { WORDS };
        let words = visible(&text, false).split_whitespace().count();
        if words > cap {
            faults.push(format!(
                "{shown}: {words} words outside code, over {cap} (move the rest to an appendix page)"
            ));
        }
        for h in hashes(&visible(&text, true)).into_iter().collect::<BTreeSet<_>>() {
            faults.push(format!(
                "{shown}: a commit hash in text a reader sees: {h} (history goes to the performance log)"
            ));
        }
        faults.extend(workshop(&shown, &text));
        let n = running_figures(&text);
        if LAB.is_match(&name) && n > RUNNING_FIGURES {
            faults.push(format!(
                "{shown}: {n} measured figures in the running text, over {RUNNING_FIGURES} (keep those that \
                 carry the lesson; move the rest to a table at the end or to an appendix)"
            ));
        }
    }
    faults
}

/// README.md's faults: lines, links, where the set-up commands are, hashes.
fn readme(root: &Path) -> Vec<String> {
    let readme = match std::fs::read_to_string(root.join("README.md")) {
        Ok(readme) => readme,
        Err(e) => return vec![format!("README.md cannot be read ({e})")],
    };
    let mut faults = Vec::new();
    let lines = readme.matches('\n').count();
    let links = LINK.find_iter(&readme).count();
    if lines > README_LINES {
        faults.push(format!(
            "README.md: {lines} lines, over {README_LINES} (details go to the book or CONTRIBUTING.md)"
        ));
    }
    // The two set-up commands, where a reader finds them without scrolling.
    for command in ["cargo run --release -p step01_cpu_naive ", "cargo test --workspace "] {
        let at = readme.split('\n').position(|line| line.starts_with(command)).map(|i| i + 1);
        if at.is_none_or(|at| at > README_SETUP_LINE) {
            let at = at.map_or("None".to_owned(), |at| at.to_string());
            faults.push(format!(
                "README.md: `{}` at line {at}, not within its first {README_SETUP_LINE}",
                command.trim()
            ));
        }
    }
    if links > README_LINKS {
        faults.push(format!("README.md: {links} links, over {README_LINKS}"));
    }
    for h in hashes(&visible(&readme, true)).into_iter().collect::<BTreeSet<_>>() {
        faults.push(format!("README.md: a commit hash in text a reader sees: {h}"));
    }
    faults
}

/// Kernel lines over the width: every `.cu` under a step's folder, and the lines a variant kept
/// as its diff alone adds.
fn kernels(root: &Path) -> Vec<String> {
    let steps: Vec<PathBuf> = std::fs::read_dir(root)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir() && p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("step")))
        .collect();
    let mut files: Vec<PathBuf> = steps.iter().flat_map(|s| walk(s)).collect();
    files.sort();
    let mut faults = Vec::new();
    for kernel in files.iter().filter(|p| p.extension().is_some_and(|e| e == "cu") && p.is_file()) {
        for (n, line) in read(kernel).split('\n').enumerate() {
            if columns(line) > COLUMNS {
                faults.push(format!(
                    "{}:{}: {} columns, over {COLUMNS}",
                    rel(root, kernel),
                    n + 1,
                    columns(line)
                ));
            }
        }
    }
    // A variant kept as its diff alone: the lines it adds are lines of its kernel.
    let diffs = files.iter().filter(|p| {
        p.extension().is_some_and(|e| e == "diff")
            && p.parent().and_then(Path::file_name).is_some_and(|d| d == "variants")
            && p.parent().and_then(Path::parent).and_then(Path::parent) == Some(root)
    });
    for diff in diffs.filter(|d| !d.with_extension("cu").exists()) {
        for (n, line) in read(diff).split('\n').enumerate() {
            if line.starts_with('+') && !line.starts_with("+++ ") && columns(line) - 1 > COLUMNS {
                faults.push(format!(
                    "{}:{}: an added line of {} columns, over {COLUMNS}",
                    rel(root, diff),
                    n + 1,
                    columns(line) - 1
                ));
            }
        }
    }
    faults
}

/// Code lines over the width in the built book's pages (`docs/book`, where it has been built).
fn built_code(root: &Path, src: &Path, readers: &[PathBuf]) -> Vec<String> {
    let book = root.join("docs/book");
    if !book.is_dir() {
        return Vec::new();
    }
    let shown = readers
        .iter()
        .map(|p| book.join(p.strip_prefix(src).unwrap_or(p)).with_extension("html"))
        .chain([book.join("results.html")]);
    let mut faults = Vec::new();
    for page in shown.filter(|p| p.exists()) {
        for block in CODE_BLOCK.captures_iter(&read(&page)) {
            for line in unescape(&TAG.replace_all(&block[1], NoExpand(""))).split('\n') {
                if columns(line) > COLUMNS {
                    let start: String = line.chars().take(60).collect();
                    faults.push(format!(
                        "docs/book/{}: a code line of {} columns, over {COLUMNS}: {start}…",
                        rel(&book, &page),
                        columns(line)
                    ));
                }
            }
        }
    }
    faults
}

/// The records' faults: one named by a hash, one the page of earlier runs does not list.
fn records(src: &Path, summary: &str) -> Vec<String> {
    let results = src.join("results");
    let all = walk(&results);
    let mut faults = Vec::new();
    for record in &all {
        let name = record.file_name().unwrap_or_default().to_string_lossy();
        if !hashes(&name.replace(['-', '.'], " ")).is_empty() {
            faults.push(format!(
                "docs/src/results/{}: a record named by a commit hash (a link shows its name: name it by what it \
                 measured; the hash goes inside)",
                rel(&results, record)
            ));
        }
    }
    let earlier = read(&results.join("earlier.md"));
    let listed: BTreeSet<String> = LINKED.captures_iter(&earlier).map(|c| c[1].to_owned()).collect();
    // The results pages the sidebar shows (the main run's, and this page) are not listed there.
    let course = SEPARATOR.find(summary).map_or(summary, |m| &summary[..m.start()]);
    let skip: BTreeSet<String> = ENTRY
        .captures_iter(course)
        .filter_map(|c| c[1].strip_prefix("results/").map(str::to_owned))
        .collect();
    for record in &all {
        let rel = rel(&results, record);
        let kept = record.extension().is_some_and(|e| e == "md" || e == "log");
        if kept && !skip.contains(&rel) && !listed.contains(&rel) {
            faults.push(format!(
                "docs/src/results/{rel}: a record the page of earlier runs does not list \
                 (run `cargo xtask earlier-runs`)"
            ));
        }
    }
    faults
}

/// Every fault of the repository at `repo`, one line each (empty: the reader's rules hold).
/// The built book (`docs/book`) is read too where it exists.
pub fn check(repo: &Repo) -> Vec<String> {
    let root = repo.root();
    let src = repo.src();
    let summary = match std::fs::read_to_string(src.join("SUMMARY.md")) {
        Ok(summary) => summary,
        Err(e) => return vec![format!("reading: docs/src/SUMMARY.md cannot be read ({e})")],
    };
    let readers = reader_pages(&src, &summary);
    let mut faults = sidebar(root, &summary);
    faults.extend(pages(root, &readers));
    faults.extend(readme(root));
    faults.extend(kernels(root));
    faults.extend(built_code(root, &src, &readers));
    faults.extend(records(&src, &summary));
    faults.into_iter().map(|f| format!("reading: {f}")).collect()
}

#[cfg(test)]
#[path = "reading_tests.rs"]
mod tests;

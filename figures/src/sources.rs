//! The book's sources, checked where mdBook says nothing (`cargo xtask docs` runs this after
//! building the book): every page under `docs/src` is listed in SUMMARY.md (mdBook renders only
//! the pages it lists, and a link to any other finds no page in the book); every include of
//! source sits in a fenced block that names its language (outside a fence, Markdown renders the
//! code as prose: comments merged, `__x__` turned bold, `<` and `*` eaten); each include's file
//! exists and holds its anchor; each local link's target exists.

use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;

use crate::Repo;

static FENCE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^[ \t]*(?:```|~~~)[ \t]*").unwrap());
/// `{{#include path:anchor}}`; an escaped one, `\{{#include …}}`, is text the page shows (mdBook
/// drops the backslash) and is left alone.
static INCLUDE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?:^|[^\\])\{\{#include ([^}]+)\}\}").unwrap());
static HAS_INCLUDE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?:^|[^\\])\{\{#include ").unwrap());
/// `[text](target)` and `[text](target "title")`.
static LINK: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\]\(([^)]+)\)").unwrap());

/// A page's includes outside a fence, or in a fence without a language.
fn fences(shown: &str, text: &str) -> Vec<String> {
    let mut faults = Vec::new();
    let mut open: Option<(String, usize)> = None;
    for (n, line) in text.split('\n').enumerate().map(|(i, l)| (i + 1, l)) {
        if let Some(m) = FENCE.find(line) {
            open = match open {
                Some(_) => None,
                None => Some((line[m.end()..].to_owned(), n)),
            };
            continue;
        }
        if !HAS_INCLUDE.is_match(line) {
            continue;
        }
        match &open {
            None => faults.push(format!(
                "{shown}:{n}: an include outside a code fence (put it between ```LANG and ```)"
            )),
            Some((lang, start)) if lang.is_empty() => faults.push(format!(
                "{shown}:{n}: an include in a code fence without a language (```rust, ```cuda, …; fence \
                 opened at line {start})"
            )),
            Some(_) => {}
        }
    }
    faults
}

/// A page's includes of a missing file or of an anchor their file lacks.
fn includes(shown: &str, dir: &Path, text: &str) -> Vec<String> {
    let mut faults = Vec::new();
    for line in text.split('\n') {
        for c in INCLUDE.captures_iter(line) {
            let include = &c[1];
            let (path, anchor) = include.split_once(':').unwrap_or((include, ""));
            let file = dir.join(path);
            if !file.is_file() {
                faults.push(format!("{shown}: include of a missing file: {path}"));
            } else if !anchor.is_empty() {
                let marker = format!("ANCHOR: {anchor}");
                let source = std::fs::read_to_string(&file).unwrap_or_default();
                if !source.split('\n').any(|l| l.ends_with(&marker)) {
                    faults.push(format!("{shown}: {path} has no anchor '{anchor}'"));
                }
            }
        }
    }
    faults
}

/// A page's links to a local file that does not exist.
fn links(shown: &str, dir: &Path, text: &str) -> Vec<String> {
    let mut faults = Vec::new();
    for line in text.split('\n') {
        for c in LINK.captures_iter(line) {
            let target = &c[1];
            let file = target.split(' ').next().unwrap_or("");
            let file = file.split('#').next().unwrap_or("");
            let remote = ["http://", "https://", "mailto:"].iter().any(|p| file.starts_with(p));
            if !file.is_empty() && !remote && !dir.join(file).exists() {
                faults.push(format!("{shown}: broken link: {target}"));
            }
        }
    }
    faults
}

/// Every fault of the book's sources, one line each, each page named as `docs/src/…`.
pub fn check(repo: &Repo) -> Vec<String> {
    let src = repo.src();
    let summary = std::fs::read_to_string(src.join("SUMMARY.md")).unwrap_or_default();
    let pages = repo.pages();
    let mut faults = Vec::new();
    let shown = |page: &Path| page.strip_prefix(repo.root()).unwrap_or(page).display().to_string();
    for page in &pages {
        let rel = page.strip_prefix(&src).unwrap_or(page).to_string_lossy().replace('\\', "/");
        if rel != "SUMMARY.md" && !summary.contains(&format!("]({rel})")) {
            faults
                .push(format!("{}: not in docs/src/SUMMARY.md, so the book has no page for it", shown(page)));
        }
    }
    for page in &pages {
        let Ok(text) = std::fs::read_to_string(page) else {
            faults.push(format!("{}: cannot be read", shown(page)));
            continue;
        };
        let dir = page.parent().unwrap_or(&src);
        faults.extend(fences(&shown(page), &text));
        faults.extend(includes(&shown(page), dir, &text));
        faults.extend(links(&shown(page), dir, &text));
    }
    faults
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A book whose page includes an anchored piece of a source file and links to another page.
    fn book(test: &str) -> Repo {
        let root = std::env::temp_dir().join(format!("figures-sources-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("docs/src/log")).unwrap();
        std::fs::create_dir_all(root.join("code")).unwrap();
        std::fs::write(root.join("code/k.rs"), "// ANCHOR: body\nfn f() {}\n// ANCHOR_END: body\n").unwrap();
        std::fs::write(root.join("docs/src/SUMMARY.md"), "- [A](a.md)\n- [Log](log/b.md)\n").unwrap();
        std::fs::write(
            root.join("docs/src/a.md"),
            "# A\n\n```rust\n{{#include ../../code/k.rs:body}}\n```\n\nSee [b](log/b.md#top \"B\"), \
             [the web](https://example.org) and [here](#a). Shown: \\{{#include nothing.rs}}\n",
        )
        .unwrap();
        std::fs::write(root.join("docs/src/log/b.md"), "# B\n\n[back](../a.md)\n").unwrap();
        Repo::at(&root)
    }

    fn plant(repo: &Repo, page: &str, text: &str) -> Vec<String> {
        let path = repo.src().join(page);
        let now = std::fs::read_to_string(&path).unwrap_or_default();
        std::fs::write(&path, format!("{now}{text}")).unwrap();
        let faults = check(repo);
        std::fs::write(&path, now).unwrap();
        faults
    }

    #[test]
    fn a_sound_book_passes_and_each_planted_fault_is_named() {
        let repo = book("faults");
        assert_eq!(check(&repo), Vec::<String>::new());
        let at = |line: usize| format!("docs/src/log/b.md:{line}");
        assert_eq!(
            plant(&repo, "log/b.md", "```\n{{#include ../../../code/k.rs}}\n```\n"),
            [format!(
                "{}: an include in a code fence without a language (```rust, ```cuda, …; fence opened at line 4)",
                at(5)
            )]
        );
        assert_eq!(
            plant(&repo, "log/b.md", "{{#include ../../../code/k.rs}}\n"),
            [format!("{}: an include outside a code fence (put it between ```LANG and ```)", at(4))]
        );
        assert_eq!(
            plant(&repo, "log/b.md", "```rust\n{{#include ../../../code/k.rs:head}}\n```\n"),
            ["docs/src/log/b.md: ../../../code/k.rs has no anchor 'head'"]
        );
        assert_eq!(
            plant(&repo, "log/b.md", "```rust\n{{#include ../../code/gone.rs}}\n```\n"),
            ["docs/src/log/b.md: include of a missing file: ../../code/gone.rs"]
        );
        assert_eq!(plant(&repo, "a.md", "[c](c.md \"C\")\n"), ["docs/src/a.md: broken link: c.md \"C\""]);
        assert_eq!(
            plant(&repo, "c.md", "# C\n"),
            ["docs/src/c.md: not in docs/src/SUMMARY.md, so the book has no page for it"]
        );
        std::fs::remove_dir_all(repo.root()).unwrap();
    }
}

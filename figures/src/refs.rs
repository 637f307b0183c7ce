//! References in a page, `{{#figure ID}}`, and the links they become.

use std::path::{Component, Path};
use std::sync::LazyLock;

use regex::{Captures, Regex};

use crate::catalog::Catalog;
use crate::record::Records;

/// `{{#figure ID}}`, or `\{{#figure ID}}`, which is the reference's own text (escaped, so that a
/// page can show the syntax).
static REFERENCE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(\\?)\{\{#figure\b[ \t]*([^}\n]*?)[ \t]*\}\}").unwrap());

/// A reference found in a page.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reference {
    /// Counted from 1.
    pub line: usize,
    pub id: String,
}

/// Every reference in `text` that is not escaped.
pub fn references(text: &str) -> Vec<Reference> {
    REFERENCE
        .captures_iter(text)
        .filter(|c| c[1].is_empty())
        .map(|c| Reference { line: line_of(text, c.get(0).unwrap().start()), id: c[2].to_owned() })
        .collect()
}

/// Where the page that quotes a figure is.
#[derive(Clone, Copy, Debug)]
pub enum Page<'a> {
    /// A page of the book, its path relative to `docs/src`.
    Book(&'a Path),
    /// The README, at the repository's root.
    Readme,
}

impl Page<'_> {
    /// The link from this page to the record at `record` (relative to `docs/src`).
    pub fn link_to(&self, record: &str) -> String {
        match self {
            Page::Readme => format!("docs/src/{record}"),
            Page::Book(page) => {
                let from: Vec<_> = page
                    .parent()
                    .into_iter()
                    .flat_map(Path::components)
                    .filter_map(|c| match c {
                        Component::Normal(c) => c.to_str(),
                        _ => None,
                    })
                    .collect();
                let to: Vec<&str> = record.split('/').collect();
                let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
                let mut parts = vec![".."; from.len() - common];
                parts.extend(&to[common..]);
                parts.join("/")
            }
        }
    }
}

/// `text` with every reference replaced by its figure, linked to its record. An escaped
/// reference keeps its backslash in the book (mdBook's own `links` preprocessor removes it) and
/// loses it in the README. The errors: the line, and what is wrong in one sentence.
pub fn fill(
    text: &str,
    page: Page,
    catalog: &Catalog,
    records: &mut Records,
) -> Result<String, Vec<(usize, String)>> {
    let mut errors = Vec::new();
    let filled = REFERENCE.replace_all(text, |c: &Captures| {
        let whole = c.get(0).unwrap();
        if !c[1].is_empty() {
            return match page {
                Page::Readme => whole.as_str()[1..].to_owned(),
                Page::Book(_) => whole.as_str().to_owned(),
            };
        }
        let line = line_of(text, whole.start());
        let id = &c[2];
        let Some(entry) = catalog.get(id) else {
            let why = if id.is_empty() {
                "{{#figure}} names no figure".to_owned()
            } else {
                format!("the figure {id} is not in docs/figures.txt")
            };
            errors.push((line, why));
            return whole.as_str().to_owned();
        };
        match entry.print(records) {
            Ok(figure) => format!("[{figure}]({})", page.link_to(&entry.record)),
            Err(why) => {
                errors.push((line, format!("the figure {id} cannot be read: {why}")));
                whole.as_str().to_owned()
            }
        }
    });
    if errors.is_empty() { Ok(filled.into_owned()) } else { Err(errors) }
}

fn line_of(text: &str, at: usize) -> usize {
    text[..at].matches('\n').count() + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_are_relative_to_the_page() {
        let link = |page: &str, record: &str| Page::Book(Path::new(page)).link_to(record);
        assert_eq!(link("step02.md", "results/runs/a.log"), "results/runs/a.log");
        assert_eq!(link("results/trust-h200.md", "results/runs/a.log"), "runs/a.log");
        assert_eq!(link("results/trust-h200.md", "results/nvidia-h200.md"), "nvidia-h200.md");
        assert_eq!(link("results/runs/x.md", "results/nvidia-h200.md"), "../nvidia-h200.md");
        assert_eq!(link("a/b.md", "results/x.md"), "../results/x.md");
        assert_eq!(Page::Readme.link_to("results/x.md"), "docs/src/results/x.md");
    }

    #[test]
    fn references_are_found_and_escaped_ones_skipped() {
        let text = "a {{#figure h200.x}} b\n{{#figure  y.z }} \\{{#figure q}} {{#figure}}";
        let ids: Vec<_> = references(text).into_iter().map(|r| (r.line, r.id)).collect();
        assert_eq!(ids, [(1, "h200.x".to_owned()), (2, "y.z".to_owned()), (2, String::new())]);
    }

    #[test]
    fn references_become_linked_figures() {
        let dir = std::env::temp_dir().join(format!("figures-refs-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("results/runs")).unwrap();
        std::fs::write(dir.join("results/runs/r.log"), "speed 45220 GFLOP/s · 88.36% of cuBLAS\n").unwrap();
        let catalog = Catalog::parse(
            "r.share | 0.0% | results/runs/r.log | · ([\\d.]+)% of\n\
             r.tflops | 0.0 /1000 | results/runs/r.log | speed (\\d+) GFLOP\n\
             r.gone | 0 | results/runs/gone.log | speed (\\d+)\n\
             r.moved | 0 | results/runs/r.log | rate (\\d+)\n",
        )
        .unwrap();
        let mut records = Records::new(&dir);
        let page = Page::Book(Path::new("step06.md"));
        let text = "at {{#figure r.tflops}} TFLOP/s, {{#figure r.share}} of cuBLAS; \\{{#figure r.share}}";
        assert_eq!(
            fill(text, page, &catalog, &mut records).unwrap(),
            "at [45.2](results/runs/r.log) TFLOP/s, [88.4%](results/runs/r.log) of cuBLAS; \\{{#figure r.share}}"
        );
        assert_eq!(
            fill(text, Page::Readme, &catalog, &mut records).unwrap(),
            "at [45.2](docs/src/results/runs/r.log) TFLOP/s, [88.4%](docs/src/results/runs/r.log) of cuBLAS; \
             {{#figure r.share}}"
        );
        let errors = fill(
            "{{#figure r.nope}}\n{{#figure r.gone}} {{#figure r.moved}} {{#figure }}",
            page,
            &catalog,
            &mut records,
        )
        .unwrap_err();
        assert_eq!(errors.len(), 4, "{errors:?}");
        assert_eq!(errors[0], (1, "the figure r.nope is not in docs/figures.txt".to_owned()));
        assert!(
            errors[1].1.starts_with("the figure r.gone cannot be read: the record results/runs/gone.log")
        );
        assert!(
            errors[2].1.contains("\"rate (\\d+)\" matches nothing in results/runs/r.log"),
            "{:?}",
            errors[2]
        );
        assert_eq!(errors[3], (2, "{{#figure}} names no figure".to_owned()));
        std::fs::remove_dir_all(dir).unwrap();
    }
}

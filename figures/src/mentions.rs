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

/// `{{#record ID}}`: a link to the record that holds the figure ID, named by its file. A table
/// or paragraph of figures names its records once this way, rather than linking every figure.
static RECORD: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(\\?)\{\{#record\b[ \t]*([^}\n]*?)[ \t]*\}\}").unwrap());

/// A heading line of Markdown: where a section begins.
fn is_heading(line: &str) -> bool {
    line.starts_with('#') && line.trim_start_matches('#').starts_with(' ')
}

/// What one section of a page (a heading to the next) quotes and names.
#[derive(Default)]
struct Section {
    /// Each figure: its line, id and record.
    quoted: Vec<(usize, String, String)>,
    /// The records its `{{#record}}`s name.
    named: Vec<String>,
}

/// A reference found in a page.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mention {
    /// Counted from 1.
    pub line: usize,
    pub id: String,
}

/// Every reference in `text` that is not escaped.
pub fn mentions(text: &str) -> Vec<Mention> {
    REFERENCE
        .captures_iter(text)
        .filter(|c| c[1].is_empty())
        .map(|c| Mention { line: line_of(text, c.get(0).unwrap().start()), id: c[2].to_owned() })
        .collect()
}

/// Every `{{#record ID}}` in `text` that is not escaped: the ids it names records by.
pub fn record_mentions(text: &str) -> Vec<Mention> {
    RECORD
        .captures_iter(text)
        .filter(|c| c[1].is_empty())
        .map(|c| Mention { line: line_of(text, c.get(0).unwrap().start()), id: c[2].to_owned() })
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

/// `text` with every reference replaced by its figure, and every `{{#record ID}}` by a link to
/// the record of figure ID. A figure is printed as a number, not a link: each section of the page
/// (from one heading to the next) must name the record of every figure it quotes with a
/// `{{#record}}`, once. An escaped reference keeps its backslash in the book (mdBook's own
/// `links` preprocessor removes it) and loses it in the README. The errors: the line, and what is
/// wrong in one sentence.
pub fn fill(
    text: &str,
    page: Page,
    catalog: &Catalog,
    records: &mut Records,
) -> Result<String, Vec<(usize, String)>> {
    let mut errors = Vec::new();
    let escaped = |whole: &str| match page {
        Page::Readme => whole[1..].to_owned(),
        Page::Book(_) => whole.to_owned(),
    };
    let unknown = |id: &str, what: &str| {
        if id.is_empty() {
            format!("{{{{#{what}}}}} names no figure")
        } else {
            format!("the figure {id} is not in docs/figures.txt")
        }
    };
    // Per section: each figure it quotes (line, id, record), and the records it names.
    let mut sections: Vec<Section> = vec![Section::default()];
    let mut fence = false;
    for (n, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fence = !fence;
        }
        if !fence && is_heading(line) {
            sections.push(Section::default());
        }
        let section = sections.last_mut().unwrap();
        for c in REFERENCE.captures_iter(line).filter(|c| c[1].is_empty()) {
            if let Some(entry) = catalog.get(&c[2]) {
                section.quoted.push((n + 1, c[2].to_owned(), entry.record.clone()));
            }
        }
        for c in RECORD.captures_iter(line).filter(|c| c[1].is_empty()) {
            match catalog.get(&c[2]) {
                Some(entry) => section.named.push(entry.record.clone()),
                None => errors.push((n + 1, unknown(&c[2], "record"))),
            }
        }
    }
    for section in &sections {
        let mut told = std::collections::HashSet::new();
        for (line, id, record) in &section.quoted {
            if !section.named.contains(record) && told.insert(record) {
                errors.push((
                    *line,
                    format!(
                        "the figure {id} comes from {record}, which its section does not name: \
                         add {{{{#record {id}}}}} once, under the table or at the paragraph's end"
                    ),
                ));
            }
        }
    }
    let filled = REFERENCE.replace_all(text, |c: &Captures| {
        let whole = c.get(0).unwrap();
        if !c[1].is_empty() {
            return escaped(whole.as_str());
        }
        let line = line_of(text, whole.start());
        let id = &c[2];
        let Some(entry) = catalog.get(id) else {
            errors.push((line, unknown(id, "figure")));
            return whole.as_str().to_owned();
        };
        match entry.print(records) {
            Ok(figure) => figure,
            Err(why) => {
                errors.push((line, format!("the figure {id} cannot be read: {why}")));
                whole.as_str().to_owned()
            }
        }
    });
    let filled = RECORD.replace_all(&filled, |c: &Captures| {
        let whole = c.get(0).unwrap();
        if !c[1].is_empty() {
            return escaped(whole.as_str());
        }
        match catalog.get(&c[2]) {
            Some(entry) => format!("[{}]({})", record_name(&entry.record), page.link_to(&entry.record)),
            None => whole.as_str().to_owned(),
        }
    });
    errors.sort();
    if errors.is_empty() { Ok(filled.into_owned()) } else { Err(errors) }
}

/// How a link names a record: its file name. Records are named by what they measured and when,
/// never by a commit hash (`cargo xtask reading` checks), so the name is fit to show.
pub fn record_name(record: &str) -> String {
    record.rsplit('/').next().unwrap_or(record).to_owned()
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
        let ids: Vec<_> = mentions(text).into_iter().map(|r| (r.line, r.id)).collect();
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
        let text = "at {{#figure r.tflops}} TFLOP/s, {{#figure r.share}} of cuBLAS ({{#record r.share}}); \
                    \\{{#figure r.share}}";
        assert_eq!(
            fill(text, page, &catalog, &mut records).unwrap(),
            "at 45.2 TFLOP/s, 88.4% of cuBLAS ([r.log](results/runs/r.log)); \\{{#figure r.share}}"
        );
        assert_eq!(
            fill(text, Page::Readme, &catalog, &mut records).unwrap(),
            "at 45.2 TFLOP/s, 88.4% of cuBLAS ([r.log](docs/src/results/runs/r.log)); {{#figure r.share}}"
        );
        let errors = fill(
            "{{#figure r.nope}}\n{{#figure r.gone}} {{#figure r.moved}} {{#figure }} {{#record r.gone}} {{#record r.moved}}",
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

    #[test]
    fn each_section_names_the_records_it_quotes() {
        let dir = std::env::temp_dir().join(format!("figures-sections-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("runs")).unwrap();
        std::fs::write(dir.join("runs/a.log"), "speed 45220 GFLOP/s\n").unwrap();
        std::fs::write(dir.join("runs/b.log"), "speed 123456 GFLOP/s\n").unwrap();
        let catalog = Catalog::parse(
            "a.rate | 0 | runs/a.log | speed (\\d+)\n\
             b.rate | 0 | runs/b.log | speed (\\d+)\n",
        )
        .unwrap();
        let mut records = Records::new(&dir);
        let page = Page::Book(Path::new("x.md"));
        let mut fill = |text: &str| fill(text, page, &catalog, &mut records);
        // Named once in its section, under the table: the figures print as numbers, grouped
        // from five digits.
        let ok = fill(
            "# A\n| {{#figure a.rate}} | {{#figure b.rate}} |\n\nRecords: {{#record a.rate}}, {{#record b.rate}}.\n",
        );
        assert_eq!(
            ok.unwrap(),
            "# A\n| 45\u{202f}220 | 123\u{202f}456 |\n\nRecords: [a.log](runs/a.log), [b.log](runs/b.log).\n"
        );
        // The next section does not inherit the name: each says where its figures come from.
        let errors = fill(
            "# A\n{{#figure a.rate}} {{#record a.rate}}\n## B\n{{#figure a.rate}} and {{#figure a.rate}}\n",
        )
        .unwrap_err();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0].0, 4);
        assert!(errors[0].1.contains("runs/a.log, which its section does not name"), "{errors:?}");
        // A heading inside a code block does not begin a section.
        assert!(fill("{{#figure a.rate}}\n```sh\n# a comment\n```\n{{#record a.rate}}\n").is_ok());
        assert_eq!(fill("{{#record z}}").unwrap_err()[0].1, "the figure z is not in docs/figures.txt");
        std::fs::remove_dir_all(dir).unwrap();
    }
}

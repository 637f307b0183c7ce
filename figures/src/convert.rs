//! Quotes of the old form, a link whose title was a regular expression,
//!
//! ```text
//! [88.4%](results/runs/2026-11-21-h200-step06.log "speed .*· ([\d.]+)% of cuBLAS")
//! ```
//!
//! turned into references, `{{#figure h200-step06.share}}`, and lines of the catalog. A title
//! ending in ` /1000` divided the record's value first. A quote is converted only when its
//! record still says what it quotes. Figures already in the catalog (the same record, the same
//! number in it, the same form) keep their id; a `%` right after a quote becomes part of its
//! form.

use std::collections::HashMap;
use std::ops::Range;
use std::path::{Component, Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;

use crate::Repo;
use crate::catalog::{Catalog, Entry};
use crate::form::Form;
use crate::name;
use crate::record::{self, Records};

/// A titled link: text, target, title.
static LINK: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"\[([^\]\n]+)\]\(([^)\s]+) "((?:[^"\\]|\\.)+)"\)"#).unwrap());

/// A quote of the old form.
#[derive(Clone, Debug, PartialEq)]
pub struct OldQuote {
    pub range: Range<usize>,
    /// Counted from 1.
    pub line: usize,
    pub text: String,
    pub target: String,
    pub title: String,
}

/// Every quote of the old form in `text`: a titled link whose text is a figure.
pub fn old_quotes(text: &str) -> Vec<OldQuote> {
    LINK.captures_iter(text)
        .filter(|c| Form::of_quote(&c[1], None).is_some())
        .map(|c| {
            let range = c.get(0).unwrap().range();
            OldQuote {
                line: text[..range.start].matches('\n').count() + 1,
                range,
                text: c[1].trim().to_owned(),
                target: c[2].to_owned(),
                title: c[3].replace("\\\"", "\""),
            }
        })
        .collect()
}

/// Converts files, adding to one catalog.
pub struct Converter<'a> {
    repo: &'a Repo,
    catalog: Catalog,
    records: Records,
    /// (record, form, where the figure is in the record) → id, for every entry that reads.
    known: HashMap<(String, String, usize, usize), String>,
    /// (record, where the figure is in the record) → the ids of that figure, in any form.
    figures: HashMap<(String, usize, usize), Vec<String>>,
    /// Entries added so far.
    pub added: usize,
}

impl<'a> Converter<'a> {
    /// A converter that adds to the repository's catalog (a new one if there is none yet).
    pub fn new(repo: &'a Repo) -> Result<Converter<'a>, String> {
        let path = repo.catalog();
        let catalog = if path.exists() { Catalog::load(&path)? } else { Catalog::parse("")? };
        let mut records = Records::new(&repo.src());
        let (mut known, mut figures) = (HashMap::new(), HashMap::new());
        for entry in &catalog.entries {
            if let Ok(picked) = entry.pick(&mut records) {
                let key = (entry.record.clone(), entry.form.to_string(), picked.span.start, picked.span.end);
                known.entry(key).or_insert_with(|| entry.id.clone());
                let figure = (entry.record.clone(), picked.span.start, picked.span.end);
                figures.entry(figure).or_insert_with(Vec::new).push(entry.id.clone());
            }
        }
        Ok(Converter { repo, catalog, records, known, figures, added: 0 })
    }

    /// The catalog with what was added.
    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// `file`'s text with every old quote turned into a reference, and how many there were; or
    /// one sentence per quote that cannot be converted, naming its line.
    pub fn convert(&mut self, file: &Path) -> Result<(String, usize), Vec<String>> {
        let shown = file.strip_prefix(self.repo.root()).unwrap_or(file).display().to_string();
        let text =
            std::fs::read_to_string(file).map_err(|e| vec![format!("{shown} cannot be read ({e})")])?;
        // Links in the README's template are relative to the repository's root, as in README.md.
        let template = self.repo.template();
        let base = if file.canonicalize().ok() == template.canonicalize().ok() && template.exists() {
            self.repo.root().to_owned()
        } else {
            file.parent().unwrap_or(Path::new("")).to_owned()
        };
        let (mut out, mut errors, mut at, mut count) = (String::new(), Vec::new(), 0, 0);
        for quote in old_quotes(&text) {
            if quote.range.start < at {
                continue;
            }
            let percent_after = text[quote.range.end..].starts_with('%');
            match self.reference(&base, &quote, percent_after) {
                Ok((id, absorbed)) => {
                    out.push_str(&text[at..quote.range.start]);
                    out.push_str(&format!("{{{{#figure {id}}}}}"));
                    at = quote.range.end + usize::from(absorbed);
                    count += 1;
                }
                Err(why) => errors.push(format!("{shown}:{}: {why}", quote.line)),
            }
        }
        out.push_str(&text[at..]);
        if errors.is_empty() { Ok((out, count)) } else { Err(errors) }
    }

    /// The id of an old quote's figure (a new entry if the catalog has none), and whether the
    /// `%` after it went into its form.
    fn reference(
        &mut self,
        base: &Path,
        quote: &OldQuote,
        percent_after: bool,
    ) -> Result<(String, bool), String> {
        let (pattern, divisor) = match quote.title.rsplit_once(" /") {
            Some((p, d)) if d.parse::<u64>().is_ok_and(|d| d > 0) => (p, d.parse::<u64>().ok()),
            _ => (quote.title.as_str(), None),
        };
        let record = self.record_path(base, &quote.target)?;
        let selector = record::selector(pattern)?;
        let picked = self.records.pick(&record, &selector)?;
        let mut form =
            Form::of_quote(&quote.text, divisor).ok_or(format!("\"{}\" is not a figure", quote.text))?;
        let printed = form.print(picked.value);
        if printed != quote.text {
            let divided = divisor.map_or(String::new(), |d| format!(" (divided by {d}: {printed})"));
            return Err(format!(
                "the quote says {} but {record} says {}{divided}: correct the quote before converting it",
                quote.text, picked.text
            ));
        }
        let absorbed = percent_after && !form.percent && !form.scientific;
        form.percent |= absorbed;
        let key = (record.clone(), form.to_string(), picked.span.start, picked.span.end);
        if let Some(id) = self.known.get(&key) {
            return Ok((id.clone(), absorbed));
        }
        // The catalog writes `|` as `\|`, which reads better than `\x7c`, when that picks the same.
        let cleaner = pattern.replace(r"\x7c", r"\|");
        let selector =
            match record::selector(&cleaner).and_then(|s| self.records.pick(&record, &s).map(|p| (s, p))) {
                Ok((s, p)) if p.span == picked.span => s,
                _ => selector,
            };
        // Another form of a figure the catalog has is named after it.
        let figure = (record.clone(), picked.span.start, picked.span.end);
        let others = self.figures.get(&figure).into_iter().flatten().filter_map(|id| self.catalog.get(id));
        let mut id = match others.into_iter().find(|other| other.form.divisor == form.divisor) {
            Some(other) => format!("{}.{}", other.id, name::form_suffix(&form, &other.form)),
            None => {
                let text = self.records.text(&record)?.to_owned();
                name::suggest(&record, &text, pattern, &picked.span, &form)
            }
        };
        let mut n = 2;
        let stem = id.clone();
        while self.catalog.get(&id).is_some() {
            id = format!("{stem}-{n}");
            n += 1;
        }
        let entry = Entry { id: id.clone(), form, record, selector, line: 0 };
        self.catalog.add(entry)?;
        self.known.insert(key, id.clone());
        self.figures.entry(figure).or_default().push(id.clone());
        self.added += 1;
        Ok((id, absorbed))
    }

    /// A quote's target as a path relative to `docs/src`.
    fn record_path(&self, base: &Path, target: &str) -> Result<String, String> {
        let target = target.split('#').next().unwrap_or(target);
        let mut path = PathBuf::new();
        for part in base.join(target).components() {
            match part {
                Component::ParentDir => {
                    path.pop();
                }
                Component::CurDir => {}
                other => path.push(other),
            }
        }
        let inside = path
            .strip_prefix(self.repo.src())
            .map_err(|_| format!("the record {target} is not under docs/src"))?;
        let parts: Vec<_> = inside.components().filter_map(|c| c.as_os_str().to_str()).collect();
        Ok(parts.join("/"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_quotes_are_titled_links_whose_text_is_a_figure() {
        let q =
            old_quotes("at [88.4%](runs/x.log \"speed .*· ([\\d.]+)% of\") and [a link](y.md)\n[a](b \"c\")");
        assert_eq!(q.len(), 1);
        assert_eq!((q[0].line, q[0].text.as_str(), q[0].target.as_str()), (1, "88.4%", "runs/x.log"));
        assert_eq!(q[0].title, r"speed .*· ([\d.]+)% of");
        assert_eq!(old_quotes("// [46.8](../x.md \"speed ([\\d.]+)\") TFLOP/s").len(), 1);
    }

    #[test]
    fn quotes_become_references_and_catalog_lines() {
        let root = std::env::temp_dir().join(format!("figures-convert-{}", std::process::id()));
        let runs = root.join("docs/src/results/runs");
        std::fs::create_dir_all(&runs).unwrap();
        std::fs::write(root.join("docs/book.toml"), "").unwrap();
        std::fs::write(
            runs.join("2026-11-21-nvidia-h200-step06.log"),
            "$ cargo run --release -p step06_prefetch\n  speed    45220 GFLOP/s · 88.36% of cuBLAS SGEMM\n",
        )
        .unwrap();
        let log = "results/runs/2026-11-21-nvidia-h200-step06.log";
        let page = root.join("docs/src/step06.md");
        std::fs::write(
            &page,
            format!(
                "[45.2]({log} \"speed +(\\d+) GFLOP/s /1000\") TFLOP/s, [88.4]({log} \"· ([\\d.]+)% of cuBLAS\")% \
                 and [88.4%]({log} \"speed .*· ([\\d.]+)% of cuBLAS SGEMM\"), [88%]({log} \"· ([\\d.]+)%\")\n"
            ),
        )
        .unwrap();
        let repo = Repo::at(&root);
        let mut converter = Converter::new(&repo).unwrap();
        let (text, count) = converter.convert(&page).unwrap();
        assert_eq!(count, 4);
        assert_eq!(
            text,
            "{{#figure h200-step06.tflops}} TFLOP/s, {{#figure h200-step06.share}} and \
             {{#figure h200-step06.share}}, {{#figure h200-step06.share.0dp}}\n"
        );
        assert_eq!(converter.added, 3);
        let catalog = converter.catalog().text();
        assert!(
            catalog.contains(&format!("h200-step06.tflops    | 0.0 /1000 | {log} | speed +(\\d+) GFLOP/s\n")),
            "{catalog}"
        );
        std::fs::write(&page, format!("[88.3%]({log} \"· ([\\d.]+)% of\")\n")).unwrap();
        let errors = converter.convert(&page).unwrap_err();
        assert_eq!(
            errors,
            [format!(
                "docs/src/step06.md:1: the quote says 88.3% but {log} says 88.36: correct the quote before converting it"
            )]
        );
        std::fs::write(&page, "[1](results/runs/gone.log \"(\\d)\")\n[2](../../x.log \"(\\d)\")\n").unwrap();
        let errors = converter.convert(&page).unwrap_err();
        assert!(
            errors[0].starts_with("docs/src/step06.md:1: the record results/runs/gone.log cannot be read"),
            "{errors:?}"
        );
        assert_eq!(errors[1], "docs/src/step06.md:2: the record ../../x.log is not under docs/src");
        std::fs::remove_dir_all(root).unwrap();
    }
}

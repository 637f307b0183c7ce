//! The catalog, `docs/figures.txt`: one line per figure, `ID | FORM | RECORD | SELECTOR`.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use regex::Regex;

use crate::field::{self, Field};
use crate::form::Form;
use crate::record::{self, Picked, Records};

/// The header a new catalog starts with.
pub const HEADER: &str = "\
# The figures the README and the book quote: one line per figure and printed form,
#
#     ID | FORM | RECORD | SELECTOR
#
# A page of the book or docs/readme.md (the README's template) writes {{#figure ID}} where the
# figure goes. The book's preprocessor (the figures crate, run by mdbook) and
# `cargo run -p figures -- readme` (which writes README.md) put there the figure, read from its
# record and printed in its form, as a link to the record.
#
# ID        letters, digits and _ . - : the record, then what the figure is.
# FORM      how it is printed: 0 (a whole number), 0.0, 0.00 (decimals), 0.0% (a percent sign),
#           0.0e0 (scientific notation, decimals of the significand); then, if needed, grouped
#           (digits in threes split by a space; grouped-thin, grouped-nbsp: a thin or a no-break
#           space) and /1000 (the record's value divided by 1000 first: GFLOP/s as TFLOP/s).
#           Fixed forms round half away from zero, scientific ones as Rust's {:e} does.
# RECORD    a results page or a run's log, relative to docs/src/.
# SELECTOR  a regular expression (Rust's regex crate) whose one group is the figure, a whole
#           number, in the record; a space at either end is written \\x20. Or, for a record that
#           keeps the runs' JSON beside it (NAME.json, or NAME.jsonl: one a line), json PATH:
#           the number at that field path, names and positions separated by dots, [KEY=VALUE]
#           picking the first element whose KEY is VALUE (json 0.report.derived.gflops).
#
# After a record is measured again, nothing here changes: the pages follow the record, and
# `cargo run -p figures -- readme` writes README.md again. A selector that no longer matches
# fails the book's build and the tests. A new figure gets its line here, under its record.
";

/// One figure of the catalog.
#[derive(Clone, Debug)]
pub struct FigureEntry {
    pub id: String,
    pub form: Form,
    /// Relative to `docs/src`.
    pub record: String,
    pub selector: Selector,
    /// The line of the catalog it is on (0 for a new entry).
    pub line: usize,
}

/// How a figure is found in its record.
#[derive(Clone, Debug)]
pub enum Selector {
    /// A regular expression over the record's text, whose one group is the figure.
    Text(Regex),
    /// A field of the JSON the record keeps beside it.
    Field(Field),
}

impl Selector {
    /// `json PATH`, or else a regular expression; the error says what is wrong with it.
    pub fn parse(text: &str) -> Result<Selector, String> {
        match text.strip_prefix(field::PREFIX) {
            Some(path) if path.starts_with(' ') => Field::parse(path).map(Selector::Field),
            _ => record::selector(text).map(Selector::Text),
        }
    }

    /// The regular expression, or the field path.
    pub fn as_str(&self) -> &str {
        match self {
            Selector::Text(re) => re.as_str(),
            Selector::Field(f) => f.as_str(),
        }
    }
}

impl FigureEntry {
    /// The figure as the record says it.
    pub fn pick(&self, records: &mut Records) -> Result<Picked, String> {
        match &self.selector {
            Selector::Text(re) => records.pick(&self.record, re),
            Selector::Field(field) => records.pick_field(&self.record, field),
        }
    }

    /// The figure printed in its form.
    pub fn print(&self, records: &mut Records) -> Result<String, String> {
        Ok(self.form.print(self.pick(records)?.value))
    }

    fn line_text(&self, id_width: usize, form_width: usize) -> String {
        let (id, form) = (&self.id, self.form.to_string());
        if let Selector::Field(field) = &self.selector {
            let path = field.as_str();
            return format!(
                "{id:id_width$} | {form:form_width$} | {} | {} {path}",
                self.record,
                field::PREFIX
            );
        }
        let selector = self.selector.as_str();
        let lead = selector.len() - selector.trim_start().len();
        let tail = selector.len() - selector.trim_end().len();
        let core = &selector[lead..selector.len() - tail];
        let selector = format!("{}{core}{}", r"\x20".repeat(lead), r"\x20".repeat(tail));
        format!("{id:id_width$} | {form:form_width$} | {} | {selector}", self.record)
    }
}

/// The catalog's entries, in the order of the file.
#[derive(Clone, Debug, Default)]
pub struct Catalog {
    pub header: String,
    pub entries: Vec<FigureEntry>,
    index: HashMap<String, usize>,
}

/// An id: letters, digits, `_`, `.`, `-`, beginning with a letter or digit.
pub fn is_id(id: &str) -> bool {
    id.starts_with(|c: char| c.is_ascii_alphanumeric())
        && id.chars().all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
}

impl Catalog {
    /// Reads the catalog at `path` (the repository's `docs/figures.txt`, as errors name it).
    pub fn load(path: &Path) -> Result<Catalog, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("the catalog docs/figures.txt cannot be read ({e})"))?;
        Catalog::parse(&text).map_err(|why| format!("docs/figures.txt:{why}"))
    }

    /// Reads a catalog's text; an error begins with the line number.
    pub fn parse(text: &str) -> Result<Catalog, String> {
        let mut catalog = Catalog::default();
        let mut in_header = true;
        for (n, line) in text.lines().enumerate().map(|(i, l)| (i + 1, l)) {
            if line.starts_with('#') || line.trim().is_empty() {
                if in_header {
                    catalog.header.push_str(line);
                    catalog.header.push('\n');
                }
                continue;
            }
            in_header = false;
            let fields: Vec<&str> = line.splitn(4, '|').collect();
            let [id, form, record, selector] = fields[..] else {
                return Err(format!("{n}: the line has not the four fields ID | FORM | RECORD | SELECTOR"));
            };
            let (id, record, selector) = (id.trim(), record.trim(), selector.trim());
            if !is_id(id) {
                return Err(format!("{n}: \"{id}\" is not an id (letters, digits and _ . -)"));
            }
            let form = Form::parse(form).map_err(|why| format!("{n}: {why}"))?;
            if record.is_empty()
                || record.starts_with('/')
                || record.split('/').any(|p| p == ".." || p.is_empty())
            {
                return Err(format!("{n}: \"{record}\" is not a path inside docs/src"));
            }
            let selector = Selector::parse(selector).map_err(|why| format!("{n}: {why}"))?;
            let entry = FigureEntry { id: id.to_owned(), form, record: record.to_owned(), selector, line: n };
            catalog.add(entry).map_err(|why| format!("{n}: {why}"))?;
        }
        if catalog.header.trim().is_empty() {
            catalog.header = HEADER.to_owned();
        }
        Ok(catalog)
    }

    /// The entry of `id`.
    pub fn get(&self, id: &str) -> Option<&FigureEntry> {
        self.index.get(id).map(|&i| &self.entries[i])
    }

    /// Adds an entry whose id is new.
    pub fn add(&mut self, entry: FigureEntry) -> Result<(), String> {
        if let Some(&i) = self.index.get(&entry.id) {
            return Err(format!("the id {} is already on line {}", entry.id, self.entries[i].line));
        }
        self.index.insert(entry.id.clone(), self.entries.len());
        self.entries.push(entry);
        Ok(())
    }

    /// The catalog's text: its header, then the entries by record, columns aligned within
    /// each record.
    pub fn text(&self) -> String {
        let mut by_record: BTreeMap<&str, Vec<&FigureEntry>> = BTreeMap::new();
        for entry in &self.entries {
            by_record.entry(&entry.record).or_default().push(entry);
        }
        let mut text = self.header.trim_end().to_owned();
        text.push('\n');
        for entries in by_record.values_mut() {
            entries.sort_by(|a, b| a.id.cmp(&b.id));
            let id_width = entries.iter().map(|e| e.id.len()).max().unwrap_or(0);
            let form_width = entries.iter().map(|e| e.form.to_string().len()).max().unwrap_or(0);
            text.push('\n');
            for entry in entries {
                text.push_str(&entry.line_text(id_width, form_width));
                text.push('\n');
            }
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_catalog_reads_back_what_it_writes() {
        let text = "# a header\n\n\
            a.share | 0.0%      | runs/a.log | · ([\\d.]+)% of\n\
            a.tflops | 0.0 /1000 | runs/a.log | \\x20speed +(\\d+)\\x20\n\
            b.x | 0 grouped | b.md | \\| x \\| (\\d+)\n\
            c.wall | 0.0 | runs/c.log | json [command=step01 --size 256].wall_s\n";
        let catalog = Catalog::parse(text).unwrap();
        assert_eq!(catalog.entries.len(), 4);
        assert!(
            matches!(&catalog.get("c.wall").unwrap().selector, Selector::Field(f) if f.as_str() == "[command=step01 --size 256].wall_s")
        );
        assert_eq!(catalog.get("a.tflops").unwrap().selector.as_str(), r"\x20speed +(\d+)\x20");
        assert_eq!(catalog.get("b.x").unwrap().selector.as_str(), r"\| x \| (\d+)");
        assert_eq!(catalog.get("b.x").unwrap().line, 5);
        let written = catalog.text();
        assert!(written.starts_with("# a header\n\n"), "{written}");
        assert!(written.contains("a.share  | 0.0%      | runs/a.log | · ([\\d.]+)% of\n"), "{written}");
        let again = Catalog::parse(&written).unwrap();
        assert_eq!(again.text(), written);
    }

    #[test]
    fn a_wrong_line_is_named_in_one_sentence() {
        let err = |text: &str| Catalog::parse(text).unwrap_err();
        assert!(err("a | 0 | r.log\n").starts_with("1: the line has not the four fields"));
        assert!(err("a b | 0 | r.log | (x)\n").contains("is not an id"));
        assert!(err("a | 0.x | r.log | (x)\n").contains("is not a picture"));
        assert!(err("a | 0 | ../r.log | (x)\n").contains("not a path inside docs/src"));
        assert!(err("a | 0 | r.log | x\n").contains("exactly one group"));
        assert!(err("a | 0 | r.log | (x\n").contains("not a regular expression"));
        assert!(err("a | 0 | r.log | json a..b\n").contains("an empty field"));
        assert!(
            err("# h\na | 0 | r.log | (x)\na | 0 | s.log | (y)\n")
                .starts_with("3: the id a is already on line 2")
        );
    }

    #[test]
    fn a_new_catalog_gets_the_header() {
        assert_eq!(Catalog::parse("").unwrap().header, HEADER);
        assert!(HEADER.lines().all(|l| l.starts_with('#')));
    }
}

//! Records (a results page, a run's log) and the figure a selector picks out of one.

use std::collections::HashMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use regex::Regex;

use crate::field::Field;

/// A figure as its record says it.
#[derive(Clone, Debug, PartialEq)]
pub struct Picked {
    /// The number, as written in the record (before any divisor).
    pub value: f64,
    /// The text it was read from.
    pub text: String,
    /// Where that text is in the record (empty for a field of its JSON).
    pub span: Range<usize>,
}

/// The records under one folder (the book's `docs/src`), each read once.
pub struct Records {
    root: PathBuf,
    texts: HashMap<String, Result<String, String>>,
    /// The JSON beside each record, read once.
    jsons: HashMap<String, Result<serde_json::Value, String>>,
}

impl Records {
    /// Records whose paths are relative to `root`.
    pub fn new(root: &Path) -> Records {
        Records { root: root.to_owned(), texts: HashMap::new(), jsons: HashMap::new() }
    }

    /// The folder the records' paths are relative to.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The text of the record at `path` (relative to the root).
    pub fn text(&mut self, path: &str) -> Result<&str, String> {
        let root = &self.root;
        let text = self.texts.entry(path.to_owned()).or_insert_with(|| {
            std::fs::read_to_string(root.join(path))
                .map_err(|e| format!("the record {path} cannot be read ({e})"))
        });
        text.as_deref().map_err(Clone::clone)
    }

    /// The figure `selector`'s one group picks out of the record at `path`.
    pub fn pick(&mut self, path: &str, selector: &Regex) -> Result<Picked, String> {
        pick(self.text(path)?, selector).map_err(|why| format!("{why} in {path}"))
    }

    /// The figure at `field` in the JSON beside the record at `path`.
    pub fn pick_field(&mut self, path: &str, field: &Field) -> Result<Picked, String> {
        let root = &self.root;
        let json = self.jsons.entry(path.to_owned()).or_insert_with(|| crate::field::sibling(root, path));
        let json = json.as_ref().map_err(Clone::clone)?;
        let value =
            field.pick(json).map_err(|why| format!("{why} (json {}) beside {path}", field.as_str()))?;
        Ok(Picked { value, text: value.to_string(), span: 0..0 })
    }
}

/// The figure `selector`'s one group picks out of `text`; the error names what went wrong
/// (the caller adds where).
pub fn pick(text: &str, selector: &Regex) -> Result<Picked, String> {
    let Some(found) = selector.captures(text) else {
        return Err(format!("\"{selector}\" matches nothing"));
    };
    let Some(group) = found.get(1) else {
        return Err(format!("\"{selector}\" matches, but its group takes nothing"));
    };
    // A group that starts or stops inside a number would read a part of it.
    if text[..group.start()].ends_with(|c: char| c.is_ascii_digit() || c == '.')
        && group.start() < group.end()
    {
        let line_start = text[..group.start()].rfind(char::is_whitespace).map_or(0, |i| i + 1);
        let whole = text[line_start..].split_whitespace().next().unwrap_or_default();
        return Err(format!("\"{selector}\" takes only part of the number {whole}"));
    }
    let rest = &text[group.end()..];
    let more = rest.strip_prefix('.').unwrap_or(rest);
    if group.start() < group.end() && more.starts_with(|c: char| c.is_ascii_digit()) {
        let whole = text[group.start()..].split_whitespace().next().unwrap_or_default();
        return Err(format!("\"{selector}\" takes only part of the number {whole}"));
    }
    // Digits may be grouped by narrow no-break or thin spaces (2 684 354 560).
    let digits: String = group.as_str().chars().filter(|c| !matches!(c, '\u{202f}' | '\u{2009}')).collect();
    let Ok(value) = digits.trim().trim_end_matches('%').parse::<f64>() else {
        return Err(format!("\"{}\" (what \"{selector}\" takes) is not a number", group.as_str()));
    };
    Ok(Picked { value, text: group.as_str().to_owned(), span: group.range() })
}

/// A selector: a regular expression with exactly one group.
pub fn selector(pattern: &str) -> Result<Regex, String> {
    match Regex::new(pattern) {
        Ok(re) if re.captures_len() == 2 => Ok(re),
        Ok(_) => Err(format!("the selector \"{pattern}\" must have exactly one group (…) around the figure")),
        Err(_) => Err(format!("the selector \"{pattern}\" is not a regular expression")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_selector_picks_one_whole_number() {
        let log =
            "  speed    45220 GFLOP/s · 88.36% of cuBLAS\n    normwise PASS · ‖ΔC‖/‖C‖ = 2.6e-7, limit\n";
        let p = |s: &str| pick(log, &selector(s).unwrap());
        assert_eq!(p(r"· ([\d.]+)% of").unwrap().value, 88.36);
        assert_eq!(p(r"speed +(\d+) GFLOP").unwrap().text, "45220");
        assert_eq!(p(r"‖ΔC‖/‖C‖ = ([\d.e-]+),").unwrap().value, 2.6e-7);
        assert!(p(r"nothing (\d)").unwrap_err().contains("matches nothing"));
        assert!(p(r"· (\d+)").unwrap_err().contains("only part of the number 88.36%"));
        assert!(p(r"speed +(\d)").unwrap_err().contains("only part of the number 45220"));
        assert!(p(r"speed +4(\d+) GFLOP").unwrap_err().contains("only part of the number 45220"));
        assert!(p(r"(GFLOP)").unwrap_err().contains("is not a number"));
        assert!(selector(r"speed \d+").unwrap_err().contains("exactly one group"));
        assert!(selector(r"(a)(b)").unwrap_err().contains("exactly one group"));
        assert!(selector(r"(").unwrap_err().contains("not a regular expression"));
    }

    #[test]
    fn a_missing_record_is_named() {
        let mut records = Records::new(Path::new("/nonexistent-folder"));
        let err = records.pick("runs/gone.log", &selector(r"(\d)").unwrap()).unwrap_err();
        assert!(err.starts_with("the record runs/gone.log cannot be read"), "{err}");
    }
}

//! Quotes of the old form, a link whose title was a regular expression,
//!
//! ```text
//! [88.4%](results/runs/2026-11-21-h200-step06.log "speed .*· ([\d.]+)% of cuBLAS")
//! ```
//!
//! which pages no longer use: every figure is a reference, `{{#figure ID}}`, with its line in
//! the catalog. The tests find any quote of the old form that comes back.

use std::ops::Range;
use std::sync::LazyLock;

use regex::Regex;

use crate::form::Form;

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

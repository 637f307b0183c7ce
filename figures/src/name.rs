//! A readable id for a new figure: the record, then what the selector says the figure is.
//!
//! `h200.step06_prefetch.4096.share` is the share of cuBLAS in the compare page's row
//! step06_prefetch, column 4096³; `h200-split.step09_3xtf32.4096.gflops` is the speed line of the
//! run `-p step09_3xtf32 -- --size 4096` in the split log. The id is made once, when a quote is
//! converted, and kept: it is a name, not a formula, and later edits of the selector leave it.

use std::ops::Range;

use crate::form::Form;

/// A part of a selector, as far as naming is concerned.
#[derive(Clone, Debug, PartialEq)]
enum Tok {
    /// A character the figure's surroundings must have.
    Lit(char),
    /// Any text on the same line.
    Wild,
    /// Lines skipped: a new part of the context.
    Gap,
    /// Table cells skipped.
    Skip,
    /// The figure.
    Value,
}

/// Reads `selector` into tokens; what naming does not need is read as `Wild`.
fn tokens(selector: &str) -> Vec<Tok> {
    let chars: Vec<char> = selector.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        match c {
            '\\' if i < chars.len() => {
                let e = chars[i];
                i += 1;
                match e {
                    'x' if i + 1 < chars.len() => {
                        let hex: String = chars[i..i + 2].iter().collect();
                        i += 2;
                        out.push(
                            u32::from_str_radix(&hex, 16)
                                .ok()
                                .and_then(char::from_u32)
                                .map_or(Tok::Wild, Tok::Lit),
                        );
                    }
                    'n' => out.push(Tok::Gap),
                    'd' | 'D' | 's' | 'S' | 'w' | 'W' => out.push(Tok::Wild),
                    'b' | 'B' => {}
                    _ => out.push(Tok::Lit(e)),
                }
            }
            '[' => {
                // A class: to its closing bracket (a first `]` or `^]` is part of it).
                let mut j = i;
                if chars.get(j) == Some(&'^') {
                    j += 1;
                }
                if chars.get(j) == Some(&']') {
                    j += 1;
                }
                while j < chars.len() && chars[j] != ']' {
                    j += if chars[j] == '\\' { 2 } else { 1 };
                }
                i = j + 1;
                out.push(Tok::Wild);
            }
            '(' => {
                let end = closing(&chars, i - 1);
                let inner: String = chars[i..end].iter().collect();
                i = end + 1;
                if let Some(inner) = inner.strip_prefix("?:") {
                    let inside = tokens(inner);
                    if inside.contains(&Tok::Gap) {
                        out.push(Tok::Gap);
                    } else if inside.contains(&Tok::Lit('|')) {
                        out.push(Tok::Skip);
                    } else {
                        out.push(Tok::Wild);
                    }
                } else if inner.starts_with('?') {
                    out.push(Tok::Wild);
                } else {
                    out.push(Tok::Value);
                }
            }
            // A lone `.` stands, in these selectors, for the dot of a name: `lts__t_bytes.sum`.
            '.' if !matches!(chars.get(i), Some('*' | '+' | '?' | '{')) => out.push(Tok::Lit('.')),
            '.' => out.push(Tok::Wild),
            '*' | '+' | '?' => {
                // A repeated character is still that character; a repeated newline is a gap.
                if matches!(out.last(), Some(Tok::Lit(c)) if *c != ' ') && c != '+' {
                    out.pop();
                    out.push(Tok::Wild);
                }
            }
            '{' => {
                while i < chars.len() && chars[i - 1] != '}' {
                    i += 1;
                }
            }
            '^' | '$' => {}
            '|' => out.push(Tok::Wild),
            _ => out.push(Tok::Lit(c)),
        }
    }
    out
}

/// The index of the parenthesis that closes the one at `open`.
fn closing(chars: &[char], open: usize) -> usize {
    let (mut depth, mut j, mut in_class) = (0, open, false);
    while j < chars.len() {
        match chars[j] {
            '\\' => j += 1,
            '[' if !in_class => in_class = true,
            ']' if in_class => in_class = false,
            '(' if !in_class => depth += 1,
            ')' if !in_class => {
                depth -= 1;
                if depth == 0 {
                    return j;
                }
            }
            _ => {}
        }
        j += 1;
    }
    chars.len()
}

/// Text of literal tokens, wildcards read as a space.
fn text_of(toks: &[Tok]) -> String {
    let mut s = String::new();
    for t in toks {
        match t {
            Tok::Lit(c) => s.push(*c),
            _ => s.push(' '),
        }
    }
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The short name of a record: its file name without the date, the vendor and the extension.
pub fn record_key(record: &str) -> String {
    let file = record.rsplit('/').next().unwrap_or(record);
    let stem = file.rsplit_once('.').map_or(file, |(s, _)| s);
    let b = stem.as_bytes();
    let dated = b.len() > 11
        && b[..10]
            .iter()
            .enumerate()
            .all(|(i, c)| if i == 4 || i == 7 { *c == b'-' } else { c.is_ascii_digit() })
        && b[10] == b'-';
    let stem = if dated { &stem[11..] } else { stem };
    let stem = stem.strip_prefix("nvidia-").unwrap_or(stem);
    let stem = stem.replace("h100-80gb-hbm3", "h100");
    slug(&stem, false)
}

/// Lower case, letters, digits and `_`; any other run of characters becomes one `-` (a `.`
/// inside a word stays when `dots` is set, as in counter names).
fn slug(text: &str, dots: bool) -> String {
    let text = text.replace('×', "x").replace('³', "").replace('µ', "u");
    let mut out = String::new();
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        let keep_dot = dots
            && c == '.'
            && i > 0
            && chars[i - 1].is_ascii_alphanumeric()
            && chars.get(i + 1).is_some_and(|n| n.is_ascii_alphanumeric());
        if c.is_ascii_alphanumeric() || c == '_' || keep_dot {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_end_matches('-').to_owned()
}

/// A command line or a heading, in a few words: `-p step09_3xtf32 -- --size 4096` is
/// `step09_3xtf32-4096`, `--param SHARE=0` is `share0`, `--kernel cand/s6_fast.cu` is `s6_fast`.
fn context(text: &str) -> String {
    let words: Vec<&str> = text.split_whitespace().collect();
    let (mut parts, mut mnk) = (Vec::new(), Vec::new());
    let mut i = 0;
    while i < words.len() {
        let w = words[i];
        let next = words.get(i + 1).copied();
        i += 1;
        match w {
            "cargo" | "run" if next == Some("run") || next == Some("--release") => {}
            "run" if next.is_some_and(|n| n.parse::<u32>().is_ok()) => {
                parts.push(format!("run{}", next.unwrap()));
                i += 1;
            }
            "-m" | "-n" | "-k" if next.is_some() => {
                mnk.push((w[1..].to_owned(), next.unwrap().to_owned()));
                i += 1;
            }
            "--reps" if next.is_some() => i += 1,
            _ if w.ends_with('=') => {}
            "--size" | "size" | "-p" | "--param" | "--kernel" | "--stage" | "--arch" => {}
            _ if w.chars().all(|c| !c.is_alphanumeric()) => {}
            _ if w.ends_with(".cu") => {
                let file = w.rsplit('/').next().unwrap_or(w);
                parts.push(slug(file.trim_end_matches(".cu"), false));
            }
            _ if w.contains('/') && !w.contains("//") => {
                parts.extend(w.split('/').filter(|p| !p.is_empty() && *p != "matmul").map(|p| slug(p, true)));
            }
            _ => parts.push(slug(&w.replace('=', ""), true)),
        }
    }
    if !mnk.is_empty() {
        if mnk.len() == 3 && mnk.iter().all(|(_, v)| *v == mnk[0].1) {
            parts.push(mnk[0].1.clone());
        } else {
            parts.push(mnk.iter().map(|(k, v)| format!("{k}{v}")).collect::<Vec<_>>().join("-"));
        }
    }
    parts.retain(|p| !p.is_empty());
    parts.join("-")
}

/// What the report's lines call a figure, by the words around it.
fn phrase(before: &str, after: &str) -> Option<&'static str> {
    let b = before.trim_end();
    let a = after.trim_start();
    let known: &[(&str, &str, &str)] = &[
        ("", "% of cuBLAS SGEMM", "share-sgemm"),
        ("", "% of cuBLAS TF32", "share-tf32"),
        ("", "% of cuBLAS", "share"),
        ("", "% of a third of TF32 peak", "third-tf32-peak"),
        ("", "% of TF32 peak", "tf32-peak"),
        ("", "% of FP32 peak", "fp32-peak"),
        ("SGEMM (", "GFLOP/s", "sgemm-gflops"),
        ("TF32 (", "GFLOP/s", "tf32-gflops"),
        ("GFLOP/s,", "ms)", "sgemm-ms"),
        ("GFLOP/s ·", "%", "share"),
        ("", "GFLOP/s", "gflops"),
        ("time", "ms", "ms"),
        ("", "registers", "registers"),
        ("resident blocks/SM:", "", "blocks-per-sm"),
        ("occupancy", "%", "occupancy"),
        ("‖ΔC‖/‖C‖ =", "", "normwise"),
        ("cuBLAS SGEMM", "·", "sgemm-normwise"),
        ("cuBLAS TF32", "", "tf32-normwise"),
        ("limit", "", "limit"),
        ("speed", "", "gflops"),
        ("hot loop :", "instructions", "hot-loop.instructions"),
        ("instructions,", "of them", "hot-loop.ffma"),
        ("hot loop (", "%)", "hot-loop.ffma-share"),
    ];
    known.iter().find(|(kb, ka, _)| b.ends_with(kb) && a.starts_with(ka)).map(|(_, _, name)| *name)
}

/// Words that say nothing in a name.
const FILLER: &[&str] = &["the", "is", "at", "of", "a", "an", "to", "in", "and", "it", "its", "them", "with"];

/// A few words around the figure, for a line no phrase knows.
fn words_around(before: &str, after: &str) -> String {
    let pick = |text: &str| -> Vec<String> {
        text.split_whitespace()
            .filter(|w| !FILLER.contains(&w.to_lowercase().as_str()))
            .map(|w| slug(w, true))
            .filter(|w| !w.is_empty() && w.parse::<f64>().is_err())
            .collect()
    };
    let b = pick(before);
    let a = pick(after);
    let mut parts: Vec<String> = b[b.len().saturating_sub(3)..].to_vec();
    parts.extend(a.into_iter().take(if parts.is_empty() { 3 } else { 1 }));
    parts.join("-")
}

/// Whether a word names the thing measured (a step, a parameter, a shape) rather than the
/// quantity.
fn is_subject(word: &str) -> bool {
    word.contains('=')
        || word.starts_with("step")
        || word.contains('×')
        || (word.starts_with("cublas_") && word.len() > 7)
        || (word.contains('/') && (word.contains("step") || word.contains("cublas")))
}

/// The unit a figure is in, and how its divisor renames it.
fn scaled(unit: &str, divisor: u64) -> String {
    let named = match (unit, divisor) {
        ("gflops", 1000) => "tflops",
        ("gb-s", 1000) => "tb-s",
        ("ns", 1000) => "us",
        ("ns", 1_000_000) => "ms",
        ("us", 1000) => "ms",
        ("byte" | "bytes", 1000) => "kb",
        ("byte" | "bytes", 1_000_000) => "mb",
        ("byte" | "bytes", 1_000_000_000) => "gb",
        _ => return format!("{unit}-per{divisor}").trim_start_matches('-').to_owned(),
    };
    named.to_owned()
}

/// Cells of a Markdown table row, without the outer bars.
fn cells(line: &str) -> Vec<&str> {
    let inner = line.trim().trim_start_matches('|').trim_end_matches('|');
    inner.split('|').map(str::trim).collect()
}

/// The parts of a name for a figure in a Markdown table of the record: the row's named cells,
/// the column's header, and what the figure is within its cell.
fn table_parts(value_seg: &[Tok], record: &str, span: &Range<usize>, divisor: Option<u64>) -> Vec<String> {
    let mut parts = Vec::new();
    // The row: the cells the selector names, words not numbers.
    let text = text_of(&value_seg[..value_seg.iter().position(|t| *t == Tok::Value).unwrap_or(0)]);
    let named: Vec<&str> = text.split('|').map(str::trim).collect();
    let last = named.len().saturating_sub(1);
    for cell in &named[..last] {
        if !cell.is_empty() && cell.parse::<f64>().is_err() && *cell != "-" {
            let cell = cell.trim_start_matches('#').trim();
            parts.push(slug(cell, true));
        }
    }
    // The column: the table's header over the figure's cell.
    let line_start = record[..span.start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = record[span.start..].find('\n').map_or(record.len(), |i| span.start + i);
    let line = &record[line_start..line_end];
    let column = record[line_start..span.start].matches('|').count().saturating_sub(1);
    let above: Vec<&str> =
        record[..line_start].lines().rev().take_while(|l| l.trim_start().starts_with('|')).collect();
    let header = above.last().map(|h| cells(h)).unwrap_or_default();
    let head = header.get(column).copied().unwrap_or("");
    let row = cells(line);
    let unit_cell = header.iter().position(|h| *h == "unit").and_then(|i| row.get(i)).copied();
    let compare_page = header.first() == Some(&"step") && head.ends_with('³');
    if !matches!(head, "value" | "") {
        parts.push(slug(head, true));
    }
    // The figure within its cell: the first number, or one in parentheses.
    let cell_start = line_start + line[..span.start - line_start].rfind('|').map_or(0, |i| i + 1);
    let in_parens = record[cell_start..span.start].contains('(');
    let after = &record[span.end..line_end];
    let mut unit = if in_parens && after.starts_with('%') {
        "share".to_owned()
    } else if in_parens {
        after.split_whitespace().next().map_or("paren".to_owned(), |u| slug(u, false))
    } else if compare_page {
        "gflops".to_owned()
    } else if divisor.is_some() {
        unit_cell.map(|u| slug(u, false)).unwrap_or_default()
    } else {
        String::new()
    };
    if let Some(d) = divisor {
        unit = scaled(&unit, d);
    }
    if !unit.is_empty() && (unit != "share" || !parts.last().is_some_and(|p| p.ends_with("share"))) {
        parts.push(unit);
    }
    parts
}

/// The name of a figure in a record other than a Markdown table: the words of the line around
/// it, or the header of its column in the tuner's ranking.
fn line_parts(value_seg: &[Tok], record: &str, span: &Range<usize>, divisor: Option<u64>) -> Vec<String> {
    let at = value_seg.iter().position(|t| *t == Tok::Value).unwrap_or(value_seg.len());
    let before = text_of(&value_seg[..at]);
    let after = text_of(value_seg.get(at + 1..).unwrap_or(&[]));
    let mut parts = Vec::new();
    let subject: Vec<&str> = before.split_whitespace().filter(|w| is_subject(w)).collect();
    if !subject.is_empty() {
        parts.push(context(&subject.join(" ")));
    }
    let label: Vec<&str> = before
        .split_whitespace()
        .filter(|w| !is_subject(w) && !w.chars().all(|c| !c.is_alphanumeric()))
        .collect();
    let label = label.join(" ");
    let first_after = after.split_whitespace().next().map(|u| slug(u, false)).unwrap_or_default();
    let mut quantity = if before.contains("time: [") {
        // criterion's estimate: [low median high].
        format!("time-{first_after}")
    } else {
        phrase(&before, &after)
            .map(|p| {
                // A bare unit after a sentence's own words ("The FP32 peak is") keeps them.
                let words: Vec<&str> = label
                    .split_whitespace()
                    .filter(|w| !FILLER.contains(&w.to_lowercase().as_str()))
                    .collect();
                let report = words.iter().all(|w| ["speed", "time", "kernel"].contains(w));
                if ["gflops", "ms", "registers"].contains(&p) && !words.is_empty() && !report {
                    format!("{}.{p}", slug(&words.join(" "), false))
                } else {
                    p.to_owned()
                }
            })
            .or_else(|| {
                let column = aligned_header(record, span)?;
                // The tuner's rank, when the selector names it.
                if let Some(rank) = label.split_whitespace().next().filter(|w| w.parse::<u32>().is_ok()) {
                    parts.insert(0, format!("rank{rank}"));
                }
                Some(column)
            })
            .unwrap_or_else(|| words_around(&label, &after))
    };
    if quantity.is_empty() {
        quantity = if after.starts_with('%') { "pct" } else { "value" }.to_owned();
    }
    if let Some(d) = divisor {
        let unit = if quantity.ends_with("gflops") { "gflops".to_owned() } else { first_after };
        let renamed = scaled(&unit, d);
        quantity = if quantity.ends_with(&unit) && !unit.is_empty() {
            format!("{}{renamed}", &quantity[..quantity.len() - unit.len()])
        } else {
            format!("{quantity}-{renamed}")
        };
    }
    parts.push(quantity);
    parts
}

/// In the tuner's ranking in a log (a table whose header begins with `rank`), the header of the figure's column: `ms`,
/// `GFLOP/s`, `%cuBLAS`. Columns are counted from the right, since the parameters on the left
/// may be wider than their header.
fn aligned_header(record: &str, span: &Range<usize>) -> Option<String> {
    let line_start = record[..span.start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = record[span.end..].find('\n').map_or(record.len(), |i| span.end + i);
    let fields_after = record[span.end..line_end].split_whitespace().count();
    let header = record[..line_start].lines().rev().take_while(|l| !l.trim().is_empty()).find(|l| {
        l.split_whitespace().all(|w| w.chars().any(|c| c.is_ascii_alphabetic()) && !w.contains('='))
    })?;
    let words: Vec<&str> = header.split_whitespace().collect();
    if words.first() != Some(&"rank") || fields_after >= words.len() {
        return None;
    }
    Some(match words[words.len() - 1 - fields_after] {
        "GFLOP/s" => "gflops".to_owned(),
        "%cuBLAS" => "share".to_owned(),
        "blk/SM" => "blocks-per-sm".to_owned(),
        w => slug(w, false),
    })
}

/// A name for the figure `selector` picks at `span` of `record_text`, the record at `record`,
/// printed in `form`: the record's key, the context (the run, the section) and the figure.
pub fn suggest(record: &str, record_text: &str, selector: &str, span: &Range<usize>, form: &Form) -> String {
    let toks = tokens(selector);
    let segments: Vec<&[Tok]> = toks
        .split(|t| *t == Tok::Gap)
        .filter(|s| !text_of(s).is_empty() || s.contains(&Tok::Value))
        .collect();
    let at = segments.iter().position(|s| s.contains(&Tok::Value)).unwrap_or(0);
    let mut parts = vec![record_key(record)];
    let mut seen: Vec<String> = Vec::new();
    for seg in &segments[..at] {
        let text = text_of(seg);
        let part = context(text.trim_start_matches('#'));
        if part.is_empty() {
            continue;
        }
        if seen.contains(&part) {
            parts.push("again".to_owned());
        } else {
            seen.push(part.clone());
            parts.push(part);
        }
    }
    let value_seg = segments.get(at).copied().unwrap_or(&[]);
    let line_start = record_text[..span.start].rfind('\n').map_or(0, |i| i + 1);
    let in_table = record_text[line_start..].trim_start().starts_with('|');
    parts.extend(if in_table {
        table_parts(value_seg, record_text, span, form.divisor)
    } else {
        line_parts(value_seg, record_text, span, form.divisor)
    });
    // A trailing context after the figure (a line below it) names it further.
    for seg in segments.iter().skip(at + 1) {
        let part = context(&text_of(seg));
        if !part.is_empty() {
            parts.push(part);
        }
    }
    parts.retain(|p| !p.is_empty());
    parts.join(".")
}

/// A suffix that tells apart two forms of one figure: `0dp`, `1dp`, `plain`, `sci`, `pct`.
pub fn form_suffix(form: &Form, other: &Form) -> String {
    let mut parts = Vec::new();
    if form.scientific != other.scientific {
        parts.push(if form.scientific { "sci".to_owned() } else { "fixed".to_owned() });
    }
    if form.decimals != other.decimals {
        parts.push(format!("{}dp", form.decimals));
    }
    if form.group != other.group {
        parts.push(if form.group.is_some() { "grouped".to_owned() } else { "plain".to_owned() });
    }
    if form.percent != other.percent {
        parts.push(if form.percent { "pct".to_owned() } else { "bare".to_owned() });
    }
    parts.join("-")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(record: &str, text: &str, selector: &str, quote: &str, divisor: Option<u64>) -> String {
        let re = crate::record::selector(selector).unwrap();
        let picked = crate::record::pick(text, &re).unwrap();
        suggest(record, text, selector, &picked.span, &Form::of_quote(quote, divisor).unwrap())
    }

    #[test]
    fn records_have_short_keys() {
        assert_eq!(record_key("results/nvidia-h200.md"), "h200");
        assert_eq!(record_key("results/nvidia-h100-80gb-hbm3.md"), "h100");
        assert_eq!(record_key("results/runs/2026-11-21-nvidia-h200-split.log"), "h200-split");
        assert_eq!(
            record_key("results/runs/2026-11-21-compile-only-nvrtc-13.0.log"),
            "compile-only-nvrtc-13-0"
        );
        assert_eq!(record_key("results/profiles-h200.md"), "profiles-h200");
    }

    #[test]
    fn a_compare_table_names_row_column_and_share() {
        let page = "| step | 256³ | 4096³ |\n| --- | ---: | ---: |\n| step06_prefetch | 659 (16.1%) | 46832 (91.8%) |\n";
        let sel = r"step06_prefetch \x7c (?:[^\x7c]*\x7c ){1}(\d+)";
        assert_eq!(
            name("results/nvidia-h200.md", page, sel, "46 832", None),
            "h200.step06_prefetch.4096.gflops"
        );
        assert_eq!(
            name("results/nvidia-h200.md", page, sel, "46.8", Some(1000)),
            "h200.step06_prefetch.4096.tflops"
        );
        let sel = r"step06_prefetch \x7c (?:[^\x7c]*\x7c ){1}\d+ \(([\d.]+)%";
        assert_eq!(
            name("results/nvidia-h200.md", page, sel, "91.8%", None),
            "h200.step06_prefetch.4096.share"
        );
    }

    #[test]
    fn a_profile_names_section_and_counter() {
        let page = "## step06_prefetch\n\n| counter | value | unit |\n| --- | ---: | --- |\n\
                    | gpu__time_duration.sum | 3050000 | ns |\n| lts__t_sector_hit_rate.pct | 81.34 | % |\n";
        let sel = r"## step06_prefetch\n(?:.*\n)*?\x7c gpu__time_duration.sum \x7c (\d+)";
        assert_eq!(
            name("results/profiles-h200.md", page, sel, "3.05", Some(1_000_000)),
            "profiles-h200.step06_prefetch.gpu__time_duration.sum.ms"
        );
        let sel = r"## step06_prefetch\n(?:.*\n)*?\x7c lts__t_sector_hit_rate.pct \x7c ([\d.]+)";
        assert_eq!(
            name("results/profiles-h200.md", page, sel, "81.34", None),
            "profiles-h200.step06_prefetch.lts__t_sector_hit_rate.pct"
        );
    }

    #[test]
    fn a_run_names_its_command_and_line() {
        let log = "$ cargo run --release -p step09_3xtf32 -- --size 4096\n  time     1.2 ms\n  \
                   speed    113472 GFLOP/s · 220.9% of cuBLAS SGEMM (51362 GFLOP/s, 2.6 ms) · 63.6% of a third of TF32 peak\n";
        let run = "results/runs/2026-11-21-nvidia-h200-split.log";
        let ctx = r"-p step09_3xtf32 -- --size 4096\n(?:.*\n)*?";
        assert_eq!(
            name(run, log, &format!(r"{ctx}  speed +(\d+) GFLOP/s"), "113 472", None),
            "h200-split.step09_3xtf32-4096.gflops"
        );
        assert_eq!(
            name(run, log, &format!(r"{ctx}  speed +(\d+) GFLOP/s"), "113.5", Some(1000)),
            "h200-split.step09_3xtf32-4096.tflops"
        );
        assert_eq!(
            name(run, log, &format!(r"{ctx}  speed .*· ([\d.]+)% of cuBLAS SGEMM"), "220.9%", None),
            "h200-split.step09_3xtf32-4096.share-sgemm"
        );
        assert_eq!(
            name(run, log, &format!(r"{ctx}  speed .*SGEMM \((\d+) GFLOP/s"), "51 362", None),
            "h200-split.step09_3xtf32-4096.sgemm-gflops"
        );
        assert_eq!(
            name(run, log, &format!(r"{ctx}  time +([\d.]+) ms"), "1.2", None),
            "h200-split.step09_3xtf32-4096.ms"
        );
        let again = r"-p step09_3xtf32\n(?:.*\n)*?.*-p step09_3xtf32\n(?:.*\n)*?  time +([\d.]+) ms";
        let log2 = format!("$ cargo run --release -p step09_3xtf32\n  time  1.0 ms\n{log}");
        let log2 = log2.replace(" -- --size 4096", "");
        assert_eq!(name(run, &log2, again, "1.2", None), "h200-split.step09_3xtf32.again.ms");
    }

    #[test]
    fn a_tuner_table_names_the_column() {
        let log = "rank  parameters                            regs      smem  blk/SM         ms    GFLOP/s  %cuBLAS  verify\n   \
                   1  TILE=32 UNROLL=32 BT=0 PAD=0            32      8192       2     15.629       8794     17.2  PASS\n";
        let sel = r"TILE=32 UNROLL=32 BT=0 PAD=0 +\d+ +\d+ +\d+ +([\d.]+)";
        let run = "results/runs/2026-11-21-nvidia-h200-tiles.log";
        assert_eq!(name(run, log, sel, "15.63", None), "h200-tiles.tile32-unroll32-bt0-pad0.ms");
        let sel = r"TILE=32 UNROLL=32 BT=0 PAD=0 +\d+ +\d+ +\d+ +[\d.]+ +(\d+)";
        assert_eq!(name(run, log, sel, "8.8", Some(1000)), "h200-tiles.tile32-unroll32-bt0-pad0.tflops");
    }

    #[test]
    fn a_sentence_keeps_its_words() {
        let page =
            "The FP32 peak is 66908 GFLOP/s (SMs × lanes).\nThe DRAM bandwidth is 3930 GB/s, measured.\n";
        let h200 = "results/nvidia-h200.md";
        assert_eq!(
            name(h200, page, r"The FP32 peak is (\d+) GFLOP/s", "66 908", None),
            "h200.fp32-peak.gflops"
        );
        assert_eq!(
            name(h200, page, r"The FP32 peak is (\d+) GFLOP/s", "66.9", Some(1000)),
            "h200.fp32-peak.tflops"
        );
        assert_eq!(
            name(h200, page, r"The DRAM bandwidth is (\d+) GB/s", "3 930", None),
            "h200.dram-bandwidth-gb-s"
        );
        assert_eq!(
            name(h200, page, r"The DRAM bandwidth is (\d+) GB/s", "3.9", Some(1000)),
            "h200.dram-bandwidth-tb-s"
        );
    }

    #[test]
    fn a_disassembly_names_the_hot_loop() {
        let log = "== step06_prefetch --compile-only\nhot loop (instructions 245 to 1531): 1287 instructions, \
                   1024 of them FFMA/HMMA/HGMMA (79.6%)\n   64  LDS.128\n";
        let sass = "results/runs/2026-11-21-sass-sm_90.log";
        let ctx = r"step06_prefetch --(?:.*\n)*?";
        let hot = |sel: &str, quote: &str| name(sass, log, &format!("{ctx}{sel}"), quote, None);
        assert_eq!(
            hot(r"hot loop [^:]*: (\d+) instructions", "1287"),
            "sass-sm_90.step06_prefetch.hot-loop.instructions"
        );
        assert_eq!(
            hot(r"hot loop [^:]*: \d+ instructions, (\d+) of them", "1024"),
            "sass-sm_90.step06_prefetch.hot-loop.ffma"
        );
        assert_eq!(
            hot(r"hot loop .*\(([\d.]+)%\)", "79.6%"),
            "sass-sm_90.step06_prefetch.hot-loop.ffma-share"
        );
        assert_eq!(
            hot(r"hot loop (?:.*\n)*? +(\d+)  LDS.128", "64"),
            "sass-sm_90.step06_prefetch.hot-loop.lds.128"
        );
    }

    #[test]
    fn forms_of_one_figure_are_told_apart() {
        let f = |q: &str| Form::of_quote(q, None).unwrap();
        assert_eq!(form_suffix(&f("81%"), &f("81.2%")), "0dp");
        assert_eq!(form_suffix(&f("41420"), &f("41 420")), "plain");
        assert_eq!(form_suffix(&f("2.6"), &f("2.6e0")), "fixed");
    }
}

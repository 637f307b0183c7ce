//! Every figure the README and the book quote agrees with its record; kernels quote none (their
//! headers name their chapter).
//!
//! A quoted figure is a Markdown link whose text is the number, whose target is the record (a
//! results page or a run's log, relative to the quoting file) and whose title is a regular
//! expression with one group that picks the figure out of the record:
//!
//! ```text
//! [88.4%](results/runs/2026-11-21-h200-step06.log "speed .*· ([\d.]+)% of cuBLAS")
//! ```
//!
//! The quote must equal the record's value rounded to the quote's decimals. A title ending in
//! ` /1000` divides the record's value first (GFLOP/s quoted as TFLOP/s). Links without a
//! title are ordinary links and not checked.
//!
//! After a record was measured again, `FIGURES_REWRITE=1 cargo test -p compare --test figures`
//! rewrites every quote from its record (keeping its decimals, digit grouping and % sign) and
//! lists the changes, so that the text around each one can be read again.

use std::path::{Path, PathBuf};

use regex::Regex;

/// The files that may quote figures: the README and the book's pages (and the kernels, which must
/// not: see `kernels_quote_no_figures`).
fn quoting_files(root: &Path) -> Vec<PathBuf> {
    let mut files = vec![root.join("README.md")];
    let mut dirs = vec![root.join("docs/src")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                files.push(path);
            }
        }
    }
    files.extend(kernel_files(root));
    files.sort();
    files
}

/// Every step's kernel, with its variants and stages.
fn kernel_files(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(root).unwrap().flatten() {
        let kernel = entry.path().join("src/kernel.cu");
        if kernel.exists() {
            files.push(kernel);
        }
        for folder in ["variants", "stages"] {
            if let Ok(dir) = std::fs::read_dir(entry.path().join(folder)) {
                files.extend(
                    dir.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|e| e == "cu")),
                );
            }
        }
    }
    files.sort();
    files
}

/// A kernel's header names its chapter instead of quoting figures: no quote, no pattern.
#[test]
fn kernels_quote_no_figures() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let kernels = kernel_files(&root);
    assert!(kernels.len() > 10, "{kernels:?}");
    for file in kernels {
        let text = std::fs::read_to_string(&file).unwrap();
        let found = quotes(&text);
        assert!(
            found.is_empty(),
            "{} quotes figures at lines {:?}: name the chapter instead",
            file.display(),
            found.iter().map(|q| q.0).collect::<Vec<_>>()
        );
    }
    // The check sees a quote in a comment.
    assert_eq!(quotes("// [46.8](../x.md \"speed ([\\d.]+)\") TFLOP/s").len(), 1);
}

/// A quoted figure, the whole of a link's text: "6 184", "88.4%", "45.2" (thin and no-break
/// spaces may group digits), or in scientific notation, "2.6e-7". Returns the value and its
/// decimals (of the significand, for scientific notation).
fn quoted(text: &str) -> Option<(f64, usize)> {
    let text = text.trim();
    if let Some(found) = scientific().captures(text) {
        return Some((text.parse().ok()?, found.get(1).map_or(0, |d| d.as_str().len())));
    }
    let found = Regex::new(r"^-?\d[\d \u{2009}\u{00A0}]*(?:\.(\d+))?%?$").unwrap().captures(text)?;
    let digits: String = found[0].chars().filter(|c| c.is_ascii_digit() || *c == '.' || *c == '-').collect();
    Some((digits.parse().ok()?, found.get(1).map_or(0, |d| d.as_str().len())))
}

/// A figure in scientific notation, as the reports print errors: "2.6e-7", "0.0e0".
fn scientific() -> Regex {
    Regex::new(r"^-?\d(?:\.(\d+))?e-?\d+$").unwrap()
}

/// A figure in a record: "6184", "88.36", "2.2e-5".
fn recorded(text: &str) -> Option<f64> {
    text.trim().trim_end_matches('%').parse().ok()
}

/// A titled link: text, target, title.
fn link() -> Regex {
    Regex::new(r#"\[([^\]\n]+)\]\(([^)\s]+) "((?:[^"\\]|\\.)+)"\)"#).unwrap()
}

/// `text` with every quote rewritten from its record; the changes as "old -> new (record)".
fn rewrite(file: &Path, text: &str) -> (String, Vec<String>) {
    let mut changes = Vec::new();
    let new = link().replace_all(text, |c: &regex::Captures| {
        let (quote, record, title) = (&c[1], &c[2], c[3].replace("\\\"", "\""));
        match (quoted(quote), recorded_value(file, record, &title)) {
            (Some(_), Ok((value, _))) => {
                let new = requoted(quote, value);
                if new != quote {
                    changes.push(format!("{quote} -> {new} ({record})"));
                }
                c[0].replacen(&format!("[{quote}]"), &format!("[{new}]"), 1)
            }
            _ => c[0].to_owned(),
        }
    });
    (new.into_owned(), changes)
}

/// Every titled link in `text` that quotes a number: (line, quote, record, pattern).
fn quotes(text: &str) -> Vec<(usize, String, String, String)> {
    link()
        .captures_iter(text)
        .filter(|c| quoted(&c[1]).is_some())
        .map(|c| {
            let line = text[..c.get(0).unwrap().start()].matches('\n').count() + 1;
            (line, c[1].to_owned(), c[2].to_owned(), c[3].replace("\\\"", "\""))
        })
        .collect()
}

/// What is wrong with one quote, if anything.
fn check(file: &Path, quote: &str, record: &str, title: &str) -> Option<String> {
    let (want, found) = match recorded_value(file, record, title) {
        Ok(v) => v,
        Err(why) => return Some(why),
    };
    let Some((got, decimals)) = quoted(quote) else {
        return Some(format!("\"{quote}\" is not a number"));
    };
    let differs = if scientific().is_match(quote.trim()) {
        requoted(quote, want) != quote.trim()
    } else {
        (rounded(want, decimals) - got).abs() > 1e-9 * got.abs().max(1.0)
    };
    differs.then(|| format!("quotes {quote} but {record} says {found} (\"{title}\")"))
}

/// `value` rounded to `decimals` places, half away from zero.
fn rounded(value: f64, decimals: usize) -> f64 {
    let scale = 10f64.powi(decimals as i32);
    (value * scale).round() / scale
}

/// `quote` rewritten to say `value`, with the same decimals, digit grouping and % sign.
fn requoted(quote: &str, value: f64) -> String {
    let (_, decimals) = quoted(quote).expect("a quote");
    if scientific().is_match(quote.trim()) {
        return format!("{value:.decimals$e}");
    }
    let text = format!("{:.*}", decimals, rounded(value, decimals));
    let (whole, fraction) = text.split_once('.').map_or((text.as_str(), None), |(w, f)| (w, Some(f)));
    let (sign, digits) = whole.strip_prefix('-').map_or(("", whole), |d| ("-", d));
    let grouped = match quote.chars().find(|c| [' ', '\u{2009}', '\u{00A0}'].contains(c)) {
        Some(sep) => {
            let head = digits.len() % 3;
            let mut parts = vec![&digits[..head]];
            parts.extend((head..digits.len()).step_by(3).map(|i| &digits[i..i + 3]));
            parts.retain(|p| !p.is_empty());
            parts.join(&sep.to_string())
        }
        None => digits.to_owned(),
    };
    let percent = if quote.trim().ends_with('%') { "%" } else { "" };
    format!("{sign}{grouped}{}{percent}", fraction.map_or(String::new(), |f| format!(".{f}")))
}

/// The value a quote's title picks out of its record (divided as the title says), and the text
/// it was read from.
fn recorded_value(file: &Path, record: &str, title: &str) -> Result<(f64, String), String> {
    let (pattern, divisor) = match title.rsplit_once(" /") {
        Some((p, d)) if d.parse::<f64>().is_ok() => (p, d.parse::<f64>().unwrap()),
        _ => (title, 1.0),
    };
    let path = file.parent().unwrap().join(record.split('#').next().unwrap());
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Err(format!("the record {record} cannot be read"));
    };
    let re = match Regex::new(pattern) {
        Ok(re) if re.captures_len() == 2 => re,
        _ => return Err(format!("the pattern \"{pattern}\" is not a regular expression with one group")),
    };
    let Some(found) = re.captures(&text) else {
        return Err(format!("\"{pattern}\" matches nothing in {record}"));
    };
    // A group that stops inside a number (before its fraction, say) would compare a part of it.
    let group = found.get(1).unwrap();
    if Regex::new(r"^\.?\d").unwrap().is_match(&text[group.end()..]) {
        let whole = text[group.start()..].split_whitespace().next().unwrap_or_default();
        return Err(format!("\"{pattern}\" takes only part of the number {whole} in {record}"));
    }
    let Some(want) = recorded(group.as_str()) else {
        return Err(format!("\"{}\" in {record} is not a number", group.as_str()));
    };
    Ok((want / divisor, group.as_str().to_owned()))
}

#[test]
fn every_quoted_figure_agrees_with_its_record() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    if std::env::var_os("FIGURES_REWRITE").is_some() {
        for file in quoting_files(root) {
            let text = std::fs::read_to_string(&file).unwrap();
            let (new, changes) = rewrite(&file, &text);
            for change in changes {
                println!("{}: {change}", file.strip_prefix(root).unwrap().display());
            }
            if new != text {
                std::fs::write(&file, new).unwrap();
            }
        }
    }
    let mut wrong = Vec::new();
    let mut checked = 0;
    for file in quoting_files(root) {
        let text = std::fs::read_to_string(&file).unwrap();
        for (line, quote, record, pattern) in quotes(&text) {
            checked += 1;
            if let Some(why) = check(&file, &quote, &record, &pattern) {
                wrong.push(format!("{}:{line}: {why}", file.strip_prefix(root).unwrap().display()));
            }
        }
    }
    assert!(wrong.is_empty(), "figures that disagree with their records:\n{}", wrong.join("\n"));
    assert!(checked > 0, "no quoted figure found");
}

#[test]
fn quotes_are_read_and_rounded_as_written() {
    assert_eq!(quoted("6 184"), Some((6184.0, 0)));
    assert_eq!(quoted("11\u{2009}240"), Some((11240.0, 0)));
    assert_eq!(quoted("88.4%"), Some((88.4, 1)));
    assert_eq!(quoted("no figure"), None);
    assert_eq!(quoted("about 3 or 99"), None, "the whole text is the figure");
    assert_eq!(recorded("2.2e-5"), Some(2.2e-5));
    assert_eq!(quoted("2.6e-7"), Some((2.6e-7, 1)), "errors are quoted as the reports print them");
    assert_eq!(quoted("1e-6"), Some((1e-6, 0)));
    let q = quotes(r#"at [88.4%](runs/x.log "speed .*· ([\d.]+)% of") and [a link](y.md)"#);
    assert_eq!(
        q,
        vec![(1, "88.4%".to_owned(), "runs/x.log".to_owned(), r"speed .*· ([\d.]+)% of".to_owned())]
    );
    let dir = std::env::temp_dir().join(format!("figures-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("r.log"), "speed 45220 GFLOP/s · 88.36% of cuBLAS\n").unwrap();
    let quoting = dir.join("q.md");
    assert_eq!(check(&quoting, "88.4%", "r.log", r"· ([\d.]+)% of"), None);
    assert!(check(&quoting, "88.3%", "r.log", r"· ([\d.]+)% of").unwrap().contains("says 88.36"));
    assert!(check(&quoting, "88%", "r.log", r"· ([\d.]+)% of").is_none(), "88.36 rounds to 88");
    assert!(check(&quoting, "45 220", "r.log", r"speed (\d+) GFLOP").is_none());
    assert!(check(&quoting, "45.2", "r.log", r"speed (\d+) GFLOP /1000").is_none());
    assert!(check(&quoting, "45.3", "r.log", r"speed (\d+) GFLOP /1000").is_some());
    assert!(check(&quoting, "1", "r.log", r"nothing (\d)").unwrap().contains("matches nothing"));
    assert!(check(&quoting, "1", "gone.log", r"(\d)").unwrap().contains("cannot be read"));
    assert!(check(&quoting, "88", "r.log", r"· (\d+)").unwrap().contains("only part of the number"));
    std::fs::write(dir.join("e.log"), "    normwise     PASS · ‖ΔC‖/‖C‖ = 2.6e-7, limit\n").unwrap();
    assert!(check(&quoting, "2.6e-7", "e.log", r"‖ΔC‖/‖C‖ = ([\d.e-]+),").is_none());
    assert!(check(&quoting, "2.7e-7", "e.log", r"‖ΔC‖/‖C‖ = ([\d.e-]+),").unwrap().contains("says 2.6e-7"));
    assert!(check(&quoting, "2.6e-7", "e.log", r"\n‖ΔC‖ = ([\d.e-]+),").unwrap().contains("matches nothing"));
    let (text, changes) =
        rewrite(&quoting, r#"[88.3%](r.log "· ([\d.]+)% of") and [45.9](r.log "speed (\d+) GFLOP /1000")"#);
    assert_eq!(text, r#"[88.4%](r.log "· ([\d.]+)% of") and [45.2](r.log "speed (\d+) GFLOP /1000")"#);
    assert_eq!(changes.len(), 2, "{changes:?}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn requotes_keep_decimals_grouping_and_percent() {
    assert_eq!(requoted("6 184", 45164.4), "45 164");
    assert_eq!(requoted("11\u{2009}240", 1234567.0), "1\u{2009}234\u{2009}567");
    assert_eq!(requoted("88%", 88.5), "89%", "half away from zero, as the check rounds");
    assert_eq!(requoted("0.00", 0.434), "0.43");
    assert_eq!(requoted("17.3", 9.96), "10.0");
    assert_eq!(requoted("512", 64.0), "64");
    assert_eq!(requoted("2.6e-7", 2.64e-7), "2.6e-7");
    assert_eq!(requoted("2.6e-7", 1.06e-6), "1.1e-6");
    assert_eq!(requoted("0.0e0", 0.0), "0.0e0");
}

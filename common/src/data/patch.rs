//! Unified diffs (`diff -u`) applied to a text. A variant that changes little of its kernel is kept
//! as that change alone (`stepNN_…/variants/NAME.diff`), and a run builds its kernel from the
//! step's own and the diff (`--kernel NAME.diff`); an exercise's solution is a diff too.
//!
//! The diff must fit the text exactly, as `patch --fuzz=0` would want it on the very file the
//! diff was made from: each hunk starts at the line its header names, holds the lines its header
//! counts, and its context and removed lines are the text's, byte for byte. A diff that does not
//! fit is refused with the hunk and the line that differ, never applied in part.

use anyhow::{Result, anyhow, bail};

/// One hunk's header, `@@ -START,LEN +START,LEN @@`: where it sits in the old text and how many
/// lines it holds of each side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct HunkHeader {
    old_start: usize,
    old_len: usize,
    new_len: usize,
}

impl HunkHeader {
    /// The header of `line`, or None when it is not one. A side's length may be left out (`-5`
    /// stands for `-5,1`), and text after the closing `@@` (a function's name) is not read.
    fn parse(line: &str) -> Option<HunkHeader> {
        let ranges = line.strip_prefix("@@ -")?;
        let (ranges, _) = ranges.split_once(" @@")?;
        let (old, new) = ranges.split_once(" +")?;
        let range = |r: &str| -> Option<(usize, usize)> {
            match r.split_once(',') {
                Some((start, len)) => Some((start.parse().ok()?, len.parse().ok()?)),
                None => Some((r.parse().ok()?, 1)),
            }
        };
        let ((old_start, old_len), (_, new_len)) = (range(old)?, range(new)?);
        Some(HunkHeader { old_start, old_len, new_len })
    }
}

/// `text` with the unified diff `diff` applied. What comes before the first hunk (the `---` and
/// `+++` lines that name the files) is not read; after it, the diff holds hunks only, of one
/// file. The error says where the diff and the text part, in one sentence.
pub fn apply(text: &str, diff: &str) -> Result<String> {
    let old: Vec<&str> = text.split_inclusive('\n').collect();
    // Each line without its '\n' (a '\r' stays, so that a CRLF text takes a CRLF diff), numbered.
    let mut lines =
        diff.split_inclusive('\n').map(|l| l.strip_suffix('\n').unwrap_or(l)).enumerate().peekable();
    while lines.next_if(|(_, l)| !l.starts_with("@@")).is_some() {}
    let mut out = String::with_capacity(text.len() + diff.len());
    let mut used = 0; // the lines of `old` copied or replaced so far
    let mut hunk = 0;
    while let Some((number, line)) = lines.next() {
        if line.trim().is_empty() && lines.clone().all(|(_, l)| l.trim().is_empty()) {
            break; // blank lines at the end of the file
        }
        if line.starts_with("--- ") || line.starts_with("diff ") {
            bail!(
                "the diff changes more than one file (its line {} starts another); give the diff of one",
                number + 1
            );
        }
        if hunk > 0 && [' ', '+', '-'].iter().any(|&c| line.starts_with(c)) {
            bail!("hunk {hunk} holds more lines than its header counts (line {} of the diff)", number + 1);
        }
        hunk += 1;
        let header = HunkHeader::parse(line).ok_or_else(|| {
            anyhow!(
                "line {} of the diff, `{line}`, is neither a hunk's header (`@@ -N,M +N,M @@`) nor in a hunk",
                number + 1
            )
        })?;
        // A hunk that keeps and removes nothing goes after the line it names; any other starts there.
        let start = if header.old_len == 0 { header.old_start } else { header.old_start.saturating_sub(1) };
        if start < used {
            bail!("hunk {hunk} starts at line {}, inside the hunk before it", header.old_start);
        }
        if start > old.len() {
            bail!(
                "hunk {hunk} starts at line {}, past the end of a text of {} lines",
                header.old_start,
                old.len()
            );
        }
        out.extend(old[used..start].iter().copied());
        used = start;
        let (mut old_left, mut new_left) = (header.old_len, header.new_len);
        while old_left + new_left > 0 {
            let Some((number, body)) = lines.next() else {
                bail!(
                    "hunk {hunk} ends with the diff, {old_left} old and {new_left} new lines short of its header's count"
                );
            };
            // An empty line is a context line whose trailing space an editor removed.
            let (mark, rest) = body.split_at(body.len().min(1));
            let last = lines.next_if(|(_, l)| l.starts_with('\\')).is_some(); // "\ No newline at end of file"
            let line = if last { rest.to_owned() } else { format!("{rest}\n") };
            let (takes_old, takes_new) = match mark {
                " " | "" => (true, true),
                "-" => (true, false),
                "+" => (false, true),
                _ => bail!("line {} of the diff, `{body}`, is not a line of hunk {hunk}", number + 1),
            };
            if (takes_old && old_left == 0) || (takes_new && new_left == 0) {
                bail!(
                    "hunk {hunk} holds more lines than its header counts (line {} of the diff)",
                    number + 1
                );
            }
            if takes_old {
                let Some(&have) = old.get(used) else {
                    bail!("hunk {hunk} expects line {} to be `{rest}`, past the end of the text", used + 1);
                };
                if have != line && have.trim_end_matches('\n') == rest {
                    let (wants, has) = if last { ("no", "one") } else { ("a", "none") };
                    bail!(
                        "hunk {hunk} expects line {} to end with {wants} newline, and it has {has}",
                        used + 1
                    );
                }
                if have != line {
                    bail!(
                        "hunk {hunk} expects line {} to be `{rest}`, and it is `{}`",
                        used + 1,
                        have.strip_suffix('\n').unwrap_or(have)
                    );
                }
                used += 1;
                old_left -= 1;
            }
            if takes_new {
                out.push_str(&line);
                new_left -= 1;
            }
        }
    }
    if hunk == 0 {
        bail!("the diff holds no hunk (`@@ -N,M +N,M @@`): is it a unified diff, `diff -u OLD NEW`?");
    }
    out.extend(old[used..].iter().copied());
    Ok(out)
}

/// The path of the file a diff changes, as its `--- ` line names it (without the date `diff -u`
/// may add after a tab), or None when it names none.
pub fn old_label(diff: &str) -> Option<&str> {
    let line = diff.lines().take_while(|l| !l.starts_with("@@")).find(|l| l.starts_with("--- "))?;
    let path = line[4..].split('\t').next().unwrap_or_default().trim_end();
    (!path.is_empty()).then_some(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "a\nb\nc\nd\ne\nf\ng\nh\n";

    fn refusal(text: &str, diff: &str) -> String {
        let e = apply(text, diff).unwrap_err().to_string();
        assert!(!e.contains('\n'), "not one sentence: {e}");
        e
    }

    #[test]
    fn a_diff_is_applied_hunk_by_hunk() {
        let diff = "--- a\n+++ b\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n@@ -6,3 +6,4 @@ fn g()\n f\n g\n+g2\n h\n";
        assert_eq!(apply(TEXT, diff).unwrap(), "a\nB\nc\nd\ne\nf\ng\ng2\nh\n");
    }

    #[test]
    fn lines_added_to_an_empty_text_and_after_a_line() {
        assert_eq!(apply("", "@@ -0,0 +1,2 @@\n+x\n+y\n").unwrap(), "x\ny\n");
        assert_eq!(apply(TEXT, "@@ -2,0 +3 @@\n+b2\n").unwrap(), "a\nb\nb2\nc\nd\ne\nf\ng\nh\n");
        assert_eq!(apply(TEXT, "@@ -8 +7,0 @@\n-h\n").unwrap(), "a\nb\nc\nd\ne\nf\ng\n");
    }

    #[test]
    fn a_text_without_a_last_newline() {
        let diff =
            "@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n";
        assert_eq!(apply("a\nb", diff).unwrap(), "a\nc");
        // The newline itself is a change: a text that has it does not take this diff.
        assert!(refusal("a\nb\n", diff).contains("expects line 2 to end with no newline, and it has one"));
        let added = "@@ -2 +2 @@\n-b\n+c\n";
        assert!(refusal("a\nb", added).contains("expects line 2 to end with a newline, and it has none"));
    }

    #[test]
    fn carriage_returns_are_kept() {
        assert_eq!(apply("a\r\nb\r\n", "@@ -2 +2 @@\n-b\r\n+c\r\n").unwrap(), "a\r\nc\r\n");
    }

    #[test]
    fn blank_lines_after_the_last_hunk_are_not_read() {
        assert_eq!(apply(TEXT, "@@ -1 +1 @@\n-a\n+A\n\n\n").unwrap(), TEXT.replacen('a', "A", 1));
    }

    /// A diff made from another text: each disagreement named by its hunk and line.
    #[test]
    fn a_diff_that_does_not_fit_the_text_is_refused() {
        let e = refusal(TEXT, "@@ -1,3 +1,3 @@\n a\n-x\n+B\n c\n");
        assert_eq!(e, "hunk 1 expects line 2 to be `x`, and it is `b`");
        // Right lines at the wrong place: no search for them elsewhere.
        let e = refusal(TEXT, "@@ -1,2 +1,2 @@\n b\n-c\n+C\n");
        assert!(e.contains("expects line 1 to be `b`"), "{e}");
        let e = refusal(TEXT, "@@ -1 +1 @@\n-a\n+A\n@@ -6 +6 @@\n-f\n+F\n@@ -7,2 +7,2 @@\n g\n-x\n+y\n");
        assert!(e.starts_with("hunk 3 expects line 8"), "{e}");
        assert!(refusal(TEXT, "@@ -40,1 +40,1 @@\n-x\n+y\n").contains("past the end of a text of 8 lines"));
        assert!(
            refusal(TEXT, "@@ -7,3 +7,3 @@\n g\n h\n-i\n+j\n").contains("line 9 to be `i`, past the end")
        );
    }

    #[test]
    fn a_diff_whose_hunks_disagree_with_their_headers_is_refused() {
        assert!(
            refusal(TEXT, "@@ -1,3 +1,3 @@\n a\n-b\n+B\n")
                .contains("hunk 1 ends with the diff, 1 old and 1 new")
        );
        let e = refusal(TEXT, "@@ -1,2 +1,2 @@\n a\n-b\n+B\n c\n");
        assert!(e.contains("holds more lines than its header counts (line 5 of the diff)"), "{e}");
        let e = refusal(TEXT, "@@ -1 +1 @@\n-a\n+A\njunk\n");
        assert!(e.contains("line 4 of the diff, `junk`, is neither a hunk's header"), "{e}");
        let e = refusal(TEXT, "@@ -1,2 +1 @@\n a\n+A\n-b\n");
        assert!(e.contains("hunk 1 holds more lines than its header counts (line 3 of the diff)"), "{e}");
        let e = refusal(TEXT, "@@ -3 +3 @@\n-c\n+C\n@@ -2 +2 @@\n-b\n+B\n");
        assert!(e.contains("hunk 2 starts at line 2, inside the hunk before it"), "{e}");
        assert!(refusal(TEXT, "@@ -1 +1 @@\n*a\n").contains("`*a`, is not a line of hunk 1"));
        assert!(refusal(TEXT, "@@ -x +1 @@\n-a\n").contains("is neither a hunk's header"));
    }

    #[test]
    fn what_is_no_diff_of_one_file_is_refused() {
        assert!(refusal(TEXT, "no hunks here\n").contains("holds no hunk"));
        assert!(refusal(TEXT, "").contains("holds no hunk"));
        let two = "--- a\n+++ a\n@@ -1 +1 @@\n-a\n+A\n--- b\n+++ b\n@@ -1 +1 @@\n-x\n+y\n";
        assert!(refusal(TEXT, two).contains("changes more than one file (its line 6 starts another)"));
    }

    #[test]
    fn the_old_label_is_the_path_on_the_first_line() {
        assert_eq!(
            old_label("--- s/src/kernel.cu\t2024-01-01\n+++ x\n@@ -1 +1 @@\n"),
            Some("s/src/kernel.cu")
        );
        assert_eq!(old_label("@@ -1 +1 @@\n--- a\n"), None);
    }
}

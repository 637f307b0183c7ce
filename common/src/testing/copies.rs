//! Copies of kernels: a step's variants (`variants/NAME.cu`) and stages (`stages/NAME.cu`). Each
//! is a full kernel, so that it compiles, runs and diffs on its own, and each repeats another
//! kernel (its base) with one change. Two things say what the change is:
//!
//! - the copy's first line names its base, and the change in one sentence that may run on over
//!   the next comment lines: `// Variant of step09_3xtf32/src/kernel.cu: one running sum of …`
//!   (a stage: `// Step 05, stage 4 of 7, from step05_thread_tile/stages/3_warp_regions.cu: …`);
//! - `NAME.diff` beside the copy holds the change itself, `diff -u BASE FILE` run from the
//!   repository's root with both paths as its labels (`scripts/copies.sh` writes it).
//!
//! [`assert_copies`] applies each diff to its base and wants the copy exactly. A copy edited
//! beyond its diff fails, and so does a base changed without its copies following; after a
//! change made on purpose, `scripts/copies.sh` writes the diffs again (with `--rebase`, it first
//! carries a base's change into its copies).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};

use crate::patch;

/// The folders of a step that hold copies.
pub const FOLDERS: [&str; 2] = ["variants", "stages"];

/// One copy, as read from the repository.
#[derive(Clone, Debug)]
pub struct Copy {
    /// From the repository's root: `step09_3xtf32/variants/no_flush.cu`.
    pub file: String,
    pub text: String,
    /// The kernel it copies, as its first line names it.
    pub base: String,
    /// The change in one sentence, as its first lines say it (with its final full stop).
    pub change: String,
    /// The change as a unified diff (`NAME.diff` beside the copy).
    pub diff: String,
}

/// The repository's root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("common sits in the workspace").to_owned()
}

/// A copy's base and its change, from its first lines: the first `PATH.cu:` on the first line
/// names the base, and the sentence after it, there or from the next line on, ends on the first
/// line that ends with a full stop.
pub fn header(text: &str) -> Result<(String, String)> {
    let mut lines = text.lines();
    let first = lines.next().unwrap_or_default();
    let rest = first.strip_prefix("// ").ok_or_else(|| anyhow!("its first line is not a comment"))?;
    // The sentence may start on the next line.
    let rest = format!("{rest} ");
    let at = rest.find(".cu: ").ok_or_else(|| {
        anyhow!("its first line names no kernel it copies (`// Variant of stepNN_…/src/kernel.cu: …`)")
    })?;
    let base = &rest[rest[..at].rfind(' ').map_or(0, |i| i + 1)..at + 3];
    if !base.contains('/') {
        bail!("its first line names `{base}`, not a path from the repository's root");
    }
    let mut change = rest[at + 5..].trim().to_owned();
    for line in lines.take(3) {
        if change.ends_with('.') {
            break;
        }
        let more =
            line.strip_prefix("// ").ok_or_else(|| anyhow!("its first sentence ends without a full stop"))?;
        change = format!("{change} {}", more.trim()).trim_start().to_owned();
    }
    if !change.ends_with('.') || change.len() < 2 {
        bail!("the sentence after `{base}: ` does not end with a full stop within four lines");
    }
    Ok((base.to_owned(), change))
}

/// The copies in `step`'s folders (`step` as the crate is named, e.g. `step09_3xtf32`), in the
/// order of their names.
pub fn read(step: &str) -> Result<Vec<Copy>> {
    let root = root();
    let mut copies = Vec::new();
    for folder in FOLDERS {
        let dir = root.join(step).join(folder);
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        paths.sort();
        for path in &paths {
            let name = format!("{step}/{folder}/{}", path.file_name().unwrap().to_string_lossy());
            match path.extension().and_then(|e| e.to_str()) {
                Some("cu") => {}
                Some("diff") if path.with_extension("cu").exists() => continue,
                Some("diff") => bail!("{name} is beside no copy of that name"),
                _ => continue,
            }
            let text = std::fs::read_to_string(path).with_context(|| name.clone())?;
            let (base, change) = header(&text).with_context(|| name.clone())?;
            let diff = std::fs::read_to_string(path.with_extension("diff"))
                .map_err(|_| anyhow!("{name} has no .diff beside it: run scripts/copies.sh"))?;
            copies.push(Copy { file: name, text, base, change, diff });
        }
    }
    Ok(copies)
}

/// Whether `copy` is `base` (its base's text) with `copy.diff` applied, and nothing else.
pub fn check(copy: &Copy, base: &str) -> Result<()> {
    let labels: Vec<&str> = copy
        .diff
        .lines()
        .take(2)
        .map(|l| l.get(4..).unwrap_or_default().split('\t').next().unwrap_or_default())
        .collect();
    if labels != [copy.base.as_str(), copy.file.as_str()] {
        bail!(
            "its diff is not `diff -u {} {}` (its first lines name {labels:?}): run scripts/copies.sh",
            copy.base,
            copy.file
        );
    }
    let rebuilt = patch::apply(base, &copy.diff)
        .map_err(|e| anyhow!("its diff no longer applies to {}: {e}; {}", copy.base, REDO))?;
    if rebuilt == copy.text {
        return Ok(());
    }
    let (a, b): (Vec<&str>, Vec<&str>) = (rebuilt.lines().collect(), copy.text.lines().collect());
    let at = a.iter().zip(&b).position(|(x, y)| x != y).unwrap_or(a.len().min(b.len()));
    let line = |l: &[&str]| l.get(at).map_or("(the end)".to_owned(), |s| format!("`{s}`"));
    bail!(
        "it is not {} with its diff applied: at line {} that gives {}, the file has {}; {}",
        copy.base,
        at + 1,
        line(&a),
        line(&b),
        REDO
    )
}

/// What to do when a copy and its base plus diff disagree.
const REDO: &str = "if the change is meant, run scripts/copies.sh (after a change to the base, \
                    scripts/copies.sh --rebase), then read the diff";

/// Every copy of `step` names its base and its change, and is its base with its diff applied.
/// Returns the copies, for a step's own checks of their bases and sentences.
pub fn assert_copies(step: &str) -> Vec<Copy> {
    let copies = read(step).unwrap_or_else(|e| panic!("{e:#}"));
    assert!(!copies.is_empty(), "{step} has no variants/ or stages/ with a kernel in them");
    let wrong: Vec<String> = copies
        .iter()
        .filter_map(|c| {
            let base = std::fs::read_to_string(root().join(&c.base))
                .map_err(|_| anyhow!("the kernel it names, {}, is not there", c.base));
            base.and_then(|b| check(c, &b)).err().map(|e| format!("{}: {e}", c.file))
        })
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    copies
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = "// Step 99: a kernel.\n//\n// Idea: none.\nint a = 1;\nint b = 2;\nint c = 3;\n";
    const COPY: &str = "// Variant of step99/src/kernel.cu: b is 20, to see what\n// changes.\n//\n\
                        // Step 99: a kernel.\n//\n// Idea: none.\nint a = 1;\nint b = 20;\nint c = 3;\n";
    const DIFF: &str = "--- step99/src/kernel.cu\n+++ step99/variants/b.cu\n@@ -1,5 +1,8 @@\n\
                        +// Variant of step99/src/kernel.cu: b is 20, to see what\n+// changes.\n+//\n \
                        // Step 99: a kernel.\n //\n // Idea: none.\n int a = 1;\n-int b = 2;\n+int b = 20;\n";

    fn copy(text: &str) -> Copy {
        let (base, change) = header(text).unwrap();
        Copy { file: "step99/variants/b.cu".into(), text: text.into(), base, change, diff: DIFF.into() }
    }

    #[test]
    fn the_header_names_the_base_and_the_change() {
        let (base, change) = header(COPY).unwrap();
        assert_eq!(
            (base.as_str(), change.as_str()),
            ("step99/src/kernel.cu", "b is 20, to see what changes.")
        );
        let stage = "// Step 05, stage 2 of 7, from step05_x/stages/1_a.cu: outer products.\n";
        assert_eq!(header(stage).unwrap().0, "step05_x/stages/1_a.cu");
        let wrapped =
            "// Stage 7 of 7, from step05_x/stages/6_a.cu:\n// __launch_bounds__: fewer registers.\n";
        assert_eq!(header(wrapped).unwrap().1, "__launch_bounds__: fewer registers.");
        for (text, why) in [
            ("int a;\n", "not a comment"),
            ("// Step 99: a kernel.\n", "names no kernel"),
            ("// Variant of kernel.cu: x.\n", "not a path"),
            ("// Variant of s/k.cu: no stop\nint a;\n", "without a full stop"),
            ("// Variant of s/k.cu: a\n// b\n// c\n// d\n// e.\n", "within four lines"),
        ] {
            let e = header(text).unwrap_err().to_string();
            assert!(e.contains(why), "{text:?}: {e}");
        }
    }

    #[test]
    fn a_copy_that_is_its_base_plus_its_diff_passes() {
        check(&copy(COPY), BASE).unwrap();
    }

    /// A planted fault: one more line edited in the copy than its diff holds.
    #[test]
    fn a_copy_edited_beyond_its_diff_fails() {
        let e = check(&copy(&COPY.replace("int c = 3;", "int c = 4;")), BASE).unwrap_err().to_string();
        assert!(e.contains("at line 9 that gives `int c = 3;`, the file has `int c = 4;`"), "{e}");
    }

    /// The base changed where the diff does not reach, and the copy did not follow.
    #[test]
    fn a_base_changed_without_its_copy_fails() {
        let e = check(&copy(COPY), &BASE.replace("int c = 3;", "int c = 5;")).unwrap_err().to_string();
        assert!(e.contains("at line 9 that gives `int c = 5;`"), "{e}");
        let e = check(&copy(COPY), &BASE.replace("int a = 1;", "int a = 0;")).unwrap_err().to_string();
        assert!(e.contains("no longer applies"), "{e}");
    }

    #[test]
    fn a_diff_of_other_files_fails() {
        let mut c = copy(COPY);
        c.diff = c.diff.replace("+++ step99/variants/b.cu", "+++ step99/variants/other.cu");
        let e = check(&c, BASE).unwrap_err().to_string();
        assert!(e.contains("is not `diff -u step99/src/kernel.cu step99/variants/b.cu`"), "{e}");
    }
}

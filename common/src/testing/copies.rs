//! Copies of kernels: a step's variants (`variants/`) and stages (`stages/NAME.cu`). Each repeats
//! another kernel (its base) with one change, kept in one of two forms:
//!
//! - a full copy, `NAME.cu`, which compiles, runs and diffs on its own, with the change beside it
//!   as `NAME.diff`: `diff -u BASE FILE` run from the repository's root with both paths as its
//!   labels (`scripts/copies.sh` writes it). Stages are kept so, and variants that change a tenth
//!   of their base or more;
//! - the change alone, `variants/NAME.diff` with no copy beside it, for a variant that changes less
//!   than a tenth of its base (the step's kernel): the same diff, whose `+++` line names the kernel
//!   it makes. A run builds that kernel from the step's own (`--kernel variants/NAME.diff`, see
//!   [`crate::compile_only::with_diff`]); `patch -o FILE BASE NAME.diff` writes it out.
//!
//! Either way the kernel's first line names its base, and the change in one sentence that may run
//! on over the next comment lines: `// Variant of step09_3xtf32/src/kernel.cu: one running sum of …`
//! (a stage: `// Step 05, stage 4 of 7, from step05_thread_tile/stages/3_warp_regions.cu: …`).
//!
//! [`assert_copies`] applies each diff to its base: a full copy must be the result exactly, and a
//! change alone must apply. A copy edited beyond its diff fails, and so does a base changed
//! without its copies following; after a change made on purpose, `scripts/copies.sh` writes the
//! diffs again (with `--rebase`, it first carries a base's change into its copies).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};

use crate::patch;

/// The folders of a step that hold copies.
pub const FOLDERS: [&str; 2] = ["variants", "stages"];

/// One copy, as read from the repository.
#[derive(Clone, Debug)]
pub struct KernelCopy {
    /// From the repository's root: the copy (`step08_wgmma_tma/variants/transposing_prologue.cu`),
    /// or the diff of a variant kept as its change alone (`step09_3xtf32/variants/no_flush.diff`).
    pub file: String,
    /// The copy's text; None for a variant kept as its change alone.
    pub text: Option<String>,
    /// The kernel it copies, as its first line names it.
    pub base: String,
    /// The change in one sentence, as its first lines say it (with its final full stop).
    pub change: String,
    /// The change as a unified diff (`NAME.diff`).
    pub diff: String,
}

impl KernelCopy {
    /// The kernel the diff makes, as its `+++` line names it: the copy, or for a change alone
    /// the copy it stands for (`variants/NAME.cu`).
    fn made(&self) -> String {
        match self.file.strip_suffix(".diff") {
            Some(stem) => format!("{stem}.cu"),
            None => self.file.clone(),
        }
    }
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
    // A kernel (`.cu`), or an include file of one (`.cuh`, see `contract/includes.rs`).
    let (at, ext) = [".cu: ", ".cuh: "]
        .iter()
        .filter_map(|e| rest.find(e).map(|at| (at, e.len() - 2)))
        .min()
        .ok_or_else(|| {
            anyhow!("its first line names no kernel it copies (`// Variant of stepNN_…/src/kernel.cu: …`)")
        })?;
    let base = &rest[rest[..at].rfind(' ').map_or(0, |i| i + 1)..at + ext];
    if !base.contains('/') {
        bail!("its first line names `{base}`, not a path from the repository's root");
    }
    let mut change = rest[at + ext + 2..].trim().to_owned();
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

/// The first lines of the kernel a diff makes, as far as its first hunk adds them at the top:
/// where a variant kept as its change alone names its base and its change.
fn added_first_lines(diff: &str) -> String {
    let mut lines = diff.lines().skip_while(|l| !l.starts_with("@@ -"));
    let opens_the_file =
        lines.next().is_some_and(|h| ["@@ -0,", "@@ -1,", "@@ -1 "].iter().any(|o| h.starts_with(o)));
    let added = lines.take_while(|l| l.starts_with('+')).map(|l| &l[1..]);
    if opens_the_file { added.collect::<Vec<_>>().join("\n") } else { String::new() }
}

/// The copies in `step`'s folders (`step` as the crate is named, e.g. `step09_3xtf32`), in the
/// order of their names.
pub fn read(step: &str) -> Result<Vec<KernelCopy>> {
    let root = root();
    let mut copies = Vec::new();
    for folder in FOLDERS {
        let dir = root.join(step).join(folder);
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        paths.sort();
        for path in &paths {
            let name = format!("{step}/{folder}/{}", path.file_name().unwrap().to_string_lossy());
            let copy = match path.extension().and_then(|e| e.to_str()) {
                // A variant's include file (`NAME.cuh`) is kept as a full copy of the step's.
                Some("cu") | Some("cuh") => {
                    let text = std::fs::read_to_string(path).with_context(|| name.clone())?;
                    let (base, change) = header(&text).with_context(|| name.clone())?;
                    let diff = std::fs::read_to_string(path.with_extension("diff"))
                        .map_err(|_| anyhow!("{name} has no .diff beside it: run scripts/copies.sh"))?;
                    KernelCopy { file: name, text: Some(text), base, change, diff }
                }
                Some("diff") if ["cu", "cuh"].iter().any(|e| path.with_extension(e).exists()) => continue,
                Some("diff") if folder == "stages" => {
                    bail!("{name} is beside no stage of that name: a stage is kept whole, as NAME.cu")
                }
                Some("diff") => {
                    let diff = std::fs::read_to_string(path).with_context(|| name.clone())?;
                    let (base, change) = header(&added_first_lines(&diff))
                        .with_context(|| format!("{name}: the kernel its diff makes"))?;
                    KernelCopy { file: name, text: None, base, change, diff }
                }
                _ => continue,
            };
            copies.push(copy);
        }
    }
    Ok(copies)
}

/// Whether `copy` is `base` (its base's text) with `copy.diff` applied and nothing else, and is
/// kept in the form its size asks for.
pub fn check(copy: &KernelCopy, base: &str) -> Result<()> {
    let made = copy.made();
    let kernel = format!("{}/src/kernel.cu", copy.file.split('/').next().unwrap_or_default());
    if copy.text.is_none() && copy.base != kernel {
        bail!(
            "it changes {}, not its step's kernel {kernel}, which `--kernel` applies it to: keep it as a full copy",
            copy.base
        );
    }
    let labels: Vec<&str> = copy
        .diff
        .lines()
        .take(2)
        .map(|l| l.get(4..).unwrap_or_default().split('\t').next().unwrap_or_default())
        .collect();
    if labels != [copy.base.as_str(), made.as_str()] {
        bail!(
            "its diff is not `diff -u {} {made}` (its first lines name {labels:?}): run scripts/copies.sh",
            copy.base,
        );
    }
    let rebuilt = patch::apply(base, &copy.diff)
        .map_err(|e| anyhow!("its diff no longer applies to {}: {e}; {}", copy.base, REDO))?;
    if copy.file.contains("/variants/") {
        check_form(copy, base)?;
    }
    let Some(text) = &copy.text else { return Ok(()) };
    if rebuilt == *text {
        return Ok(());
    }
    let (a, b): (Vec<&str>, Vec<&str>) = (rebuilt.lines().collect(), text.lines().collect());
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

/// A variant that changes less than a tenth of its base's lines (lines added and removed, its
/// header included) is kept as its diff alone; one that changes more, as a full copy.
fn check_form(copy: &KernelCopy, base: &str) -> Result<()> {
    let body = copy.diff.lines().skip_while(|l| !l.starts_with("@@ "));
    let changed = body.filter(|l| l.starts_with('+') || l.starts_with('-')).count();
    let lines = base.lines().count();
    let small = changed * 10 < lines;
    let made = copy.made();
    match (small, copy.text.is_some()) {
        (true, true) => bail!(
            "it changes {changed} of its base's {lines} lines, less than a tenth: keep it as its diff alone \
             (delete {made}, keep {}.diff)",
            made.trim_end_matches(".cu")
        ),
        (false, false) => bail!(
            "its diff changes {changed} of its base's {lines} lines, a tenth or more: keep the variant as a full \
             copy beside it (`patch -o {made} {} {}`)",
            copy.base,
            copy.file
        ),
        _ => Ok(()),
    }
}

/// What to do when a copy and its base plus diff disagree.
const REDO: &str = "if the change is meant, run scripts/copies.sh (after a change to the base, \
                    scripts/copies.sh --rebase), then read the diff";

/// Every copy of `step` names its base and its change, and is its base with its diff applied.
/// Returns the copies, for a step's own checks of their bases and sentences.
pub fn assert_copies(step: &str) -> Vec<KernelCopy> {
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

    fn copy(text: &str) -> KernelCopy {
        let (base, change) = header(text).unwrap();
        KernelCopy {
            file: "step99/variants/b.cu".into(),
            text: Some(text.into()),
            base,
            change,
            diff: DIFF.into(),
        }
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
        let part = "// Variant of step99/src/product.cuh: one pass.\n";
        assert_eq!(header(part).unwrap(), ("step99/src/product.cuh".to_owned(), "one pass.".to_owned()));
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

    /// A base of 60 lines, and a variant of it that changes 3 (its header line added, one line edited),
    /// kept as its diff alone.
    fn long_base() -> String {
        (1..=60).map(|i| format!("int x{i} = {i};\n")).collect()
    }

    const SMALL: &str = "--- step99/src/kernel.cu\n+++ step99/variants/small.cu\n@@ -1,2 +1,3 @@\n\
                         +// Variant of step99/src/kernel.cu: x2 is 0.\n int x1 = 1;\n-int x2 = 2;\n+int x2 = 0;\n";

    fn small() -> KernelCopy {
        let file = "step99/variants/small.diff";
        read_alone(file, SMALL).unwrap()
    }

    /// A variant kept as its diff alone, as [`read`] takes it.
    fn read_alone(file: &str, diff: &str) -> Result<KernelCopy> {
        let (base, change) = header(&added_first_lines(diff))?;
        Ok(KernelCopy { file: file.into(), text: None, base, change, diff: diff.into() })
    }

    #[test]
    fn a_change_kept_alone_names_its_base_and_applies() {
        let c = small();
        assert_eq!((c.base.as_str(), c.change.as_str()), ("step99/src/kernel.cu", "x2 is 0."));
        check(&c, &long_base()).unwrap();
        let e = check(&c, &long_base().replace("int x2 = 2;", "int x2 = 5;")).unwrap_err().to_string();
        assert!(e.contains("no longer applies") && e.contains("hunk 1 expects line 2"), "{e}");
        // Its diff must make the kernel its name stands for.
        let mut other = c.clone();
        other.diff = other.diff.replace("+++ step99/variants/small.cu", "+++ step99/variants/big.cu");
        let e = check(&other, &long_base()).unwrap_err().to_string();
        assert!(e.contains("is not `diff -u step99/src/kernel.cu step99/variants/small.cu`"), "{e}");
    }

    #[test]
    fn a_change_kept_alone_must_open_with_the_variants_header() {
        let e = read_alone(
            "step99/variants/x.diff",
            &SMALL.replace("+// Variant of step99/src/kernel.cu: ", "+// "),
        )
        .unwrap_err();
        assert!(e.to_string().contains("names no kernel it copies"), "{e}");
        let late = "--- step99/src/kernel.cu\n+++ step99/variants/x.cu\n@@ -5 +5 @@\n-int x5 = 5;\n\
                    +// Variant of step99/src/kernel.cu: x5 is 0.\n";
        assert!(read_alone("step99/variants/x.diff", late).is_err());
    }

    /// A variant under a tenth of its base is kept as its diff alone, and one over it in full.
    #[test]
    fn each_variant_is_kept_in_the_form_its_size_asks_for() {
        let small = small();
        let whole = KernelCopy {
            file: "step99/variants/small.cu".into(),
            text: Some(patch::apply(&long_base(), SMALL).unwrap()),
            ..small.clone()
        };
        let e = check(&whole, &long_base()).unwrap_err().to_string();
        assert!(e.contains("changes 3 of its base's 60 lines, less than a tenth"), "{e}");
        assert!(e.contains("delete step99/variants/small.cu, keep step99/variants/small.diff"), "{e}");
        let short_base: String = long_base().lines().take(30).map(|l| format!("{l}\n")).collect();
        let e = check(&small, &short_base).unwrap_err().to_string();
        assert!(
            e.contains("changes 3 of its base's 30 lines, a tenth or more: keep the variant as a full copy"),
            "{e}"
        );
        // A change alone is a change of its step's kernel.
        let elsewhere = read_alone("step98/variants/small.diff", SMALL).unwrap();
        let e = check(&elsewhere, &long_base()).unwrap_err().to_string();
        assert!(
            e.contains("changes step99/src/kernel.cu, not its step's kernel step98/src/kernel.cu"),
            "{e}"
        );
        // Stages are kept whole at any size.
        let stage = KernelCopy {
            file: "step99/stages/small.cu".into(),
            diff: whole.diff.replace("variants", "stages"),
            ..whole
        };
        check(&stage, &long_base()).unwrap();
    }
}

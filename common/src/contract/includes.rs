//! A step's include files: files of CUDA code that its kernel and the copies of it (a hands-on
//! starting file, a variant) pull in by name, `#include "NAME"`. A step embeds them with
//! `include_str!` and lists them in its `GpuStep::includes`; before NVRTC sees a kernel,
//! [`expand`] puts each included file in the place of its `#include` line, between `#line`
//! directives, so that a compile error or an emulator's fault in an include file names that
//! file and line, and one after it the kernel's own. A name resolves to the step's file wherever
//! the including file lies (the step's `src/`, `exercises/`, a learner's `mine/`), and a built
//! program reads no file for it.

use std::borrow::Cow;

use anyhow::{Result, bail};

/// One include file of a step's kernel.
#[derive(Clone, Copy, Debug)]
pub struct Include {
    /// The name a kernel includes it by: `#include "hopper.cuh"`.
    pub name: &'static str,
    /// Its path from the repository's root, for compiler messages and the emulator's faults.
    pub file: &'static str,
    /// Its text, embedded with `include_str!`.
    pub text: &'static str,
}

/// Include files nested deeper than this are taken for one that includes itself.
const DEPTH: usize = 8;

/// The name a line includes in quotes (`#include "NAME"`), if it is such a line.
fn included(line: &str) -> Option<&str> {
    let rest = line.trim_start().strip_prefix('#')?.trim_start().strip_prefix("include")?;
    let rest = rest.trim_start().strip_prefix('"')?;
    rest.split('"').next()
}

/// `source` (the kernel file `file`) with every `#include "NAME"` of one of `includes` replaced
/// by that file's text, framed by `#line` directives that keep the compiler's files and lines
/// those of the files as written. A source that includes nothing comes back as it is. An include
/// of a name none of `includes` has is refused in one sentence that names the line and the
/// include files there are.
pub fn expand<'a>(source: &'a str, file: &str, includes: &[Include]) -> Result<Cow<'a, str>> {
    if !source.lines().any(|l| included(l).is_some()) {
        return Ok(Cow::Borrowed(source));
    }
    let mut out = String::with_capacity(source.len() + includes.iter().map(|i| i.text.len()).sum::<usize>());
    expand_into(&mut out, source, file, includes, 0)?;
    Ok(Cow::Owned(out))
}

fn expand_into(out: &mut String, source: &str, file: &str, includes: &[Include], depth: usize) -> Result<()> {
    for (n, line) in source.lines().enumerate() {
        let Some(name) = included(line) else {
            out.push_str(line);
            out.push('\n');
            continue;
        };
        let Some(include) = includes.iter().find(|i| i.name == name) else {
            let known: Vec<&str> = includes.iter().map(|i| i.name).collect();
            let offered = if known.is_empty() {
                "the step has none".to_owned()
            } else {
                format!("they are {}", known.join(", "))
            };
            bail!(
                "{file}:{} includes \"{name}\", which is not one of the step's include files ({offered})",
                n + 1
            );
        };
        if depth == DEPTH {
            bail!(
                "{file}:{} includes \"{name}\" more than {DEPTH} files deep: an include file includes itself",
                n + 1
            );
        }
        out.push_str(&format!("#line 1 \"{}\"\n", include.file));
        expand_into(out, include.text, include.file, includes, depth + 1)?;
        out.push_str(&format!("#line {} \"{file}\"\n", n + 2));
    }
    Ok(())
}

/// Each file's lines as an expanded source (see [`expand`]) holds them, from its `#line`
/// directives: `(file, text)` in the order the files first appear, `file` being the source's own
/// name until a directive names another. What the emulator reads a fault's line from, so that a
/// line of an include file, edited or not, is found in that file.
pub fn by_file(expanded: &str, file: &str) -> Vec<(String, String)> {
    let mut files: Vec<(String, Vec<&str>)> = vec![(file.to_owned(), Vec::new())];
    let (mut at, mut line) = (0, 1usize);
    for text in expanded.lines() {
        let directive = text.strip_prefix("#line ").and_then(|rest| {
            let (n, name) = rest.split_once(' ')?;
            Some((n.parse::<usize>().ok()?, name.trim().trim_matches('"')))
        });
        if let Some((n, name)) = directive {
            at = files.iter().position(|(f, _)| f == name).unwrap_or_else(|| {
                files.push((name.to_owned(), Vec::new()));
                files.len() - 1
            });
            line = n.max(1);
            continue;
        }
        let lines = &mut files[at].1;
        if lines.len() < line {
            lines.resize(line, "");
        }
        lines[line - 1] = text;
        line += 1;
    }
    files.into_iter().map(|(f, lines)| (f, lines.join("\n"))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO: Include =
        Include { name: "two.cuh", file: "step99/src/two.cuh", text: "int two = 2;\nint three = 3;\n" };

    #[test]
    fn an_include_file_takes_its_include_lines_place_and_lines_stay_counted() {
        let source = "int one = 1;\n#include \"two.cuh\"\nint four = 4;\n";
        let out = expand(source, "mine/k.cu", &[TWO]).unwrap();
        assert_eq!(
            out,
            "int one = 1;\n#line 1 \"step99/src/two.cuh\"\nint two = 2;\nint three = 3;\n#line 3 \"mine/k.cu\"\nint four = 4;\n"
        );
    }

    #[test]
    fn an_expanded_source_gives_each_files_lines_back() {
        let source = "int one = 1;\n#include \"two.cuh\"\nint four = 4;\n";
        let out = expand(source, "mine/k.cu", &[TWO]).unwrap();
        assert_eq!(
            by_file(&out, "mine/k.cu"),
            [
                ("mine/k.cu".to_owned(), "int one = 1;\n\nint four = 4;".to_owned()),
                ("step99/src/two.cuh".to_owned(), "int two = 2;\nint three = 3;".to_owned())
            ]
        );
    }

    #[test]
    fn a_source_without_includes_is_left_as_it_is() {
        let source = "// #include \"two.cuh\" in a comment\n#include <cstdint>\n";
        assert!(matches!(expand(source, "k.cu", &[TWO]).unwrap(), Cow::Borrowed(_)));
    }

    #[test]
    fn an_unknown_include_is_refused_in_one_sentence() {
        let e = expand("int a;\n  # include \"tow.cuh\"\n", "mine/k.cu", &[TWO]).unwrap_err().to_string();
        assert_eq!(
            e,
            "mine/k.cu:2 includes \"tow.cuh\", which is not one of the step's include files (they are two.cuh)"
        );
        let e = expand("#include \"two.cuh\"\n", "k.cu", &[]).unwrap_err().to_string();
        assert!(e.contains("(the step has none)"), "{e}");
    }

    #[test]
    fn an_include_file_that_includes_itself_is_refused() {
        let looping = Include { text: "#include \"two.cuh\"\n", ..TWO };
        let e = expand("#include \"two.cuh\"\n", "k.cu", &[looping]).unwrap_err().to_string();
        assert!(e.contains("an include file includes itself"), "{e}");
    }
}

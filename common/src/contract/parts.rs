//! A step's parts: files of CUDA code that its kernel and the copies of it (a hands-on starting
//! file, a variant) include by name, `#include "NAME"`. A step embeds them with `include_str!`
//! and lists them in its `GpuStep::parts`; before NVRTC sees a kernel, [`expand`] puts each
//! included part in the place of its `#include` line, between `#line` directives, so that a
//! compile error or an emulator's fault in a part names the part's file and line, and one after
//! it the kernel's own. A name resolves to the step's part wherever the including file lies (the
//! step's `src/`, `exercises/`, a learner's `mine/`), and a built program reads no file for it.

use std::borrow::Cow;

use anyhow::{Result, bail};

/// One part of a step's kernel.
#[derive(Clone, Copy, Debug)]
pub struct Part {
    /// The name a kernel includes it by: `#include "hopper.cuh"`.
    pub name: &'static str,
    /// Its path from the repository's root, for compiler messages and the emulator's faults.
    pub file: &'static str,
    /// Its text, embedded with `include_str!`.
    pub text: &'static str,
}

/// Parts that include parts deeper than this are taken for a part that includes itself.
const DEPTH: usize = 8;

/// The name a line includes in quotes (`#include "NAME"`), if it is such a line.
fn included(line: &str) -> Option<&str> {
    let rest = line.trim_start().strip_prefix('#')?.trim_start().strip_prefix("include")?;
    let rest = rest.trim_start().strip_prefix('"')?;
    rest.split('"').next()
}

/// `source` (the kernel file `file`) with every `#include "NAME"` of one of `parts` replaced by
/// that part's text, framed by `#line` directives that keep the compiler's files and lines those
/// of the files as written. A source that includes nothing comes back as it is. An include of a
/// name none of `parts` has is refused in one sentence that names the line and the parts there are.
pub fn expand<'a>(source: &'a str, file: &str, parts: &[Part]) -> Result<Cow<'a, str>> {
    if !source.lines().any(|l| included(l).is_some()) {
        return Ok(Cow::Borrowed(source));
    }
    let mut out = String::with_capacity(source.len() + parts.iter().map(|p| p.text.len()).sum::<usize>());
    expand_into(&mut out, source, file, parts, 0)?;
    Ok(Cow::Owned(out))
}

fn expand_into(out: &mut String, source: &str, file: &str, parts: &[Part], depth: usize) -> Result<()> {
    for (n, line) in source.lines().enumerate() {
        let Some(name) = included(line) else {
            out.push_str(line);
            out.push('\n');
            continue;
        };
        let Some(part) = parts.iter().find(|p| p.name == name) else {
            let known: Vec<&str> = parts.iter().map(|p| p.name).collect();
            let offered = if known.is_empty() {
                "this step's kernels include no parts".to_owned()
            } else {
                format!("the step's parts are {}", known.join(", "))
            };
            bail!(
                "{file}:{} includes \"{name}\", which is none of the parts the step provides ({offered})",
                n + 1
            );
        };
        if depth == DEPTH {
            bail!(
                "{file}:{} includes \"{name}\" more than {DEPTH} parts deep: a part includes itself",
                n + 1
            );
        }
        out.push_str(&format!("#line 1 \"{}\"\n", part.file));
        expand_into(out, part.text, part.file, parts, depth + 1)?;
        out.push_str(&format!("#line {} \"{file}\"\n", n + 2));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const PART: Part =
        Part { name: "two.cuh", file: "step99/src/two.cuh", text: "int two = 2;\nint three = 3;\n" };

    #[test]
    fn a_part_takes_its_include_lines_place_and_lines_stay_counted() {
        let source = "int one = 1;\n#include \"two.cuh\"\nint four = 4;\n";
        let out = expand(source, "mine/k.cu", &[PART]).unwrap();
        assert_eq!(
            out,
            "int one = 1;\n#line 1 \"step99/src/two.cuh\"\nint two = 2;\nint three = 3;\n#line 3 \"mine/k.cu\"\nint four = 4;\n"
        );
    }

    #[test]
    fn a_source_without_includes_is_left_as_it_is() {
        let source = "// #include \"two.cuh\" in a comment\n#include <cstdint>\n";
        assert!(matches!(expand(source, "k.cu", &[PART]).unwrap(), Cow::Borrowed(_)));
    }

    #[test]
    fn an_unknown_include_is_refused_in_one_sentence() {
        let e = expand("int a;\n  # include \"tow.cuh\"\n", "mine/k.cu", &[PART]).unwrap_err().to_string();
        assert_eq!(
            e,
            "mine/k.cu:2 includes \"tow.cuh\", which is none of the parts the step provides (the step's parts are two.cuh)"
        );
        let e = expand("#include \"two.cuh\"\n", "k.cu", &[]).unwrap_err().to_string();
        assert!(e.contains("this step's kernels include no parts"), "{e}");
    }

    #[test]
    fn a_part_that_includes_itself_is_refused() {
        let looping = Part { text: "#include \"two.cuh\"\n", ..PART };
        let e = expand("#include \"two.cuh\"\n", "k.cu", &[looping]).unwrap_err().to_string();
        assert!(e.contains("a part includes itself"), "{e}");
    }
}

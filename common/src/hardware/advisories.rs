//! What ptxas says, only in its advisories, about a Hopper kernel's wgmma code it had to make
//! safe: a `warpgroup.arrive` (C7519) or `warpgroup.wait` (C7517) it added where the kernel's own
//! `wgmma.fence` or `wgmma.wait_group` was missing, or wgmma it serialised (C7510, C7518, C7520
//! and their kin). The emulator runs the PTX as written, so these cost nothing there; on a GPU
//! they cost speed. Each advisory is read from the compile's log, its PTX line taken back to the
//! `.cu` line of the `.loc` before it (and the call site where that line was inlined).

use std::collections::HashMap;

/// Where in the source an advisory points: a `.cu` file and line, and the line of the call that
/// inlined it there, if it was inlined.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceLine {
    pub file: String,
    pub line: u32,
    pub call_site: Option<(String, u32)>,
}

/// What ptxas did to the wgmma code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// A `warpgroup.arrive` (a `wgmma.fence`) before a wgmma whose registers were written with no
    /// fence between.
    ArriveInjected,
    /// A `warpgroup.wait` (a `wgmma.wait_group 0`) before an instruction that uses registers a
    /// wgmma still in flight writes.
    WaitInjected,
    /// Every wgmma of the function waits for the one before it to finish.
    Serialized,
}

/// One advisory: ptxas's code (`C7519`), what it did, the function, the place it names (none
/// where ptxas names no line), and its own words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Advisory {
    pub code: String,
    pub action: Action,
    pub function: String,
    pub place: Option<SourceLine>,
    pub text: String,
}

/// The wgmma advisories of an NVRTC log, each placed in the `.cu` source through `ptx`, the PTX
/// that compile was given (compiled with `--generate-line-info`, so that it has `.loc` lines).
pub fn parse(log: &str, ptx: &str) -> Vec<Advisory> {
    let lines: Vec<&str> = ptx.lines().collect();
    let files = file_names(&lines);
    log.lines().filter_map(|l| advisory(l, &lines, &files)).collect()
}

/// Whether any advisory says ptxas serialised the function's wgmma.
pub fn serialized(advisories: &[Advisory]) -> bool {
    advisories.iter().any(|a| a.action == Action::Serialized)
}

fn advisory(line: &str, ptx: &[&str], files: &HashMap<u32, String>) -> Option<Advisory> {
    let rest = line.strip_prefix("ptxas")?.trim_start().strip_prefix("info")?;
    let rest = rest.trim_start().strip_prefix(':')?.trim_start().strip_prefix("(C")?;
    let (digits, text) = rest.split_once(')')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let text = text.trim();
    let action = if text.contains("warpgroup.arrive is injected") {
        Action::ArriveInjected
    } else if text.contains("warpgroup.wait is injected") {
        Action::WaitInjected
    } else if text.contains("wgmma.mma_async instructions are serialized") {
        Action::Serialized
    } else {
        return None;
    };
    let function = between(text, "function '", "'").unwrap_or_default().to_owned();
    let ptx_line = between(text, "around line ", " ").and_then(|n| n.parse::<usize>().ok());
    let place = ptx_line.and_then(|n| place_of(ptx, n, files));
    Some(Advisory { code: format!("C{digits}"), action, function, place, text: text.to_owned() })
}

/// The text between the first `open` and the next `close` after it.
fn between<'a>(text: &'a str, open: &str, close: &str) -> Option<&'a str> {
    let start = text.find(open)? + open.len();
    let len = text[start..].find(close).unwrap_or(text.len() - start);
    Some(&text[start..start + len])
}

/// The `.file` directives: index to name.
fn file_names(ptx: &[&str]) -> HashMap<u32, String> {
    ptx.iter()
        .filter_map(|l| {
            let rest = l.trim_start().strip_prefix(".file")?;
            let mut words = rest.split_whitespace();
            let index = words.next()?.parse().ok()?;
            let name = between(rest, "\"", "\"")?;
            Some((index, name.to_owned()))
        })
        .collect()
}

/// The `.cu` place of PTX line `n` (counted from 1): the last `.loc` at or before it.
fn place_of(ptx: &[&str], n: usize, files: &HashMap<u32, String>) -> Option<SourceLine> {
    let upto = n.min(ptx.len());
    ptx[..upto].iter().rev().find_map(|l| loc(l, files))
}

/// A `.loc FILE LINE COL[, function_name NAME, inlined_at FILE LINE COL]` directive as a place.
fn loc(line: &str, files: &HashMap<u32, String>) -> Option<SourceLine> {
    let rest = line.trim_start().strip_prefix(".loc")?;
    let mut parts = rest.split(',');
    let (file, line) = file_and_line(parts.next()?, files)?;
    let call_site =
        parts.filter_map(|p| p.trim_start().strip_prefix("inlined_at")).find_map(|p| file_and_line(p, files));
    Some(SourceLine { file, line, call_site })
}

fn file_and_line(words: &str, files: &HashMap<u32, String>) -> Option<(String, u32)> {
    let mut words = words.split_whitespace();
    let index: u32 = words.next()?.parse().ok()?;
    let line: u32 = words.next()?.parse().ok()?;
    // Line 0 is the compiler's own code, with no source line.
    (line > 0).then(|| (files.get(&index).cloned().unwrap_or_else(|| format!("file {index}")), line))
}

impl SourceLine {
    /// `FILE:LINE`, with the call site that inlined it: `FILE:153 (inlined at line 275)`.
    pub fn describe(&self) -> String {
        match &self.call_site {
            Some((file, line)) if *file == self.file => {
                format!("{}:{} (inlined at line {line})", self.file, self.line)
            }
            Some((file, line)) => format!("{}:{} (inlined at {file}:{line})", self.file, self.line),
            None => format!("{}:{}", self.file, self.line),
        }
    }
}

impl Advisory {
    /// The sentence a run prints: where, the code, what ptxas did and what it costs on a GPU.
    pub fn sentence(&self) -> String {
        let at = match &self.place {
            Some(p) => p.describe(),
            None => format!("`{}` (ptxas names no line)", self.function),
        };
        match self.action {
            Action::ArriveInjected => format!(
                "note: {at}: ptxas advisory {}: no wgmma.fence orders the register writes before this wgmma, so ptxas adds a warpgroup.arrive here, which on a GPU costs what the fence would before a group's first wgmma but serialises the wgmma where it lands between two of them; the emulator runs the code as written, so write wgmma_fence() before each group's first wgmma",
                self.code
            ),
            Action::WaitInjected => format!(
                "note: {at}: ptxas advisory {}: this line uses accumulators a wgmma may still be writing, so ptxas adds a warpgroup.wait before it, which on a GPU stops the warpgroup here until all its wgmma have finished, so none overlaps the code after it; the emulator runs the code as written, so read the accumulators only after wgmma_wait_all()",
                self.code
            ),
            Action::Serialized => format!(
                "note: {at}: ptxas advisory {}: ptxas serialises every wgmma of `{}` ({}), so on a GPU each waits for the one before it to finish and the tensor cores no longer overlap them; the emulator runs them as written, and the predicted time adds those waits",
                self.code,
                self.function,
                self.reason()
            ),
        }
    }

    /// ptxas's reason for a serialisation, in its own words: what follows "due to".
    fn reason(&self) -> String {
        match between(&self.text, "due to ", " in the function") {
            Some(why) => format!("due to {why}"),
            None => self.text.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = "\t.file\t1 \"lab/kernel.cu\"\n\
                       \t.loc\t1 272 13\n\
                       \tor.b64 %rd95, %rd124, 1;\n\
                       \t.loc\t1 153 19, function_name $L__info_string6, inlined_at 1 275 17\n\
                       \t// begin inline asm\n\
                       wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 {%f1}, {%r1}, %rd95, p, 1, 1;\n\
                       \t.loc\t1 278 13\n\
                       \tsetp.gt.f32 %p7, %f1, 0f7149F2CA;\n";

    #[test]
    fn an_injected_arrive_names_the_inlined_line_and_its_call_site() {
        let log = "ptxas info    : (C7519) warpgroup.arrive is injected in around line 6 by compiler to allow use of registers in GMMA in function 'matmul'\n\
                   ptxas info    : 44 bytes gmem\n";
        let a = parse(log, PTX);
        assert_eq!(a.len(), 1, "{a:?}");
        assert_eq!(
            (a[0].code.as_str(), a[0].action, a[0].function.as_str()),
            ("C7519", Action::ArriveInjected, "matmul")
        );
        let place = a[0].place.clone().unwrap();
        assert_eq!(place.describe(), "lab/kernel.cu:153 (inlined at line 275)");
        assert!(!serialized(&a));
        assert_eq!(a[0].sentence().lines().count(), 1);
    }

    #[test]
    fn an_injected_wait_names_the_line_that_reads_the_accumulators() {
        let log = "ptxas info    : (C7517) warpgroup.wait is injected in around line 8 by compiler to allow use of registers defined by GMMA in function 'matmul'\n";
        let a = parse(log, PTX);
        assert_eq!(a[0].action, Action::WaitInjected);
        assert_eq!(a[0].place.as_ref().unwrap().describe(), "lab/kernel.cu:278");
        assert!(
            a[0].sentence().starts_with("note: lab/kernel.cu:278: ptxas advisory C7517:"),
            "{}",
            a[0].sentence()
        );
    }

    #[test]
    fn a_serialisation_without_a_line_names_the_function_and_the_reason() {
        let log = "ptxas info    : (C7518) Potential Performance Loss: wgmma.mma_async instructions are serialized due to program dependence on compiler-inserted WG.DP in divergent path in the function 'matmul'\n";
        let a = parse(log, PTX);
        assert_eq!((a[0].action, a[0].place.clone()), (Action::Serialized, None));
        assert!(serialized(&a));
        let s = a[0].sentence();
        assert!(s.contains("`matmul` (ptxas names no line)"), "{s}");
        assert!(
            s.contains("(due to program dependence on compiler-inserted WG.DP in divergent path)"),
            "{s}"
        );
    }

    #[test]
    fn other_log_lines_are_no_advisories() {
        let log = "ptxas info    : Compiling entry function 'matmul' for 'sm_90a'\n\
                   ptxas info    : Used 168 registers, used 1 barriers\n\
                   ptxas info    : (C7777) something else entirely\n";
        assert!(parse(log, PTX).is_empty());
    }
}

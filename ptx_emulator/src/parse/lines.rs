//! NVRTC's line information: the fields of a `.loc` directive (with `inlined_at`, the call an
//! inlined helper's statement came from) and the names of the helpers in the `.debug_str`
//! section, demangled.

use std::collections::HashMap;

use super::{ParseError, Reader, Tok};

/// A `.loc` directive's fields: `.loc file line column`, then, in an inlined function,
/// `, function_name $L__info_stringN, inlined_at file line column`.
pub(super) struct Loc {
    pub(super) file: u32,
    pub(super) line: u32,
    pub(super) column: u32,
    /// The helper's string number and the place it was called from.
    pub(super) inlined: Option<(u32, (u32, u32, u32))>,
}

/// Reads a `.loc` directive's fields on PTX line `ptx_line` (what it cannot read counts as 0).
pub(super) fn location(r: &mut Reader, ptx_line: u32) -> Loc {
    let mut fields: Vec<String> = Vec::new();
    while let Some(t) = r.toks.get(r.at).filter(|t| t.line == ptx_line) {
        if let Tok::Word(w) = &t.tok {
            fields.push(w.clone());
        }
        r.at += 1;
    }
    let number = |i: usize| fields.get(i).and_then(|w| w.parse().ok()).unwrap_or(0u32);
    let helper = fields
        .iter()
        .position(|w| w == "function_name")
        .and_then(|i| fields.get(i + 1))
        .and_then(|w| w.strip_prefix("$L__info_string"))
        .and_then(|n| n.parse().ok());
    let at =
        fields.iter().position(|w| w == "inlined_at").map(|i| (number(i + 1), number(i + 2), number(i + 3)));
    Loc { file: number(0), line: number(1), column: number(2), inlined: helper.zip(at) }
}

/// The `.debug_str` section's strings (`$L__info_stringN: .b8 95,90,…,0`), by N, demangled.
pub(super) fn debug_strings(r: &mut Reader) -> Result<HashMap<u32, String>, ParseError> {
    r.expect('{')?;
    let mut out = HashMap::new();
    let mut current: Option<(u32, Vec<u8>)> = None;
    loop {
        match r.next() {
            Some(Tok::Punct('}')) => break,
            None => return r.err("unclosed `{`"),
            Some(Tok::Word(w)) => {
                if let Some(n) = w.strip_prefix("$L__info_string").and_then(|n| n.parse().ok()) {
                    if let Some((k, bytes)) = current.take() {
                        out.insert(k, demangle(&bytes));
                    }
                    current = Some((n, Vec::new()));
                } else if let (Some((_, bytes)), Ok(b)) = (current.as_mut(), w.parse::<u8>()) {
                    if b != 0 {
                        bytes.push(b);
                    }
                }
            }
            Some(_) => {}
        }
    }
    if let Some((k, bytes)) = current {
        out.insert(k, demangle(&bytes));
    }
    Ok(out)
}

/// A function's name as the source writes it, from its mangled name (`_Z8mbar_waitPyj`:
/// `mbar_wait`; `_ZN2ns4waitEv`: `ns::wait`); a name that is not mangled stays as it is.
pub fn demangle(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes).into_owned();
    if let Some(local) = text.strip_prefix("_ZZ") {
        // An entity local to a function (a lambda's call operator): named by that function.
        let outer = demangle(format!("_Z{local}").as_bytes());
        return if local.contains("EUl") || local.contains("ENKUl") {
            format!("a lambda in {outer}")
        } else {
            outer
        };
    }
    let Some(rest) = text.strip_prefix("_Z") else { return text };
    let (nested, mut rest) = match rest.strip_prefix('N') {
        Some(r) => (true, r),
        None => (false, rest),
    };
    let mut parts: Vec<&str> = Vec::new();
    loop {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let Ok(len) = rest[..digits].parse::<usize>() else { break };
        let Some(name) = rest.get(digits..digits + len) else { break };
        parts.push(name);
        rest = &rest[digits + len..];
        if !nested {
            break;
        }
    }
    if parts.is_empty() { text } else { parts.join("::") }
}

#[cfg(test)]
mod tests {
    use super::super::{BodyItem, Call, Statement, parse};
    use super::demangle;

    #[test]
    fn inlined_lines_keep_the_outermost_call_and_the_innermost_helper() {
        let m = parse(
            ".visible .entry k()
{
	.reg .b32 %r<2>;
	.loc	1 240 17
	mov.u32 %r1, 0;
	.loc	1 85 17, function_name $L__info_string1, inlined_at 1 240 17
	.loc	1 42 5, function_name $L__info_string0, inlined_at 1 85 17
	mov.u32 %r1, 1;
	.loc	1 0 0
	mov.u32 %r1, 2;
	.loc	1 86 13, function_name $L__info_string1, inlined_at 1 242 21
	mov.u32 %r1, 3;
	.loc	1 243 3
	ret;
}
	.section	.debug_str
	{
$L__info_string0:
.b8 95,90,52,115,109,101,109,80,75,118,0
$L__info_string1:
.b8 95,90,56,116,109,97,95,108,111,97,100,80,102,0
	}
",
        )
        .unwrap();
        assert_eq!(m.helpers[&0], "smem");
        assert_eq!(m.helpers[&1], "tma_load");
        let stmts: Vec<&Statement> = m.functions[0]
            .body
            .iter()
            .filter_map(|i| if let BodyItem::Stmt(s) = i { Some(s) } else { None })
            .collect();
        assert_eq!((stmts[0].line, stmts[0].call), (240, None));
        let nested = Call { file: 1, line: 240, column: 17, inner: (1, 85, 17), body: 1, helper: 0 };
        assert_eq!((stmts[1].line, stmts[1].call), (42, Some(nested)), "smem, called in tma_load");
        assert_eq!((stmts[2].line, stmts[2].call), (42, Some(nested)), "`.loc 1 0 0` keeps the place");
        let direct = Call { file: 1, line: 242, column: 21, inner: (0, 0, 0), body: 1, helper: 1 };
        assert_eq!((stmts[3].line, stmts[3].call), (86, Some(direct)));
        assert_eq!((stmts[4].line, stmts[4].call), (243, None));
    }

    #[test]
    fn mangled_names_read_as_the_source_writes_them() {
        assert_eq!(demangle(b"_Z9mbar_waitPyj"), "mbar_wait");
        assert_eq!(demangle(b"_ZN4sync9mbar_waitEPyj"), "sync::mbar_wait");
        assert_eq!(demangle(b"_ZZ7productILb0EEviiE_clES6_i"), "product");
        assert_eq!(demangle(b"_ZZ7productILb0EEviiENKUlRA4_jiE_clES6_i"), "a lambda in product");
        assert_eq!(demangle(b"matmul"), "matmul");
    }
}

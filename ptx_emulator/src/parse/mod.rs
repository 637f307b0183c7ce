//! PTX text to a module: the kernels, their parameters, registers, shared variables and
//! statements, each statement with the `.cu` line NVRTC's line information gives it.
//!
//! NVRTC's PTX is regular: one statement per line, ended by `;`, except the `.loc` and `.file`
//! directives, which end at the line's end, and inline-assembly blocks `{ … }` that declare
//! registers of their own. A small tokenizer and a recursive reader cover it; what they do not
//! recognise is refused with the PTX line it was on.

use std::collections::HashMap;

mod lines;

pub use lines::demangle;
use lines::{debug_strings, location};

/// A parsed PTX module.
#[derive(Debug, Default)]
pub struct Module {
    pub functions: Vec<Function>,
    /// Module-scope `.global` variables: name, bytes, alignment.
    pub globals: Vec<Var>,
    /// Module-scope `.shared` variables (an `.extern` one, of no size, is the dynamic array).
    pub shared: Vec<Var>,
    /// `.file` numbers and their names.
    pub files: HashMap<u32, String>,
    /// The names of the inlined functions the line information refers to (`$L__info_stringN` of
    /// the `.debug_str` section, by N), demangled.
    pub helpers: HashMap<u32, String>,
}

/// Where an inlined function's statement was called from: the call's file, line and column in
/// the kernel (the outermost call, where helpers call helpers), the call one level in (file 0:
/// none), the function called at the outermost call, and the innermost helper the statement is
/// in (functions by their `$L__info_stringN` number).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Call {
    pub file: u32,
    pub line: u32,
    pub column: u32,
    pub inner: (u32, u32, u32),
    pub body: u32,
    pub helper: u32,
}

/// A variable in a state space: its name, size in bytes and alignment.
#[derive(Clone, Debug)]
pub struct Var {
    pub name: String,
    pub bytes: usize,
    pub align: usize,
    /// The bytes of its initializer (`= 4;`, `= {1, 2};`), empty for none.
    pub init: Vec<u8>,
    /// The size of one element, for the initializer.
    pub elem: usize,
}

/// A `.entry` (kernel) or `.func`.
#[derive(Debug, Default)]
pub struct Function {
    pub name: String,
    pub entry: bool,
    /// Parameters in order: name, size in bytes and alignment.
    pub params: Vec<(String, usize, usize)>,
    /// The blocks of a cluster the kernel asks for (`.reqnctapercluster x, y, z`), if it does.
    pub cluster: Option<[u32; 3]>,
    /// The launch bounds the kernel declares (`__launch_bounds__`): its most threads a block
    /// (`.maxntid`, the product of its sides) and its fewest blocks an SM (`.minnctapersm`).
    pub maxntid: Option<u32>,
    pub minnctapersm: Option<u32>,
    /// Every register the body may name (scoped ones renamed apart), and its type's name.
    pub regs: Vec<(String, String)>,
    pub shared: Vec<Var>,
    /// The dynamic shared array (`.extern .shared`), if any, with its alignment.
    pub dynamic_shared: Option<Var>,
    pub local: Vec<Var>,
    pub body: Vec<BodyItem>,
}

/// One item of a function body.
#[derive(Debug, Clone)]
pub enum BodyItem {
    Label(String),
    Stmt(Statement),
}

/// One instruction as written: `@%p opcode.mods operands;`.
#[derive(Debug, Clone)]
pub struct Statement {
    /// The guard predicate and whether it is negated (`@!%p`).
    pub guard: Option<(String, bool)>,
    pub opcode: String,
    pub operands: Vec<Operand>,
    /// The `.cu` file number and line of the last `.loc` before it (0: none).
    pub file: u32,
    pub line: u32,
    /// The call it was inlined at, if it is in an inlined function.
    pub call: Option<Call>,
    /// The line of the PTX text, for messages about the PTX itself.
    pub ptx_line: u32,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Operand {
    Reg(String),
    /// `!%p`
    NotReg(String),
    Int(i64),
    /// A float immediate, as its bits: `0f…` (f32) or `0d…` (f64), and whether it is f64.
    Float(u64, bool),
    /// A variable, parameter or label.
    Symbol(String),
    /// `[base+offset]`: base is a register, a symbol or nothing (an absolute address).
    Address(Option<Box<Operand>>, i64),
    /// `[map, {x, y, …}]`: a tensor map's address and the coordinates of a box in its tensor.
    Tensor(Box<Operand>, Vec<Operand>),
    Vector(Vec<Operand>),
    /// `a|b`: two destinations (a value and a predicate).
    Pair(Box<Operand>, Box<Operand>),
}

/// What the parser could not read, with the PTX line.
#[derive(Debug, Clone, PartialEq)]
pub struct ParseError {
    pub ptx_line: u32,
    pub message: String,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {} of the PTX: {}", self.ptx_line, self.message)
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Word(String),
    Str(String),
    Punct(char),
}

#[derive(Debug, Clone)]
struct PtxToken {
    tok: Tok,
    line: u32,
}

fn tokenize(text: &str) -> Result<Vec<PtxToken>, ParseError> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let (mut i, mut line) = (0usize, 1u32);
    let word_char = |c: u8| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'$' | b'.' | b'%');
    while i < bytes.len() {
        let c = bytes[i];
        if c == b'\n' {
            line += 1;
            i += 1;
        } else if c.is_ascii_whitespace() {
            i += 1;
        } else if c == b'/' && bytes.get(i + 1) == Some(&b'/') {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
        } else if c == b'/' && bytes.get(i + 1) == Some(&b'*') {
            i += 2;
            while i + 1 < bytes.len() && !(bytes[i] == b'*' && bytes[i + 1] == b'/') {
                line += u32::from(bytes[i] == b'\n');
                i += 1;
            }
            i += 2;
        } else if c == b'"' {
            let start = i + 1;
            i += 1;
            while i < bytes.len() && bytes[i] != b'"' {
                i += 1;
            }
            out.push(PtxToken { tok: Tok::Str(text[start..i.min(bytes.len())].to_owned()), line });
            i += 1;
        } else if word_char(c) {
            let start = i;
            // `::` belongs to a word (`shared::cta`, `L2::128B`); a single `:` ends a label.
            while i < bytes.len()
                && (word_char(bytes[i]) || (bytes[i] == b':' && bytes.get(i + 1) == Some(&b':')))
            {
                i += if bytes[i] == b':' { 2 } else { 1 };
            }
            out.push(PtxToken { tok: Tok::Word(text[start..i].to_owned()), line });
        } else if b",;:[]{}()+-@!<>|=".contains(&c) {
            out.push(PtxToken { tok: Tok::Punct(c as char), line });
            i += 1;
        } else {
            return Err(ParseError {
                ptx_line: line,
                message: format!("unexpected character `{}`", c as char),
            });
        }
    }
    Ok(out)
}

struct Reader {
    toks: Vec<PtxToken>,
    at: usize,
}

impl Reader {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.at).map(|t| &t.tok)
    }
    fn line(&self) -> u32 {
        self.toks.get(self.at).or(self.toks.last()).map_or(0, |t| t.line)
    }
    fn next(&mut self) -> Option<Tok> {
        let t = self.toks.get(self.at).map(|t| t.tok.clone());
        self.at += 1;
        t
    }
    fn err<T>(&self, message: impl Into<String>) -> Result<T, ParseError> {
        Err(ParseError { ptx_line: self.line(), message: message.into() })
    }
    fn is_punct(&self, c: char) -> bool {
        self.peek() == Some(&Tok::Punct(c))
    }
    fn expect(&mut self, c: char) -> Result<(), ParseError> {
        if self.is_punct(c) {
            self.at += 1;
            Ok(())
        } else {
            self.err(format!("expected `{c}`, found {:?}", self.peek()))
        }
    }
    fn word(&mut self) -> Result<String, ParseError> {
        match self.next() {
            Some(Tok::Word(w)) => Ok(w),
            other => {
                self.at -= 1;
                self.err(format!("expected a name, found {other:?}"))
            }
        }
    }
    /// Skips to just past the next `;` (or the end of the current line for `.loc`-like
    /// directives when `line_end` is set).
    fn skip_statement(&mut self) {
        while let Some(t) = self.next() {
            if t == Tok::Punct(';') {
                return;
            }
        }
    }
    fn skip_line(&mut self, line: u32) {
        while self.toks.get(self.at).is_some_and(|t| t.line == line) {
            self.at += 1;
        }
    }
    /// Skips a balanced `{ … }` block (e.g. a `.section` of debug data).
    fn skip_block(&mut self) -> Result<(), ParseError> {
        self.expect('{')?;
        let mut depth = 1;
        while depth > 0 {
            match self.next() {
                Some(Tok::Punct('{')) => depth += 1,
                Some(Tok::Punct('}')) => depth -= 1,
                None => return self.err("unclosed `{`"),
                _ => {}
            }
        }
        Ok(())
    }
}

/// Parses NVRTC's PTX.
pub fn parse(text: &str) -> Result<Module, ParseError> {
    let mut r = Reader { toks: tokenize(text)?, at: 0 };
    let mut module = Module::default();
    let mut pending_attrs: Vec<String> = Vec::new();
    while let Some(tok) = r.peek().cloned() {
        let line = r.line();
        match tok {
            Tok::Word(w) if w == ".version" || w == ".target" || w == ".address_size" => r.skip_line(line),
            Tok::Word(w) if w == ".file" => {
                r.at += 1;
                let number = r.word()?.parse().unwrap_or(0);
                let name = match r.next() {
                    Some(Tok::Str(s)) => s,
                    _ => return r.err("`.file` without a file name"),
                };
                module.files.insert(number, name);
                r.skip_line(line);
            }
            Tok::Word(w) if w == ".section" => {
                r.at += 1;
                if r.word()? == ".debug_str" {
                    module.helpers = debug_strings(&mut r)?;
                } else {
                    r.skip_block()?;
                }
            }
            Tok::Word(w) if w == ".visible" || w == ".weak" || w == ".extern" => {
                pending_attrs.push(w);
                r.at += 1;
            }
            Tok::Word(w) if w == ".entry" || w == ".func" => {
                r.at += 1;
                let f = function(&mut r, w == ".entry", pending_attrs.contains(&".extern".to_owned()))?;
                pending_attrs.clear();
                if let Some(f) = f {
                    module.functions.push(f);
                }
            }
            Tok::Word(w) if w == ".global" || w == ".const" => {
                r.at += 1;
                let mut var = variable(&mut r)?;
                if r.is_punct('=') {
                    r.at += 1;
                    var.init = initializer(&mut r, var.elem)?;
                }
                r.expect(';')?;
                // Constant memory is global memory the kernel only reads: it lives beside the
                // module's `.global` variables.
                module.globals.push(var);
                pending_attrs.clear();
            }
            Tok::Word(w) if w == ".shared" => {
                r.at += 1;
                let var = variable(&mut r)?;
                r.expect(';')?;
                module.shared.push(var);
                pending_attrs.clear();
            }
            Tok::Punct(';') => r.at += 1,
            other => return r.err(format!("unexpected {other:?} at the module's top level")),
        }
    }
    Ok(module)
}

/// `.align N .b8 name[bytes]` (or a scalar `.u32 name`) after the state space.
fn variable(r: &mut Reader) -> Result<Var, ParseError> {
    let mut align = 0usize;
    let mut elem = 0usize;
    let name = loop {
        let w = r.word()?;
        if w == ".align" {
            align = r
                .word()?
                .parse()
                .map_err(|_| ParseError { ptx_line: r.line(), message: "bad .align".into() })?;
        } else if let Some(bytes) = type_bytes(&w) {
            elem = bytes;
        } else if w.starts_with('.') {
            continue;
        } else {
            break w;
        }
    };
    let mut count = 1usize;
    if r.is_punct('[') {
        r.at += 1;
        if r.is_punct(']') {
            count = 0;
        } else {
            count = r
                .word()?
                .parse()
                .map_err(|_| ParseError { ptx_line: r.line(), message: "bad array size".into() })?;
        }
        r.expect(']')?;
    }
    let align = if align == 0 { elem.max(1) } else { align };
    Ok(Var { name, bytes: elem * count, align, init: Vec::new(), elem })
}

/// `= v` or `= {v, v, …}`: integers or float bits, `elem` bytes each, little-endian.
fn initializer(r: &mut Reader, elem: usize) -> Result<Vec<u8>, ParseError> {
    let braced = r.is_punct('{');
    if braced {
        r.at += 1;
    }
    let mut out = Vec::new();
    loop {
        let value = match single(r, &[])? {
            Operand::Int(v) => v as u64,
            Operand::Float(bits, _) => bits,
            other => return r.err(format!("the initializer {other:?} is not emulated")),
        };
        out.extend_from_slice(&value.to_le_bytes()[..elem.min(8)]);
        if r.is_punct(',') {
            r.at += 1;
        } else {
            break;
        }
    }
    if braced {
        r.expect('}')?;
    }
    Ok(out)
}

/// The size of a PTX fundamental type, e.g. `.u32` → 4.
pub fn type_bytes(ty: &str) -> Option<usize> {
    Some(match ty {
        ".b8" | ".u8" | ".s8" => 1,
        ".b16" | ".u16" | ".s16" | ".f16" | ".bf16" => 2,
        ".b32" | ".u32" | ".s32" | ".f32" | ".f16x2" | ".bf16x2" => 4,
        ".b64" | ".u64" | ".s64" | ".f64" => 8,
        ".pred" => 1,
        _ => return None,
    })
}

/// A function's header and body; None for a declaration without a body.
fn function(r: &mut Reader, entry: bool, declaration: bool) -> Result<Option<Function>, ParseError> {
    let mut f = Function { entry, ..Function::default() };
    // A `.func` may have return values in parentheses before its name.
    if r.is_punct('(') {
        return r.err(
            "device functions with return values are not emulated (the course's kernels inline theirs)",
        );
    }
    f.name = r.word()?;
    if r.is_punct('(') {
        r.at += 1;
        while !r.is_punct(')') {
            let space = r.word()?;
            if space != ".param" {
                return r.err(format!("expected `.param` in {}'s parameters, found `{space}`", f.name));
            }
            let var = variable(r)?;
            f.params.push((var.name, var.bytes, var.align));
            if r.is_punct(',') {
                r.at += 1;
            }
        }
        r.expect(')')?;
    }
    // Performance directives (.maxntid 256, 1, 1; .minnctapersm 1; .reqntid …) until the body;
    // the cluster's shape is kept, since the blocks of a cluster run together.
    while let Some(t) = r.peek().cloned() {
        match t {
            Tok::Punct('{') | Tok::Punct(';') => break,
            Tok::Word(w) if w == ".reqnctapercluster" => {
                r.at += 1;
                let mut dims = [1u32; 3];
                for d in &mut dims {
                    match r.peek() {
                        Some(Tok::Word(v)) if v.starts_with(|c: char| c.is_ascii_digit()) => {
                            *d = v.parse().map_err(|_| ParseError {
                                ptx_line: r.line(),
                                message: format!("bad cluster dimension `{v}`"),
                            })?;
                            r.at += 1;
                        }
                        _ => break,
                    }
                    if r.is_punct(',') {
                        r.at += 1;
                    }
                }
                f.cluster = Some(dims);
            }
            Tok::Word(w) if w == ".maxntid" || w == ".minnctapersm" => {
                r.at += 1;
                let mut product = 1u32;
                while let Some(Tok::Word(v)) = r.peek() {
                    let Ok(n) = v.parse::<u32>() else { break };
                    product = product.saturating_mul(n);
                    r.at += 1;
                    if r.is_punct(',') {
                        r.at += 1;
                    }
                }
                if w == ".maxntid" {
                    f.maxntid = Some(product);
                } else {
                    f.minnctapersm = Some(product);
                }
            }
            _ => r.at += 1,
        }
    }
    if r.is_punct(';') || declaration {
        r.at += 1;
        return Ok(None);
    }
    r.expect('{')?;
    body(r, &mut f)?;
    Ok(Some(f))
}

/// The body up to its closing brace: register declarations (renamed apart inside nested
/// blocks), variables, labels and statements.
fn body(r: &mut Reader, f: &mut Function) -> Result<(), ParseError> {
    let mut scopes: Vec<HashMap<String, String>> = vec![HashMap::new()];
    let (mut file, mut line) = (0u32, 0u32);
    let mut call: Option<Call> = None;
    // The outermost call of each inlined place seen so far, for nested calls.
    let mut outermost: HashMap<(u32, u32, u32), Call> = HashMap::new();
    let mut fresh = 0usize;
    loop {
        let ptx_line = r.line();
        let Some(tok) = r.next() else { return r.err(format!("the body of {} does not end", f.name)) };
        match tok {
            Tok::Punct('{') => scopes.push(HashMap::new()),
            Tok::Punct('}') => {
                scopes.pop();
                if scopes.is_empty() {
                    return Ok(());
                }
            }
            Tok::Punct(';') => {}
            Tok::Word(w) if w == ".loc" => {
                let loc = location(r, ptx_line);
                // `.loc 1 0 0` (code of no line) keeps the place before it.
                if loc.line == 0 {
                    continue;
                }
                file = loc.file;
                line = loc.line;
                call = loc.inlined.map(|(helper, at)| {
                    let c = match outermost.get(&at) {
                        // Called from a helper: the outermost call stays, and the call one
                        // level in is the first call made inside it.
                        Some(&c) => Call { inner: if c.inner.0 == 0 { at } else { c.inner }, helper, ..c },
                        None => Call {
                            file: at.0,
                            line: at.1,
                            column: at.2,
                            inner: (0, 0, 0),
                            body: helper,
                            helper,
                        },
                    };
                    outermost.insert((loc.file, loc.line, loc.column), c);
                    c
                });
            }
            Tok::Word(w) if w == ".pragma" => r.skip_statement(),
            Tok::Word(w) if w == ".reg" => {
                let ty = r.word()?;
                let ty = if ty == ".v2" || ty == ".v4" {
                    return r.err("vector registers are not emulated");
                } else {
                    ty
                };
                loop {
                    let name = r.word()?;
                    if r.is_punct('<') {
                        r.at += 1;
                        let n: usize = r
                            .word()?
                            .parse()
                            .map_err(|_| ParseError { ptx_line, message: "bad register count".into() })?;
                        r.expect('>')?;
                        for i in 0..n {
                            let reg = format!("{name}{i}");
                            let unique = if scopes.len() > 1 {
                                fresh += 1;
                                format!("{reg}#{fresh}")
                            } else {
                                reg.clone()
                            };
                            scopes.last_mut().expect("a scope").insert(reg, unique.clone());
                            f.regs.push((unique, ty.clone()));
                        }
                    } else {
                        let unique = if scopes.len() > 1 {
                            fresh += 1;
                            format!("{name}#{fresh}")
                        } else {
                            name.clone()
                        };
                        scopes.last_mut().expect("a scope").insert(name, unique.clone());
                        f.regs.push((unique, ty.clone()));
                    }
                    if r.is_punct(',') {
                        r.at += 1;
                    } else {
                        break;
                    }
                }
                r.expect(';')?;
            }
            Tok::Word(w) if w == ".shared" || w == ".local" || w == ".extern" => {
                let space = if w == ".extern" { r.word()? } else { w };
                let var = variable(r)?;
                r.expect(';')?;
                match (space.as_str(), var.bytes) {
                    (".shared", 0) => f.dynamic_shared = Some(var),
                    (".shared", _) => f.shared.push(var),
                    (".local", _) => f.local.push(var),
                    _ => return r.err(format!("`{space}` variables are not emulated")),
                }
            }
            Tok::Word(w) if w.starts_with('.') => {
                return Err(ParseError { ptx_line, message: format!("the directive `{w}` is not emulated") });
            }
            Tok::Word(w) if r.is_punct(':') => {
                r.at += 1;
                f.body.push(BodyItem::Label(w));
            }
            Tok::Punct('@') => {
                let negated = r.is_punct('!');
                if negated {
                    r.at += 1;
                }
                let p = rename(&scopes, r.word()?);
                let mut s = statement(r, &scopes, ptx_line)?;
                s.guard = Some((p, negated));
                s.file = file;
                s.line = line;
                s.call = call;
                f.body.push(BodyItem::Stmt(s));
            }
            Tok::Word(w) => {
                r.at -= 1;
                let _ = w;
                let mut s = statement(r, &scopes, ptx_line)?;
                s.file = file;
                s.line = line;
                s.call = call;
                f.body.push(BodyItem::Stmt(s));
            }
            other => return Err(ParseError { ptx_line, message: format!("unexpected {other:?}") }),
        }
    }
}

/// Whether `name` is a declared register (names without `%` are declared in inline blocks).
fn is_register(scopes: &[HashMap<String, String>], name: &str) -> bool {
    scopes.iter().any(|s| s.contains_key(name))
}

fn rename(scopes: &[HashMap<String, String>], name: String) -> String {
    scopes.iter().rev().find_map(|s| s.get(&name).cloned()).unwrap_or(name)
}

fn statement(
    r: &mut Reader,
    scopes: &[HashMap<String, String>],
    ptx_line: u32,
) -> Result<Statement, ParseError> {
    let opcode = r.word()?;
    let mut operands = Vec::new();
    if !r.is_punct(';') {
        loop {
            operands.push(operand(r, scopes)?);
            if r.is_punct(',') {
                r.at += 1;
            } else {
                break;
            }
        }
    }
    r.expect(';')?;
    Ok(Statement { guard: None, opcode, operands, file: 0, line: 0, call: None, ptx_line })
}

fn operand(r: &mut Reader, scopes: &[HashMap<String, String>]) -> Result<Operand, ParseError> {
    let first = single(r, scopes)?;
    if r.is_punct('|') {
        r.at += 1;
        let second = single(r, scopes)?;
        return Ok(Operand::Pair(Box::new(first), Box::new(second)));
    }
    Ok(first)
}

fn single(r: &mut Reader, scopes: &[HashMap<String, String>]) -> Result<Operand, ParseError> {
    match r.next() {
        Some(Tok::Punct('[')) => {
            let mut base = None;
            let mut offset = 0i64;
            if let Some(Tok::Word(w)) = r.peek().cloned() {
                r.at += 1;
                if w.starts_with(|c: char| c.is_ascii_digit()) {
                    offset = number(r, &w)?;
                } else if w.starts_with('%') || is_register(scopes, &w) {
                    base = Some(Box::new(Operand::Reg(rename(scopes, w))));
                } else {
                    base = Some(Box::new(Operand::Symbol(rename(scopes, w))));
                }
            }
            if r.is_punct(',') {
                // A tensor's coordinates after the map's address.
                r.at += 1;
                let Operand::Vector(coords) = single(r, scopes)? else {
                    return r.err("expected the coordinates `{x, y}` after a tensor map");
                };
                r.expect(']')?;
                let map =
                    base.ok_or(ParseError { ptx_line: r.line(), message: "a tensor without a map".into() })?;
                return Ok(Operand::Tensor(map, coords));
            }
            while r.is_punct('+') || r.is_punct('-') {
                let sign = if r.is_punct('-') { -1 } else { 1 };
                r.at += 1;
                let sign = if r.is_punct('-') {
                    r.at += 1;
                    -sign
                } else {
                    sign
                };
                let w = r.word()?;
                offset += sign * number(r, &w)?;
            }
            r.expect(']')?;
            Ok(Operand::Address(base, offset))
        }
        Some(Tok::Punct('{')) => {
            let mut items = Vec::new();
            while !r.is_punct('}') {
                items.push(single(r, scopes)?);
                if r.is_punct(',') {
                    r.at += 1;
                }
            }
            r.expect('}')?;
            Ok(Operand::Vector(items))
        }
        Some(Tok::Punct('-')) => {
            let w = r.word()?;
            Ok(Operand::Int(-number(r, &w)?))
        }
        Some(Tok::Punct('!')) => Ok(Operand::NotReg(rename(scopes, r.word()?))),
        Some(Tok::Word(w)) if w.starts_with(|c: char| c.is_ascii_digit()) => {
            if let Some(hex) = w.strip_prefix("0f").or_else(|| w.strip_prefix("0F")) {
                let bits = u32::from_str_radix(hex, 16)
                    .map_err(|_| ParseError { ptx_line: r.line(), message: format!("bad float `{w}`") })?;
                return Ok(Operand::Float(u64::from(bits), false));
            }
            if let Some(hex) = w.strip_prefix("0d").or_else(|| w.strip_prefix("0D")) {
                let bits = u64::from_str_radix(hex, 16)
                    .map_err(|_| ParseError { ptx_line: r.line(), message: format!("bad double `{w}`") })?;
                return Ok(Operand::Float(bits, true));
            }
            Ok(Operand::Int(number(r, &w)?))
        }
        Some(Tok::Word(w)) if w.starts_with('%') || is_register(scopes, &w) => {
            Ok(Operand::Reg(rename(scopes, w)))
        }
        Some(Tok::Word(w)) => Ok(Operand::Symbol(rename(scopes, w))),
        other => r.err(format!("unexpected {other:?} in an operand")),
    }
}

fn number(r: &Reader, w: &str) -> Result<i64, ParseError> {
    let digits = w.trim_end_matches(['U', 'u']);
    let parsed = if let Some(hex) = digits.strip_prefix("0x").or_else(|| digits.strip_prefix("0X")) {
        u64::from_str_radix(hex, 16).map(|v| v as i64)
    } else {
        digits.parse::<u64>().map(|v| v as i64)
    };
    parsed.map_err(|_| ParseError { ptx_line: r.line(), message: format!("bad number `{w}`") })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = r#"
.version 9.0
.target sm_80
.address_size 64
.global .align 4 .b8 table[64];
.visible .entry k(
	.param .u32 k_param_0,
	.param .u64 k_param_1
)
.maxntid 64, 1, 1
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<3>;
	.loc	1 7 3
	.shared .align 4 .b8 tile[128];
	ld.param.u32 	%r1, [k_param_0];
$L__BB0_1:
	@!%p1 bra 	$L__BB0_1;
	{ .reg .u64 s; cvta.to.shared.u64 s, %rd1; cvt.u32.u64 %r2, s; }
	st.shared.v2.f32 	[%r2+-8], {%r1, %r1};
	mov.f32 %r1, 0f3F800000;
	shfl.sync.bfly.b32	%r1|%p1, %r2, 16, 31, -1;
	ret;
}
	.file	1 "step/src/kernel.cu"
"#;

    #[test]
    fn reads_a_kernel_its_registers_and_statements() {
        let m = parse(PTX).unwrap();
        assert_eq!(m.files[&1], "step/src/kernel.cu");
        assert_eq!(m.globals[0].bytes, 64);
        let f = &m.functions[0];
        assert!(f.entry);
        assert_eq!(f.params, vec![("k_param_0".to_owned(), 4, 4), ("k_param_1".to_owned(), 8, 8)]);
        assert_eq!(f.shared[0].bytes, 128);
        assert!(f.regs.iter().any(|(n, _)| n == "s#1"), "the block's own `s` is renamed apart");
        let stmts: Vec<&Statement> =
            f.body.iter().filter_map(|i| if let BodyItem::Stmt(s) = i { Some(s) } else { None }).collect();
        assert_eq!(stmts[0].line, 7);
        assert_eq!(stmts[1].guard, Some(("%p1".to_owned(), true)));
        assert_eq!(stmts[2].operands[0], Operand::Reg("s#1".into()));
        assert_eq!(stmts[4].operands[0], Operand::Address(Some(Box::new(Operand::Reg("%r2".into()))), -8));
        assert_eq!(stmts[5].operands[1], Operand::Float(0x3F80_0000, false));
        assert!(matches!(stmts[6].operands[0], Operand::Pair(..)));
        assert_eq!(stmts[6].operands[4], Operand::Int(-1));
    }

    #[test]
    fn double_colons_stay_in_the_opcode_and_inner_ranges_are_renamed() {
        let m = parse(".visible .entry k()\n{\n\t.reg .b32 %r<2>;\n$L1:\n\tld.shared::cta.u32 %r1, [%r1];\n\t{ .reg .b32 %r<2>; mov.u32 %r1, 0; }\n\tret;\n}\n").unwrap();
        let f = &m.functions[0];
        let stmts: Vec<&Statement> =
            f.body.iter().filter_map(|i| if let BodyItem::Stmt(s) = i { Some(s) } else { None }).collect();
        assert_eq!(stmts[0].opcode, "ld.shared::cta.u32");
        assert_eq!(stmts[1].operands[0], Operand::Reg("%r1#2".into()), "the block's own %r1");
        assert!(matches!(f.body[0], BodyItem::Label(_)));
    }

    #[test]
    fn refuses_what_it_cannot_read_with_the_line() {
        let e = parse(".version 9.0\n.visible .entry k()\n{\n\t.reg .v4 .f32 %v<2>;\n}\n").unwrap_err();
        assert_eq!(e.ptx_line, 4);
        assert!(e.message.contains("vector registers"), "{e}");
    }
}

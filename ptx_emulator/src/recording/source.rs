//! What a picture reads from the kernel's source: the variable a line's access goes through
//! (`Bs[k][tile_col(j, c0)]`), a shared array's declared shape (`__shared__ float Bs[TILE][TILE +
//! PAD]`, its sizes worked out with the compile's `-D` values and the file's `constexpr int`s),
//! and the name of the dynamic shared array. Plain text reading, done once per picture.

/// The expressions of `line` that an access may go through, in order: each name followed by its
/// brackets (`Bs[tx][k]`), a name read with a member (`lo.x`: `lo`), and an `asm` operand
/// (`"r"(address)`: `address`). The left side of an assignment is left out for a load, and kept
/// alone for a store.
pub fn expressions(line: &str, write: bool) -> Vec<String> {
    let code = line.split("//").next().unwrap_or_default();
    let (left, right) = match assignment(code) {
        Some(i) => (&code[..i], &code[i + 1..]),
        None => ("", code),
    };
    let side = if write && !left.is_empty() { left } else { right };
    let mut found = indexed(side);
    if found.is_empty() {
        found = members(side);
    }
    if found.is_empty() {
        found = asm_operands(side);
    }
    found
}

/// The byte of the `=` of an assignment (`=`, `+=`, …, not `==`, `<=`, `>=`, `!=`), if any.
fn assignment(code: &str) -> Option<usize> {
    let b = code.as_bytes();
    (0..b.len()).find(|&i| {
        b[i] == b'='
            && b.get(i + 1) != Some(&b'=')
            && (i == 0 || !matches!(b[i - 1], b'=' | b'<' | b'>' | b'!'))
    })
}

fn ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The names that start at each byte of `text`: (start, end).
fn names(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices().chain(std::iter::once((text.len(), ' '))) {
        match (start, ident_char(c)) {
            (None, true) => start = Some(i),
            (Some(s), false) => {
                if !text[s..i].starts_with(|c: char| c.is_ascii_digit()) {
                    out.push((s, i));
                }
                start = None;
            }
            _ => {}
        }
    }
    out
}

/// `name[…][…]` expressions, brackets balanced.
fn indexed(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (s, e) in names(text) {
        let mut end = e;
        while text[end..].starts_with('[') {
            match closing(&text[end..], '[', ']') {
                Some(n) => end += n + 1,
                None => break,
            }
        }
        if end > e {
            out.push(text[s..end].to_owned());
        }
    }
    out
}

/// Names read through a member (`lo.x`), each once.
fn members(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (s, e) in names(text) {
        let before = text[..s].chars().next_back();
        if text[e..].starts_with('.') && before != Some('.') && !out.iter().any(|o| *o == text[s..e]) {
            out.push(text[s..e].to_owned());
        }
    }
    out
}

/// The names inside an `asm` statement's operands (`"r"(address)`).
fn asm_operands(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("\"(") {
        rest = &rest[i + 1..];
        if let Some(n) = closing(rest, '(', ')') {
            let inner = &rest[1..n];
            if let Some(&(s, e)) = names(inner).first() {
                out.push(inner[s..e].to_owned());
            }
        }
    }
    out
}

/// The byte of the bracket that closes the one `text` starts with.
fn closing(text: &str, open: char, close: char) -> Option<usize> {
    let mut depth = 0;
    for (i, c) in text.char_indices() {
        if c == open {
            depth += 1;
        } else if c == close {
            depth -= 1;
            if depth == 0 {
                return Some(i);
            }
        }
    }
    None
}

/// The expression an access goes through, among `found` ([`expressions`]): the one that names
/// `memory` (the shared array or the kernel parameter the address lies in), else the one whose
/// name starts with the matrix's letter (`bs` for B), else the first.
pub fn choose(found: &[String], memory: &str, matrix: &str) -> Option<String> {
    let base = |e: &String| e.split(['[', '.']).next().unwrap_or_default().to_owned();
    let letter = matrix.chars().next().map(|c| c.to_ascii_lowercase());
    found
        .iter()
        .find(|e| !memory.is_empty() && base(e) == memory)
        .or_else(|| found.iter().find(|e| base(e).chars().next().map(|c| c.to_ascii_lowercase()) == letter))
        .or(found.first())
        .cloned()
}

/// The sizes of the static shared array `name` as the source declares it (`__shared__ float
/// Bs[TILE][TILE + PAD]`: [16, 17] with TILE = 16, PAD = 1), where every size can be worked out.
pub fn array_shape(source: &[String], name: &str, defines: &[(String, i64)]) -> Option<Vec<i64>> {
    for line in source {
        let code = line.split("//").next().unwrap_or_default();
        let Some(at) = code.find("__shared__") else { continue };
        let decl = &code[at..];
        // The declarations after the type: `Bs[…][…]`, possibly several separated by commas.
        for (s, e) in names(decl) {
            if &decl[s..e] != name || !decl[e..].starts_with('[') {
                continue;
            }
            let mut sizes = Vec::new();
            let mut end = e;
            while decl[end..].starts_with('[') {
                let n = closing(&decl[end..], '[', ']')?;
                sizes.push(eval(&decl[end + 1..end + n], source, defines, 0)?);
                end += n + 1;
            }
            return Some(sizes);
        }
    }
    None
}

/// The name of the kernel's dynamic shared array (`extern __shared__ float smem[]`: `smem`).
pub fn dynamic_name(source: &[String]) -> Option<String> {
    source.iter().find_map(|line| {
        let code = line.split("//").next().unwrap_or_default();
        let at = code.find("extern __shared__")?;
        let before = code[at..].find("[]")?;
        let (s, e) = *names(&code[at..at + before]).last()?;
        Some(code[at + s..at + e].to_owned())
    })
}

/// An integer expression of numbers, names (the `-D` values, else `constexpr int NAME = …;` of
/// the source), + − * / % and parentheses; None where a name is unknown.
pub fn eval(expr: &str, source: &[String], defines: &[(String, i64)], depth: u32) -> Option<i64> {
    let tokens = tokens(expr)?;
    let mut p = Parser { tokens, at: 0, source, defines, depth };
    let v = p.sum()?;
    (p.at == p.tokens.len()).then_some(v)
}

#[derive(Clone, Debug, PartialEq)]
enum SourceToken {
    Number(i64),
    Name(String),
    Op(char),
}

fn tokens(expr: &str) -> Option<Vec<SourceToken>> {
    let mut out = Vec::new();
    let chars: Vec<char> = expr.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() {
            let s = i;
            while i < chars.len() && ident_char(chars[i]) {
                i += 1;
            }
            let text: String = chars[s..i].iter().collect();
            out.push(SourceToken::Number(text.trim_end_matches(['u', 'U', 'l', 'L']).parse().ok()?));
        } else if ident_char(c) {
            let s = i;
            while i < chars.len() && ident_char(chars[i]) {
                i += 1;
            }
            out.push(SourceToken::Name(chars[s..i].iter().collect()));
        } else if "+-*/%()".contains(c) {
            out.push(SourceToken::Op(c));
            i += 1;
        } else {
            return None;
        }
    }
    Some(out)
}

struct Parser<'s> {
    tokens: Vec<SourceToken>,
    at: usize,
    source: &'s [String],
    defines: &'s [(String, i64)],
    depth: u32,
}

impl Parser<'_> {
    fn op(&mut self, ops: &str) -> Option<char> {
        match self.tokens.get(self.at) {
            Some(SourceToken::Op(c)) if ops.contains(*c) => {
                self.at += 1;
                Some(*c)
            }
            _ => None,
        }
    }

    fn sum(&mut self) -> Option<i64> {
        let mut v = self.product()?;
        while let Some(op) = self.op("+-") {
            let r = self.product()?;
            v = if op == '+' { v.checked_add(r)? } else { v.checked_sub(r)? };
        }
        Some(v)
    }

    fn product(&mut self) -> Option<i64> {
        let mut v = self.unit()?;
        while let Some(op) = self.op("*/%") {
            let r = self.unit()?;
            v = match op {
                '*' => v.checked_mul(r)?,
                '/' => v.checked_div(r)?,
                _ => v.checked_rem(r)?,
            };
        }
        Some(v)
    }

    fn unit(&mut self) -> Option<i64> {
        if self.op("-").is_some() {
            return self.unit().map(|v| -v);
        }
        if self.op("(").is_some() {
            let v = self.sum()?;
            self.op(")")?;
            return Some(v);
        }
        let token = self.tokens.get(self.at)?.clone();
        self.at += 1;
        match token {
            SourceToken::Number(n) => Some(n),
            SourceToken::Name(name) => self.value(&name),
            SourceToken::Op(_) => None,
        }
    }

    /// A name's value: a `-D` value, else the source's `constexpr int NAME = …;`.
    fn value(&self, name: &str) -> Option<i64> {
        if let Some((_, v)) = self.defines.iter().find(|(n, _)| n == name) {
            return Some(*v);
        }
        if self.depth > 8 {
            return None;
        }
        self.source.iter().find_map(|line| {
            let code = line.split("//").next().unwrap_or_default();
            let rest = code.trim().strip_prefix("constexpr ")?;
            let (head, value) = rest.split_once('=')?;
            let declared = head.split_whitespace().last()?;
            (declared == name).then_some(())?;
            eval(value.trim().trim_end_matches(';'), self.source, self.defines, self.depth + 1)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(str::to_owned).collect()
    }

    #[test]
    fn a_lines_access_is_found_by_the_memory_it_reads() {
        let both = "            sum += As[ty][k] * Bs[tx][k];  // a column of Bs";
        let found = expressions(both, false);
        assert_eq!(found, ["As[ty][k]", "Bs[tx][k]"]);
        assert_eq!(choose(&found, "Bs", "B").as_deref(), Some("Bs[tx][k]"));
        let global = "sum += A[row * K + k] * B[k * N + col];";
        assert_eq!(choose(&expressions(global, false), "B", "B").as_deref(), Some("B[k * N + col]"));
        let cast = "float4 v = *reinterpret_cast<const float4*>(&Bs[k][tile_col(j, c0)]);";
        assert_eq!(expressions(cast, false), ["Bs[k][tile_col(j, c0)]"]);
        assert_eq!(expressions("frag[k8][0] = __float_as_uint(lo.x);", false), ["lo"]);
        assert_eq!(expressions("                 : \"r\"(address));", false), ["address"]);
        assert_eq!(expressions("    As[ty][tx] = (row < M) ? A[row * K + tx] : 0.0f;", true), ["As[ty][tx]"]);
        assert_eq!(choose(&["a[i]".into(), "bs[j]".into()], "", "B").as_deref(), Some("bs[j]"));
    }

    #[test]
    fn shapes_are_worked_out_with_the_compiles_values() {
        let source = lines(
            "constexpr int AS = TILE + 4;  // padded\n__global__ void k() {\n    __shared__ float As[TILE][TILE];\n    __shared__ float Bs[TILE][AS + PAD], Cs[2];\n    extern __shared__ __align__(16) float smem[];\n}",
        );
        let defines = [("TILE".to_owned(), 16), ("PAD".to_owned(), 1)];
        assert_eq!(array_shape(&source, "As", &defines), Some(vec![16, 16]));
        assert_eq!(array_shape(&source, "Bs", &defines), Some(vec![16, 21]));
        assert_eq!(array_shape(&source, "Cs", &defines), Some(vec![2]));
        assert_eq!(array_shape(&source, "Bs", &defines[..1]), None, "PAD unknown");
        assert_eq!(dynamic_name(&source).as_deref(), Some("smem"));
        assert_eq!(eval("(2 + 3) * 4 - 10 / 3 % 2", &[], &[], 0), Some(19));
        assert_eq!(eval("2 +", &[], &[], 0), None);
    }
}

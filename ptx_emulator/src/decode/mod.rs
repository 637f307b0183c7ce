//! Statements to instructions the machine executes: each opcode and its modifiers checked
//! against the subset the emulator implements, registers numbered, symbols resolved to the
//! addresses the machine lays out, and labels to instruction indices. Anything outside the
//! subset is refused here, before a thread runs, naming the instruction and its `.cu` line.

use std::collections::HashMap;

use crate::inst::*;

mod hopper;
use crate::joins::merge_shared_loads;
use crate::memory::GLOBALS_BASE;
use crate::parse::{BodyItem, Function, Module, Operand, Statement, Var};

/// The source's name of a variable NVRTC mangled as a function's static: `_ZZ6matmulE2As` → `As`.
pub fn demangle(name: &str) -> String {
    /// `<length><name>` at the start of `s`: the name and what follows it.
    fn part(s: &str) -> Option<(&str, &str)> {
        let digits = s.chars().take_while(char::is_ascii_digit).count();
        let len: usize = s[..digits].parse().ok()?;
        Some((s.get(digits..digits + len)?, s.get(digits + len..)?))
    }
    let found = name.strip_prefix("_ZZ").and_then(|rest| {
        let (_, rest) = part(rest)?;
        let (var, rest) = part(rest.strip_prefix('E')?)?;
        rest.is_empty().then_some(var)
    });
    found.unwrap_or(name).to_owned()
}

/// Where module-scope variables live: their addresses in the globals' buffer.
pub fn layout_globals(module: &Module) -> (HashMap<String, u64>, usize) {
    let mut at = 0usize;
    let mut map = HashMap::new();
    for Var { name, bytes, align, .. } in &module.globals {
        at = at.next_multiple_of((*align).max(1));
        map.insert(name.clone(), GLOBALS_BASE + at as u64);
        at += bytes;
    }
    (map, at)
}

struct Ctx<'a> {
    regs: HashMap<&'a str, R>,
    labels: HashMap<&'a str, usize>,
    /// Symbol → (its space, its address in that space).
    symbols: HashMap<String, (Space, u64)>,
}

/// Decodes the function `f` of `module`.
pub fn decode(
    module: &Module,
    f: &Function,
    globals: &HashMap<String, u64>,
) -> Result<DecodedKernel, Refusal> {
    let mut regs: HashMap<&str, R> = HashMap::new();
    for (i, s) in SPECIALS.iter().enumerate() {
        regs.insert(s, i as R);
    }
    for (name, _) in &f.regs {
        let slot = regs.len() as R;
        regs.entry(name.as_str()).or_insert(slot);
    }
    let mut labels = HashMap::new();
    let mut count = 0usize;
    for item in &f.body {
        match item {
            BodyItem::Label(l) => {
                labels.insert(l.as_str(), count);
            }
            BodyItem::Stmt(_) => count += 1,
        }
    }
    let mut symbols = HashMap::new();
    let mut params = Vec::new();
    let mut at = 0usize;
    for (name, bytes, align) in &f.params {
        at = at.next_multiple_of((*align).max(1));
        symbols.insert(name.clone(), (Space::Param, at as u64));
        params.push((at, *bytes));
        at += bytes;
    }
    let param_bytes = at;
    // Static shared arrays in order, each 128 bytes past the end of the one before: an access in
    // the gap is an array overrun, and every array keeps the bank alignment (its offset modulo
    // 128) it has on a GPU, where the arrays are packed.
    let mut packed = 0usize;
    let mut shared_vars = Vec::new();
    let dynamic = f.dynamic_shared.as_ref().or(module.shared.iter().find(|v| v.bytes == 0));
    for v in module.shared.iter().filter(|v| v.bytes > 0).chain(&f.shared) {
        packed = packed.next_multiple_of(v.align.max(1));
        let start = packed + RED_ZONE * shared_vars.len();
        symbols.insert(v.name.clone(), (Space::Shared, start as u64));
        shared_vars.push(SharedVar { start, end: start + v.bytes, name: demangle(&v.name) });
        packed += v.bytes;
    }
    let dynamic_at =
        packed.next_multiple_of(dynamic.map_or(16, |v| v.align.max(16))) + RED_ZONE * shared_vars.len();
    if let Some(v) = dynamic {
        symbols.insert(v.name.clone(), (Space::Shared, dynamic_at as u64));
    }
    let mut local = 0usize;
    for v in &f.local {
        local = local.next_multiple_of(v.align.max(1));
        symbols.insert(v.name.clone(), (Space::Local, local as u64));
        local += v.bytes;
    }
    for (name, address) in globals {
        symbols.insert(name.clone(), (Space::Global, *address));
    }
    let ctx = Ctx { regs, labels, symbols };
    let mut insts = Vec::with_capacity(count);
    let mut calls: Vec<crate::parse::Call> = Vec::new();
    for item in &f.body {
        if let BodyItem::Stmt(s) = item {
            let refuse = |why: String| Refusal {
                what: s.opcode.clone(),
                file: module.files.get(&s.file).cloned().unwrap_or_else(|| "the kernel".into()),
                line: s.line,
                why,
            };
            let op = instruction(&ctx, s).map_err(refuse)?;
            let guard = match &s.guard {
                Some((p, negated)) => Some((ctx.reg(p).map_err(refuse)?, *negated)),
                None => None,
            };
            insts.push(Inst {
                op,
                guard,
                file: s.file,
                line: s.line,
                call: match s.call {
                    Some(c) => match calls.iter().position(|k| *k == c) {
                        Some(i) => i as u32,
                        None => {
                            calls.push(c);
                            calls.len() as u32 - 1
                        }
                    },
                    None => NO_CALL,
                },
                opcode: s.opcode.clone(),
                names_shared: s.opcode.contains(".shared"),
                merge: Merge::None,
            });
        }
    }
    let max_slot = ctx.regs.values().copied().max().unwrap_or(0) as usize + 1;
    let targets: Vec<usize> = ctx.labels.values().copied().collect();
    let merge_groups = merge_shared_loads(&mut insts, &targets, max_slot);
    // A body is a function that nine in ten instructions are inlined through.
    let mut through: HashMap<u32, usize> = HashMap::new();
    for c in insts.iter().filter_map(|i| calls.get(i.call as usize)) {
        *through.entry(c.body).or_default() += 1;
    }
    let body = through.into_iter().find(|(_, n)| *n * 10 >= insts.len() * 9).map(|(b, _)| b);
    Ok(DecodedKernel {
        merge_groups,
        name: f.name.clone(),
        insts,
        regs: max_slot,
        params,
        param_bytes,
        static_shared: packed,
        dynamic_at,
        shared_vars,
        local_bytes: local,
        files: module.files.clone(),
        helpers: module.helpers.clone(),
        calls,
        body,
        sources: HashMap::new(),
        cluster: f.cluster,
        register_limit: register_limit(f.maxntid, f.minnctapersm),
    })
}

/// The registers a thread may have, as ptxas reads the launch bounds: 65,536 over the threads
/// that must fit on an SM at once, in steps of 8, at most 255; 255 without bounds.
fn register_limit(maxntid: Option<u32>, minnctapersm: Option<u32>) -> u32 {
    match maxntid {
        Some(t) if t > 0 => (65_536 / (t * minnctapersm.unwrap_or(1).max(1)) / 8 * 8).clamp(16, 255),
        _ => 255,
    }
}

impl Ctx<'_> {
    fn reg(&self, name: &str) -> Result<R, String> {
        self.regs.get(name).copied().ok_or_else(|| format!("the register `{name}` is not declared"))
    }

    fn dst(&self, o: &Operand) -> Result<R, String> {
        match o {
            Operand::Reg(r) => self.reg(r),
            other => Err(format!("expected a register, found {other:?}")),
        }
    }

    fn src(&self, o: &Operand) -> Result<Src, String> {
        Ok(match o {
            Operand::Reg(r) => Src::Reg(self.reg(r)?),
            Operand::Int(v) => Src::Imm(*v as u64),
            Operand::Float(bits, _) => Src::Imm(*bits),
            Operand::Symbol(s) => match self.symbols.get(s) {
                Some((_, address)) => Src::Imm(*address),
                None => return Err(format!("the symbol `{s}` is not known")),
            },
            other => return Err(format!("expected a value, found {other:?}")),
        })
    }

    /// A float immediate written for an f32 operand as `0f…` is its bits; an integer written
    /// where a float is wanted is refused (NVRTC never does that).
    fn fsrc(&self, o: &Operand, ty: Ty) -> Result<Src, String> {
        match (o, ty) {
            (Operand::Float(bits, true), Ty::F32) => {
                Ok(Src::Imm(u64::from((f64::from_bits(*bits) as f32).to_bits())))
            }
            _ => self.src(o),
        }
    }

    fn addr(&self, o: &Operand) -> Result<(Addr, Option<Space>), String> {
        match o {
            Operand::Address(base, offset) => {
                let (base, space) = match base.as_deref() {
                    None => (Src::Imm(0), None),
                    Some(Operand::Reg(r)) => (Src::Reg(self.reg(r)?), None),
                    Some(Operand::Symbol(s)) => match self.symbols.get(s) {
                        Some((space, address)) => (Src::Imm(*address), Some(*space)),
                        None => return Err(format!("the symbol `{s}` is not known")),
                    },
                    Some(other) => return Err(format!("unexpected address base {other:?}")),
                };
                Ok((Addr { base, offset: *offset }, space))
            }
            other => Err(format!("expected an address, found {other:?}")),
        }
    }

    fn vector_dsts(&self, o: &Operand) -> Result<Vec<R>, String> {
        match o {
            Operand::Vector(items) => items.iter().map(|i| self.dst(i)).collect(),
            single => Ok(vec![self.dst(single)?]),
        }
    }

    fn vector_srcs(&self, o: &Operand, ty: Ty) -> Result<Vec<Src>, String> {
        match o {
            Operand::Vector(items) => items.iter().map(|i| self.fsrc(i, ty)).collect(),
            single => Ok(vec![self.fsrc(single, ty)?]),
        }
    }

    fn pred(&self, o: &Operand) -> Result<(Src, bool), String> {
        match o {
            Operand::NotReg(r) => Ok((Src::Reg(self.reg(r)?), true)),
            other => Ok((self.src(other)?, false)),
        }
    }

    fn label(&self, o: &Operand) -> Result<usize, String> {
        match o {
            Operand::Symbol(l) => {
                self.labels.get(l.as_str()).copied().ok_or_else(|| format!("no label `{l}`"))
            }
            other => Err(format!("expected a label, found {other:?}")),
        }
    }
}

/// An immediate base moved by `by` (a window's start).
fn offset_imm(base: Src, by: u64) -> Src {
    match base {
        Src::Imm(v) => Src::Imm(v + by),
        other => other,
    }
}

fn space_of(mods: &[&str]) -> Space {
    for m in mods {
        match *m {
            // Constant memory lives beside the module's global variables.
            "global" | "const" => return Space::Global,
            "shared" | "shared::cta" => return Space::Shared,
            "local" => return Space::Local,
            "param" => return Space::Param,
            _ => {}
        }
    }
    Space::Generic
}

fn last_type(mods: &[&str]) -> Option<Ty> {
    mods.iter().rev().find_map(|m| Ty::parse(m))
}

fn rounding(mods: &[&str]) -> Round {
    for m in mods {
        match *m {
            "rn" | "rni" => return Round::Nearest,
            "rz" | "rzi" => return Round::Zero,
            "rm" | "rmi" => return Round::Down,
            "rp" | "rpi" => return Round::Up,
            "rna" => return Round::NearestAway,
            _ => {}
        }
    }
    Round::None
}

/// The modifiers that change nothing in a sequential, cache-less memory.
fn ignorable(m: &str) -> bool {
    matches!(
        m,
        "ca" | "cg"
            | "cs"
            | "lu"
            | "cv"
            | "wb"
            | "wt"
            | "nc"
            | "relaxed"
            | "gpu"
            | "cta"
            | "sys"
            | "uni"
            | "aligned"
            | "sync"
            | "L2::128B"
            | "L2::64B"
            | "L2::256B"
            | "L1::no_allocate"
            | "L1::evict_last"
            | "L1::evict_first"
            | "L1::evict_normal"
            | "L2::cache_hint"
    )
}

fn instruction(ctx: &Ctx, s: &Statement) -> Result<Op, String> {
    let parts: Vec<&str> = s.opcode.split('.').collect();
    let (name, mods) = (parts[0], &parts[1..]);
    let ops = &s.operands;
    let n = ops.len();
    let arity = |want: usize| -> Result<(), String> {
        if n == want { Ok(()) } else { Err(format!("expected {want} operands, found {n}")) }
    };
    let ty = last_type(mods);
    let need_ty = || ty.ok_or_else(|| "no type given".to_owned());
    let ftz = mods.contains(&"ftz");
    if mods.contains(&"sat") {
        return Err("the .sat modifier is not implemented".into());
    }
    Ok(match name {
        "mov" => {
            arity(2)?;
            let ty = need_ty()?;
            match (&ops[0], &ops[1]) {
                (Operand::Vector(_), _) => {
                    let ds = ctx.vector_dsts(&ops[0])?;
                    Op::Unpack { part_bits: ty.bits() / ds.len() as u32, ds, a: ctx.src(&ops[1])? }
                }
                (_, Operand::Vector(_)) => {
                    let parts = ctx.vector_srcs(&ops[1], Ty::B32)?;
                    Op::Pack { d: ctx.dst(&ops[0])?, part_bits: ty.bits() / parts.len() as u32, parts }
                }
                _ => Op::Mov { d: ctx.dst(&ops[0])?, a: ctx.fsrc(&ops[1], ty)?, bits: ty.bits().max(1) },
            }
        }
        "add" | "sub" | "mul" | "min" | "max" | "div" | "rem" | "and" | "or" | "xor" | "shl" | "shr" => {
            arity(3)?;
            let ty = need_ty()?;
            let d = ctx.dst(&ops[0])?;
            if ty == Ty::Pred {
                let (a, not_a) = ctx.pred(&ops[1])?;
                let (b, not_b) = ctx.pred(&ops[2])?;
                let op = match name {
                    "and" => BoolOp::And,
                    "or" => BoolOp::Or,
                    "xor" => BoolOp::Xor,
                    _ => return Err("not a predicate operation".into()),
                };
                return Ok(Op::Bool { op, d, a, b, not_a, not_b });
            }
            if ty.float() {
                if mods.contains(&"approx") || mods.contains(&"full") {
                    return Err(
                        "approximate division is not implemented (NVRTC emits div.rn.f32 for `/`)".into()
                    );
                }
                let op = match name {
                    "add" => FloatOp::Add,
                    "sub" => FloatOp::Sub,
                    "mul" => FloatOp::Mul,
                    "min" => FloatOp::Min,
                    "max" => FloatOp::Max,
                    "div" => FloatOp::Div,
                    _ => return Err("not a float operation".into()),
                };
                if !matches!(rounding(mods), Round::Nearest | Round::None) {
                    return Err("only round-to-nearest float arithmetic is implemented".into());
                }
                return Ok(Op::Float {
                    op,
                    ty,
                    d,
                    a: ctx.fsrc(&ops[1], ty)?,
                    b: ctx.fsrc(&ops[2], ty)?,
                    ftz,
                });
            }
            if name == "mul" && mods.contains(&"wide") {
                return Ok(Op::MulWide { ty, d, a: ctx.src(&ops[1])?, b: ctx.src(&ops[2])? });
            }
            let op = match name {
                "add" => IntOp::Add,
                "sub" => IntOp::Sub,
                "mul" if mods.contains(&"hi") => IntOp::MulHi,
                "mul" => IntOp::MulLo,
                "min" => IntOp::Min,
                "max" => IntOp::Max,
                "div" => IntOp::Div,
                "rem" => IntOp::Rem,
                "and" => IntOp::And,
                "or" => IntOp::Or,
                "xor" => IntOp::Xor,
                "shl" => IntOp::Shl,
                _ => IntOp::Shr,
            };
            Op::Int { op, ty, d, a: ctx.src(&ops[1])?, b: ctx.src(&ops[2])? }
        }
        "mad" => {
            arity(4)?;
            let ty = need_ty()?;
            if ty.float() {
                return Err("mad on floats is not implemented (NVRTC emits fma)".into());
            }
            let part = if mods.contains(&"wide") {
                MadPart::Wide
            } else if mods.contains(&"hi") {
                MadPart::Hi
            } else {
                MadPart::Lo
            };
            Op::Mad {
                ty,
                part,
                d: ctx.dst(&ops[0])?,
                a: ctx.src(&ops[1])?,
                b: ctx.src(&ops[2])?,
                c: ctx.src(&ops[3])?,
            }
        }
        "fma" => {
            arity(4)?;
            let ty = need_ty()?;
            if rounding(mods) != Round::Nearest {
                return Err("only fma.rn is implemented".into());
            }
            Op::Fma {
                ty,
                d: ctx.dst(&ops[0])?,
                a: ctx.fsrc(&ops[1], ty)?,
                b: ctx.fsrc(&ops[2], ty)?,
                c: ctx.fsrc(&ops[3], ty)?,
                ftz,
            }
        }
        "not" | "neg" | "abs" | "popc" | "clz" | "brev" | "sqrt" | "rcp" | "cnot" => {
            arity(2)?;
            let ty = need_ty()?;
            if (name == "sqrt" || name == "rcp") && rounding(mods) != Round::Nearest {
                return Err("only the round-to-nearest sqrt and rcp are implemented".into());
            }
            let op = match name {
                "not" => UnOp::Not,
                "neg" => UnOp::Neg,
                "abs" => UnOp::Abs,
                "popc" => UnOp::Popc,
                "clz" => UnOp::Clz,
                "brev" => UnOp::Brev,
                "sqrt" => UnOp::Sqrt,
                "rcp" => UnOp::Rcp,
                _ => return Err("cnot is not implemented".into()),
            };
            Op::Unary { op, ty, d: ctx.dst(&ops[0])?, a: ctx.fsrc(&ops[1], ty)? }
        }
        "setp" => {
            let ty = need_ty()?;
            let cmp = match mods.first().copied().unwrap_or("") {
                "eq" => Cmp::Eq,
                "ne" => Cmp::Ne,
                "lt" | "lo" => Cmp::Lt,
                "le" | "ls" => Cmp::Le,
                "gt" | "hi" => Cmp::Gt,
                "ge" | "hs" => Cmp::Ge,
                "equ" => Cmp::Equ,
                "neu" => Cmp::Neu,
                "ltu" => Cmp::Ltu,
                "leu" => Cmp::Leu,
                "gtu" => Cmp::Gtu,
                "geu" => Cmp::Geu,
                "num" => Cmp::Num,
                "nan" => Cmp::Nan,
                other => return Err(format!("the comparison `{other}` is not known")),
            };
            // lo/ls/hi/hs compare unsigned whatever the type says.
            let ty = match (mods.first().copied(), ty) {
                (Some("lo" | "ls" | "hi" | "hs"), t) if t.bits() == 64 => Ty::U64,
                (Some("lo" | "ls" | "hi" | "hs"), _) => Ty::U32,
                (_, t) => t,
            };
            let combine = match mods.get(1).copied() {
                Some("and") => Some(BoolOp::And),
                Some("or") => Some(BoolOp::Or),
                Some("xor") => Some(BoolOp::Xor),
                _ => None,
            };
            let (d, d_not) = match &ops[0] {
                Operand::Pair(p, q) => (ctx.dst(p)?, Some(ctx.dst(q)?)),
                o => (ctx.dst(o)?, None),
            };
            let combine = match combine {
                Some(op) => {
                    arity(4)?;
                    let (p, not) = ctx.pred(&ops[3])?;
                    Some((op, p, not))
                }
                None => {
                    arity(3)?;
                    None
                }
            };
            Op::Setp { cmp, ty, d, d_not, a: ctx.fsrc(&ops[1], ty)?, b: ctx.fsrc(&ops[2], ty)?, combine }
        }
        "selp" => {
            arity(4)?;
            let ty = need_ty()?;
            Op::Selp {
                d: ctx.dst(&ops[0])?,
                a: ctx.fsrc(&ops[1], ty)?,
                b: ctx.fsrc(&ops[2], ty)?,
                p: ctx.src(&ops[3])?,
                bits: ty.bits(),
            }
        }
        "bfi" => {
            arity(5)?;
            Op::Bfi {
                ty: need_ty()?,
                d: ctx.dst(&ops[0])?,
                a: ctx.src(&ops[1])?,
                b: ctx.src(&ops[2])?,
                pos: ctx.src(&ops[3])?,
                len: ctx.src(&ops[4])?,
            }
        }
        "bfe" => {
            arity(4)?;
            Op::Bfe {
                ty: need_ty()?,
                d: ctx.dst(&ops[0])?,
                a: ctx.src(&ops[1])?,
                pos: ctx.src(&ops[2])?,
                len: ctx.src(&ops[3])?,
            }
        }
        "cvt" => {
            arity(2)?;
            let types: Vec<Ty> = mods.iter().filter_map(|m| Ty::parse(m)).collect();
            let [to, from] = types[..] else {
                return Err("cvt needs a destination and a source type".into());
            };
            let round = rounding(mods);
            if to == Ty::Tf32 && !matches!(round, Round::NearestAway | Round::Nearest) {
                return Err(
                    "only cvt.rna.tf32.f32 and cvt.rn.tf32.f32 are implemented among the TF32 conversions"
                        .into(),
                );
            }
            Op::Cvt { d: ctx.dst(&ops[0])?, a: ctx.fsrc(&ops[1], from)?, to, from, round, ftz }
        }
        "cvta" => {
            arity(2)?;
            let to = mods.first() == Some(&"to");
            let space = space_of(mods);
            if space == Space::Generic || (space == Space::Param && to) {
                return Err("cvta to or from this space is not implemented".into());
            }
            Op::Cvta { d: ctx.dst(&ops[0])?, a: ctx.src(&ops[1])?, space, to }
        }
        "ld" | "st" => {
            arity(2)?;
            for m in mods {
                if !(ignorable(m)
                    || Ty::parse(m).is_some()
                    || matches!(
                        *m,
                        "global"
                            | "shared"
                            | "shared::cta"
                            | "local"
                            | "param"
                            | "const"
                            | "v2"
                            | "v4"
                            | "volatile"
                            | "weak"
                            | "acquire"
                            | "release"
                    )
                    || m.starts_with("L1::")
                    || m.starts_with("L2::"))
                {
                    return Err(format!("the modifier `.{m}` is not implemented"));
                }
            }
            let ty = need_ty()?;
            let mut space = space_of(mods);
            let volatile = mods.contains(&"volatile");
            let (mem, val) = if name == "ld" { (&ops[1], &ops[0]) } else { (&ops[0], &ops[1]) };
            let (addr, symbol_space) = ctx.addr(mem)?;
            if space == Space::Generic {
                if let Some(sp) = symbol_space {
                    space = sp;
                }
            }
            let bytes = ty.bits().div_ceil(8);
            // A generic access to a variable of a window's space (shared, local) takes the
            // variable's generic address, as `cvta` would give it.
            let addr = match (
                mods.iter()
                    .any(|m| matches!(*m, "global" | "shared" | "shared::cta" | "local" | "param" | "const")),
                symbol_space,
            ) {
                (false, Some(Space::Shared)) => {
                    space = Space::Generic;
                    Addr { base: offset_imm(addr.base, crate::memory::SHARED_WINDOW), offset: addr.offset }
                }
                (false, Some(Space::Local)) => {
                    space = Space::Generic;
                    Addr { base: offset_imm(addr.base, crate::memory::LOCAL_WINDOW), offset: addr.offset }
                }
                _ => addr,
            };
            if name == "ld" {
                Op::Ld {
                    space,
                    bytes,
                    ds: ctx.vector_dsts(val)?,
                    addr,
                    volatile,
                    signed: ty.signed() && bytes < 4,
                }
            } else {
                Op::St { space, bytes, srcs: ctx.vector_srcs(val, ty)?, addr }
            }
        }
        "atom" | "red" => {
            let ty = need_ty()?;
            let space = space_of(mods);
            let op = mods
                .iter()
                .find_map(|m| {
                    Some(match *m {
                        "add" => AtomOp::Add,
                        "exch" => AtomOp::Exch,
                        "cas" => AtomOp::Cas,
                        "min" => AtomOp::Min,
                        "max" => AtomOp::Max,
                        "and" => AtomOp::And,
                        "or" => AtomOp::Or,
                        "xor" => AtomOp::Xor,
                        "inc" => AtomOp::Inc,
                        "dec" => AtomOp::Dec,
                        _ => return None,
                    })
                })
                .ok_or("no atomic operation given")?;
            if ty.float() && op != AtomOp::Add && op != AtomOp::Exch {
                return Err("float atomics other than add and exch are not implemented".into());
            }
            let (d, rest) =
                if name == "atom" { (Some(ctx.dst(&ops[0])?), &ops[1..]) } else { (None, &ops[..]) };
            let (addr, _) = ctx.addr(&rest[0])?;
            let b = ctx.fsrc(rest.get(1).ok_or("atomic without a value")?, ty)?;
            let c = match rest.get(2) {
                Some(o) => ctx.fsrc(o, ty)?,
                None => Src::Imm(0),
            };
            Op::Atom { space, op, ty, d, addr, b, c }
        }
        "cp" if mods.get(1) == Some(&"bulk") => return hopper::instruction(ctx, s, name, mods),
        "cp" => match mods {
            ["async", "commit_group"] => Op::CpCommit,
            ["async", "wait_group"] => match &ops[..] {
                [Operand::Int(n)] => Op::CpWait { pending: *n as u32, all: false },
                _ => return Err("cp.async.wait_group needs a constant".into()),
            },
            ["async", "wait_all"] => Op::CpWait { pending: 0, all: true },
            ["async", level, "shared" | "shared::cta", "global", rest @ ..]
                if (*level == "ca" || *level == "cg") && rest.iter().all(|m| m.starts_with("L2::")) =>
            {
                if n < 3 {
                    return Err("cp.async needs a destination, a source and a size".into());
                }
                let (dst, _) = ctx.addr(&ops[0])?;
                let (src, _) = ctx.addr(&ops[1])?;
                let size = match &ops[2] {
                    Operand::Int(v) if [4, 8, 16].contains(v) => *v as u32,
                    other => return Err(format!("cp.async's size must be 4, 8 or 16, found {other:?}")),
                };
                let src_size = match ops.get(3) {
                    Some(o) => Some(ctx.src(o)?),
                    None => None,
                };
                Op::CpAsync { dst, src, size, src_size }
            }
            _ => return Err("this form of cp is not implemented".into()),
        },
        "bar" if mods == ["warp", "sync"] => {
            arity(1)?;
            Op::WarpSync { mask: ctx.src(&ops[0])? }
        }
        "bar" | "barrier" if mods.first() == Some(&"cluster") => match mods.get(1).copied() {
            Some("arrive") => Op::Hopper(Hopper::ClusterArrive),
            Some("wait") => Op::Hopper(Hopper::ClusterWait),
            _ => return Err("only barrier.cluster.arrive and barrier.cluster.wait are implemented".into()),
        },
        "bar" | "barrier" => {
            // bar.sync / barrier.sync id{, count}; bar.red.or.pred d, id{, count}, {!}p.
            let red = mods.first() == Some(&"red");
            if red && !(mods.contains(&"or") && mods.contains(&"pred")) {
                return Err("among the barrier reductions only bar.red.or.pred is implemented".into());
            }
            let sync = red || mods.first().is_some_and(|m| matches!(*m, "sync" | "cta"));
            if !sync || mods.iter().any(|m| matches!(*m, "arrive")) {
                return Err("only bar.sync, barrier.sync and bar.red.or.pred are implemented".into());
            }
            let operands = if red { &ops[1..] } else { &ops[..] };
            let (id, count, pred) = match operands {
                [] => (Src::Imm(0), None, None),
                [id] => (ctx.src(id)?, None, None),
                [id, p] if red => (ctx.src(id)?, None, Some(p)),
                [id, c] => (ctx.src(id)?, Some(ctx.src(c)?), None),
                [id, c, p] if red => (ctx.src(id)?, Some(ctx.src(c)?), Some(p)),
                _ => return Err("a barrier takes an id, a thread count and, to reduce, a predicate".into()),
            };
            let red = match pred {
                Some(p) => {
                    let (p, not) = ctx.pred(p)?;
                    Some((ctx.dst(&ops[0])?, p, not))
                }
                None => None,
            };
            Op::Bar { id, count, red }
        }
        "membar" | "fence" => {
            if mods.first() == Some(&"proxy") {
                if mods.get(1) != Some(&"async") {
                    return Err("among the proxy fences only fence.proxy.async is implemented".into());
                }
                Op::FenceProxyAsync
            } else {
                // fence.mbarrier_init and the ordinary fences: memory is sequential here.
                Op::Fence
            }
        }
        "bra" => {
            arity(1)?;
            Op::Bra { target: ctx.label(&ops[0])? }
        }
        "ret" | "exit" => Op::Exit,
        "trap" => Op::Trap,
        "shfl" => {
            if !mods.contains(&"sync") {
                return Err("shfl without .sync is not implemented".into());
            }
            arity(5)?;
            let mode = match mods.get(1).copied() {
                Some("up") => ShflMode::Up,
                Some("down") => ShflMode::Down,
                Some("bfly") => ShflMode::Bfly,
                Some("idx") => ShflMode::Idx,
                _ => return Err("unknown shfl mode".into()),
            };
            let (d, p) = match &ops[0] {
                Operand::Pair(v, q) => (ctx.dst(v)?, Some(ctx.dst(q)?)),
                o => (ctx.dst(o)?, None),
            };
            Op::Shfl {
                mode,
                d,
                p,
                a: ctx.src(&ops[1])?,
                b: ctx.src(&ops[2])?,
                c: ctx.src(&ops[3])?,
                mask: ctx.src(&ops[4])?,
            }
        }
        "vote" => {
            arity(3)?;
            let (a, not_a) = ctx.pred(&ops[1])?;
            Op::Vote {
                all: mods.contains(&"all"),
                any: mods.contains(&"any"),
                ballot: mods.contains(&"ballot"),
                d: ctx.dst(&ops[0])?,
                a,
                not_a,
                mask: ctx.src(&ops[2])?,
            }
        }
        "activemask" => {
            arity(1)?;
            Op::Activemask { d: ctx.dst(&ops[0])? }
        }
        "ldmatrix" => {
            arity(2)?;
            if !mods.contains(&"m8n8") || !mods.contains(&"b16") {
                return Err("only ldmatrix .m8n8 .b16 is implemented".into());
            }
            let ds = ctx.vector_dsts(&ops[0])?;
            let count = if mods.contains(&"x4") {
                4
            } else if mods.contains(&"x2") {
                2
            } else {
                1
            };
            if ds.len() != count {
                return Err("ldmatrix's destinations do not match its count".into());
            }
            let (addr, _) = ctx.addr(&ops[1])?;
            Op::Ldmatrix { ds, addr, trans: mods.contains(&"trans") }
        }
        "mma" => {
            if s.opcode != "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32" {
                return Err("among the warp-wide matrix products only mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 is implemented".into());
            }
            arity(4)?;
            let d = ctx.vector_dsts(&ops[0])?;
            let a = ctx.vector_srcs(&ops[1], Ty::B32)?;
            let b = ctx.vector_srcs(&ops[2], Ty::B32)?;
            let c = ctx.vector_srcs(&ops[3], Ty::F32)?;
            let (Ok(d), Ok(a), Ok(b), Ok(c)) = (
                <[R; 4]>::try_from(d),
                <[Src; 4]>::try_from(a),
                <[Src; 2]>::try_from(b),
                <[Src; 4]>::try_from(c),
            ) else {
                return Err("mma m16n8k8 takes 4 registers of D, 4 of A, 2 of B and 4 of C".into());
            };
            Op::MmaTf32 { d, a, b, c }
        }
        "wgmma" | "mbarrier" | "mapa" => return hopper::instruction(ctx, s, name, mods),
        "setmaxnreg" => {
            let count = match ops.first() {
                Some(Operand::Int(v)) if (24..=256).contains(v) && v % 8 == 0 => *v as u32,
                other => {
                    return Err(format!(
                        "setmaxnreg takes a count of 24 to 256 in steps of 8, found {other:?}"
                    ));
                }
            };
            Op::SetMaxNReg { count }
        }
        "prmt" => {
            arity(4)?;
            if mods.len() != 1 {
                return Err("only the default mode of prmt.b32 is implemented".into());
            }
            Op::Prmt {
                d: ctx.dst(&ops[0])?,
                a: ctx.src(&ops[1])?,
                b: ctx.src(&ops[2])?,
                c: ctx.src(&ops[3])?,
            }
        }
        "redux" => {
            arity(3)?;
            let ty = need_ty()?;
            let op = match mods.get(1).copied() {
                Some("add") => IntOp::Add,
                Some("min") => IntOp::Min,
                Some("max") => IntOp::Max,
                Some("and") => IntOp::And,
                Some("or") => IntOp::Or,
                Some("xor") => IntOp::Xor,
                _ => return Err("this redux operation is not implemented".into()),
            };
            Op::Redux { op, ty, d: ctx.dst(&ops[0])?, a: ctx.src(&ops[1])?, mask: ctx.src(&ops[2])? }
        }
        "elect" | "stmatrix" | "tcgen05" | "griddepcontrol" => {
            return Err("the emulator does not model it yet".into());
        }
        _ => return Err("the instruction is not implemented".into()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_names_are_demangled() {
        assert_eq!(demangle("_ZZ6matmulE2As"), "As");
        assert_eq!(demangle("_ZZ10sum_slicesE7partial"), "partial");
        assert_eq!(demangle("summed_to"), "summed_to");
        assert_eq!(demangle("_ZZ6matmul"), "_ZZ6matmul");
    }
}

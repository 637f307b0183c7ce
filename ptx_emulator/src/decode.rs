//! Statements to instructions the machine executes: each opcode and its modifiers checked
//! against the subset the emulator implements, registers numbered, symbols resolved to the
//! addresses the machine lays out, and labels to instruction indices. Anything outside the
//! subset is refused here, before a thread runs, naming the instruction and its `.cu` line.

use std::collections::HashMap;

use crate::memory::GLOBALS_BASE;
use crate::parse::{Function, Item, Module, Operand, Statement, Var};

/// A register's slot in a warp's register file.
pub type R = u32;

/// A source operand: a register or an immediate (its bits).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Src {
    Reg(R),
    Imm(u64),
}

/// The PTX types the emulator computes with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    Pred,
    B8,
    B16,
    B32,
    B64,
    U8,
    U16,
    U32,
    U64,
    S8,
    S16,
    S32,
    S64,
    F32,
    F64,
    Tf32,
}

impl Ty {
    fn parse(s: &str) -> Option<Ty> {
        Some(match s {
            "pred" => Ty::Pred,
            "b8" => Ty::B8,
            "b16" => Ty::B16,
            "b32" => Ty::B32,
            "b64" => Ty::B64,
            "u8" => Ty::U8,
            "u16" => Ty::U16,
            "u32" => Ty::U32,
            "u64" => Ty::U64,
            "s8" => Ty::S8,
            "s16" => Ty::S16,
            "s32" => Ty::S32,
            "s64" => Ty::S64,
            "f32" => Ty::F32,
            "f64" => Ty::F64,
            "tf32" => Ty::Tf32,
            _ => return None,
        })
    }

    pub fn bits(self) -> u32 {
        match self {
            Ty::Pred => 1,
            Ty::B8 | Ty::U8 | Ty::S8 => 8,
            Ty::B16 | Ty::U16 | Ty::S16 => 16,
            Ty::B32 | Ty::U32 | Ty::S32 | Ty::F32 | Ty::Tf32 => 32,
            Ty::B64 | Ty::U64 | Ty::S64 | Ty::F64 => 64,
        }
    }

    pub fn signed(self) -> bool {
        matches!(self, Ty::S8 | Ty::S16 | Ty::S32 | Ty::S64)
    }

    pub fn float(self) -> bool {
        matches!(self, Ty::F32 | Ty::F64)
    }
}

/// The state spaces an address can name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Space {
    Global,
    Shared,
    Local,
    Param,
    /// No space named: the address says which (see [`crate::memory`]).
    Generic,
}

/// `[base+offset]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Addr {
    pub base: Src,
    pub offset: i64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntOp {
    Add,
    Sub,
    MulLo,
    MulHi,
    Min,
    Max,
    Div,
    Rem,
    And,
    Or,
    Xor,
    Shl,
    Shr,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FloatOp {
    Add,
    Sub,
    Mul,
    Min,
    Max,
    Div,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnOp {
    Not,
    Neg,
    Abs,
    Popc,
    Clz,
    Brev,
    Sqrt,
    Rcp,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    /// Unordered forms of the float comparisons: true when either side is NaN.
    Equ,
    Neu,
    Ltu,
    Leu,
    Gtu,
    Geu,
    Num,
    Nan,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BoolOp {
    And,
    Or,
    Xor,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtomOp {
    Add,
    Exch,
    Cas,
    Min,
    Max,
    And,
    Or,
    Xor,
    Inc,
    Dec,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShflMode {
    Up,
    Down,
    Bfly,
    Idx,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Round {
    /// Integer rounding for float → int (rni, rzi, rmi, rpi) or float rounding (rn, rz, rm, rp).
    Nearest,
    Zero,
    Down,
    Up,
    /// To nearest, ties away from zero (cvt.rna.tf32.f32).
    NearestAway,
    /// No rounding given: exact conversions (integer widths, f32 → f64).
    None,
}

/// What one instruction does.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    Mov {
        d: R,
        a: Src,
        bits: u32,
    },
    /// `mov.b64 d, {a, b}`: parts packed low first.
    Pack {
        d: R,
        parts: Vec<Src>,
        part_bits: u32,
    },
    /// `mov.b64 {a, b}, s`.
    Unpack {
        ds: Vec<R>,
        a: Src,
        part_bits: u32,
    },
    Int {
        op: IntOp,
        ty: Ty,
        d: R,
        a: Src,
        b: Src,
    },
    /// mul.wide: the full product of two `ty` values, twice as wide.
    MulWide {
        ty: Ty,
        d: R,
        a: Src,
        b: Src,
    },
    /// mad.lo / mad.hi / mad.wide: a·b (low half, high half or wide) + c.
    Mad {
        ty: Ty,
        part: MadPart,
        d: R,
        a: Src,
        b: Src,
        c: Src,
    },
    Unary {
        op: UnOp,
        ty: Ty,
        d: R,
        a: Src,
    },
    Bool {
        op: BoolOp,
        d: R,
        a: Src,
        b: Src,
        not_a: bool,
        not_b: bool,
    },
    Setp {
        cmp: Cmp,
        ty: Ty,
        d: R,
        d_not: Option<R>,
        a: Src,
        b: Src,
        combine: Option<(BoolOp, Src, bool)>,
    },
    Selp {
        d: R,
        a: Src,
        b: Src,
        p: Src,
        bits: u32,
    },
    Bfi {
        ty: Ty,
        d: R,
        a: Src,
        b: Src,
        pos: Src,
        len: Src,
    },
    Bfe {
        ty: Ty,
        d: R,
        a: Src,
        pos: Src,
        len: Src,
    },
    Cvt {
        d: R,
        a: Src,
        to: Ty,
        from: Ty,
        round: Round,
        ftz: bool,
    },
    /// cvta: generic ↔ a space (`to` true: generic → space).
    Cvta {
        d: R,
        a: Src,
        space: Space,
        to: bool,
    },
    Float {
        op: FloatOp,
        ty: Ty,
        d: R,
        a: Src,
        b: Src,
        ftz: bool,
    },
    Fma {
        ty: Ty,
        d: R,
        a: Src,
        b: Src,
        c: Src,
        ftz: bool,
    },
    /// `signed`: a load narrower than 4 bytes of a signed type, sign-extended to 32 bits.
    Ld {
        space: Space,
        bytes: u32,
        ds: Vec<R>,
        addr: Addr,
        volatile: bool,
        signed: bool,
    },
    St {
        space: Space,
        bytes: u32,
        srcs: Vec<Src>,
        addr: Addr,
    },
    Atom {
        space: Space,
        op: AtomOp,
        ty: Ty,
        d: Option<R>,
        addr: Addr,
        b: Src,
        c: Src,
    },
    CpAsync {
        dst: Addr,
        src: Addr,
        size: u32,
        src_size: Option<Src>,
    },
    CpCommit,
    /// Waits until at most `pending` groups are in flight (`all`: `wait_all`, which commits the
    /// open copies first).
    CpWait {
        pending: u32,
        all: bool,
    },
    Bar,
    /// membar / fence: all of memory is one and sequential here.
    Fence,
    Bra {
        target: usize,
    },
    Exit,
    Trap,
    Shfl {
        mode: ShflMode,
        d: R,
        p: Option<R>,
        a: Src,
        b: Src,
        c: Src,
        mask: Src,
    },
    Vote {
        all: bool,
        any: bool,
        ballot: bool,
        d: R,
        a: Src,
        not_a: bool,
        mask: Src,
    },
    Activemask {
        d: R,
    },
    Ldmatrix {
        ds: Vec<R>,
        addr: Addr,
        trans: bool,
    },
    /// mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32
    MmaTf32 {
        d: [R; 4],
        a: [Src; 4],
        b: [Src; 2],
        c: [Src; 4],
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MadPart {
    Lo,
    Hi,
    Wide,
}

/// An instruction, its guard, and where it came from.
#[derive(Clone, Debug)]
pub struct Inst {
    pub op: Op,
    pub guard: Option<(R, bool)>,
    /// The `.cu` file and line (file 0, line 0: none known).
    pub file: u32,
    pub line: u32,
    /// The opcode as written, for messages.
    pub opcode: String,
    /// Whether the machine code joins this load with its neighbours into one wider access (for
    /// counting traffic alone: see [`merge_shared_loads`]).
    pub merge: Merge,
}

/// A 4-byte shared load's place in a group that the compiler's back end (ptxas) turns into one
/// 8- or 16-byte load.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Merge {
    None,
    /// The group's first load executed: it counts the whole access of `bytes`, starting `from`
    /// bytes before its own address, when every lane's start is aligned to `bytes`.
    Leader {
        group: u32,
        bytes: u32,
        from: u32,
    },
    /// Another load of the group: counted only if the leader's lanes were not aligned.
    Follower {
        group: u32,
    },
}

/// The special registers, in the slots before the declared ones; a warp fills them in.
pub const SPECIALS: [&str; 16] = [
    "%tid.x",
    "%tid.y",
    "%tid.z",
    "%ntid.x",
    "%ntid.y",
    "%ntid.z",
    "%ctaid.x",
    "%ctaid.y",
    "%ctaid.z",
    "%nctaid.x",
    "%nctaid.y",
    "%nctaid.z",
    "%laneid",
    "%warpid",
    "%nwarpid",
    "%smid",
];

/// A kernel ready to run.
#[derive(Debug)]
pub struct Kernel {
    pub name: String,
    pub insts: Vec<Inst>,
    /// Register slots (the specials first).
    pub regs: usize,
    /// Offsets and sizes of the parameters in the parameter space.
    pub params: Vec<(usize, usize)>,
    pub param_bytes: usize,
    /// Static shared bytes (as a GPU packs them), and where the dynamic shared array starts.
    pub static_shared: usize,
    pub dynamic_at: usize,
    /// The static shared arrays, where the emulator lays them out.
    pub shared_vars: Vec<SharedVar>,
    pub local_bytes: usize,
    /// The `.cu` file of each file number.
    pub files: HashMap<u32, String>,
    /// How many groups of shared loads the back end joins ([`Merge`]).
    pub merge_groups: usize,
}

/// Marks the groups of 4-byte shared loads that ptxas joins into one 16-byte (or 8-byte) load:
/// within a straight run of instructions (no label, branch, barrier or shared store between),
/// loads from one base register at offsets o, o+4, o+8, o+12 with o a multiple of 16 (or o, o+4
/// with o a multiple of 8). The machine code then makes one request where the PTX makes four;
/// whether it may depends on the addresses' alignment, which the machine checks as it runs.
/// Returns the number of groups.
pub fn merge_shared_loads(insts: &mut [Inst], targets: &[usize]) -> usize {
    let mut groups = 0u32;
    let mut start = 0;
    while start < insts.len() {
        let mut end = start + 1;
        while end < insts.len() && !targets.contains(&end) && !ends_run(&insts[end - 1].op) {
            end += 1;
        }
        // (base register, offset) → instruction, for the run's 4-byte shared loads.
        let mut loads: HashMap<(R, i64), usize> = HashMap::new();
        for (i, inst) in insts.iter().enumerate().take(end).skip(start) {
            if let Op::Ld {
                space: Space::Shared,
                bytes: 4,
                ds,
                addr: Addr { base: Src::Reg(r), offset },
                ..
            } = &inst.op
            {
                if ds.len() == 1 && inst.guard.is_none() {
                    loads.entry((*r, *offset)).or_insert(i);
                }
            }
        }
        let mut keys: Vec<(R, i64)> = loads.keys().copied().collect();
        keys.sort_unstable();
        let mut taken = std::collections::HashSet::new();
        for (width, count) in [(16i64, 4i64), (8, 2)] {
            for &(r, o) in &keys {
                if o.rem_euclid(width) != 0 {
                    continue;
                }
                let members: Vec<usize> =
                    (0..count).filter_map(|j| loads.get(&(r, o + 4 * j)).copied()).collect();
                if members.len() as i64 != count || members.iter().any(|m| taken.contains(m)) {
                    continue;
                }
                let leader = *members.iter().min().expect("a member");
                for &m in &members {
                    taken.insert(m);
                    insts[m].merge = if m == leader {
                        let own = match &insts[m].op {
                            Op::Ld { addr, .. } => addr.offset,
                            _ => o,
                        };
                        Merge::Leader { group: groups, bytes: width as u32, from: (own - o) as u32 }
                    } else {
                        Merge::Follower { group: groups }
                    };
                }
                groups += 1;
            }
        }
        start = end;
    }
    groups as usize
}

/// Whether an instruction ends a straight run: control flow, a barrier, or a write to shared
/// memory (which a load after it must see).
fn ends_run(op: &Op) -> bool {
    matches!(
        op,
        Op::Bra { .. }
            | Op::Exit
            | Op::Trap
            | Op::Bar
            | Op::Fence
            | Op::St { .. }
            | Op::Atom { .. }
            | Op::CpWait { .. }
    )
}

/// The gap the emulator leaves between static shared arrays.
pub const RED_ZONE: usize = 128;

/// A static shared array: its bytes `start..end` and its name in the source.
#[derive(Clone, Debug)]
pub struct SharedVar {
    pub start: usize,
    pub end: usize,
    pub name: String,
}

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

/// Why a kernel cannot be emulated: the instruction (or directive) and where it is.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    pub what: String,
    pub file: String,
    pub line: u32,
    pub why: String,
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
pub fn decode(module: &Module, f: &Function, globals: &HashMap<String, u64>) -> Result<Kernel, Refusal> {
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
            Item::Label(l) => {
                labels.insert(l.as_str(), count);
            }
            Item::Stmt(_) => count += 1,
        }
    }
    let mut symbols = HashMap::new();
    let mut params = Vec::new();
    let mut at = 0usize;
    for (name, bytes) in &f.params {
        at = at.next_multiple_of((*bytes).clamp(1, 8));
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
    for item in &f.body {
        if let Item::Stmt(s) = item {
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
                opcode: s.opcode.clone(),
                merge: Merge::None,
            });
        }
    }
    let max_slot = ctx.regs.values().copied().max().unwrap_or(0) as usize + 1;
    let targets: Vec<usize> = ctx.labels.values().copied().collect();
    let merge_groups = merge_shared_loads(&mut insts, &targets);
    Ok(Kernel {
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
    })
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
            "global" => return Space::Global,
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
            if to == Ty::Tf32 && round != Round::NearestAway {
                return Err("only cvt.rna.tf32.f32 is implemented among the TF32 conversions".into());
            }
            let directed = matches!(round, Round::Zero | Round::Down | Round::Up);
            let to_float = to.float() && to != Ty::Tf32;
            if to_float && directed && (!from.float() || from != to) && !(from == Ty::F32 && to == Ty::F64) {
                return Err("directed rounding of an integer or of f64 to a float is not implemented".into());
            }
            Op::Cvt { d: ctx.dst(&ops[0])?, a: ctx.fsrc(&ops[1], from)?, to, from, round, ftz }
        }
        "cvta" => {
            arity(2)?;
            let to = mods.first() == Some(&"to");
            let space = space_of(mods);
            if space == Space::Generic || space == Space::Param {
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
                        "global" | "shared" | "local" | "param" | "v2" | "v4" | "volatile" | "weak"
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
                mods.iter().any(|m| matches!(*m, "global" | "shared" | "shared::cta" | "local" | "param")),
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
        "bar" | "barrier" => {
            let sync = mods.iter().all(|m| matches!(*m, "sync" | "cta" | "aligned")) && !mods.is_empty();
            if !sync || n > 1 {
                return Err("only the block-wide barrier `bar.sync 0` (__syncthreads) is implemented".into());
            }
            if n == 1 && ops[0] != Operand::Int(0) {
                return Err("named barriers other than 0 are not implemented".into());
            }
            Op::Bar
        }
        "membar" | "fence" => {
            if mods.iter().any(|m| m.starts_with("proxy")) {
                return Err("proxy fences belong to the copy engine and tensor cores of sm_90".into());
            }
            Op::Fence
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
        "wgmma" | "cp.async.bulk" | "mbarrier" | "setmaxnreg" | "elect" | "stmatrix" | "tcgen05" => {
            return Err("it belongs to Hopper's tensor cores and copy engine".into());
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

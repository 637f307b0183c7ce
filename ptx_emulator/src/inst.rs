//! What the machine executes: the instructions of a decoded kernel ([`Op`], with its operands
//! and the `.cu` line it came from) and the kernel they belong to. [`crate::decode`] makes them
//! from the parsed PTX; [`crate::exec`] runs them.

use std::collections::HashMap;

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
    pub(crate) fn parse(s: &str) -> Option<Ty> {
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
    /// `bar.sync id{, count}` (`__syncthreads()` is barrier 0 for the whole block), and
    /// `bar.red.or.pred d, id, p` (`__syncthreads_or`): d is whether any thread's p was true.
    Bar {
        id: Src,
        count: Option<Src>,
        red: Option<(R, Src, bool)>,
    },
    /// `bar.warp.sync mask` (`__syncwarp`): the lanes of the mask meet (PTX ISA §9.7.12.2).
    WarpSync {
        mask: Src,
    },
    /// membar / fence: all of memory is one and sequential here.
    Fence,
    /// `fence.proxy.async`: the thread's ordinary shared-memory writes become visible to the copy
    /// engine and the tensor cores (PTX ISA §9.7.13.4, the proxy fence).
    FenceProxyAsync,
    /// `setmaxnreg.{inc,dec}`: a warpgroup's registers per thread (a hint to the register
    /// allocator; the emulator checks the count and changes nothing).
    SetMaxNReg {
        count: u32,
    },
    /// `prmt.b32 d, a, b, c`: the bytes of d picked from the eight of {b, a} by c's nibbles.
    Prmt {
        d: R,
        a: Src,
        b: Src,
        c: Src,
    },
    /// `redux.sync.op.type d, a, mask`: the warp's reduction of a.
    Redux {
        op: IntOp,
        ty: Ty,
        d: R,
        a: Src,
        mask: Src,
    },
    Hopper(crate::inst::Hopper),
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

/// Hopper's instructions: mbarriers, the copy engine (TMA), the warpgroup's tensor-core
/// product and clusters (PTX ISA §9.7.13 and §9.7.15; each variant cites its section).
#[derive(Clone, Debug, PartialEq)]
pub enum Hopper {
    /// `mbarrier.init.shared.b64 [a], count` (§9.7.13.15.9).
    MbarInit {
        addr: Addr,
        count: Src,
    },
    /// `mbarrier.arrive{.expect_tx}.shared{::cta,::cluster}.b64 _, [a]{, tx}` (§9.7.13.15.13):
    /// one arrival, after raising the phase's expected bytes by `tx`.
    MbarArrive {
        addr: Addr,
        tx: Option<Src>,
        state: Option<R>,
    },
    /// `mbarrier.expect_tx [a], tx` (§9.7.13.15.11): more bytes expected, no arrival.
    MbarExpectTx {
        addr: Addr,
        tx: Src,
    },
    /// `mbarrier.try_wait.parity.shared.b64 p, [a], parity` (§9.7.13.15.16): p is whether the
    /// phase of that parity has completed.
    MbarTryWait {
        d: R,
        addr: Addr,
        parity: Src,
    },
    /// `cp.async.bulk.tensor.Nd.shared::cluster.global.tile.mbarrier::complete_tx::bytes
    /// [dst], [map, {coords}], [bar]{, cta_mask}` (§9.7.9.25.5.1): a box of the map's tensor
    /// into shared memory (into every block of `cta_mask` with `.multicast::cluster`).
    TmaLoad {
        dst: Addr,
        map: Src,
        coords: Vec<Src>,
        bar: Addr,
        multicast: Option<Src>,
    },
    /// `cp.async.bulk.tensor.Nd.global.shared::cta.bulk_group [map, {coords}], [src]`: a box
    /// of shared memory into the map's tensor.
    TmaStore {
        map: Src,
        coords: Vec<Src>,
        src: Addr,
    },
    /// `cp.async.bulk.commit_group` and `cp.async.bulk.wait_group{.read} n` (§9.7.9.25.6).
    BulkCommit,
    BulkWait {
        pending: u32,
        read: bool,
    },
    /// `wgmma.fence`, `wgmma.commit_group`, `wgmma.wait_group n` (§9.7.15.6).
    WgmmaFence,
    WgmmaCommit,
    WgmmaWait {
        pending: u32,
    },
    /// `wgmma.mma_async.sync.aligned.m64nNkK.dtype.atype.btype d, a, b-desc, scale-d, …`
    /// (§9.7.15.5.2): d (64×N for the warpgroup) = a·b + (scale-d ? d : 0).
    Wgmma(Box<Wgmma>),
    /// `mapa.shared::cluster.u32 d, a, rank` (§9.7.9.22): the address of the same byte in
    /// block `rank` of the cluster.
    Mapa {
        d: R,
        a: Src,
        rank: Src,
    },
    /// `barrier.cluster.arrive` and `barrier.cluster.wait` (§9.7.12.3).
    ClusterArrive,
    ClusterWait,
}

/// The element types a wgmma multiplies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WgmmaKind {
    Tf32,
    Bf16,
    /// Bytes, each signed or not, into 32-bit integers.
    Int8 {
        a_signed: bool,
        b_signed: bool,
    },
}

/// One wgmma: its shape, operands and accumulators.
#[derive(Clone, Debug, PartialEq)]
pub struct Wgmma {
    pub kind: WgmmaKind,
    pub n: u32,
    pub k: u32,
    /// The accumulators, N/2 per thread.
    pub d: Vec<R>,
    /// A from registers (its fragments), or from shared memory through a descriptor.
    pub a_regs: Option<Vec<Src>>,
    pub a_desc: Option<Src>,
    pub b_desc: Src,
    /// Whether d is added to (a predicate: false starts from zero).
    pub scale_d: (Src, bool),
    /// A's and B's layout in shared memory: false K-major, true transposed (MN-major).
    pub trans_a: bool,
    pub trans_b: bool,
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
    /// The call in the kernel it was inlined at, where it is in a helper: an index into
    /// [`DecodedKernel::calls`] ([`NO_CALL`]: none), which keeps the instruction small.
    pub call: u32,
    /// The opcode as written, for messages.
    pub opcode: String,
    /// Whether the opcode names the shared space (`.shared`, `.shared::cta`, `.shared::cluster`):
    /// a shared access of an instruction that does not came through a generic address, in the
    /// shared window. Decided once when decoded, where each access would search the opcode.
    pub names_shared: bool,
    /// Whether the machine code joins this load with its neighbours into one wider access (for
    /// counting traffic alone: see [`merge_shared_loads`]).
    pub merge: Merge,
}

/// A shared load's place in a group that the compiler's back end (ptxas) turns into one load
/// (neighbouring words into one 8- or 16-byte load, bytes read twice into one): decided when the
/// kernel is decoded, from what ptxas can prove of the addresses (see [`crate::joins`]), as
/// ptxas decides it when it compiles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Merge {
    None,
    /// The group's first load executed: it counts the whole access of `bytes`, starting `from`
    /// bytes before its own address.
    Leader {
        group: u32,
        bytes: u32,
        from: u32,
    },
    /// Another load of the group: the leader counted it.
    Follower {
        group: u32,
    },
}

/// The special registers, in the slots before the declared ones; a warp fills them in.
pub const SPECIALS: [&str; 30] = [
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
    "%cluster_ctarank",
    "%cluster_nctarank",
    "%cluster_ctaid.x",
    "%cluster_ctaid.y",
    "%cluster_ctaid.z",
    "%cluster_nctaid.x",
    "%cluster_nctaid.y",
    "%cluster_nctaid.z",
    "%clusterid.x",
    "%clusterid.y",
    "%clusterid.z",
    "%nclusterid.x",
    "%nclusterid.y",
    "%nclusterid.z",
];

/// A kernel ready to run.
#[derive(Debug)]
pub struct DecodedKernel {
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
    /// The calls the kernel's inlined instructions came from ([`Inst::call`]).
    pub calls: Vec<crate::parse::Call>,
    /// The names of the inlined helpers ([`crate::parse::Call::helper`]).
    pub helpers: HashMap<u32, String>,
    /// The function inlined into the entry that holds nearly all of its code (a `__global__`
    /// wrapper that calls the kernel's body): its calls count as the kernel's own.
    pub body: Option<u32>,
    /// The text of each file number's source, by line, where the host gave it
    /// ([`crate::Emulator::source`]): for naming the mbarriers a kernel reaches through pointers.
    pub sources: HashMap<u32, std::sync::Arc<Vec<String>>>,
    /// How many groups of shared loads the back end joins ([`Merge`]).
    pub merge_groups: usize,
    /// The blocks of a cluster the kernel is compiled for (`__cluster_dims__`), if any.
    pub cluster: Option<[u32; 3]>,
    /// The registers a thread may use under the kernel's launch bounds (255 without).
    pub register_limit: u32,
}

/// [`Inst::call`] of an instruction of the kernel's own code.
pub const NO_CALL: u32 = u32::MAX;

impl DecodedKernel {
    /// The call in the kernel's own code that an instruction of an inlined helper came from, as
    /// file, line and column (where the entry only calls the kernel's [`Self::body`], the call
    /// made in the body); None for an instruction of the kernel's own code.
    pub fn call_site(&self, inst: &Inst) -> Option<(u32, u32, u32)> {
        let c = self.calls.get(inst.call as usize).filter(|c| c.line > 0)?;
        if self.body == Some(c.body) {
            (c.inner.0 != 0).then_some(c.inner)
        } else {
            Some((c.file, c.line, c.column))
        }
    }
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

/// Why a kernel cannot be emulated: the instruction (or directive) and where it is.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    pub what: String,
    pub file: String,
    pub line: u32,
    pub why: String,
}

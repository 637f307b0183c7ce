//! What the replay is driven by: each warp's instructions in the order it executed them, with
//! what the emulator saw each one do (the wavefronts of a shared access, the lines and L2
//! sectors of a global one, the mbarrier phase an arrival counts on), and for each instruction
//! of the kernel its class and the registers it reads and writes.

pub use crate::inst::R;
use crate::inst::{DecodedKernel, Hopper, Merge, Op, Space, Src, WgmmaKind};

/// One instruction a warp executed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TraceEvent {
    /// The instruction (its index in the kernel).
    pub pc: u32,
    /// What it did, by class: shared wavefronts; a global request's lines; local memory's active
    /// lanes; a copy's bytes; a barrier's id.
    pub a: u32,
    /// L2 sectors a global load missed the L1 by, or a store wrote; a named barrier's thread
    /// count (0: the whole block).
    pub b: u32,
    /// Its mbarrier phases: `links[link..link + links_len]` of the warp's stream.
    pub link: u32,
    pub links_len: u32,
    /// Where a memory access went, as the emulator resolved it (a generic address names its
    /// space only when it runs).
    pub space: Where,
}

/// The memory an access reached.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Where {
    #[default]
    None,
    /// Predicated off in every lane: it issues, and does nothing else.
    Off,
    Shared,
    Global,
    Local,
}

/// An mbarrier phase (or the cluster barrier's) an event arrives on, lands bytes on, or waits
/// for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Phase {
    /// The mbarrier's block (its rank in the cluster) and byte; [`CLUSTER_BARRIER`] for the
    /// cluster barrier.
    pub bar: u32,
    pub phase: u32,
}

/// The key of the cluster barrier among the mbarriers'.
pub const CLUSTER_BARRIER: u32 = u32::MAX;

/// What a cluster's recording holds while it runs: its trace so far, and the phases the running
/// instruction has named. The emulator's hooks fill it (`exec/trace_hooks.rs`).
#[derive(Default)]
pub struct TraceRecorder {
    pub trace: Trace,
    pub links: Vec<Phase>,
}

/// One cluster's warps as the emulator ran them.
#[derive(Clone, Debug, Default)]
pub struct Trace {
    /// Blocks in the cluster, and warps in each.
    pub blocks: u32,
    pub warps_per_block: u32,
    /// Every warp's events, block by block, and the phases they name.
    pub streams: Vec<Vec<TraceEvent>>,
    pub links: Vec<Vec<Phase>>,
    /// Warp-instructions in all, for choosing the busiest cluster.
    pub instructions: u64,
    /// Bytes of local memory a thread uses.
    pub local_bytes: u32,
}

impl Trace {
    /// The trace's shape and counts, without its streams.
    pub fn clone_counts(&self) -> Trace {
        Trace {
            blocks: self.blocks,
            warps_per_block: self.warps_per_block,
            streams: Vec::new(),
            links: Vec::new(),
            instructions: self.instructions,
            local_bytes: self.local_bytes,
        }
    }
}

/// What an instruction is to the SM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InstClass {
    /// FP32 arithmetic: the FMA pipes.
    Fp32,
    /// Integer, logic, moves, predicates, conversions: issue only.
    Alu,
    /// Divisions, square roots, reciprocals, 64-bit floats: the slow path.
    Slow,
    /// A load the constant cache serves (kernel parameters).
    Param,
    SharedLoad,
    SharedStore,
    GlobalLoad,
    GlobalStore,
    LocalLoad,
    LocalStore,
    Atomic,
    /// Warp-wide exchanges: shfl, vote, redux.
    Exchange,
    Ldmatrix,
    MmaSync,
    CpAsync,
    CpCommit,
    /// `cp.async.wait_group pending`, or `wait_all` (which commits the open group first).
    CpWait {
        pending: u32,
        all: bool,
    },
    Barrier,
    MbarArrive,
    MbarWait,
    TmaLoad,
    TmaStore,
    BulkCommit,
    BulkWait {
        pending: u32,
    },
    WgmmaFence,
    /// A warpgroup's product: its FLOPs (operations for INT8) and its operands' kind.
    Wgmma {
        flops: u64,
        kind: WgmmaInputs,
    },
    WgmmaCommit,
    WgmmaWait {
        pending: u32,
    },
    ClusterArrive,
    ClusterWait,
    /// Issues, reads nothing, waits for nothing (fences, exits).
    Control,
    /// A branch: issues, reads its predicate.
    Branch,
    /// A shared load the machine code joins into the one before it: no issue of its own.
    Joined,
}

/// The operands of a wgmma, which set the tensor cores' rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WgmmaInputs {
    Tf32,
    Bits16,
    Int8,
}

/// One instruction of the kernel as the replay sees it.
#[derive(Clone, Debug)]
pub struct Static {
    pub class: InstClass,
    pub reads: Vec<R>,
    pub writes: Vec<R>,
}

fn regs(srcs: &[Src]) -> Vec<R> {
    srcs.iter()
        .filter_map(|s| match s {
            Src::Reg(r) => Some(*r),
            Src::Imm(_) => None,
        })
        .collect()
}

/// Each instruction's class and operands.
pub fn statics(k: &DecodedKernel) -> Vec<Static> {
    k.insts
        .iter()
        .map(|inst| {
            let (class, mut reads, writes) = classify(&inst.op, &inst.merge);
            if let Some((p, _)) = inst.guard {
                reads.push(p);
            }
            Static { class, reads, writes }
        })
        .collect()
}

fn addr(a: &crate::inst::Addr) -> Vec<R> {
    regs(&[a.base])
}

fn classify(op: &Op, merge: &Merge) -> (InstClass, Vec<R>, Vec<R>) {
    use InstClass::*;
    let space_load = |space: Space| match space {
        Space::Shared => SharedLoad,
        Space::Local => LocalLoad,
        Space::Param => Param,
        Space::Global | Space::Generic => GlobalLoad,
    };
    match op {
        Op::Mov { d, a, .. } => (Alu, regs(&[*a]), vec![*d]),
        Op::Pack { d, parts, .. } => (Alu, regs(parts), vec![*d]),
        Op::Unpack { ds, a, .. } => (Alu, regs(&[*a]), ds.clone()),
        Op::Int { op, d, a, b, .. } => {
            let class =
                if matches!(op, crate::inst::IntOp::Div | crate::inst::IntOp::Rem) { Slow } else { Alu };
            (class, regs(&[*a, *b]), vec![*d])
        }
        Op::MulWide { d, a, b, .. } => (Alu, regs(&[*a, *b]), vec![*d]),
        Op::Mad { d, a, b, c, .. } => (Alu, regs(&[*a, *b, *c]), vec![*d]),
        Op::Unary { op, ty, d, a } => {
            let slow =
                matches!(op, crate::inst::UnOp::Sqrt | crate::inst::UnOp::Rcp) || *ty == crate::inst::Ty::F64;
            (if slow { Slow } else { Alu }, regs(&[*a]), vec![*d])
        }
        Op::Bool { d, a, b, .. } => (Alu, regs(&[*a, *b]), vec![*d]),
        Op::Setp { d, d_not, a, b, combine, .. } => {
            let mut r = regs(&[*a, *b]);
            if let Some((_, p, _)) = combine {
                r.extend(regs(&[*p]));
            }
            let mut w = vec![*d];
            w.extend(d_not.iter().copied());
            (Alu, r, w)
        }
        Op::Selp { d, a, b, p, .. } => (Alu, regs(&[*a, *b, *p]), vec![*d]),
        Op::Bfi { d, a, b, pos, len, .. } => (Alu, regs(&[*a, *b, *pos, *len]), vec![*d]),
        Op::Bfe { d, a, pos, len, .. } => (Alu, regs(&[*a, *pos, *len]), vec![*d]),
        Op::Cvt { d, a, to, from, .. } => {
            let slow = *to == crate::inst::Ty::F64 || *from == crate::inst::Ty::F64;
            // cvt.rn.tf32.f32 is an ALU instruction: latency.cu measures 4.1 cycles dependent, and
            // throughput.cu 1.81 a clock an SM beside as many adds (the rate).
            (if slow { Slow } else { Alu }, regs(&[*a]), vec![*d])
        }
        Op::Cvta { d, a, .. } => (Alu, regs(&[*a]), vec![*d]),
        Op::Float { op, ty, d, a, b, .. } => {
            let class =
                if *op == crate::inst::FloatOp::Div || *ty == crate::inst::Ty::F64 { Slow } else { Fp32 };
            (class, regs(&[*a, *b]), vec![*d])
        }
        Op::Fma { ty, d, a, b, c, .. } => {
            (if *ty == crate::inst::Ty::F64 { Slow } else { Fp32 }, regs(&[*a, *b, *c]), vec![*d])
        }
        Op::Ld { space, ds, addr: a, .. } => {
            let class = match (space_load(*space), merge) {
                (_, Merge::Follower { .. }) => Joined,
                // A generic load resolves at run time; the event's counts say which it was.
                (c, _) => c,
            };
            (class, addr(a), ds.clone())
        }
        Op::St { space, srcs, addr: a, .. } => {
            let class = match space {
                Space::Shared => SharedStore,
                Space::Local => LocalStore,
                _ => GlobalStore,
            };
            let mut r = regs(srcs);
            r.extend(addr(a));
            (class, r, vec![])
        }
        Op::Atom { d, addr: a, b, c, .. } => {
            let mut r = regs(&[*b, *c]);
            r.extend(addr(a));
            (Atomic, r, d.iter().copied().collect())
        }
        Op::CpAsync { dst, src, src_size, .. } => {
            let mut r = addr(dst);
            r.extend(addr(src));
            r.extend(src_size.iter().flat_map(|s| regs(&[*s])));
            (CpAsync, r, vec![])
        }
        Op::CpCommit => (CpCommit, vec![], vec![]),
        Op::CpWait { pending, all } => (CpWait { pending: *pending, all: *all }, vec![], vec![]),
        Op::Bar { id, count, red } => {
            let mut r = regs(&[*id]);
            r.extend(count.iter().flat_map(|c| regs(&[*c])));
            let w = red.iter().map(|(d, _, _)| *d).collect();
            if let Some((_, p, _)) = red {
                r.extend(regs(&[*p]));
            }
            (Barrier, r, w)
        }
        Op::WarpSync { .. } | Op::Fence | Op::FenceProxyAsync | Op::SetMaxNReg { .. } => {
            (Control, vec![], vec![])
        }
        Op::Prmt { d, a, b, c } => (Alu, regs(&[*a, *b, *c]), vec![*d]),
        Op::Redux { d, a, .. } => (Exchange, regs(&[*a]), vec![*d]),
        Op::Bra { .. } => (Branch, vec![], vec![]),
        Op::Exit | Op::Trap => (Control, vec![], vec![]),
        Op::Shfl { d, p, a, b, c, .. } => {
            let mut w = vec![*d];
            w.extend(p.iter().copied());
            (Exchange, regs(&[*a, *b, *c]), w)
        }
        Op::Vote { d, a, .. } => (Exchange, regs(&[*a]), vec![*d]),
        Op::Activemask { d } => (Alu, vec![], vec![*d]),
        Op::Ldmatrix { ds, addr: a, .. } => (Ldmatrix, addr(a), ds.clone()),
        Op::MmaTf32 { d, a, b, c } => {
            let mut r = regs(a);
            r.extend(regs(b));
            r.extend(regs(c));
            (MmaSync, r, d.to_vec())
        }
        Op::Hopper(h) => match h {
            Hopper::MbarInit { addr: a, count } => {
                let mut r = addr(a);
                r.extend(regs(&[*count]));
                (Alu, r, vec![])
            }
            Hopper::MbarArrive { addr: a, tx, state } => {
                let mut r = addr(a);
                r.extend(tx.iter().flat_map(|t| regs(&[*t])));
                (MbarArrive, r, state.iter().copied().collect())
            }
            Hopper::MbarExpectTx { addr: a, tx } => {
                let mut r = addr(a);
                r.extend(regs(&[*tx]));
                (Alu, r, vec![])
            }
            Hopper::MbarTryWait { d, addr: a, parity } => {
                let mut r = addr(a);
                r.extend(regs(&[*parity]));
                (MbarWait, r, vec![*d])
            }
            Hopper::TmaLoad { dst, map, coords, bar, multicast } => {
                let mut r = addr(dst);
                r.extend(regs(&[*map]));
                r.extend(regs(coords));
                r.extend(addr(bar));
                r.extend(multicast.iter().flat_map(|m| regs(&[*m])));
                (TmaLoad, r, vec![])
            }
            Hopper::TmaStore { map, coords, src } => {
                let mut r = regs(&[*map]);
                r.extend(regs(coords));
                r.extend(addr(src));
                (TmaStore, r, vec![])
            }
            Hopper::BulkCommit => (BulkCommit, vec![], vec![]),
            Hopper::BulkWait { pending, .. } => (BulkWait { pending: *pending }, vec![], vec![]),
            Hopper::WgmmaFence => (WgmmaFence, vec![], vec![]),
            Hopper::WgmmaCommit => (WgmmaCommit, vec![], vec![]),
            Hopper::WgmmaWait { pending } => (WgmmaWait { pending: *pending }, vec![], vec![]),
            Hopper::Wgmma(g) => {
                let mut r = regs(&[g.b_desc]);
                r.extend(g.a_desc.iter().flat_map(|a| regs(&[*a])));
                r.extend(g.a_regs.iter().flat_map(|a| regs(a)));
                // The accumulators belong to the tensor cores until a wait_group: the
                // replay orders them by the group, not by the registers.
                let flops = 2 * 64 * u64::from(g.n) * u64::from(g.k);
                let kind = match g.kind {
                    WgmmaKind::Tf32 => WgmmaInputs::Tf32,
                    WgmmaKind::Bf16 => WgmmaInputs::Bits16,
                    WgmmaKind::Int8 { .. } => WgmmaInputs::Int8,
                };
                (Wgmma { flops, kind }, r, vec![])
            }
            Hopper::Mapa { d, a, rank } => (Alu, regs(&[*a, *rank]), vec![*d]),
            Hopper::ClusterArrive => (ClusterArrive, vec![], vec![]),
            Hopper::ClusterWait => (ClusterWait, vec![], vec![]),
        },
    }
}

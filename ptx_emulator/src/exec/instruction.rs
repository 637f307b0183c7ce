//! One instruction for the lanes that execute it: a thread's arithmetic here (with
//! [`crate::alu`]), everything else handed to the part of the machine it belongs to.

use std::sync::atomic::Ordering;

use crate::Fault;
use crate::FaultKind;
use crate::alu;
use crate::inst::{Hopper, Inst, Op, Space, Src, Ty};
use crate::memory::{LOCAL_WINDOW, PARAM_WINDOW, SHARED_WINDOW};

use super::collective;
use super::state::Flow;
use super::state::{Cluster, Lanes, Warp};

impl Cluster<'_> {
    pub(super) fn exec(
        &mut self,
        inst: &Inst,
        pc: u32,
        w: &mut Warp,
        slot: usize,
        mask: u32,
        exec: u32,
    ) -> Result<Flow, Fault> {
        if let Some(v) = self.visits.get_mut(slot * self.k.insts.len() + pc as usize) {
            *v += 1;
            self.visit = *v;
        }
        self.fragments_written(pc, w.index, exec);
        let r = &mut w.regs;
        macro_rules! each {
            ($d:expr, |$l:ident| $e:expr) => {{
                let d = $d as usize;
                for $l in Lanes(exec) {
                    let v = $e;
                    r[d][$l] = v;
                }
            }};
        }
        #[inline(always)]
        fn get(r: &[[u64; 32]], s: Src, l: usize) -> u64 {
            match s {
                Src::Reg(x) => r[x as usize][l],
                Src::Imm(v) => v,
            }
        }
        match &inst.op {
            Op::Mov { d, a, bits } => {
                let m = if *bits >= 64 { u64::MAX } else { (1u64 << bits) - 1 };
                each!(*d, |l| get(r, *a, l) & m);
                if self.launch.sanitize {
                    self.operands.carry(slot, *d, *a, exec, r);
                }
            }
            Op::Pack { d, parts, part_bits } => {
                each!(*d, |l| parts.iter().enumerate().fold(0u64, |v, (i, p)| v
                    | ((get(r, *p, l) & ((1u64 << part_bits) - 1)) << (i as u32 * part_bits))))
            }
            Op::Unpack { ds, a, part_bits } => {
                for l in Lanes(exec) {
                    let v = get(r, *a, l);
                    for (i, d) in ds.iter().enumerate() {
                        r[*d as usize][l] = (v >> (i as u32 * part_bits)) & ((1u64 << part_bits) - 1);
                    }
                }
            }
            Op::Int { op, ty, d, a, b } => each!(*d, |l| alu::int(*op, *ty, get(r, *a, l), get(r, *b, l))),
            Op::MulWide { ty, d, a, b } => each!(*d, |l| alu::mul_wide(*ty, get(r, *a, l), get(r, *b, l))),
            Op::Mad { ty, part, d, a, b, c } => each!(*d, |l| {
                let (x, y, z) = (get(r, *a, l), get(r, *b, l), get(r, *c, l));
                match part {
                    crate::inst::MadPart::Lo => alu::int(
                        crate::inst::IntOp::Add,
                        *ty,
                        alu::int(crate::inst::IntOp::MulLo, *ty, x, y),
                        z,
                    ),
                    crate::inst::MadPart::Hi => alu::int(
                        crate::inst::IntOp::Add,
                        *ty,
                        alu::int(crate::inst::IntOp::MulHi, *ty, x, y),
                        z,
                    ),
                    crate::inst::MadPart::Wide => {
                        let wide = if ty.signed() { Ty::S64 } else { Ty::U64 };
                        alu::int(crate::inst::IntOp::Add, wide, alu::mul_wide(*ty, x, y), z)
                    }
                }
            }),
            Op::Unary { op, ty, d, a } => each!(*d, |l| alu::unary(*op, *ty, get(r, *a, l))),
            Op::Bool { op, d, a, b, not_a, not_b } => each!(*d, |l| {
                let x = (get(r, *a, l) != 0) != *not_a;
                let y = (get(r, *b, l) != 0) != *not_b;
                u64::from(alu::boolean(*op, x, y))
            }),
            Op::Setp { cmp, ty, d, d_not, a, b, combine } => {
                for l in Lanes(exec) {
                    let mut t = alu::compare(*cmp, *ty, get(r, *a, l), get(r, *b, l));
                    let mut f = !t;
                    if let Some((op, p, not)) = combine {
                        let q = (get(r, *p, l) != 0) != *not;
                        t = alu::boolean(*op, t, q);
                        f = alu::boolean(*op, f, q);
                    }
                    r[*d as usize][l] = u64::from(t);
                    if let Some(dn) = d_not {
                        r[*dn as usize][l] = u64::from(f);
                    }
                }
            }
            Op::Selp { d, a, b, p, bits } => {
                let m = if *bits >= 64 { u64::MAX } else { (1u64 << bits) - 1 };
                each!(*d, |l| m & if get(r, *p, l) != 0 { get(r, *a, l) } else { get(r, *b, l) })
            }
            Op::Bfi { ty, d, a, b, pos, len } => {
                each!(*d, |l| alu::bit_insert(
                    *ty,
                    get(r, *a, l),
                    get(r, *b, l),
                    get(r, *pos, l),
                    get(r, *len, l)
                ))
            }
            Op::Bfe { ty, d, a, pos, len } => {
                each!(*d, |l| alu::bit_extract(*ty, get(r, *a, l), get(r, *pos, l), get(r, *len, l)))
            }
            Op::Cvt { d, a, to, from, round, ftz } => {
                each!(*d, |l| alu::convert(*to, *from, *round, *ftz, get(r, *a, l)));
                if self.launch.sanitize {
                    self.operands.carry(slot, *d, *a, exec, r);
                }
            }
            Op::Cvta { d, a, space, to } => {
                let window = match space {
                    Space::Shared => SHARED_WINDOW,
                    Space::Local => LOCAL_WINDOW,
                    Space::Param => PARAM_WINDOW,
                    _ => 0,
                };
                each!(*d, |l| {
                    let v = get(r, *a, l);
                    if *to { v.wrapping_sub(window) } else { v.wrapping_add(window) }
                })
            }
            Op::Float { op, ty, d, a, b, ftz } => {
                if *ty == Ty::F32 {
                    self.traffic.flops += u64::from(exec.count_ones());
                    self.traffic.fp32_instructions += 1;
                    self.computed();
                }
                each!(*d, |l| alu::float(*op, *ty, get(r, *a, l), get(r, *b, l), *ftz))
            }
            Op::Fma { ty, d, a, b, c, ftz } => {
                if *ty == Ty::F32 {
                    self.traffic.flops += 2 * u64::from(exec.count_ones());
                    self.traffic.fp32_instructions += 1;
                    self.computed();
                    // All 32 lanes at once (a lane outside `exec` is computed and not kept).
                    let lanes = |s: &Src| -> [u64; 32] {
                        match *s {
                            Src::Reg(x) => r[x as usize],
                            Src::Imm(v) => [v; 32],
                        }
                    };
                    let out = alu::fma32_lanes(&lanes(a), &lanes(b), &lanes(c), *ftz);
                    each!(*d, |l| out[l])
                } else {
                    each!(*d, |l| alu::fma64(get(r, *a, l), get(r, *b, l), get(r, *c, l)))
                }
            }
            Op::Ld { .. }
            | Op::St { .. }
            | Op::Atom { .. }
            | Op::CpAsync { .. }
            | Op::CpCommit
            | Op::CpWait { .. } => {
                self.memory(inst, pc, w, exec)?;
            }
            Op::Bar { id, count, red } => {
                return self.arrive_at_barrier(w, slot, pc, exec, (*id, *count, *red));
            }
            Op::Fence => {
                std::sync::atomic::fence(Ordering::SeqCst);
                self.seen_fence(pc);
                if super::cluster::releases_to_the_cluster(&inst.opcode) {
                    self.release_to_the_cluster();
                }
            }
            Op::FenceProxyAsync => self.fence_proxy_async(exec),
            Op::SetMaxNReg { .. } => {
                // The count was checked when decoded; here every warp has all the registers.
                collective::whole_warp(self, inst, w, mask, exec)?;
            }
            Op::Prmt { d, a, b, c } => {
                each!(*d, |l| alu::permute(get(r, *a, l), get(r, *b, l), get(r, *c, l)))
            }
            Op::Hopper(h) => return self.hopper(h, inst, pc, w, mask, exec),
            Op::Bra { target } => return Ok(Flow::Jump(exec, *target)),
            Op::Exit => return Ok(Flow::Exit(exec)),
            Op::Trap => {
                let l = Lanes(exec).next().unwrap_or(0);
                return Err(self.fault(
                    FaultKind::Trap,
                    format!("{} stopped the kernel with a trap at {}", self.who(w.index, l), self.at(inst)),
                ));
            }
            Op::Shfl { .. }
            | Op::Vote { .. }
            | Op::Activemask { .. }
            | Op::Ldmatrix { .. }
            | Op::MmaTf32 { .. }
            | Op::Redux { .. }
            | Op::WarpSync { .. } => {
                collective::exec(self, inst, pc, w, mask, exec)?;
            }
        }
        Ok(Flow::Next)
    }

    /// Hopper's instructions, each to the part of the machine it belongs to.
    fn hopper(
        &mut self,
        h: &Hopper,
        inst: &Inst,
        pc: u32,
        w: &mut Warp,
        mask: u32,
        exec: u32,
    ) -> Result<Flow, Fault> {
        match h {
            Hopper::MbarInit { addr, count } => self.mbar_init(inst, pc, w, exec, addr, *count)?,
            Hopper::MbarArrive { addr, tx, state } => self.mbar_arrive(inst, w, exec, addr, *tx, *state)?,
            Hopper::MbarExpectTx { addr, tx } => self.mbar_expect_tx(inst, w, exec, addr, *tx)?,
            Hopper::MbarTryWait { d, addr, parity } => {
                let stay = self.mbar_try_wait(inst, w, exec, *d, addr, *parity)?;
                if stay != 0 {
                    // The lanes that got through go on; the rest try again next round.
                    return Ok(Flow::Retry(stay));
                }
            }
            Hopper::TmaLoad { dst, map, coords, bar, multicast } => {
                self.tma_load(inst, pc, w, exec, (dst, *map, coords, bar, *multicast))?;
            }
            Hopper::TmaStore { map, coords, src } => {
                self.tma_store(inst, pc, w, exec, (*map, coords, src))?
            }
            Hopper::BulkCommit => self.bulk_commit(),
            Hopper::BulkWait { pending, .. } => self.bulk_wait(*pending),
            Hopper::WgmmaFence => collective::whole_warp(self, inst, w, mask, exec)?,
            Hopper::WgmmaCommit => {
                collective::whole_warp(self, inst, w, mask, exec)?;
                self.wgmma_commit();
            }
            Hopper::WgmmaWait { pending } => {
                collective::whole_warp(self, inst, w, mask, exec)?;
                self.wgmma_wait(pc, *pending)?;
            }
            Hopper::Wgmma(g) => self.wgmma(inst, pc, w, (mask, exec), g)?,
            Hopper::Mapa { d, a, rank } => {
                for (l, v) in self.mapa(w, exec, (*a, *rank))? {
                    w.regs[*d as usize][l] = v;
                }
            }
            Hopper::ClusterArrive => self.cluster_arrive(inst, pc, w, exec),
            Hopper::ClusterWait => {
                let stay = self.cluster_wait(w, exec);
                if stay != 0 {
                    return Ok(Flow::Retry(stay));
                }
            }
        }
        Ok(Flow::Next)
    }
}

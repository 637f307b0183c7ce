//! The instructions a warp executes together: `shfl.sync`, `vote.sync`, `activemask`,
//! `ldmatrix` and the TF32 `mma.sync`. Each needs every lane it names at the same instruction;
//! a lane that is elsewhere is a fault, as it is undefined on a GPU.

use crate::alu;
use crate::inst::{Inst, Op, ShflMode, Src};
use crate::{Fault, FaultKind};

use super::state::{Cluster, Lanes, Warp};

#[inline]
fn get(w: &Warp, s: Src, l: usize) -> u64 {
    match s {
        Src::Reg(x) => w.regs[x as usize][l],
        Src::Imm(v) => v,
    }
}

/// The lanes that must take part: the instruction's member mask (or the whole warp for the
/// `.aligned` forms), less lanes that do not exist.
fn members(cluster: &Cluster, inst: &Inst, w: &Warp, mask: u32, want: u32) -> Result<u32, Fault> {
    let want = want & w.present & !w.exited;
    if want & !mask != 0 {
        let missing = Lanes(want & !mask).next().expect("a missing lane");
        return Err(cluster.fault(
            FaultKind::Divergence,
            format!(
                "`{}` at {} needs every lane of its mask together, but {} is elsewhere (the warp has branched apart)",
                inst.opcode,
                cluster.at(inst),
                cluster.who(w.index, missing)
            ),
        ));
    }
    Ok(want)
}

/// An instruction of the whole warp (`.sync.aligned`): every lane of the warp must be there.
pub fn whole_warp(cluster: &Cluster, inst: &Inst, w: &Warp, mask: u32, exec: u32) -> Result<(), Fault> {
    members(cluster, inst, w, mask, u32::MAX)?;
    if exec != w.present & !w.exited {
        return Err(cluster.fault(
            FaultKind::Divergence,
            format!("`{}` at {} needs every lane of the warp", inst.opcode, cluster.at(inst)),
        ));
    }
    Ok(())
}

pub fn exec(
    cluster: &mut Cluster,
    inst: &Inst,
    pc: u32,
    w: &mut Warp,
    mask: u32,
    exec: u32,
) -> Result<(), Fault> {
    match &inst.op {
        Op::Shfl { mode, d, p, a, b, c, mask: member } => {
            let first = Lanes(exec).next().unwrap_or(0);
            let member = get(w, *member, first) as u32;
            members(cluster, inst, w, mask, member)?;
            let source: Vec<u64> = (0..32).map(|l| get(w, *a, l)).collect();
            let mut out = [(0u64, false); 32];
            for l in Lanes(exec) {
                let (bv, cv) = (get(w, *b, l) as u32 & 0x1f, get(w, *c, l) as u32);
                let segmask = (cv >> 8) & 0x1f;
                let clamp = cv & 0x1f;
                let lane = l as u32;
                let max_lane = (lane & segmask) | (clamp & !segmask);
                let min_lane = lane & segmask;
                let (j, ok) = match mode {
                    ShflMode::Up => {
                        let j = lane as i32 - bv as i32;
                        (j, j >= max_lane as i32)
                    }
                    ShflMode::Down => {
                        let j = (lane + bv) as i32;
                        (j, j <= max_lane as i32)
                    }
                    ShflMode::Bfly => {
                        let j = (lane ^ bv) as i32;
                        (j, j <= max_lane as i32)
                    }
                    ShflMode::Idx => {
                        let j = (min_lane | (bv & !segmask)) as i32;
                        (j, j <= max_lane as i32)
                    }
                };
                let j = if ok { j as usize } else { l };
                if exec & (1 << j) == 0 {
                    return Err(cluster.fault(
                        FaultKind::Divergence,
                        format!(
                            "`{}` at {}: {} reads lane {j}, which does not take part",
                            inst.opcode,
                            cluster.at(inst),
                            cluster.who(w.index, l)
                        ),
                    ));
                }
                out[l] = (source[j], ok);
            }
            for l in Lanes(exec) {
                w.regs[*d as usize][l] = out[l].0;
                if let Some(p) = p {
                    w.regs[*p as usize][l] = u64::from(out[l].1);
                }
            }
        }
        Op::Vote { all, any, ballot, d, a, not_a, mask: member } => {
            let first = Lanes(exec).next().unwrap_or(0);
            let member = get(w, *member, first) as u32;
            let lanes = members(cluster, inst, w, mask, member)? & exec;
            let bits =
                Lanes(lanes).filter(|&l| (get(w, *a, l) != 0) != *not_a).fold(0u32, |m, l| m | (1 << l));
            let value = if *ballot {
                u64::from(bits)
            } else if *all {
                u64::from(bits == lanes)
            } else if *any {
                u64::from(bits != 0)
            } else {
                u64::from(bits == 0 || bits == lanes)
            };
            for l in Lanes(exec) {
                w.regs[*d as usize][l] = value;
            }
        }
        Op::Activemask { d } => {
            for l in Lanes(exec) {
                w.regs[*d as usize][l] = u64::from(mask);
            }
        }
        Op::Ldmatrix { ds, addr, trans } => {
            members(cluster, inst, w, mask, u32::MAX)?;
            let count = ds.len();
            if cluster.launch.watch.is_some() {
                let seen = super::picture::AccessKind::Matrix { count: count as u32 };
                cluster.watched(inst, pc, w, exec, addr, seen);
            }
            // Lanes 8i to 8i+7 give the rows of matrix i.
            let mut rows = [0usize; 32];
            for (lane, row) in rows.iter_mut().enumerate().take(8 * count) {
                let base = get(w, addr.base, lane).wrapping_add(addr.offset as u64);
                let base =
                    if inst.names_shared { base } else { base.wrapping_sub(crate::memory::SHARED_WINDOW) };
                *row = cluster.shared_offset(inst, w.index, lane, base, 16, false)?;
                if cluster.launch.sanitize {
                    cluster.check_shared(inst, pc, (w.index, lane), *row, 16, false)?;
                }
            }
            let shared = cluster.shared();
            let half = |at: usize| u64::from(u16::from_le_bytes([shared[at], shared[at + 1]]));
            for l in Lanes(exec) {
                for (i, d) in ds.iter().enumerate() {
                    let value = if *trans {
                        let (r, c) = ((l % 4) * 2, l / 4);
                        half(rows[i * 8 + r] + 2 * c) | (half(rows[i * 8 + r + 1] + 2 * c) << 16)
                    } else {
                        let at = rows[i * 8 + l / 4] + (l % 4) * 4;
                        u64::from(u32::from_le_bytes(shared[at..at + 4].try_into().expect("4 bytes")))
                    };
                    w.regs[*d as usize][l] = value;
                }
            }
            if cluster.launch.sanitize && !*trans {
                for l in Lanes(exec) {
                    for (i, d) in ds.iter().enumerate() {
                        let at = rows[i * 8 + l / 4] + (l % 4) * 4;
                        cluster.tag_loaded(pc, *d, l, at, w.regs[*d as usize][l] as u32);
                    }
                }
            }
            cluster.traffic.shared_load_requests += 1;
            cluster.traffic.shared_load_wavefronts += count as u64;
        }
        Op::MmaTf32 { d, a, b, c } => {
            members(cluster, inst, w, mask, u32::MAX)?;
            if exec != w.present {
                return Err(cluster.fault(
                    FaultKind::Divergence,
                    format!("`{}` at {} needs all 32 lanes of the warp", inst.opcode, cluster.at(inst)),
                ));
            }
            if cluster.launch.sanitize
                && let (Ok(pa), Ok(pb)) = (regs_of(a), regs_of(b))
            {
                cluster.check_operands(inst, w.index, (&pa[..], &pb[..]), &w.regs)?;
            }
            // The fragments of A (16×8), B (8×8) and C (16×8) gathered from the lanes, as bits:
            // the tensor core reads TF32 from them itself (crate::tensor_arith).
            let mut am = [[0u32; 8]; 16];
            let mut bm = [[0u32; 8]; 8];
            let mut cm = [[0u32; 8]; 16];
            for l in 0..32 {
                let (g, t) = (l / 4, l % 4);
                am[g][t] = get(w, a[0], l) as u32;
                am[g + 8][t] = get(w, a[1], l) as u32;
                am[g][t + 4] = get(w, a[2], l) as u32;
                am[g + 8][t + 4] = get(w, a[3], l) as u32;
                bm[g][t] = get(w, b[0], l) as u32;
                bm[g][t + 4] = get(w, b[1], l) as u32;
                for (i, (r, col)) in
                    [(g, 2 * t), (g, 2 * t + 1), (g + 8, 2 * t), (g + 8, 2 * t + 1)].into_iter().enumerate()
                {
                    cm[r][col] = get(w, c[i], l) as u32;
                }
            }
            for l in 0..32 {
                let (g, t) = (l / 4, l % 4);
                for (i, (r, col)) in
                    [(g, 2 * t), (g, 2 * t + 1), (g + 8, 2 * t), (g + 8, 2 * t + 1)].into_iter().enumerate()
                {
                    // B's column `col`, k = 0..8, as the row of Bᵀ the product reads.
                    let d_bits = crate::tensor_arith::tf32_dot(&am[r], &bm[col], cm[r][col]);
                    w.regs[d[i] as usize][l] = u64::from(d_bits);
                }
            }
            cluster.traffic.flops += 2 * 16 * 8 * 8;
            cluster.traffic.mma_sync_flops += 2 * 16 * 8 * 8;
            cluster.computed();
        }
        Op::WarpSync { mask: member } => {
            // Lanes that went apart have met again here (the scheduler gathers them); a lane of
            // the mask that has left is the fault `members` names.
            let first = Lanes(exec).next().unwrap_or(0);
            members(cluster, inst, w, mask, get(w, *member, first) as u32)?;
        }
        Op::Redux { op, ty, d, a, mask: member } => {
            let first = Lanes(exec).next().unwrap_or(0);
            let member = get(w, *member, first) as u32;
            let lanes = members(cluster, inst, w, mask, member)? & exec;
            let value = Lanes(lanes)
                .map(|l| get(w, *a, l) & 0xffff_ffff)
                .reduce(|x, y| alu::int(*op, *ty, x, y) & 0xffff_ffff)
                .unwrap_or(0);
            for l in Lanes(exec) {
                w.regs[*d as usize][l] = value;
            }
        }
        _ => unreachable!("collective::exec only gets warp-wide instructions"),
    }
    Ok(())
}

/// The registers of an operand that are all registers (an immediate operand is not traced).
pub(super) fn regs_of<const N: usize>(operand: &[Src; N]) -> Result<[u32; N], ()> {
    let mut out = [0; N];
    for (o, s) in out.iter_mut().zip(operand) {
        match s {
            Src::Reg(r) => *o = *r,
            Src::Imm(_) => return Err(()),
        }
    }
    Ok(out)
}

//! The instructions a warp executes together: `shfl.sync`, `vote.sync`, `activemask`,
//! `ldmatrix` and the TF32 `mma.sync`. Each needs every lane it names at the same instruction;
//! a lane that is elsewhere is a fault, as it is undefined on a GPU.

use crate::decode::{Inst, Op, ShflMode, Src};
use crate::exec::{Cta, Lanes, Warp};
use crate::{Fault, FaultKind};

#[inline]
fn get(w: &Warp, s: Src, l: usize) -> u64 {
    match s {
        Src::Reg(x) => w.regs[x as usize][l],
        Src::Imm(v) => v,
    }
}

/// The lanes that must take part: the instruction's member mask (or the whole warp for the
/// `.aligned` forms), less lanes that do not exist.
fn members(cta: &Cta, inst: &Inst, w: &Warp, mask: u32, want: u32) -> Result<u32, Fault> {
    let want = want & w.present & !w.exited;
    if want & !mask != 0 {
        let missing = Lanes(want & !mask).next().expect("a missing lane");
        return Err(cta.fault(
            FaultKind::Divergence,
            format!(
                "`{}` at {} needs every lane of its mask together, but {} is elsewhere (the warp has branched apart)",
                inst.opcode,
                cta.at(inst),
                cta.who(w.index, missing)
            ),
        ));
    }
    Ok(want)
}

pub fn exec(cta: &mut Cta, inst: &Inst, pc: u32, w: &mut Warp, mask: u32, exec: u32) -> Result<(), Fault> {
    match &inst.op {
        Op::Shfl { mode, d, p, a, b, c, mask: member } => {
            let first = Lanes(exec).next().unwrap_or(0);
            let member = get(w, *member, first) as u32;
            members(cta, inst, w, mask, member)?;
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
                    return Err(cta.fault(
                        FaultKind::Divergence,
                        format!(
                            "`{}` at {}: {} reads lane {j}, which does not take part",
                            inst.opcode,
                            cta.at(inst),
                            cta.who(w.index, l)
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
            let lanes = members(cta, inst, w, mask, member)? & exec;
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
            members(cta, inst, w, mask, u32::MAX)?;
            let count = ds.len();
            // Lanes 8i to 8i+7 give the rows of matrix i.
            let mut rows = [0usize; 32];
            for (lane, row) in rows.iter_mut().enumerate().take(8 * count) {
                let base = get(w, addr.base, lane).wrapping_add(addr.offset as u64);
                let base = if inst.opcode.contains(".shared") {
                    base
                } else {
                    base.wrapping_sub(crate::memory::SHARED_WINDOW)
                };
                *row = cta.shared_offset(inst, w.index, lane, base, 16, false)?;
                if cta.launch.sanitize {
                    cta.check_shared(inst, pc, (w.index, lane), *row, 16, false)?;
                }
            }
            let shared = &cta.shared;
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
            cta.traffic.shared_load_requests += 1;
            cta.traffic.shared_load_wavefronts += count as u64;
        }
        Op::MmaTf32 { d, a, b, c } => {
            members(cta, inst, w, mask, u32::MAX)?;
            if exec != w.present {
                return Err(cta.fault(
                    FaultKind::Divergence,
                    format!("`{}` at {} needs all 32 lanes of the warp", inst.opcode, cta.at(inst)),
                ));
            }
            // TF32 keeps 10 bits of mantissa: the tensor core reads no lower bit.
            let tf32 = |v: u64| f64::from(f32::from_bits((v as u32) & 0xffff_e000));
            let mut am = [[0f64; 8]; 16];
            let mut bm = [[0f64; 8]; 8];
            let mut cm = [[0f64; 8]; 16];
            for l in 0..32 {
                let (g, t) = (l / 4, l % 4);
                am[g][t] = tf32(get(w, a[0], l));
                am[g + 8][t] = tf32(get(w, a[1], l));
                am[g][t + 4] = tf32(get(w, a[2], l));
                am[g + 8][t + 4] = tf32(get(w, a[3], l));
                bm[t][g] = tf32(get(w, b[0], l));
                bm[t + 4][g] = tf32(get(w, b[1], l));
                for (i, (r, col)) in
                    [(g, 2 * t), (g, 2 * t + 1), (g + 8, 2 * t), (g + 8, 2 * t + 1)].into_iter().enumerate()
                {
                    cm[r][col] = f64::from(f32::from_bits(get(w, c[i], l) as u32));
                }
            }
            for l in 0..32 {
                let (g, t) = (l / 4, l % 4);
                for (i, (r, col)) in
                    [(g, 2 * t), (g, 2 * t + 1), (g + 8, 2 * t), (g + 8, 2 * t + 1)].into_iter().enumerate()
                {
                    // Products of TF32 values are exact in f64; the sum is rounded once.
                    let sum: f64 = (0..8).map(|k| am[r][k] * bm[k][col]).sum::<f64>() + cm[r][col];
                    w.regs[d[i] as usize][l] = u64::from((sum as f32).to_bits());
                }
            }
            cta.traffic.flops += 2 * 16 * 8 * 8;
        }
        _ => unreachable!("collective::exec only gets warp-wide instructions"),
    }
    Ok(())
}

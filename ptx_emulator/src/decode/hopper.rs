//! Hopper's instructions decoded: mbarriers, the copy engine's bulk tensor copies, the
//! warpgroup's `wgmma` and the cluster's `mapa`. Each form the course's kernels write is taken
//! apart here; any other form is refused with what is missing.

use crate::inst::{Addr, Hopper, Op, Src, Wgmma, WgmmaKind};
use crate::parse::{Operand, Statement};

use super::Ctx;

pub(super) fn instruction(ctx: &Ctx, s: &Statement, name: &str, mods: &[&str]) -> Result<Op, String> {
    let ops = &s.operands;
    let op = match name {
        "mbarrier" => mbarrier(ctx, ops, mods)?,
        "cp" => bulk(ctx, ops, mods)?,
        "wgmma" => wgmma(ctx, ops, mods)?,
        "mapa" => {
            if !mods.contains(&"shared::cluster") || ops.len() != 3 {
                return Err("only mapa.shared::cluster d, address, rank is implemented".into());
            }
            Hopper::Mapa { d: ctx.dst(&ops[0])?, a: ctx.src(&ops[1])?, rank: ctx.src(&ops[2])? }
        }
        _ => return Err("the instruction is not implemented".into()),
    };
    Ok(Op::Hopper(op))
}

/// `[reg]` or `[reg+offset]`: a shared-memory address.
fn address(ctx: &Ctx, o: &Operand) -> Result<Addr, String> {
    Ok(ctx.addr(o)?.0)
}

fn mbarrier(ctx: &Ctx, ops: &[Operand], mods: &[&str]) -> Result<Hopper, String> {
    if !mods.iter().any(|m| m.starts_with("shared")) {
        return Err("only mbarriers in shared memory (.shared) are implemented".into());
    }
    let state = |o: &Operand| -> Result<Option<u32>, String> {
        match o {
            Operand::Symbol(sink) if sink == "_" => Ok(None),
            other => Ok(Some(ctx.dst(other)?)),
        }
    };
    Ok(match mods.first().copied() {
        Some("init") => {
            let [addr, count] = ops else { return Err("mbarrier.init takes an address and a count".into()) };
            Hopper::MbarInit { addr: address(ctx, addr)?, count: ctx.src(count)? }
        }
        Some("arrive") if mods.contains(&"expect_tx") => {
            let [d, addr, tx] = ops else {
                return Err("mbarrier.arrive.expect_tx takes a state, an address and a byte count".into());
            };
            Hopper::MbarArrive { addr: address(ctx, addr)?, tx: Some(ctx.src(tx)?), state: state(d)? }
        }
        Some("arrive") => {
            let [d, addr] = ops else {
                return Err("only mbarrier.arrive with a state and an address (one arrival) is implemented".into());
            };
            Hopper::MbarArrive { addr: address(ctx, addr)?, tx: None, state: state(d)? }
        }
        Some("expect_tx") => {
            let [addr, tx] = ops else { return Err("mbarrier.expect_tx takes an address and a byte count".into()) };
            Hopper::MbarExpectTx { addr: address(ctx, addr)?, tx: ctx.src(tx)? }
        }
        Some("try_wait") if mods.get(1) == Some(&"parity") => {
            let [d, addr, parity] = ops else {
                return Err("mbarrier.try_wait.parity takes a predicate, an address and a parity".into());
            };
            Hopper::MbarTryWait { d: ctx.dst(d)?, addr: address(ctx, addr)?, parity: ctx.src(parity)? }
        }
        _ => return Err("among the mbarrier instructions only init, arrive, expect_tx and try_wait.parity are implemented".into()),
    })
}

fn tensor(ctx: &Ctx, o: &Operand) -> Result<(Src, Vec<Src>), String> {
    match o {
        Operand::Tensor(map, coords) => {
            let map = ctx.src(map)?;
            let coords = coords.iter().map(|c| ctx.src(c)).collect::<Result<Vec<_>, _>>()?;
            Ok((map, coords))
        }
        other => Err(format!("expected a tensor map and its coordinates, found {other:?}")),
    }
}

fn bulk(ctx: &Ctx, ops: &[Operand], mods: &[&str]) -> Result<Hopper, String> {
    // mods: async, bulk, then the rest.
    let rest = &mods[2..];
    Ok(match rest {
        ["commit_group"] => Hopper::BulkCommit,
        ["wait_group", more @ ..] if more.is_empty() || more == ["read"] => match ops {
            [Operand::Int(n)] => Hopper::BulkWait { pending: *n as u32, read: !more.is_empty() },
            _ => return Err("cp.async.bulk.wait_group needs a constant".into()),
        },
        ["tensor", dim, "shared::cluster", "global", "tile", "mbarrier::complete_tx::bytes", tail @ ..]
            if matches!(*dim, "1d" | "2d" | "3d") =>
        {
            let multicast = match (tail, ops.len()) {
                ([], 3) => false,
                (["multicast::cluster"], 4) => true,
                _ => return Err("this form of the bulk tensor load is not implemented".into()),
            };
            let (map, coords) = tensor(ctx, &ops[1])?;
            Hopper::TmaLoad {
                dst: address(ctx, &ops[0])?,
                map,
                coords,
                bar: address(ctx, &ops[2])?,
                multicast: if multicast { Some(ctx.src(&ops[3])?) } else { None },
            }
        }
        ["tensor", dim, "global", "shared::cta", "bulk_group"] if matches!(*dim, "1d" | "2d" | "3d") => {
            let [t, src] = ops else {
                return Err("the bulk tensor store takes a tensor and an address".into());
            };
            let (map, coords) = tensor(ctx, t)?;
            Hopper::TmaStore { map, coords, src: address(ctx, src)? }
        }
        _ => return Err("this form of cp.async.bulk is not implemented".into()),
    })
}

fn wgmma(ctx: &Ctx, ops: &[Operand], mods: &[&str]) -> Result<Hopper, String> {
    match mods.first().copied() {
        Some("fence") => return Ok(Hopper::WgmmaFence),
        Some("commit_group") => return Ok(Hopper::WgmmaCommit),
        Some("wait_group") => {
            return match ops {
                [Operand::Int(n)] => Ok(Hopper::WgmmaWait { pending: *n as u32 }),
                _ => Err("wgmma.wait_group needs a constant".into()),
            };
        }
        Some("mma_async") => {}
        _ => return Err("this wgmma instruction is not implemented".into()),
    }
    // mma_async.sync.aligned.m64nNkK.dtype.atype.btype
    let [_, _, _, shape, dtype, atype, btype] = mods else {
        return Err("expected wgmma.mma_async.sync.aligned.m64nNkK.dtype.atype.btype".into());
    };
    let (n, k) = shape
        .strip_prefix("m64n")
        .and_then(|r| r.split_once('k'))
        .and_then(|(n, k)| Some((n.parse::<u32>().ok()?, k.parse::<u32>().ok()?)))
        .ok_or("the shape must be m64nNkK")?;
    let kind = match (*dtype, *atype, *btype) {
        ("f32", "tf32", "tf32") if k == 8 => WgmmaKind::Tf32,
        ("f32", "bf16", "bf16") if k == 16 => WgmmaKind::Bf16,
        ("s32", a @ ("s8" | "u8"), b @ ("s8" | "u8")) if k == 32 => {
            WgmmaKind::Int8 { a_signed: a == "s8", b_signed: b == "s8" }
        }
        _ => return Err("among the wgmma types only f32.tf32.tf32 (k8), f32.bf16.bf16 (k16) and s32 from 8-bit integers (k32) are implemented".into()),
    };
    if n % 8 != 0 || n == 0 || n > 256 {
        return Err(format!("a wgmma's N is a multiple of 8 up to 256, not {n}"));
    }
    let d = match &ops[0] {
        Operand::Vector(items) => items.iter().map(|i| ctx.dst(i)).collect::<Result<Vec<_>, _>>()?,
        _ => return Err("wgmma's accumulators come in braces".into()),
    };
    let per_thread = n / 2;
    if d.len() != per_thread as usize {
        return Err(format!(
            "a m64n{n} wgmma has {per_thread} accumulators a thread, the braces list {}",
            d.len()
        ));
    }
    let (a_regs, a_desc) = match &ops[1] {
        Operand::Vector(items) => {
            (Some(items.iter().map(|i| ctx.src(i)).collect::<Result<Vec<_>, _>>()?), None)
        }
        other => (None, Some(ctx.src(other)?)),
    };
    let b_desc = ctx.src(ops.get(2).ok_or("wgmma without B's descriptor")?)?;
    let scale_d = ctx.pred(ops.get(3).ok_or("wgmma without scale-d")?)?;
    // Scales of A and B (1 or -1: only 1 is implemented), then the transposes where the types
    // allow them.
    for o in ops.iter().skip(4).take(2) {
        if *o != Operand::Int(1) {
            return Err("only wgmma's immediate scales of 1 are implemented".into());
        }
    }
    let flag = |i: usize| -> Result<bool, String> {
        match ops.get(i) {
            None | Some(Operand::Int(0)) => Ok(false),
            Some(Operand::Int(1)) => Ok(true),
            Some(other) => Err(format!("a wgmma transpose is 0 or 1, found {other:?}")),
        }
    };
    let (trans_a, trans_b) = (flag(6)?, flag(7)?);
    if a_regs.is_some() && trans_a {
        return Err("A from registers cannot be transposed".into());
    }
    Ok(Hopper::Wgmma(Box::new(Wgmma { kind, n, k, d, a_regs, a_desc, b_desc, scale_d, trans_a, trans_b })))
}

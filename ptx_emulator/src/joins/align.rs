//! The alignment the compiler can prove: for each load, the largest power of two that divides
//! its base register's value on every path to it, whatever the kernel's inputs. ptxas joins
//! neighbouring 4-byte shared loads into one 8- or 16-byte load only when it can prove the first
//! address a multiple of the wider width (an `LDS.128` at an unaligned address faults), so the
//! emulator asks the same question of the PTX, before a thread runs, rather than looking at the
//! addresses one run happens to produce.
//!
//! What proves alignment: a constant (a shared array's address is one, laid out as the GPU lays
//! it out: see [`crate::decode`]); a sum, difference, minimum or selection of proven values (the
//! smaller of the two); a product (the two multiplied: `i * 16` is a multiple of 16 whatever `i`
//! is); a shift left by a constant; an `and` with a mask whose low bits are clear. What proves
//! nothing: a loaded value, a thread or block index, a kernel parameter, a quotient, a float.
//! A register assigned in a loop gets the alignment that holds on entry and after every trip:
//! the analysis runs over the control flow until nothing changes, taking the smaller of the
//! alignments that reach a join of paths.

use crate::inst::{Hopper, Inst, IntOp, MadPart, Op, R, Src, Ty, UnOp};

/// Alignments are kept as powers of two (`k` for 2^k), up to 2^CAP: a multiple of 2^CAP is as
/// good as zero for every width a load has, and shifts right by a few bits keep enough of it.
const CAP: u8 = 32;

/// For each instruction, the power of two (up to 16) its address base is proven a multiple of,
/// as the instruction begins: for a load or store with a register base, that register's
/// alignment; with a constant base, the constant's; 1 for any other instruction and for code no
/// path reaches. `targets` are the instructions that labels name, `regs` the register slots.
pub fn address_alignment(insts: &[Inst], targets: &[usize], regs: usize) -> Vec<u32> {
    let blocks = Blocks::of(insts, targets);
    // Each block's state on entry: None until some path reaches it. On entry to the kernel no
    // register is known (the special ones, %tid and the rest, never are).
    let mut entry: Vec<Option<Vec<u8>>> = vec![None; blocks.starts.len()];
    entry[0] = Some(vec![0; regs]);
    let mut work: Vec<usize> = vec![0];
    while let Some(b) = work.pop() {
        let mut state = entry[b].clone().expect("a block on the list has a state");
        let (from, to) = blocks.range(b, insts.len());
        for inst in &insts[from..to] {
            step(inst, &mut state);
        }
        for next in blocks.successors(b, insts) {
            let changed = match &mut entry[next] {
                None => {
                    entry[next] = Some(state.clone());
                    true
                }
                Some(old) => meet(old, &state),
            };
            if changed && !work.contains(&next) {
                work.push(next);
            }
        }
    }
    let mut out = vec![1u32; insts.len()];
    for (b, state) in entry.into_iter().enumerate() {
        let Some(mut state) = state else { continue };
        let (from, to) = blocks.range(b, insts.len());
        for (i, inst) in insts.iter().enumerate().take(to).skip(from) {
            if let Some(base) = address_base(&inst.op) {
                out[i] = 1 << value(base, &state).min(4);
            }
            step(inst, &mut state);
        }
    }
    out
}

/// The smaller alignment of each register where two paths join; whether `old` changed.
fn meet(old: &mut [u8], new: &[u8]) -> bool {
    let mut changed = false;
    for (o, n) in old.iter_mut().zip(new) {
        if n < o {
            *o = *n;
            changed = true;
        }
    }
    changed
}

/// The base of a load's or store's address.
fn address_base(op: &Op) -> Option<Src> {
    match op {
        Op::Ld { addr, .. } | Op::St { addr, .. } => Some(addr.base),
        _ => None,
    }
}

/// A source's alignment: a constant's trailing zero bits (zero is a multiple of everything), a
/// register's as proven so far.
fn value(s: Src, state: &[u8]) -> u8 {
    match s {
        Src::Imm(0) => CAP,
        Src::Imm(v) => (v.trailing_zeros() as u8).min(CAP),
        Src::Reg(r) => state[r as usize],
    }
}

/// One instruction's effect on the registers it writes.
fn step(inst: &Inst, state: &mut [u8]) {
    let (writes, k, unknown) = effect(&inst.op, &|s| value(s, state));
    let guarded = inst.guard.is_some();
    for &d in writes {
        set(state, d, k, guarded);
    }
    for &d in unknown {
        set(state, d, 0, guarded);
    }
}

/// The registers an instruction writes.
pub fn written(op: &Op) -> impl Iterator<Item = R> + '_ {
    let (writes, _, unknown) = effect(op, &|_| 0);
    writes.iter().chain(unknown).copied()
}

/// The registers an instruction writes with the alignment they get (from `v`, its sources'),
/// and those it writes with values that prove nothing (a second destination: a predicate, a
/// vector's upper parts). Every instruction that writes a register is named here, so that a new
/// one cannot keep a stale alignment unnoticed.
fn effect<'a>(op: &'a Op, v: &dyn Fn(Src) -> u8) -> (&'a [R], u8, &'a [R]) {
    let sum = |a: u8, b: u8| (a + b).min(CAP);
    let one = std::slice::from_ref;
    match op {
        Op::Mov { d, a, .. } => (one(d), v(*a), &[]),
        // The packed value's low part decides, as far as its own width goes.
        Op::Pack { d, parts, part_bits } => {
            (one(d), parts.first().map_or(0, |p| v(*p).min(*part_bits as u8)), &[])
        }
        // The low part keeps the whole value's low bits.
        Op::Unpack { ds, a, .. } => (&ds[..1], v(*a), &ds[1..]),
        Op::Int { op, d, a, b, .. } => {
            let k = match op {
                IntOp::Add | IntOp::Sub | IntOp::Min | IntOp::Max | IntOp::Or | IntOp::Xor => {
                    v(*a).min(v(*b))
                }
                // a - (a / b)·b: a multiple of whatever divides both.
                IntOp::Rem => v(*a).min(v(*b)),
                IntOp::MulLo => sum(v(*a), v(*b)),
                // The bits the mask clears are clear, and so are those already clear in a.
                IntOp::And => v(*a).max(v(*b)),
                IntOp::Shl => match b {
                    Src::Imm(n) => sum(v(*a), (*n).min(u64::from(CAP)) as u8),
                    Src::Reg(_) => v(*a),
                },
                IntOp::Shr => match b {
                    Src::Imm(n) => v(*a).saturating_sub((*n).min(u64::from(CAP)) as u8),
                    Src::Reg(_) => 0,
                },
                IntOp::MulHi | IntOp::Div => 0,
            };
            (one(d), k, &[])
        }
        Op::MulWide { d, a, b, .. } => (one(d), sum(v(*a), v(*b)), &[]),
        Op::Mad { part: MadPart::Lo | MadPart::Wide, d, a, b, c, .. } => {
            (one(d), sum(v(*a), v(*b)).min(v(*c)), &[])
        }
        Op::Mad { part: MadPart::Hi, d, .. } => (one(d), 0, &[]),
        Op::Unary { op: UnOp::Neg | UnOp::Abs, d, a, .. } => (one(d), v(*a), &[]),
        Op::Unary { d, .. } => (one(d), 0, &[]),
        Op::Selp { d, a, b, .. } => (one(d), v(*a).min(v(*b)), &[]),
        // Between integer widths the low bits stay; from or to a float nothing is known.
        Op::Cvt { d, a, to, from, .. } => {
            let ints = !to.float() && !from.float() && *to != Ty::Tf32 && *from != Ty::Tf32;
            (one(d), if ints { v(*a) } else { 0 }, &[])
        }
        // The windows of the state spaces start at addresses aligned far beyond 16 bytes.
        Op::Cvta { d, a, .. } => (one(d), v(*a), &[]),
        Op::Setp { d, d_not, .. } => (one(d), 0, d_not.as_slice()),
        Op::Shfl { d, p, .. } => (one(d), 0, p.as_slice()),
        Op::Bool { d, .. }
        | Op::Bfi { d, .. }
        | Op::Bfe { d, .. }
        | Op::Float { d, .. }
        | Op::Fma { d, .. }
        | Op::Prmt { d, .. }
        | Op::Redux { d, .. }
        | Op::Vote { d, .. }
        | Op::Activemask { d } => (one(d), 0, &[]),
        Op::Ld { ds, .. } | Op::Ldmatrix { ds, .. } => (&[], 0, &ds[..]),
        Op::MmaTf32 { d, .. } => (&[], 0, &d[..]),
        Op::Atom { d, .. } => (&[], 0, d.as_slice()),
        Op::Bar { red: Some((d, ..)), .. } => (&[], 0, one(d)),
        Op::Hopper(
            Hopper::MbarArrive { state: Some(d), .. }
            | Hopper::MbarTryWait { d, .. }
            | Hopper::Mapa { d, .. },
        ) => (&[], 0, one(d)),
        Op::Hopper(Hopper::Wgmma(w)) => (&[], 0, &w.d[..]),
        Op::Hopper(
            Hopper::MbarArrive { state: None, .. }
            | Hopper::MbarInit { .. }
            | Hopper::MbarExpectTx { .. }
            | Hopper::TmaLoad { .. }
            | Hopper::TmaStore { .. }
            | Hopper::BulkCommit
            | Hopper::BulkWait { .. }
            | Hopper::WgmmaFence
            | Hopper::WgmmaCommit
            | Hopper::WgmmaWait { .. }
            | Hopper::ClusterArrive
            | Hopper::ClusterWait,
        )
        | Op::Bar { red: None, .. }
        | Op::St { .. }
        | Op::CpAsync { .. }
        | Op::CpCommit
        | Op::CpWait { .. }
        | Op::Fence
        | Op::FenceProxyAsync
        | Op::WarpSync { .. }
        | Op::SetMaxNReg { .. }
        | Op::Bra { .. }
        | Op::Exit
        | Op::Trap => (&[], 0, &[]),
    }
}

/// Register `d` gets alignment `k`; under a guard it may keep its old value instead.
fn set(state: &mut [u8], d: R, k: u8, guarded: bool) {
    let old = &mut state[d as usize];
    *old = if guarded { (*old).min(k) } else { k };
}

/// The kernel cut into blocks of straight code: a block starts at the kernel's start, at every
/// label and after every branch or exit.
struct Blocks {
    starts: Vec<usize>,
}

impl Blocks {
    fn of(insts: &[Inst], targets: &[usize]) -> Blocks {
        let mut starts = vec![0];
        starts.extend(targets.iter().copied().filter(|&t| t < insts.len()));
        for (i, inst) in insts.iter().enumerate() {
            if matches!(inst.op, Op::Bra { .. } | Op::Exit | Op::Trap) && i + 1 < insts.len() {
                starts.push(i + 1);
            }
        }
        starts.sort_unstable();
        starts.dedup();
        Blocks { starts }
    }

    /// The instructions of block `b`.
    fn range(&self, b: usize, end: usize) -> (usize, usize) {
        (self.starts[b], self.starts.get(b + 1).copied().unwrap_or(end))
    }

    fn block_of(&self, i: usize) -> Option<usize> {
        self.starts.binary_search(&i).ok()
    }

    /// The blocks control may go to from the end of block `b`.
    fn successors(&self, b: usize, insts: &[Inst]) -> Vec<usize> {
        let (_, to) = self.range(b, insts.len());
        let Some(last) = to.checked_sub(1).map(|l| &insts[l]) else { return Vec::new() };
        let guarded = last.guard.is_some();
        let mut next = Vec::new();
        match last.op {
            Op::Bra { target } => next.extend(self.block_of(target)),
            Op::Exit | Op::Trap => {}
            _ => next.extend(self.block_of(to)),
        }
        if guarded && matches!(last.op, Op::Bra { .. } | Op::Exit | Op::Trap) {
            next.extend(self.block_of(to));
        }
        next
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inst::{Op, Space};

    /// The alignment proven at each shared load of a kernel with `body`, in order. The kernel
    /// has a shared array `s` of 1024 bytes, aligned to 16 and laid out at 0 (as the only one),
    /// and a parameter `p`.
    fn proven(body: &str) -> Vec<u32> {
        let ptx = format!(
            ".version 8.0
.target sm_90
.address_size 64
.shared .align 16 .b8 s[1024];
.visible .entry k(.param .u32 p)
{{
    .reg .pred %p<8>;
    .reg .b32 %r<32>;
    .reg .f32 %f<32>;
    .reg .b64 %rd<8>;
{body}
    ret;
}}
"
        );
        let module = crate::parse::parse(&ptx).unwrap();
        let (globals, _) = crate::decode::layout_globals(&module);
        let k = crate::decode::decode(&module, &module.functions[0], &globals).unwrap();
        let targets: Vec<usize> = k
            .insts
            .iter()
            .filter_map(|i| match i.op {
                Op::Bra { target } => Some(target),
                _ => None,
            })
            .collect();
        let all = address_alignment(&k.insts, &targets, k.regs);
        k.insts
            .iter()
            .zip(all)
            .filter(|(i, _)| matches!(i.op, Op::Ld { space: Space::Shared, .. }))
            .map(|(_, a)| a)
            .collect()
    }

    /// Constants, the shared array's address, sums, products and shifts by constants, masks.
    #[test]
    fn straight_code_proves_what_its_arithmetic_keeps() {
        let body = "
    mov.u32 %r1, s;
    ld.shared.f32 %f1, [%r1];
    mov.u32 %r2, %tid.x;
    shl.b32 %r3, %r2, 4;
    add.s32 %r4, %r1, %r3;
    ld.shared.f32 %f2, [%r4];
    mad.lo.s32 %r5, %r2, 24, %r1;
    ld.shared.f32 %f3, [%r5];
    mul.lo.s32 %r6, %r2, 12;
    add.s32 %r7, %r6, 512;
    ld.shared.f32 %f4, [%r7];
    and.b32 %r8, %r2, -16;
    ld.shared.f32 %f5, [%r8];
    mul.wide.u32 %rd1, %r2, 8;
    cvt.u32.u64 %r9, %rd1;
    ld.shared.f32 %f6, [%r9];
    shr.u32 %r10, %r3, 2;
    ld.shared.f32 %f7, [%r10];
    mul.lo.s32 %r11, %r2, %r2;
    ld.shared.f32 %f8, [%r11];";
        assert_eq!(proven(body), vec![16, 16, 8, 4, 16, 8, 4, 1]);
    }

    /// A pointer that steps by 32 through a loop stays as aligned as it started; one that steps
    /// by 20 is a multiple of 4 only, though its first trip is aligned to 16.
    #[test]
    fn a_loop_keeps_the_alignment_every_trip_keeps() {
        let body = "
    mov.u32 %r1, s;
    mov.u32 %r2, s;
    mov.u32 %r3, 0;
$L_loop:
    ld.shared.f32 %f1, [%r1];
    ld.shared.f32 %f2, [%r2];
    add.s32 %r1, %r1, 32;
    add.s32 %r2, %r2, 20;
    add.s32 %r3, %r3, 1;
    setp.lt.s32 %p1, %r3, 8;
    @%p1 bra $L_loop;
    ld.shared.f32 %f3, [%r1];
    ld.shared.f32 %f4, [%r2];";
        assert_eq!(proven(body), vec![16, 4, 16, 4]);
    }

    /// Where two paths meet, the less aligned wins; a guarded write may or may not happen.
    #[test]
    fn paths_that_meet_keep_the_lesser_alignment() {
        let body = "
    mov.u32 %r1, s;
    mov.u32 %r2, %tid.x;
    setp.eq.s32 %p1, %r2, 0;
    @%p1 bra $L_other;
    add.s32 %r1, %r1, 64;
    bra.uni $L_join;
$L_other:
    add.s32 %r1, %r1, 8;
$L_join:
    ld.shared.f32 %f1, [%r1];
    mov.u32 %r3, s;
    @%p1 add.s32 %r3, %r3, 4;
    ld.shared.f32 %f2, [%r3];";
        assert_eq!(proven(body), vec![8, 4]);
    }

    /// An address from a kernel parameter proves nothing, whatever it turns out to be; nor does
    /// the shared array's address plus the parameter times 4, beyond 4.
    #[test]
    fn a_parameter_proves_nothing() {
        let body = "
    ld.param.u32 %r1, [p];
    ld.shared.f32 %f1, [%r1];
    cvta.to.shared.u32 %r2, %r1;
    ld.shared.f32 %f2, [%r2];
    mov.u32 %r3, s;
    shl.b32 %r4, %r1, 2;
    add.s32 %r5, %r3, %r4;
    ld.shared.f32 %f3, [%r5];
    ld.shared.u32 %r6, [%r5+4];
    ld.shared.f32 %f4, [%r6];";
        assert_eq!(proven(body), vec![1, 1, 4, 4, 1]);
    }
}

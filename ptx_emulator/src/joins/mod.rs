//! Which shared loads the compiler's back end (ptxas) joins into one wider load: the machine
//! code then makes one request where the PTX makes several, and the traffic counters count what
//! the machine code does. ptxas decides when it compiles, from what it can prove of the
//! addresses ([`align`]), so the emulator decides when it decodes, from the same proof, and never
//! from the addresses of one run.

use std::collections::HashMap;

use crate::inst::{Addr, Inst, Merge, Op, R, Space, Src};

pub mod align;

/// Marks the groups of shared loads that ptxas joins into one 16-byte (or 8-byte) load, as its
/// machine code for sm_90 shows it doing (`nvdisasm` on NVRTC's cubin; each case is a test
/// below). Within a straight run of instructions (no label, branch, barrier or shared store
/// between), ptxas takes the unguarded loads from one value of one base register and joins
/// those it can prove aligned ([`align::address_alignment`], [`groups_of`]). The machine code
/// then makes one request where the PTX makes several. A group whose alignment only a run could
/// show stays as it is, as in the machine code: ptxas cannot know the run. `targets` are the
/// instructions labels name, `regs` the register slots. Returns the number of groups.
pub fn merge_shared_loads(insts: &mut [Inst], targets: &[usize], regs: usize) -> usize {
    let proven = align::address_alignment(insts, targets, regs);
    let mut groups = 0u32;
    let mut start = 0;
    while start < insts.len() {
        let mut end = start + 1;
        while end < insts.len() && !targets.contains(&end) && !ends_run(&insts[end - 1].op) {
            end += 1;
        }
        // The run's unguarded shared loads by base, in program order: (register, its value's
        // number in the run) → loads. A register written between two loads names two
        // addresses; a guarded load may not run, and a volatile one ptxas leaves as written.
        let mut bases: HashMap<(R, u32), Vec<Load>> = HashMap::new();
        let mut value: HashMap<R, u32> = HashMap::new();
        for (i, inst) in insts.iter().enumerate().take(end).skip(start) {
            if let Op::Ld {
                space: Space::Shared,
                bytes,
                ds,
                addr: Addr { base: Src::Reg(r), offset },
                volatile: false,
                ..
            } = &inst.op
            {
                if inst.guard.is_none() {
                    let n = value.get(r).copied().unwrap_or(0);
                    let bytes = i64::from(*bytes) * ds.len() as i64;
                    bases.entry((*r, n)).or_default().push(Load { offset: *offset, bytes, inst: i });
                }
            }
            for d in align::written(&inst.op) {
                *value.entry(d).or_insert(0) += 1;
            }
        }
        let mut keys: Vec<(R, u32)> = bases.keys().copied().collect();
        keys.sort_unstable();
        for key in keys {
            let loads = &bases[&key];
            for (at, width, members) in groups_of(loads, i64::from(proven[loads[0].inst])) {
                let leader = members.iter().map(|&m| loads[m].inst).min().expect("a member");
                for &m in &members {
                    let Load { offset, inst, .. } = loads[m];
                    insts[inst].merge = if inst == leader {
                        Merge::Leader { group: groups, bytes: width as u32, from: (offset - at) as u32 }
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

/// One shared load of a run: its offset from the base register, its bytes, its instruction.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Load {
    pub offset: i64,
    pub bytes: i64,
    pub inst: usize,
}

/// The groups ptxas makes of one base's loads in a run (in program order), the base proven a
/// multiple of `base`: each as the offset it starts at, its width, and its members (indices
/// into `loads`). The rules, as the machine code shows them:
///
/// - What is known of the base is what the analysis proves, raised by any 8- or 16-byte access
///   from it, which PTX requires to be aligned to its size.
/// - ptxas reckons the loads' alignment from one of them, the *anchor*: the best-aligned load
///   at or below the run's first load that a gap-free stretch of loads joins to it. A first
///   load at a misaligned address with nothing below it spoils the rest: `[r+4]` then
///   `[r+16..r+28]` stays five loads, `[r+16..r+28]` then `[r+4]` becomes two.
/// - Loads that fill at least 12 of the 16 bytes from a 16-aligned address become one 16-byte
///   load (it reads the word no load asked for with the others); then two 4-byte loads of the
///   8 bytes from an 8-aligned address become one 8-byte load.
/// - A load of bytes another load reads too is dropped, whatever its alignment, before any of
///   this.
pub fn groups_of(loads: &[Load], base: i64) -> Vec<(i64, i64, Vec<usize>)> {
    let Some(head) = loads.first() else { return Vec::new() };
    let mut base = base.clamp(1, 16);
    for l in loads {
        if l.bytes >= 8 && l.offset.rem_euclid(l.bytes) == 0 {
            base = base.max(l.bytes.min(16));
        }
    }
    let aligned =
        |offset: i64| if offset == 0 { base } else { base.min(1 << offset.trailing_zeros().min(4)) };
    // The stretch of touching loads that holds the first, and its best-aligned load at or
    // below the first (the lowest of equals).
    let mut by_offset: Vec<&Load> = loads.iter().collect();
    by_offset.sort_by_key(|l| l.offset);
    let (mut low, mut high) = (head.offset, head.offset + head.bytes);
    loop {
        let grown = by_offset.iter().fold((low, high), |(lo, hi), l| {
            if l.offset <= hi && l.offset + l.bytes >= lo {
                (lo.min(l.offset), hi.max(l.offset + l.bytes))
            } else {
                (lo, hi)
            }
        });
        if grown == (low, high) {
            break;
        }
        (low, high) = grown;
    }
    let anchor = by_offset
        .iter()
        .filter(|l| l.offset >= low && l.offset <= head.offset)
        .map(|l| l.offset)
        .fold(head.offset, |best, o| match aligned(o).cmp(&aligned(best)) {
            std::cmp::Ordering::Greater => o,
            std::cmp::Ordering::Equal => best.min(o),
            std::cmp::Ordering::Less => best,
        });
    let known = aligned(anchor);
    // A load whose bytes another load of the run reads too is no load of its own: ptxas keeps
    // the one that reads them all (a repeated address, a pair inside a 16-byte load). Each load
    // is kept by the widest load that holds it (the first of equals), or by none.
    let holds = |k: usize, j: usize| {
        let (a, b, lo, hi) = (
            loads[k].offset,
            loads[k].offset + loads[k].bytes,
            loads[j].offset,
            loads[j].offset + loads[j].bytes,
        );
        k != j && a <= lo && hi <= b && (b - a > hi - lo || k < j)
    };
    let kept_by: Vec<Option<usize>> = (0..loads.len())
        .map(|j| {
            (0..loads.len()).filter(|&k| holds(k, j)).max_by_key(|&k| (loads[k].bytes, std::cmp::Reverse(k)))
        })
        .collect();
    // The loads ptxas may join: the 4- and 8-byte ones that no other holds.
    let mut joinable: Vec<usize> =
        (0..loads.len()).filter(|&j| matches!(loads[j].bytes, 4 | 8) && kept_by[j].is_none()).collect();
    joinable.sort_by_key(|&j| loads[j].offset);
    let mut group_of: Vec<Option<usize>> = vec![None; loads.len()];
    let mut groups: Vec<(i64, i64, Vec<usize>)> = Vec::new();
    for (width, least) in [(16i64, 12i64), (8, 8)] {
        if known < width {
            continue;
        }
        let mut windows: Vec<i64> =
            joinable.iter().map(|&j| anchor + (loads[j].offset - anchor).div_euclid(width) * width).collect();
        windows.dedup();
        for w in windows {
            let inside: Vec<usize> = joinable
                .iter()
                .copied()
                .filter(|&j| {
                    group_of[j].is_none()
                        && loads[j].offset >= w
                        && loads[j].offset + loads[j].bytes <= w + width
                })
                .collect();
            let filled: i64 = inside.iter().map(|&j| loads[j].bytes).sum();
            if inside.len() < 2 || filled < least {
                continue;
            }
            for &j in &inside {
                group_of[j] = Some(groups.len());
            }
            groups.push((w, width, inside));
        }
    }
    // The loads held by another go with it: into its group, or into one of their own.
    for j in 0..loads.len() {
        let Some(k) = kept_by[j] else { continue };
        let g = match group_of[k] {
            Some(g) => g,
            None => {
                groups.push((loads[k].offset, loads[k].bytes, vec![k]));
                group_of[k] = Some(groups.len() - 1);
                groups.len() - 1
            }
        };
        groups[g].2.push(j);
        group_of[j] = Some(g);
    }
    groups
}

/// Whether an instruction ends a straight run: control flow, a barrier (a warp's too: what the
/// lanes wrote before it must be seen after it), or a write that may be to shared memory (which
/// a load after it must see). A store to global or local memory does not: ptxas knows it
/// touches no shared byte, and joins loads on either side of it.
fn ends_run(op: &Op) -> bool {
    match op {
        Op::St { space, .. } | Op::Atom { space, .. } => !matches!(space, Space::Global | Space::Local),
        _ => matches!(
            op,
            Op::Bra { .. }
                | Op::Exit
                | Op::Trap
                | Op::Bar { .. }
                | Op::WarpSync { .. }
                | Op::Hopper(_)
                | Op::Fence
                | Op::CpWait { .. }
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The groups of loads given as `offset:bytes` in program order (`offset` alone: 4 bytes)
    /// from a base proven a multiple of `base`, as `start:width` by start.
    fn joined(spec: &str, base: i64) -> String {
        let loads: Vec<Load> = spec
            .split_whitespace()
            .enumerate()
            .map(|(inst, l)| {
                let (offset, bytes) = l.split_once(':').unwrap_or((l, "4"));
                Load { offset: offset.parse().unwrap(), bytes: bytes.parse().unwrap(), inst }
            })
            .collect();
        let mut groups = groups_of(&loads, base);
        groups.sort_by_key(|g| g.0);
        groups.iter().map(|(at, width, _)| format!("{at}:{width}")).collect::<Vec<_>>().join(" ")
    }

    /// Every case ptxas 13.0 was seen to compile for sm_90 (loads from one register, in this
    /// order, from a 64-byte-aligned shared address unless the row says otherwise): the groups
    /// its machine code makes, as `nvdisasm` showed them (`LDS.128 [r+16]` is `16:16`).
    #[test]
    fn loads_join_as_ptxas_joins_them() {
        let cases: &[(&str, i64, &str)] = &[
            // A pair, and only an aligned pair.
            ("0 4", 64, "0:8"),
            ("0 8", 64, ""),
            ("0 12", 64, ""),
            ("4 8", 64, ""),
            ("8 12", 64, "8:8"),
            // Three words of an aligned 16 are read as 16, the fourth with them.
            ("0 4 8", 64, "0:16"),
            ("0 4 12", 64, "0:16"),
            ("0 8 12", 64, "0:16"),
            ("0 4 8 12", 64, "0:16"),
            ("0 4 8 12 16", 64, "0:16"),
            ("0 4 8 12 16 20", 64, "0:16 16:8"),
            ("0 4 16 20", 64, "0:8 16:8"),
            ("0 4 20 24", 64, "0:8"),
            ("0 4 24 28", 64, "0:8 24:8"),
            ("0 4 12 16 20", 64, "0:16 16:8"),
            ("0 4 12 24 28", 64, "0:16 24:8"),
            ("0 8 16 20 24", 64, "16:16"),
            ("0 20 24 28", 64, "16:16"),
            ("0 4 36 40 44", 64, "0:8 32:16"),
            ("0 4 8 12 20 24 28", 64, "0:16 16:16"),
            ("0 4 8 12 48 52 56 60", 64, "0:16 48:16"),
            // Vectors join with words and with each other.
            ("0:8 8:8", 64, "0:16"),
            ("0:8 12", 64, "0:16"),
            ("0 8:8", 64, "0:16"),
            ("0 4 8:8 16:16", 64, "0:16"),
            ("0:16 20 24 28", 64, "16:16"),
            ("8:8 16 20", 64, "16:8"),
            // The first load decides: misaligned with nothing below it, it spoils the rest.
            ("4 8 12", 64, ""),
            ("4 8 12 16", 64, ""),
            ("12 16 20 24", 64, ""),
            ("4 16 20 24 28", 64, ""),
            ("4 256 260 264 268", 64, ""),
            ("16 20 24 28 4", 64, "16:16"),
            ("16 20 24 12", 64, "16:16"),
            ("4 8 12 0", 64, "0:16"),
            ("8 12 0 4", 64, "0:16"),
            ("4 0", 64, "0:8"),
            ("16 20 24 28 0 4", 64, "0:8 16:16"),
            // An 8-aligned first load: 8-byte loads only.
            ("8 12 16", 64, "8:8"),
            ("8 12 16 20", 64, "8:8 16:8"),
            ("8 12 16 20 24 28 32", 64, "8:8 16:8 24:8"),
            ("8 12 64 68 72 76", 64, "8:8 64:8 72:8"),
            // A base proven a multiple of 4, 8 or 16 only, and what a vector access proves.
            ("0 4 8 12", 4, ""),
            ("0 4 8 12", 8, "0:8 8:8"),
            ("0 4 8 12", 16, "0:16"),
            ("0:8 8 12", 4, "8:8"),
            ("8 12 0:8", 4, "8:8"),
            ("0:16 16 20", 4, "16:8"),
            ("16 20 0:16", 8, "16:8"),
            // Bytes read twice are read once.
            ("0 0", 64, "0:4"),
            ("0:16 8:8", 64, "0:16"),
            ("8:8 0:16", 64, "0:16"),
            ("0:16 4", 64, "0:16"),
            ("4 0:16", 64, "0:16"),
            ("0 4 4", 64, "0:8"),
            ("0:16 0 4", 64, "0:16"),
            ("0 4 0:8", 64, "0:8"),
            ("0:8 0 8 12", 64, "0:16"),
        ];
        for (spec, base, want) in cases {
            assert_eq!(joined(spec, *base), *want, "loads {spec} from a multiple of {base}");
        }
    }

    /// The widths of the loads a thread makes of four neighbouring floats of a shared array `b`
    /// that follows an array `a` of `before` bytes, both declared aligned to 4 only.
    fn widths_after(before: usize) -> Vec<u32> {
        let ptx = format!(
            ".version 8.0
.target sm_90
.address_size 64
.shared .align 4 .b8 a[{before}];
.shared .align 4 .b8 b[256];
.visible .entry k()
{{
    .reg .b32 %r<8>;
    .reg .f32 %f<8>;
    mov.u32 %r1, %tid.x;
    and.b32 %r2, %r1, 15;
    shl.b32 %r3, %r2, 4;
    mov.u32 %r4, b;
    add.s32 %r5, %r4, %r3;
    ld.shared.f32 %f1, [%r5];
    ld.shared.f32 %f2, [%r5+4];
    ld.shared.f32 %f3, [%r5+8];
    ld.shared.f32 %f4, [%r5+12];
    ret;
}}
"
        );
        let module = crate::parse::parse(&ptx).unwrap();
        let (globals, _) = crate::decode::layout_globals(&module);
        let k = crate::decode::decode(&module, &module.functions[0], &globals).unwrap();
        k.insts
            .iter()
            .filter_map(|i| match i.merge {
                Merge::None if matches!(i.op, Op::Ld { .. }) => Some(4),
                Merge::Leader { bytes, .. } => Some(bytes),
                _ => None,
            })
            .collect()
    }

    /// What decides is where the array lies, not the alignment it declares: ptxas lays the
    /// arrays out, knows where, and joins `b`'s floats as its place allows (its listing for
    /// sm_90: `LDS.64` twice after 8 bytes, `LDS.128` after 16, four `LDS` after 20). The
    /// emulator lays them out as the GPU does (see [`crate::decode`]).
    #[test]
    fn an_arrays_place_decides_not_its_declared_alignment() {
        assert_eq!(widths_after(8), vec![8, 8]);
        assert_eq!(widths_after(16), vec![16]);
        assert_eq!(widths_after(20), vec![4, 4, 4, 4]);
    }

    /// One warp reads four neighbouring floats of a shared row, as lab 03's inner loop reads
    /// its row of A, from `row` floats into the array: a number the kernel computes
    /// (`tid.x & ~3`, a multiple of 4) or one it is given (the parameter, here 0). The shared
    /// loads it makes, as the machine code makes them.
    fn loads_of_row(row: &str) -> u64 {
        let ptx = format!(
            ".version 8.0
.target sm_90
.address_size 64
.shared .align 16 .b8 s[1024];
.visible .entry k(.param .u32 p, .param .u64 out)
{{
    .reg .b32 %r<16>;
    .reg .f32 %f<8>;
    .reg .b64 %rd<4>;
    ld.param.u32 %r1, [p];
    mov.u32 %r2, %tid.x;
    {row}
    mov.u32 %r4, s;
    shl.b32 %r5, %r3, 2;
    add.s32 %r6, %r4, %r5;
    ld.shared.f32 %f1, [%r6];
    ld.shared.f32 %f2, [%r6+4];
    ld.shared.f32 %f3, [%r6+8];
    ld.shared.f32 %f4, [%r6+12];
    add.f32 %f5, %f1, %f2;
    add.f32 %f6, %f3, %f4;
    add.f32 %f7, %f5, %f6;
    ld.param.u64 %rd1, [out];
    mul.wide.u32 %rd2, %r2, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.f32 [%rd3], %f7;
    ret;
}}
"
        );
        let mut m =
            crate::Emulator::new(&ptx, crate::Machine { sms: 132, max_threads: 1024, max_shared: 232_448 })
                .unwrap();
        let out = m.alloc(4 * 32, "out");
        let config = crate::Config { grid: (1, 1, 1), block: (32, 1, 1), dynamic_shared: 0, sanitize: true };
        let t = m.launch("k", config, &[crate::Arg::I32(0), crate::Arg::Ptr(out)]).unwrap();
        t.shared_load_requests
    }

    /// The run's addresses are aligned both times; only the first is proven so, and only it is
    /// joined, as ptxas joins it.
    #[test]
    fn a_run_time_alignment_joins_nothing() {
        assert_eq!(loads_of_row("and.b32 %r3, %r2, -4;"), 1, "a row the kernel proves a multiple of 4");
        assert_eq!(loads_of_row("mov.u32 %r3, %r1;"), 4, "a row the kernel is given");
    }
}

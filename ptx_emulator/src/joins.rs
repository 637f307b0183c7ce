//! Which 4-byte shared loads the compiler's back end (ptxas) joins into one wider load: the
//! machine code then makes one request where the PTX makes several, and the traffic counters
//! count what the machine code does.

use std::collections::HashMap;

use crate::inst::{Addr, Inst, Merge, Op, R, Space, Src};

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
            | Op::Bar { .. }
            | Op::Hopper(_)
            | Op::Fence
            | Op::St { .. }
            | Op::Atom { .. }
            | Op::CpWait { .. }
    )
}

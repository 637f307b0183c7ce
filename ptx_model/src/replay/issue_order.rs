//! The order the machine code issues a warp's instructions in, from the order of the PTX.
//!
//! ptxas schedules each straight run of code by its critical path: a load goes as early as the
//! instructions that compute its address allow, ahead of the arithmetic that does not need it,
//! so that its latency passes while that arithmetic issues (an unrolled loop's loads all go
//! first). A load moved up keeps its registers busy for longer, so ptxas moves loads only where
//! the launch bounds leave registers free: a kernel that uses nearly all of its registers keeps
//! its loads where the source put them. The replay issues in the order this gives, within each
//! run of instructions executed one after the other (a branch not taken, which ptxas turns into
//! predicates, continues it; one taken ends it, as a barrier, a fence or an asynchronous
//! operation does). Within a run a load stays after a store to the same memory, and a store after the
//! loads and the store before it; a global load may pass a shared store, as the machine code's
//! may.

use std::collections::BinaryHeap;

use ptx_emulator::recording::trace::{InstClass, R, Static, TraceEvent, Where};

/// The longest run scheduled as one (a longer one is cut).
pub const LONGEST_RUN: usize = 1024;

/// The registers a kernel must have free for ptxas to move its loads up: one 16-byte load's.
pub const FREE_TO_MOVE: u32 = 4;

/// Whether an instruction of `class` may move within a run; the others end it.
fn movable(class: InstClass) -> bool {
    matches!(
        class,
        InstClass::Fp32
            | InstClass::Alu
            | InstClass::Slow
            | InstClass::Param
            | InstClass::GlobalLoad
            | InstClass::SharedLoad
            | InstClass::LocalLoad
            | InstClass::Ldmatrix
            | InstClass::Exchange
            | InstClass::MmaSync
            | InstClass::SharedStore
            | InstClass::GlobalStore
            | InstClass::LocalStore
            | InstClass::Branch
    )
}

/// The memory an access of a run reads or writes (shared, global, local), and whether it writes.
fn memory(e: &TraceEvent, class: InstClass) -> Option<(usize, bool)> {
    let space = match e.space {
        Where::Shared => 0,
        Where::Global => 1,
        Where::Local => 2,
        Where::Off => return None,
        Where::None => match class {
            InstClass::Ldmatrix => 0,
            _ => return None,
        },
    };
    let write = matches!(class, InstClass::SharedStore | InstClass::GlobalStore | InstClass::LocalStore);
    Some((space, write))
}

/// The cycles the scheduler plans an instruction's result for (its guess, not the replay's).
fn planned(class: InstClass) -> u32 {
    match class {
        InstClass::GlobalLoad | InstClass::LocalLoad => 200,
        InstClass::SharedLoad
        | InstClass::Ldmatrix
        | InstClass::Exchange
        | InstClass::MmaSync
        | InstClass::Slow => 24,
        _ => 4,
    }
}

/// `stream` in the order ptxas would issue it, where the kernel has `free` registers.
pub fn schedule(stream: &[TraceEvent], statics: &[Static], free: u32) -> Vec<TraceEvent> {
    if free < FREE_TO_MOVE {
        return stream.to_vec();
    }
    let mut out = Vec::with_capacity(stream.len());
    let mut start = 0;
    while start < stream.len() {
        // A run: consecutive instructions that may move, none a joined load's group.
        let mut end = start;
        while end < stream.len()
            && end - start < LONGEST_RUN
            && movable(statics[stream[end].pc as usize].class)
            && (end == start || stream[end].pc == stream[end - 1].pc + 1)
            && !stream.get(end + 1).is_some_and(|n| statics[n.pc as usize].class == InstClass::Joined)
        {
            end += 1;
        }
        if end == start {
            out.push(stream[start]);
            start += 1;
            continue;
        }
        run(&stream[start..end], statics, &mut out);
        start = end;
    }
    out
}

/// One run by its critical path: each instruction's height is its planned latency and the
/// tallest of what depends on it; the tallest ready instruction issues first, the earlier in the
/// source among equals.
fn run(events: &[TraceEvent], statics: &[Static], out: &mut Vec<TraceEvent>) {
    let n = events.len();
    let mut succs: Vec<Vec<u32>> = vec![Vec::new(); n];
    let mut preds = vec![0u32; n];
    let mut writer: std::collections::HashMap<R, usize> = Default::default();
    let mut readers: std::collections::HashMap<R, Vec<usize>> = Default::default();
    let edge = |from: usize, to: usize, succs: &mut Vec<Vec<u32>>, preds: &mut Vec<u32>| {
        if from != to && !succs[from].contains(&(to as u32)) {
            succs[from].push(to as u32);
            preds[to] += 1;
        }
    };
    // Each memory's last store, and its loads since: a load stays after the store before it,
    // a store after the loads and the store before it (ptxas cannot tell their addresses apart).
    let mut stored: [Option<usize>; 3] = [None; 3];
    let mut loaded: [Vec<usize>; 3] = Default::default();
    for (i, e) in events.iter().enumerate() {
        let st = &statics[e.pc as usize];
        if let Some((space, write)) = memory(e, st.class) {
            if let Some(s) = stored[space] {
                edge(s, i, &mut succs, &mut preds);
            }
            if write {
                for l in std::mem::take(&mut loaded[space]) {
                    edge(l, i, &mut succs, &mut preds);
                }
                stored[space] = Some(i);
            } else {
                loaded[space].push(i);
            }
        }
        for r in &st.reads {
            if let Some(&w) = writer.get(r) {
                edge(w, i, &mut succs, &mut preds);
            }
        }
        for r in &st.writes {
            if let Some(&w) = writer.get(r) {
                edge(w, i, &mut succs, &mut preds);
            }
            for &rd in readers.get(r).map(Vec::as_slice).unwrap_or(&[]) {
                edge(rd, i, &mut succs, &mut preds);
            }
        }
        for r in &st.reads {
            readers.entry(*r).or_default().push(i);
        }
        for r in &st.writes {
            writer.insert(*r, i);
            readers.remove(r);
        }
    }
    let mut height = vec![0u32; n];
    for i in (0..n).rev() {
        let own = planned(statics[events[i].pc as usize].class);
        height[i] = own + succs[i].iter().map(|&s| height[s as usize]).max().unwrap_or(0);
    }
    let mut ready: BinaryHeap<(u32, std::cmp::Reverse<usize>)> =
        (0..n).filter(|&i| preds[i] == 0).map(|i| (height[i], std::cmp::Reverse(i))).collect();
    while let Some((_, std::cmp::Reverse(i))) = ready.pop() {
        out.push(events[i]);
        for &s in &succs[i] {
            preds[s as usize] -= 1;
            if preds[s as usize] == 0 {
                ready.push((height[s as usize], std::cmp::Reverse(s as usize)));
            }
        }
    }
}

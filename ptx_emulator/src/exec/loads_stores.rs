//! Loads, stores, atomics and `cp.async` for the lanes of a warp: each lane's address checked
//! (bounds, alignment, and races with the sanitizer on), the bytes moved, and the traffic
//! counted as Nsight Compute counts it.

use std::sync::atomic::Ordering;

use crate::alu;
use crate::inst::{Addr, AtomOp, Inst, Merge, Op, Space, Src, Ty};
use crate::memory::{LOCAL_WINDOW, PARAM_WINDOW, SHARED_WINDOW, load_bytes, store_bytes};
use crate::traffic;
use crate::{Fault, FaultKind};

use super::picture::AccessKind;
use super::state::{Cluster, Lanes, PendingCopy, Warp};

impl Cluster<'_> {
    /// Loads, stores, atomics and asynchronous copies for the lanes in `exec`.
    pub(super) fn memory(&mut self, inst: &Inst, pc: u32, w: &mut Warp, exec: u32) -> Result<(), Fault> {
        let addr_of = |w: &Warp, a: &Addr, l: usize| -> u64 {
            let base = match a.base {
                Src::Reg(x) => w.regs[x as usize][l],
                Src::Imm(v) => v,
            };
            base.wrapping_add(a.offset as u64)
        };
        match &inst.op {
            Op::Ld { space, bytes, ds, addr, volatile, signed } => {
                let len = *bytes as usize;
                let total = len * ds.len();
                let space = self.resolve(*space, w, addr, exec, &addr_of);
                if self.launch.watch.is_some()
                    && matches!(space, Space::Global | Space::Generic | Space::Shared)
                {
                    let seen = AccessKind::Plain { space, bytes: total as u32, write: false };
                    self.watched(inst, pc, w, exec, addr, seen);
                }
                match space {
                    Space::Param => {
                        for l in Lanes(exec) {
                            let a = addr_of(w, addr, l);
                            let at = a.checked_sub(PARAM_WINDOW).unwrap_or(a) as usize;
                            if at + total > self.launch.params.len() {
                                return Err(self.fault(
                                    FaultKind::OutOfBounds,
                                    format!(
                                        "a parameter read past the kernel's parameters at {}",
                                        self.at(inst)
                                    ),
                                ));
                            }
                            for (i, d) in ds.iter().enumerate() {
                                w.regs[*d as usize][l] = load_bytes(&self.launch.params, at + i * len, len);
                            }
                        }
                    }
                    Space::Global | Space::Generic => {
                        self.scratch.clear();
                        for l in Lanes(exec) {
                            let a = addr_of(w, addr, l);
                            self.global_place(inst, w.index, l, a, total, false)?;
                            self.scratch.push(a);
                            for (i, d) in ds.iter().enumerate() {
                                let at =
                                    self.global.place(a + (i * len) as u64, len).expect("inside the access");
                                w.regs[*d as usize][l] = self.global.load(at, len);
                            }
                        }
                        self.seen_loaded(inst, pc, (w.index, exec), total)?;
                        self.traffic.global_load_requests += 1;
                        self.traffic.global_load_sectors += traffic::sectors(&mut self.scratch, total as u64);
                        self.traffic.global_lines += traffic::lines(&self.scratch).max(1);
                        if self.footprint.is_some() {
                            let sectors = std::mem::take(&mut self.scratch);
                            self.footprint_read(sectors.iter().copied());
                            self.scratch = sectors;
                        }
                        self.ctas[self.rank].loaded = true;
                        // `sectors` turned the addresses into sector indices and sorted them:
                        // count those new to the block, each sector once (a duplicate, which
                        // the set would skip, stands beside its first).
                        let per = (total as u64).div_ceil(32).max(1);
                        let mut last = None;
                        for &s in &self.scratch {
                            if last == Some(s) {
                                continue;
                            }
                            last = Some(s);
                            // The block's rank in its cluster (0–15) in the low bits.
                            if self.l1_seen.insert(s << 4 | self.rank as u64) {
                                self.traffic.l1_miss_sectors += per;
                            }
                        }
                        if *volatile {
                            self.spin(inst, pc, w, exec)?;
                        }
                    }
                    Space::Shared => {
                        self.pairs.clear();
                        for l in Lanes(exec) {
                            let at =
                                self.shared_lane(inst, pc, (w.index, l), addr_of(w, addr, l), total, false)?;
                            for (i, d) in ds.iter().enumerate() {
                                w.regs[*d as usize][l] = load_bytes(self.shared(), at + i * len, len);
                                if self.launch.sanitize && len == 4 {
                                    let bits = w.regs[*d as usize][l] as u32;
                                    self.tag_loaded(pc, *d, l, at + i * len, bits);
                                }
                            }
                        }
                        self.count_shared_load(inst, total as u32);
                    }
                    Space::Local => {
                        for l in Lanes(exec) {
                            let at = self.local_offset(inst, w.index, l, addr_of(w, addr, l), total)?;
                            for (i, d) in ds.iter().enumerate() {
                                w.regs[*d as usize][l] = load_bytes(&self.local, at + i * len, len);
                            }
                        }
                    }
                }
                if *signed {
                    // A signed byte or half-word is sign-extended into its 32-bit register.
                    for l in Lanes(exec) {
                        for d in ds {
                            let v = w.regs[*d as usize][l];
                            w.regs[*d as usize][l] = u64::from(alu::sext(v, 8 * len as u32) as u32);
                        }
                    }
                }
            }
            Op::St { space, bytes, srcs, addr } => {
                let len = *bytes as usize;
                let total = len * srcs.len();
                let value = |w: &Warp, s: Src, l: usize| match s {
                    Src::Reg(x) => w.regs[x as usize][l],
                    Src::Imm(v) => v,
                };
                let space = self.resolve(*space, w, addr, exec, &addr_of);
                if self.launch.watch.is_some()
                    && matches!(space, Space::Global | Space::Generic | Space::Shared)
                {
                    let seen = AccessKind::Plain { space, bytes: total as u32, write: true };
                    self.watched(inst, pc, w, exec, addr, seen);
                }
                match space {
                    Space::Global | Space::Generic => {
                        self.seen_stores(inst, pc, (w.index, exec), total, |l| addr_of(w, addr, l));
                        self.scratch.clear();
                        for l in Lanes(exec) {
                            let a = addr_of(w, addr, l);
                            self.global_place(inst, w.index, l, a, total, true)?;
                            self.scratch.push(a);
                            for (i, s) in srcs.iter().enumerate() {
                                let at =
                                    self.global.place(a + (i * len) as u64, len).expect("inside the access");
                                self.global.store(at, len, value(w, *s, l));
                            }
                        }
                        let first = self.scratch.first().copied().unwrap_or(0);
                        self.timeline_store(total * exec.count_ones() as usize, first, false);
                        self.traffic.global_store_requests += 1;
                        self.traffic.global_store_sectors +=
                            traffic::sectors(&mut self.scratch, total as u64);
                        self.traffic.global_lines += traffic::lines(&self.scratch).max(1);
                    }
                    Space::Shared => {
                        self.pairs.clear();
                        for l in Lanes(exec) {
                            let at =
                                self.shared_lane(inst, pc, (w.index, l), addr_of(w, addr, l), total, true)?;
                            for (i, s) in srcs.iter().enumerate() {
                                store_bytes(self.shared_mut(), at + i * len, len, value(w, *s, l));
                            }
                        }
                        self.traffic.shared_store_requests += 1;
                        self.traffic.shared_store_wavefronts +=
                            traffic::shared_wavefronts(&self.pairs, total as u32);
                    }
                    Space::Local => {
                        for l in Lanes(exec) {
                            let at = self.local_offset(inst, w.index, l, addr_of(w, addr, l), total)?;
                            for (i, s) in srcs.iter().enumerate() {
                                store_bytes(&mut self.local, at + i * len, len, value(w, *s, l));
                            }
                        }
                    }
                    Space::Param => {
                        return Err(self.fault(
                            FaultKind::Unsupported,
                            format!("a store to the parameter space at {}", self.at(inst)),
                        ));
                    }
                }
            }
            Op::Atom { space, op, ty, d, addr, b, c } => {
                let len = (ty.bits() / 8) as usize;
                match self.resolve(*space, w, addr, exec, &addr_of) {
                    Space::Global | Space::Generic => {}
                    Space::Shared => {
                        // One host thread runs the cluster: the read-modify-write is whole.
                        for l in Lanes(exec) {
                            let a = addr_of(w, addr, l);
                            let a = a.wrapping_sub(if space_was_generic(inst) { SHARED_WINDOW } else { 0 });
                            let at = self.shared_offset(inst, w.index, l, a, len, true)?;
                            let width = if len == 8 { u64::MAX } else { u64::from(u32::MAX) };
                            let get = |s: Src| match s {
                                Src::Reg(x) => w.regs[x as usize][l] & width,
                                Src::Imm(v) => v & width,
                            };
                            let old = load_bytes(self.shared(), at, len);
                            store_bytes(self.shared_mut(), at, len, atom(*op, *ty, old, get(*b), get(*c)));
                            if let Some(d) = d {
                                w.regs[*d as usize][l] = old;
                            }
                        }
                        self.traffic.atomic_requests += 1;
                        return Ok(());
                    }
                    _ => {
                        return Err(self.fault(
                            FaultKind::Unsupported,
                            format!("an atomic on local or parameter memory at {}", self.at(inst)),
                        ));
                    }
                }
                let watched = self.launch.watching.is_some();
                let addrs = if watched { Lanes(exec).map(|l| addr_of(w, addr, l)).collect() } else { vec![] };
                self.seen_write(inst, pc, (w.index, exec), &addrs, len);
                for l in Lanes(exec) {
                    let a = addr_of(w, addr, l);
                    let p = self.global_place(inst, w.index, l, a, len, true)?;
                    let get = |s: Src| match s {
                        Src::Reg(x) => w.regs[x as usize][l],
                        Src::Imm(v) => v,
                    };
                    // OperandTags of the atomic's width (a 32-bit immediate -1 is 0xffffffff).
                    let width = if len == 8 { u64::MAX } else { u64::from(u32::MAX) };
                    let (bv, cv) = (get(*b) & width, get(*c) & width);
                    let f = |old: u64| -> u64 { atom(*op, *ty, old, bv, cv) };
                    let old = if len == 8 {
                        self.global.update64(p, f)
                    } else {
                        u64::from(self.global.update32(p, |o| f(u64::from(o)) as u32))
                    };
                    if let Some(d) = d {
                        w.regs[*d as usize][l] = old;
                    }
                }
                self.seen_read(inst, pc, (w.index, exec), &addrs, len)?;
                self.traffic.atomic_requests += 1;
                self.spin(inst, pc, w, exec)?;
            }
            Op::CpAsync { dst, src, size, src_size } => {
                self.scratch.clear();
                for l in Lanes(exec) {
                    let d = addr_of(w, dst, l);
                    let s = addr_of(w, src, l);
                    let at = self.shared_offset(inst, w.index, l, d, *size as usize, true)?;
                    let n = match src_size {
                        Some(Src::Reg(x)) => w.regs[*x as usize][l] as u32,
                        Some(Src::Imm(v)) => *v as u32,
                        None => *size,
                    }
                    .min(*size);
                    if n > 0 {
                        // The source must be aligned to the copy's size; only src-size bytes are read.
                        if s % u64::from(*size) != 0 {
                            return Err(self.misaligned(inst, w.index, l, s, *size as usize, "global"));
                        }
                        self.global_place(inst, w.index, l, s, n as usize, false)?;
                        self.scratch.push(s);
                    }
                    if self.launch.sanitize {
                        // The copy writes its bytes: a race with another warp's access in this
                        // epoch is one, and until it lands nobody may touch them.
                        self.check_shared(inst, pc, (w.index, l), at, *size as usize, true)?;
                        for word in at / 4..(at + *size as usize).div_ceil(4) {
                            self.ctas[self.rank].shadow.issue(word, w.index * 32 + l as u32, pc);
                        }
                    }
                    w.open.push(PendingCopy {
                        lane: l as u8,
                        dst: at,
                        src: s,
                        size: *size as u8,
                        src_size: n as u8,
                        inst: pc,
                    });
                }
                self.traffic.async_copy_requests += 1;
                self.traffic.async_copy_sectors += traffic::sectors(&mut self.scratch, u64::from(*size));
                self.traffic.global_lines += traffic::lines(&self.scratch).max(1);
                if self.footprint.is_some() {
                    let sectors = std::mem::take(&mut self.scratch);
                    self.footprint_read(sectors.iter().copied());
                    self.scratch = sectors;
                }
            }
            Op::CpCommit => {
                let group = std::mem::take(&mut w.open);
                w.groups.push_back(group);
            }
            Op::CpWait { pending, all } => {
                if *all {
                    let group = std::mem::take(&mut w.open);
                    w.groups.push_back(group);
                }
                while w.groups.len() > *pending as usize {
                    let group = w.groups.pop_front().expect("a group");
                    for c in group {
                        let lane = c.lane as usize;
                        if self.launch.sanitize {
                            for word in c.dst / 4..(c.dst + c.size as usize).div_ceil(4) {
                                self.ctas[self.rank].shadow.land(word);
                            }
                            let at = &self.k.insts[c.inst as usize];
                            // The copy lands now, at the wait: no trip of its own to name.
                            let visit = std::mem::replace(&mut self.visit, 0);
                            self.check_shared(at, c.inst, (w.index, lane), c.dst, c.size as usize, true)?;
                            self.visit = visit;
                        }
                        for i in 0..c.size as usize {
                            let byte = if i < c.src_size as usize {
                                let p = self.global.place(c.src + i as u64, 1).expect("checked at issue");
                                self.global.load(p, 1) as u8
                            } else {
                                0
                            };
                            self.shared_mut()[c.dst + i] = byte;
                        }
                        if self.launch.sanitize {
                            self.tag_copy(c.dst, c.src, (c.size as usize, c.src_size as usize), c.inst);
                        }
                    }
                }
            }
            _ => unreachable!("memory() only gets memory instructions"),
        }
        Ok(())
    }

    /// One lane's shared access of `len` bytes at `address` (a shared-space address, or a generic
    /// one for an instruction that names no space): its offset, checked for bounds and, with the
    /// sanitizer on, for races; the lane and offset are kept in `self.pairs` for the count.
    fn shared_lane(
        &mut self,
        inst: &Inst,
        pc: u32,
        (w, l): (u32, usize),
        address: u64,
        len: usize,
        write: bool,
    ) -> Result<usize, Fault> {
        let address = address.wrapping_sub(if space_was_generic(inst) { SHARED_WINDOW } else { 0 });
        let at = self.shared_offset(inst, w, l, address, len, write)?;
        if self.launch.sanitize {
            self.check_shared(inst, pc, (w, l), at, len, write)?;
        }
        self.pairs.push((l as u32, at as u32));
        Ok(at)
    }

    /// Counts one shared load of `len` bytes a lane (its lanes' offsets in `self.pairs`), as the
    /// machine code makes it: a group of loads the back end joins (decided when the kernel was
    /// decoded, from the alignment ptxas can prove: see [`crate::joins`]) is counted once, as
    /// one access of the group's width, at its first load.
    fn count_shared_load(&mut self, inst: &Inst, len: u32) {
        let len = match inst.merge {
            Merge::None => len,
            Merge::Leader { bytes, from, .. } => {
                for p in &mut self.pairs {
                    p.1 = p.1.wrapping_sub(from);
                }
                bytes
            }
            Merge::Follower { .. } => return,
        };
        self.traffic.shared_load_requests += 1;
        self.traffic.shared_load_wavefronts += traffic::shared_wavefronts(&self.pairs, len);
    }

    /// The space a generic access lands in, judged from the first active lane's address.
    fn resolve(
        &self,
        space: Space,
        w: &Warp,
        addr: &Addr,
        exec: u32,
        addr_of: &dyn Fn(&Warp, &Addr, usize) -> u64,
    ) -> Space {
        if space != Space::Generic {
            return space;
        }
        let Some(l) = Lanes(exec).next() else { return Space::Global };
        match addr_of(w, addr, l) {
            a if a >= PARAM_WINDOW => Space::Param,
            a if a >= LOCAL_WINDOW => Space::Local,
            a if a >= SHARED_WINDOW => Space::Shared,
            _ => Space::Global,
        }
    }

    pub(super) fn local_offset(
        &self,
        inst: &Inst,
        w: u32,
        l: usize,
        address: u64,
        len: usize,
    ) -> Result<usize, Fault> {
        let per = self.k.local_bytes;
        let a = if address >= LOCAL_WINDOW { address - LOCAL_WINDOW } else { address };
        if a as usize + len > per {
            return Err(self.fault(
                FaultKind::OutOfBounds,
                format!("{} accesses local memory past its {per} bytes at {}", self.who(w, l), self.at(inst)),
            ));
        }
        let thread = self.rank * self.block_threads() as usize + w as usize * 32 + l;
        Ok(thread * per + a as usize)
    }

    /// Notes a spin wait (an atomic or volatile load that keeps seeing the same value): after a
    /// million in a row the block waits for something no running block will write.
    pub(super) fn spin(&mut self, inst: &Inst, pc: u32, w: &mut Warp, exec: u32) -> Result<(), Fault> {
        if self.stop.load(Ordering::Relaxed) {
            return Err(self.fault(FaultKind::Stopped, "stopped by another block's fault".into()));
        }
        let l = Lanes(exec).next().unwrap_or(0);
        let seen = match &inst.op {
            Op::Atom { d: Some(d), .. } => w.regs[*d as usize][l],
            Op::Ld { ds, .. } => w.regs[ds[0] as usize][l],
            _ => return Ok(()),
        };
        if w.spin.0 == pc && w.spin.1 == seen {
            w.spin.2 += 1;
            if w.spin.2 > 1_000_000 {
                return Err(self.fault(
                    FaultKind::WaitsForBlock,
                    format!(
                        "{} waits at {} for a value no other block writes: the block it waits for runs after it, or never",
                        self.who(w.index, l),
                        self.at(inst)
                    ),
                ));
            }
            if w.spin.2 % 64 == 0 {
                std::thread::yield_now();
            }
        } else {
            w.spin = (pc, seen, 0);
        }
        Ok(())
    }

    /// The race check of one lane's access to shared bytes `at..at + len` of the running block
    /// (see [`crate::sanitize`]), and of the copy engine's and tensor cores' use of them (see
    /// [`super::async_proxy`]).
    pub fn check_shared(
        &mut self,
        inst: &Inst,
        pc: u32,
        (w, l): (u32, usize),
        at: usize,
        len: usize,
        write: bool,
    ) -> Result<(), Fault> {
        let thread = w * 32 + l as u32;
        self.check_async(inst, pc, (w, l), at, len, write)?;
        if write && !matches!(inst.op, Op::CpAsync { .. }) {
            self.untag_words(at, len);
        }
        for word in at / 4..(at + len).div_ceil(4) {
            self.note_access(word, pc, write);
            let shadow = &mut self.ctas[self.rank].shadow;
            // A copy still in flight to the word, or another warp's access since the last barrier.
            let (other, other_pc, other_trip, what, tail) = match shadow.in_flight(word) {
                Some(p) if shadow.overwrites_reads(&p) => {
                    return Err(self.overwrite(inst, (w, l), word, (p.thread, p.pc), false));
                }
                Some(p) => (p.thread, p.pc, 0, "before the cp.async of", COPY_NOT_WAITED),
                None => match shadow.access(word, thread, (pc, self.visit), write) {
                    Some(o) if !o.write && matches!(inst.op, Op::CpAsync { .. }) => {
                        return Err(self.overwrite(inst, (w, l), word, (o.thread, o.pc), true));
                    }
                    Some(o) if o.write => (o.thread, o.pc, o.trip, "which was written by", NO_BARRIER),
                    Some(o) => (o.thread, o.pc, o.trip, "which was read by", NO_BARRIER),
                    None => continue,
                },
            };
            // Two accesses in different trips of a loop (a barrier missing at the loop's end, say)
            // say so; counted per warp and instruction, an unrolled copy of the body counts apart.
            let (trip, other_trip) = if other_trip != 0 && self.visit != 0 && other_trip != self.visit {
                (format!(" in trip {} of its loop", self.visit), format!(" in trip {other_trip}"))
            } else {
                (String::new(), String::new())
            };
            let other_inst = &self.k.insts[other_pc as usize];
            return Err(self.fault(
                FaultKind::Race,
                format!(
                    "shared-memory race: {} {} {} at {}{trip}, {what} {} at {}{other_trip} {tail}",
                    self.who(w, l),
                    if write { "writes" } else { "reads" },
                    self.shared_place(word * 4),
                    self.at(inst),
                    self.who(other / 32, (other % 32) as usize),
                    self.at(other_inst)
                ),
            ));
        }
        Ok(())
    }
}

/// The end of a race with a copy issued before the barrier that makes its bytes visible.
const COPY_NOT_WAITED: &str = "that writes it has landed (no cp.async.wait_group between)";

/// The end of a race between two ordinary accesses.
const NO_BARRIER: &str = "with no barrier between";

#[inline]
pub(super) fn space_was_generic(inst: &Inst) -> bool {
    !inst.names_shared
}

fn atom(op: AtomOp, ty: Ty, old: u64, b: u64, c: u64) -> u64 {
    use crate::inst::IntOp;
    match op {
        AtomOp::Exch => b,
        AtomOp::Cas => {
            if old == b {
                c
            } else {
                old
            }
        }
        AtomOp::Add if ty == Ty::F32 => {
            u64::from((f32::from_bits(old as u32) + f32::from_bits(b as u32)).to_bits())
        }
        AtomOp::Add if ty == Ty::F64 => (f64::from_bits(old) + f64::from_bits(b)).to_bits(),
        AtomOp::Add => alu::int(IntOp::Add, ty, old, b),
        AtomOp::Min => alu::int(IntOp::Min, ty, old, b),
        AtomOp::Max => alu::int(IntOp::Max, ty, old, b),
        AtomOp::And => old & b,
        AtomOp::Or => old | b,
        AtomOp::Xor => old ^ b,
        AtomOp::Inc => {
            if old >= b {
                0
            } else {
                old + 1
            }
        }
        AtomOp::Dec => {
            if old == 0 || old > b {
                b
            } else {
                old - 1
            }
        }
    }
}

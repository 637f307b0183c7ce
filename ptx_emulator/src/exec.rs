//! The machine at work: a launch's blocks handed out in order to host threads, each block's
//! warps run in turn until every thread waits at the barrier or has left, and each warp run
//! instruction by instruction for the lanes that stand at the lowest program counter (so
//! lanes that branch apart run one side, then the other, and meet again where the paths join).

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::alu;
use crate::collective;
use crate::decode::{Addr, AtomOp, Inst, Kernel, Merge, Op, SPECIALS, Space, Src, Ty};
use crate::memory::{Global, LOCAL_WINDOW, SHARED_WINDOW, load_bytes, store_bytes};
use crate::sanitize::Shadow;
use crate::traffic::{self, Traffic};
use crate::{Fault, FaultKind};

/// Iterates over the set lanes of a mask.
#[derive(Clone, Copy)]
pub struct Lanes(pub u32);

impl Iterator for Lanes {
    type Item = usize;
    #[inline]
    fn next(&mut self) -> Option<usize> {
        if self.0 == 0 {
            return None;
        }
        let l = self.0.trailing_zeros();
        self.0 &= self.0 - 1;
        Some(l as usize)
    }
}

/// One launch: the kernel, its shape and its parameter bytes.
pub struct Launch<'k> {
    pub kernel: &'k Kernel,
    pub grid: (u32, u32, u32),
    pub block: (u32, u32, u32),
    pub dynamic_shared: usize,
    pub params: Vec<u8>,
    pub sanitize: bool,
    /// Host threads that run blocks.
    pub workers: usize,
}

/// A cp.async copy waiting for its group to complete.
#[derive(Clone, Copy, Debug)]
pub struct Copy {
    pub lane: u8,
    pub dst: usize,
    pub src: u64,
    pub size: u8,
    pub src_size: u8,
    pub inst: u32,
}

/// One warp's state.
pub struct Warp {
    pub regs: Vec<[u64; 32]>,
    pub pc: [u32; 32],
    /// Lanes that run, wait at the barrier, have left, and exist at all.
    pub running: u32,
    pub waiting: u32,
    pub exited: u32,
    pub present: u32,
    /// The program counter every running lane shares, while they share one.
    pub uniform: Option<u32>,
    pub open: Vec<Copy>,
    pub groups: std::collections::VecDeque<Vec<Copy>>,
    pub index: u32,
    /// For each group of shared loads the back end joins, whether its leader's lanes were aligned.
    pub merged: Vec<bool>,
    /// A spin wait's program counter and how often in a row it saw the same value.
    spin: (u32, u64, u32),
}

/// How the program counters move after an instruction.
enum Flow {
    Next,
    /// These lanes jump to the target; the rest go on.
    Jump(u32, usize),
    Exit(u32),
    Barrier(u32),
}

/// A block's memory and warps (kept from block to block by one host thread).
pub struct Cta<'a> {
    pub k: &'a Kernel,
    pub launch: &'a Launch<'a>,
    pub global: &'a Global,
    pub shared: Vec<u8>,
    pub shadow: Shadow,
    pub local: Vec<u8>,
    pub warps: Vec<Warp>,
    pub ctaid: [u32; 3],
    pub traffic: Traffic,
    stop: &'a AtomicBool,
    scratch: Vec<u64>,
    pairs: Vec<(u32, u32)>,
}

/// Runs every block of the launch; the first fault (of the lowest block) ends it.
pub fn run(global: &Global, launch: &Launch) -> Result<Traffic, Fault> {
    let (gx, gy, gz) = launch.grid;
    let blocks = u64::from(gx) * u64::from(gy) * u64::from(gz);
    let next = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let fault: Mutex<Option<(u64, Fault)>> = Mutex::new(None);
    let total = Mutex::new(Traffic::default());
    let workers = launch.workers.clamp(1, blocks.max(1) as usize);
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                let mut cta = Cta::new(launch, global, &stop);
                loop {
                    let b = next.fetch_add(1, Ordering::SeqCst);
                    if b >= blocks || stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let ctaid = [
                        (b % u64::from(gx)) as u32,
                        ((b / u64::from(gx)) % u64::from(gy)) as u32,
                        (b / (u64::from(gx) * u64::from(gy))) as u32,
                    ];
                    if let Err(f) = cta.run_block(ctaid) {
                        stop.store(true, Ordering::SeqCst);
                        let mut slot = fault.lock().expect("no worker panics holding it");
                        // A block stopped by another's fault is not the cause.
                        if f.kind != FaultKind::Stopped && slot.as_ref().is_none_or(|(at, _)| b < *at) {
                            *slot = Some((b, f));
                        }
                        break;
                    }
                }
                total.lock().expect("no worker panics holding it").add(&cta.traffic);
            });
        }
    });
    if let Some((_, f)) = fault.into_inner().expect("workers done") {
        return Err(f);
    }
    Ok(total.into_inner().expect("workers done"))
}

impl<'a> Cta<'a> {
    fn new(launch: &'a Launch, global: &'a Global, stop: &'a AtomicBool) -> Self {
        let k = launch.kernel;
        let threads = launch.block.0 * launch.block.1 * launch.block.2;
        let nwarps = threads.div_ceil(32);
        let warps = (0..nwarps)
            .map(|w| {
                let present =
                    if (w + 1) * 32 <= threads { u32::MAX } else { (1u32 << (threads - w * 32)) - 1 };
                Warp {
                    regs: vec![[0u64; 32]; k.regs],
                    pc: [0; 32],
                    running: present,
                    waiting: 0,
                    exited: 0,
                    present,
                    uniform: Some(0),
                    open: Vec::new(),
                    groups: Default::default(),
                    index: w,
                    merged: vec![false; k.merge_groups],
                    spin: (u32::MAX, 0, 0),
                }
            })
            .collect();
        let shared_bytes = k.dynamic_at.max(k.static_shared) + launch.dynamic_shared;
        Cta {
            k,
            launch,
            global,
            shared: vec![0; shared_bytes],
            shadow: Shadow::new(if launch.sanitize { shared_bytes.div_ceil(4) } else { 0 }),
            local: vec![0; k.local_bytes * threads as usize],
            warps,
            ctaid: [0; 3],
            traffic: Traffic::default(),
            stop,
            scratch: Vec::with_capacity(128),
            pairs: Vec::with_capacity(32),
        }
    }

    /// Where an instruction came from, as `file:line`.
    pub fn at(&self, inst: &Inst) -> String {
        match self.k.files.get(&inst.file) {
            Some(f) if inst.line > 0 => format!("{f}:{}", inst.line),
            _ => format!("the PTX instruction `{}`", inst.opcode),
        }
    }

    /// `thread (x,y,z) of block (x,y,z)` for lane `lane` of warp `w`.
    pub fn who(&self, w: u32, lane: usize) -> String {
        let (bx, by, _) = self.launch.block;
        let t = w * 32 + lane as u32;
        let c = self.ctaid;
        format!(
            "thread ({},{},{}) of block ({},{},{})",
            t % bx,
            (t / bx) % by,
            t / (bx * by),
            c[0],
            c[1],
            c[2]
        )
    }

    pub fn fault(&self, kind: FaultKind, message: String) -> Fault {
        Fault { kind, message }
    }

    fn run_block(&mut self, ctaid: [u32; 3]) -> Result<(), Fault> {
        self.ctaid = ctaid;
        self.shared.fill(0);
        self.shadow.reset();
        self.local.fill(0);
        let (bx, by, bz) = self.launch.block;
        let (gx, gy, gz) = self.launch.grid;
        let nwarps = self.warps.len() as u64;
        for w in &mut self.warps {
            w.running = w.present;
            w.waiting = 0;
            w.exited = 0;
            w.uniform = Some(0);
            w.open.clear();
            w.groups.clear();
            w.spin = (u32::MAX, 0, 0);
            for lane in 0..32u32 {
                let t = w.index * 32 + lane;
                let values = [
                    t % bx,
                    (t / bx) % by,
                    t / (bx * by),
                    bx,
                    by,
                    bz,
                    ctaid[0],
                    ctaid[1],
                    ctaid[2],
                    gx,
                    gy,
                    gz,
                    lane,
                    w.index,
                    nwarps as u32,
                    0,
                ];
                for (slot, v) in values.iter().enumerate().take(SPECIALS.len()) {
                    w.regs[slot][lane as usize] = u64::from(*v);
                }
            }
        }
        loop {
            for wi in 0..self.warps.len() {
                if self.warps[wi].running != 0 {
                    self.run_warp(wi)?;
                }
            }
            // No warp can run: every thread has left, or some wait at the barrier.
            if self.warps.iter().all(|w| w.waiting == 0) {
                return Ok(());
            }
            self.release_barrier()?;
        }
    }

    /// Every thread that has not left waits at one barrier: let them all through, or say which
    /// thread did not come.
    fn release_barrier(&mut self) -> Result<(), Fault> {
        let (wi, lane) = self
            .warps
            .iter()
            .find_map(|w| Lanes(w.waiting).next().map(|l| (w.index as usize, l)))
            .expect("someone waits");
        let pc = self.warps[wi].pc[lane];
        let inst = &self.k.insts[pc as usize];
        for w in &self.warps {
            let absent = w.present & !w.waiting;
            if let Some(l) = Lanes(absent).next() {
                return Err(self.fault(
                    FaultKind::Barrier,
                    format!(
                        "the barrier at {} is not reached by every thread of the block: {} waits there, but {} has already left the kernel (a __syncthreads() that some threads skip)",
                        self.at(inst),
                        self.who(wi as u32, lane),
                        self.who(w.index, l)
                    ),
                ));
            }
            if let Some(l) = Lanes(w.waiting).find(|&l| w.pc[l] != pc) {
                let other = &self.k.insts[w.pc[l] as usize];
                return Err(self.fault(
                    FaultKind::Barrier,
                    format!(
                        "threads of one block wait at two different barriers: {} at {} and {} at {} (a __syncthreads() inside a branch that threads take differently)",
                        self.who(wi as u32, lane),
                        self.at(inst),
                        self.who(w.index, l),
                        self.at(other)
                    ),
                ));
            }
        }
        self.shadow.barrier();
        self.traffic.barriers += 1;
        for w in &mut self.warps {
            for l in Lanes(w.waiting) {
                w.pc[l] = pc + 1;
            }
            w.running = w.waiting;
            w.waiting = 0;
            w.uniform = Some(pc + 1);
        }
        Ok(())
    }

    fn run_warp(&mut self, wi: usize) -> Result<(), Fault> {
        let mut w = std::mem::replace(&mut self.warps[wi], placeholder());
        let result = self.run_warp_inner(&mut w);
        self.warps[wi] = w;
        result
    }

    fn run_warp_inner(&mut self, w: &mut Warp) -> Result<(), Fault> {
        let k = self.k;
        while w.running != 0 {
            let (pc, mask) = match w.uniform {
                Some(pc) => (pc, w.running),
                None => {
                    let pc = Lanes(w.running).map(|l| w.pc[l]).min().expect("a running lane");
                    let mask = Lanes(w.running).filter(|&l| w.pc[l] == pc).fold(0u32, |m, l| m | (1 << l));
                    if mask == w.running {
                        w.uniform = Some(pc);
                    }
                    (pc, mask)
                }
            };
            let Some(inst) = k.insts.get(pc as usize) else {
                return Err(self.fault(
                    FaultKind::Trap,
                    format!("a thread of {} ran past the kernel's last instruction", self.k.name),
                ));
            };
            let exec = match inst.guard {
                None => mask,
                Some((p, negated)) => {
                    let mut m = 0;
                    for l in Lanes(mask) {
                        if (w.regs[p as usize][l] != 0) != negated {
                            m |= 1 << l;
                        }
                    }
                    m
                }
            };
            self.traffic.warp_instructions += 1;
            self.traffic.thread_instructions += u64::from(exec.count_ones());
            let flow = if exec == 0 && !matches!(inst.op, Op::Bra { .. }) {
                Flow::Next
            } else {
                self.exec(inst, pc, w, mask, exec)?
            };
            let uniform = w.uniform.is_some();
            match flow {
                Flow::Next => self.advance(w, mask, pc + 1),
                Flow::Jump(taken, target) => {
                    if taken == mask {
                        self.advance(w, mask, target as u32);
                    } else if taken == 0 {
                        self.advance(w, mask, pc + 1);
                    } else {
                        materialize(w);
                        for l in Lanes(taken) {
                            w.pc[l] = target as u32;
                        }
                        for l in Lanes(mask & !taken) {
                            w.pc[l] = pc + 1;
                        }
                        w.uniform = None;
                    }
                }
                Flow::Exit(e) | Flow::Barrier(e) => {
                    let barrier = matches!(flow, Flow::Barrier(_));
                    materialize(w);
                    for l in Lanes(e) {
                        w.pc[l] = pc;
                    }
                    w.running &= !e;
                    if barrier {
                        w.waiting |= e;
                    } else {
                        w.exited |= e;
                    }
                    for l in Lanes(mask & !e) {
                        w.pc[l] = pc + 1;
                    }
                    w.uniform = if uniform { Some(pc + 1) } else { None };
                }
            }
        }
        Ok(())
    }

    #[inline]
    fn advance(&self, w: &mut Warp, mask: u32, to: u32) {
        if w.uniform.is_some() && mask == w.running {
            w.uniform = Some(to);
        } else {
            for l in Lanes(mask) {
                w.pc[l] = to;
            }
        }
    }

    fn exec(&mut self, inst: &Inst, pc: u32, w: &mut Warp, mask: u32, exec: u32) -> Result<Flow, Fault> {
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
                each!(*d, |l| get(r, *a, l) & m)
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
                    crate::decode::MadPart::Lo => alu::int(
                        crate::decode::IntOp::Add,
                        *ty,
                        alu::int(crate::decode::IntOp::MulLo, *ty, x, y),
                        z,
                    ),
                    crate::decode::MadPart::Hi => alu::int(
                        crate::decode::IntOp::Add,
                        *ty,
                        alu::int(crate::decode::IntOp::MulHi, *ty, x, y),
                        z,
                    ),
                    crate::decode::MadPart::Wide => {
                        let wide = if ty.signed() { Ty::S64 } else { Ty::U64 };
                        alu::int(crate::decode::IntOp::Add, wide, alu::mul_wide(*ty, x, y), z)
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
                each!(*d, |l| alu::convert(*to, *from, *round, *ftz, get(r, *a, l)))
            }
            Op::Cvta { d, a, space, to } => {
                let window = match space {
                    Space::Shared => SHARED_WINDOW,
                    Space::Local => LOCAL_WINDOW,
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
                }
                each!(*d, |l| alu::float(*op, *ty, get(r, *a, l), get(r, *b, l), *ftz))
            }
            Op::Fma { ty, d, a, b, c, ftz } => {
                if *ty == Ty::F32 {
                    self.traffic.flops += 2 * u64::from(exec.count_ones());
                    each!(*d, |l| alu::fma32(get(r, *a, l), get(r, *b, l), get(r, *c, l), *ftz))
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
            Op::Bar => return Ok(Flow::Barrier(exec)),
            Op::Fence => std::sync::atomic::fence(Ordering::SeqCst),
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
            | Op::MmaTf32 { .. } => {
                collective::exec(self, inst, pc, w, mask, exec)?;
            }
        }
        Ok(Flow::Next)
    }

    /// The byte offset in shared memory of an access, or the fault it is.
    pub fn shared_offset(
        &self,
        inst: &Inst,
        w: u32,
        l: usize,
        address: u64,
        len: usize,
        write: bool,
    ) -> Result<usize, Fault> {
        let size = self.shared.len() as u64;
        if address % len as u64 != 0 {
            return Err(self.misaligned(inst, w, l, address, len, "shared"));
        }
        let end = address.saturating_add(len as u64);
        let inside = self.k.shared_vars.iter().any(|v| address >= v.start as u64 && end <= v.end as u64)
            || (address >= self.k.dynamic_at as u64 && end <= size);
        if !inside {
            let verb = if write { "writes" } else { "reads" };
            let place = match self.k.shared_vars.iter().rev().find(|v| address >= v.start as u64) {
                Some(v) if end <= size => {
                    format!("{}, which has {} bytes", self.shared_place(address as usize), v.end - v.start)
                }
                _ => format!("byte {} of shared memory, outside the block's {} bytes", address as i64, size),
            };
            return Err(self.fault(
                FaultKind::OutOfBounds,
                format!("{} {verb} {len} bytes at {place}, at {}", self.who(w, l), self.at(inst)),
            ));
        }
        Ok(address as usize)
    }

    /// A byte of shared memory as the source names it: `byte 4 of the shared array `Bs``, or of
    /// the dynamic shared memory.
    pub fn shared_place(&self, at: usize) -> String {
        match self.k.shared_vars.iter().rev().find(|v| at >= v.start) {
            Some(v) if at >= self.k.dynamic_at && self.k.dynamic_at > v.start => {
                format!("byte {} of the dynamic shared memory", at - self.k.dynamic_at)
            }
            Some(v) => format!("byte {} of the shared array `{}`", at - v.start, v.name),
            None => format!("byte {} of the dynamic shared memory", at - self.k.dynamic_at.min(at)),
        }
    }

    fn misaligned(&self, inst: &Inst, w: u32, l: usize, address: u64, len: usize, space: &str) -> Fault {
        self.fault(
            FaultKind::Misaligned,
            format!(
                "{} accesses {len} bytes of {space} memory at {address:#x}, which is not a multiple of {len}, at {}",
                self.who(w, l),
                self.at(inst)
            ),
        )
    }

    fn global_place(
        &self,
        inst: &Inst,
        w: u32,
        l: usize,
        address: u64,
        len: usize,
        write: bool,
    ) -> Result<crate::memory::Place, Fault> {
        if address % len as u64 != 0 {
            return Err(self.misaligned(inst, w, l, address, len, "global"));
        }
        self.global.place(address, len).ok_or_else(|| {
            self.fault(
                FaultKind::OutOfBounds,
                format!(
                    "{} {} {len} bytes of global memory {}, at {}",
                    self.who(w, l),
                    if write { "writes" } else { "reads" },
                    self.global.describe(address, len),
                    self.at(inst)
                ),
            )
        })
    }

    /// Loads, stores, atomics and asynchronous copies for the lanes in `exec`.
    fn memory(&mut self, inst: &Inst, pc: u32, w: &mut Warp, exec: u32) -> Result<(), Fault> {
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
                match space {
                    Space::Param => {
                        for l in Lanes(exec) {
                            let at = addr_of(w, addr, l) as usize;
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
                        self.traffic.global_load_requests += 1;
                        self.traffic.global_load_sectors += traffic::sectors(&mut self.scratch, total as u64);
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
                                w.regs[*d as usize][l] = load_bytes(&self.shared, at + i * len, len);
                            }
                        }
                        self.count_shared_load(inst, w, total as u32);
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
                match space {
                    Space::Global | Space::Generic => {
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
                        self.traffic.global_store_requests += 1;
                        self.traffic.global_store_sectors +=
                            traffic::sectors(&mut self.scratch, total as u64);
                    }
                    Space::Shared => {
                        self.pairs.clear();
                        for l in Lanes(exec) {
                            let at =
                                self.shared_lane(inst, pc, (w.index, l), addr_of(w, addr, l), total, true)?;
                            for (i, s) in srcs.iter().enumerate() {
                                store_bytes(&mut self.shared, at + i * len, len, value(w, *s, l));
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
                if !matches!(self.resolve(*space, w, addr, exec, &addr_of), Space::Global | Space::Generic) {
                    return Err(self.fault(
                        FaultKind::Unsupported,
                        format!("atomics on shared memory are not emulated ({})", self.at(inst)),
                    ));
                }
                let len = (ty.bits() / 8) as usize;
                for l in Lanes(exec) {
                    let a = addr_of(w, addr, l);
                    let p = self.global_place(inst, w.index, l, a, len, true)?;
                    let get = |s: Src| match s {
                        Src::Reg(x) => w.regs[x as usize][l],
                        Src::Imm(v) => v,
                    };
                    // Operands of the atomic's width (a 32-bit immediate -1 is 0xffffffff).
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
                            self.shadow.issue(word, w.index * 32 + l as u32, pc);
                        }
                    }
                    w.open.push(Copy {
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
                                self.shadow.land(word);
                            }
                            let at = &self.k.insts[c.inst as usize];
                            self.check_shared(at, c.inst, (w.index, lane), c.dst, c.size as usize, true)?;
                        }
                        for i in 0..c.size as usize {
                            let byte = if i < c.src_size as usize {
                                let p = self.global.place(c.src + i as u64, 1).expect("checked at issue");
                                self.global.load(p, 1) as u8
                            } else {
                                0
                            };
                            self.shared[c.dst + i] = byte;
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
    /// machine code makes it: a load the back end joins with its neighbours is counted once, for
    /// the whole group, when every lane's group starts aligned to its width.
    fn count_shared_load(&mut self, inst: &Inst, w: &mut Warp, len: u32) {
        let (pairs, len) = match inst.merge {
            Merge::None => (&self.pairs[..], len),
            Merge::Leader { group, bytes, from } => {
                let aligned = self.pairs.iter().all(|&(_, at)| at >= from && (at - from) % bytes == 0);
                w.merged[group as usize] = aligned;
                if aligned {
                    for p in &mut self.pairs {
                        p.1 -= from;
                    }
                    (&self.pairs[..], bytes)
                } else {
                    (&self.pairs[..], len)
                }
            }
            Merge::Follower { group } if w.merged.get(group as usize) == Some(&true) => return,
            Merge::Follower { .. } => (&self.pairs[..], len),
        };
        self.traffic.shared_load_requests += 1;
        self.traffic.shared_load_wavefronts += traffic::shared_wavefronts(pairs, len);
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
            a if a >= LOCAL_WINDOW => Space::Local,
            a if a >= SHARED_WINDOW => Space::Shared,
            _ => Space::Global,
        }
    }

    fn local_offset(&self, inst: &Inst, w: u32, l: usize, address: u64, len: usize) -> Result<usize, Fault> {
        let per = self.k.local_bytes;
        let a = if address >= LOCAL_WINDOW { address - LOCAL_WINDOW } else { address };
        if a as usize + len > per {
            return Err(self.fault(
                FaultKind::OutOfBounds,
                format!("{} accesses local memory past its {per} bytes at {}", self.who(w, l), self.at(inst)),
            ));
        }
        Ok((w as usize * 32 + l) * per + a as usize)
    }

    /// The race check of one lane's access to shared bytes `at..at + len` (see [`crate::sanitize`]).
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
        for word in at / 4..(at + len).div_ceil(4) {
            // A copy still in flight to the word, or another warp's access since the last barrier.
            let (other, other_pc, what) = match self.shadow.in_flight(word) {
                Some((t, p)) => (t, p, "before the cp.async of"),
                None => match self.shadow.access(word, thread, pc, write) {
                    Some((t, p, true)) => (t, p, "which was written by"),
                    Some((t, p, false)) => (t, p, "which was read by"),
                    None => continue,
                },
            };
            let tail = if what.starts_with("before") {
                "that writes it has landed (no cp.async.wait_group between)"
            } else {
                "with no barrier between"
            };
            let other_inst = &self.k.insts[other_pc as usize];
            return Err(self.fault(
                FaultKind::Race,
                format!(
                    "shared-memory race: {} {} {} at {}, {what} {} at {} {tail}",
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

    /// Notes a spin wait (an atomic or volatile load that keeps seeing the same value): after a
    /// million in a row the block waits for something no running block will write.
    fn spin(&mut self, inst: &Inst, pc: u32, w: &mut Warp, exec: u32) -> Result<(), Fault> {
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
                    FaultKind::Deadlock,
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
}

fn space_was_generic(inst: &Inst) -> bool {
    !inst.opcode.contains(".shared")
}

fn materialize(w: &mut Warp) {
    if let Some(u) = w.uniform {
        for l in Lanes(w.running) {
            w.pc[l] = u;
        }
    }
}

fn placeholder() -> Warp {
    Warp {
        regs: Vec::new(),
        pc: [0; 32],
        running: 0,
        waiting: 0,
        exited: 0,
        present: 0,
        uniform: None,
        open: Vec::new(),
        groups: Default::default(),
        index: 0,
        merged: Vec::new(),
        spin: (0, 0, 0),
    }
}

fn atom(op: AtomOp, ty: Ty, old: u64, b: u64, c: u64) -> u64 {
    use crate::decode::IntOp;
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

//! What orders the stores and loads of the host's workspaces in global memory across clusters,
//! by the PTX memory model rather than by the order the emulator happens to run clusters in
//! (one after another, or side by side on host threads).
//!
//! A warp's stores are known to another cluster only through a release that an acquire reads:
//! - a release (an atomic or a store with `.release` or `.acq_rel`, or a strong write after
//!   `fence.acq_rel`, `fence.sc` or `membar` at the GPU's scope or wider) publishes, at the
//!   address it writes, what its warp knows: its own stores so far and, through the warp's vector
//!   clock (see [`super::order`]), those of every warp of its cluster ordered before it, such as
//!   the warps of a group that met at a barrier just before;
//! - an acquire (`.acquire` or `.acq_rel`, or a strong read followed by such a fence) that reads
//!   an address takes what the releases to it published; a relaxed atomic in between keeps the
//!   release sequence going, a plain store ends it;
//! - a block's barrier shares what its warps took.
//!
//! Two hazards are named with it:
//! - a load of a word that another cluster stored in this launch with nothing of the above to
//!   order the store before it (at the load: a fault);
//! - a read of a word that an earlier product left non-zero: a workspace the host zeroes once
//!   must be left zeroed by every launch (kept as a finding, so that the run goes on and its C
//!   is judged as well).
//!
//! What an acquire takes is every release the address has seen in this launch, a little more
//! than the model gives (a release later in the address's order than the value read): the check
//! may miss such a race, but never names one that the model orders.

use std::sync::atomic::Ordering;

use crate::inst::{Inst, Op};
use crate::{Fault, FaultKind};

use super::global_watch::{Known, WarpSeen, Watched, Watching, WordWrite, covers, merge};
use super::state::{Cluster, Lanes};

impl Cluster<'_> {
    /// Cluster `c` begins: its warps know nothing of other clusters' stores yet.
    pub fn seen_reset(&mut self, c: u64) {
        if self.launch.watching.is_none() {
            return;
        }
        self.seen.cluster = c as u32;
        self.seen.warps.clear();
        self.seen.warps.resize(self.warps.len(), WarpSeen::default());
    }

    /// Warps `slots` met at a barrier: each knows what any of them took from other clusters,
    /// and a fence of any of them before the barrier serves all: its release for a strong write
    /// after the barrier, its acquire for a strong read before it (the pattern of a block that
    /// fences, meets, and has one thread count its arrival).
    pub fn seen_barrier(&mut self, slots: &[usize]) {
        if self.launch.watching.is_none() {
            return;
        }
        let (mut known, mut pending, mut fenced) = (Known::new(), Known::new(), None::<Known>);
        let mut sync = None;
        for &s in slots {
            let w = &self.seen.warps[s];
            merge(&mut known, &w.known);
            merge(&mut pending, &w.pending);
            if let Some(f) = &w.fenced {
                merge(fenced.get_or_insert_with(Known::new), f);
            }
            sync = sync.or(w.sync);
        }
        for &s in slots {
            let w = &mut self.seen.warps[s];
            if !known.is_empty() {
                w.known.clone_from(&known);
            }
            if !pending.is_empty() {
                w.pending.clone_from(&pending);
            }
            if fenced.is_some() {
                w.fenced.clone_from(&fenced);
            }
            w.sync = w.sync.or(sync);
        }
    }

    /// What the running warp publishes with a release: what it took from other clusters, and
    /// every epoch of its cluster's warps that its clock has reached.
    fn published(&self) -> Known {
        let mut known = self.seen.warps[self.slot].known.clone();
        let own: Known = (self.clocks[self.slot].iter().enumerate())
            .filter(|&(_, &epoch)| epoch > 0)
            .map(|(s, &epoch)| (self.seen.cluster, s as u32, epoch))
            .collect();
        merge(&mut known, &own);
        known
    }

    /// A fence of the running warp (at `pc`): at the GPU's scope or wider, it acquires
    /// what its strong reads before it read, and releases for its strong writes after it.
    pub fn seen_fence(&mut self, pc: u32) {
        let launch = self.launch;
        let Some(wg) = launch.watching.as_ref() else { return };
        if !wg.sems[pc as usize].release {
            return;
        }
        let w = &mut self.seen.warps[self.slot];
        let pending = std::mem::take(&mut w.pending);
        merge(&mut w.known, &pending);
        if let Some((_, acquired)) = &mut w.sync {
            *acquired = true;
        }
        let published = self.published();
        self.seen.warps[self.slot].fenced = Some(published);
        self.clocks[self.slot][self.slot] += 1;
    }

    /// [`Cluster::seen_read`] of a load whose lanes' addresses are in `self.scratch`.
    #[inline]
    pub fn seen_loaded(&mut self, inst: &Inst, pc: u32, lanes: (u32, u32), len: usize) -> Result<(), Fault> {
        if self.launch.watching.is_none() {
            return Ok(());
        }
        let addrs = std::mem::take(&mut self.scratch);
        let seen = self.seen_read(inst, pc, lanes, &addrs, len);
        self.scratch = addrs;
        seen
    }

    /// [`Cluster::seen_write`] of a store, each lane's address from `address`.
    #[inline]
    pub fn seen_stores(
        &mut self,
        inst: &Inst,
        pc: u32,
        (w, exec): (u32, u32),
        len: usize,
        address: impl Fn(usize) -> u64,
    ) {
        if self.launch.watching.is_none() {
            return;
        }
        let mut addrs = std::mem::take(&mut self.scratch);
        addrs.clear();
        addrs.extend(Lanes(exec).map(address));
        self.seen_write(inst, pc, (w, exec), &addrs, len);
        self.scratch = addrs;
    }

    /// Before a global store or atomic of warp `w` (`inst` at `pc`) writes `len` bytes at each of
    /// `addrs` (one for each lane of `exec`): what a release publishes, a release sequence ended,
    /// and the write of each watched word (an atomic first reads it: a value an earlier product
    /// left there is a finding).
    pub fn seen_write(&mut self, inst: &Inst, pc: u32, (w, exec): (u32, u32), addrs: &[u64], len: usize) {
        let launch = self.launch;
        let Some(wg) = launch.watching.as_ref() else { return };
        let sem = wg.sems[pc as usize];
        let atomic = matches!(inst.op, Op::Atom { .. });
        let watched = addrs.iter().any(|&a| wg.watch.buffer(a).is_some());
        if !sem.strong && !watched {
            return;
        }
        let slot = self.slot;
        let epoch = self.clocks[slot][slot];
        let publish = match sem {
            s if s.release => Some(self.published()),
            s if s.strong => self.seen.warps[slot].fenced.clone(),
            _ => None,
        };
        if publish.is_some() || (watched && !atomic) {
            let mut syncs = wg.watch.syncs.lock().expect("no worker panics holding it");
            for &a in addrs {
                match (&publish, atomic) {
                    // A read-modify-write continues the release sequence it reads.
                    (Some(p), true) => merge(syncs.entry(a).or_default(), p),
                    (Some(p), false) => {
                        syncs.insert(a, p.clone());
                    }
                    (None, _) => {
                        syncs.remove(&a);
                    }
                }
            }
            if publish.is_some() {
                wg.watch.any_sync.store(true, Ordering::Relaxed);
            }
        }
        if sem.release {
            self.clocks[slot][slot] += 1;
        }
        if atomic || sem.strong {
            self.seen.warps[slot].sync = Some((pc, sem.acquire));
        }
        if !watched {
            return;
        }
        let word = WordWrite {
            launch: wg.launch,
            cluster: self.seen.cluster,
            epoch,
            line: inst.line,
            slot: slot as u16,
            file: inst.file as u16,
            strong: sem.strong,
            atomic,
        };
        for (l, &a) in Lanes(exec).zip(addrs) {
            let Some(b) = wg.watch.buffer(a) else { continue };
            let mut words = b.words.lock().expect("no worker panics holding it");
            for i in span(a, len, words.len()) {
                if atomic {
                    self.left_behind(wg, (b, &words[i], i), (inst, w, l), self.word_value(a, i));
                }
                words[i] = word;
            }
        }
    }

    /// After a global load or atomic of warp `w` (`inst` at `pc`) read `len` bytes at each of
    /// `addrs`: what an acquire takes; for a load, each watched word it read must have been
    /// stored in an order the model gives (else a fault), and not left by an earlier product.
    pub fn seen_read(
        &mut self,
        inst: &Inst,
        pc: u32,
        (w, exec): (u32, u32),
        addrs: &[u64],
        len: usize,
    ) -> Result<(), Fault> {
        let launch = self.launch;
        let Some(wg) = launch.watching.as_ref() else { return Ok(()) };
        let sem = wg.sems[pc as usize];
        let slot = self.slot;
        if sem.strong {
            if wg.watch.any_sync.load(Ordering::Relaxed) {
                let mut got = Known::new();
                let syncs = wg.watch.syncs.lock().expect("no worker panics holding it");
                for a in addrs {
                    if let Some(k) = syncs.get(a) {
                        merge(&mut got, k);
                    }
                }
                drop(syncs);
                let seen = &mut self.seen.warps[slot];
                merge(if sem.acquire { &mut seen.known } else { &mut seen.pending }, &got);
            }
            self.seen.warps[slot].sync = Some((pc, sem.acquire));
        }
        if matches!(inst.op, Op::Atom { .. }) {
            return Ok(());
        }
        for (l, &a) in Lanes(exec).zip(addrs) {
            let Some(b) = wg.watch.buffer(a) else { continue };
            let words = b.words.lock().expect("no worker panics holding it");
            for i in span(a, len, words.len()) {
                let word = words[i];
                if word.launch != wg.launch {
                    self.left_behind(wg, (b, &word, i), (inst, w, l), self.word_value(a, i));
                } else if !(sem.strong && word.strong || self.stored_before(&word)) {
                    return Err(self.unordered(wg, (b, &word, i), (inst, w, l)));
                }
            }
        }
        Ok(())
    }

    /// Whether the running warp knows of the store `word` of this launch.
    fn stored_before(&self, word: &WordWrite) -> bool {
        let (slot, s) = (self.slot, word.slot as usize);
        (word.cluster == self.seen.cluster && (s == slot || self.clocks[slot][s] >= word.epoch))
            || covers(&self.seen.warps[slot].known, word.cluster, u32::from(word.slot), word.epoch)
    }

    /// The value of word `i` of the buffer at whose word `a` lies (for a message).
    fn word_value(&self, a: u64, i: usize) -> u32 {
        let base = a & !((1 << crate::memory::BUFFER_SHIFT) - 1);
        self.global.place(base + 4 * i as u64, 4).map_or(0, |p| self.global.load(p, 4) as u32)
    }

    /// A read by lane `l` of warp `w` of word `i` of workspace `b`, last written by `word`, which
    /// holds `value`: a non-zero value an earlier product left there is a finding.
    fn left_behind(
        &self,
        wg: &Watching,
        (b, word, i): (&Watched, &WordWrite, usize),
        (inst, w, l): (&Inst, u32, usize),
        value: u32,
    ) {
        if word.launch == 0 || value == 0 {
            return;
        }
        let (product, at) = wg.watch.past(word.launch, word.file, word.line);
        if product >= wg.product {
            return;
        }
        let shown = match inst.opcode.ends_with(".f32") {
            true => format!("{}", f32::from_bits(value)),
            false => format!("{value}"),
        };
        let how = if word.atomic { "atomic" } else { "store" };
        wg.watch.found(format!(
            "in launch {} of the product, {} reads {shown} from word {i} of the workspace `{}` at {}, which launch {product} left there with the {how} at {at} and nothing set back to zero: a workspace the host zeroes once must be left zeroed by every launch",
            wg.product,
            self.who(w, l),
            b.name,
            self.at(inst)
        ));
    }

    /// The fault of a load by lane `l` of warp `w` of word `i` of workspace `b`, stored by
    /// `word` in this launch with nothing to order the store before the load.
    fn unordered(
        &self,
        wg: &Watching,
        (b, word, i): (&Watched, &WordWrite, usize),
        (inst, w, l): (&Inst, u32, usize),
    ) -> Fault {
        let warps = self.warps.len() / self.ctas.len();
        let block = self.launch.ctaid(u64::from(word.cluster), word.slot as usize / warps);
        let (_, stored) = wg.watch.past(word.launch, word.file, word.line);
        let sync =
            self.seen.warps[self.slot].sync.map(|(pc, acquired)| (&self.k.insts[pc as usize], acquired));
        let why = match sync {
            Some((s, false)) => format!(
                ", because the {} at {} is relaxed (the storing side needs a release after the barrier that gathers its group's stores, and this side an acquire that reads what the release wrote)",
                kind(s),
                self.at(s)
            ),
            Some((s, _)) => format!(
                ", since this side's {} at {} reads no release of it (the storing side needs a release, .release or .acq_rel, after the barrier that gathers its group's stores)",
                kind(s),
                self.at(s)
            ),
            None => " (a release on the storing side, after the barrier that gathers its group's stores, and an acquire on this side that reads what the release wrote, are needed)".to_owned(),
        };
        self.fault(
            FaultKind::Race,
            format!(
                "global-memory race: {} loads word {i} of the workspace `{}` at {}, which warp {} of block ({},{},{}) stored at {stored}, and nothing orders that store before this load{why}",
                self.who(w, l),
                b.name,
                self.at(inst),
                word.slot as usize % warps,
                block[0],
                block[1],
                block[2]
            ),
        )
    }
}

/// The words of a watched buffer of `words` words that `len` bytes at `a` touch.
fn span(a: u64, len: usize, words: usize) -> std::ops::Range<usize> {
    let at = (a & ((1 << crate::memory::BUFFER_SHIFT) - 1)) as usize;
    let end = (at + len).div_ceil(4).min(words);
    (at / 4).min(end)..end
}

/// What a synchronising access is, for a message.
fn kind(inst: &Inst) -> &'static str {
    match inst.op {
        Op::Atom { .. } if inst.opcode.starts_with("red") => "reduction",
        Op::Atom { .. } => "atomic",
        Op::Ld { .. } => "load",
        Op::St { .. } => "store",
        _ => "fence",
    }
}

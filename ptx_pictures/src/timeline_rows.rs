//! The timeline's rows: for each role and each round, what it did in the order it did it, as a
//! few items (a buffer filled, a buffer landed, a buffer consumed, a wait, the stores), ready to be
//! drawn.

use ptx_emulator::recording::timeline::{ENGINE, PEER, Timeline, TimelineEvent, What};

/// What an item is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ItemKind {
    /// mbarriers initialised (`count`).
    Init,
    /// The producer issued the copies of a buffer (`count`: boxes).
    CopyFill,
    /// The copy engine landed a buffer's copies (`count`: boxes).
    Land,
    /// Consumers ran wgmma on a buffer (`count`: wgmma instructions, a warp's share each).
    Consume,
    /// An arrival on `empty[s]` outside a buffer's wgmma (a consumer that frees a buffer later).
    Arrive,
    /// The role found the phase of `full[s]` or `empty[s]` (`buffer`, `on_full`) not complete,
    /// and waits there for the rest of the round.
    Blocked { on_full: bool },
    /// Stores to global memory (`count`: bytes).
    Store,
}

/// One thing a role did in a round.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowItem {
    pub kind: ItemKind,
    /// The pipeline buffer it filled, landed, read, freed or waited for (`s` of `full[s]`).
    pub buffer: Option<usize>,
    pub count: u64,
    pub commits: u32,
    pub waits: u32,
    pub arrivals: u32,
    /// The item completed a phase of `full[s]` or of `empty[s]`.
    pub full_done: bool,
    pub empty_done: bool,
}

impl RowItem {
    fn new(kind: ItemKind, buffer: Option<usize>, count: u64) -> RowItem {
        RowItem {
            kind,
            buffer,
            count,
            commits: 0,
            waits: 0,
            arrivals: 0,
            full_done: false,
            empty_done: false,
        }
    }

    /// The same kind of work on the same buffer, from another warp of the role.
    fn merge(&mut self, other: &RowItem) {
        self.count += other.count;
        self.commits += other.commits;
        self.waits += other.waits;
        self.arrivals += other.arrivals;
        self.full_done |= other.full_done;
        self.empty_done |= other.empty_done;
    }
}

/// A role and its items, round by round.
#[derive(Clone, Debug, PartialEq)]
pub struct RoleRow {
    pub label: String,
    pub rounds: Vec<Vec<RowItem>>,
}

/// The rows of rounds `from..to`: the producer, the copy engine, each consumer warpgroup, and
/// the stores (where the block stores).
pub(super) fn rows(t: &Timeline, from: u32, to: u32) -> Vec<RoleRow> {
    let n = (to - from) as usize;
    let empty_rounds = || vec![Vec::new(); n];
    let producers = t.producers();
    let list = |w: &[u32]| w.iter().map(|w| w.to_string()).collect::<Vec<_>>().join(", ");
    let mut rows = Vec::new();
    let label = if producers.len() == 1 { "producer, warp" } else { "producer, warps" };
    let bars = Bars::of(t);
    rows.push(role(t, format!("{label} {}", list(&producers)), &producers, (from, to), &bars));
    rows.push(role(t, "copy engine".to_owned(), &[ENGINE], (from, to), &bars));
    for g in t.consumers() {
        let warps: Vec<u32> = (4 * g..4 * g + 4).collect();
        rows.push(role(t, format!("consumers, warpgroup {g}"), &warps, (from, to), &bars));
    }
    if t.events.iter().any(|e| e.who == PEER) {
        rows.push(role(t, "the cluster's other blocks".to_owned(), &[PEER], (from, to), &bars));
    }
    let stored = t.store_buffers();
    if !stored.is_empty() {
        let mut stores =
            RoleRow { label: format!("stores to {}", stored.join(", ")), rounds: empty_rounds() };
        for e in t.events.iter().filter(|e| (from..to).contains(&e.round)) {
            if let What::Store { bytes, .. } = e.what {
                let items = &mut stores.rounds[(e.round - from) as usize];
                match items.first_mut() {
                    Some(item) => item.count += u64::from(bytes),
                    None => items.push(RowItem::new(ItemKind::Store, None, u64::from(bytes))),
                }
            }
        }
        rows.push(stores);
    }
    rows
}

/// A role's row: each warp's items, merged place by place (the warps of a warpgroup run the
/// same code, one after another within a round).
fn role(t: &Timeline, label: String, warps: &[u32], (from, to): (u32, u32), bars: &Bars) -> RoleRow {
    let mut rounds = vec![Vec::<RowItem>::new(); (to - from) as usize];
    for &w in warps {
        let mut by_round: Vec<Vec<&TimelineEvent>> = vec![Vec::new(); (to - from) as usize];
        for e in t.events.iter().filter(|e| e.who == w && (from..to).contains(&e.round)) {
            by_round[(e.round - from) as usize].push(e);
        }
        for (merged, events) in rounds.iter_mut().zip(by_round) {
            let items = bars.items(events.into_iter());
            for (i, item) in items.into_iter().enumerate() {
                // Other blocks' threads are one row: their work merged by buffer.
                let at =
                    if w == PEER { merged.iter().position(|m| m.buffer == item.buffer) } else { Some(i) };
                match at.and_then(|i| merged.get_mut(i)) {
                    Some(m) if m.kind == item.kind && m.buffer == item.buffer => m.merge(&item),
                    Some(_) => {}
                    None => merged.push(item),
                }
            }
        }
    }
    RoleRow { label, rounds }
}

/// The mbarriers by their use, and the buffers' places in shared memory, found once.
pub(super) struct Bars {
    full: Vec<usize>,
    empty: Vec<usize>,
    /// Shared memory each buffer's copies land in (this block's and its peers'): from, to, buffer.
    places: Vec<(usize, usize, usize)>,
}

impl Bars {
    pub(super) fn of(t: &Timeline) -> Bars {
        let full = t.full_bars();
        let mut places: Vec<(usize, usize, usize)> = Vec::new();
        for e in &t.events {
            if let What::Land { bar, dst, bytes } = e.what
                && let Some(s) = full.iter().position(|&b| b == bar)
                && !places.iter().any(|p| p.0 == dst)
            {
                places.push((dst, dst + bytes as usize, s));
            }
        }
        Bars { full, empty: t.empty_bars(), places }
    }

    /// The buffer whose copies write shared byte `at`.
    pub(super) fn buffer_of_shared(&self, at: usize) -> Option<usize> {
        self.places.iter().find(|p| (p.0..p.1).contains(&at)).map(|p| p.2)
    }

    /// One warp's (or the copy engine's) events of one round as items.
    fn items<'e>(&self, events: impl Iterator<Item = &'e TimelineEvent>) -> Vec<RowItem> {
        let (full, empty) = (&self.full, &self.empty);
        let buffer_in = |bars: &[usize], bar: usize| bars.iter().position(|&b| b == bar);
        let mut items: Vec<RowItem> = Vec::new();
        for e in events {
            let last = items.last_mut();
            match e.what {
                What::Issue { bar, .. } | What::Land { bar, .. } => {
                    let kind = if matches!(e.what, What::Issue { .. }) {
                        ItemKind::CopyFill
                    } else {
                        ItemKind::Land
                    };
                    let buffer = buffer_in(full, bar);
                    match last {
                        Some(l) if l.kind == kind && l.buffer == buffer && !l.full_done => l.count += 1,
                        _ => items.push(RowItem::new(kind, buffer, 1)),
                    }
                }
                What::Wgmma { b, .. } => {
                    let buffer = self.buffer_of_shared(b);
                    match last {
                        Some(l) if l.kind == ItemKind::Consume && l.buffer == buffer && l.arrivals == 0 => {
                            l.count += 1
                        }
                        _ => items.push(RowItem::new(ItemKind::Consume, buffer, 1)),
                    }
                }
                What::Commit | What::WaitGroup { .. } => {
                    if let Some(l) = last.filter(|l| l.kind == ItemKind::Consume) {
                        match e.what {
                            What::Commit => l.commits += 1,
                            _ => l.waits += 1,
                        }
                    }
                }
                What::Arrive { bar, .. } if empty.contains(&bar) => {
                    let buffer = buffer_in(empty, bar);
                    match last {
                        Some(l) if l.kind == ItemKind::Consume && l.buffer == buffer && l.arrivals == 0 => {
                            l.arrivals = 1
                        }
                        Some(l) if l.kind == ItemKind::Arrive && l.buffer == buffer && !l.empty_done => {
                            l.arrivals += 1
                        }
                        _ => {
                            let mut item = RowItem::new(ItemKind::Arrive, buffer, 0);
                            item.arrivals = 1;
                            items.push(item);
                        }
                    }
                }
                What::Phase { bar, .. } => {
                    let (on_full, buffer) = match buffer_in(full, bar) {
                        Some(s) => (true, Some(s)),
                        None => (false, buffer_in(empty, bar)),
                    };
                    if let (Some(l), Some(_)) = (last, buffer) {
                        l.full_done |= on_full;
                        l.empty_done |= !on_full;
                    }
                }
                What::Init { .. } => match last {
                    Some(l) if l.kind == ItemKind::Init => l.count += 1,
                    _ => items.push(RowItem::new(ItemKind::Init, None, 1)),
                },
                What::Blocked { bar, .. } => {
                    let on_full = full.contains(&bar);
                    let buffer = buffer_in(full, bar).or(buffer_in(empty, bar));
                    items.push(RowItem::new(ItemKind::Blocked { on_full }, buffer, 0));
                }
                _ => {}
            }
        }
        items
    }
}

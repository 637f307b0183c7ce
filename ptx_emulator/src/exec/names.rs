//! How a fault's sentence names what the kernel names: an mbarrier as the source calls it
//! (`full[2]`, from a static `__shared__` array, or from the argument of the call that
//! initialised it, for barriers a kernel reaches through pointers into its dynamic shared memory),
//! and a block of the cluster other than the one whose thread the sentence is about. Computed
//! only when a sentence is made.

use super::state::{Cluster, Mbar};
use crate::inst::Inst;
use crate::{Fault, FaultKind};

impl Cluster<'_> {
    /// A warp that arrives on an mbarrier a second time in one phase, its count already reached:
    /// it went round its loop before the phase completed, so it fills a buffer again before the
    /// consumers freed it. Names the wait on the partner barrier that is missing (`empty[0]`
    /// beside `full[0]`), where the block has one.
    pub(super) fn refill_before_freed(
        &self,
        inst: &Inst,
        warp: u32,
        l: usize,
        place: (usize, usize),
        m: &Mbar,
    ) -> Fault {
        let missing = match self.partner_mbar(place.0, place.1) {
            Some(partner) => format!("skipping its wait on {partner}"),
            None => "waiting for nothing between its two arrivals".to_owned(),
        };
        self.fault(
            FaultKind::Barrier,
            format!(
                "{} arrives on {} at {} a second time in its phase {}, before that phase completed (its count of {}, \
                 set at the mbarrier.init at {}, already reached): it fills the buffer again before the buffer is \
                 freed, {missing}",
                self.who(warp, l),
                self.mbar_name(place.0, place.1),
                self.at(inst),
                m.phase,
                m.expected,
                self.at(&self.k.insts[m.init_pc as usize]),
            ),
        )
    }

    /// A `cp.async` that overwrites a word another warp reads in the same epoch: the buffer's
    /// last reads and the copy into it have no barrier between them. `inst` (by lane `l` of warp
    /// `w`) is the copy where `copying`, and `other` (a thread and instruction) the read before
    /// it; otherwise `inst` is a read and `other` the copy in flight.
    pub(super) fn overwrite(
        &self,
        inst: &Inst,
        (w, l): (u32, usize),
        word: usize,
        other: (u32, u32),
        copying: bool,
    ) -> Fault {
        let place = self.shared_place(word * 4);
        let me = (self.who(w, l), self.at(inst));
        let them =
            (self.who(other.0 / 32, (other.0 % 32) as usize), self.at(&self.k.insts[other.1 as usize]));
        let ((copier, copy_at), (reader, read_at), reads) =
            if copying { (me, them, "read") } else { (them, me, "still reads") };
        self.fault(
            FaultKind::Race,
            format!(
                "shared-memory race: the cp.async of {copier} at {copy_at} overwrites {place}, which {reader} \
                 {reads} at {read_at}, with no barrier between the last reads of the buffer and the copy into it"
            ),
        )
    }

    /// The mbarrier at byte `at` of block `rank`, as the kernel names it: "the mbarrier `full[2]`"
    /// (of another block: "… of block (1,0,0), rank 1 of this cluster"), or by its byte where the
    /// source does not say.
    pub fn mbar_name(&self, rank: usize, at: usize) -> String {
        self.mbar_name_from(self.rank, rank, at)
    }

    /// The same, for a sentence about a thread of block `from`.
    pub fn mbar_name_from(&self, from: usize, rank: usize, at: usize) -> String {
        let name = match self.static_mbar(at).or_else(|| self.initialised_as(rank, at)) {
            Some(n) => format!("the mbarrier `{n}`"),
            None => format!("the mbarrier at {}", self.shared_place(at)),
        };
        format!("{name}{}", self.peer_block_from(from, rank))
    }

    /// Nothing for the running block; for another block of the cluster, ` of block (x,y,z), rank
    /// r of this cluster`.
    pub fn peer_block(&self, rank: usize) -> String {
        self.peer_block_from(self.rank, rank)
    }

    fn peer_block_from(&self, from: usize, rank: usize) -> String {
        match self.ctas.get(rank) {
            Some(cta) if rank != from => {
                let c = cta.ctaid;
                format!(" of block ({},{},{}), rank {rank} of this cluster", c[0], c[1], c[2])
            }
            _ => String::new(),
        }
    }

    /// An mbarrier in a static shared array: `name[i]` (`name` alone for a single one).
    fn static_mbar(&self, at: usize) -> Option<String> {
        let v = self.k.shared_vars.iter().rev().find(|v| at >= v.start && at < v.end)?;
        if at >= self.k.dynamic_at && self.k.dynamic_at > v.start {
            return None;
        }
        Some(if v.end - v.start <= 8 {
            v.name.clone()
        } else {
            format!("{}[{}]", v.name, (at - v.start) / 8)
        })
    }

    /// An mbarrier named by the first argument of the call that initialised it (`mbar_init(&full[s],
    /// 1)`: `full`), indexed from the lowest barrier initialised under that name, 8 bytes apart.
    fn initialised_as(&self, rank: usize, at: usize) -> Option<String> {
        let mbars = &self.ctas.get(rank)?.mbars;
        let (base, bare) = self.init_argument(mbars.get(&at)?.init_pc)?;
        let mut same = mbars
            .iter()
            .filter(|(_, m)| self.init_argument(m.init_pc).is_some_and(|(b, _)| b == base))
            .map(|(a, _)| *a);
        let lowest = same.clone().min()?;
        if bare && same.all(|a| a == at) {
            return Some(base);
        }
        Some(format!("{base}[{}]", (at - lowest) / 8))
    }

    /// The array an mbarrier belongs to, named by the first argument of its init (`empty` for
    /// `mbar_init(&empty[s], 1)`); None where the source does not say.
    pub(super) fn mbar_array(&self, (rank, at): (usize, usize)) -> Option<String> {
        let m = self.ctas.get(rank)?.mbars.get(&at)?;
        self.init_argument(m.init_pc).map(|(base, _)| base)
    }

    /// The mbarrier at the same index of the block's one other array of mbarriers, named by their
    /// inits (`empty[0]` beside `full[0]`): the barrier that says a buffer was freed, beside the
    /// one that says it was filled. None where the block initialised no other array, or several.
    pub(super) fn partner_mbar(&self, rank: usize, at: usize) -> Option<String> {
        let mbars = &self.ctas.get(rank)?.mbars;
        let base_of = |a: &usize| mbars.get(a).and_then(|m| self.init_argument(m.init_pc)).map(|(b, _)| b);
        let lowest =
            |name: &str| mbars.keys().filter(|a| base_of(a).is_some_and(|b| b == name)).min().copied();
        let base = base_of(&at)?;
        let index = (at - lowest(&base)?) / 8;
        let mut others: Vec<String> = mbars.keys().filter_map(base_of).filter(|b| *b != base).collect();
        others.sort();
        others.dedup();
        let [other] = &others[..] else { return None };
        let partner = lowest(other)? + 8 * index;
        mbars.contains_key(&partner).then(|| format!("the mbarrier `{other}[{index}]`"))
    }

    /// The variable the first argument of an inlined call names, and whether the argument is the
    /// variable alone (no index, no offset).
    fn init_argument(&self, pc: u32) -> Option<(String, bool)> {
        let (file, line, column) = self.k.call_site(self.k.insts.get(pc as usize)?)?;
        let line = self.k.sources.get(&file)?.get(line.checked_sub(1)? as usize)?;
        let from = line.char_indices().nth(column.saturating_sub(1) as usize).map_or(0, |(i, _)| i);
        call_argument(&line[from..])
    }
}

/// The variable named by the first argument of the call at the start of `text`: `mbar_init(&full[s],
/// 1)` gives `full`, `init(smem(bar + 2), 1)` gives `bar`; with whether the argument is the bare
/// variable.
pub fn call_argument(text: &str) -> Option<(String, bool)> {
    let open = text.find('(')?;
    let arg = first_argument(&text[open + 1..])?;
    let arg = arg.trim().trim_start_matches('&').trim_start();
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '.';
    let len = arg.find(|c: char| !ident(c)).unwrap_or(arg.len());
    let (name, rest) = arg.split_at(len);
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    if rest.trim_start().starts_with('(') {
        // A call around the barrier's address (`smem(&full[s])`): its own first argument.
        return call_argument(arg);
    }
    Some((name.to_owned(), rest.trim().is_empty()))
}

/// The text up to the first comma or closing parenthesis outside brackets.
fn first_argument(text: &str) -> Option<&str> {
    let mut depth = 0i32;
    for (i, c) in text.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' if depth > 0 => depth -= 1,
            ')' | ',' if depth == 0 => return Some(&text[..i]),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::call_argument;

    #[test]
    fn the_barrier_is_the_calls_first_argument() {
        let arg = |t: &str| call_argument(t).map(|(n, bare)| format!("{n} {bare}"));
        assert_eq!(arg("mbar_init(&full[s], 1);"), Some("full false".into()));
        assert_eq!(arg("mbar_init(&empty[(it + 1) % S], 4 * C)"), Some("empty false".into()));
        assert_eq!(arg("mbar_init(bar, 1)"), Some("bar true".into()));
        assert_eq!(arg("mbar_init(turn + me, 1)"), Some("turn false".into()));
        assert_eq!(arg("init(smem(&s.full[2]), 1)"), Some("s.full false".into()));
        assert_eq!(arg("mbar_init(0, 1)"), None);
        assert_eq!(arg("no call here"), None);
    }
}

//! The ring's schedule, with no GPU in it: which shard of A each rank multiplies in each round,
//! which buffer holds it, and where the next one lands.
//!
//! G ranks stand in a ring. Rank r starts with shard r of A (its own rows) and B's column block r.
//! In round t it multiplies the shard it holds while passing that shard on to rank r + 1 and
//! taking the next one from rank r − 1; after G rounds every rank has multiplied every shard
//! once, and holds its whole column block of C.

/// Where a rank keeps the shard it multiplies in a round: its own, or one of two landing buffers
/// the exchange writes into, used in turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShardBuffer {
    Own,
    Landing(usize),
}

/// A ring of `ranks` ranks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ring {
    pub ranks: usize,
}

// ANCHOR: ring
impl Ring {
    /// The rank a rank sends to.
    pub fn next(&self, rank: usize) -> usize {
        (rank + 1) % self.ranks
    }

    /// The rank a rank receives from.
    pub fn prev(&self, rank: usize) -> usize {
        (rank + self.ranks - 1) % self.ranks
    }

    /// The shard of A that `rank` multiplies in `round`: the one that set out from `round`
    /// places behind it, having passed one rank a round.
    pub fn shard(&self, rank: usize, round: usize) -> usize {
        (rank + self.ranks - round % self.ranks) % self.ranks
    }

    /// The buffer that holds that shard: the rank's own in round 0, then the landing buffers in
    /// turn.
    pub fn buffer(&self, round: usize) -> ShardBuffer {
        match round {
            0 => ShardBuffer::Own,
            t => ShardBuffer::Landing((t - 1) % 2),
        }
    }

    /// Where the shard for round `round + 1` lands during `round`: the landing buffer that round
    /// `round - 1` read (so the exchange waits for that round's product); none in the last round.
    pub fn landing(&self, round: usize) -> Option<usize> {
        (round + 1 < self.ranks).then_some(round % 2)
    }

    /// The round whose product must end before the exchange of `round` may overwrite its
    /// landing buffer: the last one that read it.
    pub fn reader_before(&self, round: usize) -> Option<usize> {
        (round >= 2).then(|| round - 1)
    }
}
// ANCHOR_END: ring

#[cfg(test)]
mod tests {
    use super::*;

    /// Where the schedule `shard` (which shard a rank multiplies in a round) goes wrong on `ring`:
    /// a rank that multiplies a shard twice or not its own first, or a shard that does not follow
    /// the sends (what a rank holds in round t + 1 is what the rank before it held in round t).
    fn fault(ring: Ring, shard: impl Fn(usize, usize) -> usize) -> Option<String> {
        for rank in 0..ring.ranks {
            if shard(rank, 0) != rank {
                return Some(format!("rank {rank} does not start with its own shard"));
            }
            let mut seen = vec![false; ring.ranks];
            for round in 0..ring.ranks {
                let s = shard(rank, round);
                if std::mem::replace(&mut seen[s], true) {
                    return Some(format!("rank {rank} multiplies shard {s} twice"));
                }
                if round + 1 < ring.ranks && shard(rank, round + 1) != shard(ring.prev(rank), round) {
                    return Some(format!("rank {rank}'s shard in round {} was not sent to it", round + 1));
                }
            }
        }
        None
    }

    /// Every rank multiplies every shard exactly once, each the one sent to it; and no round
    /// writes the buffer it reads or the one still being read.
    #[test]
    fn every_rank_multiplies_every_shard_once_and_no_buffer_is_overwritten_in_use() {
        for ranks in 1..=9 {
            let ring = Ring { ranks };
            assert_eq!(fault(ring, |r, t| ring.shard(r, t)), None, "{ranks} ranks");
            for round in 0..ranks {
                match ring.landing(round) {
                    Some(landing) => {
                        // The landing buffer is not the one this round reads, but the next.
                        assert_ne!(ring.buffer(round), ShardBuffer::Landing(landing));
                        assert_eq!(ring.buffer(round + 1), ShardBuffer::Landing(landing));
                        // The exchange waits for the last round that read it.
                        let readers: Vec<usize> = (0..=round)
                            .filter(|&t| ring.buffer(t) == ShardBuffer::Landing(landing))
                            .collect();
                        assert_eq!(ring.reader_before(round), readers.last().copied());
                    }
                    None => assert_eq!(round + 1, ranks, "only the last round passes nothing on"),
                }
            }
        }
    }

    /// The faults the check exists for: a schedule that turns against the sends, one that skips a
    /// rank each round, one that keeps its own shard a second round, and one that starts with
    /// another rank's shard are each caught.
    #[test]
    fn schedules_that_do_not_follow_the_sends_are_caught() {
        let ring = Ring { ranks: 4 };
        // `steps` ranks along the sends from `r`: built from the ring's own `next`, so that the
        // faults stay faults whichever way the ring turns.
        let along = |r: usize, steps: usize| (0..steps).fold(r, |x, _| ring.next(x));
        assert!(fault(ring, along).is_some_and(|f| f.contains("was not sent")));
        assert!(fault(ring, |r, t| along(r, 2 * t)).is_some());
        assert!(fault(ring, |r, t| if t == 1 { r } else { ring.shard(r, t) }).is_some());
        assert!(fault(ring, |r, t| ring.shard(ring.next(r), t)).is_some_and(|f| f.contains("its own")));
    }
}

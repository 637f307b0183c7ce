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
pub enum Buffer {
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
    pub fn buffer(&self, round: usize) -> Buffer {
        match round {
            0 => Buffer::Own,
            t => Buffer::Landing((t - 1) % 2),
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

    /// Every rank multiplies every shard exactly once; what a rank holds in round t + 1 is what
    /// its neighbour behind held in round t; and no round writes the buffer it reads or the one
    /// still being read.
    #[test]
    fn every_rank_multiplies_every_shard_once_and_no_buffer_is_overwritten_in_use() {
        for ranks in 1..=9 {
            let ring = Ring { ranks };
            for rank in 0..ranks {
                let mut seen = vec![false; ranks];
                for round in 0..ranks {
                    let shard = ring.shard(rank, round);
                    assert!(!seen[shard], "rank {rank} of {ranks} multiplies shard {shard} twice");
                    seen[shard] = true;
                    if round + 1 < ranks {
                        assert_eq!(ring.shard(rank, round + 1), ring.shard(ring.prev(rank), round));
                        let landing = ring.landing(round).expect("a round before the last passes a shard on");
                        // The landing buffer is neither the one this round reads…
                        assert_ne!(ring.buffer(round), Buffer::Landing(landing));
                        // …nor one a later round reads before the shard arrives in it.
                        assert_eq!(ring.buffer(round + 1), Buffer::Landing(landing));
                        // The last round that read it is the one the exchange waits for.
                        let readers: Vec<usize> =
                            (0..=round).filter(|&t| ring.buffer(t) == Buffer::Landing(landing)).collect();
                        assert_eq!(ring.reader_before(round), readers.last().copied());
                    } else {
                        assert_eq!(ring.landing(round), None);
                    }
                }
                assert_eq!(ring.shard(rank, 0), rank, "a rank starts with its own shard");
            }
        }
    }

    /// A planted fault the test above exists for: a ring that sends the wrong way round is
    /// caught.
    #[test]
    fn a_ring_that_turns_the_wrong_way_is_caught() {
        let ring = Ring { ranks: 4 };
        let wrong = |rank: usize, round: usize| (rank + round) % 4;
        let caught = (0..4).any(|rank| (0..3).any(|t| wrong(rank, t + 1) != ring.shard(ring.prev(rank), t)));
        assert!(caught);
        assert_eq!(Ring { ranks: 4 }.next(3), 0);
        assert_eq!(Ring { ranks: 4 }.prev(0), 3);
    }
}

//! The model behind step 10's rule: how long each way of cutting a product would take, from a
//! few times measured once per GPU (the calibration, `cargo run --release -p step10_any_shape
//! --bin calibrate`).
//!
//! A kernel runs its blocks on the SMs in rounds. Each block computes a fixed piece of C (a tile,
//! 128 columns of a few rows, up to 2048 rows of a few columns, or 64×128 of a short K) over `d`
//! entries of K, and takes
//! `fixed + per_k·d` microseconds: one line measured with one block alone on each SM, and one with
//! each SM full (as many blocks at once as it holds), where they share its pipes and the memory.
//! The busiest SM gets ⌈blocks / SMs⌉ blocks; whole rounds take the full line's time, and a last
//! round of fewer blocks a time between the two lines. The lines are measured with the operands in
//! the L2 cache (as back-to-back runs of a small product find them); a product is also no faster
//! than its bytes from the L2 cache (where they fit in half of it) or from memory. A block keeps a
//! few loads in flight, so the blocks at once get their number times one block's rate, up to the
//! rate of the source with every SM full (Little's law): both measured for the short side's
//! kernels, which are bound by memory; a tile's block is taken to get its slot's share. The flat
//! tile, whose products can be bound by memory, also has a round's line measured with B in memory.
//! Every launch costs at least the shortest kernel's time. A split adds `sum_slices` or, for a
//! small C, `sum_few` (a launch and its bytes). Where rows are not 16-byte multiples the tiles
//! either pad them (the copies, at the copy kernel's own measured rate or its blocks' turns down
//! their rows, whichever is longer, then the 16-byte lines) or
//! read them as they are (the lines measured so, 4-byte loads). The rule ([`choose`]) takes the
//! cut with the least predicted time.

use std::fmt::Write as _;

use common::Shape;
use common::step::Choice;

use crate::calibration::{Calibration, Costs, Line, calibration};
use crate::tiles::{Cut, FLAT, SHORT, SHORT_COLS, TILES, Way, cuts, few_cols_lanes, few_rows_lanes};

impl Calibration {
    /// The block costs of `way` at `r` short rows or columns (a line between 1 and [`SHORT`] rows
    /// or [`SHORT_COLS`] columns);
    /// for a tile, with 16-byte loads (`aligned`) or 4-byte ones; for few columns, on short rows
    /// (`short_rows`: a block's share of K 64 or less) or long ones.
    pub fn costs(&self, way: Way, r: usize, aligned: bool, short_rows: bool) -> Costs {
        let f = toward_short(way, r);
        let lerp = |[a, b]: [Costs; 2]| {
            let mix = |x: Line, y: Line| Line {
                fixed: x.fixed + f * (y.fixed - x.fixed),
                per_k: x.per_k + f * (y.per_k - x.per_k),
            };
            Costs { one: mix(a.one, b.one), full: mix(a.full, b.full) }
        };
        match way {
            Way::Tile(t) => {
                let at = TILES.iter().position(|&x| x == t).expect("a tile of TILES");
                if aligned { self.tiles[at] } else { self.tiles_unaligned[at] }
            }
            Way::FewRows => lerp(self.few_rows),
            Way::FewCols if short_rows => lerp(self.few_cols_short),
            Way::FewCols => lerp(self.few_cols),
            Way::ShortK => self.short_k,
        }
    }

    // ANCHOR: rate
    /// Bytes per microsecond that `way` (at `r` short rows or columns) gets with `resident` blocks
    /// at once, moving `bytes` in all: from the L2 cache where they fit in half of it (back-to-back
    /// runs keep them there), else from memory. Each block brings its own rate (the short side's
    /// kernels measured it; a tile's block gets its slot's share of the full rate), up to the full
    /// rate, measured with every SM full. The two blend (below) for the tiles and short K too, so
    /// their blocks in every slot get 2^-¼ of the full rate, not all of it: an inconsistency.
    pub fn rate(&self, way: Way, r: usize, short_rows: bool, bytes: f64, resident: u64, sms: u32) -> f64 {
        let in_l2 = bytes <= self.l2_bytes / 2.0;
        let f = toward_short(way, r);
        let lerp = |[a, b]: [f64; 2]| a + f * (b - a);
        let full = match way {
            _ if in_l2 => self.l2_bytes_per_us,
            Way::Tile(_) => self.bytes_per_us,
            Way::FewRows => lerp(self.few_rows_memory),
            Way::FewCols if short_rows => lerp(self.few_cols_short_memory),
            Way::FewCols => lerp(self.few_cols_memory),
            Way::ShortK => self.short_k_memory,
        };
        // A block's own rate was measured for the short sides on long rows; few columns on short
        // rows, a tile's block and short K's get their slot's share.
        let block = match way {
            Way::FewRows => lerp(self.few_rows_block.map(|x| x.of(in_l2))),
            Way::FewCols if !short_rows => lerp(self.few_cols_block.map(|x| x.of(in_l2))),
            Way::Tile(_) | Way::FewCols | Way::ShortK => {
                full / (f64::from(sms) * f64::from(way.per_sm())).max(1.0)
            }
        };
        // The two limits blend where they meet: the time is the 4-norm of the blocks' time and
        // the full rate's. (A plain minimum would give 66 blocks of few rows at one row 2.8 TB/s
        // from memory, where they drew 2.35. The exponent is from the development measurements of
        // few rows and few columns at 33 to 396 blocks; see the chapter.)
        let x = resident as f64 * block;
        x / (1.0 + (x / full).powi(4)).powf(0.25)
    }
    // ANCHOR_END: rate

    /// `sum_slices` or `sum_few`, moving `bytes` in all.
    fn sum(&self, bytes: f64, sms: u32) -> f64 {
        self.launch + bytes / self.rate(Way::Tile(TILES[0]), 1, false, bytes, u64::MAX, sms)
    }

    /// One padding copy into a `rows`×`cols` destination, moving `bytes` in all (read and
    /// written): at the copy's measured rate, and no faster than its blocks walk their rows. The
    /// copy (common's `copy_rows`) has about 2048 blocks, each row's across one to 32 of them,
    /// and a block takes its rows in turn, a row's load and store one after the other: a copy of
    /// many short rows (100 000 rows of 20 floats, 49 rows a block) is bound by those turns.
    fn pad_copy(&self, bytes: f64, rows: usize, cols: usize) -> f64 {
        let across = cols.div_ceil(256).clamp(1, 32);
        let down = (2048 / across).min(rows).max(1);
        let turns = rows.div_ceil(down) as f64;
        self.launch + (bytes / self.copy.of(bytes <= self.l2_bytes / 2.0)).max(turns * COPY_ROW_US)
    }

    // ANCHOR: predict
    /// The predicted time of `cut` at `s` on `sms` SMs, in microseconds: its kernel with K split
    /// `cut.split` ways; a tile pads rows that are not 16-byte multiples where `cut.pad`, else
    /// reads them as they are.
    pub fn predict(&self, cut: Cut, s: Shape, sms: u32) -> f64 {
        let Cut { way, split, pad } = cut;
        let mut time = 0.0;
        let mut p = s;
        let mut aligned = s.k % 4 == 0 && s.n % 4 == 0;
        if let Way::Tile(_) = way
            && pad
            && let Some(padded) = common::pad::padded_shape(s)
        {
            // A′ where K is padded, B′ always, and C′ back where N is.
            // A copy of `floats` floats into rows×cols: 8 bytes each, read and written.
            let copy = |rows, cols, floats: usize| self.pad_copy(8.0 * floats as f64, rows, cols);
            time += if padded.k != s.k { copy(s.m, padded.k, s.m * padded.k) } else { 0.0 };
            time += copy(padded.k, padded.n, padded.k * padded.n);
            time += if padded.n != s.n { copy(s.m, s.n, s.m * padded.n) } else { 0.0 };
            (p, aligned) = (padded, true);
        }
        let (m, n, k) = (p.m as f64, p.n as f64, p.k as f64);
        let mut depth = k / f64::from(split);
        if way == Way::FewRows {
            // Where C has 64 columns or fewer, a warp's lanes across them are fewer than 32, and
            // its other lanes walk other rows of K: the block goes down K that much faster.
            depth *= few_rows_lanes(s.n) as f64 / 32.0;
        }
        let blocks = way.units(p, split) * u64::from(split);
        let r = if way == Way::FewRows { s.m } else { s.n };
        let short_rows = way == Way::FewCols && few_cols_lanes(p.k, split) < 32;
        let costs = self.costs(way, r, aligned, short_rows);
        let mut rounds = rounds(blocks, sms, way.per_sm(), costs, depth);
        if let Some(end) = stream_k_end(way, split, p, sms) {
            rounds = rounds.min(end * costs.full.at(depth));
        }
        let out = if split > 1 { f64::from(split) } else { 1.0 };
        let bytes = 4.0 * (m * k + k * n + m * n * out);
        let slots = (u64::from(sms) * u64::from(way.per_sm())).max(1);
        if way == Way::Tile(FLAT) && bytes > self.l2_bytes / 2.0 {
            // The flat tile's blocks over a B in memory: every round, the last too, at the line
            // measured so (a block waits on the memory slice after slice, however few share it).
            let memory_rounds = blocks.div_ceil(slots) as f64;
            rounds = rounds.max(memory_rounds * self.flat_memory.at(depth));
        }
        // The bytes, a round of blocks at a time: whole rounds of every slot, then the blocks
        // left, each round at the rate of the blocks in it.
        let per_block = bytes / blocks.max(1) as f64;
        let round = |n: u64| n as f64 * per_block / self.rate(way, r, short_rows, bytes, n, sms);
        let (whole, rest) = (blocks / slots, blocks % slots);
        let memory = whole as f64 * round(slots) + if rest > 0 { round(rest) } else { 0.0 };
        time += rounds.max(self.launch + memory);
        if split > 1 {
            time += self.sum(4.0 * m * n * (out + 1.0), sms);
        }
        time
    }
    // ANCHOR_END: predict
}

/// The time a block of the padding copy takes for one row, in microseconds: a load from memory
/// and the store that waits for it. Fitted on the H100 (2026-11-28's step 10 records of skinny
/// shapes): a padded launch took 26 to 36 µs more than the same tile on rows as they are at
/// 25 to 49 rows a copy block, 0.73 to 1.03 µs a row; the least is taken.
pub const COPY_ROW_US: f64 = 0.73;

/// Where unsplit tiles fill every slot of the SMs at least once, their launch shares a part-filled
/// last round slice by slice where its own model says that ends sooner (Stream-K): when that
/// model says the last block ends, in whole tiles' time. None elsewhere: a grid that does not
/// fill the SMs once is not shared (the rule sets SHARE=0 there), since that model was measured
/// on a shared last round, not on tiles cut between many blocks each.
pub fn stream_k_end(way: Way, split: u32, p: Shape, sms: u32) -> Option<f64> {
    let Way::Tile(t) = way else { return None };
    let (tiles_m, tiles_n) = (p.m.div_ceil(t.bm as usize) as u32, p.n.div_ceil(t.bn as usize) as u32);
    let slots = sms * t.per_sm;
    if split > 1 || u64::from(tiles_m) * u64::from(tiles_n) < u64::from(slots) {
        return None;
    }
    let slices = p.k.div_ceil(16) as u32;
    Some(common::stream_k::stream_k_plan(tiles_m, tiles_n, slices, slots).0)
}

/// How far `r` short rows or columns lie from 1 toward [`SHORT`] rows or [`SHORT_COLS`] columns,
/// the two counts the short side's kernels are calibrated at (0 to 1).
fn toward_short(way: Way, r: usize) -> f64 {
    let far = if way == Way::FewCols { SHORT_COLS } else { SHORT };
    (r.clamp(1, far) - 1) as f64 / (far - 1) as f64
}

/// The busiest SM's time: ⌈blocks / SMs⌉ blocks, `per_sm` at once; whole rounds at the full line,
/// a last round of `r` blocks between the one-block line (r = 1) and the full line (r = per_sm).
pub fn rounds(blocks: u64, sms: u32, per_sm: u32, c: Costs, depth: f64) -> f64 {
    let on_busiest = blocks.div_ceil(u64::from(sms.max(1)));
    let per_sm = u64::from(per_sm.max(1));
    let (whole, rest) = (on_busiest / per_sm, on_busiest % per_sm);
    let (one, full) = (c.one.at(depth), c.full.at(depth));
    let last = match rest {
        0 => 0.0,
        r => one + (full - one) * (r - 1) as f64 / (per_sm - 1).max(1) as f64,
    };
    whole as f64 * full + last
}

// ANCHOR: choose
/// The rule: the cut with the least time the model predicts (see the module's comment), from the
/// calibration the rule reads; ties go to the cut listed first (larger tiles, smaller splits,
/// padded rows). Stream-K's layout (SHARE=1) is offered where unsplit tiles fill the SMs at least
/// once; its own model takes it or not.
pub fn choose(s: Shape, sms: u32) -> Result<Choice, String> {
    let cal = calibration().as_ref().map_err(Clone::clone)?;
    let mut ranked: Vec<(f64, Cut)> = cuts(s).into_iter().map(|c| (cal.predict(c, s, sms), c)).collect();
    ranked.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (predicted, cut) = ranked[0];
    let padded = common::pad::padded_shape(s).filter(|_| cut.pad && cut.way.path() == 0);
    let blocks = cut.way.units(padded.unwrap_or(s), cut.split) * u64::from(cut.split);
    let mut why = format!(
        "{}: {blocks} blocks on {sms} SMs{}, predicted {predicted:.1} µs by the model ({})",
        cut.name(s),
        if cut.split > 1 { format!(", {}", cut.k_each(s.k)) } else { String::new() },
        cal.device,
    );
    if let Some(&(next, c)) = ranked.iter().find(|r| r.1.way != cut.way) {
        let _ = write!(why, "; next {}, {next:.1} µs", c.name(s));
    }
    // Stream-K's layout is offered where unsplit tiles fill the SMs at least once (see
    // `stream_k_end`), also where `--param SPLIT=1` replaces a split; a split launch
    // ignores it.
    let shares = stream_k_end(cut.way, 1, padded.unwrap_or(s), sms).is_some();
    Ok(Choice { set: cut.params(shares), why, predicted_us: Some(predicted) })
}
// ANCHOR_END: choose

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calibration::RECORDED;

    fn costs(one: (f64, f64), full: (f64, f64)) -> Costs {
        Costs { one: Line { fixed: one.0, per_k: one.1 }, full: Line { fixed: full.0, per_k: full.1 } }
    }

    /// A padding copy of many short rows is bound by its blocks' turns down them: on these
    /// skinny shapes the rule reads the rows as they are, or takes a kernel that never pads
    /// (padded, the H100 took 2.3 to 4.9 times as long); a large product with a K that is not a
    /// multiple of 4 still pads.
    #[test]
    fn many_short_rows_are_read_as_they_are() {
        for (m, n, k) in
            [(100_000, 4, 18), (65_536, 1, 8), (65_536, 2, 64), (14, 14, 50_000), (100_000, 20, 18)]
        {
            let choice = choose(Shape::new(m, n, k).unwrap(), 132).unwrap();
            let padded_tile = choice.set.contains(&("PATH", 0)) && choice.set.contains(&("PAD", 1));
            assert!(!padded_tile, "{m}×{n}×{k}: {}", choice.why);
        }
        let big = choose(Shape::new(4097, 4097, 4097).unwrap(), 132).unwrap();
        assert!(big.set.contains(&("PAD", 1)), "{}", big.why);
    }

    #[test]
    fn rounds_count_the_busiest_sm() {
        let c = costs((2.0, 0.0), (6.0, 0.0));
        // Four blocks an SM at once: 132 blocks are one alone on each SM, 528 one full round.
        assert_eq!(rounds(132, 132, 4, c, 0.0), 2.0);
        assert_eq!(rounds(528, 132, 4, c, 0.0), 6.0);
        // 529: one SM gets a fifth block, alone in its second round.
        assert_eq!(rounds(529, 132, 4, c, 0.0), 8.0);
        // Three at once on the busiest SM: two thirds of the way from one to full.
        assert!((rounds(396, 132, 4, c, 0.0) - (2.0 + 4.0 * 2.0 / 3.0)).abs() < 1e-12);
        // One block an SM holds: every block is a round.
        assert_eq!(rounds(264, 132, 1, c, 0.0), 12.0);
    }

    #[test]
    fn the_blocks_at_once_get_their_own_rate_up_to_the_full_one() {
        let cal = Calibration::parse(RECORDED).unwrap();
        let big = 1e9;
        let one = cal.few_rows_block[0].memory;
        let full = cal.few_rows_memory[0];
        let rate = |b| cal.rate(Way::FewRows, 1, false, big, b, 132);
        // A few blocks: each at its own rate; many: the full rate; in between, more is faster.
        assert!((rate(4) / (4.0 * one) - 1.0).abs() < 1e-3, "{}", rate(4));
        assert!((rate(100_000) / full - 1.0).abs() < 1e-3, "{}", rate(100_000));
        assert!((1..600).all(|b| rate(b) < rate(b + 1) && rate(b) <= full));
        // A tile's block gets its slot's share: its slots together about the full rate.
        let t = Way::Tile(TILES[0]);
        let share = cal.rate(t, 1, false, big, 1, 132) * 132.0 * f64::from(TILES[0].per_sm);
        assert!((share / cal.bytes_per_us - 1.0).abs() < 1e-3, "{share}");
    }
}

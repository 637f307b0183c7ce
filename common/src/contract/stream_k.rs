//! The Stream-K plan: where a launch whose last wave would leave SMs idle puts its blocks, the
//! model of when its last block ends, and the variable that forces a layout for measurements.

use anyhow::{Result, bail};

use crate::params::Param;

/// The parameter of a [`Schedule::StreamK`](crate::step::Schedule::StreamK) step that turns the sharing off (0) or on (1). The
/// kernel does not read it: only the launch's layout changes.
pub const SHARE: Param = Param {
    name: "SHARE",
    default: 1,
    help: "1: blocks share the last tile rows slice by slice (Stream-K) where that ends sooner; 0: a block per tile",
};

/// The most tiles a [`Schedule::StreamK`](crate::step::Schedule::StreamK) launch shares between blocks: the size of the kernel's
/// table of turns (`summed_to`), one entry per shared tile.
pub const SHARED_TILES_MAX: u32 = 4096;

/// Where a [`Schedule::StreamK`](crate::step::Schedule::StreamK) launch over `tiles_m`×`tiles_n` tiles of `slices` slices of K
/// each puts its blocks, with `resident` blocks on the GPU at once: `(whole, rows)`, a grid of `tiles_n`×`rows` blocks whose
/// first `whole` rows take one tile each, and whose other `rows − whole` rows share the tile rows
/// from `whole` on, slice by slice. Blocks start in order as others finish, so the choice is made
/// on that model: a whole tile costs 1, a shared block its share of the slices plus a fixed number
/// of slices' time for its second prologue and its turn at the sum, and the layout that ends soonest wins, with whole
/// tiles alone (`whole = rows = tiles_m`) unless sharing ends more than 0.5% sooner. The variable
/// [`LAYOUT_VAR`] overrides the choice.
pub fn stream_k_layout(tiles_m: u32, tiles_n: u32, slices: u32, resident: u32) -> (u32, u32) {
    let (_, whole, rows) = stream_k_plan(tiles_m, tiles_n, slices, resident);
    (whole, rows)
}

/// [`stream_k_layout`]'s layout, with when its last block ends on that model, in units of one
/// whole tile's time.
pub fn stream_k_plan(tiles_m: u32, tiles_n: u32, slices: u32, resident: u32) -> (f64, u32, u32) {
    // Fitted to step06's forced layouts at 4096³ (256 slices of 16) on an H200 (the layouts
    // record): a share's slices run 4% slower (the loop reads its tile's place from shared
    // memory), and a sharer pays about 13 slices' time for its second prologue and its turn at
    // the sum, which is why short products share little or not at all.
    const SHARED_SLOWER: f64 = 1.04;
    const SHARED_EXTRA_SLICES: f64 = 13.0;
    let extra_cost = SHARED_EXTRA_SLICES / f64::from(slices.max(1));
    let p = resident.clamp(1, SHARED_TILES_MAX) as usize;
    let (tm, tn) = (tiles_m as usize, tiles_n as usize);
    let plain = (tm * tn).div_ceil(p) as f64;
    let mut best = (plain / 1.005, tiles_m, tiles_m);
    let shared_rows = (p.div_ceil(tn) + 1).min(tm);
    for whole in tm - shared_rows..tm {
        let units = ((tm - whole) * tn) as f64;
        // At least as many sharers as shared tiles: no share is longer than a tile, so none
        // holds more than the end of one tile and the start of the next.
        for extra in tm - whole..=(2 * p).div_ceil(tn).max(tm - whole) {
            let sharers = extra * tn;
            // Nor a share shorter than what taking part costs: its turn would wait on turns.
            let too_short = (units * f64::from(slices)) < sharers as f64 * SHARED_EXTRA_SLICES;
            if sharers > 2 * p
                || whole + extra > 65_535
                || (tm - whole) * tn > SHARED_TILES_MAX as usize
                || too_short
            {
                break;
            }
            let end = makespan(whole * tn, sharers, units / sharers as f64 * SHARED_SLOWER + extra_cost, p);
            if end < best.0 {
                best = (end, whole as u32, (whole + extra) as u32);
            }
        }
    }
    let end = if best.1 == tiles_m { plain } else { best.0 };
    (end, best.1, best.2)
}

/// The environment variable that overrides [`stream_k_layout`]'s choice, as `WHOLE,ROWS`: to
/// measure other layouts than the one the model picks.
pub const LAYOUT_VAR: &str = "STREAM_K_LAYOUT";

/// The layout [`LAYOUT_VAR`] asks for over `tiles_m` tile rows, checked; None when it is unset.
pub(crate) fn forced_layout(tiles_m: u32, tiles_n: u32) -> Result<Option<(u32, u32)>> {
    match std::env::var_os(LAYOUT_VAR) {
        None => Ok(None),
        Some(value) => parse_layout(&value.to_string_lossy(), tiles_m, tiles_n).map(Some),
    }
}

/// `WHOLE,ROWS` over `tiles_m`×`tiles_n` tiles: a layout the kernel can serve, or why not.
fn parse_layout(value: &str, tiles_m: u32, tiles_n: u32) -> Result<(u32, u32)> {
    let parsed = value
        .split_once(',')
        .and_then(|(w, r)| Some((w.trim().parse::<u32>().ok()?, r.trim().parse::<u32>().ok()?)));
    let Some((whole, rows)) = parsed else {
        bail!("{LAYOUT_VAR}={value}: give the whole-tile rows and the grid rows as two numbers, e.g. 24,33");
    };
    let sharing = whole < tiles_m;
    if whole > tiles_m || rows > 65_535 || (sharing && rows < tiles_m) || (!sharing && rows != tiles_m) {
        bail!(
            "{LAYOUT_VAR}={value}: with {tiles_m} tile rows, WHOLE must be at most {tiles_m} and ROWS at least {tiles_m} (a sharer for every shared tile), at most 65535, and exactly {tiles_m} when WHOLE is"
        );
    }
    let shared = u64::from(tiles_m - whole) * u64::from(tiles_n);
    if shared > u64::from(SHARED_TILES_MAX) {
        bail!(
            "{LAYOUT_VAR}={value}: it shares {shared} tiles, more than the {SHARED_TILES_MAX} the kernel's table of turns holds; raise WHOLE"
        );
    }
    Ok((whole, rows))
}

/// When the last block ends, if `whole` blocks of length 1 and then `shared` of length `each`
/// start in order on `p` slots, each on the slot free first. Slots free at the same time take
/// their blocks together, so the blocks are dealt out a group of slots at a time.
fn makespan(whole: usize, shared: usize, each: f64, p: usize) -> f64 {
    let (rounds, rest) = (whole / p, whole % p);
    // Groups of slots free at the same time: (when, how many).
    let mut groups: Vec<(f64, usize)> =
        [(rounds as f64, p - rest), (rounds as f64 + 1.0, rest)].into_iter().filter(|g| g.1 > 0).collect();
    let mut end = if rest > 0 { rounds as f64 + 1.0 } else { rounds as f64 };
    let mut left = shared;
    while left > 0 {
        let first = if groups.len() > 1 && groups[1].0 < groups[0].0 { 1 } else { 0 };
        let (when, slots) = groups[first];
        end = end.max(when + each);
        if left < slots {
            break;
        }
        groups[first].0 += each;
        left -= slots;
    }
    end
}

#[cfg(test)]
mod tests {
    use super::{SHARED_TILES_MAX, makespan, parse_layout, stream_k_layout};

    /// The same schedule, block by block: each block on the slot free first.
    fn makespan_one_by_one(whole: usize, shared: usize, each: f64, p: usize) -> f64 {
        let mut free = vec![0.0f64; p];
        let mut end: f64 = 0.0;
        for len in std::iter::repeat_n(1.0, whole).chain(std::iter::repeat_n(each, shared)) {
            let slot = (0..p).min_by(|&a, &b| free[a].total_cmp(&free[b])).unwrap();
            free[slot] += len;
            end = end.max(free[slot]);
        }
        end
    }

    #[test]
    fn the_makespan_by_groups_is_the_makespan_block_by_block() {
        for (whole, shared, each, p) in [
            (384, 144, 0.94, 132),
            (0, 33, 0.3, 132),
            (1952, 160, 0.65, 132),
            (7, 40, 0.5, 3),
            (5, 0, 1.0, 2),
            (0, 7, 2.0, 7),
        ] {
            let (a, b) = (makespan(whole, shared, each, p), makespan_one_by_one(whole, shared, each, p));
            assert!((a - b).abs() < 1e-9, "{whole} {shared} {each} {p}: {a} against {b}");
        }
    }

    #[test]
    fn a_forced_layout_is_checked() {
        assert_eq!(parse_layout("24,33", 32, 16).unwrap(), (24, 33));
        assert_eq!(parse_layout(" 32 , 32", 32, 16).unwrap(), (32, 32));
        for (bad, says) in [
            ("24", "two numbers"),
            ("a,b", "two numbers"),
            ("33,40", "at most 32"),
            ("24,31", "at least 32"),
            ("32,33", "exactly 32"),
            ("0,70000", "65535"),
        ] {
            let err = parse_layout(bad, 32, 16).unwrap_err().to_string();
            assert!(err.contains(says) && err.starts_with("STREAM_K_LAYOUT="), "{bad}: {err}");
        }
        // 128 tile rows of 64 tiles: sharing them all would overflow the table of turns.
        let err = parse_layout("0,129", 128, 64).unwrap_err().to_string();
        assert!(err.contains("table of turns") && err.starts_with("STREAM_K_LAYOUT="), "{err}");
    }

    #[test]
    fn the_makespan_model_fills_the_slots_in_order() {
        assert_eq!(makespan(264, 0, 0.0, 132), 2.0);
        assert_eq!(makespan(265, 0, 0.0, 132), 3.0);
        // 12 slots free after two rounds take the first shared blocks, the rest wait for the third.
        assert_eq!(makespan(384, 144, 0.5, 132), 3.5);
    }

    #[test]
    fn tiles_that_fill_their_waves_are_not_shared() {
        // 33×16 = 528 tiles are exactly 4 waves of 132.
        assert_eq!(stream_k_layout(33, 16, 256, 132), (33, 33));
        assert_eq!(stream_k_layout(1, 1, 256, 1), (1, 1));
    }

    #[test]
    fn a_short_product_is_not_shared() {
        // 256³ in 128×256 tiles: two tiles of 16 slices, one part-filled wave; sharing them
        // would cost more in turns than it saves.
        assert_eq!(stream_k_layout(2, 1, 16, 132), (2, 2));
    }

    #[test]
    fn a_part_filled_last_wave_is_shared() {
        // 4097³ in 128×256 tiles: 33×17 = 561 tiles, 4.25 waves of 132.
        let (whole, rows) = stream_k_layout(33, 17, 257, 132);
        assert!(whole < 33 && rows > whole, "{whole} {rows}");
        // 4096³: 512 tiles, 3.88 waves.
        let (whole, rows) = stream_k_layout(32, 16, 256, 132);
        assert!(whole < 32 && rows > whole, "{whole} {rows}");
    }

    #[test]
    #[ignore = "slow unoptimised: .ci/run runs it in release"]
    fn slow_the_layout_stays_within_the_grid_and_the_turn_table() {
        for (tm, tn, p) in [
            (512, 1, 132),
            (1, 1024, 132),
            (3, 4096, 4096),
            (65_535, 1, 7),
            (40, 40, 10_000),
            (4096, 1, 4096),
        ] {
            let (whole, rows) = stream_k_layout(tm, tn, 256, p);
            assert!(whole <= tm && rows >= whole && rows <= 65_535, "{tm}×{tn}/{p}: {whole} {rows}");
            assert!(whole == tm || (tm - whole) * tn <= SHARED_TILES_MAX, "{tm}×{tn}/{p}: {whole} {rows}");
            assert_eq!(whole == rows, whole == tm, "{tm}×{tn}/{p}: {whole} {rows}");
        }
    }
}

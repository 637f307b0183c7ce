//! The model behind step 10's rule: how long each way of cutting a product would take, from a
//! few times measured once per GPU (the calibration, `cargo run --release -p step10_any_shape
//! --bin calibrate`).
//!
//! A kernel runs its blocks on the SMs in rounds. Each block computes a fixed piece of C (a tile,
//! 128 columns of a few rows, 8 or 32 rows of a few columns, or 64×128 of a short K) over `d`
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
//! either pad them (the copies, at the copy kernel's own measured rate, then the 16-byte lines) or
//! read them as they are (the lines measured so, 4-byte loads). The rule takes the cut with the
//! least predicted time.

use std::fmt::Write as _;
use std::sync::OnceLock;

use common::Shape;

use crate::tiles::{Cut, FLAT, SHORT, TILES, Way, few_rows_lanes};

/// One block's time over `d` entries of K, in microseconds: `fixed + per_k·d`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Line {
    pub fixed: f64,
    pub per_k: f64,
}

impl Line {
    pub fn at(&self, d: f64) -> f64 {
        self.fixed + self.per_k * d
    }

    /// The line through (d1, t1) and (d2, t2).
    pub fn through((d1, t1): (f64, f64), (d2, t2): (f64, f64)) -> Self {
        let per_k = (t2 - t1) / (d2 - d1);
        Self { fixed: t1 - per_k * d1, per_k }
    }
}

/// A kernel's block time with one block on each SM, and per round with every SM full.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Costs {
    pub one: Line,
    pub full: Line,
}

/// Bytes per microsecond from memory and from the L2 cache.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rates {
    pub memory: f64,
    pub l2: f64,
}

impl Rates {
    fn of(&self, in_l2: bool) -> f64 {
        if in_l2 { self.l2 } else { self.memory }
    }
}

/// What one GPU measured (see the module's comment); times in microseconds.
#[derive(Clone, Debug, PartialEq)]
pub struct Calibration {
    /// The GPU it was measured on, and its SMs.
    pub device: String,
    pub sms: u32,
    /// The shortest kernel, launch to launch.
    pub launch: f64,
    /// Bytes per microsecond that a kernel reading a long operand once gets from memory.
    pub bytes_per_us: f64,
    /// The L2 cache's bytes, and the bytes per microsecond such a kernel gets from it.
    pub l2_bytes: f64,
    pub l2_bytes_per_us: f64,
    /// One per tile of [`TILES`], in order: rows 16-byte multiples, and rows read as they are
    /// (4-byte loads).
    pub tiles: Vec<Costs>,
    pub tiles_unaligned: Vec<Costs>,
    /// Few rows at 1 and at [`SHORT`] rows; few columns at 1 and [`SHORT`] columns.
    pub few_rows: [Costs; 2],
    pub few_cols: [Costs; 2],
    /// Bytes per microsecond each short side's kernel gets from memory reading a long operand of
    /// 1 GiB, at 1 and [`SHORT`] rows or columns (the tiles' is `bytes_per_us`).
    pub few_rows_memory: [f64; 2],
    pub few_cols_memory: [f64; 2],
    /// Bytes per microsecond one block of each short side's kernel gets, from memory and from the
    /// L2 cache, at 1 and [`SHORT`] rows or columns: measured with a block on a quarter of the SMs.
    pub few_rows_block: [Rates; 2],
    pub few_cols_block: [Rates; 2],
    /// Bytes per microsecond (read and written) of the padding copy, from memory and from the L2
    /// cache.
    pub copy: Rates,
    /// Short K's block costs over its depth (K itself), and the bytes per microsecond it gets
    /// writing a C of 1 GiB to memory.
    pub short_k: Costs,
    pub short_k_memory: f64,
    /// The flat tile's (16 rows, the last of [`TILES`]) time per round of full SMs over `d` of K
    /// when B comes from memory, not from the L2 cache: the one tile whose products can be bound
    /// by memory (8 FLOPs per byte of B; the others do 32 or more). Its blocks keep one slice of K
    /// in flight, so each waits on the memory's latency slice after slice.
    pub flat_memory: Line,
}

/// The H100's calibration, recorded by `calibrate` (its record is in the book's runs).
pub const RECORDED: &str = include_str!("../calibration/nvidia-h100-80gb-hbm3.txt");

/// The environment variable that points the rule at another calibration file (one `calibrate`
/// wrote for your GPU).
pub const CALIBRATION_VAR: &str = "STEP10_CALIBRATION";

/// The calibration the rule uses: the file [`CALIBRATION_VAR`] names, else the recorded one.
pub fn calibration() -> &'static Result<Calibration, String> {
    static CAL: OnceLock<Result<Calibration, String>> = OnceLock::new();
    CAL.get_or_init(|| match std::env::var_os(CALIBRATION_VAR) {
        Some(path) => std::fs::read_to_string(&path)
            .map_err(|e| format!("{CALIBRATION_VAR}={}: {e}", path.to_string_lossy()))
            .and_then(|text| Calibration::parse(&text))
            .map_err(|e| format!("the calibration in {CALIBRATION_VAR} cannot be used: {e}")),
        None => Calibration::parse(RECORDED),
    })
}

impl Calibration {
    /// The block costs of `way` at `r` short rows or columns (a line between 1 and [`SHORT`]);
    /// for a tile, with 16-byte loads (`aligned`) or 4-byte ones.
    pub fn costs(&self, way: Way, r: usize, aligned: bool) -> Costs {
        let f = toward_short(r);
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
    pub fn rate(&self, way: Way, r: usize, bytes: f64, resident: u64, sms: u32) -> f64 {
        let in_l2 = bytes <= self.l2_bytes / 2.0;
        let f = toward_short(r);
        let lerp = |[a, b]: [f64; 2]| a + f * (b - a);
        let full = match way {
            _ if in_l2 => self.l2_bytes_per_us,
            Way::Tile(_) => self.bytes_per_us,
            Way::FewRows => lerp(self.few_rows_memory),
            Way::FewCols => lerp(self.few_cols_memory),
            Way::ShortK => self.short_k_memory,
        };
        let block = match way {
            Way::FewRows => lerp(self.few_rows_block.map(|x| x.of(in_l2))),
            Way::FewCols => lerp(self.few_cols_block.map(|x| x.of(in_l2))),
            Way::Tile(_) | Way::ShortK => full / (f64::from(sms) * f64::from(way.per_sm())).max(1.0),
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
        self.launch + bytes / self.rate(Way::Tile(TILES[0]), 1, bytes, u64::MAX, sms)
    }

    /// One padding copy, moving `bytes` in all (read and written).
    fn pad_copy(&self, bytes: f64) -> f64 {
        self.launch + bytes / self.copy.of(bytes <= self.l2_bytes / 2.0)
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
            let copy = |elements: usize| self.pad_copy(8.0 * elements as f64);
            time += if padded.k != s.k { copy(s.m * padded.k) } else { 0.0 };
            time += copy(padded.k * padded.n);
            time += if padded.n != s.n { copy(s.m * padded.n) } else { 0.0 };
            (p, aligned) = (padded, true);
        }
        let (m, n, k) = (p.m as f64, p.n as f64, p.k as f64);
        let mut depth = k / f64::from(split);
        if way == Way::FewRows {
            // Where C has 64 columns or fewer, a warp's lanes across them are fewer than 32, and
            // its other lanes walk other rows of K: the block goes down K that much faster.
            depth *= few_rows_lanes(s.n) as f64 / 32.0;
        }
        let blocks = way.units(p) * u64::from(split);
        let r = if way == Way::FewRows { s.m } else { s.n };
        let costs = self.costs(way, r, aligned);
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
        let round = |n: u64| n as f64 * per_block / self.rate(way, r, bytes, n, sms);
        let (whole, rest) = (blocks / slots, blocks % slots);
        let memory = whole as f64 * round(slots) + if rest > 0 { round(rest) } else { 0.0 };
        time += rounds.max(self.launch + memory);
        if split > 1 {
            time += self.sum(4.0 * m * n * (out + 1.0), sms);
        }
        time
    }
    // ANCHOR_END: predict

    /// Reads a calibration file: `key value…` lines, `#` comments.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut device = None;
        let (mut sms, mut launch, mut bytes_per_us) = (None, None, None);
        let (mut l2_bytes, mut l2_bytes_per_us) = (None, None);
        let mut tiles = vec![None; TILES.len()];
        let mut tiles_unaligned = vec![None; TILES.len()];
        let (mut few_rows, mut few_cols) = ([None, None], [None, None]);
        let (mut few_rows_memory, mut few_cols_memory) = ([None, None], [None, None]);
        let (mut few_rows_block, mut few_cols_block) = ([None, None], [None, None]);
        let mut copy = None;
        let (mut short_k, mut short_k_memory, mut flat_memory) = (None, None, None);
        for (i, line) in text.lines().enumerate().map(|(i, l)| (i + 1, l.trim())) {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (key, rest) = line.split_once(' ').unwrap_or((line, ""));
            // The numbers of `words`, past the words "one" and "full" that label a line's halves.
            let numbers = |words: &str| -> Result<Vec<f64>, String> {
                words
                    .split_whitespace()
                    .filter(|w| !matches!(*w, "one" | "full"))
                    .map(|w| w.parse::<f64>().map_err(|_| format!("line {i}: '{w}' is not a number")))
                    .collect()
            };
            let nums = || numbers(rest);
            let costs = |v: &[f64]| -> Result<Costs, String> {
                match v {
                    [a, b, c, d] if v.iter().all(|x| x.is_finite()) => {
                        Ok(Costs { one: Line { fixed: *a, per_k: *b }, full: Line { fixed: *c, per_k: *d } })
                    }
                    _ => Err(format!("line {i}: '{line}' needs one FIXED PER_K full FIXED PER_K")),
                }
            };
            match key {
                "device" => device = Some(rest.trim().to_owned()),
                "sms" => {
                    sms = Some(rest.trim().parse::<u32>().map_err(|_| format!("line {i}: bad SM count"))?)
                }
                "launch_us" => launch = nums()?.first().copied(),
                "bytes_per_us" => bytes_per_us = nums()?.first().copied(),
                "l2_bytes" => l2_bytes = nums()?.first().copied(),
                "l2_bytes_per_us" => l2_bytes_per_us = nums()?.first().copied(),
                "short_k" => short_k = Some(costs(&nums()?)?),
                "short_k_memory" => short_k_memory = nums()?.first().copied(),
                "flat_memory" => match nums()?[..] {
                    [fixed, per_k] if fixed.is_finite() && per_k.is_finite() => {
                        flat_memory = Some(Line { fixed, per_k })
                    }
                    _ => return Err(format!("line {i}: flat_memory needs FIXED PER_K")),
                },
                "tile" | "tile_unaligned" => {
                    let (name, v) = rest.split_once(' ').ok_or(format!("line {i}: a tile needs its size"))?;
                    let at = TILES
                        .iter()
                        .position(|t| format!("{}x{}", t.bm, t.bn) == name)
                        .ok_or(format!("line {i}: no tile {name} in TILES"))?;
                    let v = numbers(v)?;
                    let list = if key == "tile" { &mut tiles } else { &mut tiles_unaligned };
                    list[at] = Some(costs(&v)?);
                }
                "few_rows_memory" | "few_cols_memory" => {
                    let v = nums()?;
                    let (which, rate) = match v[..] {
                        [r, rate] if r as usize == 1 => (0, rate),
                        [r, rate] if r as usize == SHORT => (1, rate),
                        _ => return Err(format!("line {i}: {key} needs 1 or {SHORT} and a rate")),
                    };
                    let list =
                        if key == "few_rows_memory" { &mut few_rows_memory } else { &mut few_cols_memory };
                    list[which] = Some(rate);
                }
                "few_rows_block" | "few_cols_block" => {
                    let which = match nums()?[..] {
                        [r, memory, l2] if r as usize == 1 => (0, Rates { memory, l2 }),
                        [r, memory, l2] if r as usize == SHORT => (1, Rates { memory, l2 }),
                        _ => return Err(format!("line {i}: {key} needs 1 or {SHORT}, then MEMORY L2")),
                    };
                    let list =
                        if key == "few_rows_block" { &mut few_rows_block } else { &mut few_cols_block };
                    list[which.0] = Some(which.1);
                }
                "copy" => match nums()?[..] {
                    [memory, l2] => copy = Some(Rates { memory, l2 }),
                    _ => return Err(format!("line {i}: copy needs MEMORY L2")),
                },
                "few_rows" | "few_cols" => {
                    let v = nums()?;
                    let which = match v.first().map(|&r| r as usize) {
                        Some(1) => 0,
                        Some(SHORT) => 1,
                        _ => return Err(format!("line {i}: {key} is measured at 1 and {SHORT}")),
                    };
                    let c = costs(&v[1..])?;
                    if key == "few_rows" { few_rows[which] = Some(c) } else { few_cols[which] = Some(c) }
                }
                _ => return Err(format!("line {i}: unknown key '{key}'")),
            }
        }
        let missing = |what: &str| format!("no {what} line");
        let all = |list: Vec<Option<Costs>>, key: &str| {
            list.into_iter()
                .zip(TILES)
                .map(|(c, t)| c.ok_or_else(|| missing(&format!("{key} {}x{}", t.bm, t.bn))))
                .collect::<Result<Vec<_>, _>>()
        };
        let (tiles, tiles_unaligned) = (all(tiles, "tile")?, all(tiles_unaligned, "tile_unaligned")?);
        let cal = Self {
            device: device.ok_or_else(|| missing("device"))?,
            sms: sms.ok_or_else(|| missing("sms"))?,
            launch: launch.ok_or_else(|| missing("launch_us"))?,
            bytes_per_us: bytes_per_us.ok_or_else(|| missing("bytes_per_us"))?,
            l2_bytes: l2_bytes.ok_or_else(|| missing("l2_bytes"))?,
            l2_bytes_per_us: l2_bytes_per_us.ok_or_else(|| missing("l2_bytes_per_us"))?,
            tiles,
            tiles_unaligned,
            few_rows_memory: both(few_rows_memory, "few_rows_memory")?,
            few_cols_memory: both(few_cols_memory, "few_cols_memory")?,
            few_rows_block: both(few_rows_block, "few_rows_block")?,
            few_cols_block: both(few_cols_block, "few_cols_block")?,
            copy: copy.ok_or_else(|| missing("copy"))?,
            few_rows: both(few_rows, "few_rows")?,
            few_cols: both(few_cols, "few_cols")?,
            short_k: short_k.ok_or_else(|| missing("short_k"))?,
            short_k_memory: short_k_memory.ok_or_else(|| missing("short_k_memory"))?,
            flat_memory: flat_memory.ok_or_else(|| missing("flat_memory"))?,
        };
        let rates = [cal.launch, cal.bytes_per_us, cal.l2_bytes, cal.l2_bytes_per_us, cal.short_k_memory];
        let blocks = cal.few_rows_block.iter().chain(&cal.few_cols_block).chain([&cal.copy]);
        let blocks = blocks.flat_map(|r| [r.memory, r.l2]).collect::<Vec<_>>();
        if !rates
            .iter()
            .chain(&cal.few_rows_memory)
            .chain(&cal.few_cols_memory)
            .chain(&blocks)
            .all(|&v| v > 0.0)
        {
            return Err("the launch's time, the L2 cache's size and every rate must be positive".to_owned());
        }
        Ok(cal)
    }

    /// The file `parse` reads.
    pub fn write(&self) -> String {
        let mut f = String::new();
        let line = |c: Costs| {
            format!("one {:.4} {:.6} full {:.4} {:.6}", c.one.fixed, c.one.per_k, c.full.fixed, c.full.per_k)
        };
        let _ = writeln!(f, "device {}", self.device);
        let _ = writeln!(f, "sms {}", self.sms);
        let _ = writeln!(f, "launch_us {:.3}", self.launch);
        let _ = writeln!(f, "bytes_per_us {:.0}", self.bytes_per_us);
        let _ = writeln!(f, "l2_bytes {:.0}", self.l2_bytes);
        let _ = writeln!(f, "l2_bytes_per_us {:.0}", self.l2_bytes_per_us);
        for (key, list) in [("tile", &self.tiles), ("tile_unaligned", &self.tiles_unaligned)] {
            for (t, &c) in TILES.iter().zip(list) {
                let _ = writeln!(f, "{key} {}x{} {}", t.bm, t.bn, line(c));
            }
        }
        for (key, pair) in [("few_rows", self.few_rows), ("few_cols", self.few_cols)] {
            for (r, c) in [1, SHORT].into_iter().zip(pair) {
                let _ = writeln!(f, "{key} {r} {}", line(c));
            }
        }
        for (key, pair) in
            [("few_rows_memory", self.few_rows_memory), ("few_cols_memory", self.few_cols_memory)]
        {
            for (r, rate) in [1, SHORT].into_iter().zip(pair) {
                let _ = writeln!(f, "{key} {r} {rate:.0}");
            }
        }
        for (key, pair) in [("few_rows_block", self.few_rows_block), ("few_cols_block", self.few_cols_block)]
        {
            for (r, rates) in [1, SHORT].into_iter().zip(pair) {
                let _ = writeln!(f, "{key} {r} {:.0} {:.0}", rates.memory, rates.l2);
            }
        }
        let _ = writeln!(f, "copy {:.0} {:.0}", self.copy.memory, self.copy.l2);
        let _ = writeln!(f, "short_k {}", line(self.short_k));
        let _ = writeln!(f, "short_k_memory {:.0}", self.short_k_memory);
        let _ = writeln!(f, "flat_memory {:.4} {:.6}", self.flat_memory.fixed, self.flat_memory.per_k);
        f
    }
}

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
    Some(common::step::stream_k_plan(tiles_m, tiles_n, slices, slots).0)
}

/// The two values of `key` a calibration gives at 1 and [`SHORT`] rows or columns, or which line
/// is missing.
fn both<T>([one, short]: [Option<T>; 2], key: &str) -> Result<[T; 2], String> {
    let missing = |r| format!("no {key} {r} line");
    Ok([one.ok_or_else(|| missing(1))?, short.ok_or_else(|| missing(SHORT))?])
}

/// How far `r` short rows or columns lie from 1 toward [`SHORT`], the two counts the short
/// side's kernels are calibrated at (0 to 1).
fn toward_short(r: usize) -> f64 {
    (r.clamp(1, SHORT) - 1) as f64 / (SHORT - 1) as f64
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

#[cfg(test)]
mod tests {
    use super::*;

    fn costs(one: (f64, f64), full: (f64, f64)) -> Costs {
        Costs { one: Line { fixed: one.0, per_k: one.1 }, full: Line { fixed: full.0, per_k: full.1 } }
    }

    #[test]
    fn a_line_goes_through_its_two_points() {
        let l = Line::through((256.0, 10.0), (2048.0, 38.0));
        assert!((l.at(256.0) - 10.0).abs() < 1e-12 && (l.at(2048.0) - 38.0).abs() < 1e-12);
        assert!((l.per_k - 28.0 / 1792.0).abs() < 1e-15);
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
        let rate = |b| cal.rate(Way::FewRows, 1, big, b, 132);
        // A few blocks: each at its own rate; many: the full rate; in between, more is faster.
        assert!((rate(4) / (4.0 * one) - 1.0).abs() < 1e-3, "{}", rate(4));
        assert!((rate(100_000) / full - 1.0).abs() < 1e-3, "{}", rate(100_000));
        assert!((1..600).all(|b| rate(b) < rate(b + 1) && rate(b) <= full));
        // A tile's block gets its slot's share: its slots together about the full rate.
        let t = Way::Tile(TILES[0]);
        let share = cal.rate(t, 1, big, 1, 132) * 132.0 * f64::from(TILES[0].per_sm);
        assert!((share / cal.bytes_per_us - 1.0).abs() < 1e-3, "{share}");
    }

    #[test]
    fn the_recorded_calibration_reads_and_writes_back_the_same() {
        let cal = Calibration::parse(RECORDED).unwrap();
        assert_eq!(Calibration::parse(&cal.write()).unwrap(), cal);
    }

    #[test]
    fn a_broken_calibration_is_refused_in_one_sentence() {
        let cal = Calibration::parse(RECORDED).unwrap().write();
        let without_tile: String =
            cal.lines().filter(|l| !l.starts_with("tile 64x64")).map(|l| format!("{l}\n")).collect();
        for (text, says) in [
            (without_tile, "no tile 64x64 line"),
            (cal.replace("launch_us", "launch_ms"), "unknown key 'launch_ms'"),
            (cal.replace("few_rows 8", "few_rows 5"), "is measured at 1 and 8"),
            (format!("{cal}tile 32x32 one 1 1 full 1 1\n"), "no tile 32x32 in TILES"),
            (format!("{cal}bytes_per_us x\n"), "'x' is not a number"),
            (cal.replace("bytes_per_us", "bytes_per_us -"), "is not a number"),
            (cal.replace("few_rows_block 8", "few_rows_block 3"), "needs 1 or 8, then MEMORY L2"),
            (
                cal.lines().filter(|l| !l.starts_with("copy")).map(|l| format!("{l}\n")).collect(),
                "no copy line",
            ),
            (cal.replace("\ncopy ", "\ncopy -"), "every rate must be positive"),
            (
                cal.lines()
                    .filter(|l| !l.starts_with("few_rows_block 8"))
                    .map(|l| format!("{l}\n"))
                    .collect(),
                "no few_rows_block 8 line",
            ),
        ] {
            let e = Calibration::parse(&text).unwrap_err();
            assert!(e.contains(says) && !e.contains('\n'), "{e}");
        }
    }
}

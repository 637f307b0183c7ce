//! Step 10's calibration file: the times and rates one GPU measured for the model, which
//! `calibrate` writes to `calibration/*.txt` and the rule reads back (the recorded H200's, or the
//! file `STEP10_CALIBRATION` names).

use std::fmt::Write as _;
use std::sync::OnceLock;

use crate::tiles::{SHORT, SHORT_COLS, TILES};

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
    pub(crate) fn of(&self, in_l2: bool) -> f64 {
        if in_l2 { self.l2 } else { self.memory }
    }
}

/// What one GPU measured (`model.rs`'s comment says what each time is); times in microseconds.
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
    /// Few rows at 1 and at [`SHORT`] rows; few columns at 1 and [`SHORT_COLS`] columns.
    pub few_rows: [Costs; 2],
    pub few_cols: [Costs; 2],
    /// Few columns where a block's share of K is 64 or less (short rows: several rows to a warp
    /// at once), at 1 and [`SHORT_COLS`] columns, over depths of 8 to 64.
    pub few_cols_short: [Costs; 2],
    /// Bytes per microsecond each short side's kernel gets from memory reading a long operand of
    /// 1 GiB, at 1 and [`SHORT`] rows or [`SHORT_COLS`] columns (the tiles' is `bytes_per_us`).
    pub few_rows_memory: [f64; 2],
    pub few_cols_memory: [f64; 2],
    /// The same for few columns on short rows, reading an A of 1 GiB 8 entries wide.
    pub few_cols_short_memory: [f64; 2],
    /// Bytes per microsecond one block of each short side's kernel gets, from memory and from the
    /// L2 cache, at 1 and [`SHORT`] rows or [`SHORT_COLS`] columns: measured with a block on a
    /// quarter of the SMs.
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

/// The H200's calibration, recorded by `calibrate` (its record is in the book's runs).
pub const RECORDED: &str = include_str!("../calibration/nvidia-h200.txt");

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
    /// Reads a calibration file: `key value…` lines, `#` comments.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut device = None;
        let (mut sms, mut launch, mut bytes_per_us) = (None, None, None);
        let (mut l2_bytes, mut l2_bytes_per_us) = (None, None);
        let mut tiles = vec![None; TILES.len()];
        let mut tiles_unaligned = vec![None; TILES.len()];
        let (mut few_rows, mut few_cols) = ([None, None], [None, None]);
        let (mut few_rows_memory, mut few_cols_memory) = ([None, None], [None, None]);
        let (mut few_cols_short, mut few_cols_short_memory) = ([None, None], [None, None]);
        let (mut few_rows_block, mut few_cols_block) = ([None, None], [None, None]);
        let mut copy = None;
        let (mut short_k, mut short_k_memory, mut flat_memory) = (None, None, None);
        for (i, line) in text.lines().enumerate().map(|(i, l)| (i + 1, l.trim())) {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (key, rest) = line.split_once(' ').unwrap_or((line, ""));
            // The second count a short side's lines are measured at: rows or columns.
            let far = far_point(key);
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
                "few_rows_memory" | "few_cols_memory" | "few_cols_short_memory" => {
                    let v = nums()?;
                    let (which, rate) = match v[..] {
                        [r, rate] if r as usize == 1 => (0, rate),
                        [r, rate] if r as usize == far => (1, rate),
                        _ => return Err(format!("line {i}: {key} needs 1 or {far} and a rate")),
                    };
                    let list = match key {
                        "few_rows_memory" => &mut few_rows_memory,
                        "few_cols_memory" => &mut few_cols_memory,
                        _ => &mut few_cols_short_memory,
                    };
                    list[which] = Some(rate);
                }
                "few_rows_block" | "few_cols_block" => {
                    let which = match nums()?[..] {
                        [r, memory, l2] if r as usize == 1 => (0, Rates { memory, l2 }),
                        [r, memory, l2] if r as usize == far => (1, Rates { memory, l2 }),
                        _ => return Err(format!("line {i}: {key} needs 1 or {far}, then MEMORY L2")),
                    };
                    let list =
                        if key == "few_rows_block" { &mut few_rows_block } else { &mut few_cols_block };
                    list[which.0] = Some(which.1);
                }
                "copy" => match nums()?[..] {
                    [memory, l2] => copy = Some(Rates { memory, l2 }),
                    _ => return Err(format!("line {i}: copy needs MEMORY L2")),
                },
                "few_rows" | "few_cols" | "few_cols_short" => {
                    let v = nums()?;
                    let which = match v.first().map(|&r| r as usize) {
                        Some(1) => 0,
                        Some(r) if r == far => 1,
                        _ => return Err(format!("line {i}: {key} is measured at 1 and {far}")),
                    };
                    let c = costs(&v[1..])?;
                    match key {
                        "few_rows" => few_rows[which] = Some(c),
                        "few_cols" => few_cols[which] = Some(c),
                        _ => few_cols_short[which] = Some(c),
                    }
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
            few_rows_memory: both(few_rows_memory, "few_rows_memory", SHORT)?,
            few_cols_memory: both(few_cols_memory, "few_cols_memory", SHORT_COLS)?,
            few_cols_short_memory: both(few_cols_short_memory, "few_cols_short_memory", SHORT_COLS)?,
            few_rows_block: both(few_rows_block, "few_rows_block", SHORT)?,
            few_cols_block: both(few_cols_block, "few_cols_block", SHORT_COLS)?,
            copy: copy.ok_or_else(|| missing("copy"))?,
            few_rows: both(few_rows, "few_rows", SHORT)?,
            few_cols: both(few_cols, "few_cols", SHORT_COLS)?,
            few_cols_short: both(few_cols_short, "few_cols_short", SHORT_COLS)?,
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
            .chain(&cal.few_cols_short_memory)
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
        for (key, pair) in [
            ("few_rows", self.few_rows),
            ("few_cols", self.few_cols),
            ("few_cols_short", self.few_cols_short),
        ] {
            let far = far_point(key);
            for (r, c) in [1, far].into_iter().zip(pair) {
                let _ = writeln!(f, "{key} {r} {}", line(c));
            }
        }
        for (key, pair) in [
            ("few_rows_memory", self.few_rows_memory),
            ("few_cols_memory", self.few_cols_memory),
            ("few_cols_short_memory", self.few_cols_short_memory),
        ] {
            let far = far_point(key);
            for (r, rate) in [1, far].into_iter().zip(pair) {
                let _ = writeln!(f, "{key} {r} {rate:.0}");
            }
        }
        for (key, pair) in [("few_rows_block", self.few_rows_block), ("few_cols_block", self.few_cols_block)]
        {
            let far = far_point(key);
            for (r, rates) in [1, far].into_iter().zip(pair) {
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

/// The second count a short side's key is measured at: [`SHORT_COLS`] columns for few columns'
/// keys, [`SHORT`] rows for few rows'.
fn far_point(key: &str) -> usize {
    if key.starts_with("few_cols") { SHORT_COLS } else { SHORT }
}

/// The two values of `key` a calibration gives at 1 and `far` rows or columns, or which line is
/// missing.
fn both<T>([one, short]: [Option<T>; 2], key: &str, far: usize) -> Result<[T; 2], String> {
    let missing = |r| format!("no {key} {r} line");
    Ok([one.ok_or_else(|| missing(1))?, short.ok_or_else(|| missing(far))?])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_goes_through_its_two_points() {
        let l = Line::through((256.0, 10.0), (2048.0, 38.0));
        assert!((l.at(256.0) - 10.0).abs() < 1e-12 && (l.at(2048.0) - 38.0).abs() < 1e-12);
        assert!((l.per_k - 28.0 / 1792.0).abs() < 1e-15);
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

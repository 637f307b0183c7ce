//! `cargo run --release -p step10_any_shape --bin calibrate [-- --out FILE]`: measures, once per
//! GPU, the times step 10's model needs (see `step10_any_shape::model`) and writes them as a
//! calibration file. The rule reads the H200's, recorded in the repository; point
//! `STEP10_CALIBRATION` at the file this writes to use your GPU's.
//!
//! Every time is a kernel's at a shape built so that the model's count of rounds is exact: the
//! SMs each get one block (the one-block line), or two full rounds of the blocks they hold at once
//! (the full line), at two depths of K; the line through the two depths is the block's time. The
//! short side's kernels, which are bound by memory, are measured at depths whose operands fit in
//! half the L2 cache (the model adds the memory's time where a product's do not); short K at K of
//! 4 and 16, its C in half the L2 cache; the tiles at depths of 256 and 2048, with rows 16-byte
//! multiples and, reading them as they are, not. The rates are a kernel's bytes over its time past
//! the launch: with every SM full, with one block on each of a quarter of the SMs (the short
//! side's, a block's own rate), and the padding copy's.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, anyhow, bail};
use common::gpu_queue::{GpuQueue, GpuState};
use common::measure::{self, Buffers, Recipe};
use common::pad::{self, Pitched};
use common::queue::Queue;
use common::step_kernel::StepKernel;
use common::timing::{self, Sampling};
use common::{Params, Shape, gpu};
use step10_any_shape::calibration::{Calibration, Costs, Line, Rates};
use step10_any_shape::tiles::{FEW_ROWS_COLUMNS, FLAT, few_cols_rows};
use step10_any_shape::{
    Cut, SHORT, SHORT_COLS, SHORT_K, SHORT_K_COLUMNS, SHORT_K_ROWS, STEP, TILES, Tile, Way,
};

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `--out FILE` (default: `calibration/<device>.txt` under the crate, beside the recorded one).
fn out_path(device: &str) -> Result<Option<PathBuf>> {
    let mut args = std::env::args().skip(1);
    let mut out = None;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--out" => out = Some(PathBuf::from(args.next().context("--out needs a file")?)),
            "-h" | "--help" => {
                println!("calibrate [--out FILE]: measures the block times of step 10's model on this GPU");
                return Ok(None);
            }
            other => bail!("calibrate takes --out FILE, not '{other}'"),
        }
    }
    let slug: String =
        device.to_lowercase().chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
    Ok(Some(out.unwrap_or_else(|| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("calibration").join(format!("{slug}.txt"))
    })))
}

/// Bytes of A, B and C at `s`.
fn operand_bytes(s: Shape) -> f64 {
    s.f32_bytes() as f64
}

struct Bench<'g> {
    gpu: &'g gpu::Gpu,
    /// Each parameter set compiled once: the shapes it is timed at are the launch's arguments.
    compiled: RefCell<HashMap<Vec<(String, u32)>, gpu::Kernel>>,
}

impl Bench<'_> {
    /// The median time of `cut` at `s`, in microseconds, on inputs of a constant (the time does
    /// not depend on the values).
    fn time(&self, cut: Cut, s: Shape) -> Result<(f64, u32)> {
        let set: Vec<(String, u32)> = cut.params(false).into_iter().map(|(n, v)| (n.to_owned(), v)).collect();
        let params = Params::with_overrides(STEP.params, &set)?;
        let kernel = self.compiled.borrow().get(&set).cloned();
        let step_kernel = match kernel {
            Some(kernel) => StepKernel::with_kernel(&STEP, params, kernel)?,
            None => {
                let step_kernel = StepKernel::new(self.gpu, &STEP, params)?;
                self.compiled.borrow_mut().insert(set, step_kernel.kernel.clone());
                step_kernel
            }
        };
        let stream = &self.gpu.stream;
        let err = |e| anyhow!("allocating {s}: {e:?}");
        let mut bufs = Buffers {
            a: stream.clone_htod(&vec![0.75f32; s.m * s.k]).map_err(err)?,
            b: stream.clone_htod(&vec![0.5f32; s.k * s.n]).map_err(err)?,
            bt: None,
            c: stream.alloc_zeros(s.m * s.n).map_err(err)?,
            shape: s,
        };
        let recipe = Recipe { next: false, paths: false, ..Recipe::timed(Sampling::new(None), false) };
        let measured = measure::measure(self.gpu, &step_kernel, &mut bufs, recipe)?;
        Ok((1e3 * measured.stats()?.median_ms, measured.resources.blocks_per_sm))
    }

    /// The line through the block times at depths d1 and d2, from shapes of those depths (`at`)
    /// whose busiest SM runs `rounds` rounds; printed as it goes.
    fn line(
        &self,
        what: &str,
        way: Way,
        pad: bool,
        rounds: f64,
        at: impl Fn(usize) -> Shape,
        (d1, d2): (usize, usize),
    ) -> Result<Line> {
        let mut points = [(0.0, 0.0); 2];
        for (p, d) in points.iter_mut().zip([d1, d2]) {
            let s = at(d);
            let (us, per_sm) = self.time(Cut { way, split: 1, pad }, s)?;
            // The shapes' rounds assume the model's blocks an SM; another occupancy would
            // silently measure something else.
            if per_sm != way.per_sm() {
                bail!(
                    "{} holds {per_sm} blocks an SM on this GPU, not the {} the model counts; the calibration would be wrong",
                    way.name(),
                    way.per_sm()
                );
            }
            println!(
                "{:<12} {what:<9} {:<20} {us:>10.2} µs  ({per_sm} blocks an SM)",
                way.name(),
                s.to_string()
            );
            // The depth the blocks multiply over: K itself (d, or d + 2 for the unaligned tiles).
            *p = (s.k as f64, us / rounds);
        }
        Ok(Line::through(points[0], points[1]))
    }

    /// A tile's lines: SMs blocks (one each), and 2·per_sm·SMs (two full rounds); `aligned`: N
    /// and K multiples of 4, else both 2 past one (N short of the last tile by 2), read as they are.
    fn tile(&self, t: Tile, sms: usize, aligned: bool) -> Result<Costs> {
        let (what, off) = if aligned { ("", 0) } else { (" unaligned", 2) };
        let shape = |tiles_m: usize, tiles_n: usize| {
            move |d: usize| Shape { m: tiles_m * t.bm as usize, n: tiles_n * t.bn as usize - off, k: d + off }
        };
        let depths = (256, 2048);
        let way = Way::Tile(t);
        let full =
            self.line(&format!("full{what}"), way, aligned, 2.0, shape(sms * t.per_sm as usize, 2), depths)?;
        let one = if t.per_sm == 1 {
            full
        } else {
            self.line(&format!("one{what}"), way, aligned, 1.0, shape(sms, 1), depths)?
        };
        Ok(Costs { one, full })
    }

    /// A short side's lines at `r` rows (few rows) or columns (few columns), at depths whose
    /// operands fit in half the L2 cache (`l2` bytes).
    fn short(&self, way: Way, r: usize, sms: usize, l2: f64) -> Result<Costs> {
        let shape = move |blocks: usize| {
            move |d: usize| match way {
                Way::FewRows => Shape { m: r, n: blocks * FEW_ROWS_COLUMNS, k: d },
                _ => Shape { m: blocks * few_cols_rows(Shape { m: 1, n: r, k: d }, 1), n: r, k: d },
            }
        };
        // Few columns on long rows: a block's share of K over 64 (at least 128 and 512).
        let least = if way == Way::FewCols { 512 } else { 64 };
        let depths = |at: &dyn Fn(usize) -> Shape| {
            let bytes = |d| operand_bytes(at(d));
            let mut d2 = least;
            while d2 < 16384 && bytes(2 * d2) <= l2 / 2.0 {
                d2 *= 2;
            }
            (d2 / 4, d2)
        };
        let (one, full) = (shape(sms), shape(2 * way.per_sm() as usize * sms));
        let one = self.line("one", way, true, 1.0, one, depths(&one))?;
        let full = self.line("full", way, true, 2.0, full, depths(&full))?;
        Ok(Costs { one, full })
    }

    /// Few columns' lines on short rows at `r` columns, over K of 8 and 64 (2 and 16 lanes a
    /// row; a block takes fewer rows the deeper they are): SMs blocks and two full rounds, all in
    /// half the L2 cache.
    fn few_cols_short(&self, r: usize, sms: usize) -> Result<Costs> {
        let way = Way::FewCols;
        let shape = move |blocks: usize| {
            move |d: usize| Shape { m: blocks * few_cols_rows(Shape { m: 1, n: r, k: d }, 1), n: r, k: d }
        };
        let one = self.line("one short", way, true, 1.0, shape(sms), (8, 64))?;
        let full =
            self.line("full short", way, true, 2.0, shape(2 * way.per_sm() as usize * sms), (8, 64))?;
        Ok(Costs { one, full })
    }

    /// The bytes per microsecond one block of a short side's kernel gets at `r` rows (few rows) or
    /// columns (few columns), from memory (a long operand of 1 GiB) and from the L2 cache (the
    /// operands in 45% of it): a block on each of a quarter of the SMs, few enough that they do
    /// not come near the full rate; the bytes over the time past the launch, over the blocks.
    fn block_rates(&self, way: Way, r: usize, sms: usize, l2: f64, launch: f64) -> Result<Rates> {
        let blocks = (sms / 4).max(1);
        // The side that is not short, and K for `floats` floats in the long operand.
        let long = match way {
            Way::FewRows => blocks * FEW_ROWS_COLUMNS,
            // Long rows: K is far over 64 at these sizes.
            _ => blocks * few_cols_rows(Shape { m: 1, n: r, k: 1 << 20 }, 1),
        };
        let shape = |floats: f64| {
            let k = ((floats / long as f64) as usize / 4 * 4).max(4);
            match way {
                Way::FewRows => Shape { m: r, n: long, k },
                _ => Shape { m: long, n: r, k },
            }
        };
        let mut rates = [0.0; 2];
        for (rate, (s, from)) in rates
            .iter_mut()
            .zip([(shape((1u64 << 28) as f64), "memory"), (shape(0.45 * l2 / 4.0), "L2 cache")])
        {
            let (us, _) = self.time(Cut { way, split: 1, pad: true }, s)?;
            *rate = operand_bytes(s) / (us - launch) / blocks as f64;
            println!(
                "{:<12} {:<9} {:<20} {us:>10.2} µs  ({:.1} GB/s a block, {blocks} blocks)",
                way.name(),
                format!("{from} {r}"),
                s.to_string(),
                *rate / 1e3
            );
        }
        Ok(Rates { memory: rates[0], l2: rates[1] })
    }

    /// The padding copy's bytes (read and written) per microsecond past the launch, from memory
    /// (a C′ of 512 MiB copied back into a C of rows 3 floats shorter) and from the L2 cache (the
    /// same in 45% of it).
    fn copy_rates(&self, l2: f64, launch: f64) -> Result<Rates> {
        let mut state = GpuState::default();
        let mut rates = [0.0; 2];
        let pitch = 16384;
        let in_l2 = ((0.45 * l2 / 8.0) as usize / pitch).max(1);
        for (rate, (rows, from)) in rates.iter_mut().zip([(8192, "memory"), (in_l2, "L2 cache")]) {
            let cols = pitch - 3;
            let mut q = GpuQueue::bare(self.gpu, &mut state);
            let src = q.upload("the copy's source", &vec![0.5f32; rows * pitch])?;
            let dst = q.upload("the copy's destination", &vec![0.0f32; rows * cols])?;
            let (from_l, to_l) = (Pitched { rows, cols, pitch }, Pitched { rows, cols, pitch: cols });
            let t = timing::time_gpu(self.gpu, Sampling::new(None), || {
                pad::copy(&mut q, (src, from_l), (dst, to_l))
            })?;
            q.free(src).and(q.free(dst))?;
            let us = 1e3 * t.median_ms;
            *rate = 8.0 * (rows * cols) as f64 / (us - launch);
            println!(
                "{:<12} {from:<9} {:<20} {us:>10.2} µs  ({:.0} GB/s)",
                "copy",
                format!("{rows}×{cols}"),
                *rate / 1e3
            );
        }
        Ok(Rates { memory: rates[0], l2: rates[1] })
    }

    /// Short K's lines, over K of 4 and [`SHORT_K`]: SMs blocks (a row of them 64 rows tall), and
    /// two full rounds. Both C's fit in half the L2 cache.
    fn short_k(&self, sms: usize) -> Result<Costs> {
        let shape = move |blocks_m: usize| {
            move |d: usize| Shape { m: blocks_m * SHORT_K_ROWS, n: sms * SHORT_K_COLUMNS, k: d }
        };
        let way = Way::ShortK;
        let one = self.line("one", way, true, 1.0, shape(1), (4, SHORT_K))?;
        let full = self.line("full", way, true, 2.0, shape(2 * way.per_sm() as usize), (4, SHORT_K))?;
        Ok(Costs { one, full })
    }
}

fn run() -> Result<()> {
    let gpu = gpu::open("calibrate", 0)?;
    if !gpu::nvrtc_present() {
        bail!("{}", gpu::NO_NVRTC);
    }
    let Some(out) = out_path(&gpu.info.name)? else { return Ok(()) };
    let sms = gpu.info.sms as usize;
    println!(
        "calibrating step 10's model on {} ({sms} SMs); times are medians of back-to-back launches",
        gpu.info.name
    );
    let bench = Bench { gpu: &gpu, compiled: RefCell::default() };
    let l2 = f64::from(gpu.info.l2_bytes);
    let (launch, _) =
        bench.time(Cut { way: Way::FewCols, split: 1, pad: true }, Shape { m: 1, n: 1, k: 16 })?;
    println!("{:<12} {:<9} {:<20} {launch:>10.2} µs", "launch", "", "1×1×16");
    let tiles = TILES.iter().map(|&t| bench.tile(t, sms, true)).collect::<Result<Vec<_>>>()?;
    let tiles_unaligned = TILES.iter().map(|&t| bench.tile(t, sms, false)).collect::<Result<Vec<_>>>()?;
    let few_rows = [bench.short(Way::FewRows, 1, sms, l2)?, bench.short(Way::FewRows, SHORT, sms, l2)?];
    let few_cols = [bench.short(Way::FewCols, 1, sms, l2)?, bench.short(Way::FewCols, SHORT_COLS, sms, l2)?];
    let few_cols_short = [bench.few_cols_short(1, sms)?, bench.few_cols_short(SHORT_COLS, sms)?];
    let short_k = bench.short_k(sms)?;
    // The bandwidth the short side's kernels see reading a long operand of 1 GiB from memory
    // (few rows with K split 8 ways, enough blocks to fill the SMs), and few columns reading A of
    // a quarter of the L2 cache from there: the bytes over the time past the launch (two launches
    // where K is split: sum_slices' bytes are few).
    let rate = |way: Way, split: u32, s: Shape, from: &str| -> Result<f64> {
        let (us, _) = bench.time(Cut { way, split, pad: true }, s)?;
        let rate = operand_bytes(s) / (us - launch * if split > 1 { 2.0 } else { 1.0 });
        println!(
            "{:<12} {from:<9} {:<20} {us:>10.2} µs  ({:.0} GB/s)",
            way.name(),
            s.to_string(),
            rate / 1e3
        );
        Ok(rate)
    };
    let big = 16384;
    let few_rows_memory = [
        rate(Way::FewRows, 8, Shape { m: 1, n: big, k: big }, "memory")?,
        rate(Way::FewRows, 8, Shape { m: SHORT, n: big, k: big }, "memory")?,
    ];
    let few_cols_memory = [
        rate(Way::FewCols, 1, Shape { m: big, n: 1, k: big }, "memory")?,
        rate(Way::FewCols, 1, Shape { m: big, n: SHORT_COLS, k: big }, "memory")?,
    ];
    // Few columns on short rows: an A of 1 GiB, 8 entries wide.
    let few_cols_short_memory = [
        rate(Way::FewCols, 1, Shape { m: 1 << 25, n: 1, k: 8 }, "memory")?,
        rate(Way::FewCols, 1, Shape { m: 1 << 25, n: SHORT_COLS, k: 8 }, "memory")?,
    ];
    // Short K writing a C of 1 GiB.
    let short_k_memory = rate(Way::ShortK, 1, Shape { m: big, n: big, k: SHORT_K }, "memory")?;
    // The flat tile with B in memory: 16 rows of A, a column of blocks for each SM and K split 8
    // ways (two full rounds), at depths of 256 and 2048 (B of 138 MB and 1.1 GB); a round's time
    // is the launch's past its two launches (the split's and sum_slices'), halved.
    let mut points = [(0.0, 0.0); 2];
    for (p, d) in points.iter_mut().zip([256, 2048]) {
        let s = Shape { m: FLAT.bm as usize, n: sms * FLAT.bn as usize, k: 8 * d };
        let (us, _) = bench.time(Cut { way: Way::Tile(FLAT), split: 8, pad: true }, s)?;
        println!("{:<12} {:<9} {:<20} {us:>10.2} µs", Way::Tile(FLAT).name(), "memory", s.to_string());
        *p = (d as f64, (us - 2.0 * launch) / 2.0);
    }
    let flat_memory = Line::through(points[0], points[1]);
    let block = |way| -> Result<[Rates; 2]> {
        let far = if way == Way::FewCols { SHORT_COLS } else { SHORT };
        Ok([bench.block_rates(way, 1, sms, l2, launch)?, bench.block_rates(way, far, sms, l2, launch)?])
    };
    let (few_rows_block, few_cols_block) = (block(Way::FewRows)?, block(Way::FewCols)?);
    let copy = bench.copy_rates(l2, launch)?;
    let rows = 2 * Way::FewCols.per_sm() as usize * sms * few_cols_rows(Shape { m: 1, n: 1, k: 1 << 20 }, 1);
    let k = ((l2 / 4.0) as usize / (4 * rows)).next_multiple_of(4);
    let l2_bytes_per_us = rate(Way::FewCols, 1, Shape { m: rows, n: 1, k }, "L2 cache")?;
    let cal = Calibration {
        device: gpu.info.name.clone(),
        sms: gpu.info.sms,
        launch,
        bytes_per_us: few_cols_memory[0],
        l2_bytes: l2,
        l2_bytes_per_us,
        tiles,
        tiles_unaligned,
        few_rows,
        few_cols,
        few_cols_short,
        few_rows_memory,
        few_cols_memory,
        few_cols_short_memory,
        few_rows_block,
        few_cols_block,
        copy,
        short_k,
        short_k_memory,
        flat_memory,
    };
    let text = format!(
        "# step 10's calibration, written by `cargo run --release -p step10_any_shape --bin calibrate`\n{}",
        cal.write()
    );
    if let Some(dir) = out.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(&out, &text).with_context(|| format!("writing {}", out.display()))?;
    print!("{text}");
    println!("wrote {}", out.display());
    Ok(())
}

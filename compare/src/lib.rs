//! The results of running every step over a range of sizes: a table, a chart and a roofline.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};
use common::report::rate;
use common::{GpuStep, Intensity, Precision};
use plotters::prelude::*;

pub mod dram;
pub mod families;
pub mod suite;

/// The GPU steps, in course order.
pub const GPU_STEPS: [&GpuStep; 10] = [
    &step02_gpu_naive::STEP,
    &step03_single_block::STEP,
    &step04_tiled::STEP,
    &step05_thread_tile::STEP,
    &step06_prefetch::STEP,
    &step07_tf32_mma::STEP,
    &step08_wgmma_tma::STEP,
    &step09_3xtf32::STEP,
    &step10_any_shape::STEP,
    &step11_int8_crt::STEP,
];

/// The name the FP32 baseline (strict SGEMM) goes by in tables and charts.
pub const CUBLAS: &str = "cublas_sgemm";

/// The name of the TF32 baseline: cuBLAS allowed to use the tensor cores (TF32 tensor-op math).
pub const CUBLAS_TF32: &str = "cublas_tf32";

/// The size the roofline is drawn at, when the run includes it.
pub const ROOFLINE_SIZE: usize = 4096;

/// Bytes the shared-memory pipe of one SM delivers per clock: 32 banks of 4 bytes.
pub const SMEM_BYTES_PER_CLOCK: f64 = 128.0;

/// The shared-memory bandwidth of a device in GB/s (10⁹ bytes): 128 bytes per clock per SM.
pub fn smem_gbs(sms: u32, clock_mhz: u32) -> f64 {
    SMEM_BYTES_PER_CLOCK * f64::from(sms) * f64::from(clock_mhz) * 1e6 / 1e9
}

/// The command that reproduces a run with `args` (as given after the program name).
pub fn command_line(args: &[String]) -> String {
    let mut command = String::from("cargo run --release -p compare");
    if !args.is_empty() {
        command += " --";
    }
    for arg in args {
        let plain =
            !arg.is_empty() && arg.chars().all(|c| c.is_ascii_alphanumeric() || "-_.,=/:+@%".contains(c));
        if plain {
            let _ = write!(command, " {arg}");
        } else {
            let _ = write!(command, " '{}'", arg.replace('\'', r"'\''"));
        }
    }
    command
}

/// The roofline chart's file beside the chart `chart_file`: `x.svg` → `x-roofline.svg`.
pub fn roofline_file(chart_file: &str) -> String {
    format!("{}-roofline.svg", chart_file.strip_suffix(".svg").unwrap_or(chart_file))
}

/// One step at one size.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cell {
    pub gflops: f64,
    pub passed: bool,
}

/// A row per step (and cuBLAS), a column per size; `None` where the step does not serve the size.
#[derive(Clone, Debug, PartialEq)]
pub struct Results {
    pub device: String,
    pub driver: String,
    pub nvrtc: String,
    pub date: String,
    /// The command that produced these results.
    pub command: String,
    pub sizes: Vec<usize>,
    pub rows: Vec<(String, Vec<Option<Cell>>)>,
    /// One per row, in the order of `rows`: the step's arithmetic intensity at its default
    /// parameters; None for the CPU step and cuBLAS.
    pub intensities: Vec<Option<Intensity>>,
    /// One per row: the arithmetic it claims. A TF32 row is set against cuBLAS TF32 and the
    /// TF32 peak; a row of three TF32 products (FP32 accuracy) against cuBLAS SGEMM, under a
    /// third of the TF32 peak; the others against cuBLAS SGEMM and the FP32 peak.
    pub precision: Vec<Precision>,
    /// The FP32 peak: SMs × FP32 lanes × 2 FLOPs per FMA × clock, in GFLOP/s.
    pub peak_gflops: f64,
    /// The dense TF32 tensor-core peak at the same clock, where known.
    pub tf32_peak_gflops: Option<f64>,
    /// DRAM bandwidth measured by a copy kernel in the same run, in GB/s (reads and writes).
    pub dram_gbs: Option<f64>,
    /// Shared-memory bandwidth, 128 bytes per clock per SM, in GB/s.
    pub smem_gbs: f64,
}

/// What limits a kernel at its intensities: the lowest roof.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bound {
    /// "DRAM", "shared memory", "FP32 peak" or "TF32 peak".
    pub by: &'static str,
    pub gflops: f64,
}

/// A step placed on the roofline: its row, intensities and rate (None where it did not run).
struct Placed<'a> {
    row: usize,
    name: &'a str,
    intensity: Intensity,
    cell: Option<Cell>,
}

impl Results {
    fn row(&self, name: &str) -> Option<&[Option<Cell>]> {
        self.rows.iter().find(|(n, _)| n == name).map(|(_, r)| r.as_slice())
    }

    fn precision(&self, row: usize) -> Precision {
        self.precision.get(row).copied().unwrap_or(Precision::Fp32)
    }

    fn is_tf32(&self, row: usize) -> bool {
        self.precision(row).is_tf32()
    }

    fn is_split(&self, row: usize) -> bool {
        self.precision(row) == Precision::Tf32x3
    }

    /// The baseline of row `row`: cuBLAS TF32 for a TF32 row, cuBLAS SGEMM otherwise.
    pub fn baseline(&self, row: usize) -> &'static str {
        if self.is_tf32(row) { CUBLAS_TF32 } else { CUBLAS }
    }

    /// Share of its baseline in percent, for a cell of row `row` in column `col`.
    pub fn share(&self, row: usize, cell: Cell, col: usize) -> Option<f64> {
        let base = self.row(self.baseline(row))?.get(col).copied().flatten()?;
        Some(100.0 * cell.gflops / base.gflops)
    }

    /// The speed-up from the first step to the last FP32 one, at the largest size both ran.
    pub fn speedup(&self) -> Option<(usize, f64)> {
        let first = &self.rows.first()?.1;
        let last = &self
            .rows
            .iter()
            .enumerate()
            .rev()
            .find(|(i, (n, _))| n != CUBLAS && n != CUBLAS_TF32 && !self.precision(*i).tensor_cores())?
            .1
            .1;
        (0..self.sizes.len()).rev().find_map(|i| {
            Some((self.sizes[i], last.get(i).copied()??.gflops / first.get(i).copied()??.gflops))
        })
    }

    /// The size the roofline is drawn at: 4096 when the run includes it, otherwise the largest
    /// size below it, otherwise the smallest size; None without sizes.
    pub fn roofline_size(&self) -> Option<usize> {
        let below = self.sizes.iter().copied().filter(|&s| s <= ROOFLINE_SIZE).max();
        below.or_else(|| self.sizes.iter().copied().min())
    }

    /// The lowest roof at `intensity`: the peak of the step's arithmetic (when the TF32 peak is
    /// known: TF32 for a TF32 step, a third of it for a step of three TF32 products; else FP32),
    /// or a memory whose bandwidth times the intensity is lower (DRAM only where it was measured).
    pub fn bound(&self, intensity: Intensity, precision: Precision) -> Bound {
        let mut bound = match precision.roof(self.peak_gflops, self.tf32_peak_gflops) {
            (by, Some(gflops)) => Bound { by, gflops },
            // A GPU whose TF32 peak the course does not know: the FP32 peak stands in.
            (_, None) => Bound { by: "FP32 peak", gflops: self.peak_gflops },
        };
        let roofs = [
            self.dram_gbs.map(|gbs| ("DRAM", gbs * intensity.global)),
            intensity.shared.map(|i| ("shared memory", self.smem_gbs * i)),
        ];
        for (by, gflops) in roofs.into_iter().flatten() {
            if gflops < bound.gflops {
                bound = Bound { by, gflops };
            }
        }
        bound
    }

    /// The GPU steps with an intensity, each with its cell at the roofline size.
    fn placed(&self) -> Vec<Placed<'_>> {
        let col = self.roofline_size().and_then(|s| self.sizes.iter().position(|&x| x == s));
        self.rows
            .iter()
            .enumerate()
            .filter_map(|(row, (name, cells))| {
                let intensity = self.intensities.get(row).copied().flatten()?;
                let cell = col.and_then(|c| cells.get(c).copied().flatten());
                Some(Placed { row, name, intensity, cell })
            })
            .collect()
    }

    /// A baseline's cell at the roofline size.
    fn at_roofline(&self, name: &str) -> Option<Cell> {
        let col = self.sizes.iter().position(|&x| Some(x) == self.roofline_size())?;
        self.row(name)?.get(col).copied().flatten()
    }

    /// Whether a TF32 step is placed on the roofline, so that its peak belongs on the chart.
    fn tf32_placed(&self) -> bool {
        self.placed().iter().any(|p| self.precision(p.row).tensor_cores())
    }

    /// Whether a step of three TF32 products is placed, so that a third of the TF32 peak is its
    /// roof on the chart.
    fn split_placed(&self) -> bool {
        self.placed().iter().any(|p| self.is_split(p.row))
    }

    /// Whether a step of INT8 products from residues is placed, so that a seventh of the INT8
    /// peak (four times the TF32 one) is its roof on the chart.
    fn int8_placed(&self) -> bool {
        self.placed().iter().any(|p| self.precision(p.row) == Precision::Int8Crt)
    }

    /// The table: GFLOP/s and share of the baseline per step and size.
    pub fn table(&self) -> String {
        let mut t = String::from("| step |");
        for s in &self.sizes {
            let _ = write!(t, " {s}³ |");
        }
        t += "\n| --- |";
        t += &" ---: |".repeat(self.sizes.len());
        t += "\n";
        for (row, (name, cells)) in self.rows.iter().enumerate() {
            let _ = write!(t, "| {name} |");
            for (i, cell) in cells.iter().enumerate() {
                match cell {
                    None => t += " – |",
                    Some(c) => {
                        let share = match self.share(row, *c, i) {
                            Some(p) if name != CUBLAS && name != CUBLAS_TF32 => format!(" ({p:.1}%)"),
                            _ => String::new(),
                        };
                        let mark = if c.passed { "" } else { " FAILED" };
                        let _ = write!(t, " {}{share}{mark} |", rate(c.gflops));
                    }
                }
            }
            t += "\n";
        }
        t
    }

    /// The results page: table, speed-up, the versions and command it was measured with, and
    /// the roofline (its chart is [`roofline_file`] of `chart_file`).
    pub fn markdown(&self, chart_file: &str) -> String {
        let mut md = format!("# Results on {}\n\n", self.device);
        let _ = writeln!(
            md,
            "Measured {} with driver {}, NVRTC {}. Command: `{}`. GFLOP/s at each square size (M = N = K), with the \
             share of cuBLAS measured in the same run: of {CUBLAS} (strict FP32) for the steps held to \
             FP32's limits (three TF32 products per term included), of {CUBLAS_TF32} (cuBLAS allowed TF32 \
             on the tensor cores) for the TF32 steps. Every result is verified against the f64 reference, \
             a TF32 one to TF32's limits. – marks a size the step \
             does not serve (step03 holds the whole problem in one block; step01 stops where it would \
             take minutes; a step needs a GPU of its compute capability).\n",
            self.date, self.driver, self.nvrtc, self.command
        );
        md += &self.table();
        if let Some((size, x)) = self.speedup() {
            let _ = writeln!(md, "\nFrom the first step to the last FP32 one: {x:.0}× faster at {size}³.");
        }
        let _ = writeln!(md, "\n![GFLOP/s against size]({chart_file})");
        if let Some(size) = self.roofline_size() {
            md += &self.roofline_section(size, &roofline_file(chart_file));
        }
        md
    }

    /// The page's roofline section: the three ceilings, each step's intensities and bound, and
    /// the chart.
    fn roofline_section(&self, size: usize, roofline_file: &str) -> String {
        let mut md = format!("\n## Roofline at {size}³\n\n");
        let _ = writeln!(
            md,
            "The FP32 peak is {:.0} GFLOP/s (SMs × FP32 lanes × 2 FLOPs per FMA × clock).",
            self.peak_gflops
        );
        if let Some(peak) = self.tf32_peak_gflops.filter(|_| self.tf32_placed()) {
            let _ = writeln!(
                md,
                "The TF32 peak is {peak:.0} GFLOP/s (SMs × dense TF32 tensor-core FLOPs per clock × clock), the \
                 roof of the TF32 steps."
            );
            if self.split_placed() {
                let _ = writeln!(
                    md,
                    "A third of it, {:.0} GFLOP/s, is the roof of a step that computes three TF32 products per \
                     term.",
                    peak / 3.0
                );
            }
            if self.int8_placed() {
                let _ = writeln!(
                    md,
                    "The INT8 peak is four times it, {:.0} (10⁹ operations a second); a seventh of it, {:.0} GFLOP/s, \
                     is the roof of a step that computes seven INT8 products per product, counted in that product's \
                     FLOPs.",
                    4.0 * peak,
                    4.0 * peak / 7.0
                );
            }
        }
        match self.dram_gbs {
            Some(gbs) => {
                let _ = writeln!(
                    md,
                    "The DRAM bandwidth is {gbs:.0} GB/s, measured by a copy kernel in this run (bytes read \
                     and written)."
                );
            }
            None => {
                let _ = writeln!(
                    md,
                    "The DRAM bandwidth was not measured in this run, so there is no DRAM roof."
                );
            }
        }
        let _ = writeln!(
            md,
            "The shared-memory bandwidth is {:.0} GB/s (128 bytes per clock per SM).",
            self.smem_gbs
        );
        if let Some(c) = self.at_roofline(CUBLAS) {
            let _ = writeln!(md, "cuBLAS SGEMM ran at {:.0} GFLOP/s at {size}³ (the dashed line).", c.gflops);
        }
        if let Some(c) = self.at_roofline(CUBLAS_TF32).filter(|_| self.tf32_placed()) {
            let _ = writeln!(md, "cuBLAS TF32 ran at {:.0} GFLOP/s at {size}³ (the dotted line).", c.gflops);
        }
        let _ = writeln!(
            md,
            "\nEach GPU step at its default parameters: the FLOPs per byte its loads request from global \
             memory and per byte of shared-memory traffic, its rate at {size}³, and the lowest roof at \
             those intensities. The caches serve some of the global loads, so a step can sit above its \
             DRAM roof.\n"
        );
        md += "| step | FLOP/B (global) | FLOP/B (shared) | GFLOP/s | bound by |\n";
        md += "| --- | ---: | ---: | ---: | --- |\n";
        for p in self.placed() {
            let shared = p.intensity.shared.map_or("–".to_owned(), |i| format!("{i:.2}"));
            let rate = match p.cell {
                None => "–".to_owned(),
                Some(c) => format!("{:.0}{}", c.gflops, if c.passed { "" } else { " FAILED" }),
            };
            let bound = self.bound(p.intensity, self.precision(p.row));
            let _ = writeln!(
                md,
                "| {} | {:.2} | {shared} | {rate} | {} ({:.0} GFLOP/s) |",
                p.name, p.intensity.global, bound.by, bound.gflops
            );
        }
        let _ = writeln!(md, "\n![Roofline]({roofline_file})");
        md
    }

    /// An SVG chart: GFLOP/s against size, one line per step and cuBLAS, both axes logarithmic.
    pub fn chart(&self, path: &Path) -> Result<()> {
        let max =
            self.rows.iter().flat_map(|(_, r)| r.iter().flatten()).map(|c| c.gflops).fold(1.0, f64::max);
        let min =
            self.rows.iter().flat_map(|(_, r)| r.iter().flatten()).map(|c| c.gflops).fold(max, f64::min);
        let (lo, hi) = (*self.sizes.first().unwrap_or(&1) as f64, *self.sizes.last().unwrap_or(&2) as f64);
        let root = SVGBackend::new(path, (1200, 600)).into_drawing_area();
        root.fill(&WHITE).map_err(drawing)?;
        let (plot, key_pane) = root.split_horizontally(1200 - LEGEND_WIDTH);
        let mut keys = Vec::new();
        let mut chart = ChartBuilder::on(&plot)
            .caption(format!("C = A·B in f32 on {}", self.device), ("sans-serif", 24))
            .margin(16)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d((lo / 1.2..hi * 1.2).log_scale(), (min / 2.0..max * 2.0).log_scale())
            .map_err(drawing)?;
        chart
            .configure_mesh()
            .label_style(("sans-serif", 15))
            .axis_desc_style(("sans-serif", 16))
            .x_desc("M = N = K")
            .y_desc("GFLOP/s")
            .x_label_formatter(&|x| format!("{x:.0}"))
            .y_label_formatter(&|y| format!("{y:.0}"))
            .draw()
            .map_err(drawing)?;
        for (i, (name, cells)) in self.rows.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            let points: Vec<(f64, f64)> =
                self.sizes.iter().zip(cells).filter_map(|(&s, c)| c.map(|c| (s as f64, c.gflops))).collect();
            chart.draw_series(LineSeries::new(points.clone(), color.stroke_width(2))).map_err(drawing)?;
            keys.push((name.clone(), Sample::Line(color.stroke_width(2))));
            chart
                .draw_series(points.into_iter().map(|p| Circle::new(p, 3, color.filled())))
                .map_err(drawing)?;
        }
        draw_legend(&key_pane, &keys)?;
        root.present().with_context(|| format!("writing {}", path.display()))?;
        Ok(())
    }

    /// An SVG roofline at [`Results::roofline_size`]: the FP32 peak (and the TF32 peak when a
    /// TF32 step is on it), the DRAM and shared-memory roofs and the cuBLAS baselines as lines, and per GPU step a filled marker at its global intensity and
    /// a hollow one at its shared-memory intensity; both axes logarithmic.
    pub fn roofline(&self, path: &Path) -> Result<()> {
        let size = self.roofline_size().context("the results hold no sizes to draw a roofline at")?;
        let placed: Vec<(usize, &str, Intensity, f64)> = self
            .placed()
            .into_iter()
            .filter_map(|p| Some((p.row, p.name, p.intensity, p.cell?.gflops)))
            .collect();
        let tf32_peak = self.tf32_peak_gflops.filter(|_| self.tf32_placed());
        let baselines: Vec<(&str, Cell)> = [(CUBLAS, true), (CUBLAS_TF32, self.tf32_placed())]
            .into_iter()
            .filter_map(|(name, shown)| Some((name, self.at_roofline(name).filter(|_| shown)?)))
            .collect();
        let intensities = placed
            .iter()
            .flat_map(|(_, _, i, _)| std::iter::once(i.global).chain(i.shared))
            .collect::<Vec<_>>();
        let rates =
            placed.iter().map(|p| p.3).chain(baselines.iter().map(|b| b.1.gflops)).collect::<Vec<_>>();
        let top = tf32_peak.unwrap_or(self.peak_gflops).max(self.peak_gflops);
        let x_lo = intensities.iter().fold(0.05, |lo: f64, &i| lo.min(i / 2.0));
        let x_hi = intensities.iter().fold(200.0, |hi: f64, &i| hi.max(i * 2.0));
        let y_lo = rates.iter().fold(100.0, |lo: f64, &g| lo.min(g / 2.0)).max(1e-3);
        let y_hi = rates.iter().fold(2.0 * top, |hi: f64, &g| hi.max(g * 2.0)).max(y_lo * 10.0);

        let root = SVGBackend::new(path, (1200, 620)).into_drawing_area();
        root.fill(&WHITE).map_err(drawing)?;
        let (plot, key_pane) = root.split_horizontally(1200 - LEGEND_WIDTH);
        let mut keys: Vec<(String, Sample)> = Vec::new();
        let mut chart = ChartBuilder::on(&plot)
            .caption(format!("Roofline at {size}³ on {}", self.device), ("sans-serif", 24))
            .margin(16)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d((x_lo..x_hi).log_scale(), (y_lo..y_hi).log_scale())
            .map_err(drawing)?;
        chart
            .configure_mesh()
            .label_style(("sans-serif", 15))
            .axis_desc_style(("sans-serif", 16))
            .x_desc("FLOP per byte (filled: global memory, hollow: shared memory)")
            .y_desc("GFLOP/s")
            .x_label_formatter(&|x| tick(*x))
            .y_label_formatter(&|y| format!("{y:.0}"))
            .draw()
            .map_err(drawing)?;

        let peak = self.peak_gflops;
        let mut line = |points: Vec<(f64, f64)>, style: ShapeStyle, label: String| -> Result<()> {
            chart.draw_series(LineSeries::new(points, style)).map_err(drawing)?;
            keys.push((label, Sample::Line(style)));
            Ok(())
        };
        let label = format!("FP32 peak {peak:.0} GFLOP/s");
        line(vec![(x_lo, peak), (x_hi, peak)], BLACK.stroke_width(2), label)?;
        if let Some(tf32) = tf32_peak {
            let style = RGBColor(120, 60, 160).stroke_width(2);
            line(vec![(x_lo, tf32), (x_hi, tf32)], style, format!("TF32 peak {tf32:.0} GFLOP/s"))?;
            if self.split_placed() {
                let (third, style) = (tf32 / 3.0, RGBColor(120, 60, 160).stroke_width(1));
                line(
                    vec![(x_lo, third), (x_hi, third)],
                    style,
                    format!("a third of TF32 peak {third:.0} GFLOP/s"),
                )?;
            }
            if self.int8_placed() {
                let (seventh, style) = (4.0 * tf32 / 7.0, RGBColor(20, 130, 90).stroke_width(1));
                line(
                    vec![(x_lo, seventh), (x_hi, seventh)],
                    style,
                    format!("a seventh of INT8 peak {seventh:.0} GFLOP/s"),
                )?;
            }
        }
        if let Some(gbs) = self.dram_gbs {
            let style = RGBColor(178, 34, 34).stroke_width(2);
            line(roof(gbs, top, (x_lo, x_hi), y_lo), style, format!("DRAM {gbs:.0} GB/s (copy kernel)"))?;
        }
        let style = RGBColor(30, 90, 180).stroke_width(2);
        let label = format!("shared memory {:.0} GB/s (128 B/clock/SM)", self.smem_gbs);
        line(roof(self.smem_gbs, top, (x_lo, x_hi), y_lo), style, label)?;

        // cuBLAS SGEMM dashed, cuBLAS TF32 dotted.
        for (name, c) in baselines {
            let style = RGBColor(90, 90, 90).stroke_width(2);
            let (dash, gap) = if name == CUBLAS { (8, 5) } else { (2, 4) };
            chart
                .draw_series(DashedLineSeries::new(
                    vec![(x_lo, c.gflops), (x_hi, c.gflops)],
                    dash,
                    gap,
                    style,
                ))
                .map_err(drawing)?;
            // The legend's sample is dashed or dotted like the line it names.
            let pieces =
                if name == CUBLAS { [(0, 8), (13, 21), (26, 28)] } else { [(0, 2), (7, 9), (14, 16)] };
            keys.push((format!("{name} {:.0} GFLOP/s", c.gflops), Sample::Dashed(style, pieces)));
        }

        // The same colour per step as in the GFLOP/s chart. A step whose marker falls on an
        // earlier one's is drawn larger and beneath it, so that both show.
        let at: Vec<(i32, i32)> = placed.iter().map(|p| chart.backend_coord(&(p.2.global, p.3))).collect();
        let radii = marker_radii(&at, 5);
        // The hollow markers the same way, among themselves (steps 05, 06 and 10 share one).
        let shared_at: Vec<(i32, i32)> = placed
            .iter()
            .map(|p| p.2.shared.map_or((i32::MIN, i32::MIN), |s| chart.backend_coord(&(s, p.3))))
            .collect();
        let shared_radii = marker_radii(&shared_at, 5);
        let mut order: Vec<usize> = (0..placed.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(radii[i]));
        for i in order {
            let (row, _, intensity, gflops) = placed[i];
            let color = Palette99::pick(row).to_rgba();
            let marker = Circle::new((intensity.global, gflops), radii[i] as u32, color.filled());
            chart.draw_series(std::iter::once(marker)).map_err(drawing)?;
            if let Some(shared) = intensity.shared {
                chart
                    .draw_series(std::iter::once(Circle::new(
                        (shared, gflops),
                        shared_radii[i] as u32,
                        color.stroke_width(2),
                    )))
                    .map_err(drawing)?;
            }
        }
        for &(row, name, _, _) in &placed {
            keys.push((name.to_owned(), Sample::Dot(Palette99::pick(row).to_rgba())));
        }
        draw_legend(&key_pane, &keys)?;
        root.present().with_context(|| format!("writing {}", path.display()))?;
        Ok(())
    }
}

/// A chart error in one sentence (plotters' errors only implement Debug).
pub(crate) fn drawing(e: impl std::fmt::Debug) -> anyhow::Error {
    anyhow::anyhow!("drawing a chart failed: {e:?}")
}

/// How a key of a chart's legend draws its sample.
#[derive(Clone, Copy)]
pub(crate) enum Sample {
    Line(ShapeStyle),
    /// A line of three dashes, each (start, end) in pixels from the sample's left.
    Dashed(ShapeStyle, [(i32, i32); 3]),
    Dot(RGBAColor),
}

/// The legend's text size in pixels: a chart is drawn 1200 pixels wide and shown in a column of
/// about 900, so this reads as about 12 pixels on the page.
pub(crate) const LEGEND_FONT: u32 = 17;

/// The width of the pane beside a chart that holds its legend, in pixels.
pub(crate) const LEGEND_WIDTH: u32 = 360;

/// Draws `keys` down `area` (a pane beside the plot, so that no key covers a point): a sample,
/// then its label.
pub(crate) fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    keys: &[(String, Sample)],
) -> Result<()> {
    let font = ("sans-serif", LEGEND_FONT).into_font().color(&BLACK);
    let step = LEGEND_FONT as i32 + 10;
    for (i, (label, sample)) in keys.iter().enumerate() {
        let (x, y) = (12, 60 + i as i32 * step);
        match *sample {
            Sample::Line(style) => area.draw(&PathElement::new(vec![(x, y), (x + 28, y)], style)),
            Sample::Dashed(style, pieces) => pieces
                .iter()
                .try_for_each(|&(a, b)| area.draw(&PathElement::new(vec![(x + a, y), (x + b, y)], style))),
            Sample::Dot(color) => area.draw(&Circle::new((x + 14, y), 6, color.filled())),
        }
        .map_err(drawing)?;
        area.draw(&Text::new(label.clone(), (x + 40, y - LEGEND_FONT as i32 / 2 - 3), font.clone()))
            .map_err(drawing)?;
    }
    Ok(())
}

/// The radius of each of `points` (pixels) so that none hides another: a marker that falls on
/// markers before it grows by 4 pixels for each, and is drawn beneath them (larger first).
pub(crate) fn marker_radii(points: &[(i32, i32)], radius: i32) -> Vec<i32> {
    points
        .iter()
        .enumerate()
        .map(|(i, &(x, y))| {
            let near = |&&(a, b): &&(i32, i32)| {
                (f64::from(a) - f64::from(x)).hypot(f64::from(b) - f64::from(y)) < 10.0
            };
            let under = points[..i].iter().filter(near).count();
            radius + 4 * under as i32
        })
        .collect()
}

/// The sloped part of the roof min(peak, gbs·I) within `x`: from where it rises above `y_lo`
/// (nothing is drawn below the chart's floor) to where it meets the peak, whose line covers the
/// rest. Empty where no part of the slope is in view.
fn roof(gbs: f64, peak: f64, (x_lo, x_hi): (f64, f64), y_lo: f64) -> Vec<(f64, f64)> {
    let start = x_lo.max(y_lo / gbs);
    let end = x_hi.min(peak / gbs);
    if start >= end {
        return vec![];
    }
    vec![(start, gbs * start), (end, gbs * end)]
}

/// An axis label for a logarithmic axis: 0.05, 0.5, 5, 50 …
fn tick(v: f64) -> String {
    if v >= 1.0 {
        format!("{v:.0}")
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    }
}

/// A file-name form of a device name: "NVIDIA H200" → "nvidia-h200".
pub fn slug(name: &str) -> String {
    let s: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' }).collect();
    s.split('-').filter(|p| !p.is_empty()).collect::<Vec<_>>().join("-")
}

#[cfg(test)]
mod tests {
    use super::*;

    const F: Precision = Precision::Fp32;

    fn sample() -> Results {
        let c = |g: f64| Some(Cell { gflops: g, passed: true });
        let i = |global: f64, shared: Option<f64>| Some(Intensity { global, shared });
        Results {
            device: "Test GPU".into(),
            driver: "13.0".into(),
            nvrtc: "13.0".into(),
            date: "2026-11-21".into(),
            command: command_line(&["--sizes".into(), "256,512".into()]),
            sizes: vec![256, 512],
            rows: vec![
                ("step01_cpu_naive".into(), vec![c(1.0), c(0.5)]),
                ("step02_gpu_naive".into(), vec![c(300.0), c(400.0)]),
                ("step03_single_block".into(), vec![None, None]),
                ("step06_prefetch".into(), vec![c(900.0), Some(Cell { gflops: 2000.0, passed: false })]),
                ("step07_tf32_mma".into(), vec![c(3000.0), c(12_000.0)]),
                (CUBLAS.into(), vec![c(1000.0), c(4000.0)]),
                (CUBLAS_TF32.into(), vec![c(5000.0), c(30_000.0)]),
            ],
            intensities: vec![
                None,
                i(0.25, None),
                i(8.0, Some(0.25)),
                i(16.0, Some(4.0)),
                i(64.0, Some(8.0)),
                None,
                None,
            ],
            precision: [F, F, F, F, Precision::Tf32, F, Precision::Tf32].to_vec(),
            peak_gflops: 10_000.0,
            tf32_peak_gflops: Some(80_000.0),
            dram_gbs: Some(1000.0),
            smem_gbs: 5000.0,
        }
    }

    #[test]
    fn table_shows_rates_shares_gaps_and_failures() {
        let t = sample().table();
        assert!(t.starts_with("| step | 256³ | 512³ |"), "{t}");
        assert!(t.contains("| step06_prefetch | 900 (90.0%) | 2000 (50.0%) FAILED |"), "{t}");
        assert!(t.contains("| cublas_sgemm | 1000 | 4000 |"), "{t}");
        // The TF32 step is set against cuBLAS TF32, not SGEMM.
        assert!(t.contains("| step07_tf32_mma | 3000 (60.0%) | 12000 (40.0%) |"), "{t}");
        assert!(t.contains("| cublas_tf32 | 5000 | 30000 |"), "{t}");
        assert!(t.contains("| step03_single_block | – | – |"), "{t}");
    }

    #[test]
    fn speedup_uses_the_largest_size_both_ran() {
        // From step01 to the last FP32 step, step06: the TF32 step computes something else.
        assert_eq!(sample().speedup(), Some((512, 4000.0)));
        let md = sample().markdown("x.svg");
        assert!(md.contains("4000× faster at 512³") && md.contains("![GFLOP/s against size](x.svg)"), "{md}");
    }

    /// The SVG that `draw` writes for the sample results, read back from a scratch folder.
    fn drawn(name: &str, draw: impl Fn(&Results, &Path) -> Result<()>) -> String {
        let dir = std::env::temp_dir().join(format!("compare-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{name}.svg"));
        draw(&sample(), &path).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_dir_all(dir).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..80.min(svg.len())]);
        svg
    }

    #[test]
    fn chart_is_an_svg_with_a_line_per_row() {
        let svg = drawn("chart", Results::chart);
        for name in ["step01_cpu_naive", "step06_prefetch", CUBLAS] {
            assert!(svg.contains(name), "{name} missing from the legend");
        }
    }

    #[test]
    fn the_command_follows_the_measured_sentence() {
        let md = sample().markdown("x.svg");
        assert!(
            md.contains("NVRTC 13.0. Command: `cargo run --release -p compare -- --sizes 256,512`. GFLOP/s"),
            "{md}"
        );
        assert_eq!(command_line(&[]), "cargo run --release -p compare");
        assert_eq!(command_line(&["--large".into()]), "cargo run --release -p compare -- --large");
        assert_eq!(
            command_line(&["--out".into(), "my results".into(), "it's".into()]),
            r"cargo run --release -p compare -- --out 'my results' 'it'\''s'"
        );
    }

    #[test]
    fn shared_memory_bandwidth_is_128_bytes_per_clock_per_sm() {
        // H200: 132 SMs at 1980 MHz.
        assert!((smem_gbs(132, 1980) - 33_454.08).abs() < 1e-6);
    }

    #[test]
    fn roofline_size_prefers_4096_then_the_largest_below() {
        let at = |sizes: &[usize]| Results { sizes: sizes.to_vec(), ..sample() }.roofline_size();
        assert_eq!(at(&[256, 512]), Some(512));
        assert_eq!(at(&[1024, 4096, 8192]), Some(4096));
        assert_eq!(at(&[2048, 8192]), Some(2048));
        assert_eq!(at(&[8192, 16384]), Some(8192));
        assert_eq!(at(&[]), None);
    }

    #[test]
    fn the_lowest_roof_bounds_a_step() {
        let r = sample();
        // 0.25 FLOP/B × 1000 GB/s = 250 GFLOP/s, under the 10000 GFLOP/s peak.
        assert_eq!(r.bound(Intensity { global: 0.25, shared: None }, F), Bound { by: "DRAM", gflops: 250.0 });
        // DRAM 8000, shared memory 0.25 × 5000 = 1250.
        let step03 = Intensity { global: 8.0, shared: Some(0.25) };
        assert_eq!(r.bound(step03, F), Bound { by: "shared memory", gflops: 1250.0 });
        // DRAM 16000, shared memory 20000: both above the peak.
        let step06 = Intensity { global: 16.0, shared: Some(4.0) };
        assert_eq!(r.bound(step06, F), Bound { by: "FP32 peak", gflops: 10_000.0 });
        // A TF32 step's roof is the TF32 peak, and above the FP32 peak the memories bind again:
        // shared memory 8 × 5000 = 40000, under DRAM 64000 and the peak 80000.
        let step07 = Intensity { global: 64.0, shared: Some(8.0) };
        assert_eq!(r.bound(step07, Precision::Tf32), Bound { by: "shared memory", gflops: 40_000.0 });
        assert_eq!(r.bound(step06, Precision::Tf32), Bound { by: "DRAM", gflops: 16_000.0 });
        let unknown = Results { tf32_peak_gflops: None, ..sample() };
        assert_eq!(unknown.bound(step07, Precision::Tf32), Bound { by: "FP32 peak", gflops: 10_000.0 });
        // Three TF32 products per term: a third of the TF32 peak, 26 667, under both memories
        // at step 07's intensities but over shared memory at step 06's.
        let step09 = Intensity { global: 64.0, shared: Some(16.0) };
        assert_eq!(r.bound(step09, Precision::Tf32x3).by, "a third of TF32 peak");
        assert!((r.bound(step09, Precision::Tf32x3).gflops - 80_000.0 / 3.0).abs() < 1e-9);
        assert_eq!(r.bound(step06, Precision::Tf32x3), Bound { by: "DRAM", gflops: 16_000.0 });
        assert_eq!(unknown.bound(step09, Precision::Tf32x3).by, "FP32 peak");
        // Without a measured DRAM bandwidth there is no DRAM roof.
        let unmeasured = Results { dram_gbs: None, ..sample() };
        assert_eq!(unmeasured.bound(Intensity { global: 0.25, shared: None }, F).by, "FP32 peak");
    }

    #[test]
    fn page_has_the_ceilings_and_the_roofline_table() {
        let md = sample().markdown("test-gpu.svg");
        let section = md.split_once("\n## Roofline at 512³\n").expect("a roofline section at 512³").1;
        for line in [
            "The FP32 peak is 10000 GFLOP/s",
            "The DRAM bandwidth is 1000 GB/s, measured by a copy kernel in this run",
            "The shared-memory bandwidth is 5000 GB/s (128 bytes per clock per SM).",
            "The TF32 peak is 80000 GFLOP/s",
            "cuBLAS SGEMM ran at 4000 GFLOP/s at 512³",
            "cuBLAS TF32 ran at 30000 GFLOP/s at 512³",
            "| step | FLOP/B (global) | FLOP/B (shared) | GFLOP/s | bound by |\n| --- | ---: | ---: | ---: | --- |\n",
            "| step02_gpu_naive | 0.25 | – | 400 | DRAM (250 GFLOP/s) |\n",
            "| step03_single_block | 8.00 | 0.25 | – | shared memory (1250 GFLOP/s) |\n",
            "| step06_prefetch | 16.00 | 4.00 | 2000 FAILED | FP32 peak (10000 GFLOP/s) |\n",
            "| step07_tf32_mma | 64.00 | 8.00 | 12000 | shared memory (40000 GFLOP/s) |\n",
            "![Roofline](test-gpu-roofline.svg)",
        ] {
            assert!(section.contains(line), "missing {line:?} in\n{section}");
        }
        assert!(!section.contains("step01_cpu_naive") && !section.contains("| cublas_sgemm |"), "{section}");
        // The first table is unchanged: the roofline comes after it.
        assert!(md.find(&sample().table()).unwrap() < md.find("## Roofline").unwrap());

        let md = Results { dram_gbs: None, ..sample() }.markdown("test-gpu.svg");
        assert!(md.contains("The DRAM bandwidth was not measured in this run"), "{md}");
        assert!(md.contains("| step02_gpu_naive | 0.25 | – | 400 | FP32 peak (10000 GFLOP/s) |"), "{md}");
    }

    #[test]
    fn roofs_start_at_the_floor_and_bend_at_the_ridge() {
        let r = roof(1000.0, 10_000.0, (0.05, 200.0), 100.0);
        assert_eq!(r, vec![(0.1, 100.0), (10.0, 10_000.0)]);
        assert_eq!(roof(1000.0, 10_000.0, (0.05, 5.0), 10.0), vec![(0.05, 50.0), (5.0, 5000.0)]);
        assert!(roof(1.0, 10.0, (0.05, 200.0), 1000.0).is_empty(), "never above the floor");
        assert!(roof(1e6, 10.0, (0.05, 200.0), 1.0).is_empty(), "at the peak everywhere in view");
        assert_eq!(
            (tick(0.05), tick(0.5), tick(5.0), tick(200.0)),
            ("0.05".into(), "0.5".into(), "5".into(), "200".into())
        );
    }

    #[test]
    fn roofline_is_an_svg_with_the_roofs_and_each_step_that_ran() {
        let svg = drawn("roofline", Results::roofline);
        for text in [
            "Roofline at 512³ on Test GPU",
            "FP32 peak 10000 GFLOP/s",
            "DRAM 1000 GB/s",
            "shared memory 5000 GB/s",
            "cublas_sgemm 4000 GFLOP/s",
            "TF32 peak 80000 GFLOP/s",
            "cublas_tf32 30000 GFLOP/s",
            "step02_gpu_naive",
            "step06_prefetch",
            "step07_tf32_mma",
        ] {
            assert!(svg.contains(text), "{text} missing from the roofline");
        }
        // step03 did not run at 512³ and the CPU step has no intensity: no markers for them.
        assert!(!svg.contains("step03_single_block") && !svg.contains("step01_cpu_naive"));
        // A marker per step at its global intensity, and a hollow one at the shared ones of
        // step06 and step07.
        assert_eq!(
            svg.matches("<circle").count(),
            3 + 2 + 3,
            "three filled, two hollow, three in the legend"
        );
        // Without a TF32 step on it, the chart has neither the TF32 peak nor cuBLAS TF32.
        let fp32_only = |r: &Results, p: &Path| {
            let mut r = r.clone();
            r.precision = vec![Precision::Fp32; r.rows.len()];
            r.roofline(p)
        };
        let svg = drawn("roofline-fp32", fp32_only);
        assert!(!svg.contains("TF32 peak") && !svg.contains("cublas_tf32"), "TF32 roofs on an FP32 chart");
        // A step of three TF32 products has its own roof, a third of the TF32 peak.
        let split = |r: &Results, p: &Path| {
            let mut r = r.clone();
            r.precision[4] = Precision::Tf32x3;
            r.roofline(p)
        };
        let svg = drawn("roofline-split", split);
        assert!(svg.contains("a third of TF32 peak 26667"), "no roof for three TF32 products");
        assert!(!drawn("roofline-plain", |r: &Results, p: &Path| r.roofline(p)).contains("a third"));
        // INT8 products from residues: a seventh of the INT8 peak, four times the TF32 one.
        let int8 = |r: &Results, p: &Path| {
            let mut r = r.clone();
            r.precision[4] = Precision::Int8Crt;
            r.roofline(p)
        };
        let svg = drawn("roofline-int8", int8);
        assert!(svg.contains("a seventh of INT8 peak 45714"), "no roof for INT8 products");
        assert!(!drawn("roofline-plain", |r: &Results, p: &Path| r.roofline(p)).contains("INT8"));
        // A TF32 step on a GPU whose TF32 peak is not known: cuBLAS TF32 still, no TF32 peak,
        // as the page says.
        let unknown = |r: &Results, p: &Path| Results { tf32_peak_gflops: None, ..r.clone() }.roofline(p);
        let svg = drawn("roofline-unknown", unknown);
        assert!(
            svg.contains("cublas_tf32 30000") && !svg.contains("TF32 peak"),
            "cuBLAS TF32 or the peak wrong"
        );
        let md = Results { tf32_peak_gflops: None, ..sample() }.markdown("x.svg");
        assert!(md.contains("cuBLAS TF32 ran at 30000") && !md.contains("The TF32 peak is"), "{md}");
    }

    #[test]
    fn a_marker_on_another_grows_and_goes_beneath_it() {
        assert_eq!(marker_radii(&[(100, 100), (300, 100), (104, 103), (101, 99)], 5), [5, 5, 9, 13]);
    }

    #[test]
    fn small_rates_keep_their_digits() {
        assert_eq!([rate(45260.4), rate(100.0), rate(17.26), rate(0.474)], ["45260", "100", "17.3", "0.47"]);
    }

    #[test]
    fn slugs() {
        assert_eq!(slug("NVIDIA H200"), "nvidia-h200");
        assert_eq!(slug("NVIDIA H100 80GB HBM3"), "nvidia-h100-80gb-hbm3");
    }
}

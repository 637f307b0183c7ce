//! The results of running every step over a range of sizes: a table, a chart and a roofline
//! (the charts are drawn in `charts.rs`, from the record read back in `record.rs`).

use std::fmt::Write as _;

use common::report::rate;
use common::{GpuStep, Intensity, Precision, Shape};

mod charts;
pub mod dram;
mod drawing;
pub mod families;
pub mod gate;
mod record;
pub mod suite;
pub mod tables;

pub use record::{Record, redraw};
pub(crate) use suite::drawing;

/// The compute roof of a row of `precision`: as [`Precision::roof`] gives it, and for step 11's
/// INT8 products from residues the INT8 peak shared among the seven products of its default.
pub fn roof(precision: Precision, fp32_peak: f64, tf32_peak: Option<f64>) -> (&'static str, Option<f64>) {
    match precision.roof(fp32_peak, tf32_peak) {
        (_, peak) if precision == Precision::Int8Crt => ("a seventh of INT8 peak", peak.map(|p| p / 7.0)),
        roof => roof,
    }
}

/// The GPU steps, in course order.
pub const GPU_STEPS: [&GpuStep; 11] = [
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
    &step12_persistent_clusters::STEP,
];

/// The name the FP32 baseline (strict SGEMM) goes by in tables and charts.
pub const CUBLAS: &str = "cublas_sgemm";

/// How a predicted page names its device: the GPU the model predicted for, on the CPU.
pub fn predicted_device(gpu: &str) -> String {
    format!("{gpu}{PREDICTED_ON}")
}

/// What [`predicted_device`] adds to the GPU's name.
pub(crate) const PREDICTED_ON: &str = " (predicted on the CPU)";

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
    /// The SM clock and power it held while timed, where NVML read them.
    pub held: Option<common::clock::Held>,
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
    /// Whether the labs' rates are the times the emulator's time model predicts for a GPU
    /// (`compare --predicted`, run without a GPU; the device is then "NAME (predicted on the
    /// CPU)", [`predicted_device`]) rather than measured on the device; the page says
    /// "Predicted" where a measured one says "Measured".
    pub predicted: bool,
    pub sizes: Vec<usize>,
    pub rows: Vec<(String, Vec<Option<Cell>>)>,
    /// One per row, in the order of `rows`: the step's arithmetic intensity at its default
    /// parameters; None for the CPU step and cuBLAS, and for every row of a page without a
    /// roofline (a predicted one), whose record does not hold them.
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
        let mut bound = match roof(precision, self.peak_gflops, self.tf32_peak_gflops) {
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
                        let energy = Shape::square(self.sizes[i])
                            .ok()
                            .and_then(|shape| c.held?.joules_per_tflop(shape.flops()))
                            .map_or(String::new(), |j| format!(" · {j:.2} J/TFLOP"));
                        let _ = write!(t, " {}{share}{energy}{mark} |", rate(c.gflops));
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
        if self
            .rows
            .iter()
            .flat_map(|(_, r)| r.iter().flatten())
            .any(|c| c.held.is_some_and(|h| h.joules.is_some()))
        {
            md += "After a rate: the energy of one product per TFLOP, the driver's energy counter over the \
                   timed launches.\n\n";
        }
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

    /// The chart's INT8 roof is step 11's default: seven moduli, seven products.
    #[test]
    fn the_int8_roof_follows_step_11s_default() {
        assert_eq!(step11_int8_crt::MODULI.default, 7, "the roof's name says a seventh");
        let (by, gflops) = roof(Precision::Int8Crt, 60_000.0, Some(400_000.0));
        assert_eq!((by, gflops), ("a seventh of INT8 peak", Some(1_600_000.0 / 7.0)));
    }

    /// GpuStep::DEFAULT fills every field, so a declaration that forgets its name, source or
    /// intensity would still build: each lab here declares its own, and a positive intensity at
    /// its default parameters (the roofline places it on a log axis).
    #[test]
    fn every_gpu_step_declares_its_own_name_source_and_intensity() {
        for step in GPU_STEPS {
            assert!(step.name.starts_with("step") && !step.idea.is_empty(), "{}", step.name);
            assert!(step.source.contains("matmul") && step.file.ends_with(".cu"), "{}", step.name);
            let params = common::Params::defaults(step.params);
            let i = (step.intensity)(&params);
            assert!(i.global > 0.0 && i.shared.is_none_or(|s| s > 0.0), "{}: {i:?}", step.name);
        }
    }

    const F: Precision = Precision::Fp32;

    pub(crate) fn sample() -> Results {
        let c = |g: f64| Some(Cell { gflops: g, passed: true, held: None });
        let i = |global: f64, shared: Option<f64>| Some(Intensity { global, shared });
        Results {
            device: "Test GPU".into(),
            driver: "13.0".into(),
            nvrtc: "13.0".into(),
            date: "2026-11-21".into(),
            command: command_line(&["--sizes".into(), "256,512".into()]),
            predicted: false,
            sizes: vec![256, 512],
            rows: vec![
                ("step01_cpu_naive".into(), vec![c(1.0), c(0.5)]),
                ("step02_gpu_naive".into(), vec![c(300.0), c(400.0)]),
                ("step03_single_block".into(), vec![None, None]),
                (
                    "step06_prefetch".into(),
                    vec![c(900.0), Some(Cell { gflops: 2000.0, passed: false, held: None })],
                ),
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

    /// A cell whose energy the counter read carries it per TFLOP after its rate and share, and
    /// the record reads the rate back from such a cell.
    #[test]
    fn a_cell_with_its_energy_shows_joules_per_tflop() {
        let mut r = sample();
        // 256³ is 33.55 MFLOP: 1.0066 mJ a product is 30 J per TFLOP.
        let held = common::clock::Held {
            sm_mhz: 1700.0,
            watts: 300.0,
            readings: 9,
            joules: Some(1.00663296e-3),
            no_energy: None,
        };
        r.rows[3].1[0] = Some(Cell { gflops: 900.0, passed: true, held: Some(held) });
        let t = r.table();
        assert!(t.contains("| step06_prefetch | 900 (90.0%) · 30.00 J/TFLOP | 2000 (50.0%) FAILED |"), "{t}");
        assert!(r.markdown("x.svg").contains("energy of one product per TFLOP"));
        assert!(!sample().markdown("x.svg").contains("energy of one product"));
    }

    #[test]
    fn speedup_uses_the_largest_size_both_ran() {
        // From step01 to the last FP32 step, step06: the TF32 step computes something else.
        assert_eq!(sample().speedup(), Some((512, 4000.0)));
        let md = sample().markdown("x.svg");
        assert!(md.contains("4000× faster at 512³") && md.contains("![GFLOP/s against size](x.svg)"), "{md}");
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
    fn small_rates_keep_their_digits() {
        assert_eq!([rate(45260.4), rate(100.0), rate(17.26), rate(0.474)], ["45260", "100", "17.3", "0.47"]);
    }

    #[test]
    fn slugs() {
        assert_eq!(slug("NVIDIA H200"), "nvidia-h200");
        assert_eq!(slug("NVIDIA H100 80GB HBM3"), "nvidia-h100-80gb-hbm3");
    }
}

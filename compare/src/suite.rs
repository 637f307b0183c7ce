//! The suite of shapes beyond large squares: small and odd squares, the products of a
//! transformer layer at small and large batch, a matrix–vector product, and deep, thin ones. Each
//! step's share of its cuBLAS baseline at each shape, their geometric mean and the worst shape.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};
use common::report::rate;
use common::{Precision, Shape};
use plotters::prelude::*;

use crate::{CUBLAS, CUBLAS_TF32, Cell};

/// The shapes (M, N, K) of `compare --suite`, in the order the record lists them.
pub const SHAPES: &[(usize, usize, usize)] = common::matrix::SUITE;

/// How many shapes `compare --held-out` draws ([`common::matrix::held_out`]).
pub const HELD_OUT: usize = 48;

/// `M×N×K`, or `S³` for a cube.
pub fn label(s: Shape) -> String {
    if s.m == s.n && s.n == s.k { format!("{}³", s.m) } else { format!("{}×{}×{}", s.m, s.n, s.k) }
}

/// A row per step (and per baseline), a column per shape; `None` where the step does not serve it.
#[derive(Clone, Debug, PartialEq)]
pub struct Suite {
    /// What the shapes are, for the record's title: "The suite of shapes", "The held-out shapes".
    pub title: String,
    pub device: String,
    pub driver: String,
    pub nvrtc: String,
    pub date: String,
    /// The command that produced these results.
    pub command: String,
    pub shapes: Vec<Shape>,
    pub rows: Vec<(String, Vec<Option<Cell>>)>,
    /// One per row: the arithmetic it claims; a TF32 row is set against cuBLAS TF32, the others
    /// against cuBLAS SGEMM.
    pub precision: Vec<Precision>,
}

impl Suite {
    fn is_baseline(name: &str) -> bool {
        name == CUBLAS || name == CUBLAS_TF32
    }

    /// The baseline of row `row`: cuBLAS TF32 for a TF32 row, cuBLAS SGEMM otherwise.
    pub fn baseline(&self, row: usize) -> &'static str {
        if self.precision.get(row).is_some_and(|p| p.is_tf32()) { CUBLAS_TF32 } else { CUBLAS }
    }

    /// Row `row`'s share of its baseline at shape `col`, in percent: only for a verified result
    /// set against a verified, nonzero baseline (a FAILED cell counts in no mean and no chart).
    pub fn share(&self, row: usize, col: usize) -> Option<f64> {
        let cell = self.rows.get(row)?.1.get(col).copied().flatten()?;
        let base = self.rows.iter().find(|(n, _)| n == self.baseline(row))?.1.get(col).copied().flatten()?;
        let share = 100.0 * cell.gflops / base.gflops;
        (cell.passed && base.passed && share.is_finite() && share > 0.0).then_some(share)
    }

    /// Row `row`'s share per clock at shape `col`: its share, times its baseline's SM clock over
    /// its own (both read while timed).
    pub fn share_per_clock(&self, row: usize, col: usize) -> Option<f64> {
        let held = |r: usize| self.rows.get(r)?.1.get(col).copied().flatten()?.held;
        let base = self.rows.iter().position(|(n, _)| n == self.baseline(row))?;
        Some(common::clock::per_clock(self.share(row, col)?, held(row)?, held(base)?))
    }

    /// The clock a cell held, and a step's share per clock: ` · 1755 MHz, 690 W, 98.0% per clock`.
    fn clock(&self, row: usize, col: usize) -> String {
        let Some(held) = self.rows[row].1.get(col).copied().flatten().and_then(|c| c.held) else {
            return String::new();
        };
        let mut s = format!(" · {:.0} MHz, {:.0} W", held.sm_mhz, held.watts);
        if let Some(j) = self.shapes.get(col).and_then(|shape| held.joules_per_tflop(shape.flops())) {
            s += &format!(", {j:.2} J/TFLOP");
        }
        if let Some(p) = self.share_per_clock(row, col).filter(|_| !Self::is_baseline(&self.rows[row].0)) {
            s += &format!(", {p:.1}% per clock");
        }
        s
    }

    /// The geometric mean of row `row`'s shares over the shapes it served, and how many those were.
    pub fn geomean(&self, row: usize) -> Option<(f64, usize)> {
        let shares: Vec<f64> = (0..self.shapes.len()).filter_map(|c| self.share(row, c)).collect();
        if shares.is_empty() {
            return None;
        }
        let mean = shares.iter().map(|s| s.ln()).sum::<f64>() / shares.len() as f64;
        Some((mean.exp(), shares.len()))
    }

    /// Row `row`'s lowest share and the shape it was at.
    pub fn worst(&self, row: usize) -> Option<(usize, f64)> {
        (0..self.shapes.len())
            .filter_map(|c| self.share(row, c).map(|s| (c, s)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
    }

    /// A column's heading: a step's number and variant (`06 stream_k`), or the baseline's kind, so
    /// that fifteen columns fit a page; [`Suite::legend`] names them in full.
    pub fn short(name: &str) -> String {
        match name {
            CUBLAS => "SGEMM".into(),
            CUBLAS_TF32 => "TF32".into(),
            _ => {
                let number = name.strip_prefix("step").map(|r| &r[..r.len().min(2)]).unwrap_or(name);
                match name.split_once(" (") {
                    Some((_, variant)) => format!("{number} {}", variant.trim_end_matches(')')),
                    None => number.to_string(),
                }
            }
        }
    }

    /// What each short column heading of [`Suite::table`] stands for.
    pub fn legend(&self) -> String {
        let names: Vec<String> =
            self.rows.iter().map(|(name, _)| format!("{} = `{name}`", Self::short(name))).collect();
        format!("Columns: {}.", names.join(", "))
    }

    /// A table with a row per shape and a column per step and baseline: GFLOP/s and share.
    pub fn table(&self) -> String {
        let mut t = String::from("| shape |");
        for (name, _) in &self.rows {
            let _ = write!(t, " {} |", Self::short(name));
        }
        t += "\n| --- |";
        t += &" ---: |".repeat(self.rows.len());
        t += "\n";
        for (col, &shape) in self.shapes.iter().enumerate() {
            let _ = write!(t, "| {} |", label(shape));
            for (row, (name, cells)) in self.rows.iter().enumerate() {
                match cells.get(col).copied().flatten() {
                    None => t += " – |",
                    Some(c) => {
                        let share = match self.share(row, col).filter(|_| c.passed) {
                            Some(p) if !Self::is_baseline(name) => format!(" ({p:.1}%)"),
                            _ => String::new(),
                        };
                        let mark = if c.passed { "" } else { " FAILED" };
                        let _ = write!(t, " {}{share}{mark}{} |", rate(c.gflops), self.clock(row, col));
                    }
                }
            }
            t += "\n";
        }
        t
    }

    /// Per step: the geometric mean of its shares, the shapes it served and its worst shape.
    pub fn summary(&self) -> String {
        let mut t = String::from(
            "| step | geometric mean of shares | shapes | worst |\n| --- | ---: | ---: | --- |\n",
        );
        for (row, (name, _)) in self.rows.iter().enumerate() {
            if Self::is_baseline(name) {
                continue;
            }
            let (Some((mean, n)), Some((col, worst))) = (self.geomean(row), self.worst(row)) else {
                let _ = writeln!(t, "| {name} | – | 0 | – |");
                continue;
            };
            let _ = writeln!(
                t,
                "| {name} | {mean:.1}% of {} | {n} | {worst:.1}% at {} |",
                self.baseline(row),
                label(self.shapes[col])
            );
        }
        t
    }

    /// The record: what was run and how, the summary and the chart, then the table of every shape.
    pub fn markdown(&self, chart_file: &str) -> String {
        let mut md = format!("# {} on {}\n\n", self.title, self.device);
        let _ = writeln!(
            md,
            "Measured {} with driver {}, NVRTC {}. Command: `{}`. GFLOP/s at each shape (M×N×K), with the \
             share of cuBLAS measured on the same inputs in the same run: of {CUBLAS} (strict FP32) for \
             the steps held to FP32's limits, of {CUBLAS_TF32} for the TF32 steps. Every result is \
             verified against the f64 reference. – marks a shape the step does not serve.\n",
            self.date, self.driver, self.nvrtc, self.command
        );
        md += "## Each step over the suite\n\n";
        md += &self.summary();
        let _ = writeln!(md, "\n![Share of cuBLAS at each shape]({chart_file})\n");
        md += "## Each shape\n\n";
        md += &self.legend();
        if self.rows.iter().flat_map(|(_, r)| r.iter().flatten()).any(|c| c.held.is_some()) {
            md += " After each rate: the mean SM clock and GPU power NVML read while it was timed, the \
                   energy per TFLOP of one product (the driver's energy counter over the timed \
                   launches), and a step's share per clock (its share times its baseline's clock \
                   over its own).";
        }
        md += "\n\n";
        md += &self.table();
        md
    }

    /// An SVG chart: each step's share of its baseline (logarithmic) at each shape of the suite.
    pub fn chart(&self, path: &Path) -> Result<()> {
        let rows: Vec<usize> =
            (0..self.rows.len()).filter(|&r| !Self::is_baseline(&self.rows[r].0)).collect();
        let shares = rows.iter().flat_map(|&r| (0..self.shapes.len()).filter_map(move |c| self.share(r, c)));
        let (lo, hi) = shares.fold((100.0_f64, 100.0_f64), |(lo, hi), s| (lo.min(s), hi.max(s)));
        let n = self.shapes.len();
        let root = SVGBackend::new(path, (1100, 600)).into_drawing_area();
        root.fill(&WHITE).map_err(crate::drawing)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(format!("Share of cuBLAS at each shape, {}", self.device), ("sans-serif", 22))
            .margin(16)
            .x_label_area_size(110)
            .y_label_area_size(70)
            .build_cartesian_2d(-0.5..n as f64 - 0.5, (lo / 1.5..hi * 1.5).log_scale())
            .map_err(crate::drawing)?;
        let shapes = self.shapes.clone();
        chart
            .configure_mesh()
            .x_labels(n)
            .x_label_formatter(&move |x| {
                let i = x.round();
                if (x - i).abs() < 0.01 && i >= 0.0 && (i as usize) < shapes.len() {
                    label(shapes[i as usize])
                } else {
                    String::new()
                }
            })
            .x_label_style(("sans-serif", 12).into_font().transform(FontTransform::Rotate90))
            .y_desc("% of cuBLAS")
            .y_label_formatter(&|y| format!("{y:.0}"))
            .draw()
            .map_err(crate::drawing)?;
        chart
            .draw_series(LineSeries::new([(-0.5, 100.0), (n as f64 - 0.5, 100.0)], BLACK.mix(0.5)))
            .map_err(crate::drawing)?;
        for (i, &row) in rows.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            let points: Vec<(f64, f64)> =
                (0..n).filter_map(|c| self.share(row, c).map(|s| (c as f64, s))).collect();
            chart
                .draw_series(points.iter().map(|&p| Circle::new(p, 4, color.filled())))
                .map_err(crate::drawing)?
                .label(self.rows[row].0.clone())
                .legend(move |(x, y)| Circle::new((x + 9, y), 4, color.filled()));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerLeft)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .draw()
            .map_err(crate::drawing)?;
        root.present().with_context(|| format!("writing {}", path.display()))?;
        Ok(())
    }
}

/// A chart error in one sentence (plotters' errors only implement Debug).
pub(crate) fn drawing(e: impl std::fmt::Debug) -> anyhow::Error {
    anyhow::anyhow!("drawing a chart failed: {e:?}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(gflops: f64) -> Option<Cell> {
        Some(Cell { gflops, passed: true, held: None })
    }

    fn suite() -> Suite {
        let shapes = vec![Shape::new(4, 4, 4).unwrap(), Shape::new(1, 8, 2).unwrap()];
        Suite {
            title: "The suite of shapes".into(),
            device: "Test GPU".into(),
            driver: "1".into(),
            nvrtc: "13.0".into(),
            date: "2026-11-22".into(),
            command: "cargo run --release -p compare -- --suite".into(),
            shapes,
            rows: vec![
                ("a".into(), vec![cell(50.0), cell(10.0)]),
                ("b".into(), vec![cell(200.0), None]),
                (CUBLAS.into(), vec![cell(100.0), cell(40.0)]),
            ],
            precision: vec![Precision::Fp32, Precision::Fp32, Precision::Fp32],
        }
    }

    /// A step at a lower clock than cuBLAS does more per clock than per second; the table says
    /// both, and a cell whose clock or baseline's clock was not read says neither.
    #[test]
    fn the_clock_each_held_gives_the_share_per_clock() {
        let mut s = suite();
        let held = |sm_mhz| {
            Some(common::clock::Held { sm_mhz, watts: 650.0, readings: 50, joules: None, no_energy: None })
        };
        s.rows[0].1[0] = Some(Cell { gflops: 50.0, passed: true, held: held(1500.0) });
        s.rows[2].1[0] = Some(Cell { gflops: 100.0, passed: true, held: held(1800.0) });
        assert_eq!(s.share(0, 0), Some(50.0));
        assert!((s.share_per_clock(0, 0).unwrap() - 60.0).abs() < 1e-9);
        assert_eq!(s.share_per_clock(1, 0), None, "b's clock was not read");
        assert_eq!(s.share_per_clock(0, 1), None, "nor a's at the second shape");
        let table = s.table();
        assert!(table.contains("| 50.0 (50.0%) · 1500 MHz, 650 W, 60.0% per clock |"), "{table}");
        assert!(table.contains("| 100 · 1800 MHz, 650 W |"), "{table}");
        // With the energy counter read: 4·4·4·2 = 128 FLOP for 2.56 nJ is 20 J per TFLOP.
        let with_energy = common::clock::Held {
            sm_mhz: 1800.0,
            watts: 650.0,
            readings: 50,
            joules: Some(2.56e-9),
            no_energy: None,
        };
        s.rows[2].1[0] = Some(Cell { gflops: 100.0, passed: true, held: Some(with_energy) });
        assert!(s.table().contains("| 100 · 1800 MHz, 650 W, 20.00 J/TFLOP |"), "{}", s.table());
        assert!(s.markdown("x.svg").contains("share per clock"));
        assert!(!suite().markdown("x.svg").contains("share per clock"));
    }

    #[test]
    fn failed_results_and_empty_baselines_count_in_no_mean() {
        let mut s = suite();
        s.rows[0].1[1] = Some(Cell { gflops: 500.0, passed: false, held: None });
        assert_eq!(s.share(0, 1), None);
        assert_eq!(s.geomean(0).map(|g| g.1), Some(1));
        s.rows[2].1[0] = Some(Cell { gflops: 0.0, passed: true, held: None });
        assert_eq!(s.share(1, 0), None);
        assert!(s.markdown("x.svg").contains("500 FAILED"));
        let path = std::env::temp_dir().join(format!("suite-empty-{}.svg", std::process::id()));
        s.chart(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn shares_their_geometric_mean_and_the_worst_shape() {
        let s = suite();
        assert_eq!(s.share(0, 0), Some(50.0));
        assert_eq!(s.share(0, 1), Some(25.0));
        let (mean, n) = s.geomean(0).unwrap();
        assert!((mean - (50.0_f64 * 25.0).sqrt()).abs() < 1e-9 && n == 2, "{mean} {n}");
        assert_eq!(s.worst(0), Some((1, 25.0)));
        // A shape the step does not serve is left out of its mean, and said.
        let (mean, n) = s.geomean(1).unwrap();
        assert!((mean - 200.0).abs() < 1e-9 && n == 1, "{mean} {n}");
        let md = s.markdown("x.svg");
        assert!(md.contains("| 4³ | 50.0 (50.0%) | 200 (200.0%) | 100 |"), "{md}");
        assert!(md.contains("| 1×8×2 |") && md.contains(" – |"), "{md}");
        assert!(md.contains("| a | 35.4% of cublas_sgemm | 2 | 25.0% at 1×8×2 |"), "{md}");
    }

    #[test]
    fn short_headings_are_named_in_full_and_the_summary_comes_first() {
        assert_eq!(Suite::short("step06_prefetch"), "06");
        assert_eq!(Suite::short("step06_prefetch (stream_k)"), "06 stream_k");
        assert_eq!(Suite::short(CUBLAS), "SGEMM");
        assert_eq!(Suite::short(CUBLAS_TF32), "TF32");
        let mut s = suite();
        s.rows[0].0 = "step11_int8_crt (fused)".into();
        let md = s.markdown("x.svg");
        assert!(md.contains("| shape | 11 fused | b | SGEMM |"), "{md}");
        assert!(md.contains("11 fused = `step11_int8_crt (fused)`, b = `b`, SGEMM = `cublas_sgemm`"), "{md}");
        let (summary, table) = (md.find("| step | geometric mean").unwrap(), md.find("| shape |").unwrap());
        assert!(summary < md.find("## Each shape").unwrap() && md.find("## Each shape").unwrap() < table);
    }

    #[test]
    fn the_suite_is_the_issue_list_and_the_chart_draws() {
        assert_eq!(SHAPES.len(), 17);
        assert!(SHAPES.contains(&(1, 4096, 4096)) && SHAPES.contains(&(64, 64, 65536)));
        let path = std::env::temp_dir().join(format!("suite-chart-{}.svg", std::process::id()));
        suite().chart(&path).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert!(
            svg.starts_with("<svg") && svg.contains("1×8×2") && svg.contains("% of cuBLAS"),
            "{}",
            &svg[..200]
        );
    }
}

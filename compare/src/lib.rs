//! The results of running every step over a range of sizes: a table and a chart.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};
use common::GpuStep;
use plotters::prelude::*;

/// The GPU steps, in course order.
pub const GPU_STEPS: [&GpuStep; 5] = [
    &step02_gpu_naive::STEP,
    &step03_single_block::STEP,
    &step04_tiled::STEP,
    &step05_thread_tile::STEP,
    &step06_prefetch::STEP,
];

/// The name the baseline goes by in tables and charts.
pub const CUBLAS: &str = "cublas_sgemm";

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
    pub sizes: Vec<usize>,
    pub rows: Vec<(String, Vec<Option<Cell>>)>,
}

impl Results {
    fn row(&self, name: &str) -> Option<&[Option<Cell>]> {
        self.rows.iter().find(|(n, _)| n == name).map(|(_, r)| r.as_slice())
    }

    /// Share of cuBLAS in percent, for a cell in column `col`.
    pub fn share(&self, cell: Cell, col: usize) -> Option<f64> {
        let base = self.row(CUBLAS)?.get(col).copied().flatten()?;
        Some(100.0 * cell.gflops / base.gflops)
    }

    /// The speed-up from the first step to the last one, at the largest size both ran.
    pub fn speedup(&self) -> Option<(usize, f64)> {
        let first = &self.rows.first()?.1;
        let last = &self.rows.iter().rev().find(|(n, _)| n != CUBLAS)?.1;
        (0..self.sizes.len()).rev().find_map(|i| {
            Some((self.sizes[i], last.get(i).copied()??.gflops / first.get(i).copied()??.gflops))
        })
    }

    /// The table: GFLOP/s and share of cuBLAS per step and size.
    pub fn table(&self) -> String {
        let mut t = String::from("| step |");
        for s in &self.sizes {
            let _ = write!(t, " {s}³ |");
        }
        t += "\n| --- |";
        t += &" ---: |".repeat(self.sizes.len());
        t += "\n";
        for (name, cells) in &self.rows {
            let _ = write!(t, "| {name} |");
            for (i, cell) in cells.iter().enumerate() {
                match cell {
                    None => t += " – |",
                    Some(c) => {
                        let share = match self.share(*c, i) {
                            Some(p) if name != CUBLAS => format!(" ({p:.1}%)"),
                            _ => String::new(),
                        };
                        let mark = if c.passed { "" } else { " FAILED" };
                        let _ = write!(t, " {:.0}{share}{mark} |", c.gflops);
                    }
                }
            }
            t += "\n";
        }
        t
    }

    /// The results page: table, speed-up and the versions it was measured with.
    pub fn markdown(&self, chart_file: &str) -> String {
        let mut md = format!("# Results on {}\n\n", self.device);
        let _ = writeln!(
            md,
            "Measured {} with driver {}, NVRTC {}. GFLOP/s at each square size (M = N = K), with the \
             share of cuBLAS SGEMM (strict FP32) measured in the same run; every result verified \
             against the f64 reference. – marks a size the step does not serve (step03 holds the whole \
             problem in one block; step01 stops where it would take minutes).\n",
            self.date, self.driver, self.nvrtc
        );
        md += &self.table();
        if let Some((size, x)) = self.speedup() {
            let _ = writeln!(md, "\nFrom the first step to the last: {x:.0}× faster at {size}³.");
        }
        let _ = writeln!(md, "\n![GFLOP/s against size]({chart_file})");
        md
    }

    /// An SVG chart: GFLOP/s against size, one line per step and cuBLAS, both axes logarithmic.
    pub fn chart(&self, path: &Path) -> Result<()> {
        let max =
            self.rows.iter().flat_map(|(_, r)| r.iter().flatten()).map(|c| c.gflops).fold(1.0, f64::max);
        let min =
            self.rows.iter().flat_map(|(_, r)| r.iter().flatten()).map(|c| c.gflops).fold(max, f64::min);
        let (lo, hi) = (*self.sizes.first().unwrap_or(&1) as f64, *self.sizes.last().unwrap_or(&2) as f64);
        let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| anyhow::anyhow!("{e:?}"))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(format!("C = A·B in f32 on {}", self.device), ("sans-serif", 22))
            .margin(16)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d((lo / 1.2..hi * 1.2).log_scale(), (min / 2.0..max * 2.0).log_scale())
            .map_err(|e| anyhow::anyhow!("{e:?}"))?;
        chart
            .configure_mesh()
            .x_desc("M = N = K")
            .y_desc("GFLOP/s")
            .x_label_formatter(&|x| format!("{x:.0}"))
            .y_label_formatter(&|y| format!("{y:.0}"))
            .draw()
            .map_err(|e| anyhow::anyhow!("{e:?}"))?;
        for (i, (name, cells)) in self.rows.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            let points: Vec<(f64, f64)> =
                self.sizes.iter().zip(cells).filter_map(|(&s, c)| c.map(|c| (s as f64, c.gflops))).collect();
            chart
                .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))
                .map_err(|e| anyhow::anyhow!("{e:?}"))?
                .label(name.clone())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2)));
            chart
                .draw_series(points.into_iter().map(|p| Circle::new(p, 3, color.filled())))
                .map_err(|e| anyhow::anyhow!("{e:?}"))?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .draw()
            .map_err(|e| anyhow::anyhow!("{e:?}"))?;
        root.present().with_context(|| format!("writing {}", path.display()))?;
        Ok(())
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

    fn sample() -> Results {
        let c = |g: f64| Some(Cell { gflops: g, passed: true });
        Results {
            device: "Test GPU".into(),
            driver: "13.0".into(),
            nvrtc: "13.0".into(),
            date: "2026-11-21".into(),
            sizes: vec![256, 512],
            rows: vec![
                ("step01_cpu_naive".into(), vec![c(1.0), c(0.5)]),
                ("step03_single_block".into(), vec![None, None]),
                ("step06_prefetch".into(), vec![c(900.0), Some(Cell { gflops: 2000.0, passed: false })]),
                (CUBLAS.into(), vec![c(1000.0), c(4000.0)]),
            ],
        }
    }

    #[test]
    fn table_shows_rates_shares_gaps_and_failures() {
        let t = sample().table();
        assert!(t.starts_with("| step | 256³ | 512³ |"), "{t}");
        assert!(t.contains("| step06_prefetch | 900 (90.0%) | 2000 (50.0%) FAILED |"), "{t}");
        assert!(t.contains("| cublas_sgemm | 1000 | 4000 |"), "{t}");
        assert!(t.contains("| step03_single_block | – | – |"), "{t}");
    }

    #[test]
    fn speedup_uses_the_largest_size_both_ran() {
        assert_eq!(sample().speedup(), Some((512, 4000.0)));
        let md = sample().markdown("x.svg");
        assert!(md.contains("4000× faster at 512³") && md.contains("![GFLOP/s against size](x.svg)"), "{md}");
    }

    #[test]
    fn chart_is_an_svg_with_a_line_per_row() {
        let dir = std::env::temp_dir().join(format!("compare-chart-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("chart.svg");
        sample().chart(&path).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..80.min(svg.len())]);
        for name in ["step01_cpu_naive", "step06_prefetch", CUBLAS] {
            assert!(svg.contains(name), "{name} missing from the legend");
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn slugs() {
        assert_eq!(slug("NVIDIA H200"), "nvidia-h200");
        assert_eq!(slug("NVIDIA H100 80GB HBM3"), "nvidia-h100-80gb-hbm3");
    }
}

//! The results drawn: GFLOP/s against size, and the roofline at 4096³, as SVG charts, with the
//! legend, markers and axis labels the suite's chart shares.

use std::path::Path;

use anyhow::{Context, Result};
use common::Intensity;
use plotters::prelude::*;

use crate::{CUBLAS, CUBLAS_TF32, Cell, Results};

impl Results {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::sample;
    use common::Precision;

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
}

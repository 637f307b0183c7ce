//! The results drawn as SVG: each lab's GFLOP/s against size, and the roofline at 4096³. Both
//! are drawn from a results record (see `record.rs`), so that a chart in the book is what its
//! record holds; the drawing itself is in `drawing.rs`.

use anyhow::{Context, Result};
use common::report::rate;
use common::{Intensity, Precision};

use crate::drawing::{
    self, FONT, LogAxis, Marker, Stroke, Svg, TITLE_FONT, TextAnchor, WIDTH, number, text_width,
};
use crate::{CUBLAS, CUBLAS_TF32, Cell, GPU_STEPS, Results};

/// The line of a cuBLAS baseline: SGEMM dashed, TF32 dotted (in both charts).
fn baseline_stroke(name: &str) -> Stroke {
    let dash = if name == CUBLAS { "8 5" } else { "2 4" };
    Stroke { colour: "#444444", width: 2.0, dash: Some(dash) }
}

const GRID: Stroke = Stroke { colour: "#DDDDDD", width: 1.0, dash: None };

/// Pixels between two entries of a legend.
const KEY_STEP: f64 = 22.0;

/// How one legend entry draws its sample: a line, a marker, or both.
struct Key {
    label: String,
    stroke: Option<Stroke>,
    marker: Option<(Marker, &'static str)>,
}

/// Draws `keys` downwards from `(x, y)`: a sample 32 pixels long, then its label.
fn legend(svg: &mut Svg, (x, y): (f64, f64), keys: &[Key]) {
    for (i, key) in keys.iter().enumerate() {
        let mid = y + i as f64 * KEY_STEP;
        if let Some(stroke) = key.stroke {
            svg.line(&[(x, mid), (x + 32.0, mid)], stroke);
        }
        if let Some((shape, colour)) = key.marker {
            svg.marker(shape, (x + 16.0, mid), 5.0, colour, true);
        }
        svg.text((x + 42.0, mid + FONT * 0.35), &key.label, FONT, TextAnchor::Start, false);
    }
}

/// The width a legend of `keys` takes.
fn legend_width(keys: &[Key]) -> f64 {
    42.0 + keys.iter().map(|k| text_width(&k.label, FONT)).fold(0.0, f64::max)
}

/// Draws the ticks of a vertical axis: light grid lines across the plot from `left` to `right`,
/// labels right-aligned before `left`.
fn y_ticks(svg: &mut Svg, axis: &LogAxis, ticks: &[f64], (left, right): (f64, f64)) {
    for &t in ticks {
        let y = axis.at(t);
        svg.line(&[(left, y), (right, y)], GRID);
        svg.text((left - 6.0, y + FONT * 0.35), &number(t), FONT, TextAnchor::End, false);
    }
}

/// Draws the ticks of a horizontal axis: grid lines from `top` to `bottom`, labels centred under
/// them.
fn x_ticks(svg: &mut Svg, axis: &LogAxis, ticks: &[f64], (top, bottom): (f64, f64)) {
    for &t in ticks {
        let x = axis.at(t);
        svg.line(&[(x, top), (x, bottom)], GRID);
        svg.text((x, bottom + 6.0 + FONT), &number(t), FONT, TextAnchor::Middle, false);
    }
}

/// The margin left of a plot: the vertical axis title, then the widest tick label.
fn left_margin(ticks: &[f64]) -> f64 {
    let widest = ticks.iter().map(|&t| text_width(&number(t), FONT)).fold(0.0, f64::max);
    16.0 + FONT + 10.0 + widest + 6.0
}

impl Results {
    /// Whether row `row` is the lab that runs on the CPU: neither a baseline nor a GPU step. Told
    /// by its name, as the record tells each row's arithmetic: a page without a roofline (a
    /// predicted one) holds no intensities, so a missing intensity does not make a lab the CPU's.
    fn on_cpu(&self, row: usize) -> bool {
        let name = &self.rows[row].0;
        name != CUBLAS && name != CUBLAS_TF32 && !GPU_STEPS.iter().any(|s| s.name == name)
    }

    /// Per row, the style index of a GPU lab that has a result (its colour and marker in both
    /// charts), None for the CPU lab, a baseline and a lab that ran at no size.
    fn lab_styles(&self) -> Vec<Option<usize>> {
        let mut next = 0;
        (0..self.rows.len())
            .map(|row| {
                let (name, cells) = &self.rows[row];
                let lab = name != CUBLAS && name != CUBLAS_TF32 && !self.on_cpu(row);
                (lab && cells.iter().any(Option::is_some)).then(|| {
                    next += 1;
                    next - 1
                })
            })
            .collect()
    }

    /// An SVG chart: GFLOP/s against size, one line per GPU lab and cuBLAS baseline that has a
    /// result, both axes logarithmic, the vertical one fitted to them. The CPU lab, far slower,
    /// is named in a note under the chart with its rates; a predicted chart says under it what
    /// its lines are.
    pub fn chart(&self) -> String {
        let styles = self.lab_styles();
        let drawn: Vec<usize> = (0..self.rows.len())
            .filter(|&r| !self.on_cpu(r) && self.rows[r].1.iter().any(Option::is_some))
            .collect();
        let rates: Vec<f64> =
            drawn.iter().flat_map(|&r| self.rows[r].1.iter().flatten().map(|c| c.gflops)).collect();
        let (min, max) = rates.iter().fold((f64::INFINITY, 0.0_f64), |(lo, hi), &g| (lo.min(g), hi.max(g)));
        let (y_lo, y_hi) = if rates.is_empty() { (1.0, 10.0) } else { (min / 1.2, max * 1.2) };
        let (y_lo, y_hi) = (drawing::round_below(y_lo.max(1e-3)), drawing::round_above(y_hi));

        let keys: Vec<Key> = drawn
            .iter()
            .map(|&r| {
                let name = self.rows[r].0.clone();
                match styles[r] {
                    Some(i) => {
                        let (colour, marker, dash) = drawing::series_style(i);
                        Key {
                            label: name,
                            stroke: Some(Stroke { colour, width: 2.0, dash }),
                            marker: Some((marker, colour)),
                        }
                    }
                    None => Key { stroke: Some(baseline_stroke(&name)), label: name, marker: None },
                }
            })
            .collect();
        let (top, bottom) = (44.0, 424.0);
        let y = LogAxis { lo: y_lo, hi: y_hi, from: bottom, to: top };
        let y_ticks_at = drawing::ticks(&y, |_| FONT, 6.0);
        let left = left_margin(&y_ticks_at);
        let right = WIDTH - legend_width(&keys) - 24.0;
        let (lo, hi) = match (self.sizes.first(), self.sizes.last()) {
            (Some(&lo), Some(&hi)) => (lo as f64 / 1.3, hi as f64 * 1.3),
            _ => (1.0, 10.0),
        };
        let x = LogAxis { lo, hi, from: left, to: right };
        let sizes: Vec<f64> = self.sizes.iter().map(|&s| s as f64).collect();
        let x_ticks_at = drawing::spaced(&x, &sizes, |s| text_width(s, FONT), 10.0);

        // The markers: one that falls on an earlier lab's is drawn larger and beneath it, so that
        // two labs at one rate both show, and a note under the chart says so.
        let mut markers = Vec::new();
        let mut lines = Vec::new();
        for (&r, key) in drawn.iter().zip(&keys) {
            let points: Vec<(f64, f64)> = self
                .sizes
                .iter()
                .zip(&self.rows[r].1)
                .filter_map(|(&s, c)| c.map(|c| (x.at(s as f64), y.at(c.gflops))))
                .collect();
            if let Some(marker) = key.marker {
                markers.extend(points.iter().map(|&p| (p, marker)));
            }
            lines.push((points, key.stroke));
        }
        let at: Vec<(i32, i32)> = markers.iter().map(|&((px, py), _)| (px as i32, py as i32)).collect();
        let radii = marker_radii(&at, MARKER, 5.0);
        let larger = radii.iter().any(|&r| r > MARKER).then(|| LARGER_MARKER.to_owned());

        let notes: Vec<String> =
            self.cpu_note().into_iter().chain(self.predicted_note()).chain(larger).collect();
        // The first note 14 pixels under the axis title, each further one 6 under the last.
        let note_at = |i: usize| FONT + 14.0 + i as f64 * (FONT + 6.0);
        let height = bottom + 2.0 * FONT + 20.0 + notes.len().checked_sub(1).map_or(0.0, note_at) + 10.0;
        let mut svg = Svg::new(WIDTH, height);
        let title = format!("GFLOP/s of each lab against the size, on {}", self.device);
        svg.text(((left + right) / 2.0, 24.0), &title, TITLE_FONT, TextAnchor::Middle, false);
        y_ticks(&mut svg, &y, &y_ticks_at, (left, right));
        x_ticks(&mut svg, &x, &x_ticks_at, (top, bottom));
        svg.frame((left, top), (right, bottom), "#888888");
        svg.text((16.0 + FONT, (top + bottom) / 2.0), "GFLOP/s", FONT, TextAnchor::Middle, true);
        let x_title = bottom + 2.0 * FONT + 14.0;
        svg.text(((left + right) / 2.0, x_title), "M = N = K", FONT, TextAnchor::Middle, false);
        for (i, note) in notes.iter().enumerate() {
            svg.text((left, x_title + note_at(i)), note, FONT, TextAnchor::Start, false);
        }

        // The lines, then the markers, the larger beneath.
        for (points, stroke) in &lines {
            if let Some(stroke) = stroke {
                svg.line(points, *stroke);
            }
        }
        let mut order: Vec<usize> = (0..markers.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(radii[i]));
        for i in order {
            let (p, (shape, colour)) = markers[i];
            svg.marker(shape, p, f64::from(radii[i]), colour, true);
        }
        legend(&mut svg, (right + 24.0, top + 8.0), &keys);
        svg.finish()
    }

    /// The note under the size chart on the CPU lab: its rates at its first and last size.
    fn cpu_note(&self) -> Option<String> {
        let row = (0..self.rows.len()).find(|&r| self.on_cpu(r))?;
        let ran: Vec<(usize, Cell)> =
            self.sizes.iter().zip(&self.rows[row].1).filter_map(|(&s, c)| Some((s, (*c)?))).collect();
        let (first, last) = (ran.first()?, ran.last()?);
        let name = &self.rows[row].0;
        let rates = if ran.len() == 1 {
            format!("{} GFLOP/s at {}³", rate(first.1.gflops), first.0)
        } else {
            format!(
                "{} GFLOP/s at {}³ to {} at {}³",
                rate(first.1.gflops),
                first.0,
                rate(last.1.gflops),
                last.0
            )
        };
        Some(format!("Not drawn: {name}, on the CPU, far below this range: {rates}."))
    }

    /// The note under a predicted chart: the labs' lines are the GPU's rates the time model
    /// predicts, computed without a GPU; cuBLAS's are the rates recorded on that GPU, where a
    /// record holds them.
    fn predicted_note(&self) -> Vec<String> {
        if !self.predicted {
            return vec![];
        }
        let gpu = self.device.strip_suffix(crate::PREDICTED_ON).unwrap_or(&self.device);
        let cublas = self.rows.iter().any(|(n, _)| n == crate::CUBLAS || n == crate::CUBLAS_TF32);
        vec![
            format!("Labs: {gpu} rates predicted by the PTX emulator's time model, without a GPU."),
            match cublas {
                true => format!("cuBLAS: the rates recorded on the {gpu}."),
                false => format!("cuBLAS: none recorded on the {gpu}."),
            },
        ]
    }

    /// An SVG roofline at [`Results::roofline_size`]: the compute roofs (the FP32 peak, and where
    /// labs of the tensor cores are on it the TF32 peak and the roofs derived from it), the DRAM
    /// and shared-memory roofs and the cuBLAS rates as lines, and per GPU lab a filled marker at
    /// its global intensity and a hollow one at its shared-memory intensity; both axes
    /// logarithmic. The legend lists the horizontal lines from the highest down.
    pub fn roofline(&self) -> Result<String> {
        let size = self.roofline_size().context("the results hold no sizes to draw a roofline at")?;
        let styles = self.lab_styles();
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
        let top_roof = tf32_peak.unwrap_or(self.peak_gflops).max(self.peak_gflops);

        // The horizontal lines, each with its legend entry.
        let labs_of = |precision: Precision| {
            let names: Vec<&str> =
                placed.iter().filter(|p| self.precision(p.0) == precision).map(|p| p.1).collect();
            names.join(", ")
        };
        let mut flat: Vec<(f64, Stroke, String)> = Vec::new();
        let solid = |colour| Stroke { colour, width: 2.0, dash: None };
        flat.push((
            self.peak_gflops,
            solid("#000000"),
            format!("FP32 peak {} GFLOP/s", number(self.peak_gflops)),
        ));
        if let Some(tf32) = tf32_peak {
            flat.push((tf32, solid("#0072B2"), format!("TF32 peak {} GFLOP/s", number(tf32))));
            // The roofs of labs that do more tensor-core work than the FLOPs their rate counts,
            // named as the page's table names them, with the labs they bound.
            let derived = [
                (self.split_placed(), Precision::Tf32x3, "#56B4E9"),
                (self.int8_placed(), Precision::Int8Crt, "#009E73"),
            ];
            for (shown, precision, colour) in derived {
                if let (true, (name, Some(gflops))) =
                    (shown, crate::roof(precision, self.peak_gflops, Some(tf32)))
                {
                    let label = format!("{name} {} GFLOP/s ({})", number(gflops), labs_of(precision));
                    flat.push((gflops, solid(colour), label));
                }
            }
        }
        for (name, c) in &baselines {
            flat.push((c.gflops, baseline_stroke(name), format!("{name} {} GFLOP/s", number(c.gflops))));
        }
        flat.sort_by(|a, b| b.0.total_cmp(&a.0));
        let mut sloped: Vec<(f64, Stroke, String)> = Vec::new();
        let label = format!("shared memory {} GB/s (128 B/clock/SM)", number(self.smem_gbs));
        sloped.push((self.smem_gbs, solid("#CC79A7"), label));
        if let Some(gbs) = self.dram_gbs {
            sloped.push((gbs, solid("#D55E00"), format!("DRAM {} GB/s (copy kernel)", number(gbs))));
        }

        // The ranges: every marker, and each lab's lowest roof at its intensities, with room.
        let intensities: Vec<f64> =
            placed.iter().flat_map(|p| std::iter::once(p.2.global).chain(p.2.shared)).collect();
        let i_lo = intensities.iter().copied().fold(f64::INFINITY, f64::min);
        let i_hi = intensities.iter().copied().fold(0.0, f64::max);
        let (x_lo, x_hi) = if intensities.is_empty() { (0.1, 100.0) } else { (i_lo / 2.0, i_hi * 2.0) };
        let (x_lo, x_hi) = (drawing::round_below(x_lo), drawing::round_above(x_hi));
        let floor = placed
            .iter()
            .flat_map(|p| [p.3, self.bound(p.2, self.precision(p.0)).gflops])
            .chain(baselines.iter().map(|b| b.1.gflops))
            .fold(top_roof, f64::min);
        let (y_lo, y_hi) = (drawing::round_below(floor / 1.5), drawing::round_above(top_roof * 1.3));

        let (top, bottom) = (44.0, 524.0);
        let y = LogAxis { lo: y_lo, hi: y_hi, from: bottom, to: top };
        let y_ticks_at = drawing::ticks(&y, |_| FONT, 6.0);
        let (left, right) = (left_margin(&y_ticks_at), WIDTH - 20.0);
        let x = LogAxis { lo: x_lo, hi: x_hi, from: left, to: right };
        let x_ticks_at = drawing::ticks(&x, |s| text_width(s, FONT), 10.0);

        let lines: Vec<Key> = flat
            .iter()
            .chain(&sloped)
            .map(|(_, stroke, label)| Key { label: label.clone(), stroke: Some(*stroke), marker: None })
            .collect();
        let legend_top = bottom + 2.0 * FONT + 44.0;
        let rows = lines.len() as f64;
        let mut svg = Svg::new(WIDTH, legend_top + rows * KEY_STEP);
        let title = format!("The roofline at {size}³ on {}", self.device);
        svg.text(((left + right) / 2.0, 24.0), &title, TITLE_FONT, TextAnchor::Middle, false);
        y_ticks(&mut svg, &y, &y_ticks_at, (left, right));
        x_ticks(&mut svg, &x, &x_ticks_at, (top, bottom));
        svg.frame((left, top), (right, bottom), "#888888");
        svg.text((16.0 + FONT, (top + bottom) / 2.0), "GFLOP/s", FONT, TextAnchor::Middle, true);
        let x_title =
            "FLOP per byte (filled marker: global memory, hollow: shared; a larger one lies under another)";
        svg.text(
            ((left + right) / 2.0, bottom + 2.0 * FONT + 14.0),
            x_title,
            FONT,
            TextAnchor::Middle,
            false,
        );

        for (value, stroke, _) in &flat {
            svg.line(&[(left, y.at(*value)), (right, y.at(*value))], *stroke);
        }
        for (gbs, stroke, _) in &sloped {
            let points: Vec<(f64, f64)> =
                roof(*gbs, top_roof, (x_lo, x_hi), y_lo).iter().map(|&(i, g)| (x.at(i), y.at(g))).collect();
            svg.line(&points, *stroke);
        }

        // A lab whose marker falls on an earlier one's is drawn larger and beneath it, so that
        // both show; the hollow markers the same way among themselves.
        let at: Vec<(i32, i32)> =
            placed.iter().map(|p| (x.at(p.2.global) as i32, y.at(p.3) as i32)).collect();
        let radii = marker_radii(&at, 5, 10.0);
        let shared_at: Vec<(i32, i32)> = placed
            .iter()
            .map(|p| p.2.shared.map_or((i32::MIN, i32::MIN), |s| (x.at(s) as i32, y.at(p.3) as i32)))
            .collect();
        let shared_radii = marker_radii(&shared_at, 5, 10.0);
        for (hollow, radii) in [(true, &shared_radii), (false, &radii)] {
            let mut order: Vec<usize> = (0..placed.len()).collect();
            order.sort_by_key(|&i| std::cmp::Reverse(radii[i]));
            for i in order {
                let (row, _, intensity, gflops) = placed[i];
                let Some(style) = styles[row] else { continue };
                let (colour, shape, _) = drawing::series_style(style);
                let at = if hollow { intensity.shared } else { Some(intensity.global) };
                if let Some(i_at) = at {
                    svg.marker(shape, (x.at(i_at), y.at(gflops)), f64::from(radii[i]), colour, !hollow);
                }
            }
        }
        // Each lab named at its markers: its whole name beside the filled one, its number
        // ("step05") beside the hollow one; no label on another or on a marker.
        let mut markers: Vec<Rect> = Vec::new();
        let mut wanted: Vec<((f64, f64), f64, Vec<String>)> = Vec::new();
        for (hollow, radii) in [(false, &radii), (true, &shared_radii)] {
            for (i, &(row, name, intensity, gflops)) in placed.iter().enumerate() {
                if styles[row].is_none() {
                    continue;
                }
                let at = if hollow { intensity.shared } else { Some(intensity.global) };
                let Some(i_at) = at else { continue };
                let centre = (x.at(i_at), y.at(gflops));
                let reach = f64::from(radii[i]) * 1.45 + 1.5;
                markers.push(Rect::around(centre, reach));
                let text = if hollow { name.split('_').next().unwrap_or(name) } else { name };
                // Markers at one place (within 5 pixels) share a label, a line each.
                let same = wanted.iter_mut().find(|(c, _, _)| (c.0 - centre.0).hypot(c.1 - centre.1) < 5.0);
                match same {
                    Some((_, r, texts)) => {
                        *r = r.max(reach);
                        texts.push(text.to_owned());
                    }
                    None => wanted.push((centre, reach, vec![text.to_owned()])),
                }
            }
        }
        let lines_drawn: Vec<((f64, f64), (f64, f64))> = flat
            .iter()
            .map(|(v, _, _)| ((left, y.at(*v)), (right, y.at(*v))))
            .chain(sloped.iter().filter_map(|(gbs, _, _)| {
                let r = roof(*gbs, top_roof, (x_lo, x_hi), y_lo);
                (r.len() == 2).then(|| ((x.at(r[0].0), y.at(r[0].1)), (x.at(r[1].0), y.at(r[1].1))))
            }))
            .collect();
        let area = Rect { x0: left + 2.0, y0: top + 2.0, x1: right - 2.0, y1: bottom - 2.0 };
        for label in place_labels(&wanted, &markers, &lines_drawn, area) {
            if let Some((from, to)) = label.leader {
                svg.line(&[from, to], LEADER);
            }
            for (i, line) in label.lines.iter().enumerate() {
                svg.halo_text((label.text_x, label.baseline + i as f64 * LABEL_LINE), line, FONT);
            }
        }
        legend(&mut svg, (20.0, legend_top), &lines);
        Ok(svg.finish())
    }
}

/// A line's two ends, in pixels.
type Segment = ((f64, f64), (f64, f64));

/// A label wanted: the centre of its marker, the marker's reach, the label's lines.
type Wanted = ((f64, f64), f64, Vec<String>);

/// The thin line from a label set apart to its marker.
const LEADER: Stroke = Stroke { colour: "#666666", width: 0.8, dash: None };

/// A rectangle on the chart, in pixels.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Rect {
    pub x0: f64,
    pub y0: f64,
    pub x1: f64,
    pub y1: f64,
}

impl Rect {
    fn around((x, y): (f64, f64), reach: f64) -> Rect {
        Rect { x0: x - reach, y0: y - reach, x1: x + reach, y1: y + reach }
    }

    pub(crate) fn overlaps(&self, o: &Rect) -> bool {
        self.x0 < o.x1 && o.x0 < self.x1 && self.y0 < o.y1 && o.y0 < self.y1
    }

    fn inside(&self, o: &Rect) -> bool {
        self.x0 >= o.x0 && self.x1 <= o.x1 && self.y0 >= o.y0 && self.y1 <= o.y1
    }

    /// Whether the segment from `a` to `b` passes through the box (clipped, Liang–Barsky).
    fn crossed_by(&self, a: (f64, f64), b: (f64, f64)) -> bool {
        let (dx, dy) = (b.0 - a.0, b.1 - a.1);
        let (mut t0, mut t1) = (0.0_f64, 1.0_f64);
        for (p, q) in [(-dx, a.0 - self.x0), (dx, self.x1 - a.0), (-dy, a.1 - self.y0), (dy, self.y1 - a.1)] {
            if p == 0.0 {
                if q < 0.0 {
                    return false;
                }
            } else {
                let r = q / p;
                if p < 0.0 {
                    t0 = t0.max(r);
                } else {
                    t1 = t1.min(r);
                }
            }
        }
        t0 <= t1
    }

    /// The point of the box nearest to `p`.
    fn nearest(&self, (x, y): (f64, f64)) -> (f64, f64) {
        (x.clamp(self.x0, self.x1), y.clamp(self.y0, self.y1))
    }
}

/// The height of a line of a label.
const LABEL_LINE: f64 = FONT + 2.0;

/// A lab's name placed on the chart (the names of labs whose markers are at one place, a line
/// each): its lines, where the first is written, the box it takes (with a
/// margin) and the line to its marker where it stands apart from it.
#[derive(Clone, Debug)]
pub(crate) struct Label {
    pub lines: Vec<String>,
    pub text_x: f64,
    pub baseline: f64,
    pub area: Rect,
    pub leader: Option<((f64, f64), (f64, f64))>,
}

/// Places each of `wanted` (a marker's centre, its reach, the lines of its label) beside its marker: the
/// nearest place, around it and then further out with a leader line, where the label stays in
/// `area`, touches no other label, no marker and no leader, and its leader crosses no label or
/// other marker; of places as near, one that crosses fewer of the chart's `lines`. Labels are
/// placed in order, the most crowded markers first.
pub(crate) fn place_labels(wanted: &[Wanted], markers: &[Rect], lines: &[Segment], area: Rect) -> Vec<Label> {
    let mut order: Vec<usize> = (0..wanted.len()).collect();
    let crowd = |i: usize| {
        let (a, _, _) = &wanted[i];
        wanted.iter().filter(|(b, _, _)| (a.0 - b.0).hypot(a.1 - b.1) < 60.0).count()
    };
    order.sort_by_key(|&i| std::cmp::Reverse(crowd(i)));
    // A label with no room goes first, and all are placed again.
    for _ in 0..=wanted.len() {
        match place_in_order(wanted, &order, markers, lines, area) {
            Ok(labels) => return labels,
            Err(i) => {
                order.retain(|&j| j != i);
                order.insert(0, i);
            }
        }
    }
    panic!("no room for the labels of the roofline")
}

/// The labels of `wanted`, placed in `order`; or the first that finds no room.
fn place_in_order(
    wanted: &[Wanted],
    order: &[usize],
    markers: &[Rect],
    lines: &[Segment],
    area: Rect,
) -> Result<Vec<Label>, usize> {
    let mut placed: Vec<(usize, Label)> = Vec::new();
    for &i in order {
        let ((cx, cy), reach, lines_of) = &wanted[i];
        let w = lines_of.iter().map(|t| text_width(t, FONT)).fold(0.0, f64::max);
        let h = LABEL_LINE * lines_of.len() as f64;
        let mut best: Option<(f64, Label)> = None;
        for step in 0..40 {
            let d = reach + 3.0 + 8.0 * f64::from(step);
            for k in 0..32 {
                let angle = f64::from(k) * std::f64::consts::PI / 16.0;
                let (ux, uy) = (angle.cos(), -angle.sin());
                // The box's near edge at distance d from the centre, in the direction (ux, uy).
                let (bx, by) = (cx + ux * d + near_edge(ux, w), cy + uy * d + near_edge(uy, h));
                let b = Rect { x0: bx, y0: by, x1: bx + w, y1: by + h };
                let margin = Rect { x0: b.x0 - 2.0, y0: b.y0 - 2.0, x1: b.x1 + 2.0, y1: b.y1 + 2.0 };
                if !margin.inside(&area) || markers.iter().any(|m| m.overlaps(&margin)) {
                    continue;
                }
                if placed.iter().any(|(_, l)| {
                    l.area.overlaps(&margin) || l.leader.is_some_and(|(a, z)| margin.crossed_by(a, z))
                }) {
                    continue;
                }
                let near = b.nearest((*cx, *cy));
                let gap = (near.0 - cx).hypot(near.1 - cy);
                let leader = (gap > reach + 6.0).then(|| {
                    let f = reach / gap;
                    ((cx + (near.0 - cx) * f, cy + (near.1 - cy) * f), near)
                });
                if let Some((a, z)) = leader {
                    // Markers drawn over this one (the same place) do not count.
                    let apart = |m: &&Rect| !(m.x0 <= *cx && *cx <= m.x1 && m.y0 <= *cy && *cy <= m.y1);
                    let hits_marker = markers.iter().filter(apart).any(|m| m.crossed_by(a, z));
                    if hits_marker || placed.iter().any(|(_, l)| l.area.crossed_by(a, z)) {
                        continue;
                    }
                }
                let crossings = lines.iter().filter(|(a, z)| b.crossed_by(*a, *z)).count() as f64;
                // A label nearer another marker than its own would name that one.
                let nearer = markers
                    .iter()
                    .filter(|m| !(m.x0 <= *cx && *cx <= m.x1 && m.y0 <= *cy && *cy <= m.y1))
                    .any(|m| {
                        let c = ((m.x0 + m.x1) / 2.0, (m.y0 + m.y1) / 2.0);
                        let p = b.nearest(c);
                        (p.0 - c.0).hypot(p.1 - c.1) - (m.x1 - m.x0) / 2.0 < gap - reach
                    });
                let cost = gap
                    + 14.0 * crossings
                    + if leader.is_some() { 10.0 } else { 0.0 }
                    + if nearer { 40.0 } else { 0.0 };
                if best.as_ref().is_none_or(|(c, _)| cost < *c) {
                    let label = Label {
                        lines: lines_of.clone(),
                        text_x: b.x0,
                        baseline: b.y0 + LABEL_LINE - 4.0,
                        area: margin,
                        leader,
                    };
                    best = Some((cost, label));
                }
            }
            // A place this near that crosses no line is as good as any further out.
            if best.as_ref().is_some_and(|(c, _)| *c <= d + 2.0) {
                break;
            }
        }
        let (_, label) = best.ok_or(i)?;
        placed.push((i, label));
    }
    placed.sort_by_key(|(i, _)| *i);
    Ok(placed.into_iter().map(|(_, l)| l).collect())
}

/// The radius of each of `points` (pixels) so that none hides another: a marker that falls
/// within `near` pixels of markers before it grows by 4 pixels for each, and is drawn beneath
/// them (larger first).
/// The radius of a marker in the size chart, where no other lies under it.
const MARKER: i32 = 4;

/// The size chart's note on the markers drawn larger.
const LARGER_MARKER: &str =
    "A larger marker lies under another lab's at nearly the same rate, so that both show.";

pub(crate) fn marker_radii(points: &[(i32, i32)], radius: i32, near: f64) -> Vec<i32> {
    points
        .iter()
        .enumerate()
        .map(|(i, &(x, y))| {
            let close = |&&(a, b): &&(i32, i32)| {
                (f64::from(a) - f64::from(x)).hypot(f64::from(b) - f64::from(y)) < near
            };
            let under = points[..i].iter().filter(close).count();
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

/// Where a label's box of `len` starts, from the point at distance d in direction `u` (one
/// component): centred across a direction near the other axis, else on the side it points to.
fn near_edge(u: f64, len: f64) -> f64 {
    if u.abs() < 0.2 {
        -len / 2.0
    } else if u > 0.0 {
        0.0
    } else {
        -len
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::tests::sample;

    /// The texts an SVG writes, in order.
    pub(crate) fn texts(svg: &str) -> Vec<&str> {
        svg.split("</text>").filter_map(|t| Some(t.rsplit_once('>')?.1)).collect()
    }

    /// Every font size an SVG sets, and its width.
    pub(crate) fn sizes_and_width(svg: &str) -> (Vec<f64>, f64) {
        let attr = |piece: &str| piece.split('"').next().and_then(|v| v.parse::<f64>().ok());
        let sizes = svg.split("font-size=\"").skip(1).filter_map(attr).collect();
        let width = svg.split("width=\"").nth(1).and_then(attr).unwrap_or(f64::INFINITY);
        (sizes, width)
    }

    /// A chart is drawn no wider than the book's column, so its text is shown at its own size,
    /// and no text is under 12 pixels (11 where a narrower window shrinks it to 840).
    pub(crate) fn assert_legible(svg: &str) {
        let (sizes, width) = sizes_and_width(svg);
        assert!(width <= 920.0, "{width} pixels wide: the book's column shrinks it");
        assert!(!sizes.is_empty() && sizes.iter().all(|&s| s >= 12.0), "font sizes {sizes:?}");
    }

    #[test]
    fn the_size_chart_draws_the_labs_that_ran_and_names_the_cpu_lab_in_a_note() {
        let svg = sample().chart();
        assert_legible(&svg);
        let texts = texts(&svg);
        for name in ["step02_gpu_naive", "step06_prefetch", "step07_tf32_mma", CUBLAS, CUBLAS_TF32] {
            assert!(texts.contains(&name), "{name} missing from the legend: {texts:?}");
        }
        // step03 ran at no size: not in the legend. The CPU lab is in the note, not the legend.
        assert!(!svg.contains("step03_single_block"), "a legend entry for a lab with no results");
        assert!(!texts.contains(&"step01_cpu_naive"));
        let note = "Not drawn: step01_cpu_naive, on the CPU, far below this range: 1.00 GFLOP/s at 256³ \
                    to 0.50 at 512³.";
        assert!(texts.contains(&note), "{texts:?}");
        // Every size labelled, and the rates axis fitted to the GPU's 300 to 30 000 GFLOP/s:
        // from 200 to 50 000, nothing down at the CPU lab's 0.5.
        for label in ["256", "512", "200", "1000", "10\u{202f}000", "50\u{202f}000"] {
            assert!(texts.contains(&label), "no tick {label} in {texts:?}");
        }
        assert!(!texts.contains(&"100") && !texts.contains(&"100\u{202f}000"), "{texts:?}");
        // One marker per result of a lab (cuBLAS has lines only), and one per lab in the legend.
        assert_eq!(svg.matches("stroke-width=\"0.75\"").count(), 2 + 2 + 2 + 3);
    }

    /// A record without a roofline section (a predicted page) holds no intensities: its GPU labs
    /// are drawn all the same, none taken for the CPU lab.
    #[test]
    fn a_record_without_intensities_draws_the_same_labs() {
        let bare = Results { intensities: vec![None; sample().rows.len()], ..sample() };
        assert_eq!(bare.chart(), sample().chart());
    }

    /// A predicted chart says under it that the labs' lines are predicted H100 rates, and
    /// cuBLAS's the recorded ones, each note within the chart's width; a measured chart does not.
    #[test]
    fn a_predicted_chart_says_its_rates_are_predicted() {
        let predicted = Results { predicted: true, device: crate::predicted_device("H100"), ..sample() };
        let svg = predicted.chart();
        assert_legible(&svg);
        let texts = texts(&svg);
        let notes = predicted.predicted_note();
        assert_eq!(notes.len(), 2);
        for note in &notes {
            assert!(texts.contains(&note.as_str()), "{note} missing: {texts:?}");
            assert!(note.contains("H100") && !note.contains("measured"), "{note}");
            // From the plot's left edge (at most 110 pixels in) to the chart's right.
            assert!(110.0 + text_width(note, FONT) <= WIDTH, "{note} runs off the chart");
        }
        // The CPU lab's note is still the first.
        let at = |note: &str| texts.iter().position(|t| t.starts_with(note)).unwrap();
        assert!(at("Not drawn: step01_cpu_naive") < at(&notes[0]));
        assert!(!sample().chart().contains(&notes[0]));
    }

    /// Markers of two labs at one rate are drawn in two sizes, and a note under the chart says
    /// why; a chart whose markers all lie apart has no such note.
    #[test]
    fn a_chart_with_a_larger_marker_says_why() {
        assert!(!texts(&sample().chart()).contains(&LARGER_MARKER), "no markers overlap in the sample");
        let mut same = sample();
        let row = |name: &str| same.rows.iter().position(|r| r.0 == name).unwrap();
        let (from, to) = (row("step07_tf32_mma"), row("step06_prefetch"));
        same.rows[to].1 = same.rows[from].1.clone();
        let svg = same.chart();
        assert_legible(&svg);
        assert!(texts(&svg).contains(&LARGER_MARKER), "{:?}", texts(&svg));
        assert!(110.0 + text_width(LARGER_MARKER, FONT) <= WIDTH, "the note runs off the chart");
    }

    #[test]
    fn each_lab_has_its_own_colour_and_marker_in_both_charts() {
        let svg = sample().chart();
        let roofline = sample().roofline().unwrap();
        for (i, name) in ["step02_gpu_naive", "step06_prefetch", "step07_tf32_mma"].into_iter().enumerate() {
            let (colour, _, _) = drawing::series_style(i);
            assert_eq!(svg.matches(&format!("stroke=\"{colour}\"")).count(), 2, "{name}: its line, its key");
            assert!(roofline.contains(&format!("fill=\"{colour}\"")), "{name} in another colour");
        }
    }

    #[test]
    fn roofs_start_at_the_floor_and_bend_at_the_ridge() {
        let r = roof(1000.0, 10_000.0, (0.05, 200.0), 100.0);
        assert_eq!(r, vec![(0.1, 100.0), (10.0, 10_000.0)]);
        assert_eq!(roof(1000.0, 10_000.0, (0.05, 5.0), 10.0), vec![(0.05, 50.0), (5.0, 5000.0)]);
        assert!(roof(1.0, 10.0, (0.05, 200.0), 1000.0).is_empty(), "never above the floor");
        assert!(roof(1e6, 10.0, (0.05, 200.0), 1.0).is_empty(), "at the peak everywhere in view");
    }

    #[test]
    fn roofline_is_an_svg_with_the_roofs_and_each_step_that_ran() {
        let svg = sample().roofline().unwrap();
        assert_legible(&svg);
        let texts = texts(&svg);
        for text in [
            "The roofline at 512³ on Test GPU",
            "FP32 peak 10\u{202f}000 GFLOP/s",
            "DRAM 1000 GB/s (copy kernel)",
            "shared memory 5000 GB/s (128 B/clock/SM)",
            "cublas_sgemm 4000 GFLOP/s",
            "TF32 peak 80\u{202f}000 GFLOP/s",
            "cublas_tf32 30\u{202f}000 GFLOP/s",
            "step02_gpu_naive",
            "step06_prefetch",
            "step07_tf32_mma",
        ] {
            assert!(texts.contains(&text), "{text} missing from the roofline: {texts:?}");
        }
        // The horizontal lines' keys from the highest down.
        let at = |t: &str| texts.iter().position(|x| x.starts_with(t)).unwrap();
        assert!(at("TF32 peak") < at("cublas_tf32") && at("cublas_tf32") < at("FP32 peak"));
        assert!(at("FP32 peak") < at("cublas_sgemm"));
        // step03 did not run at 512³ and the CPU step has no intensity: no markers for them.
        assert!(!svg.contains("step03_single_block") && !svg.contains("step01_cpu_naive"));
        // A marker per step at its global intensity, named beside it, and a hollow one at
        // the shared intensities of step06 and step07.
        assert_eq!(svg.matches("stroke-width=\"0.75\"").count(), 3, "three filled, no legend of the labs");
        assert_eq!(svg.matches("fill-opacity=\"0.6\"").count(), 2, "two hollow");
        // Without a TF32 step on it, the chart has neither the TF32 peak nor cuBLAS TF32.
        let mut fp32_only = sample();
        fp32_only.precision = vec![Precision::Fp32; fp32_only.rows.len()];
        let svg = fp32_only.roofline().unwrap();
        assert!(!svg.contains("TF32 peak") && !svg.contains("cublas_tf32"), "TF32 roofs on an FP32 chart");
        // A step of three TF32 products has its own roof, a third of the TF32 peak, named with
        // the lab it bounds.
        let mut split = sample();
        split.precision[4] = Precision::Tf32x3;
        let svg = split.roofline().unwrap();
        assert!(
            svg.contains("a third of TF32 peak 26\u{202f}667 GFLOP/s (step07_tf32_mma)"),
            "no roof for three TF32 products"
        );
        assert!(!sample().roofline().unwrap().contains("a third"));
        // INT8 products from residues: a seventh of the INT8 peak, four times the TF32 one.
        let mut int8 = sample();
        int8.precision[4] = Precision::Int8Crt;
        let svg = int8.roofline().unwrap();
        assert!(svg.contains("a seventh of INT8 peak 45\u{202f}714 GFLOP/s"), "no roof for INT8 products");
        assert!(!sample().roofline().unwrap().contains("INT8"));
        // A TF32 step on a GPU whose TF32 peak is not known: cuBLAS TF32 still, no TF32 peak,
        // as the page says.
        let unknown = Results { tf32_peak_gflops: None, ..sample() };
        let svg = unknown.roofline().unwrap();
        assert!(
            svg.contains("cublas_tf32 30\u{202f}000") && !svg.contains("TF32 peak"),
            "cuBLAS TF32 or the peak wrong"
        );
        let md = Results { tf32_peak_gflops: None, ..sample() }.markdown("x.svg");
        assert!(md.contains("cuBLAS TF32 ran at 30000") && !md.contains("The TF32 peak is"), "{md}");
    }

    #[test]
    fn labels_touch_no_other_label_and_no_marker() {
        let markers = [
            Rect::around((100.0, 100.0), 8.0),
            Rect::around((104.0, 102.0), 12.0),
            Rect::around((300.0, 100.0), 8.0),
        ];
        let wanted = vec![
            ((100.0, 100.0), 12.0, vec!["step06_prefetch".to_owned(), "step10_any_shape".to_owned()]),
            ((300.0, 100.0), 8.0, vec!["step05".to_owned()]),
        ];
        let area = Rect { x0: 0.0, y0: 0.0, x1: 500.0, y1: 300.0 };
        let labels = place_labels(&wanted, &markers, &[((0.0, 110.0), (500.0, 110.0))], area);
        assert_eq!(labels.len(), 2);
        assert!(!labels[0].area.overlaps(&labels[1].area));
        for l in &labels {
            assert!(markers.iter().all(|m| !m.overlaps(&l.area)), "{l:?} on a marker");
        }
    }

    #[test]
    fn a_marker_on_another_grows_and_goes_beneath_it() {
        let points = [(100, 100), (300, 100), (104, 103), (101, 99)];
        assert_eq!(marker_radii(&points, 5, 10.0), [5, 5, 9, 13]);
        assert_eq!(marker_radii(&points, 4, 3.0), [4, 4, 4, 8], "only the one within 3 pixels");
    }
}

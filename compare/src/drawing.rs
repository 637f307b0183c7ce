//! What the results charts are drawn with: an SVG written element by element, logarithmic axes
//! whose ticks are chosen so that no two labels touch, and the colours, markers and dashes that
//! tell the series apart.
//!
//! A chart is drawn at the width the book shows it (at most [`WIDTH`], the book's column), so a
//! pixel of the drawing is a pixel on the page and the text sizes below are the sizes a reader
//! sees.

use std::fmt::Write as _;

/// The width of a chart in pixels: the book's text column is 920 pixels wide at most.
pub(crate) const WIDTH: f64 = 900.0;

/// The size of every label, tick and legend entry, in pixels.
pub(crate) const FONT: f64 = 13.0;

/// The size of a chart's title, in pixels.
pub(crate) const TITLE_FONT: f64 = 15.0;

/// The width of one character at `size`, an upper estimate for the sans-serif fonts a browser
/// picks (DejaVu Sans draws digits 0.64 em wide, Liberation Sans and Arial 0.56 em).
pub(crate) fn text_width(text: &str, size: f64) -> f64 {
    text.chars().count() as f64 * 0.64 * size
}

/// Colours a reader tells apart, colour-blind readers included: Paul Tol's "muted" scheme, in
/// the order the labs take them. The order puts labs whose lines run close (02 and 04; 05, 06
/// and 10; 07, 09 and 11) on colours of different lightness as well as hue.
pub(crate) const PALETTE: [&str; 9] =
    ["#DDCC77", "#332288", "#88CCEE", "#CC6677", "#44AA99", "#882255", "#999933", "#117733", "#AA4499"];

/// The shape of a series' markers: the second thing, after its colour, that tells it apart.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Marker {
    Circle,
    Square,
    Triangle,
    Diamond,
    TriangleDown,
}

const MARKERS: [Marker; 5] =
    [Marker::Circle, Marker::Square, Marker::Triangle, Marker::Diamond, Marker::TriangleDown];

/// Dash patterns for the lines of the series beyond the palette's nine (a solid line first).
const DASHES: [Option<&str>; 3] = [None, Some("9 4"), Some("2 3")];

/// How the `i`-th series is drawn: its colour, marker and line dash. Colours repeat after nine,
/// markers after five and dashes after 27, so up to 27 series differ in colour and dash, and
/// every pair differs in at least one of the three.
pub(crate) fn series_style(i: usize) -> (&'static str, Marker, Option<&'static str>) {
    (PALETTE[i % PALETTE.len()], MARKERS[i % MARKERS.len()], DASHES[(i / PALETTE.len()) % DASHES.len()])
}

/// A stroke: colour, width and an SVG dash pattern (None for a solid line).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Stroke {
    pub colour: &'static str,
    pub width: f64,
    pub dash: Option<&'static str>,
}

/// Where a text's anchor is: its start, middle or end.
#[derive(Clone, Copy, Debug)]
pub(crate) enum TextAnchor {
    Start,
    Middle,
    End,
}

/// An SVG document being written.
pub(crate) struct Svg {
    width: f64,
    height: f64,
    body: String,
}

impl Svg {
    pub fn new(width: f64, height: f64) -> Svg {
        Svg { width, height, body: String::new() }
    }

    /// A polyline through `points`.
    pub fn line(&mut self, points: &[(f64, f64)], stroke: Stroke) {
        if points.len() < 2 {
            return;
        }
        let mut d = String::new();
        for (i, (x, y)) in points.iter().enumerate() {
            let _ = write!(d, "{}{:.1},{:.1}", if i == 0 { "M" } else { " L" }, x, y);
        }
        let dash = stroke.dash.map_or(String::new(), |d| format!(" stroke-dasharray=\"{d}\""));
        let _ = writeln!(
            self.body,
            "<path d=\"{d}\" fill=\"none\" stroke=\"{}\" stroke-width=\"{}\"{dash}/>",
            stroke.colour, stroke.width
        );
    }

    /// A rectangle's outline.
    pub fn frame(&mut self, (x0, y0): (f64, f64), (x1, y1): (f64, f64), colour: &str) {
        let _ = writeln!(
            self.body,
            "<rect x=\"{x0:.1}\" y=\"{y0:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"none\" \
             stroke=\"{colour}\" stroke-width=\"1\"/>",
            x1 - x0,
            y1 - y0
        );
    }

    /// `text` with its baseline at `y`, anchored at `x`; turned a quarter anticlockwise when
    /// `upright` (an axis title beside a vertical axis).
    pub fn text(&mut self, (x, y): (f64, f64), text: &str, size: f64, anchor: TextAnchor, upright: bool) {
        let anchor = match anchor {
            TextAnchor::Start => "start",
            TextAnchor::Middle => "middle",
            TextAnchor::End => "end",
        };
        let turn = if upright { format!(" transform=\"rotate(-90 {x:.1} {y:.1})\"") } else { String::new() };
        let _ = writeln!(
            self.body,
            "<text x=\"{x:.1}\" y=\"{y:.1}\" font-family=\"sans-serif\" font-size=\"{size}\" \
             text-anchor=\"{anchor}\" fill=\"#000000\"{turn}>{}</text>",
            escape(text)
        );
    }

    /// `text` starting at `x`, its baseline at `y`, over a white halo that keeps it legible
    /// where it crosses a line.
    pub fn halo_text(&mut self, (x, y): (f64, f64), text: &str, size: f64) {
        let _ = writeln!(
            self.body,
            "<text x=\"{x:.1}\" y=\"{y:.1}\" font-family=\"sans-serif\" font-size=\"{size}\" \
             text-anchor=\"start\" fill=\"#000000\" stroke=\"#FFFFFF\" stroke-width=\"3\" \
             paint-order=\"stroke\" stroke-linejoin=\"round\">{}</text>",
            escape(text)
        );
    }

    /// A marker of `shape` centred at `(x, y)`, `r` pixels from centre to edge: filled, or an
    /// outline over white.
    pub fn marker(&mut self, shape: Marker, (x, y): (f64, f64), r: f64, colour: &str, filled: bool) {
        let paint = if filled {
            format!("fill=\"{colour}\" stroke=\"#000000\" stroke-width=\"0.75\"")
        } else {
            format!("fill=\"#FFFFFF\" fill-opacity=\"0.6\" stroke=\"{colour}\" stroke-width=\"2\"")
        };
        // Corners at angles (degrees) around the centre, scaled so that each shape looks about
        // as large as the circle.
        let corners: &[f64] = match shape {
            Marker::Circle => {
                let _ = writeln!(self.body, "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"{r:.1}\" {paint}/>");
                return;
            }
            Marker::Square => &[45.0, 135.0, 225.0, 315.0],
            Marker::Triangle => &[90.0, 210.0, 330.0],
            Marker::Diamond => &[0.0, 90.0, 180.0, 270.0],
            Marker::TriangleDown => &[270.0, 30.0, 150.0],
        };
        let reach = match shape {
            Marker::Square => r * 1.3,
            Marker::Triangle | Marker::TriangleDown => r * 1.45,
            _ => r * 1.3,
        };
        let mut points = String::new();
        for a in corners {
            let (s, c) = a.to_radians().sin_cos();
            let _ = write!(points, "{:.1},{:.1} ", x + reach * c, y - reach * s);
        }
        let _ = writeln!(self.body, "<polygon points=\"{}\" {paint}/>", points.trim_end());
    }

    /// The document.
    pub fn finish(self) -> String {
        format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\">\n\
             <rect width=\"{w}\" height=\"{h}\" fill=\"#FFFFFF\"/>\n{}</svg>\n",
            self.body,
            w = self.width,
            h = self.height
        )
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// A logarithmic axis: values from `lo` to `hi` drawn from pixel `from` to pixel `to` (for a
/// vertical axis `from` is the bottom).
#[derive(Clone, Copy, Debug)]
pub(crate) struct LogAxis {
    pub lo: f64,
    pub hi: f64,
    pub from: f64,
    pub to: f64,
}

impl LogAxis {
    /// The pixel of `v`.
    pub fn at(&self, v: f64) -> f64 {
        self.from + (v / self.lo).log10() / (self.hi / self.lo).log10() * (self.to - self.from)
    }
}

/// The values m·10ᵏ for each mantissa m of `mantissas` that lie in [lo, hi], in order.
fn round_values(lo: f64, hi: f64, mantissas: &[f64]) -> Vec<f64> {
    let mut out = Vec::new();
    // A log axis has no place for zero or less (an intensity of 0 would be one).
    if !(lo > 0.0 && hi >= lo && hi.is_finite()) {
        return out;
    }
    for k in (lo.log10().floor() as i32 - 1)..=(hi.log10().ceil() as i32) {
        for m in mantissas {
            // Built from the decimal text, so that 0.1 is 0.1 and not 0.1000…02.
            let v: f64 = format!("{m}e{k}").parse().unwrap_or(f64::NAN);
            if v >= lo * (1.0 - 1e-9) && v <= hi * (1.0 + 1e-9) {
                out.push(v);
            }
        }
    }
    out
}

/// The largest of 1, 2, 5 × 10ᵏ at or below `v`, and the smallest at or above it: the ends of
/// an axis that holds `v`.
pub(crate) fn round_below(v: f64) -> f64 {
    round_values(v / 10.0, v, &[1.0, 2.0, 5.0]).last().copied().unwrap_or(v)
}

pub(crate) fn round_above(v: f64) -> f64 {
    round_values(v, v * 10.0, &[1.0, 2.0, 5.0]).first().copied().unwrap_or(v)
}

/// The ticks of `axis`: the densest of 1-2-5, 1-3 and 1 per factor of ten (then every second,
/// third … power of ten) whose labels, `extent(label)` pixels long along the axis, stay `gap`
/// pixels apart.
pub(crate) fn ticks(axis: &LogAxis, extent: impl Fn(&str) -> f64, gap: f64) -> Vec<f64> {
    let apart = |values: &[f64]| {
        values.windows(2).all(|w| {
            let room = (axis.at(w[1]) - axis.at(w[0])).abs();
            room >= (extent(&number(w[0])) + extent(&number(w[1]))) / 2.0 + gap
        })
    };
    for mantissas in [&[1.0, 2.0, 5.0][..], &[1.0, 3.0], &[1.0]] {
        let values = round_values(axis.lo, axis.hi, mantissas);
        if values.len() >= 2 && apart(&values) {
            return values;
        }
    }
    let decades = round_values(axis.lo, axis.hi, &[1.0]);
    for stride in 2..=decades.len().max(2) {
        let values: Vec<f64> = decades.iter().copied().step_by(stride).collect();
        if apart(&values) {
            return values;
        }
    }
    decades.into_iter().take(1).collect()
}

/// Of `values` (in order along `axis`), those whose labels can be written without touching: the
/// first, then each whose label starts `gap` pixels past the end of the last one kept.
pub(crate) fn spaced(axis: &LogAxis, values: &[f64], extent: impl Fn(&str) -> f64, gap: f64) -> Vec<f64> {
    let mut kept: Vec<f64> = Vec::new();
    for &v in values {
        let fits = kept.last().is_none_or(|&last| {
            (axis.at(v) - axis.at(last)).abs() >= (extent(&number(last)) + extent(&number(v))) / 2.0 + gap
        });
        if fits {
            kept.push(v);
        }
    }
    kept
}

/// A number as an axis or legend writes it: whole numbers of five digits or more grouped in
/// threes by a narrow no-break space (as the book writes them), fractions without trailing
/// zeros.
pub(crate) fn number(v: f64) -> String {
    if v >= 1.0 {
        let digits = format!("{v:.0}");
        if digits.len() < 5 {
            return digits;
        }
        let mut out = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i) % 3 == 0 {
                out.push('\u{202f}');
            }
            out.push(c);
        }
        out
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_written_as_the_book_writes_them() {
        assert_eq!(
            [number(0.05), number(0.5), number(5.0), number(8192.0), number(10_000.0), number(361_404.0)],
            ["0.05", "0.5", "5", "8192", "10\u{202f}000", "361\u{202f}404"]
        );
    }

    #[test]
    fn an_axis_ends_on_round_values() {
        assert_eq!((round_below(659.0), round_above(361_404.0)), (500.0, 500_000.0));
        assert_eq!((round_below(1000.0), round_above(1000.0)), (1000.0, 1000.0));
        assert_eq!((round_below(0.3), round_above(0.3)), (0.2, 0.5));
    }

    #[test]
    fn ticks_thin_out_until_their_labels_are_apart() {
        let width = |s: &str| text_width(s, FONT);
        // 500 to 500 000 over 400 pixels: 1-2-5 fits (the closest two are 53 pixels apart).
        let tall = LogAxis { lo: 500.0, hi: 500_000.0, from: 440.0, to: 40.0 };
        let labels = |_: &str| FONT;
        assert_eq!(ticks(&tall, labels, 6.0).len(), 10);
        // The same range over 100 pixels: only the powers of ten.
        let short = LogAxis { from: 140.0, to: 40.0, ..tall };
        assert_eq!(ticks(&short, labels, 6.0), [1000.0, 10_000.0, 100_000.0]);
        // Over 30 pixels: every second power of ten.
        let tiny = LogAxis { from: 70.0, to: 40.0, ..tall };
        assert_eq!(ticks(&tiny, labels, 6.0), [1000.0, 100_000.0]);
        // Horizontal, 0.05 to 200 over 760 pixels: 1-2-5, and no two labels touch.
        let wide = LogAxis { lo: 0.05, hi: 200.0, from: 80.0, to: 840.0 };
        let t = ticks(&wide, width, 8.0);
        assert_eq!(t.first(), Some(&0.05));
        for w in t.windows(2) {
            let room = wide.at(w[1]) - wide.at(w[0]);
            assert!(room >= (width(&number(w[0])) + width(&number(w[1]))) / 2.0 + 8.0, "{w:?}");
        }
    }

    #[test]
    fn sizes_too_close_to_label_are_left_out() {
        let width = |s: &str| text_width(s, FONT);
        let axis = LogAxis { lo: 200.0, hi: 10_000.0, from: 80.0, to: 680.0 };
        let doublings = [256.0, 512.0, 1024.0, 2048.0, 4096.0, 8192.0];
        assert_eq!(spaced(&axis, &doublings, width, 8.0), doublings);
        // 6000, 7000, 8000 and 9000 are 9 to 14 pixels apart here: one label in two or three.
        let dense = [4096.0, 5000.0, 6000.0, 7000.0, 8000.0, 9000.0];
        let kept = spaced(&axis, &dense, width, 8.0);
        assert!(kept.len() < dense.len() && kept[0] == 4096.0, "{kept:?}");
        for w in kept.windows(2) {
            assert!(axis.at(w[1]) - axis.at(w[0]) >= width("8000") + 8.0, "{kept:?}");
        }
    }

    #[test]
    fn series_differ_in_colour_marker_or_dash() {
        let styles: Vec<_> = (0..27).map(series_style).collect();
        for (i, a) in styles.iter().enumerate() {
            for b in &styles[i + 1..] {
                assert!(a.0 != b.0 || a.2 != b.2, "two series alike in colour and dash");
            }
        }
        assert_eq!(series_style(0).2, None, "the first nine lines are solid");
        assert_eq!(series_style(9).2, Some("9 4"));
    }
}

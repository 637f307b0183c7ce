//! A block's warps in the time model's clocks: for each warp, when it issued, when its next
//! instruction was ready but its scheduler issued another warp's, and when it waited, and for
//! what ([`ptx_model::replay::Span`]). An SVG 920 pixels wide (a book's column), no text under 11
//! pixels; and the same in a line of text.

use std::fmt::Write;

use ptx_model::replay::{Activity, Span};

const WIDTH: f64 = 920.0;
const LEFT: f64 = 96.0;
const RIGHT: f64 = 906.0;
const TOP: f64 = 84.0;
const ROW: f64 = 18.0;

/// Each activity's colour and its name in the legend, in the legend's order.
const LEGEND: [(Activity, &str, &str); 7] = [
    (Activity::Issue, "#4e79a7", "issues"),
    (Activity::Ready, "#c9d6e8", "ready, another warp issues"),
    (Activity::Memory, "#e15759", "waits on global or local memory"),
    (Activity::Shared, "#f28e2b", "waits on shared memory"),
    (Activity::Arithmetic, "#edc948", "waits on arithmetic"),
    (Activity::Barrier, "#76b7b2", "waits at a barrier"),
    (Activity::Copies, "#b07aa1", "waits on copies or mbarriers"),
];

fn colour(what: Activity) -> &'static str {
    LEGEND.iter().find(|(a, ..)| *a == what).map_or("#888888", |(_, c, _)| c)
}

/// The rows of a picture: each (block, warp) that has a stretch, in order.
fn rows(spans: &[Span]) -> Vec<(u32, u32)> {
    let mut rows: Vec<(u32, u32)> = spans.iter().map(|s| (s.block, s.warp)).collect();
    rows.sort_unstable();
    rows.dedup();
    rows
}

/// The picture of `spans` over clocks `0..clocks`, titled `title`.
pub fn svg(spans: &[Span], title: &str, clocks: f64) -> String {
    let rows = rows(spans);
    let height = TOP + ROW * rows.len() as f64 + 40.0;
    let x = |c: f64| LEFT + (RIGHT - LEFT) * (c / clocks).clamp(0.0, 1.0);
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height:.0}" viewBox="0 0 {WIDTH} {height:.0}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(out, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(out, r#"<text x="8" y="20" font-size="14" font-weight="bold">{}</text>"#, escape(title));
    // The legend, in two lines.
    for (i, (_, c, name)) in LEGEND.iter().enumerate() {
        let (lx, ly) = (8.0 + 300.0 * (i % 3) as f64, 40.0 + 18.0 * (i / 3) as f64);
        let _ = writeln!(out, r#"<rect x="{lx}" y="{:.0}" width="12" height="12" fill="{c}"/>"#, ly - 10.0);
        let _ = writeln!(out, r#"<text x="{:.0}" y="{ly}">{name}</text>"#, lx + 18.0);
    }
    for (r, &(block, warp)) in rows.iter().enumerate() {
        let y = TOP + ROW * r as f64;
        let label = if rows.iter().any(|&(b, _)| b != 0) {
            format!("block {block} warp {warp}")
        } else {
            format!("warp {warp}")
        };
        let _ = writeln!(out, r#"<text x="8" y="{:.0}">{label}</text>"#, y + 12.0);
        for s in spans.iter().filter(|s| (s.block, s.warp) == (block, warp) && s.from < clocks) {
            let (a, b) = (x(s.from), x(s.to));
            let _ = writeln!(
                out,
                r#"<rect x="{a:.2}" y="{:.0}" width="{:.2}" height="{:.0}" fill="{}"/>"#,
                y + 2.0,
                (b - a).max(0.3),
                ROW - 4.0,
                colour(s.what)
            );
        }
    }
    // The axis: clocks, in about eight steps of a round number.
    let bottom = TOP + ROW * rows.len() as f64 + 4.0;
    let _ =
        writeln!(out, r#"<line x1="{LEFT}" y1="{bottom:.0}" x2="{RIGHT}" y2="{bottom:.0}" stroke="black"/>"#);
    let step = round_step(clocks / 8.0);
    let mut c = 0.0;
    while c <= clocks + 1e-9 {
        let _ = writeln!(
            out,
            r#"<line x1="{0:.1}" y1="{bottom:.0}" x2="{0:.1}" y2="{1:.0}" stroke="black"/><text x="{0:.1}" y="{2:.0}" text-anchor="middle">{3}</text>"#,
            x(c),
            bottom + 4.0,
            bottom + 18.0,
            c as u64
        );
        c += step;
    }
    let _ = writeln!(out, r#"<text x="{RIGHT}" y="{:.0}" text-anchor="end">SM clocks</text>"#, bottom + 34.0);
    out.push_str("</svg>\n");
    out
}

/// 1, 2 or 5 times a power of ten, the nearest at or above `v`.
fn round_step(v: f64) -> f64 {
    let p = 10f64.powf(v.max(1.0).log10().floor());
    [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * p).find(|&s| s >= v).unwrap_or(10.0 * p)
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// The share of the warps' clocks each activity took, as a line of text.
pub fn summary(spans: &[Span]) -> String {
    let total: f64 = spans.iter().map(|s| s.to - s.from).sum::<f64>().max(1e-9);
    LEGEND
        .iter()
        .map(|(a, _, name)| {
            let t = spans.iter().filter(|s| s.what == *a).map(|s| s.to - s.from).fold(0.0, |x, y| x + y);
            format!("{name} {:.0}%", 100.0 * t / total)
        })
        .collect::<Vec<_>>()
        .join(" · ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(warp: u32, from: f64, to: f64, what: Activity) -> Span {
        Span { block: 0, warp, from, to, what }
    }

    /// A warp that waited on memory for most of the window is drawn red for most of its row,
    /// and the summary gives the shares.
    #[test]
    fn a_warp_waiting_on_memory_is_drawn_in_its_colour() {
        let spans = [
            span(0, 0.0, 10.0, Activity::Issue),
            span(0, 10.0, 90.0, Activity::Memory),
            span(1, 0.0, 100.0, Activity::Ready),
        ];
        let svg = svg(&spans, "test", 100.0);
        assert!(svg.contains("warp 0") && svg.contains("warp 1"));
        let red = format!(r#"fill="{}""#, colour(Activity::Memory));
        assert_eq!(svg.matches(&red).count(), 2, "the legend's and the span's");
        let line = summary(&spans);
        // 80 of the 190 clocks drawn.
        assert!(line.contains("waits on global or local memory 42%"), "{line}");
        assert!(line.contains("waits at a barrier 0%"), "{line}");
        assert!(line.contains("issues 5%"), "{line}");
        assert_eq!(round_step(1234.0), 2000.0);
        assert_eq!(round_step(80.0), 100.0);
    }
}

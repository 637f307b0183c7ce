//! The timeline drawn: an SVG 920 pixels wide (a book's column), no text under 11 pixels, a row
//! per role and a band per round; and the same in a few lines of text.

use std::fmt::Write;

use super::TimelinePicture;
use super::timeline_rows::{ItemKind, RoleRow, RowItem};
use ptx_emulator::recording::timeline::{Timeline, What};

/// The picture's width, and where the rounds start and end across it.
const WIDTH: f64 = 920.0;
const LEFT: f64 = 168.0;
const RIGHT: f64 = 910.0;
/// The most items across a picture shows by default (about 22 pixels an item), the space between
/// two rounds in items, and the widest an item is drawn.
pub const SLOTS: f64 = 30.0;
const GAP: f64 = 0.5;
const MOST_SLOT: f64 = 72.0;
const ROW: f64 = 58.0;
const TOP: f64 = 76.0;

/// A colour per buffer, in turn.
const BUFFER_COLOURS: [&str; 8] =
    ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f"];

fn colour(buffer: Option<usize>) -> &'static str {
    buffer.map_or("#888888", |b| BUFFER_COLOURS[b % BUFFER_COLOURS.len()])
}

impl TimelinePicture for Timeline {
    fn rows(&self, from: u32, to: u32) -> Vec<RoleRow> {
        super::timeline_rows::rows(self, from, to)
    }

    /// The rounds a picture shows: `window` where given (clipped to the run), else the first
    /// rounds that fit `SLOTS` items across.
    fn window(&self, window: Option<(u32, u32)>) -> Result<(u32, u32), String> {
        let (from, to) = match window {
            Some((from, to)) => (from, to.min(self.rounds)),
            None => {
                let widths = widths(self, 0, self.rounds);
                let mut used = 0.0;
                let fit = widths.iter().take_while(|&&w| {
                    used += w as f64 + GAP;
                    used <= SLOTS
                });
                (0, (fit.count() as u32).max(1).min(self.rounds))
            }
        };
        if from >= to {
            return Err(format!(
                "block ({}, {}, {}) ran {} rounds, so the window from round {from} holds nothing to \
                 draw: choose rounds within 0..{}",
                self.block[0], self.block[1], self.block[2], self.rounds, self.rounds
            ));
        }
        Ok((from, to))
    }

    /// The picture of rounds `from..to` as SVG text.
    fn svg(&self, (from, to): (u32, u32)) -> String {
        let rows = self.rows(from, to);
        let widths = widths(self, from, to);
        let units: f64 = widths.iter().map(|&w| w as f64 + GAP).sum();
        let sw = ((RIGHT - LEFT) / units).min(MOST_SLOT);
        let bottom = TOP + ROW * rows.len() as f64;
        let height = bottom + 124.0;
        let mut s = String::new();
        let _ = writeln!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12">"#
        );
        let _ = writeln!(s, r##"<rect width="{WIDTH}" height="{height}" fill="#ffffff"/>"##);
        let [bx, by, bz] = self.block;
        let shown = if to - from < self.rounds {
            format!("rounds {from} to {} of its {}", to - 1, self.rounds)
        } else {
            format!("all {} rounds", self.rounds)
        };
        let _ = writeln!(
            s,
            r#"<text x="16" y="24" font-size="16" font-weight="bold">Block ({bx}, {by}, {bz}) of {}, {shown}</text>"#,
            self.kernel
        );
        let _ = writeln!(
            s,
            r##"<text x="16" y="44" fill="#444444">Bands: the emulator's scheduling rounds (its order of work, not cycles); each row reads left to right in a band.</text>"##
        );
        let mut x = LEFT;
        for (r, &w) in widths.iter().enumerate() {
            let band = (w as f64 + GAP) * sw;
            let fill = if r % 2 == 0 { "#f4f4f4" } else { "#ffffff" };
            let _ = writeln!(
                s,
                r#"<rect x="{x:.1}" y="{TOP}" width="{band:.1}" height="{:.1}" fill="{fill}"/>"#,
                bottom - TOP
            );
            let round = from + r as u32;
            if band >= 36.0 || round % 5 == 0 {
                let label = if band >= 60.0 { format!("round {round}") } else { round.to_string() };
                let _ = writeln!(
                    s,
                    r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="11">{label}</text>"#,
                    x + band / 2.0,
                    TOP - 6.0
                );
            }
            for (i, row) in rows.iter().enumerate() {
                let y = TOP + ROW * i as f64;
                for (j, item) in row.rounds[r].iter().enumerate() {
                    draw_item(&mut s, item, x + GAP / 2.0 * sw + j as f64 * sw, y, sw);
                }
            }
            x += band;
        }
        for (i, row) in rows.iter().enumerate() {
            let y = TOP + ROW * i as f64;
            let _ =
                writeln!(s, r#"<text x="12" y="{:.1}">{}</text>"#, y + ROW / 2.0 + 4.0, escape(&row.label));
            let _ = writeln!(s, r##"<line x1="12" y1="{y:.1}" x2="{RIGHT}" y2="{y:.1}" stroke="#bbbbbb"/>"##);
        }
        legend(&mut s, self.buffers(), bottom + 18.0);
        s.push_str("</svg>\n");
        s
    }

    /// The run in a few lines: what each role did and waited, and how far ahead the producer ran.
    fn summary(&self) -> String {
        let [bx, by, bz] = self.block;
        let mut s = format!(
            "timeline of block ({bx}, {by}, {bz}) of {}: {} rounds of the emulator's schedule (its own order of work, not cycles)\n",
            self.kernel, self.rounds
        );
        let blocked = |of: &dyn Fn(u32) -> bool| {
            let mut rounds: Vec<u32> = self
                .events
                .iter()
                .filter(|e| matches!(e.what, What::Blocked { .. }) && of(e.who))
                .map(|e| e.round)
                .collect();
            rounds.dedup();
            rounds.len()
        };
        let producers = self.producers();
        let issued = self.count(|w| matches!(w, What::Issue { .. }));
        let mut fills: Vec<(usize, u32)> = Vec::new();
        let mut tensors: Vec<&str> = Vec::new();
        for e in &self.events {
            if let What::Issue { bar, phase, tensor, .. } = e.what {
                if !fills.contains(&(bar, phase)) {
                    fills.push((bar, phase));
                }
                let name = self.names.get(tensor as usize).map_or("?", |n| n.as_str());
                if !tensors.contains(&name) {
                    tensors.push(name);
                }
            }
        }
        let _ = writeln!(
            s,
            "  producer warp {}: {issued} copies issued from {} ({} fills of {} buffers), {} rounds blocked",
            producers.iter().map(|w| w.to_string()).collect::<Vec<_>>().join(", "),
            tensors.join(" and "),
            fills.len(),
            self.buffers(),
            blocked(&|w| producers.contains(&w))
        );
        let landed: u64 = self
            .events
            .iter()
            .filter_map(|e| match e.what {
                What::Land { bytes, .. } => Some(u64::from(bytes)),
                _ => None,
            })
            .sum();
        let full = self.full_bars();
        let _ = writeln!(
            s,
            "  copy engine: {} copies landed ({landed} bytes), {} phases of full[s] completed",
            self.count(|w| matches!(w, What::Land { .. })),
            count_phases(self, &full)
        );
        let empty = self.empty_bars();
        for g in self.consumers() {
            let of = |w: u32| w != ptx_emulator::recording::timeline::ENGINE && w / 4 == g;
            let mine =
                |k: &dyn Fn(&What) -> bool| self.events.iter().filter(|e| of(e.who) && k(&e.what)).count();
            let _ = writeln!(
                s,
                "  consumers, warpgroup {g}: {} wgmma, {} groups committed, {} waits, {} arrivals on empty[s], {} rounds blocked",
                mine(&|w| matches!(w, What::Wgmma { .. })),
                mine(&|w| matches!(w, What::Commit)),
                mine(&|w| matches!(w, What::WaitGroup { .. })),
                mine(&|w| matches!(w, What::Arrive { bar, .. } if empty.contains(bar))),
                blocked(&of)
            );
        }
        let peers =
            count_by(self, ptx_emulator::recording::timeline::PEER, |w| matches!(w, What::Arrive { .. }));
        if peers > 0 {
            let _ = writeln!(s, "  the cluster's other blocks: {peers} arrivals on this block's empty[s]");
        }
        let stored: Vec<u32> =
            self.events.iter().filter(|e| matches!(e.what, What::Store { .. })).map(|e| e.round).collect();
        if let (Some(first), Some(last)) = (stored.first(), stored.last()) {
            let bytes: u64 = self
                .events
                .iter()
                .filter_map(|e| match e.what {
                    What::Store { bytes, .. } => Some(u64::from(bytes)),
                    _ => None,
                })
                .sum();
            let _ = writeln!(
                s,
                "  stores to {}: {bytes} bytes in rounds {first} to {last}",
                self.store_buffers().join(", ")
            );
        }
        let _ = writeln!(
            s,
            "  the producer ran at most {} fills ahead of the consumers, with {} buffers",
            self.most_ahead(),
            self.buffers()
        );
        s
    }
}

/// How many items wide each round of `from..to` is: its busiest row's.
fn widths(t: &Timeline, from: u32, to: u32) -> Vec<usize> {
    let rows = t.rows(from, to);
    (0..(to - from) as usize)
        .map(|r| rows.iter().map(|row| row.rounds[r].len()).max().unwrap_or(0).max(1))
        .collect()
}

fn count_by(t: &Timeline, who: u32, kind: impl Fn(&What) -> bool) -> usize {
    t.events.iter().filter(|e| e.who == who && kind(&e.what)).count()
}

fn count_phases(t: &Timeline, bars: &[usize]) -> usize {
    t.count(|w| matches!(w, What::Phase { bar, .. } if bars.contains(bar)))
}

/// One item: a bar coloured by its buffer (grey for a wait, blue-grey for stores) with what it
/// is written on it, ▲ or ▼ above it for a phase of `full[s]` or `empty[s]` it completed, and
/// below it the wgmma groups committed (c) and waited for (w) and an arrival on `empty[s]` (●).
fn draw_item(s: &mut String, item: &RowItem, x: f64, y: f64, w: f64) {
    let (fill, text_colour) = match item.kind {
        ItemKind::Blocked { .. } => ("#cfcfcf", "#000000"),
        ItemKind::Store | ItemKind::Init => ("#6b7b8c", "#ffffff"),
        _ => (colour(item.buffer), "#ffffff"),
    };
    let buffer = item.buffer.map_or(String::new(), |b| b.to_string());
    let text = match item.kind {
        ItemKind::CopyFill if w >= 36.0 => format!("b{buffer} ×{}", item.count),
        ItemKind::CopyFill | ItemKind::Land | ItemKind::Consume => format!("b{buffer}"),
        ItemKind::Arrive => String::new(),
        ItemKind::Blocked { on_full } if w >= 40.0 => {
            format!("{}[{buffer}]", if on_full { "full" } else { "empty" })
        }
        ItemKind::Blocked { .. } => "wait".to_owned(),
        ItemKind::Store if w >= 40.0 => kib(item.count),
        ItemKind::Store => String::new(),
        ItemKind::Init if w >= 40.0 => format!("init ×{}", item.count),
        ItemKind::Init => "init".to_owned(),
    };
    // An arrival alone is a thin bar of its buffer's colour.
    let (top, tall) = if item.kind == ItemKind::Arrive { (y + 31.0, 6.0) } else { (y + 15.0, 24.0) };
    let _ = writeln!(
        s,
        r#"<rect x="{:.1}" y="{top:.1}" width="{:.1}" height="{tall}" rx="2" fill="{fill}"/>"#,
        x + 1.5,
        w - 3.0
    );
    if !text.is_empty() && w >= 7.0 * text.chars().count() as f64 {
        let size = 11;
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="{size}" fill="{text_colour}">{text}</text>"#,
            x + w / 2.0,
            y + 31.0
        );
    }
    let mut marks = String::new();
    marks.push_str(&"c".repeat((item.commits > 0) as usize));
    marks.push_str(&"w".repeat((item.waits > 0) as usize));
    if item.arrivals > 0 {
        let _ = writeln!(
            s,
            r##"<circle cx="{:.1}" cy="{:.1}" r="3" fill="#000000"/>"##,
            x + w - 5.0,
            y + ROW - 10.0
        );
    }
    if !marks.is_empty() && w >= 20.0 {
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="11">{marks}</text>"#,
            x + w / 2.0 - 3.0,
            y + ROW - 6.0
        );
    }
    for (done, up) in [(item.full_done, true), (item.empty_done, false)] {
        if !done {
            continue;
        }
        let (cx, top) = (x + w / 2.0, y + 3.0);
        let points = if up {
            format!("{:.1},{:.1} {:.1},{:.1} {cx:.1},{top:.1}", cx - 5.0, top + 9.0, cx + 5.0, top + 9.0)
        } else {
            format!("{:.1},{top:.1} {:.1},{top:.1} {cx:.1},{:.1}", cx - 5.0, cx + 5.0, top + 9.0)
        };
        let _ = writeln!(
            s,
            r##"<polygon points="{points}" fill="{}" stroke="#000000" stroke-width="0.6"/>"##,
            colour(item.buffer)
        );
    }
}

/// Bytes in KiB, for a label.
fn kib(bytes: u64) -> String {
    match bytes {
        b if b >= 1024 => format!("{} KiB", b / 1024),
        b => format!("{b} B"),
    }
}

/// The legend: every mark [`draw_item`] draws, one line each.
fn legend(s: &mut String, buffers: usize, y: f64) {
    let mut x = 16.0;
    let _ = writeln!(s, r#"<text x="{x}" y="{:.1}">buffer:</text>"#, y + 12.0);
    x += 50.0;
    for buffer in 0..buffers {
        let _ = writeln!(
            s,
            r##"<rect x="{x}" y="{y:.1}" width="22" height="16" fill="{}"/><text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="11" fill="#ffffff">{buffer}</text>"##,
            colour(Some(buffer)),
            x + 11.0,
            y + 12.0
        );
        x += 26.0;
    }
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" font-size="11">bN ×k: buffer N's k copies issued (producer), landed (copy engine), its k wgmma (consumers); ×k where it fits</text>"#,
        x + 8.0,
        y + 12.0
    );
    let lines = [
        "a buffer twice in a round on one row: its copies landed in two groups, other buffers' between; ▲ marks the group that completed full[s]",
        "grey: waiting at a try_wait on full[s] or empty[s] for the rest of the round (named where it fits);  blue-grey: mbarrier init ×k, stores (bytes)",
        "▲ / ▼ above a box: a full[s] / empty[s] phase completes;  c, w below: wgmma group committed, waited for;  ●: an arrival on empty[s]",
    ];
    for (i, line) in lines.iter().enumerate() {
        let _ = writeln!(
            s,
            r#"<text x="16" y="{:.1}" font-size="11">{}</text>"#,
            y + 34.0 + 20.0 * i as f64,
            escape(line)
        );
    }
    // The thin bar, drawn as the rows draw it.
    let bar_y = y + 34.0 + 20.0 * lines.len() as f64;
    let _ = writeln!(
        s,
        r#"<rect x="16" y="{:.1}" width="22" height="6" rx="2" fill="{}"/><text x="46" y="{bar_y:.1}" font-size="11">thin bar: an arrival on empty[s] apart from its buffer's wgmma (a consumer freeing buffer s after issuing s + 1, or the other blocks)</text>"#,
        bar_y - 8.0,
        colour(Some(0))
    );
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use crate::TimelinePicture;
    use crate::timeline_rows::ItemKind;
    use ptx_emulator::recording::timeline::{ENGINE, Timeline, TimelineEvent, What};

    /// One buffer filled by warp 0, landed, read by warpgroup 1's warp 4, freed, and C stored.
    fn one_buffer() -> Timeline {
        let (full, empty) = (1024, 1032);
        let e = |round, who, what| TimelineEvent { round, who, what };
        Timeline {
            kernel: "matmul".into(),
            block: [0, 0, 0],
            warps: 8,
            rounds: 3,
            events: vec![
                e(0, 0, What::Init { bar: full, count: 1 }),
                e(0, 0, What::Init { bar: empty, count: 1 }),
                e(0, 0, What::Arrive { bar: full, tx: 512 }),
                e(0, 0, What::Issue { bar: full, phase: 0, dst: 0, bytes: 512, tensor: 0, blocks: 1 }),
                e(0, 4, What::Blocked { bar: full, parity: 0 }),
                e(0, ENGINE, What::Land { bar: full, dst: 0, bytes: 512 }),
                e(0, ENGINE, What::Phase { bar: full, phase: 0 }),
                e(1, 4, What::Passed { bar: full, parity: 0 }),
                e(1, 4, What::Wgmma { b: 128, a: None }),
                e(1, 4, What::Commit),
                e(1, 4, What::WaitGroup { pending: 0 }),
                e(1, 4, What::Arrive { bar: empty, tx: 0 }),
                e(1, 4, What::Phase { bar: empty, phase: 0 }),
                e(2, 4, What::Store { bytes: 256, buffer: 1, engine: false }),
            ],
            names: vec!["A".into(), "C".into()],
        }
    }

    #[test]
    fn rows_read_the_roles_and_buffers_from_the_events() {
        let t = one_buffer();
        assert_eq!((t.producers(), t.consumers(), t.buffers()), (vec![0], vec![1], 1));
        assert_eq!(
            (t.bar_name(1024), t.bar_name(1032), t.bar_name(8)),
            ("full[0]".to_owned(), "empty[0]".to_owned(), "the mbarrier at byte 8".to_owned())
        );
        let rows = t.rows(0, 3);
        let labels: Vec<&str> = rows.iter().map(|r| r.label.as_str()).collect();
        assert_eq!(labels, ["producer, warp 0", "copy engine", "consumers, warpgroup 1", "stores to C"]);
        let kinds = |r: usize, round: usize| rows[r].rounds[round].iter().map(|i| i.kind).collect::<Vec<_>>();
        assert_eq!(kinds(0, 0), [ItemKind::Init, ItemKind::CopyFill]);
        assert!(rows[1].rounds[0][0].full_done);
        assert_eq!(kinds(2, 0), [ItemKind::Blocked { on_full: true }]);
        let consumed = rows[2].rounds[1][0];
        assert_eq!(
            (consumed.kind, consumed.buffer, consumed.commits, consumed.waits),
            (ItemKind::Consume, Some(0), 1, 1)
        );
        assert!(consumed.empty_done && consumed.arrivals == 1);
        assert_eq!(rows[3].rounds[2][0].count, 256);
        assert_eq!(t.most_ahead(), 1);
        assert!(t.reads_before_full().is_empty());
    }

    /// The wgmma moved before the phase completes: the early read is named.
    #[test]
    fn a_read_before_the_phase_is_named() {
        let mut t = one_buffer();
        let wgmma = t.events.remove(8);
        t.events.insert(5, TimelineEvent { round: 0, ..wgmma });
        assert_eq!(
            t.reads_before_full(),
            ["warp 4 ran a wgmma reading shared byte 128 in round 0 before any copy into it had landed"]
        );
        let wgmma = t.events.remove(5);
        t.events.insert(6, wgmma);
        assert_eq!(
            t.reads_before_full(),
            ["warp 4 ran a wgmma reading shared byte 128 in round 0 before phase 0 of full[0] completed"]
        );
    }

    /// The places the copy engine fills in turn are buffers, in the picture and in the summary:
    /// a stage is one of a lab's kernels built up an idea at a time (the book's glossary).
    #[test]
    fn the_picture_and_the_summary_name_buffers() {
        let t = one_buffer();
        let svg = t.svg((0, 3));
        assert!(svg.contains(">buffer:</text>") && svg.contains(">b0</text>"), "{svg}");
        assert!(svg.contains("bN ×k: buffer N's k copies issued"), "{svg}");
        let summary = t.summary();
        let line = |start: &str| summary.lines().find(|l| l.starts_with(start)).unwrap_or_default();
        assert!(line("  producer warp 0:").contains(" fills of 1 buffers), "), "{summary}");
        assert!(line("  the producer ran at most 1 fills ahead").ends_with(", with 1 buffers"), "{summary}");
        assert!(!svg.to_lowercase().contains("stage") && !summary.contains("stage"), "{svg}\n{summary}");
    }

    #[test]
    fn the_window_is_checked_and_the_picture_fits_the_column() {
        let t = one_buffer();
        assert_eq!(t.window(None), Ok((0, 3)));
        assert_eq!(t.window(Some((1, 99))), Ok((1, 3)));
        assert_eq!(
            t.window(Some((5, 9))).unwrap_err(),
            "block (0, 0, 0) ran 3 rounds, so the window from round 5 holds nothing to draw: choose rounds within 0..3"
        );
        let svg = t.svg((0, 3));
        assert!(svg.starts_with("<svg") && svg.contains(r#"width="920""#) && svg.contains("stores to C"));
        assert!(!svg.contains(r#"font-size="9""#) && !svg.contains(r#"font-size="10""#));
        assert!(t.check().is_ok());
        let empty = Timeline { events: vec![t.events[13]], ..t };
        assert!(empty.check().unwrap_err().starts_with("matmul uses no mbarriers"));
    }
}

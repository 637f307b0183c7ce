//! The picture of [`super::Access`]es as SVG text, as wide as the book's column (920 pixels):
//! for each access the warp's 32 lanes in two rows of 16 with each lane's address, then global
//! memory's lines and sectors or shared memory's banks, coloured so that a lane and what it
//! touches share a colour, and the counts.

use std::fmt::Write;

use super::{Access, Kind};

const WIDTH: u32 = 920;
/// Where the columns start (labels to their left), each column's width, a row's height.
const LEFT: u32 = 72;
const CELL: u32 = 52;
const ROW: u32 = 22;
/// Characters of a line of running text at 12 pixels.
const TEXT_CHARS: usize = 128;

/// The SVG document of `accesses` (one panel each, in the order the warp executed them).
pub fn draw(accesses: &[Access]) -> String {
    let mut body = String::new();
    let mut y = 8;
    for a in accesses {
        y = panel(&mut body, a, y) + 24;
    }
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{y}\" viewBox=\"0 0 {WIDTH} {y}\" \
         font-family=\"DejaVu Sans, Arial, sans-serif\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         {body}</svg>\n"
    )
}

/// One row of a table of 32 columns: its label, and each column's fill and text (or nothing).
struct Row {
    label: String,
    cells: Vec<Option<(String, String)>>,
}

impl Row {
    fn new(label: &str) -> Row {
        Row { label: label.to_owned(), cells: vec![None; 32] }
    }

    fn set(&mut self, column: u32, fill: &str, text: String) {
        self.cells[column as usize] = Some((fill.to_owned(), text));
    }
}

/// `rows` from `y` down (the first a header of the columns), columns 0–15 and then 16–31 below
/// them; a half, or a row of it, with nothing under its header is left out. Returns where it ends.
fn table(out: &mut String, mut y: u32, rows: &[Row]) -> u32 {
    for half in 0..2usize {
        let columns = 16 * half..16 * half + 16;
        let empty = |r: &Row| r.cells[columns.clone()].iter().all(Option::is_none);
        if rows.iter().skip(1).all(empty) {
            continue;
        }
        for (i, row) in rows.iter().enumerate() {
            if i > 0 && empty(row) {
                continue;
            }
            text(out, 8, y + 15, 12, "bold", &row.label);
            for c in columns.clone() {
                if let Some((fill, content)) = &row.cells[c] {
                    let x = LEFT + (c as u32 % 16) * CELL;
                    rect(out, x, y, CELL, ROW, fill);
                    text_mid(out, x + CELL / 2, y + 15, 12, content);
                }
            }
            y += ROW;
        }
        y += 8;
    }
    y
}

/// Running text from `y` down, wrapped to the width; returns where it ends.
fn prose(out: &mut String, mut y: u32, size: u32, weight: &str, s: &str) -> u32 {
    // Bold letters are wider.
    let most = TEXT_CHARS * if weight == "bold" { 10 } else { 12 } / size as usize;
    let mut line = String::new();
    for word in s.split(' ') {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > most {
            y += size + 6;
            text(out, 8, y, size, weight, &line);
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    y += size + 6;
    text(out, 8, y, size, weight, &line);
    y
}

/// One access's panel from `y` down; returns where it ends.
fn panel(out: &mut String, a: &Access, y: u32) -> u32 {
    let [bx, by, bz] = a.block;
    let title = format!("{} · {} · warp {} of block ({bx},{by},{bz})", a.at, a.opcode, a.warp);
    let mut y = prose(out, y, 16, "bold", &title);
    let what = match a.kind {
        Kind::Global => "global memory",
        Kind::Shared => "shared memory",
        Kind::Matrix => "shared memory, ldmatrix: each lane gives one 16-byte row",
    };
    let sub = format!(
        "one warp, one instruction, from the emulator: {what}, {} bytes a lane{}, {}",
        a.bytes,
        if a.joined { " (neighbouring loads joined)" } else { "" },
        if a.write { "written" } else { "read" }
    );
    y = prose(out, y, 12, "normal", &sub) + 10;
    y = match a.kind {
        Kind::Global => global(out, a, y),
        Kind::Shared | Kind::Matrix => shared(out, a, y),
    };
    for line in a.summary().iter().skip(1) {
        y = prose(out, y, 12, "normal", line);
    }
    y
}

/// The lane table: lane numbers, and the rows `fill` gives each active lane.
/// What a row of the lane table shows of a lane's address: a fill and a text.
type Fill<'a> = &'a dyn Fn(u64) -> (String, String);

fn lane_rows(a: &Access, rows: &[(&str, Fill)]) -> Vec<Row> {
    let mut lane = Row::new("lane");
    for l in 0..32 {
        lane.set(l, "#eeeeee", l.to_string());
    }
    let mut out = vec![lane];
    for (label, fill) in rows {
        let mut row = Row::new(label);
        for &(l, addr) in &a.lanes {
            let (colour, content) = fill(addr);
            row.set(l, &colour, content);
        }
        out.push(row);
    }
    out
}

/// The lanes' offsets, sectors and lines, then each line touched as four sectors.
fn global(out: &mut String, a: &Access, y: u32) -> u32 {
    let sectors = a.sector_list();
    let lines = a.line_list();
    let base = lines.first().copied().unwrap_or(0) * 128;
    let colour = |s: u64| hue(sectors.iter().position(|&x| x == s).unwrap_or(0), sectors.len());
    let byte = |addr: u64| ("white".to_owned(), short(addr - base));
    let sector = |addr: u64| (colour(addr >> 5), short((addr >> 5) - base / 32));
    let line = |addr: u64| ("white".to_owned(), short((addr >> 7) - base / 128));
    let rows = lane_rows(a, &[("byte (+)", &byte), ("sector", &sector), ("line", &line)]);
    let mut y = table(out, y, &rows);
    let note = format!(
        "bytes from address {base:#x}; the {} line{} of 128 bytes touched, numbered from the first \
         (each 4 sectors of 32 bytes; a coloured sector is {}, with its lanes)",
        lines.len(),
        if lines.len() == 1 { "" } else { "s" },
        if a.write { "written" } else { "read" }
    );
    y = prose(out, y, 12, "normal", &note) + 8;
    // Four lines a row, each 4 sectors of 48 pixels.
    let (sector_w, gap) = (48, 20);
    for (i, &line) in lines.iter().enumerate() {
        let (col, row) = (i as u32 % 4, i as u32 / 4);
        let x0 = 8 + col * (4 * sector_w + gap);
        let y0 = y + row * 46;
        text(out, x0, y0 + 12, 12, "normal", &format!("line {}", line - base / 128));
        for k in 0..4u32 {
            let s = line * 4 + u64::from(k);
            let readers: Vec<u32> =
                a.lanes.iter().filter(|(_, addr)| addr >> 5 == s).map(|(l, _)| *l).collect();
            let fill = if readers.is_empty() { "#f4f4f4".to_owned() } else { colour(s) };
            let x = x0 + k * sector_w;
            rect(out, x, y0 + 16, sector_w, 24, &fill);
            text_mid(out, x + sector_w / 2, y0 + 33, 12, &lane_set(&readers));
        }
    }
    y + lines.len().div_ceil(4) as u32 * 46 + 4
}

/// The lanes' offsets and banks, then the banks with the distinct words each serves.
fn shared(out: &mut String, a: &Access, y: u32) -> u32 {
    let banks = a.bank_words();
    // A word's pass through its bank: 0 for the first distinct word a bank serves.
    let rank = |offset: u64| {
        let word = offset / 4;
        banks[(word % 32) as usize].iter().position(|(w, _)| *w == word).unwrap_or(0)
    };
    // The fewest words a bank must serve for this many distinct words: deeper is a conflict.
    let fewest = banks.iter().map(Vec::len).sum::<usize>().div_ceil(32).max(1);
    let base = a.lanes.iter().map(|l| l.1).min().unwrap_or(0) & !127;
    let byte = |off: u64| ("white".to_owned(), short(off - base));
    let bank = |off: u64| {
        let b = a.banks_of(off);
        let name = match (b.first(), b.last()) {
            (Some(f), Some(t)) if b.len() > 1 => format!("{f}–{t}"),
            (Some(f), _) => f.to_string(),
            _ => String::new(),
        };
        (pass_colour(rank(off), fewest), name)
    };
    let rows = lane_rows(a, &[("byte (+)", &byte), ("bank", &bank)]);
    let mut y = table(out, y, &rows);
    let ways = a.ways();
    let note = format!(
        "bytes from byte {base} of the block's shared memory. The 32 banks (4 bytes wide): each row is \
         one distinct word a bank serves, with the lanes that want it; {ways} deep, {fewest} the fewest"
    );
    y = prose(out, y, 12, "normal", &note) + 8;
    let mut rows = vec![Row::new("bank")];
    for b in 0..32 {
        rows[0].set(b, "#eeeeee", b.to_string());
    }
    for r in 0..ways {
        let mut row = Row::new(&format!("word {}", r + 1));
        for (b, words) in banks.iter().enumerate() {
            if let Some((_, lanes)) = words.get(r) {
                row.set(b as u32, &pass_colour(r, fewest), lane_set(lanes));
            }
        }
        rows.push(row);
    }
    table(out, y, &rows)
}

/// Green for the words a bank must serve anyway (the `fewest` the access's words need), warmer
/// for each further one it serves in a pass of its own: a conflict.
fn pass_colour(rank: usize, fewest: usize) -> String {
    match rank.checked_sub(fewest) {
        None => "#c8e6c9".to_owned(),
        Some(r) => format!("hsl({}, 80%, 75%)", 40usize.saturating_sub(5 * r.min(8))),
    }
}

/// The i-th of n colours, pale enough to read black text on.
fn hue(i: usize, n: usize) -> String {
    let step = 360.0 / n.max(1) as f64;
    // Neighbours apart: every other colour of the wheel first.
    let j = if n > 2 { (i * 2) % n + (i * 2 / n) } else { i };
    format!("hsl({:.0}, 70%, 78%)", j as f64 * step)
}

/// A number in at most five characters: 123456 as 120K.
fn short(v: u64) -> String {
    if v < 100_000 { v.to_string() } else { format!("{}K", v / 1024) }
}

/// The lanes that share something: one or two by number, more as a count.
fn lane_set(lanes: &[u32]) -> String {
    match lanes {
        [] => String::new(),
        [a] => a.to_string(),
        [a, b] => format!("{a},{b}"),
        [first, .., last] if lanes.windows(2).all(|w| w[1] == w[0] + 1) => format!("{first}–{last}"),
        _ => format!("×{}", lanes.len()),
    }
}

fn rect(out: &mut String, x: u32, y: u32, w: u32, h: u32, fill: &str) {
    let _ = writeln!(
        out,
        "<rect x=\"{x}\" y=\"{y}\" width=\"{w}\" height=\"{h}\" fill=\"{fill}\" stroke=\"#888888\" stroke-width=\"1\"/>"
    );
}

fn text(out: &mut String, x: u32, y: u32, size: u32, weight: &str, s: &str) {
    let _ = writeln!(
        out,
        "<text x=\"{x}\" y=\"{y}\" font-size=\"{size}\" font-weight=\"{weight}\">{}</text>",
        escape(s)
    );
}

fn text_mid(out: &mut String, x: u32, y: u32, size: u32, s: &str) {
    if s.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "<text x=\"{x}\" y=\"{y}\" font-size=\"{size}\" text-anchor=\"middle\">{}</text>",
        escape(s)
    );
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::super::{Access, Head};
    use super::*;

    #[test]
    fn a_picture_is_one_svg_document_with_its_counts() {
        let head = Head {
            at: "k.cu:3".into(),
            opcode: "ld.shared.f32".into(),
            block: [0; 3],
            warp: 0,
            write: false,
        };
        let a = Access::shared(head, 4, (0..32).map(|l| (l, 128 * u64::from(l))).collect());
        let svg = draw(&[a]);
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("one warp, one instruction, from the emulator"));
        // The words the picture shows, wrapped lines joined again.
        let shown: Vec<&str> = svg.split('<').filter_map(|p| p.split_once('>')).map(|p| p.1).collect();
        let shown = shown.join(" ").split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(shown.contains("32 wavefronts") && shown.contains("32-way bank conflict"), "{shown}");
        assert!(svg.contains("width=\"920\""));
        assert_eq!(svg.matches("<text").count(), svg.matches("</text>").count());
    }
}

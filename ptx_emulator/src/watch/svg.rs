//! The picture of [`super::Access`]es as SVG text, 1280 pixels wide: for each access a row of
//! the warp's 32 lanes with each lane's address, then global memory's lines and sectors or shared
//! memory's banks, coloured so that a lane and what it touches share a colour, and the counts.

use std::fmt::Write;

use super::{Access, Kind};

const WIDTH: u32 = 1280;
/// Where the lane columns start, and each column's width.
const LEFT: u32 = 112;
const CELL: u32 = 34;
const ROW: u32 = 22;

/// The SVG document of `accesses` (one panel each, in the order the warp executed them).
pub fn draw(accesses: &[Access]) -> String {
    let mut body = String::new();
    let mut y = 16;
    for a in accesses {
        y = panel(&mut body, a, y) + 24;
    }
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{y}\" viewBox=\"0 0 {WIDTH} {y}\" \
         font-family=\"DejaVu Sans, Arial, sans-serif\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         {body}</svg>\n"
    )
}

/// One access's panel from `y` down; returns where it ends.
fn panel(out: &mut String, a: &Access, mut y: u32) -> u32 {
    let [bx, by, bz] = a.block;
    let title = format!("{} · {} · warp {} of block ({bx},{by},{bz})", a.at, a.opcode, a.warp);
    text(out, 12, y + 16, 18, "bold", &title);
    let what = match a.kind {
        Kind::Global => "global memory",
        Kind::Shared => "shared memory",
        Kind::Matrix => "shared memory, ldmatrix: each lane 0–31 gives one 16-byte row",
    };
    let sub = format!(
        "one warp, one instruction, from the emulator: {what}, {} bytes a lane{}, {}",
        a.bytes,
        if a.joined { " (neighbouring loads joined)" } else { "" },
        if a.write { "written" } else { "read" }
    );
    text(out, 12, y + 36, 13, "normal", &sub);
    y += 50;
    let by_lane = |l: u32| a.lanes.iter().find(|x| x.0 == l).map(|x| x.1);
    label(out, y, "lane");
    for l in 0..32 {
        cell(out, l, y, "#eeeeee", &l.to_string(), 12);
    }
    y += ROW;
    match a.kind {
        Kind::Global => y = global(out, a, y, &by_lane),
        Kind::Shared | Kind::Matrix => y = shared(out, a, y, &by_lane),
    }
    for (i, line) in a.summary().iter().skip(1).enumerate() {
        text(out, 12, y + 20 + 20 * i as u32, 14, "normal", line);
    }
    y + 20 * a.summary().len() as u32
}

/// The lanes' offsets, sectors and lines, then each line touched as four sectors.
fn global(out: &mut String, a: &Access, mut y: u32, by_lane: &dyn Fn(u32) -> Option<u64>) -> u32 {
    let sectors = a.sector_list();
    let lines = a.line_list();
    let base = lines.first().copied().unwrap_or(0) * 128;
    let colour = |s: u64| hue(sectors.iter().position(|&x| x == s).unwrap_or(0), sectors.len());
    label(out, y, "byte (+)");
    for l in 0..32 {
        match by_lane(l) {
            Some(addr) => cell(out, l, y, "white", &short(addr - base), 10),
            None => cell(out, l, y, "#f4f4f4", "", 10),
        }
    }
    y += ROW;
    label(out, y, "sector");
    for l in 0..32 {
        if let Some(addr) = by_lane(l) {
            let s = addr >> 5;
            cell(out, l, y, &colour(s), &short(s - base / 32), 11);
        }
    }
    y += ROW;
    label(out, y, "line");
    for l in 0..32 {
        if let Some(addr) = by_lane(l) {
            cell(out, l, y, "white", &short((addr >> 7) - base / 128), 11);
        }
    }
    y += ROW + 14;
    let note = format!(
        "bytes from address {base:#x}; the {} line{} of 128 bytes touched, numbered from the first \
         (each 4 sectors of 32 bytes; a coloured sector is {}, with its lanes)",
        lines.len(),
        if lines.len() == 1 { "" } else { "s" },
        if a.write { "written" } else { "read" }
    );
    text(out, 12, y, 13, "normal", &note);
    y += 10;
    // Four lines a row, each 4 sectors of 64 pixels.
    let (sector_w, gap) = (64, 30);
    for (i, &line) in lines.iter().enumerate() {
        let (col, row) = (i as u32 % 4, i as u32 / 4);
        let x0 = 12 + col * (4 * sector_w + gap);
        let y0 = y + row * 48;
        text(out, x0, y0 + 12, 11, "normal", &format!("line {}", line - base / 128));
        for k in 0..4u32 {
            let s = line * 4 + u64::from(k);
            let readers: Vec<u32> =
                a.lanes.iter().filter(|(_, addr)| addr >> 5 == s).map(|(l, _)| *l).collect();
            let fill = if readers.is_empty() { "#f4f4f4".to_owned() } else { colour(s) };
            let x = x0 + k * sector_w;
            rect(out, x, y0 + 16, sector_w, 24, &fill);
            text_mid(out, x + sector_w / 2, y0 + 32, 10, &lane_set(&readers));
        }
    }
    y + lines.len().div_ceil(4) as u32 * 48 + 6
}

/// The lanes' offsets and banks, then the banks with the distinct words each serves.
fn shared(out: &mut String, a: &Access, mut y: u32, by_lane: &dyn Fn(u32) -> Option<u64>) -> u32 {
    let banks = a.bank_words();
    // A word's pass through its bank: 0 for the first distinct word a bank serves.
    let rank = |offset: u64| {
        let word = offset / 4;
        banks[(word % 32) as usize].iter().position(|(w, _)| *w == word).unwrap_or(0)
    };
    // The fewest words a bank must serve for this many distinct words: deeper is a conflict.
    let fewest = banks.iter().map(Vec::len).sum::<usize>().div_ceil(32).max(1);
    let base = a.lanes.iter().map(|l| l.1).min().unwrap_or(0) & !127;
    label(out, y, "byte (+)");
    for l in 0..32 {
        match by_lane(l) {
            Some(off) => cell(out, l, y, "white", &short(off - base), 10),
            None => cell(out, l, y, "#f4f4f4", "", 10),
        }
    }
    y += ROW;
    label(out, y, "bank");
    for l in 0..32 {
        if let Some(off) = by_lane(l) {
            let b = a.banks_of(off);
            let name = match (b.first(), b.last()) {
                (Some(f), Some(t)) if b.len() > 1 => format!("{f}–{t}"),
                (Some(f), _) => f.to_string(),
                _ => String::new(),
            };
            cell(out, l, y, &pass_colour(rank(off), fewest), &name, if b.len() > 1 { 9 } else { 11 });
        }
    }
    y += ROW + 14;
    let ways = a.ways();
    let note = format!(
        "bytes from byte {base} of the block's shared memory; the 32 banks (4 bytes wide): each row \
         is one distinct word a bank serves, with the lanes that want it; {ways} deep, {fewest} \
         the fewest"
    );
    text(out, 12, y, 13, "normal", &note);
    y += 8;
    label(out, y, "bank");
    for b in 0..32 {
        cell(out, b, y, "#eeeeee", &b.to_string(), 12);
    }
    y += ROW;
    for r in 0..ways {
        label(out, y, &format!("word {}", r + 1));
        for (b, words) in banks.iter().enumerate() {
            if let Some((_, lanes)) = words.get(r) {
                cell(out, b as u32, y, &pass_colour(r, fewest), &lane_set(lanes), 10);
            }
        }
        y += ROW;
    }
    y + 4
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

/// A number in at most five characters: 123456 as 121K.
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

fn label(out: &mut String, y: u32, name: &str) {
    text(out, 12, y + 15, 12, "bold", name);
}

fn cell(out: &mut String, column: u32, y: u32, fill: &str, content: &str, size: u32) {
    let x = LEFT + column * CELL;
    rect(out, x, y, CELL, ROW, fill);
    text_mid(out, x + CELL / 2, y + 15, size, content);
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
        assert!(svg.contains("32 wavefronts") && svg.contains("32-way bank conflict"), "{svg}");
        assert_eq!(svg.matches("<text").count(), svg.matches("</text>").count());
    }
}

//! The picture of [`WarpAccess`]es as SVG text, as wide as the book's column (920 pixels):
//! for each access what it reaches (the matrix, the kernel's argument or shared array, the source
//! line and its expression), the warp's 32 lanes in two rows of 16 with each lane's address and
//! (row, column), then global memory's lines and sectors, or the passes in which the banks serve
//! a shared access, each with all 32 banks, coloured so that a lane and what it touches share a
//! colour, and the counts.

use std::fmt::Write;

use ptx_emulator::recording::warp_access::{Pass, PictureKind, WarpAccess};

const WIDTH: u32 = 920;
/// Where the columns start (labels to their left), each column's width, a row's height.
const LEFT: u32 = 72;
const CELL: u32 = 52;
const ROW: u32 = 22;
/// A bank table's 32 columns in one row: where they start and each one's width.
const BANK_LEFT: u32 = 64;
const BANK_CELL: u32 = 26;
/// Characters of a line of running text at 12 pixels.
const TEXT_CHARS: usize = 128;

/// The SVG document of `accesses` (one panel each, in the order the warp executed them).
pub fn draw(accesses: &[WarpAccess]) -> String {
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
struct LaneRow {
    label: String,
    cells: Vec<Option<(String, String)>>,
}

impl LaneRow {
    fn new(label: &str) -> LaneRow {
        LaneRow { label: label.to_owned(), cells: vec![None; 32] }
    }

    fn set(&mut self, column: u32, fill: &str, text: String) {
        self.cells[column as usize] = Some((fill.to_owned(), text));
    }
}

/// `rows` from `y` down (the first a header of the columns), columns 0–15 and then 16–31 below
/// them; a half, or a row of it, with nothing under its header is left out. Returns where it ends.
fn table(out: &mut String, mut y: u32, rows: &[LaneRow]) -> u32 {
    for half in 0..2usize {
        let columns = 16 * half..16 * half + 16;
        let empty = |r: &LaneRow| r.cells[columns.clone()].iter().all(Option::is_none);
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

/// A table of the 32 banks in one row of narrow columns, every bank drawn (empty ones white);
/// returns where it ends.
fn bank_table(out: &mut String, mut y: u32, rows: &[LaneRow]) -> u32 {
    for row in rows {
        text(out, 8, y + 15, 11, "bold", &row.label);
        for c in 0..32u32 {
            let x = BANK_LEFT + c * BANK_CELL;
            match &row.cells[c as usize] {
                Some((fill, content)) => {
                    rect(out, x, y, BANK_CELL, ROW, fill);
                    text_mid(out, x + BANK_CELL / 2, y + 15, 11, content);
                }
                None => rect(out, x, y, BANK_CELL, ROW, "white"),
            }
        }
        y += ROW;
    }
    y + 6
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
fn panel(out: &mut String, a: &WarpAccess, y: u32) -> u32 {
    let [bx, by, bz] = a.block;
    let n = &a.named;
    let what = match (n.matrix.as_str(), n.variable.as_str()) {
        ("", "") => String::new(),
        ("", v) => format!("{v} · "),
        (m, "") => format!("matrix {m} · "),
        (m, v) => format!("matrix {m}, through {v} · "),
    };
    let title = format!("{what}{}", a.opcode);
    let mut y = prose(out, y, 16, "bold", &title);
    let place = match (n.line.as_str(), n.call.as_str()) {
        ("", _) => a.at.clone(),
        (line, "") => format!("line {line}"),
        (line, call) => format!("line {line}   (inlined from line {call})"),
    };
    y = prose(out, y, 12, "normal", &place);
    if !n.memory.is_empty() {
        y = prose(out, y, 12, "bold", &n.memory);
    }
    let what = match a.kind {
        PictureKind::Global => "global memory",
        PictureKind::Shared => "shared memory",
        PictureKind::Matrix => "shared memory, ldmatrix: each lane gives one 16-byte row",
    };
    let sub = format!(
        "warp {} of block ({bx},{by},{bz}), one instruction, from the emulator: {what}, {} bytes a lane{}, {}",
        a.warp,
        a.bytes,
        if a.joined { " (neighbouring loads joined)" } else { "" },
        if a.write { "written" } else { "read" }
    );
    y = prose(out, y, 12, "normal", &sub) + 10;
    y = match a.kind {
        PictureKind::Global => global(out, a, y),
        PictureKind::Shared | PictureKind::Matrix => shared(out, a, y),
    };
    for line in a.summary().iter().skip(if n.memory.is_empty() { 1 } else { 2 }) {
        y = prose(out, y, 12, "normal", line);
    }
    y
}

/// What a row of the lane table shows of a lane: a fill and a text, from the lane's index in
/// [`WarpAccess::lanes`] and its address.
type LaneFill<'a> = &'a dyn Fn(usize, u64) -> Option<(String, String)>;
type OwnedFill<'a> = Box<dyn Fn(usize, u64) -> Option<(String, String)> + 'a>;
/// Each bank's distinct words with the lanes that want each.
type Banks = Vec<Vec<(u64, Vec<u32>)>>;

/// The lane table: lane numbers, and the rows `fill` gives each active lane.
fn lane_rows(a: &WarpAccess, rows: &[(String, LaneFill)]) -> Vec<LaneRow> {
    let mut lane = LaneRow::new("lane");
    for l in 0..32 {
        lane.set(l, "#eeeeee", l.to_string());
    }
    let mut out = vec![lane];
    for (label, fill) in rows {
        let mut row = LaneRow::new(label);
        for (i, &(l, addr)) in a.lanes.iter().enumerate() {
            if let Some((colour, content)) = fill(i, addr) {
                row.set(l, &colour, content);
            }
        }
        if row.cells.iter().any(Option::is_some) {
            out.push(row);
        }
    }
    out
}

/// The rows of each lane's (row, column): of the shared array or box (`array`), then of the
/// matrix, as far as they are known.
fn place_rows(a: &WarpAccess) -> Vec<(String, OwnedFill<'_>)> {
    let n = &a.named;
    let white = |v: i64| Some(("white".to_owned(), short_signed(v)));
    let mut rows: Vec<(String, OwnedFill<'_>)> = Vec::new();
    let swizzled = a.places.iter().any(|p| p.unswizzled.is_some());
    if !swizzled && a.places.iter().any(|p| p.array.is_some()) {
        rows.push((format!("{} row", n.array), Box::new(move |i, _| white(a.places.get(i)?.array?.0))));
        rows.push((format!("{} col", n.array), Box::new(move |i, _| white(a.places.get(i)?.array?.1))));
    }
    if a.places.iter().any(|p| p.element.is_some()) {
        let m = &n.matrix;
        rows.push((format!("{m} row"), Box::new(move |i, _| white(a.places.get(i)?.element?.0))));
        rows.push((format!("{m} col"), Box::new(move |i, _| white(a.places.get(i)?.element?.1))));
    }
    if swizzled {
        rows.push(("box col".to_owned(), Box::new(move |i, _| white(a.places.get(i)?.unswizzled?))));
        let stored = move |i: usize, _| {
            let p = a.places.get(i)?;
            let moved = p.unswizzled? != p.array?.1;
            Some((if moved { "#fff3c4" } else { "white" }.to_owned(), short_signed(p.array?.1)))
        };
        rows.push(("stored".to_owned(), Box::new(stored)));
    }
    rows
}

/// The lanes' offsets, places, sectors and lines, then each line touched as four sectors.
fn global(out: &mut String, a: &WarpAccess, y: u32) -> u32 {
    let sectors = a.sector_list();
    let lines = a.line_list();
    let base = lines.first().copied().unwrap_or(0) * 128;
    let colour = |s: u64| hue(sectors.iter().position(|&x| x == s).unwrap_or(0), sectors.len());
    let byte = |_, addr: u64| Some(("white".to_owned(), short(addr - base)));
    let sector = |_, addr: u64| Some((colour(addr >> 5), short((addr >> 5) - base / 32)));
    let line = |_, addr: u64| Some(("white".to_owned(), short((addr >> 7) - base / 128)));
    let places = place_rows(a);
    let mut rows: Vec<(String, LaneFill)> = vec![("byte (+)".to_owned(), &byte)];
    rows.extend(places.iter().map(|(l, f)| (l.clone(), &**f as LaneFill)));
    rows.push(("sector".to_owned(), &sector));
    rows.push(("line".to_owned(), &line));
    let mut y = table(out, y, &lane_rows(a, &rows));
    if !a.named.how.is_empty() {
        y = prose(out, y, 12, "normal", &format!("{}.", a.named.how));
    }
    let note = format!(
        "bytes from address {base:#x}. The warp's {} lanes make 1 request; it fetches each 32-byte \
         sector once for all the lanes whose bytes lie in it (the sector row above). Below, the {} \
         line{} of 128 bytes touched, numbered from the first, each as its 4 sectors with the lanes \
         each serves (coloured: {})",
        a.lanes.len(),
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
            text_mid(out, x + sector_w / 2, y0 + 33, 12, &lane_set(&readers, 6));
        }
    }
    y + lines.len().div_ceil(4) as u32 * 46 + 4
}

/// The lanes' offsets, places, passes and banks, then each pass's 32 banks with the distinct
/// words each serves in it.
fn shared(out: &mut String, a: &WarpAccess, y: u32) -> u32 {
    let passes = a.passes();
    let tables: Vec<Banks> = passes.iter().map(|p| a.pass_bank_words(p)).collect();
    let pass_of = |lane: u32| passes.iter().position(|p| (p.from..p.to).contains(&lane)).unwrap_or(0);
    // The fewest words a bank must serve in a pass for its distinct words: deeper is a conflict.
    let fewest =
        |banks: &[Vec<(u64, Vec<u32>)>]| banks.iter().map(Vec::len).sum::<usize>().div_ceil(32).max(1);
    // A word's place in its bank's queue within its pass: 0 for the first.
    let rank = |lane: u32, offset: u64| {
        let (banks, word) = (&tables[pass_of(lane)], offset / 4);
        let r = banks[(word % 32) as usize].iter().position(|(w, _)| *w == word).unwrap_or(0);
        (r, fewest(banks))
    };
    let base = a.lanes.iter().map(|l| l.1).min().unwrap_or(0) & !127;
    let lane_at = |i: usize| a.lanes[i].0;
    let byte = |_, off: u64| Some(("white".to_owned(), short(off - base)));
    let pass = |i: usize, _| {
        let p = pass_of(lane_at(i));
        Some((hue(p, passes.len()), (p + 1).to_string()))
    };
    let bank = |i: usize, off: u64| {
        let b = a.banks_of(off);
        let name = match (b.first(), b.last()) {
            (Some(f), Some(t)) if b.len() > 1 => format!("{f}–{t}"),
            (Some(f), _) => f.to_string(),
            _ => String::new(),
        };
        let (r, fewest) = rank(lane_at(i), off);
        Some((pass_colour(r, fewest), name))
    };
    let places = place_rows(a);
    let mut rows: Vec<(String, LaneFill)> = vec![("byte (+)".to_owned(), &byte)];
    rows.extend(places.iter().map(|(l, f)| (l.clone(), &**f as LaneFill)));
    if passes.len() > 1 {
        rows.push(("pass".to_owned(), &pass));
    }
    rows.push(("bank".to_owned(), &bank));
    let mut y = table(out, y, &lane_rows(a, &rows));
    if !a.named.how.is_empty() {
        y = prose(out, y, 12, "normal", &format!("{}.", a.named.how));
    }
    let rule = match (a.kind, passes.len()) {
        (PictureKind::Matrix, _) => {
            "ldmatrix reads one 8×8 matrix a pass: 8 lanes give its 8 rows of 16 bytes".to_owned()
        }
        (_, 1) => "One pass serves all the warp's lanes".to_owned(),
        _ => format!(
            "{} bytes a lane: the banks serve {} lanes a pass (two parts at once where every 4 lanes \
             want at most 2 pieces)",
            a.bytes,
            if a.bytes > 8 { 8 } else { 16 }
        ),
    };
    let note = format!(
        "bytes from byte {base} of the block's shared memory. {rule}. Each pass below shows the 32 \
         banks (4 bytes wide), a row for each distinct word a bank serves in it, with the lanes that \
         want it: a pass costs as many wavefronts as its busiest bank has words"
    );
    y = prose(out, y, 12, "normal", &note) + 8;
    for (i, (p, banks)) in passes.iter().zip(&tables).enumerate() {
        y = pass_table(out, y, (i, passes.len()), p, banks, fewest(banks));
    }
    let sum: Vec<String> = passes.iter().map(|p| p.wavefronts.to_string()).collect();
    let total: u64 = passes.iter().map(|p| p.wavefronts).sum();
    match passes.len() {
        0 | 1 => y,
        _ => prose(out, y, 12, "bold", &format!("{} = {total} wavefronts", sum.join(" + "))) + 4,
    }
}

/// One pass's heading and its table of the 32 banks; returns where it ends.
fn pass_table(
    out: &mut String,
    y: u32,
    (i, of): (usize, usize),
    p: &Pass,
    banks: &[Vec<(u64, Vec<u32>)>],
    fewest: usize,
) -> u32 {
    let depth = banks.iter().map(Vec::len).max().unwrap_or(0);
    let heading = format!(
        "pass {} of {of}: lanes {}–{}, {} (its busiest bank serves {depth} distinct word{})",
        i + 1,
        p.from,
        p.to - 1,
        if p.wavefronts == 1 { "1 wavefront".to_owned() } else { format!("{} wavefronts", p.wavefronts) },
        if depth == 1 { "" } else { "s" }
    );
    let y = prose(out, y, 12, "bold", &heading) + 6;
    let mut rows = vec![LaneRow::new("bank")];
    for b in 0..32 {
        rows[0].set(b, "#eeeeee", b.to_string());
    }
    for r in 0..depth {
        let mut row = LaneRow::new(&format!("word {}", r + 1));
        for (b, words) in banks.iter().enumerate() {
            if let Some((_, lanes)) = words.get(r) {
                row.set(b as u32, &pass_colour(r, fewest), lane_set(lanes, 3));
            }
        }
        rows.push(row);
    }
    bank_table(out, y, &rows)
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

/// The lanes that share something in at most `most` characters: by number, a run as
/// first–last, else as a count.
fn lane_set(lanes: &[u32], most: usize) -> String {
    let named = match lanes {
        [] => String::new(),
        [a] => a.to_string(),
        [a, b] => format!("{a},{b}"),
        [first, .., last] if lanes.windows(2).all(|w| w[1] == w[0] + 1) => format!("{first}–{last}"),
        _ => String::new(),
    };
    if !named.is_empty() && named.chars().count() <= most || lanes.is_empty() {
        named
    } else {
        format!("×{}", lanes.len())
    }
}

/// A signed number in at most five characters.
fn short_signed(v: i64) -> String {
    if v < 0 { format!("−{}", short(v.unsigned_abs())) } else { short(v as u64) }
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
    use super::*;
    use ptx_emulator::recording::warp_access::{Head, LaneWord, Named, WarpAccess};

    fn head(opcode: &str) -> Head {
        Head { at: "k.cu:3".into(), opcode: opcode.into(), block: [0; 3], warp: 0, write: false }
    }

    /// The words the picture shows, wrapped lines joined again.
    fn shown(svg: &str) -> String {
        let words: Vec<&str> = svg.split('<').filter_map(|p| p.split_once('>')).map(|p| p.1).collect();
        words.join(" ").split_whitespace().collect::<Vec<_>>().join(" ")
    }

    #[test]
    fn a_picture_is_one_svg_document_with_its_counts() {
        let a =
            WarpAccess::shared(head("ld.shared.f32"), 4, (0..32).map(|l| (l, 128 * u64::from(l))).collect());
        let svg = draw(&[a]);
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("one instruction, from the emulator"));
        let shown = shown(&svg);
        assert!(shown.contains("32 wavefronts") && shown.contains("32-way bank conflict"), "{shown}");
        assert!(svg.contains("width=\"920\""));
        assert_eq!(svg.matches("<text").count(), svg.matches("</text>").count());
    }

    /// A panel names its matrix, the array and the line's expression, and gives each lane's
    /// place in both.
    #[test]
    fn a_panel_names_its_matrix_and_its_lanes_places() {
        let mut a =
            WarpAccess::shared(head("ld.shared.f32"), 4, (0..32).map(|l| (l, 132 * u64::from(l))).collect());
        a.named = Named {
            matrix: "Bᵀ".into(),
            memory: "the shared array `Bs[32][33]`, holding elements of Bᵀ".into(),
            array: "Bs".into(),
            line: "kernel.cu:50: sum += As[ty][k] * Bs[tx][k];".into(),
            variable: "Bs[tx][k]".into(),
            ..Named::default()
        };
        a.places = (0..32)
            .map(|l| LaneWord { element: Some((l, 7)), array: Some((l, 0)), unswizzled: None })
            .collect();
        let shown = shown(&draw(&[a]));
        assert!(shown.starts_with("matrix Bᵀ, through Bs[tx][k] · ld.shared.f32"), "{shown}");
        assert!(shown.contains("line kernel.cu:50: sum += As[ty][k] * Bs[tx][k];"), "{shown}");
        assert!(shown.contains("the shared array `Bs[32][33]`"), "{shown}");
        for label in ["Bs row", "Bs col", "Bᵀ row", "Bᵀ col"] {
            assert!(shown.contains(label), "no {label} row: {shown}");
        }
        assert!(shown.contains("Bᵀ col 7 7 7"), "{shown}");
    }

    /// Every pass is drawn with all 32 banks, and its heading names the lanes it serves.
    #[test]
    fn each_pass_is_drawn_with_its_lanes_and_all_32_banks() {
        // 16 bytes a lane, lane l at byte 16·(l mod 8) + 128·(l / 8): each quarter warp reads
        // banks 0–31 once, lanes 8 apart share nothing.
        let lanes = (0..32).map(|l| (l, 16 * u64::from(l % 8) + 128 * u64::from(l / 8))).collect();
        let a = WarpAccess::shared(head("ld.shared.v4.f32"), 16, lanes);
        assert_eq!(a.passes().len(), 4);
        let wide = shown(&draw(&[a]));
        for (i, lanes) in ["0–7", "8–15", "16–23", "24–31"].iter().enumerate() {
            let heading = format!("pass {} of 4: lanes {lanes}, 1 wavefront", i + 1);
            assert!(wide.contains(&heading), "no `{heading}`: {wide}");
        }
        assert!(wide.contains("1 + 1 + 1 + 1 = 4 wavefronts"), "{wide}");
        // Banks 0 to 31 in one row under each pass's heading, those of a narrow access too.
        let banks: String = (0..32).map(|b| format!(" {b}")).collect();
        assert_eq!(wide.matches(&format!("bank{banks} word 1")).count(), 4, "{wide}");
        let narrow = WarpAccess::shared(
            head("ld.shared.f32"),
            4,
            (0..32).map(|l| (l, 4 * u64::from(l % 4))).collect(),
        );
        let few = shown(&draw(&[narrow]));
        assert_eq!(few.matches(&format!("bank{banks} word 1")).count(), 1, "{few}");
    }
}

//! A picture of one warp's access: asked for a `.cu` line (and a block and a warp of it), the
//! emulator keeps, the first time that warp executes each global or shared load or store at the
//! line, every active lane's address and what the emulator counted for it (the sectors and lines
//! of a global request, the banks and wavefronts of a shared one), counted by the same functions
//! of [`crate::traffic`] that make the run's traffic line. The pictures draw it.
//!
//! The check where the emulator executes an access is one test of an `Option` while no picture
//! is asked for.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::inst::{Op, Space};
use crate::traffic;

/// The most accesses one line's picture keeps (an unrolled loop repeats its loads on one line).
pub const MOST_ACCESSES: usize = 4;

/// Which warp's access at which line: `FILE.cu:LINE[:block=X,Y,Z][:warp=W]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    pub file: String,
    pub line: u32,
    pub block: [u32; 3],
    pub warp: u32,
}

/// What `--picture-access` takes, for messages.
pub const FORM: &str =
    "FILE.cu:LINE, optionally followed by :block=X,Y,Z and :warp=W (as kernel.cu:34:warp=4)";

impl Request {
    /// Reads `FILE.cu:LINE[:block=X,Y,Z][:warp=W]`; block (0,0,0) and warp 0 where not given.
    pub fn parse(spec: &str) -> Result<Request, String> {
        let bad = |why: &str| format!("--picture-access wants {FORM}, and `{spec}` {why}");
        let mut parts = spec.split(':');
        let file = parts.next().unwrap_or_default().trim();
        if file.is_empty() || !file.ends_with(".cu") {
            return Err(bad("does not start with a .cu file's name"));
        }
        let line = parts.next().and_then(|l| l.trim().parse::<u32>().ok()).filter(|&l| l > 0);
        let Some(line) = line else { return Err(bad("gives no line number (from 1) after the file")) };
        let mut request = Request { file: file.to_owned(), line, block: [0; 3], warp: 0 };
        for part in parts {
            if let Some(w) = part.strip_prefix("warp=") {
                request.warp = w.trim().parse().map_err(|_| bad("gives a warp that is not a number"))?;
            } else if let Some(b) = part.strip_prefix("block=") {
                let v: Vec<Option<u32>> = b.split(',').map(|x| x.trim().parse().ok()).collect();
                match v[..] {
                    [Some(x), Some(y), Some(z)] => request.block = [x, y, z],
                    [Some(x), Some(y)] => request.block = [x, y, 0],
                    [Some(x)] => request.block = [x, 0, 0],
                    _ => return Err(bad("gives a block that is not X,Y,Z")),
                }
            } else {
                return Err(bad(&format!("has `{part}`, which is neither block= nor warp=")));
            }
        }
        Ok(request)
    }

    /// Whether `recorded` (a file name as the PTX gives it, a path perhaps) is the file asked for.
    pub fn names(&self, recorded: &str) -> bool {
        let asked = self.file.as_str();
        recorded == asked
            || recorded.ends_with(&format!("/{asked}"))
            || asked.ends_with(&format!("/{recorded}"))
    }

    /// `file:line, block (x,y,z) warp w`, for messages.
    pub fn place(&self) -> String {
        let [x, y, z] = self.block;
        format!("{}:{}, warp {} of block ({x},{y},{z})", self.file, self.line, self.warp)
    }
}

/// Whether `op` is an access a picture draws: a load or store that is not of local or parameter
/// memory, or an `ldmatrix`.
pub fn pictured(op: &Op) -> bool {
    match op {
        Op::Ld { space, .. } | Op::St { space, .. } => !matches!(space, Space::Local | Space::Param),
        Op::Ldmatrix { .. } => true,
        _ => false,
    }
}

/// What a picture shows of memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PictureKind {
    /// A global load or store (or a generic one that lands in global memory), or a `cp.async`'s
    /// global read.
    Global,
    /// A shared load or store.
    Shared,
    /// `ldmatrix`: each of lanes 0 to 8·count − 1 gives the address of one 16-byte row.
    Matrix,
}

/// One warp's one instruction, as the emulator executed and counted it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WarpAccess {
    /// `file:line`, and the PTX instruction.
    pub at: String,
    pub opcode: String,
    pub block: [u32; 3],
    pub warp: u32,
    pub kind: PictureKind,
    pub write: bool,
    /// Bytes each lane moves (as the emulator counts the access: a shared load that the machine
    /// code joins with its neighbours counts the joined width).
    pub bytes: u32,
    /// Each active lane and its address: a global address, or a byte offset in the block's
    /// shared memory.
    pub lanes: Vec<(u32, u64)>,
    /// What the emulator counted for it: requests, and the sectors and 128-byte lines of a
    /// global access, or the wavefronts of a shared one (0 for the others).
    pub requests: u64,
    pub sectors: u64,
    pub lines: u64,
    pub wavefronts: u64,
    /// A shared load that the machine code joins with its neighbours into one wider load (of
    /// `bytes` a lane, starting at the lanes' offsets here), counted once for them all.
    pub joined: bool,
    /// The matrix and the source's names for what the lanes reach.
    pub named: Named,
    /// Where each lane's first word lies (in the order of `lanes`; empty where nothing is known).
    pub places: Vec<LaneWord>,
}

/// What an access reaches, named as the kernel names it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Named {
    /// The matrix: `A`, `B`, `Bᵀ` or `C` (empty where not known).
    pub matrix: String,
    /// The memory, in words: `global memory: the kernel's argument B, a 256×256 matrix…`, `the
    /// shared array Bs[16][17]`, `the dynamic shared memory smem[]`.
    pub memory: String,
    /// The shared array or kernel parameter the address lies in (`Bs`, `B`), if it has a name.
    pub array: String,
    /// The `.cu` line the PTX gives the access, `file:line: text`, and the call in the kernel it
    /// was inlined from (`file:line: text`), if any.
    pub line: String,
    pub call: String,
    /// The expression of the line the access goes through (`Bs[k][tile_col(j, c0)]`).
    pub variable: String,
    /// How the lanes' (row, column) of the matrix were found, for the picture's note.
    pub how: String,
}

/// Where one lane's first word lies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LaneWord {
    /// The element (row, column) of [`Named::matrix`].
    pub element: Option<(i64, i64)>,
    /// Its [row][column] in the shared array as the source declares it; or in a swizzled box,
    /// the row of the box and the column where the swizzle stored it.
    pub array: Option<(i64, i64)>,
    /// In a swizzled box: the column of the box before the swizzle.
    pub unswizzled: Option<i64>,
}

/// One part of the warp the banks serve on its own: lanes `from..to`, in `wavefronts` passes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pass {
    pub from: u32,
    pub to: u32,
    pub wavefronts: u64,
}

impl WarpAccess {
    /// A global access of `bytes` a lane at `lanes`' addresses, counted as the run counts it.
    pub fn global(head: Head, bytes: u32, lanes: Vec<(u32, u64)>) -> WarpAccess {
        let mut scratch: Vec<u64> = lanes.iter().map(|&(_, a)| a).collect();
        let sectors = traffic::sectors(&mut scratch, u64::from(bytes));
        let lines = traffic::lines(&scratch).max(1);
        WarpAccess {
            kind: PictureKind::Global,
            bytes,
            lanes,
            requests: 1,
            sectors,
            lines,
            ..WarpAccess::empty(head)
        }
    }

    /// A shared access of `bytes` a lane at `lanes`' offsets, counted as the run counts it.
    pub fn shared(head: Head, bytes: u32, lanes: Vec<(u32, u64)>) -> WarpAccess {
        let pairs: Vec<(u32, u32)> = lanes.iter().map(|&(l, a)| (l, a as u32)).collect();
        let wavefronts = traffic::shared_wavefronts(&pairs, bytes);
        WarpAccess {
            kind: PictureKind::Shared,
            bytes,
            lanes,
            requests: 1,
            wavefronts,
            ..WarpAccess::empty(head)
        }
    }

    /// The head and nothing counted.
    pub fn empty(head: Head) -> WarpAccess {
        WarpAccess {
            at: head.at,
            opcode: head.opcode,
            block: head.block,
            warp: head.warp,
            kind: PictureKind::Shared,
            write: head.write,
            bytes: 0,
            lanes: Vec::new(),
            requests: 0,
            sectors: 0,
            lines: 0,
            wavefronts: 0,
            joined: false,
            named: Named::default(),
            places: Vec::new(),
        }
    }

    /// Whether `other` is the same access moved: the same kind, width and lanes, each lane's
    /// address moved by the same amount.
    pub fn same_pattern(&self, other: &WarpAccess) -> bool {
        let moved = |a: &WarpAccess| -> Vec<(u32, u64)> {
            let first = a.lanes.first().map_or(0, |l| l.1);
            a.lanes.iter().map(|&(l, x)| (l, x.wrapping_sub(first))).collect()
        };
        (self.kind, self.write, self.bytes, self.joined)
            == (other.kind, other.write, other.bytes, other.joined)
            && moved(self) == moved(other)
    }

    /// The distinct 32-byte sectors the lanes touch, lowest first.
    pub fn sector_list(&self) -> Vec<u64> {
        let mut s: Vec<u64> = self
            .lanes
            .iter()
            .flat_map(|&(_, a)| (a >> 5)..=((a + u64::from(self.bytes.max(1)) - 1) >> 5))
            .collect();
        s.sort_unstable();
        s.dedup();
        s
    }

    /// The distinct 128-byte lines the lanes touch, lowest first.
    pub fn line_list(&self) -> Vec<u64> {
        let mut l: Vec<u64> = self.sector_list().iter().map(|s| s >> 2).collect();
        l.dedup();
        l
    }

    /// The banks (of 32, 4 bytes wide) a lane's bytes at `offset` fall in.
    pub fn banks_of(&self, offset: u64) -> Vec<u32> {
        let words = u64::from(self.bytes.div_ceil(4).max(1));
        (0..words).map(|i| ((offset / 4 + i) % 32) as u32).collect()
    }

    /// For each bank, the distinct 4-byte words the lanes want in it, with the lanes that want
    /// each (a word several lanes want is read once for them all).
    pub fn bank_words(&self) -> Vec<Vec<(u64, Vec<u32>)>> {
        let mut banks: Vec<Vec<(u64, Vec<u32>)>> = vec![Vec::new(); 32];
        let words = u64::from(self.bytes.div_ceil(4).max(1));
        for &(lane, offset) in &self.lanes {
            for i in 0..words {
                let word = offset / 4 + i;
                let bank = &mut banks[(word % 32) as usize];
                match bank.iter_mut().find(|(w, _)| *w == word) {
                    Some((_, lanes)) => lanes.push(lane),
                    None => bank.push((word, vec![lane])),
                }
            }
        }
        for bank in &mut banks {
            bank.sort_by_key(|(w, _)| *w);
        }
        banks
    }

    /// The parts of the warp the banks serve one after another, as the run counts them
    /// ([`traffic::shared_passes`]; `ldmatrix`: one part of 8 lanes, one 16-byte row each, per
    /// matrix); none for a global access.
    pub fn passes(&self) -> Vec<Pass> {
        match self.kind {
            PictureKind::Global => Vec::new(),
            PictureKind::Matrix => (0..self.wavefronts as u32)
                .map(|m| Pass { from: 8 * m, to: 8 * m + 8, wavefronts: 1 })
                .collect(),
            PictureKind::Shared => {
                let pairs: Vec<(u32, u32)> = self.lanes.iter().map(|&(l, a)| (l, a as u32)).collect();
                traffic::shared_passes(&pairs, self.bytes)
                    .into_iter()
                    .map(|(from, to, wavefronts)| Pass { from, to, wavefronts })
                    .collect()
            }
        }
    }

    /// [`WarpAccess::bank_words`] of the lanes `from..to` alone: one pass's.
    pub fn pass_bank_words(&self, pass: &Pass) -> Vec<Vec<(u64, Vec<u32>)>> {
        let lanes = self.lanes.iter().filter(|(l, _)| (pass.from..pass.to).contains(l)).copied().collect();
        WarpAccess { lanes, places: Vec::new(), named: Named::default(), ..self.clone() }.bank_words()
    }

    /// The most distinct words any one bank holds: the ways of the worst conflict (1: none).
    pub fn ways(&self) -> usize {
        self.bank_words().iter().map(Vec::len).max().unwrap_or(0)
    }

    /// A few lines of text that say what the picture shows.
    pub fn summary(&self) -> Vec<String> {
        let [x, y, z] = self.block;
        let lanes = self.lanes.len();
        let verb = if self.write { "write" } else { "read" };
        let mut out = vec![format!(
            "{}: `{}` by warp {} of block ({x},{y},{z}), {lanes} lanes that {verb} {} bytes each",
            self.at, self.opcode, self.warp, self.bytes
        )];
        if !self.named.memory.is_empty() {
            let through = match self.named.variable.as_str() {
                "" => String::new(),
                v => format!(", through `{v}`"),
            };
            out.push(format!("{}{through}", self.named.memory));
        }
        match self.kind {
            PictureKind::Global => {
                let mut distinct: Vec<u64> = self.lanes.iter().map(|l| l.1).collect();
                distinct.sort_unstable();
                distinct.dedup();
                let need = distinct.len() as u64 * u64::from(self.bytes);
                out.push(format!(
                    "global memory: 1 request, {} in {}; the {need} distinct bytes the lanes {verb} \
                     would fit in {}",
                    count(self.sectors, "sector of 32 bytes", "sectors of 32 bytes"),
                    count(self.lines, "line of 128 bytes", "lines of 128 bytes"),
                    count(need.div_ceil(32).max(1), "sector", "sectors"),
                ));
            }
            PictureKind::Shared | PictureKind::Matrix => {
                if self.joined {
                    out.push(format!(
                        "the machine code joins this load with its neighbours on the line into one \
                         {}-byte load a lane, drawn and counted here",
                        self.bytes
                    ));
                }
                out.push(self.served());
            }
        }
        out
    }

    /// How the banks serve a shared access: its passes, what each costs, and the conflict.
    fn served(&self) -> String {
        let passes = self.passes();
        let total = count(self.wavefronts, "wavefront", "wavefronts");
        let matrix = self.kind == PictureKind::Matrix;
        // The worst pass: its depth, busiest bank, words, and the fewest passes its words need.
        let worst = passes
            .iter()
            .map(|p| {
                let banks = self.pass_bank_words(p);
                let ways = banks.iter().map(Vec::len).max().unwrap_or(0);
                let words: usize = banks.iter().map(Vec::len).sum();
                let busiest = banks.iter().position(|b| b.len() == ways).unwrap_or(0);
                (ways, busiest, words, words.div_ceil(32).max(1))
            })
            .max_by_key(|&(ways, _, _, fewest)| ways.saturating_sub(fewest))
            .unwrap_or((0, 0, 0, 1));
        let (ways, busiest, words, fewest) = worst;
        let conflict = if ways > fewest {
            // "an 8-way", "an 11-way", "an 18-way": the number as it is said.
            let an = ways == 8 || ways == 11 || ways == 18 || (80..90).contains(&ways);
            let within = if passes.len() > 1 { " within a pass" } else { "" };
            format!(
                "{} {ways}-way bank conflict{within}: bank {busiest} holds {ways} distinct words, where \
                 {fewest} a bank would hold all {words}",
                if an { "an" } else { "a" }
            )
        } else {
            format!("no bank conflict: a pass's distinct words lie at most {ways} to a bank")
        };
        let how = if matrix {
            "one pass of 8 lanes per 8×8 matrix, a wavefront each, as the emulator counts ldmatrix".to_owned()
        } else if passes.len() == 1 {
            let p = passes[0];
            format!(
                "one pass for lanes {}–{}, as many wavefronts as its busiest bank holds distinct words",
                p.from,
                p.to - 1
            )
        } else {
            let sum: Vec<String> = passes.iter().map(|p| p.wavefronts.to_string()).collect();
            let part = if self.bytes > 8 { "a quarter warp (8 lanes)" } else { "a half warp (16 lanes)" };
            format!(
                "{} bytes a lane are served {part} at a time, two parts together where each 4 lanes want \
                 at most 2 pieces; {} passes, each as many wavefronts as its busiest bank holds distinct words: {}",
                self.bytes,
                passes.len(),
                sum.join(" + ")
            )
        };
        format!("shared memory: 1 request, {total}: {how}; {conflict}")
    }
}

/// `n` and the noun, singular for 1.
fn count(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// What names an access: its line, instruction, block and warp, and whether it writes.
#[derive(Clone, Debug)]
pub struct Head {
    pub at: String,
    pub opcode: String,
    pub block: [u32; 3],
    pub warp: u32,
    pub write: bool,
}

/// A picture asked for, and the accesses kept for it.
#[derive(Debug)]
pub struct PictureWatch {
    pub request: Request,
    /// The compile's `-D` values ([`crate::Emulator::defines`]).
    pub defines: Vec<(String, i64)>,
    kept: Mutex<Vec<(u32, WarpAccess)>>,
    /// Set after the first launch that kept anything: later launches keep nothing.
    sealed: AtomicBool,
}

impl PictureWatch {
    pub fn new(request: Request) -> PictureWatch {
        PictureWatch {
            request,
            defines: Vec::new(),
            kept: Mutex::new(Vec::new()),
            sealed: AtomicBool::new(false),
        }
    }

    /// Whether the access at instruction `pc` of `file`, `line`, by `warp` of `block` is one to
    /// keep: the line, block and warp asked for, an instruction not kept yet, room left.
    pub fn wants(&self, file: Option<&String>, line: u32, block: [u32; 3], warp: u32, pc: u32) -> bool {
        if line != self.request.line
            || block != self.request.block
            || warp != self.request.warp
            || self.sealed.load(Ordering::Relaxed)
            || !file.is_some_and(|f| self.request.names(f))
        {
            return false;
        }
        let kept = self.kept.lock().expect("no thread panics holding it");
        kept.len() < MOST_ACCESSES && kept.iter().all(|(p, _)| *p != pc)
    }

    /// Keeps `access` made at `pc`, unless one kept already has its pattern (an unrolled loop's
    /// next copy of a load, its lanes' addresses moved all by the same amount).
    pub fn keep(&self, pc: u32, access: WarpAccess) {
        let mut kept = self.kept.lock().expect("no thread panics holding it");
        let again = kept.iter().any(|(_, a)| a.same_pattern(&access));
        if !again && kept.len() < MOST_ACCESSES && kept.iter().all(|(p, _)| *p != pc) {
            kept.push((pc, access));
        }
    }

    /// After a launch: what it kept is the picture, and no later launch adds to it.
    pub fn launched(&self) {
        if !self.kept.lock().expect("no thread panics holding it").is_empty() {
            self.sealed.store(true, Ordering::Relaxed);
        }
    }

    /// The accesses kept, in the order the warp executed them.
    pub fn accesses(&self) -> Vec<WarpAccess> {
        self.kept.lock().expect("no thread panics holding it").iter().map(|(_, a)| a.clone()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head() -> Head {
        Head { at: "k.cu:3".into(), opcode: "ld".into(), block: [0; 3], warp: 0, write: false }
    }

    #[test]
    fn requests_are_read_with_their_defaults() {
        let r = Request::parse("kernel.cu:34").expect("a line");
        assert_eq!(r, Request { file: "kernel.cu".into(), line: 34, block: [0; 3], warp: 0 });
        let r = Request::parse("a/kernel.cu:7:block=1,2,0:warp=4").expect("all of it");
        assert_eq!((r.line, r.block, r.warp), (7, [1, 2, 0], 4));
        assert!(r.names("x/a/kernel.cu") && !r.names("b/kernel.cu"));
        for bad in ["kernel.cu", "kernel.cu:x", "kernel.cu:0", "34", "kernel.cu:3:lane=2", "k.cu:3:block=a"] {
            let e = Request::parse(bad).expect_err(bad);
            assert!(e.starts_with("--picture-access wants FILE.cu:LINE") && e.contains(bad), "{e}");
        }
    }

    #[test]
    fn a_row_and_a_column_count_as_the_run_does() {
        let row = WarpAccess::global(head(), 4, (0..32).map(|l| (l, 4096 + 4 * u64::from(l))).collect());
        assert_eq!((row.sectors, row.lines, row.sector_list().len(), row.line_list().len()), (4, 1, 4, 1));
        let column = WarpAccess::global(head(), 4, (0..32).map(|l| (l, 4096 * u64::from(l))).collect());
        assert_eq!((column.sectors, column.lines, column.sector_list().len()), (32, 32, 32));
        let banked = WarpAccess::shared(head(), 4, (0..32).map(|l| (l, 128 * u64::from(l))).collect());
        assert_eq!((banked.wavefronts, banked.ways()), (32, 32));
        let padded = WarpAccess::shared(head(), 4, (0..32).map(|l| (l, 132 * u64::from(l))).collect());
        assert_eq!((padded.wavefronts, padded.ways()), (1, 1));
    }
}

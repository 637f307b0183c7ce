//! `compare lessons-table`: for each comparison a chapter or exercise makes
//! (`ptx_emulator/heldout/lessons-pairs.txt`), the ratio of the two kernels' times on the GPU and
//! as the time model predicts it, at each size both were run at. A lesson holds where the
//! predicted ratio lies on the GPU's side of 1 (where the GPU's differs from 1 by more than 3%:
//! less is noise, and has no side) and within ±10% of the GPU's ratio.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

use super::heldout::{predictions, times};
use super::{NOISE, names, signed_pct};

/// How far the predicted ratio may lie from the GPU's for the lesson to hold.
pub const TOLERANCE: f64 = 0.10;

/// What the table reads, and how it names the GPU.
pub struct LessonsTableInputs {
    pub times: Vec<PathBuf>,
    pub predicted: Vec<PathBuf>,
    /// The named cases the runs are known by (`lessons.txt`).
    pub cases: Vec<(String, String)>,
    /// (chapter, first case, second case), as `lessons-pairs.txt` lists them.
    pub pairs: Vec<(String, String, String)>,
    pub gpu: String,
}

/// The pairs of a file of pairs: `CHAPTER FIRST SECOND` a line, `#` a comment.
pub fn read_pairs(path: &Path) -> Result<Vec<(String, String, String)>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow::anyhow!("could not read {}: {e}", path.display()))?;
    parse_pairs(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

fn parse_pairs(text: &str) -> Result<Vec<(String, String, String)>> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        match line.split_whitespace().collect::<Vec<_>>()[..] {
            [chapter, first, second] => out.push((chapter.to_owned(), first.to_owned(), second.to_owned())),
            _ => bail!("line {} is not CHAPTER FIRST SECOND", n + 1),
        }
    }
    Ok(out)
}

/// The table's lines, and its rows apart (what the program prints).
pub fn table(inputs: &LessonsTableInputs) -> Result<(Vec<String>, usize)> {
    let measured = times(&inputs.times, &inputs.cases)?;
    let predicted = predictions(&inputs.predicted, &inputs.cases)?;
    let gpu_name = &inputs.gpu;
    let (mut rows, mut held, mut judged) = (Vec::new(), 0, 0);
    for size in ["256", "1024", "4096"] {
        for (chapter, first, second) in &inputs.pairs {
            let (a, b) = (format!("{first} --size {size}"), format!("{second} --size {size}"));
            let (Some(ta), Some(tb)) = (measured.get(&a), measured.get(&b)) else { continue };
            let gpu = ta / tb;
            let pa = predicted.get(&a).and_then(|p| p.0);
            let pb = predicted.get(&b).and_then(|p| p.0);
            let cell = match (pa, pb) {
                (Some(pa), Some(pb)) => {
                    let model = pa / pb;
                    let sided = (gpu - 1.0).abs() <= NOISE || (model - 1.0) * (gpu - 1.0) > 0.0;
                    let ok = sided && (model / gpu - 1.0).abs() <= TOLERANCE;
                    judged += 1;
                    held += usize::from(ok);
                    format!(
                        "{model:.3} | {} | {}",
                        signed_pct(model / gpu - 1.0),
                        if ok { "yes" } else { "no" }
                    )
                }
                _ => "– | – | not predicted".to_owned(),
            };
            rows.push(format!("| {chapter} | `{first}` / `{second}` | {size}³ | {gpu:.3} | {cell} |"));
        }
    }
    let n_rows = rows.len();
    let mut lines = vec![
        format!("# The lessons table: each comparison a chapter makes, on the {gpu_name} and predicted"),
        String::new(),
        format!(
            "Times: {}. Predictions: {}. Ratio: the first kernel's time over the second's. A lesson holds where the \
             predicted ratio is on the same side of 1 as the {gpu_name}'s (where the {gpu_name}'s differs from 1 by more \
             than {:.0}%) and within ±{:.0}% of it. Written by `compare lessons-table`.",
            names(&inputs.times),
            names(&inputs.predicted),
            100.0 * NOISE,
            100.0 * TOLERANCE
        ),
        String::new(),
        format!("| chapter | pair | size | {gpu_name} ratio | predicted ratio | off by | holds |"),
        "| --- | --- | --- | ---: | ---: | ---: | --- |".to_owned(),
    ];
    lines.extend(rows);
    lines.extend([String::new(), format!("Holds in {held} of {judged} comparisons predicted.")]);
    Ok((lines, n_rows))
}

/// Writes the table to `out`, and prints its rows and verdict.
pub fn run(inputs: &LessonsTableInputs, out: &Path) -> Result<()> {
    let (lines, n_rows) = table(inputs)?;
    super::write(out, &lines)?;
    println!("{}", lines[6..6 + n_rows].join("\n"));
    println!("{}", lines[lines.len() - 1]);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pair_file_is_read_and_a_bad_line_named() {
        let pairs = parse_pairs("# chapter first second\nstep02 slow fast\n\n").unwrap();
        assert_eq!(pairs, [("step02".to_owned(), "slow".to_owned(), "fast".to_owned())]);
        assert_eq!(
            parse_pairs("step02 slow\n").unwrap_err().to_string(),
            "line 1 is not CHAPTER FIRST SECOND"
        );
    }
}

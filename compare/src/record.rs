//! A results record read back: the page [`Results::markdown`] writes holds everything the charts
//! draw, so the charts of a record are drawn from the record itself (`--redraw`), and a run
//! draws its own charts the same way, from the page it has just written.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};
use common::{Intensity, Precision};

use crate::{CUBLAS_TF32, Cell, GPU_STEPS, Results};

/// A record's results, with the file names its page gives its two charts.
pub struct Record {
    pub results: Results,
    /// The GFLOP/s chart, beside the record.
    pub chart_file: String,
    /// The roofline, beside the record; None where the record has no roofline section.
    pub roofline_file: Option<String>,
}

/// The text after `prefix` on the first line that starts with it, up to `end`.
fn after<'a>(text: &'a str, prefix: &str, end: &str) -> Option<&'a str> {
    let line = text.lines().find_map(|l| l.strip_prefix(prefix))?;
    line.split_once(end).map(|(v, _)| v)
}

/// The cells of a table row `| a | b | … |`, trimmed.
fn cells(line: &str) -> Vec<&str> {
    let inner = line.trim().trim_start_matches('|').trim_end_matches('|');
    inner.split('|').map(str::trim).collect()
}

/// The rows of the table whose header line starts with `header`.
fn table<'a>(text: &'a str, header: &str) -> Option<(Vec<&'a str>, Vec<Vec<&'a str>>)> {
    let mut lines = text.lines().skip_while(|l| !l.starts_with(header));
    let head = cells(lines.next()?);
    lines.next()?; // | --- | ---: | …
    let rows = lines.take_while(|l| l.starts_with('|')).map(cells).collect();
    Some((head, rows))
}

/// A number the page wrote, named for the error.
fn value(text: &str, what: &str) -> Result<f64> {
    text.trim().parse().with_context(|| format!("the record's {what} \"{text}\" is not a number"))
}

/// The arithmetic a row claims: what its step declares (the record names the step, the code says
/// what it computes); cuBLAS TF32's is TF32, the CPU lab's and SGEMM's FP32.
fn precision_of(name: &str) -> Precision {
    match GPU_STEPS.iter().find(|s| s.name == name) {
        Some(step) => step.precision,
        None if name == CUBLAS_TF32 => Precision::Tf32,
        None => Precision::Fp32,
    }
}

impl Record {
    /// Reads the page `text` that [`Results::markdown`] wrote.
    pub fn parse(text: &str) -> Result<Record> {
        let device = text.lines().next().and_then(|l| l.strip_prefix("# Results on "));
        let device = device.context("not a results record: its first line is not \"# Results on DEVICE\"")?;
        // A GPU run's page says when it was measured; `--predicted`'s, when it was predicted.
        let (measured, predicted) = text
            .lines()
            .find_map(|l| {
                l.strip_prefix("Measured ")
                    .map(|rest| (rest, false))
                    .or_else(|| l.strip_prefix("Predicted ").map(|rest| (rest, true)))
            })
            .context("the record has no \"Measured\" line")?;
        let (date, rest) = measured.split_once(" with driver ").context("no driver on the Measured line")?;
        let (driver, rest) = rest.split_once(", NVRTC ").context("no NVRTC version on the Measured line")?;
        let (nvrtc, rest) = rest.split_once(". Command: `").context("no command on the Measured line")?;
        let command = rest.split_once('`').context("the command on the Measured line is not closed")?.0;

        let (head, lines) = table(text, "| step |").context("the record has no table of rates")?;
        let mut sizes = Vec::new();
        for h in &head[1..] {
            let s = h.strip_suffix('³').with_context(|| format!("the column \"{h}\" is not a size"))?;
            sizes.push(value(s, "size")? as usize);
        }
        let mut rows = Vec::new();
        for line in &lines {
            let mut row = Vec::new();
            for c in &line[1..] {
                row.push(if *c == "–" {
                    None
                } else {
                    let rate = c.split_whitespace().next().unwrap_or_default();
                    Some(Cell { gflops: value(rate, "rate")?, passed: !c.ends_with("FAILED"), held: None })
                });
            }
            if row.len() != sizes.len() {
                bail!("the row of {} has {} cells for {} sizes", line[0], row.len(), sizes.len());
            }
            rows.push((line[0].to_owned(), row));
        }

        let number = |prefix: &str, unit: &str| -> Result<Option<f64>> {
            after(text, prefix, unit).map(|v| value(v, prefix.trim())).transpose()
        };
        let roofline = table(text, "| step | FLOP/B (global) |").map(|t| t.1).unwrap_or_default();
        let intensities = rows
            .iter()
            .map(|(name, _)| {
                let line = roofline.iter().find(|l| l[0] == name.as_str())?;
                let shared = if line[2] == "–" { None } else { line[2].parse().ok() };
                Some(Intensity { global: line[1].parse().ok()?, shared })
            })
            .collect();
        let results = Results {
            device: device.to_owned(),
            driver: driver.to_owned(),
            nvrtc: nvrtc.to_owned(),
            date: date.to_owned(),
            command: command.to_owned(),
            predicted,
            sizes,
            precision: rows.iter().map(|(name, _)| precision_of(name)).collect(),
            rows,
            intensities,
            peak_gflops: number("The FP32 peak is ", " GFLOP/s")?.unwrap_or(0.0),
            tf32_peak_gflops: number("The TF32 peak is ", " GFLOP/s")?,
            dram_gbs: number("The DRAM bandwidth is ", " GB/s")?,
            smem_gbs: number("The shared-memory bandwidth is ", " GB/s")?.unwrap_or(0.0),
        };
        let chart_file = after(text, "![GFLOP/s against size](", ")").context("the record names no chart")?;
        let roofline_file = after(text, "![Roofline](", ")").map(str::to_owned);
        if roofline_file.is_some() && results.peak_gflops == 0.0 {
            bail!("the record has a roofline but no FP32 peak");
        }
        Ok(Record { results, chart_file: chart_file.to_owned(), roofline_file })
    }

    /// The charts of this record: each file name (beside the record) with its SVG.
    pub fn charts(&self) -> Result<Vec<(String, String)>> {
        let mut out = vec![(self.chart_file.clone(), self.results.chart())];
        if let Some(file) = &self.roofline_file {
            out.push((file.clone(), self.results.roofline()?));
        }
        Ok(out)
    }
}

/// Draws the charts of the record at `path` again, beside it, from what it holds; the paths
/// written.
pub fn redraw(path: &Path) -> Result<Vec<PathBuf>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let record =
        Record::parse(&text).map_err(|e| anyhow!("{} is not a results record: {e:#}", path.display()))?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut written = Vec::new();
    for (file, svg) in record.charts()? {
        let out = dir.join(file);
        std::fs::write(&out, svg).with_context(|| format!("writing {}", out.display()))?;
        written.push(out);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::sample;

    #[test]
    fn a_page_reads_back_as_the_results_it_was_written_from() {
        let record = Record::parse(&sample().markdown("test-gpu.svg")).unwrap();
        assert_eq!(record.results, sample());
        assert_eq!(record.chart_file, "test-gpu.svg");
        assert_eq!(record.roofline_file.as_deref(), Some("test-gpu-roofline.svg"));
        // So a run's charts are its record's.
        assert_eq!(record.charts().unwrap()[0].1, sample().chart());
    }

    #[test]
    fn what_is_not_a_results_page_is_refused_in_a_sentence() {
        let refused = |text: &str| Record::parse(text).err().map(|e| format!("{e:#}")).unwrap_or_default();
        assert!(refused("# Suite on X\n").contains("its first line is not \"# Results on DEVICE\""));
        let md = sample().markdown("x.svg");
        assert!(refused(&md.replace(". Command: `", ". ")).contains("no command"));
        assert!(
            refused(&md.replace("| step01_cpu_naive | 1.00", "| step01_cpu_naive | 1.0x")).contains("1.0x")
        );
        assert!(refused(&md.replace("| 0.50 (0.0%) |", "|")).contains("has 1 cells for 2 sizes"));
    }

    /// The charts the book's pages show (`results/runs/NAME.svg` in a page of docs/src) are
    /// what their records draw: a chart drawn by other code, or a record edited after its chart
    /// was drawn, fails here.
    #[test]
    fn the_books_charts_are_drawn_from_their_records() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/src");
        let runs = src.join("results/runs");
        let mut records = std::collections::BTreeSet::new();
        for page in std::fs::read_dir(&src).unwrap() {
            let page = page.unwrap().path();
            if page.extension().is_none_or(|e| e != "md") {
                continue;
            }
            let text = std::fs::read_to_string(&page).unwrap();
            for link in text.split("](results/runs/").skip(1) {
                let Some(chart) = link.split(')').next().and_then(|l| l.strip_suffix(".svg")) else {
                    continue;
                };
                let stem = chart.strip_suffix("-roofline").unwrap_or(chart);
                let record = runs.join(format!("{stem}.md"));
                let is_results =
                    std::fs::read_to_string(&record).is_ok_and(|t| t.starts_with("# Results on "));
                if is_results {
                    records.insert(record);
                }
            }
        }
        assert!(!records.is_empty(), "no page of the book shows a results chart");
        for path in records {
            let record = Record::parse(&std::fs::read_to_string(&path).unwrap()).unwrap();
            for (file, drawn) in record.charts().unwrap() {
                let kept = std::fs::read_to_string(runs.join(&file)).unwrap_or_default();
                assert!(
                    kept == drawn,
                    "{file} is not what its record draws; draw it again: \
                     cargo run -p compare -- --redraw docs/src/results/runs/{}",
                    path.file_name().unwrap().to_string_lossy()
                );
                crate::charts::tests::assert_legible(&drawn);
            }
        }
    }
}

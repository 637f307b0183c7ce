//! `compare --families`: the steps that claim FP32 from the tensor cores (09 and 11) beside cuBLAS
//! SGEMM on every input family and on matrices read from files, at one shape. Per input and step:
//! the verdict, the worst element's share of its per-element bound, and the rate as a share of
//! SGEMM's on the same inputs in the same run. A step that is fast on the default inputs and slow
//! on real data shows it here.

use std::fmt::Write as _;

use common::Precision;

/// Whether a step claims FP32 from the tensor cores (labs 09 and 11): these are the steps the
/// families compare (`--families`, and the gate's families), found from `GPU_STEPS` by their
/// precision.
pub fn fp32_from_tensor_cores(precision: Precision) -> bool {
    matches!(precision, Precision::Tf32x3 | Precision::Int8Crt)
}

/// One step (or SGEMM) on one input.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FamilyEntry {
    pub passed: bool,
    /// The worst element's share of its per-element bound.
    pub element: f64,
    /// ‖ΔC‖/‖C‖'s share of the normwise limit.
    pub normwise: f64,
    pub gflops: f64,
    /// A's rows and B's columns the step sent down its FP32 path (None for SGEMM).
    pub fp32: Option<(usize, usize)>,
    /// The moduli the product took (step 11).
    pub moduli: Option<usize>,
}

/// One input: what it is, then an entry per step (None: the step does not serve it), and SGEMM.
#[derive(Clone, Debug)]
pub struct FamilyRow {
    pub input: String,
    pub steps: Vec<Option<FamilyEntry>>,
    pub sgemm: FamilyEntry,
}

/// A run of `compare --families`.
#[derive(Clone, Debug)]
pub struct Families {
    pub device: String,
    pub driver: String,
    pub nvrtc: String,
    pub date: String,
    pub command: String,
    /// M×N×K, as the page prints it.
    pub shape: String,
    pub steps: Vec<String>,
    pub rows: Vec<FamilyRow>,
}

impl Families {
    /// Each step's rate over SGEMM's on each input.
    fn shares(&self, step: usize) -> Vec<f64> {
        self.rows
            .iter()
            .filter_map(|r| r.steps[step].filter(|e| e.passed).map(|e| e.gflops / r.sgemm.gflops))
            .collect()
    }

    /// The geometric mean of a step's shares of SGEMM over the inputs it passed on, and the
    /// smallest share; None where it passed on none.
    pub fn summary(&self, step: usize) -> Option<(f64, f64)> {
        let shares = self.shares(step);
        if shares.is_empty() {
            return None;
        }
        let mean = (shares.iter().map(|s| s.ln()).sum::<f64>() / shares.len() as f64).exp();
        Some((mean, shares.iter().copied().fold(f64::INFINITY, f64::min)))
    }

    /// The table: per input, SGEMM's verdict, worst element and rate, then per step its verdict,
    /// the worst element's share of the bound and its rate as a share of SGEMM's.
    pub fn table(&self) -> String {
        let mut md = String::from("| input | cuBLAS SGEMM | worst element | GFLOP/s |");
        for s in &self.steps {
            let _ = write!(md, " {s} | worst element | × SGEMM | FP32 rows, columns |");
        }
        md += "\n| --- | --- | ---: | ---: |";
        md += &" --- | ---: | ---: | ---: |".repeat(self.steps.len());
        md.push('\n');
        for r in &self.rows {
            let verdict = |e: &FamilyEntry| if e.passed { "PASS" } else { "**FAIL**" };
            let _ = write!(
                md,
                "| {} | {} | {:.3} | {:.0} |",
                r.input,
                verdict(&r.sgemm),
                r.sgemm.element,
                r.sgemm.gflops
            );
            for e in &r.steps {
                match e {
                    None => md += " – | – | – | – |",
                    Some(e) => {
                        let mut fp32 = e.fp32.map_or("–".to_owned(), |(r, c)| format!("{r}, {c}"));
                        if let Some(l) = e.moduli {
                            let _ = write!(fp32, " ({l} moduli)");
                        }
                        let _ = write!(
                            md,
                            " {} | {:.3} | {:.3}× | {fp32} |",
                            verdict(e),
                            e.element,
                            e.gflops / r.sgemm.gflops
                        );
                    }
                }
            }
            md.push('\n');
        }
        md
    }

    /// The results page: how it was measured, the table, and each step's summary.
    pub fn markdown(&self) -> String {
        let mut md = format!("# FP32 from the tensor cores on every input, {}\n\n", self.shape);
        let _ = writeln!(
            md,
            "Measured {} on {} with driver {}, NVRTC {}. Command: `{}`. Each step and cuBLAS SGEMM \
             (strict FP32) multiply the same inputs in the same run; each result is verified \
             against the f64 reference, the step to its own precision and SGEMM to FP32's. \
             \"worst element\" is the worst element's share of its per-element bound; \"× SGEMM\" \
             the step's rate over SGEMM's on those inputs.\n",
            self.date, self.device, self.driver, self.nvrtc, self.command
        );
        md += &self.table();
        md.push('\n');
        for (i, s) in self.steps.iter().enumerate() {
            match self.summary(i) {
                Some((mean, least)) => {
                    let _ = writeln!(
                        md,
                        "{s}: geometric mean {mean:.3}× SGEMM over the inputs it passed on, least {least:.3}×."
                    );
                }
                None => {
                    let _ = writeln!(md, "{s}: passed on no input.");
                }
            }
        }
        md
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(passed: bool, gflops: f64) -> FamilyEntry {
        FamilyEntry { passed, element: 0.25, normwise: 0.5, gflops, fp32: None, moduli: None }
    }

    fn sample() -> Families {
        let row = |input: &str, a: Option<FamilyEntry>, b: Option<FamilyEntry>| FamilyRow {
            input: input.to_owned(),
            steps: vec![a, b],
            sgemm: entry(true, 100.0),
        };
        Families {
            device: "Test GPU".into(),
            driver: "1.0".into(),
            nvrtc: "13.0".into(),
            date: "2026-01-01".into(),
            command: "cargo run --release -p compare -- --families".into(),
            shape: "64×64×64".into(),
            steps: vec!["step09_3xtf32".into(), "step11_int8_crt".into()],
            rows: vec![
                row(
                    "uniform",
                    Some(FamilyEntry { fp32: Some((0, 7)), ..entry(true, 200.0) }),
                    Some(entry(true, 300.0)),
                ),
                row("lognormal:2", Some(entry(true, 50.0)), Some(entry(false, 1.0))),
                row("a.npy, b.npy", None, Some(entry(true, 100.0))),
            ],
        }
    }

    #[test]
    fn shares_are_of_sgemm_on_the_same_inputs_and_failures_count_in_no_mean() {
        let f = sample();
        let (mean, least) = f.summary(0).unwrap();
        assert!((mean - 1.0).abs() < 1e-12 && (least - 0.5).abs() < 1e-12, "{mean} {least}");
        let (mean, least) = f.summary(1).unwrap();
        assert!((mean - 3f64.sqrt()).abs() < 1e-12 && (least - 1.0).abs() < 1e-12, "{mean} {least}");
        let none = Families { rows: vec![], ..f };
        assert_eq!(none.summary(0), None);
        assert!(none.markdown().contains("step09_3xtf32: passed on no input."));
    }

    #[test]
    fn the_table_has_a_verdict_a_worst_element_and_a_share_per_step() {
        let md = sample().markdown();
        assert!(md.starts_with("# FP32 from the tensor cores on every input, 64×64×64\n"), "{md}");
        assert!(
            md.contains(
                "| uniform | PASS | 0.250 | 100 | PASS | 0.250 | 2.000× | 0, 7 | PASS | 0.250 | 3.000× | – |"
            ),
            "{md}"
        );
        assert!(
            md.contains(
                "| lognormal:2 | PASS | 0.250 | 100 | PASS | 0.250 | 0.500× | – | **FAIL** | 0.250 | 0.010× | – |"
            ),
            "{md}"
        );
        assert!(
            md.contains("| a.npy, b.npy | PASS | 0.250 | 100 | – | – | – | – | PASS | 0.250 | 1.000× | – |"),
            "{md}"
        );
        assert!(md.contains("step11_int8_crt: geometric mean 1.732× SGEMM"), "{md}");
    }
}

//! Step 13's report as a typed value: the run's set-up, then for each product the checks of
//! both ways, the parts timed alone, both ways timed and the model they are judged against.
//! The text is one view of it ([`fmt::Display`]), its JSON (`--format json`, `--json-to`,
//! through common's `emit`) another, with `schema` and each product's `derived` figures.

use std::fmt;

use serde::Serialize;

use common::Shape;
use common::emit::Emit;
use common::timing::Stats;
use common::verify::Verdict;

use crate::bound::{Parts, RoundBottleneck, overhead_per_round};
use crate::rank_gpu::ShardKernel;
use crate::ranks::Via;

/// One run: where and how it ran, then one block for each product.
#[derive(Clone, Debug, Serialize)]
pub struct RingReport {
    #[serde(flatten)]
    pub header: RunHeader,
    pub products: Vec<ProductRun>,
}

/// Where the ranks ran, what they multiplied, and how shards travelled between them.
#[derive(Clone, Debug, Serialize)]
pub struct RunHeader {
    pub step: String,
    /// Ranks, each holding one shard of A and one of B.
    pub ranks: usize,
    /// GPUs the ranks ran on: one where they were simulated.
    pub gpus: usize,
    /// Whether the ranks shared one GPU, copies standing in for NCCL.
    pub simulated: bool,
    /// The first GPU's name and SMs (the ranks' GPUs are alike).
    pub gpu: String,
    pub sms: u32,
    /// NCCL's version, where the run used NCCL (not simulated).
    pub nccl: Option<String>,
    pub exchange: Exchange,
    /// The whole product, and each rank's shards of it (A's rows, B's columns).
    pub global: Shape,
    pub shard: Shape,
    /// What A and B are: a family and its seed.
    pub inputs: String,
    /// SMs of each GPU the ring's products leave to the exchange.
    pub sms_left: u32,
    /// The persistent blocks lab 12's kernel launches (None where it does not run).
    pub lab12_blocks: Option<u32>,
}

/// What moves A's shards: the baseline's all-gather, and the ring's steps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Exchange {
    pub gather: Via,
    pub ring: Via,
}

/// One product on every rank: both ways checked, the parts and both ways timed.
#[derive(Clone, Debug, Serialize)]
pub struct ProductRun {
    pub product: ShardKernel,
    /// Each way's first run, then its last timed one, in the order they ran.
    pub checks: Vec<Check>,
    /// Timed samples of each way and part.
    pub reps: usize,
    /// Each part's median alone (milliseconds).
    pub parts: Parts,
    pub baseline: Stats,
    pub ring: Stats,
}

/// Every rank's C of one run of one way, against the rank's own f64 reference.
#[derive(Clone, Debug, Serialize)]
pub struct Check {
    pub way: RingWay,
    pub run: Run,
    pub passed: bool,
    /// The largest ‖ΔC‖ of the ranks as a share of its limit, and the reference it was
    /// checked against.
    pub worst_normwise: f64,
    pub reference: String,
    /// The ranks that failed, each with its verdict.
    pub failures: Vec<Failure>,
}

/// A rank whose C failed: its verdict, and the verdict's one-line summary.
#[derive(Clone, Debug, Serialize)]
pub struct Failure {
    pub rank: usize,
    pub summary: String,
    pub verdict: Verdict,
}

/// The two ways: gather, then multiply; or the ring, multiplying while passing shards on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RingWay {
    Baseline,
    Ring,
}

/// Which run of a way a check looked at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Run {
    First,
    LastTimed,
}

impl RingWay {
    pub fn name(self) -> &'static str {
        match self {
            RingWay::Baseline => "baseline",
            RingWay::Ring => "ring",
        }
    }
}

impl Run {
    pub fn name(self) -> &'static str {
        match self {
            Run::First => "first run",
            Run::LastTimed => "last timed run",
        }
    }
}

/// The figures a product's text computes from its fields and the header's, which the JSON
/// carries beside them. Rates are of the whole product on every GPU; a share is in percent.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct ProductDerived {
    /// Whether every check of both ways passed.
    pub passed: bool,
    /// One shard of A over a ring step's time, each GPU sending one and receiving one.
    pub ring_step_gb_s: f64,
    pub baseline_tflops: f64,
    pub ring_tflops: f64,
    /// The baseline's median over the ring's, and the most the parts alone allow.
    pub speedup: f64,
    pub best_speedup: f64,
    /// The least the ring can take, from the parts' medians (milliseconds), and what sets it.
    pub bound_ms: f64,
    pub bottleneck: RoundBottleneck,
    /// The ring's median as a share of its bound, and its time beyond the bound in each of the
    /// G − 1 later rounds (microseconds).
    pub ring_of_bound: f64,
    pub beyond_us_a_round: f64,
}

impl ProductDerived {
    /// What `run`'s text computes, on the ranks and shapes of `header`.
    pub fn of(header: &RunHeader, run: &ProductRun) -> ProductDerived {
        let g = header.ranks;
        let shard = header.shard;
        let whole = Shape { m: header.global.m, ..shard };
        let tflops = |ms: f64| (g as f64 * whole.flops()) / (ms * 1e9);
        let bytes = (4 * shard.m * shard.k) as f64;
        let (parts, ring) = (&run.parts, run.ring.median_ms);
        let bound = parts.ring_bound(g);
        ProductDerived {
            passed: run.checks.iter().all(|c| c.passed),
            ring_step_gb_s: bytes / parts.exchange / 1e6,
            baseline_tflops: tflops(run.baseline.median_ms),
            ring_tflops: tflops(ring),
            speedup: run.baseline.median_ms / ring,
            best_speedup: parts.best_speedup(g),
            bound_ms: bound,
            bottleneck: parts.ring_bottleneck(),
            ring_of_bound: 100.0 * ring / bound,
            beyond_us_a_round: 1e3 * overhead_per_round(ring, bound, g),
        }
    }
}

impl RingReport {
    /// Whether every check of every product passed.
    pub fn passed(&self) -> bool {
        self.products.iter().all(|p| p.checks.iter().all(|c| c.passed))
    }

    /// A product's block of the text, with the blank line that opens it.
    pub fn block<'a>(&'a self, run: &'a ProductRun) -> impl fmt::Display + 'a {
        Block { header: &self.header, run }
    }

    /// The part of a product's block after its checks: the parts, both ways and the model. A run
    /// that streams its text prints [`opening`] and each [`Check`] as it comes, then this.
    pub fn timed<'a>(&'a self, run: &'a ProductRun) -> impl fmt::Display + 'a {
        CheckedProduct { header: &self.header, run }
    }
}

/// The line that opens a product's block, with the blank line before it.
pub fn opening(product: ShardKernel) -> String {
    format!("\nproduct  {} on every rank\n", product.name())
}

impl fmt::Display for RingReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.header)?;
        for run in &self.products {
            write!(f, "{}", self.block(run))?;
        }
        Ok(())
    }
}

impl fmt::Display for RunHeader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (g, gpu) = (self.ranks, &self.gpu);
        let Shape { m, n, k } = self.shard;
        writeln!(f, "{} · C = A·B over several GPUs, the exchange hidden under the products", self.step)?;
        match self.simulated {
            true => writeln!(
                f,
                "device   {g} ranks simulated on one {gpu} (copies stand in for NCCL; times are not a multi-GPU speed)"
            )?,
            false => {
                let by = match self.exchange.ring {
                    Via::Copies => "the copy engines",
                    Via::Nccl => "NCCL's send and receive",
                };
                writeln!(f, "devices  {g} × {gpu} · NCCL {}", self.nccl.as_deref().unwrap_or("unknown"))?;
                writeln!(f, "exchange the baseline's all-gather by NCCL; the ring's shards by {by}")?;
            }
        }
        let Shape { m: gm, n: gn, .. } = self.global;
        writeln!(
            f,
            "shape    M={gm} N={gn} K={k}: A's rows and B's columns in {g} shards of {m}×{k} and {k}×{n}"
        )?;
        writeln!(f, "         each rank ends with C's columns of its B, {gm} rows × {n}")?;
        writeln!(f, "inputs   {}", self.inputs)?;
        let blocks =
            self.lab12_blocks.map_or(String::new(), |b| format!("; lab 12 runs {b} persistent blocks"));
        writeln!(f, "sms      {} of each GPU's {} SMs left to the exchange{blocks}", self.sms_left, self.sms)
    }
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (way, which) = (self.way.name(), self.run.name());
        for fail in &self.failures {
            writeln!(f, "verify   {way} ({which}), rank {}: FAIL · {}", fail.rank, fail.summary)?;
        }
        if self.passed {
            writeln!(
                f,
                "verify   {way} ({which}): PASS on every rank · worst ‖ΔC‖ at {:.2} of the limit · {}",
                self.worst_normwise, self.reference
            )?;
        }
        Ok(())
    }
}

/// One product's block of the text: it needs the header's ranks and shapes.
struct Block<'a> {
    header: &'a RunHeader,
    run: &'a ProductRun,
}

impl fmt::Display for Block<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", opening(self.run.product))?;
        for check in &self.run.checks {
            write!(f, "{check}")?;
        }
        write!(f, "{}", CheckedProduct { header: self.header, run: self.run })
    }
}

/// A product's block after its checks.
struct CheckedProduct<'a> {
    header: &'a RunHeader,
    run: &'a ProductRun,
}

impl fmt::Display for CheckedProduct<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (header, run) = (self.header, self.run);
        let (parts, d) = (&run.parts, ProductDerived::of(header, run));
        writeln!(f, "parts    alone, slowest GPU, median of {}:", run.reps)?;
        writeln!(f, "         a shard's product   {:8.3} ms", parts.product)?;
        let per = if header.gpus == 1 { "a rank, the ranks sharing one GPU" } else { "a GPU each way" };
        writeln!(
            f,
            "         a ring step         {:8.3} ms  ({:.0} GB/s {per})",
            parts.exchange, d.ring_step_gb_s
        )?;
        let gather = match header.exchange.gather {
            Via::Nccl => "NCCL's all-gather ",
            Via::Copies => "all-gather, copies",
        };
        writeln!(f, "         {gather}  {:8.3} ms", parts.all_gather)?;
        writeln!(f, "         the gathered product {:8.3} ms", parts.whole)?;
        writeln!(
            f,
            "baseline all-gather, then product   {} · {:.0} TFLOP/s in all",
            spread(&run.baseline),
            d.baseline_tflops
        )?;
        writeln!(
            f,
            "ring     product under exchange     {} · {:.0} TFLOP/s in all",
            spread(&run.ring),
            d.ring_tflops
        )?;
        writeln!(
            f,
            "speedup  {:.2}× the baseline (the parts alone allow {:.2}×)",
            d.speedup, d.best_speedup
        )?;
        writeln!(
            f,
            "model    ring ≥ product + (G−1)·max(product, ring step) = {:.3} ms (the parts' medians), set by {}",
            d.bound_ms,
            d.bottleneck.sentence()
        )?;
        writeln!(
            f,
            "         the ring at {:.1}% of its bound; {:.1} µs a round beyond it",
            d.ring_of_bound, d.beyond_us_a_round
        )
    }
}

fn spread(s: &Stats) -> String {
    format!("{:8.3} ms (min {:.3}, max {:.3})", s.median_ms, s.min_ms, s.max_ms)
}

/// The report's JSON: `schema`, the header's fields, each product with its `derived` figures,
/// and `derived` for the whole run.
#[derive(Serialize)]
struct RingJson<'a> {
    schema: u32,
    #[serde(flatten)]
    header: &'a RunHeader,
    products: Vec<ProductJson<'a>>,
    derived: RunDerived,
}

#[derive(Serialize)]
struct ProductJson<'a> {
    #[serde(flatten)]
    run: &'a ProductRun,
    derived: ProductDerived,
}

/// The whole run's verdict: whether every check of every product passed.
#[derive(Serialize)]
struct RunDerived {
    passed: bool,
}

impl Emit for RingReport {
    fn json_text(&self, pretty: bool) -> String {
        let products = self
            .products
            .iter()
            .map(|run| ProductJson { run, derived: ProductDerived::of(&self.header, run) })
            .collect();
        let json = RingJson {
            schema: common::emit::SCHEMA,
            header: &self.header,
            products,
            derived: RunDerived { passed: self.passed() },
        };
        common::emit::to_json_text(&json, pretty)
    }
}

#[cfg(test)]
mod tests;

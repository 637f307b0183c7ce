//! The program: the ranks set up, each way run once and verified, then timed with its parts,
//! and one report.

use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::Parser;
use cudarc::driver::CudaEvent;
use cudarc::driver::sys::CUevent_flags;

use common::matrix::Family;
use common::reference::Reference;
use common::timing::Stats;
use common::{Inputs, Matrix, Shape};

use crate::device::{Device, Product};
use crate::model::{Parts, overhead_per_round};
use crate::ranks::{Link, Ranks, Via};

#[derive(Parser, Debug)]
#[command(
    name = crate::NAME,
    about = "Step 13: C = A·B over several GPUs, A's rows and B's columns sharded; the ring \
             multiplies each shard of A while passing it on, against NCCL's all-gather then the product",
    after_help = "Default shard: 1024×4096×4096 per GPU (-m rows of A, -n columns of B, depth -k).\n\
                  Chapter: docs/src/step13.md"
)]
pub struct Args {
    /// GPUs to spread the product over, one rank each (default: every GPU of the machine).
    #[arg(long, value_name = "G", value_parser = clap::value_parser!(u32).range(2..=64))]
    pub gpus: Option<u32>,
    /// Run G ranks on one GPU, device copies standing in for NCCL: checks the schedule, not the
    /// speed of several GPUs.
    #[arg(long, value_name = "G", conflicts_with = "gpus", value_parser = clap::value_parser!(u32).range(1..=16))]
    pub simulate: Option<u32>,
    /// Rows of A each GPU holds.
    #[arg(short = 'm', value_name = "M", default_value_t = 1024, value_parser = common::cli::parse_dim)]
    pub m: usize,
    /// Columns of B (and of C) each GPU holds.
    #[arg(short = 'n', value_name = "N", default_value_t = 4096, value_parser = common::cli::parse_dim)]
    pub n: usize,
    /// The depth of the product.
    #[arg(short = 'k', value_name = "K", default_value_t = 4096, value_parser = common::cli::parse_dim)]
    pub k: usize,
    /// Each GPU's product: lab12, cublas, or both.
    #[arg(long, value_name = "WHICH", default_value = "both", value_parser = ["lab12", "cublas", "both"])]
    pub product: String,
    /// What moves the ring's shards: copies (the copy engines, which take no SM) or nccl (its
    /// send and receive, kernels on SMs). The baseline always gathers by NCCL; --simulate copies.
    #[arg(long, value_name = "HOW", default_value = "copies", value_parser = ["nccl", "copies"])]
    pub exchange: String,
    /// SMs each GPU's ring products leave free for the exchange's kernels: NCCL's run on SMs
    /// (default 16), the copy engines take none (default 0).
    #[arg(long, value_name = "SMS", value_parser = clap::value_parser!(u32).range(0..=64))]
    pub leave_sms: Option<u32>,
    /// A parameter of lab 12's kernel for the ring's products, which share the GPU with the
    /// exchange (e.g. BM=128: smaller tiles, for fewer SMs); the baseline keeps the defaults.
    #[arg(long = "ring-param", value_name = "NAME=VALUE", value_parser = ring_param)]
    pub ring_params: Vec<(String, u32)>,
    /// The inputs' family (uniform, normal, …; see `step10_any_shape --help`).
    #[arg(long, value_name = "KIND", value_parser = Family::parse)]
    pub inputs: Option<Family>,
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Timed samples of each way and part.
    #[arg(long, value_name = "N", default_value_t = 20, value_parser = clap::value_parser!(u32).range(3..=1000))]
    pub reps: u32,
}

fn ring_param(s: &str) -> Result<(String, u32), String> {
    let (name, value) = s.split_once('=').ok_or_else(|| format!("`{s}` is not NAME=VALUE"))?;
    let value = value.parse().map_err(|_| format!("`{value}` is not a whole number"))?;
    Ok((name.to_owned(), value))
}

/// Runs the program; Ok(false) where a result failed verification.
pub fn run(args: &Args) -> Result<bool> {
    let products: Vec<Product> = match args.product.as_str() {
        "lab12" => vec![Product::Lab12],
        "cublas" => vec![Product::Cublas],
        _ => vec![Product::Lab12, Product::Cublas],
    };
    // Where the ranks run, and how shards travel between them.
    let (ordinals, placement, simulated) = match args.simulate {
        Some(g) => (vec![0], vec![0; g as usize], true),
        None => {
            let count = gpu_count()?;
            let g = args.gpus.map_or(count, |g| g as usize);
            if g < 2 || g > count {
                bail!(
                    "this machine has {count} GPU(s) and a run over GPUs needs from 2 to that many (--gpus); \
                     --simulate G runs G ranks on one GPU"
                );
            }
            // Before any GPU is opened: NCCL may need the program started again to be found.
            crate::nccl::find()?;
            ((0..g).collect(), (0..g).collect(), false)
        }
    };
    let g = placement.len();
    let shard = Shape::new(args.m, args.n, args.k).map_err(anyhow::Error::msg)?;
    let global = Shape::new(g * args.m, g * args.n, args.k).map_err(anyhow::Error::msg)?;
    let whole = Shape { m: global.m, ..shard };

    if simulated && args.exchange == "nccl" {
        bail!(
            "--simulate runs its ranks on one GPU, where copies stand in for NCCL: leave out --exchange nccl"
        );
    }
    let leave = args.leave_sms.unwrap_or(if simulated || args.exchange == "copies" { 0 } else { 16 });
    let devices = ordinals
        .iter()
        .map(|&o| Device::open(o, (shard, whole), leave, &args.ring_params))
        .collect::<Result<Vec<_>>>()?;
    let products: Vec<Product> = products.into_iter().filter(|&p| devices.iter().all(|d| d.has(p))).collect();
    if products.is_empty() {
        bail!("lab 12's kernel needs a Hopper GPU (sm_90); run with --product cublas on this one");
    }
    let ring = match simulated || args.exchange == "copies" {
        true => Via::Copies,
        false => Via::Nccl,
    };
    if ring == Via::Copies {
        crate::device::enable_peer_access(&devices)?;
    }
    let nccl = match simulated {
        true => None,
        false => Some(crate::nccl::Comms::all(&ordinals)?),
    };
    let link = Link { nccl, ring };
    let inputs = match args.inputs {
        Some(family) => Inputs::family(global, args.seed, family),
        None => Inputs::random(global, args.seed),
    };
    let (a_shards, b_shards) = shards(&inputs, g);
    let mut ranks = Ranks::new(devices, &placement, link, shard, (&a_shards, &b_shards))?;

    print_header(&ranks, &inputs, simulated)?;
    let blocks = ranks.devices[0]
        .lab12_blocks()
        .map_or(String::new(), |b| format!("; lab 12 runs {b} persistent blocks"));
    println!(
        "sms      {} of each GPU's {} SMs left to the exchange{blocks}",
        leave, ranks.devices[0].gpu.info.sms
    );
    let references = references(&ranks, &inputs, &b_shards)?;
    let mut passed = true;
    for product in products {
        passed &= measure(&mut ranks, product, &references, args.reps as usize)?;
    }
    Ok(passed)
}

fn gpu_count() -> Result<usize> {
    if let Some(why) = common::run::no_gpu() {
        bail!("{} needs NVIDIA GPUs and their driver, and {why}", crate::NAME);
    }
    Ok(cudarc::driver::CudaContext::device_count().context("counting the GPUs")? as usize)
}

/// A's rows and B's columns, one shard each per rank.
fn shards(inputs: &Inputs, g: usize) -> (Vec<Vec<f32>>, Vec<Vec<f32>>) {
    let Shape { m, n, k } = inputs.shape;
    let (m, n) = (m / g, n / g);
    let a = inputs.a.data.chunks(m * k).map(<[f32]>::to_vec).collect();
    let b = (0..g)
        .map(|r| {
            inputs.b.data.chunks(g * n).flat_map(|row| row[r * n..(r + 1) * n].iter().copied()).collect()
        })
        .collect();
    (a, b)
}

/// Each rank's reference: the whole A times its columns of B, in f64 by cuBLAS DGEMM on its GPU.
fn references(ranks: &Ranks, inputs: &Inputs, b_shards: &[Vec<f32>]) -> Result<Vec<Reference>> {
    (0..ranks.ranks.len())
        .map(|r| {
            let device = &ranks.devices[ranks.ranks[r].device];
            let b = Matrix { rows: inputs.shape.k, cols: ranks.shard.n, data: b_shards[r].clone() };
            let own = Inputs::from_matrices(inputs.a.clone(), b, inputs.source.clone())
                .map_err(anyhow::Error::msg)?;
            common::cublas::Blas::new(device.gpu.stream.clone())?.reference(&own)
        })
        .collect()
}

fn print_header(ranks: &Ranks, inputs: &Inputs, simulated: bool) -> Result<()> {
    let info = &ranks.devices[0].gpu.info;
    let g = ranks.ring.ranks;
    let Shape { m, n, k } = ranks.shard;
    println!("{} · C = A·B over several GPUs, the exchange hidden under the products", crate::NAME);
    match simulated {
        true => println!(
            "device   {g} ranks simulated on one {} (copies stand in for NCCL; times are not a multi-GPU speed)",
            info.name
        ),
        false => {
            let by = match ranks.link().1 {
                Via::Copies => "the copy engines",
                Via::Nccl => "NCCL's send and receive",
            };
            println!("devices  {g} × {} · NCCL {}", info.name, crate::nccl::version()?);
            println!("exchange the baseline's all-gather by NCCL; the ring's shards by {by}");
        }
    }
    println!(
        "shape    M={} N={} K={k}: A's rows and B's columns in {g} shards of {m}×{k} and {k}×{n}",
        g * m,
        g * n
    );
    println!("         each rank ends with C's columns of its B, {} rows × {n}", g * m);
    println!("inputs   {}", inputs.source);
    Ok(())
}

/// Both ways run once and verified, then timed beside their parts; the report's block.
fn measure(ranks: &mut Ranks, product: Product, references: &[Reference], reps: usize) -> Result<bool> {
    let g = ranks.ring.ranks;
    println!("\nproduct  {} on every rank", product.name());
    let mut passed = true;
    for ring in [false, true] {
        ranks.poison()?;
        match ring {
            false => ranks.baseline(product)?,
            true => ranks.ring(product)?,
        }
        ranks.synchronize()?;
        passed &= verify(ranks, product, references, ring, "first run")?;
    }
    let parts = Parts {
        product: time(ranks, reps, |r| r.products_alone(product))?.median_ms,
        exchange: time(ranks, reps, |r| r.exchange_alone())?.median_ms,
        all_gather: time(ranks, reps, |r| r.gather_alone())?.median_ms,
        whole: time(ranks, reps, |r| r.whole_alone(product))?.median_ms,
    };
    ranks.poison()?;
    let baseline = time(ranks, reps, |r| r.baseline(product))?;
    passed &= verify(ranks, product, references, false, "last timed run")?;
    ranks.poison()?;
    let ring = time(ranks, reps, |r| r.ring(product))?;
    passed &= verify(ranks, product, references, true, "last timed run")?;

    let bytes = (4 * ranks.shard.m * ranks.shard.k) as f64;
    let tflops = |ms: f64| (g as f64 * ranks.whole_shape().flops()) / (ms * 1e9);
    println!("parts    alone, slowest GPU, median of {reps}:");
    println!("         a shard's product   {:8.3} ms", parts.product);
    let per = if ranks.devices.len() == 1 { "a rank, the ranks sharing one GPU" } else { "a GPU each way" };
    println!(
        "         a ring step         {:8.3} ms  ({:.0} GB/s {per})",
        parts.exchange,
        bytes / parts.exchange / 1e6
    );
    let gather = if ranks.link().0 { "NCCL's all-gather " } else { "all-gather, copies" };
    println!("         {gather}  {:8.3} ms", parts.all_gather);
    println!("         the gathered product {:8.3} ms", parts.whole);
    println!(
        "baseline all-gather, then product   {} · {:.0} TFLOP/s in all",
        spread(&baseline),
        tflops(baseline.median_ms)
    );
    println!(
        "ring     product under exchange     {} · {:.0} TFLOP/s in all",
        spread(&ring),
        tflops(ring.median_ms)
    );
    println!(
        "speedup  {:.2}× the baseline (the parts alone allow {:.2}×)",
        baseline.median_ms / ring.median_ms,
        parts.best_speedup(g)
    );
    let bound = parts.ring_bound(g);
    println!(
        "model    ring ≥ product + (G−1)·max(product, ring step) = {bound:.3} ms (the parts' medians), set by {}",
        parts.ring_limit()
    );
    println!(
        "         the ring at {:.1}% of its bound; {:.1} µs a round beyond it",
        100.0 * ring.median_ms / bound,
        1e3 * overhead_per_round(ring.median_ms, bound, g)
    );
    Ok(passed)
}

/// Every rank's column block of C checked against its reference; one line.
fn verify(
    ranks: &Ranks,
    product: Product,
    references: &[Reference],
    ring: bool,
    which: &str,
) -> Result<bool> {
    let way = if ring { "ring" } else { "baseline" };
    let mut worst = None;
    let mut passed = true;
    for (r, reference) in references.iter().enumerate() {
        let c = ranks.result(r, ring)?;
        let shape = Shape { m: ranks.whole_shape().m, ..ranks.shard };
        let verdict = common::verify::verify(shape, &c, reference, product.precision());
        if !verdict.passed() {
            println!("verify   {way} ({which}), rank {r}: FAIL · {}", verdict.summary());
            passed = false;
        }
        let ratio = verdict.normwise.relative() / verdict.normwise.relative_limit();
        if worst.is_none_or(|(w, _)| ratio > w) {
            worst = Some((ratio, verdict));
        }
    }
    if let (true, Some((ratio, verdict))) = (passed, worst) {
        println!(
            "verify   {way} ({which}): PASS on every rank · worst ‖ΔC‖ at {ratio:.2} of the limit · {}",
            verdict.source
        );
    }
    Ok(passed)
}

fn spread(s: &Stats) -> String {
    format!("{:8.3} ms (min {:.3}, max {:.3})", s.median_ms, s.min_ms, s.max_ms)
}

// ANCHOR: time
/// Times `run` on all ranks at once: each sample a batch of runs queued behind a hold on every
/// GPU, between events on each GPU's stream; a sample is the slowest GPU's time per run.
fn time<F>(ranks: &mut Ranks, reps: usize, mut run: F) -> Result<Stats>
where
    F: FnMut(&mut Ranks) -> Result<()>,
{
    // Warm-up, then one run on the host's clock to size the batches.
    for _ in 0..3 {
        run(ranks)?;
    }
    ranks.synchronize()?;
    let clock = Instant::now();
    run(ranks)?;
    ranks.synchronize()?;
    let one_ms = clock.elapsed().as_secs_f64() * 1e3;
    let batch = ((common::timing::BATCH_MS / one_ms).ceil() as usize).clamp(1, 32);
    let event = |r: &Ranks, d: usize| -> Result<CudaEvent> {
        Ok(r.devices[d].gpu.ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?)
    };
    let devices = ranks.devices.len();
    let starts = (0..devices).map(|d| event(ranks, d)).collect::<Result<Vec<_>>>()?;
    let stops = (0..devices).map(|d| event(ranks, d)).collect::<Result<Vec<_>>>()?;
    let mut hold_ms = 1.5 * one_ms * batch as f64 + 0.05;
    let mut samples = Vec::with_capacity(reps);
    while samples.len() < reps {
        for (d, start) in starts.iter().enumerate() {
            let gpu = &ranks.devices[d].gpu;
            gpu.hold()?.queue(&gpu.stream, hold_ms)?;
            start.record(&gpu.stream)?;
        }
        let queued = Instant::now();
        for _ in 0..batch {
            run(ranks)?;
        }
        let host_ms = queued.elapsed().as_secs_f64() * 1e3;
        for (d, stop) in stops.iter().enumerate() {
            stop.record(&ranks.devices[d].gpu.stream)?;
        }
        ranks.synchronize()?;
        // A host slower than its hold started the GPUs late: take the sample again, held longer.
        if host_ms > hold_ms && hold_ms < common::stream_hold::HOLD_MAX_MS {
            hold_ms = (1.5 * host_ms).min(common::stream_hold::HOLD_MAX_MS);
            continue;
        }
        let mut slowest = 0.0f64;
        for (start, stop) in starts.iter().zip(&stops) {
            slowest = slowest.max(f64::from(start.elapsed_ms(stop)?));
        }
        samples.push(slowest / batch as f64);
    }
    Stats::from_samples(samples, batch).context("no samples were timed")
}
// ANCHOR_END: time

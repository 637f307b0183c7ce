//! The program: the ranks set up, each way run once and verified, then timed with its parts,
//! and one report ([`Report`]), its text printed block by block as the products finish.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, anyhow, bail};
use clap::Parser;
use cudarc::driver::CudaEvent;
use cudarc::driver::sys::CUevent_flags;

use common::cli::Format;
use common::emit::Emit;
use common::matrix::Family;
use common::reference::Reference;
use common::timing::Stats;
use common::{Inputs, Matrix, Shape};

use crate::bound::Parts;
use crate::cpu_ring::shards;
use crate::rank_gpu::{RankGpu, ShardKernel};
use crate::ranks::{Link, Ranks, Via};
use crate::report::{Check, Exchange, Failure, ProductRun, RingReport, RingWay, Run, RunHeader, opening};

#[derive(Parser, Debug)]
#[command(
    name = crate::NAME,
    about = "Step 13: C = A·B over several GPUs, A's rows and B's columns sharded; the ring \
             multiplies each shard of A while passing it on, against NCCL's all-gather then the product",
    after_help = "Default shard: 1024×4096×4096 per GPU (-m rows of A, -n columns of B, depth -k).\n\
                  Chapter: docs/src/step13.md"
)]
pub struct RingArgs {
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
    /// How the report is printed: text (the default), or json, the same report as one JSON
    /// object with a schema version (the chapter describes it).
    #[arg(long, value_name = "FORMAT", value_enum)]
    pub format: Option<Format>,
    /// Also write the report as JSON, on one line, to FILE, while it is printed as --format
    /// says: how a record keeps its JSON beside its log.
    #[arg(long, value_name = "FILE")]
    pub json_to: Option<PathBuf>,
    /// Append this run's record to FILE.jsonl, one JSON line: the command as typed (without
    /// --record), its exit status, its wall time, its report (as --json-to writes it; null
    /// where it printed none) and the one-sentence error it failed with (null where it passed).
    #[arg(long, value_name = "FILE.jsonl")]
    pub record: Option<PathBuf>,
}

/// The shard each GPU holds unless -m, -n and -k say otherwise.
const DEFAULT_SHARD: (usize, usize, usize) = (1024, 4096, 4096);

fn ring_param(s: &str) -> Result<(String, u32), String> {
    let (name, value) = s.split_once('=').ok_or_else(|| format!("`{s}` is not NAME=VALUE"))?;
    let value = value.parse().map_err(|_| format!("`{value}` is not a whole number"))?;
    Ok((name.to_owned(), value))
}

/// Runs the program; Ok(false) where a result failed verification.
pub fn run(args: &RingArgs) -> Result<bool> {
    // A file that cannot be written stops the run before it starts, not after; a run that fails
    // leaves no empty report where it made the file.
    common::emit::guarding_json_to(args.json_to.as_deref(), || run_claimed(args))
}

/// [`run`], once `--json-to`'s file is known to be writable.
fn run_claimed(args: &RingArgs) -> Result<bool> {
    let products: Vec<ShardKernel> = match args.product.as_str() {
        "lab12" => vec![ShardKernel::Lab12],
        "cublas" => vec![ShardKernel::Cublas],
        _ => vec![ShardKernel::Lab12, ShardKernel::Cublas],
    };
    // Where the ranks run, and how shards travel between them.
    if args.simulate.is_some() && args.exchange == "nccl" {
        bail!(
            "--simulate runs its ranks on one GPU, where copies stand in for NCCL: leave out --exchange nccl"
        );
    }
    // Without a GPU, the simulated ring's schedule runs on the CPU.
    if let Some(g) = args.simulate.filter(|_| common::gpu::count().is_err()) {
        if args.format == Some(Format::Json) {
            bail!("the ring on the CPU prints its checks as text only: leave out --format json");
        }
        let shard = (args.m, args.n, args.k);
        return crate::cpu_ring::run(g as usize, (shard, shard == DEFAULT_SHARD), args.inputs, args.seed);
    }
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
    crate::ring_memory::check_host(shard, g, common::run::host_memory_available())?;

    let leave = args.leave_sms.unwrap_or(if simulated || args.exchange == "copies" { 0 } else { 16 });
    let devices = ordinals
        .iter()
        .map(|&o| RankGpu::open(o, (shard, whole), leave, &args.ring_params))
        .collect::<Result<Vec<_>>>()?;
    for (d, device) in devices.iter().enumerate() {
        let free =
            device.gpu.ctx.mem_get_info().map_or(device.gpu.info.total_mem as u64, |(free, _)| free as u64);
        let ranks = placement.iter().filter(|&&p| p == d).count();
        crate::ring_memory::check_device(shard, g, ranks, free, &device.gpu.info.name)?;
    }
    let products: Vec<ShardKernel> =
        products.into_iter().filter(|&p| devices.iter().all(|d| d.has(p))).collect();
    if products.is_empty() {
        bail!("lab 12's kernel needs a Hopper GPU (sm_90); run with --product cublas on this one");
    }
    let ring = match simulated || args.exchange == "copies" {
        true => Via::Copies,
        false => Via::Nccl,
    };
    if ring == Via::Copies {
        crate::rank_gpu::enable_peer_access(&devices)?;
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

    let info = &ranks.devices[0].gpu.info;
    let header = RunHeader {
        step: crate::NAME.to_owned(),
        ranks: g,
        gpus: ranks.devices.len(),
        simulated,
        gpu: info.name.clone(),
        sms: info.sms,
        nccl: if simulated { None } else { Some(crate::nccl::version()?) },
        exchange: Exchange { gather: if ranks.link().0 { Via::Nccl } else { Via::Copies }, ring },
        global,
        shard,
        inputs: inputs.source.clone(),
        sms_left: leave,
        lab12_blocks: ranks.devices[0].lab12_blocks(),
    };
    // The text streams as the run goes: the header now, each check as it is made (a run that
    // stops in its timing still shows how its first runs verified), each product's timed part
    // once measured. The JSON is one value, printed at the end.
    let text = args.format.unwrap_or_default() == Format::Text;
    if text {
        print!("{header}");
    }
    let mut report = RingReport { header, products: Vec::new() };
    let references = references(&ranks, &inputs, &b_shards)?;
    for product in products {
        let run = measure(&mut ranks, product, &references, args.reps as usize, text)?;
        if text {
            print!("{}", report.timed(&run));
        }
        report.products.push(run);
    }
    if !text {
        println!("{}", report.json_text(true));
    }
    common::record::keep(|| report.json_text(false));
    if let Some(path) = &args.json_to {
        common::emit::write_json(&report, path)?;
    }
    Ok(report.passed())
}

fn gpu_count() -> Result<usize> {
    common::gpu::count()
        .map_err(|why| anyhow!("{} needs NVIDIA GPUs and their driver, and {why}", crate::NAME))
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

/// Both ways run once and verified, then timed beside their parts; the report's block. Where
/// `text`, the block's opening line and each check are printed as they come.
fn measure(
    ranks: &mut Ranks,
    product: ShardKernel,
    references: &[Reference],
    reps: usize,
    text: bool,
) -> Result<ProductRun> {
    let mut checks = Vec::with_capacity(4);
    let mut check = |c: Check| {
        if text {
            print!("{c}");
        }
        checks.push(c);
    };
    if text {
        print!("{}", opening(product));
    }
    for way in [RingWay::Baseline, RingWay::Ring] {
        ranks.poison()?;
        match way {
            RingWay::Baseline => ranks.baseline(product)?,
            RingWay::Ring => ranks.ring(product)?,
        }
        ranks.synchronize()?;
        check(verify(ranks, product, references, way, Run::First)?);
    }
    let parts = Parts {
        product: time(ranks, reps, |r| r.products_alone(product))?.median_ms,
        exchange: time(ranks, reps, |r| r.exchange_alone())?.median_ms,
        all_gather: time(ranks, reps, |r| r.gather_alone())?.median_ms,
        whole: time(ranks, reps, |r| r.whole_alone(product))?.median_ms,
    };
    ranks.poison()?;
    let baseline = time(ranks, reps, |r| r.baseline(product))?;
    check(verify(ranks, product, references, RingWay::Baseline, Run::LastTimed)?);
    ranks.poison()?;
    let ring = time(ranks, reps, |r| r.ring(product))?;
    check(verify(ranks, product, references, RingWay::Ring, Run::LastTimed)?);
    Ok(ProductRun { product, checks, reps, parts, baseline, ring })
}

/// Every rank's column block of C checked against its reference: the report's line.
fn verify(
    ranks: &Ranks,
    product: ShardKernel,
    references: &[Reference],
    way: RingWay,
    run: Run,
) -> Result<Check> {
    let mut worst = (0.0f64, "");
    let mut failures = Vec::new();
    for (r, reference) in references.iter().enumerate() {
        let c = ranks.result(r, way == RingWay::Ring)?;
        let shape = Shape { m: ranks.whole_shape().m, ..ranks.shard };
        let verdict = common::verify::verify(shape, &c, reference, product.precision());
        let ratio = verdict.normwise.relative() / verdict.normwise.relative_limit();
        if r == 0 || ratio > worst.0 {
            worst = (ratio, verdict.source);
        }
        if !verdict.passed() {
            failures.push(Failure { rank: r, summary: verdict.summary(), verdict });
        }
    }
    let (worst_normwise, reference) = (worst.0, worst.1.to_owned());
    Ok(Check { way, run, passed: failures.is_empty(), worst_normwise, reference, failures })
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

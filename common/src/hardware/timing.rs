//! Timing: CUDA events around kernel launches, and the statistics of the samples.

use std::time::Instant;

use anyhow::{Context, Result};
use cudarc::driver::sys::CUevent_flags;

use crate::clock::Held;
use crate::gpu::Gpu;
pub use crate::stream_hold::{HOLD_MAX_MS, HOLD_MIN_MS, Hold};

/// Median and spread of repeated timings, in milliseconds per launch.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Stats {
    pub median_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    /// Timed samples.
    pub samples: usize,
    /// Back-to-back launches inside each sample (1 for CPU work).
    pub batch: usize,
    /// The SM clock and power the GPU held over the samples, where NVML could read them.
    pub held: Option<Held>,
}

impl Stats {
    /// No samples: a run that was not timed (on the emulator).
    pub const UNTIMED: Stats =
        Stats { median_ms: 0.0, min_ms: 0.0, max_ms: 0.0, samples: 0, batch: 1, held: None };

    /// `None` for no samples; each sample is the time of one launch (or the mean of a batch).
    pub fn from_samples(mut samples: Vec<f64>, batch: usize) -> Option<Self> {
        if samples.is_empty() {
            return None;
        }
        samples.sort_by(f64::total_cmp);
        let n = samples.len();
        let median_ms = if n % 2 == 1 { samples[n / 2] } else { 0.5 * (samples[n / 2 - 1] + samples[n / 2]) };
        Some(Self { median_ms, min_ms: samples[0], max_ms: samples[n - 1], samples: n, batch, held: None })
    }

    /// Throughput at the median time.
    pub fn gflops(&self, flops: f64) -> f64 {
        flops / (self.median_ms * 1e-3) / 1e9
    }
}

/// How many times to run: `reps` samples if the user fixed it, otherwise enough for a stable
/// median (at least `MIN_REPS`, and about `TARGET_SECONDS` of kernel time, capped at
/// `MAX_REPS`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sampling {
    pub warmup: usize,
    pub reps: Option<usize>,
}

pub const MIN_REPS: usize = 20;
pub const MAX_REPS: usize = 1000;
pub const TARGET_SECONDS: f64 = 0.5;
/// A timed batch of launches lasts at least this long, so that what happens once per batch
/// (the host's first launch call, the GPU waking from idle) is under 1% of it.
pub const BATCH_MS: f64 = 2.0;
/// At most this many launches a batch. A stream queues only a few hundred launches before the
/// host has to wait (on an H200, batches of 190 queued freely and batches of 512 did not), and
/// a host waiting for the GPU lengthens the hold it measures itself by.
pub const MAX_BATCH: usize = 128;

impl Sampling {
    pub fn new(reps: Option<usize>) -> Self {
        Self { warmup: 3, reps }
    }

    /// Samples for a run whose single sample takes `sample_ms`.
    pub fn reps_for(&self, sample_ms: f64) -> usize {
        self.reps.unwrap_or_else(|| {
            let fit = (TARGET_SECONDS * 1e3 / sample_ms.max(1e-6)) as usize;
            fit.clamp(MIN_REPS, MAX_REPS)
        })
    }

    /// Launches per sample for a kernel whose launch takes about `one_ms`.
    pub fn batch_for(&self, one_ms: f64) -> usize {
        ((BATCH_MS / one_ms.max(1e-6)).ceil() as usize).clamp(1, MAX_BATCH)
    }
}

/// What one timed batch took.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Batch {
    /// Between the events on the GPU, for the whole batch.
    pub gpu_ms: f64,
    /// On the host, to queue the batch.
    pub host_ms: f64,
    /// The hold it was queued behind; a host slower than that may have left the GPU waiting.
    pub hold_ms: f64,
}

impl Batch {
    /// The host queued the whole batch before the hold ended: nothing in it waited for the host.
    pub fn clean(&self) -> bool {
        self.host_ms < self.hold_ms
    }
}

/// Times `count` launches queued back to back between two events, behind a hold sized for
/// host calls of `host_per_launch_ms` (see [`Hold`]): the first launch starts as the start
/// event is passed, and each of the others as the one before it ends.
pub fn time_launches(
    gpu: &Gpu,
    host_per_launch_ms: f64,
    count: usize,
    mut launch: impl FnMut() -> Result<()>,
) -> Result<Batch> {
    let stream = &gpu.stream;
    let start =
        gpu.ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT)).context("creating a timing event")?;
    let stop = gpu.ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT)).context("creating a timing event")?;
    let hold_ms = Hold::length(host_per_launch_ms, count);
    gpu.hold()?.queue(stream, hold_ms)?;
    start.record(stream)?;
    let queued = Instant::now();
    for _ in 0..count {
        launch()?;
    }
    let host_ms = queued.elapsed().as_secs_f64() * 1e3;
    stop.record(stream)?;
    super::watchdog::wait(gpu, count).context("waiting for the timed launches")?;
    Ok(Batch { gpu_ms: f64::from(start.elapsed_ms(&stop)?), host_ms, hold_ms })
}

/// GPU time the warm-up runs for at least: long enough for the clocks to leave their idle state.
pub const WARMUP_MS: f64 = 100.0;
/// Host time after which the warm-up stops all the same.
pub const WARMUP_WALL_MS: f64 = 1000.0;
/// Times a sample is taken again when the host outlasted its hold.
pub const RETRIES: usize = 2;

/// Times `launch` on the GPU: warm-up first (module load, clocks ramping, caches), then samples
/// of back-to-back products between two events, each sample long enough ([`BATCH_MS`]) that
/// the launch gaps average out, and queued behind a [`Hold`] so that the host's launch calls
/// stay outside the measured time. A sample is the mean time of one launch in its batch; one
/// that the host outlasted its hold for is taken again. While the samples are timed, NVML reads
/// the SM clock and the power on a thread of their own ([`crate::clock`]), and each step of
/// the driver's energy counter: the mean power between its first and last step in the stretch,
/// over the stretch's time and its launches, is one product's energy (the short holds between
/// batches included; see [`crate::clock::joules_per_launch`]).
pub fn time_gpu(gpu: &Gpu, sampling: Sampling, mut launch: impl FnMut() -> Result<()>) -> Result<Stats> {
    // The host's time per launch call, measured on each batch; a generous guess to start.
    let mut host_per_launch = 0.02;
    // Launches run so far, a retried batch's included: the energy counter sees them all.
    let launched = std::cell::Cell::new(0usize);
    let mut timed = |count: usize| -> Result<f64> {
        let mut tries = 0;
        loop {
            let b = time_launches(gpu, host_per_launch, count, &mut launch)?;
            launched.set(launched.get() + count);
            host_per_launch = b.host_ms / count as f64;
            tries += 1;
            if b.clean() || tries > RETRIES {
                return Ok(b.gpu_ms);
            }
        }
    };
    let mut per_launch = f64::INFINITY;
    for _ in 0..sampling.warmup.max(1) {
        per_launch = per_launch.min(timed(1)?);
    }
    let mut batch = sampling.batch_for(per_launch);
    let mut warm = 0.0;
    let started = Instant::now();
    // A slow host (a sanitizer, say) ends the warm-up after WARMUP_WALL_MS of its own time.
    while warm < WARMUP_MS && started.elapsed().as_secs_f64() * 1e3 < WARMUP_WALL_MS {
        let ms = timed(batch)?;
        (warm, per_launch) = (warm + ms, ms / batch as f64);
        batch = sampling.batch_for(per_launch);
    }
    let samples = sampling.reps_for(per_launch * batch as f64);
    let sampler = gpu.clocks.as_ref().ok().map(|c| c.sample());
    let before = launched.get();
    let samples = (0..samples).map(|_| Ok(timed(batch)? / batch as f64)).collect::<Result<Vec<_>>>();
    let held = sampler.and_then(|s| s.stop(launched.get() - before));
    let stats = Stats::from_samples(samples?, batch).context("no samples were timed")?;
    Ok(Stats { held, ..stats })
}

/// Times CPU work with the host clock, under the same sampling.
pub fn time_cpu(sampling: Sampling, mut work: impl FnMut()) -> Stats {
    let mut one = || {
        let t = Instant::now();
        work();
        t.elapsed().as_secs_f64() * 1e3
    };
    let first = one();
    let reps = sampling.reps.unwrap_or_else(|| {
        // The CPU step can take minutes: repeat only while that stays within the target time.
        ((TARGET_SECONDS * 1e3 / first.max(1e-6)) as usize).clamp(1, MAX_REPS)
    });
    let mut samples = vec![first];
    samples.extend((1..reps).map(|_| one()));
    Stats::from_samples(samples, 1).unwrap_or(Stats {
        median_ms: first,
        min_ms: first,
        max_ms: first,
        samples: 1,
        batch: 1,
        held: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_min_max() {
        let s = Stats::from_samples(vec![3.0, 1.0, 2.0], 4).unwrap();
        assert_eq!((s.median_ms, s.min_ms, s.max_ms, s.samples, s.batch), (2.0, 1.0, 3.0, 3, 4));
        let s = Stats::from_samples(vec![4.0, 1.0, 2.0, 3.0], 1).unwrap();
        assert_eq!(s.median_ms, 2.5);
        assert!(Stats::from_samples(vec![], 1).is_none());
    }

    #[test]
    fn median_ignores_one_outlier() {
        let mut v = vec![1.0; 21];
        v[5] = 100.0;
        assert_eq!(Stats::from_samples(v, 1).unwrap().median_ms, 1.0);
    }

    #[test]
    fn gflops_from_the_median() {
        let s = Stats::from_samples(vec![2.0], 1).unwrap();
        // 2·512³ FLOPs in 2 ms.
        let g = s.gflops(2.0 * 512f64.powi(3));
        assert!((g - 134.217728).abs() < 1e-9);
    }

    #[test]
    fn reps_follow_the_sampling() {
        let p = Sampling::new(None);
        assert_eq!(p.reps_for(100.0), MIN_REPS);
        assert_eq!(p.reps_for(1.0), 500);
        assert_eq!(p.reps_for(1e-4), MAX_REPS);
        assert_eq!(Sampling::new(Some(7)).reps_for(1.0), 7);
    }

    #[test]
    fn batches_last_at_least_batch_ms() {
        let p = Sampling::new(None);
        assert_eq!(p.batch_for(3.0), 1);
        assert_eq!(p.batch_for(0.02), 100);
        assert!(p.batch_for(0.017) as f64 * 0.017 >= BATCH_MS);
        assert_eq!(p.batch_for(0.01), MAX_BATCH, "no more than the stream queues");
        assert_eq!(p.batch_for(0.0), MAX_BATCH);
    }

    #[test]
    fn holds_follow_the_host_and_stay_bounded() {
        assert_eq!(Hold::length(0.0, 100), HOLD_MIN_MS);
        assert!((Hold::length(0.004, 200) - (1.2 + HOLD_MIN_MS)).abs() < 1e-12);
        assert_eq!(Hold::length(10.0, MAX_BATCH), HOLD_MAX_MS);
        let b = Batch { gpu_ms: 2.0, host_ms: 0.8, hold_ms: 1.25 };
        assert!(b.clean() && !Batch { host_ms: 1.3, ..b }.clean());
    }

    #[test]
    fn cpu_timing_counts_reps() {
        let mut calls = 0;
        let s = time_cpu(Sampling::new(Some(5)), || calls += 1);
        assert_eq!((calls, s.samples), (5, 5));
    }
}

//! Timing: CUDA events around kernel launches, and the statistics of the samples.

use std::time::Instant;

use anyhow::{Context, Result};
use cudarc::driver::CudaStream;
use cudarc::driver::sys::CUevent_flags;

/// Median and spread of repeated timings, in milliseconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stats {
    pub median_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    pub reps: usize,
}

impl Stats {
    /// `None` for no samples.
    pub fn from_samples(mut samples: Vec<f64>) -> Option<Self> {
        if samples.is_empty() {
            return None;
        }
        samples.sort_by(f64::total_cmp);
        let n = samples.len();
        let median_ms = if n % 2 == 1 { samples[n / 2] } else { 0.5 * (samples[n / 2 - 1] + samples[n / 2]) };
        Some(Self { median_ms, min_ms: samples[0], max_ms: samples[n - 1], reps: n })
    }

    /// Throughput at the median time.
    pub fn gflops(&self, flops: f64) -> f64 {
        flops / (self.median_ms * 1e-3) / 1e9
    }
}

/// How many times to run: `reps` if the user fixed it, otherwise enough for a stable median
/// (at least `MIN_REPS`, and about `TARGET_SECONDS` of kernel time, capped at `MAX_REPS`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Plan {
    pub warmup: usize,
    pub reps: Option<usize>,
}

pub const MIN_REPS: usize = 20;
pub const MAX_REPS: usize = 1000;
pub const TARGET_SECONDS: f64 = 0.5;

impl Plan {
    pub fn new(reps: Option<usize>) -> Self {
        Self { warmup: 3, reps }
    }

    /// Repetitions for a run whose single launch takes `one_ms`.
    pub fn reps_for(&self, one_ms: f64) -> usize {
        self.reps.unwrap_or_else(|| {
            let fit = (TARGET_SECONDS * 1e3 / one_ms.max(1e-6)) as usize;
            fit.clamp(MIN_REPS, MAX_REPS)
        })
    }
}

/// Times `launch` on `stream` with a pair of events around each launch, so nothing but the
/// kernel is inside the measured interval; the warm-up launches (module load, clocks ramping,
/// caches) are run first and not counted.
pub fn time_gpu(stream: &CudaStream, plan: Plan, mut launch: impl FnMut() -> Result<()>) -> Result<Stats> {
    let ctx = stream.context();
    let start = ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT)).context("creating a timing event")?;
    let stop = ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT)).context("creating a timing event")?;
    let mut one = || -> Result<f64> {
        start.record(stream)?;
        launch()?;
        stop.record(stream)?;
        stop.synchronize().context("waiting for the timed launch")?;
        Ok(f64::from(start.elapsed_ms(&stop)?))
    };
    let mut last = 0.0;
    for _ in 0..plan.warmup {
        last = one()?;
    }
    let reps = plan.reps_for(last);
    let samples = (0..reps).map(|_| one()).collect::<Result<Vec<_>>>()?;
    Stats::from_samples(samples).context("no repetitions were timed")
}

/// Times CPU work with the host clock, under the same plan.
pub fn time_cpu(plan: Plan, mut work: impl FnMut()) -> Stats {
    let mut one = || {
        let t = Instant::now();
        work();
        t.elapsed().as_secs_f64() * 1e3
    };
    let first = one();
    let reps = plan.reps.unwrap_or_else(|| {
        // The CPU step can take minutes: repeat only while that stays within the target time.
        ((TARGET_SECONDS * 1e3 / first.max(1e-6)) as usize).clamp(1, MAX_REPS)
    });
    let mut samples = vec![first];
    samples.extend((1..reps).map(|_| one()));
    Stats::from_samples(samples).unwrap_or(Stats { median_ms: first, min_ms: first, max_ms: first, reps: 1 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_min_max() {
        let s = Stats::from_samples(vec![3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.median_ms, s.min_ms, s.max_ms, s.reps), (2.0, 1.0, 3.0, 3));
        let s = Stats::from_samples(vec![4.0, 1.0, 2.0, 3.0]).unwrap();
        assert_eq!(s.median_ms, 2.5);
        assert!(Stats::from_samples(vec![]).is_none());
    }

    #[test]
    fn median_ignores_one_outlier() {
        let mut v = vec![1.0; 21];
        v[5] = 100.0;
        assert_eq!(Stats::from_samples(v).unwrap().median_ms, 1.0);
    }

    #[test]
    fn gflops_from_the_median() {
        let s = Stats::from_samples(vec![2.0]).unwrap();
        // 2·512³ FLOPs in 2 ms.
        let g = s.gflops(2.0 * 512f64.powi(3));
        assert!((g - 134.217728).abs() < 1e-9);
    }

    #[test]
    fn reps_follow_the_plan() {
        let p = Plan::new(None);
        assert_eq!(p.reps_for(100.0), MIN_REPS);
        assert_eq!(p.reps_for(1.0), 500);
        assert_eq!(p.reps_for(1e-4), MAX_REPS);
        assert_eq!(Plan::new(Some(7)).reps_for(1.0), 7);
    }

    #[test]
    fn cpu_timing_counts_reps() {
        let mut calls = 0;
        let s = time_cpu(Plan::new(Some(5)), || calls += 1);
        assert_eq!((calls, s.reps), (5, 5));
    }
}

//! A bound on the wait for the GPU. A kernel whose threads wait at a barrier or on an mbarrier
//! phase that no thread will complete never finishes, and a plain wait for it never returns:
//! the run would hang until something outside killed it. Every wait of a run goes through
//! [`wait`], which polls the work it waits for and, past the run's bound, ends the process with
//! one sentence that names the kernel and the likely cause.
//!
//! The bound is [`set`] once per run: `--timeout SECONDS`, or by default a second plus a hundred
//! times the product's time at a pessimistic rate ([`WaitWatch::expected`]), so that no correct
//! kernel of the course comes near it.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{Result, anyhow};
use cudarc::driver::sys::{CUevent_flags, CUresult};

use super::gpu::Gpu;

/// What the waits of a run watch for: the kernel's name and the longest a wait for one launch
/// may take.
#[derive(Clone, Debug, PartialEq)]
pub struct WaitWatch {
    pub kernel: String,
    pub per_launch: Duration,
    /// Whether `--timeout` gave the bound (the sentence then says so).
    pub given: bool,
}

/// The rate the default bound assumes: slower than any kernel of the course at any shape it
/// times (step 02's naive kernel runs near 0.5 TFLOP/s at 4096³ on an H100).
pub const SLOW_FLOPS: f64 = 1e11;

impl WaitWatch {
    /// The default watch for `kernel` on a product of `flops`: a second plus a hundred times the
    /// product at [`SLOW_FLOPS`].
    pub fn expected(kernel: &str, flops: f64) -> WaitWatch {
        let seconds = 1.0 + 100.0 * flops / SLOW_FLOPS;
        WaitWatch { kernel: kernel.to_owned(), per_launch: Duration::from_secs_f64(seconds), given: false }
    }

    /// The watch `--timeout SECONDS` gives.
    pub fn given(kernel: &str, seconds: f64) -> WaitWatch {
        WaitWatch { kernel: kernel.to_owned(), per_launch: Duration::from_secs_f64(seconds), given: true }
    }

    /// The sentence for a wait of `launches` launches that outlasted its bound.
    pub fn sentence(&self, launches: usize, waited: Duration) -> String {
        let why = if self.given { "the bound --timeout gave" } else { "a hundred times its expected time" };
        format!(
            "the kernel `{}` had not finished after {:.1} s ({why}, for {launches} launch{}): its threads are \
             most likely waiting at a barrier or on an mbarrier phase that no thread will complete; the run \
             stops here (--timeout SECONDS waits longer)",
            self.kernel,
            waited.as_secs_f64(),
            if launches == 1 { "" } else { "es" }
        )
    }
}

static WATCH: Mutex<Option<WaitWatch>> = Mutex::new(None);

/// Sets the run's watch (None: waits without a bound, as a library caller may want).
pub fn set(watch: Option<WaitWatch>) {
    if let Ok(mut w) = WATCH.lock() {
        *w = watch;
    }
}

/// Waits for the work queued on `gpu`'s stream so far, `launches` launches of the watched kernel
/// among it. A fault inside a kernel is returned as the error it is; a wait past the bound ends
/// the process (exit code 1) with [`WaitWatch::sentence`], since the GPU cannot be given back while
/// the kernel runs.
pub fn wait(gpu: &Gpu, launches: usize) -> Result<()> {
    let watch = WATCH.lock().ok().and_then(|w| w.clone());
    let Some(watch) = watch else {
        return gpu.stream.synchronize().map_err(|e| anyhow!("{e:?}"));
    };
    let done = gpu
        .stream
        .record_event(Some(CUevent_flags::CU_EVENT_DISABLE_TIMING))
        .map_err(|e| anyhow!("recording an event: {e:?}"))?;
    let bound = watch.per_launch.saturating_mul(launches.max(1) as u32);
    let started = Instant::now();
    loop {
        match done.try_is_complete() {
            Ok(true) => return Ok(()),
            Ok(false) => {}
            Err(e) if e.0 == CUresult::CUDA_ERROR_NOT_READY => {}
            Err(e) => return Err(anyhow!("{e:?}")),
        }
        let waited = started.elapsed();
        if waited > bound {
            eprintln!("error: {}", watch.sentence(launches, waited));
            std::process::exit(1);
        }
        // Short pauses while a kernel may be about to end, so that the GPU does not idle between
        // timed batches for longer than a launch gap; longer ones once the wait is long.
        let pause = if waited < Duration::from_secs(1) { 10 } else { 1000 };
        std::thread::sleep(Duration::from_micros(pause));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The default bound is a second plus a hundred times the product at 0.1 TFLOP/s: 138 s at
    /// 4096³ (2·4096³ FLOPs), a second and a little at 64³; the sentence names the kernel, the
    /// bound's origin and the way to wait longer, in one line.
    #[test]
    fn the_bound_follows_the_product_and_the_sentence_names_the_kernel() {
        let w = WaitWatch::expected("matmul of step12_persistent_clusters", 2.0 * 4096f64.powi(3));
        assert!((w.per_launch.as_secs_f64() - (1.0 + 100.0 * 2.0 * 4096f64.powi(3) / 1e11)).abs() < 1e-6);
        assert!(WaitWatch::expected("k", 2.0 * 64f64.powi(3)).per_launch < Duration::from_millis(1100));
        let s = w.sentence(1, Duration::from_secs_f64(140.04));
        assert!(
            s.starts_with("the kernel `matmul of step12_persistent_clusters` had not finished after 140.0 s"),
            "{s}"
        );
        assert!(
            s.contains("a hundred times its expected time, for 1 launch)") && s.contains("--timeout"),
            "{s}"
        );
        assert_eq!(s.lines().count(), 1);
        let given = WaitWatch::given("matmul", 2.5).sentence(20, Duration::from_secs(50));
        assert!(given.contains("(the bound --timeout gave, for 20 launches)"), "{given}");
    }
}

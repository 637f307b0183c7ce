//! The SM clock and the GPU's power while a product is timed, read through NVML (the driver's
//! management library, `libnvidia-ml.so.1`), loaded at run time: a build needs no NVML, and a
//! machine without it times as before and says the clock was not read.
//!
//! Two products timed at different clocks compare two things at once: the kernels' work per
//! clock and the clock each held under the power cap. The report divides them
//! ([`per_clock`]): the share per second, and the share per clock beside it. Under the cap, the
//! clock a kernel holds follows the energy each of its products takes, which the driver's energy
//! counter gives ([`Held::joules`]).

use std::ffi::{CString, c_char, c_int, c_uint, c_void};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// NVML's device handle.
type Handle = *mut c_void;

/// NVML's index of the SM clock (`NVML_CLOCK_SM`).
const CLOCK_SM: c_uint = 1;

/// NVML's field of the GPU's power now, in milliwatts (`NVML_FI_DEV_POWER_INSTANT`):
/// `nvmlDeviceGetPowerUsage` gives a mean over about a second, which lags a product timed for
/// half a second behind the idle stretches before it.
const POWER_INSTANT: c_uint = 186;

/// One value of `nvmlDeviceGetFieldValues` (nvml.h's `nvmlFieldValue_t`).
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct FieldValue {
    field: c_uint,
    scope: c_uint,
    timestamp: i64,
    latency_us: i64,
    value_type: c_uint,
    status: c_int,
    value: u64,
}

impl FieldValue {
    /// The value as a number, for the integer and double types NVML gives.
    fn number(&self) -> Option<f64> {
        let bits = self.value;
        match self.value_type {
            0 => Some(f64::from_bits(bits)),
            1 => Some(f64::from(bits as u32)),
            2 | 3 => Some(bits as f64),
            4 => Some(bits as i64 as f64),
            5 => Some(f64::from(bits as u32 as i32)),
            6 => Some(f64::from(bits as u16)),
            _ => None,
        }
    }
}

/// How often a sampler reads the clock and the power while products are timed. NVML refreshes
/// the power reading about every 20–100 ms; the clock is read as it is.
pub const EVERY: Duration = Duration::from_millis(2);

/// What the GPU held over a timed stretch: the mean SM clock and the GPU's power of the readings
/// taken in it (the stretch's short holds between batches included).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Held {
    pub sm_mhz: f64,
    pub watts: f64,
    /// Readings the means are of.
    pub readings: usize,
    /// The energy of one product in joules: the GPU's energy counter over the stretch divided by
    /// the launches in it (see [`joules_per_launch`]); None where the driver keeps no counter or
    /// the stretch was too short for it to move twice, and then [`Held::no_energy`] says which.
    pub joules: Option<f64>,
    pub no_energy: Option<NoEnergy>,
}

/// Why a stretch has no energy figure.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NoEnergy {
    /// The driver keeps no energy counter for this GPU (or NVML has no call for it).
    NoCounter,
    /// The counter moves in steps about 100 ms apart, and the timed stretch of `stretch_ms` saw
    /// `steps` of them: two are needed for a power between them.
    TooShort { steps: usize, stretch_ms: f64 },
}

impl NoEnergy {
    /// In words, for the report.
    pub fn words(self) -> String {
        match self {
            NoEnergy::NoCounter => "the driver keeps no energy counter for this GPU".to_owned(),
            NoEnergy::TooShort { steps, stretch_ms } => format!(
                "the timed stretch of {stretch_ms:.0} ms saw {steps} {} of the driver's energy counter, which moves about every 100 ms, and two are needed: time more repetitions (--reps)",
                if steps == 1 { "step" } else { "steps" }
            ),
        }
    }
}

impl Held {
    /// Joules per TFLOP of a product of `flops` floating-point operations.
    pub fn joules_per_tflop(&self, flops: f64) -> Option<f64> {
        self.joules.map(|j| j / (flops * 1e-12)).filter(|j| j.is_finite() && *j > 0.0)
    }
}

/// The energy of one launch from the counter's ticks over a stretch of `stretch_s` seconds that
/// ran `launches` launches. The driver moves the counter (millijoules since it loaded) in steps,
/// about every 100 ms on an H100: two readings at the stretch's ends would miss up to a step at
/// each end, a fifth of a half-second stretch. So the mean power is taken between the first and
/// the last step seen inside the stretch (`ticks`: the seconds since the stretch began at which
/// the counter was seen to move, and its value then), and the stretch's energy is that power over
/// its whole time. None for fewer than two steps, no launch, or a counter that went back.
pub fn joules_per_launch(ticks: &[(f64, u64)], stretch_s: f64, launches: usize) -> Option<f64> {
    let (&(t0, e0), &(t1, e1)) = (ticks.first()?, ticks.last()?);
    if launches == 0 || t1 <= t0 || e1 <= e0 {
        return None;
    }
    let watts = (e1 - e0) as f64 * 1e-3 / (t1 - t0);
    Some(watts * stretch_s / launches as f64)
}

/// A share of a baseline's rate per second turned into a share per clock: the baseline's
/// cycles over the kernel's, `share · baseline MHz / kernel MHz`.
pub fn per_clock(share: f64, kernel: Held, baseline: Held) -> f64 {
    share * baseline.sm_mhz / kernel.sm_mhz
}

struct Api {
    _lib: libloading::Library,
    clock: unsafe extern "C" fn(Handle, c_uint, *mut c_uint) -> c_int,
    power: unsafe extern "C" fn(Handle, *mut c_uint) -> c_int,
    fields: Option<unsafe extern "C" fn(Handle, c_int, *mut FieldValue) -> c_int>,
    /// `nvmlDeviceGetTotalEnergyConsumption` (Volta on): millijoules since the driver loaded.
    energy: Option<unsafe extern "C" fn(Handle, *mut u64) -> c_int>,
}

/// One GPU's clock and power, through NVML.
#[derive(Clone)]
pub struct Clocks {
    api: Arc<Api>,
    device: Handle,
}

// SAFETY: an NVML device handle is an opaque pointer NVML allows on any thread (NVML is
// thread-safe); the library it came from stays loaded while any `Clocks` holds `api`.
unsafe impl Send for Clocks {}
unsafe impl Sync for Clocks {}

impl Clocks {
    /// The device at PCI address `domain:bus:device`, or why NVML cannot read it.
    pub fn open((domain, bus, device): (u32, u32, u32)) -> Result<Clocks, String> {
        // SAFETY: loading the driver's own management library runs no code of ours.
        let lib = unsafe { libloading::Library::new("libnvidia-ml.so.1") }
            .map_err(|_| "NVML (libnvidia-ml.so.1, part of the NVIDIA driver) was not found".to_owned())?;
        // SAFETY: each symbol is looked up with NVML's signature for it (nvml.h).
        let (api, device) = unsafe {
            let init: libloading::Symbol<unsafe extern "C" fn() -> c_int> =
                lib.get(b"nvmlInit_v2\0").map_err(|e| format!("NVML has no nvmlInit_v2: {e}"))?;
            let by_bus: libloading::Symbol<unsafe extern "C" fn(*const c_char, *mut Handle) -> c_int> = lib
                .get(b"nvmlDeviceGetHandleByPciBusId_v2\0")
                .map_err(|e| format!("NVML has no nvmlDeviceGetHandleByPciBusId_v2: {e}"))?;
            let clock = *lib
                .get(b"nvmlDeviceGetClockInfo\0")
                .map_err(|e| format!("NVML has no nvmlDeviceGetClockInfo: {e}"))?;
            let power = *lib
                .get(b"nvmlDeviceGetPowerUsage\0")
                .map_err(|e| format!("NVML has no nvmlDeviceGetPowerUsage: {e}"))?;
            let fields = lib.get(b"nvmlDeviceGetFieldValues\0").ok().map(|f: libloading::Symbol<_>| *f);
            let energy =
                lib.get(b"nvmlDeviceGetTotalEnergyConsumption\0").ok().map(|f: libloading::Symbol<_>| *f);
            let status = init();
            if status != 0 {
                return Err(format!("NVML did not start (status {status})"));
            }
            let address = CString::new(format!("{domain:08X}:{bus:02X}:{device:02X}.0")).expect("no NUL");
            let mut handle: Handle = std::ptr::null_mut();
            let status = by_bus(address.as_ptr(), &mut handle);
            if status != 0 {
                return Err(format!("NVML knows no GPU at PCI address {address:?} (status {status})"));
            }
            (Api { clock, power, fields, energy, _lib: lib }, handle)
        };
        let clocks = Clocks { api: Arc::new(api), device };
        clocks.read().ok_or_else(|| "NVML could not read the GPU's clock and power".to_owned())?;
        Ok(clocks)
    }

    /// The SM clock in MHz and the GPU's power in watts, now (the power of the last second where
    /// the driver gives no instant reading).
    pub fn read(&self) -> Option<(u32, f64)> {
        let mut mhz = 0;
        // SAFETY: writes one unsigned int through a valid pointer, for a handle NVML gave.
        if unsafe { (self.api.clock)(self.device, CLOCK_SM, &mut mhz) } != 0 {
            return None;
        }
        Some((mhz, self.instant_watts().or_else(|| self.mean_watts())?))
    }

    /// The GPU's power now, where the driver gives it (`NVML_FI_DEV_POWER_INSTANT`).
    pub fn instant_watts(&self) -> Option<f64> {
        let mut field = FieldValue { field: POWER_INSTANT, ..FieldValue::default() };
        // SAFETY: NVML reads the field's id and writes the one value asked for.
        let status = unsafe { (self.api.fields?)(self.device, 1, &mut field) };
        (status == 0 && field.status == 0).then(|| field.number()).flatten().map(|mw| mw / 1e3)
    }

    /// The GPU's energy counter in millijoules, where the driver keeps one.
    pub fn energy_mj(&self) -> Option<u64> {
        let mut mj = 0u64;
        // SAFETY: writes one unsigned long long through a valid pointer, for a handle NVML gave.
        let ok = unsafe { (self.api.energy?)(self.device, &mut mj) } == 0;
        ok.then_some(mj)
    }

    fn mean_watts(&self) -> Option<f64> {
        let mut milliwatts = 0;
        // SAFETY: writes one unsigned int through a valid pointer, for a handle NVML gave.
        let ok = unsafe { (self.api.power)(self.device, &mut milliwatts) } == 0;
        ok.then(|| f64::from(milliwatts) / 1e3)
    }

    /// Starts reading every [`EVERY`] on a thread of its own, until [`Sampler::stop`]: the clock,
    /// the power, and each step of the energy counter.
    pub fn sample(&self) -> Sampler {
        let running = Arc::new(AtomicBool::new(true));
        let (clocks, flag) = (self.clone(), running.clone());
        let started = Instant::now();
        // A reading taken here, before the first timed launch, stands in only for a stretch
        // that ends before the thread reads at all: the GPU is between the warm-up and the
        // samples then, so the thread's own readings are the stretch's wherever there are any.
        let before = self.read();
        let first = self.energy_mj();
        let mut readings = Readings { counter: first.is_some(), ..Readings::default() };
        let thread = std::thread::spawn(move || {
            let mut last = first;
            loop {
                std::thread::sleep(EVERY);
                if !flag.load(Ordering::Relaxed) {
                    break;
                }
                readings.held.extend(clocks.read());
                let now = clocks.energy_mj();
                if now != last && last.is_some() {
                    readings.ticks.extend(now.map(|mj| (started.elapsed().as_secs_f64(), mj)));
                }
                last = now;
            }
            if readings.held.is_empty() {
                readings.held.extend(before);
            }
            readings
        });
        Sampler { running, thread: Some(thread), started }
    }
}

/// Readings being taken on their own thread, until [`Sampler::stop`] or the sampler is dropped
/// (a timing that fails part-way leaves no thread reading).
pub struct Sampler {
    running: Arc<AtomicBool>,
    thread: Option<JoinHandle<Readings>>,
    started: Instant,
}

/// What a sampler read: the clock and power each time, and the energy counter's steps, where
/// the driver keeps the counter.
#[derive(Default)]
struct Readings {
    held: Vec<(u32, f64)>,
    ticks: Vec<(f64, u64)>,
    counter: bool,
}

impl Sampler {
    /// Stops reading after `launches` launches; the means of what was read (None if nothing
    /// was), and the energy of one launch.
    pub fn stop(mut self, launches: usize) -> Option<Held> {
        let stretch_s = self.started.elapsed().as_secs_f64();
        self.running.store(false, Ordering::Relaxed);
        let readings = self.thread.take()?.join().ok()?;
        let held = mean(&readings.held)?;
        let joules = joules_per_launch(&readings.ticks, stretch_s, launches);
        let no_energy = match (joules, readings.counter) {
            (Some(_), _) => None,
            (None, false) => Some(NoEnergy::NoCounter),
            (None, true) => {
                Some(NoEnergy::TooShort { steps: readings.ticks.len(), stretch_ms: stretch_s * 1e3 })
            }
        };
        Some(Held { joules, no_energy, ..held })
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.running.store(false, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The mean clock and power of a stretch's readings.
fn mean(readings: &[(u32, f64)]) -> Option<Held> {
    if readings.is_empty() {
        return None;
    }
    let n = readings.len() as f64;
    Some(Held {
        sm_mhz: readings.iter().map(|r| f64::from(r.0)).sum::<f64>() / n,
        watts: readings.iter().map(|r| r.1).sum::<f64>() / n,
        readings: readings.len(),
        joules: None,
        no_energy: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_share_per_clock_counts_cycles() {
        let held = |sm_mhz| Held { sm_mhz, watts: 700.0, readings: 10, joules: None, no_energy: None };
        // The kernel takes 96% of cuBLAS's rate per second at 1500 MHz against cuBLAS's 1600:
        // it needs fewer cycles than cuBLAS, 102.4% of its rate per clock.
        let share = per_clock(96.0, held(1500.0), held(1600.0));
        assert!((share - 102.4).abs() < 1e-9, "{share}");
        // At the same clock the two shares agree.
        assert_eq!(per_clock(96.0, held(1755.0), held(1755.0)), 96.0);
    }

    /// Where NVML is missing (as on a machine without the driver) or knows no such GPU, opening
    /// says why in one sentence.
    #[test]
    fn no_nvml_or_no_such_gpu_is_a_sentence_not_a_panic() {
        let why = Clocks::open((0xFFFF, 0xFF, 0x1F)).err().expect("no GPU sits at that address");
        assert!(why.starts_with("NVML") && !why.contains('\n'), "{why}");
    }

    /// nvml.h's `nvmlFieldValue_t`: 40 bytes, the value at byte 32; and each value type read as
    /// NVML writes it.
    #[test]
    fn a_field_value_is_laid_out_and_read_as_nvml_writes_it() {
        assert_eq!(std::mem::size_of::<FieldValue>(), 40);
        assert_eq!(std::mem::offset_of!(FieldValue, value), 32);
        let field = |value_type, value| FieldValue { value_type, value, ..FieldValue::default() };
        assert_eq!(field(0, 612.5f64.to_bits()).number(), Some(612.5));
        assert_eq!(field(1, 700_000).number(), Some(700_000.0));
        assert_eq!(field(4, (-3i64) as u64).number(), Some(-3.0));
        assert_eq!(field(5, u64::from((-3i32) as u32)).number(), Some(-3.0));
        assert_eq!(field(6, 7).number(), Some(7.0));
        assert_eq!(field(9, 7).number(), None);
    }

    /// A sampler dropped without `stop` (a timing that failed) stops its thread.
    #[test]
    fn a_dropped_sampler_stops_reading() {
        let running = Arc::new(AtomicBool::new(true));
        let flag = running.clone();
        let thread = std::thread::spawn(move || {
            while flag.load(Ordering::Relaxed) {
                std::thread::sleep(EVERY);
            }
            Readings::default()
        });
        drop(Sampler { running: running.clone(), thread: Some(thread), started: Instant::now() });
        assert!(!running.load(Ordering::Relaxed));
    }

    #[test]
    fn the_means_are_of_the_readings() {
        assert_eq!(mean(&[]), None);
        let held = mean(&[(1500, 600.0), (1700, 700.0)]).unwrap();
        assert_eq!(held, Held { sm_mhz: 1600.0, watts: 650.0, readings: 2, joules: None, no_energy: None });
    }

    /// The counter's millijoules over the launches, and per TFLOP of the product; a stretch
    /// the counter did not see (no launch, no movement) gives none rather than zero.
    #[test]
    fn the_energy_of_a_product_is_the_counter_over_the_launches() {
        // Steps 0.1 s apart of 70 J each: 700 W, over a 0.1 s stretch of 400 launches of a 4096³
        // product (137.4 GFLOP each). The readings at the stretch's ends count for nothing.
        let ticks = [(0.05, 1_000_000), (0.15, 1_070_000), (0.25, 1_140_000), (0.35, 1_210_000)];
        let j = joules_per_launch(&ticks, 0.1, 400).unwrap();
        assert!((j - 0.175).abs() < 1e-12, "{j}");
        assert_eq!(joules_per_launch(&ticks, 0.4, 400), Some(4.0 * j), "a stretch four times as long");
        let held = Held { sm_mhz: 1600.0, watts: 700.0, readings: 10, joules: Some(j), no_energy: None };
        let per_tflop = held.joules_per_tflop(2.0 * 4096f64.powi(3)).unwrap();
        assert!((per_tflop - 0.175 / 0.137_438_953_472).abs() < 1e-9, "{per_tflop}");
        assert_eq!(joules_per_launch(&ticks[..1], 0.1, 400), None, "one step gives no power");
        assert_eq!(joules_per_launch(&[], 0.1, 400), None);
        assert_eq!(joules_per_launch(&ticks, 0.1, 0), None, "no launch");
        assert_eq!(joules_per_launch(&[(0.1, 9), (0.2, 5)], 0.1, 10), None, "a counter that went back");
        assert_eq!(Held { joules: None, ..held }.joules_per_tflop(1e12), None);
    }
}

//! The block every step prints: one screen a learner reads at a glance. The report is a typed
//! value: the text is one view of it ([`fmt::Display`]), its JSON (`--format json`, `--json-to`,
//! written by `emit`, with a schema version) another.

use std::fmt;

use serde::{Serialize, Serializer};

use crate::clock::Held;
use crate::emulated::{DEVICE_LINE, Traffic};
use crate::gpu::{GpuFacts, Resources};
use crate::hooks::Paths;
use crate::matrix::{Inputs, Shape};
use crate::numbers::{bytes, count, joules};
use crate::params::Params;
use crate::predicted::Predicted;
use crate::step::{Choice, Geometry, GpuStep};
use crate::timing::Stats;
use crate::verify::{Precision, Verdict, share};

/// Where the step ran.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RanOn {
    Gpu(GpuFacts),
    Cpu,
    /// On the PTX emulator: what it counted, and how long it took.
    Emulated(Box<EmulatorInfo>),
}

/// An emulated run: the traffic of the step's kernel, the other kernels of its product, and the
/// emulator's own time and threads.
#[derive(Clone, Debug, Serialize)]
pub struct EmulatorInfo {
    pub traffic: Traffic,
    pub others: Vec<(String, Traffic)>,
    pub seconds: f64,
    pub workers: usize,
    /// The architecture of the PTX the emulator ran.
    pub arch: &'static str,
    /// The GPU the run copied and whose time the model predicts (`--gpu`), named by its
    /// profile's name in the JSON.
    #[serde(serialize_with = "profile_name")]
    pub gpu: &'static ptx_model::profile::Profile,
    /// Whether ptxas serialised the kernel's wgmma (its advisories say so), which the time
    /// model counts.
    pub serialized_wgmma: bool,
    /// The step kernel's launches recorded for the time model's replay (not in the JSON: the
    /// prediction made from them is, [`Report::predicted`]).
    #[serde(skip)]
    pub recorded: std::sync::Arc<Vec<crate::emulated::Recorded>>,
    /// For a scaled run of a long K: the two shorter depths emulated, whose counts and times
    /// were carried to the whole K (the counts above are carried).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub depths: Option<[usize; 2]>,
}

fn profile_name<S: serde::Serializer>(p: &&ptx_model::profile::Profile, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(p.name)
}

/// The traffic line: global requests and sectors, shared requests and wavefronts, each with its
/// ratio, and FP32 operations per byte of global memory touched; `sms`: the SMs of the GPU the
/// run copied, that the blocks were dealt to.
pub fn traffic_line(t: &Traffic, sms: u32) -> String {
    let per = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
    let mut line = format!(
        "global loads {} requests · {} sectors ({:.2} a request) · stores {} · {} sectors ({:.2}) · shared loads {} · {} wavefronts ({:.2}) · stores {} · {} wavefronts ({:.2})",
        count(t.global_load_requests),
        count(t.global_load_sectors),
        per(t.global_load_sectors, t.global_load_requests),
        count(t.global_store_requests),
        count(t.global_store_sectors),
        per(t.global_store_sectors, t.global_store_requests),
        count(t.shared_load_requests),
        count(t.shared_load_wavefronts),
        per(t.shared_load_wavefronts, t.shared_load_requests),
        count(t.shared_store_requests),
        count(t.shared_store_wavefronts),
        per(t.shared_store_wavefronts, t.shared_store_requests),
    );
    if t.async_copy_requests > 0 {
        line += &format!(
            " · cp.async {} · {} sectors ({:.2})",
            count(t.async_copy_requests),
            count(t.async_copy_sectors),
            per(t.async_copy_sectors, t.async_copy_requests)
        );
    }
    let requests = t.global_load_requests + t.global_store_requests + t.async_copy_requests;
    if requests > 0 {
        // What the L1 looks up: one 128-byte line a clock (the time model's L1 term).
        line += &format!(" · {:.2} lines of 128 bytes a global request", per(t.global_lines, requests));
    }
    if t.bulk_load_requests > 0 {
        // Nsight Compute's shared wavefronts also count the polls of mbarrier waits, as many as
        // the timing of the run makes: the emulator counts the loads and stores of the code.
        line += " (shared: the code's loads and stores; a GPU adds its mbarrier polls)";
    }
    if t.bulk_load_requests + t.bulk_store_requests > 0 {
        line += &format!(
            " · copy engine loads {} · {} bytes of boxes ({} sectors read)",
            count(t.bulk_load_requests),
            count(t.bulk_load_bytes),
            count(t.bulk_load_sectors)
        );
        if t.bulk_estimated > 0 {
            line += &format!(
                ", an estimate: {} copies have rows that start inside a sector, whose reads the count does not model",
                count(t.bulk_estimated)
            );
        }
        if t.sm_sectors_most > 0 {
            line += &format!(
                " · an SM receives {} to {} sectors (blocks dealt to {} SMs in turn: an estimate past one wave)",
                count(t.sm_sectors_least),
                count(t.sm_sectors_most),
                sms
            );
        }
        if t.multicast_load_bytes > 0 {
            line += &format!(
                ", {} bytes of them by multicast, which delivers {} bytes ({} sectors) more",
                count(t.multicast_load_bytes),
                count(t.multicast_bytes),
                count(t.multicast_sectors)
            );
        }
        if t.bulk_store_requests > 0 {
            line +=
                &format!(" · stores {} · {} bytes", count(t.bulk_store_requests), count(t.bulk_store_bytes));
            // A scaled run does not know how the blocks spread over the SMs.
            if t.scaled_of == 0 {
                line +=
                    &format!(" (an SM stores {} to {})", count(t.sm_stores_least), count(t.sm_stores_most));
            }
        }
    }
    if t.wgmma_instructions > 0 {
        line += &format!(" · wgmma {} (a warp's share each)", count(t.wgmma_instructions));
    }
    line + &format!(" · {} barriers · {:.2} FLOP per global byte", count(t.barriers), t.flops_per_byte())
}

/// The kernel's launch shape and what it costs.
#[derive(Clone, Debug, Serialize)]
pub struct KernelFacts {
    #[serde(serialize_with = "params_map")]
    pub params: Params,
    pub geometry: Geometry,
    pub resources: Resources,
    /// The shape the kernel multiplied when the launch padded rows to 16 bytes (see
    /// [`crate::pad`]), None when it multiplied the problem's own.
    pub padded: Option<Shape>,
    /// Why the step's rule chose these parameters for this shape, for a step that chooses per
    /// shape (see [`crate::step::Schedule::PerShape`]).
    pub why: Option<String>,
    /// The time the rule's model predicted for its choice, in microseconds (None where `--param`
    /// changed the choice, or the step has no model).
    pub predicted_us: Option<f64>,
    /// What the step's own product adds, as a label and a line (see
    /// [`crate::hooks::Hooks::report_line`]).
    pub adds: Option<(&'static str, String)>,
}

impl KernelFacts {
    /// The facts of `step`'s kernel with `params` on `geometry` for `shape`: the shape it
    /// multiplied where rows are padded, the step's choice (`choice`, for a step that chooses per
    /// shape; `predicted`: whether to show its model's time) and the line its own product adds.
    pub fn of(
        step: &GpuStep,
        params: &Params,
        (geometry, resources): (Geometry, Resources),
        shape: Shape,
        (choice, predicted): (Option<&Choice>, bool),
    ) -> KernelFacts {
        KernelFacts {
            params: params.clone(),
            geometry,
            resources,
            padded: step.padded_shape(params, shape),
            why: choice.map(|c| c.why.clone()),
            predicted_us: choice.and_then(|c| c.predicted_us).filter(|_| predicted),
            adds: step.hooks.report_line(params, shape, geometry.grid),
        }
    }
}

/// The product after the timed ones, on output poisoned again: its C beside the first product's
/// (the one the verdict judges), so that what a product leaves behind for the next (a count never
/// reset, a workspace read before it is written) shows.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NextProduct {
    /// The same C, bit for bit.
    Same,
    /// Other bits in `differ` elements, and that C's own verdict against the same reference.
    Differs { differ: usize, verdict: Box<Verdict> },
}

impl NextProduct {
    /// The first product's verdict, and the next product's C beside it where there is one: the
    /// check every run and measurement makes of its two products.
    pub fn judge_both(
        first: &[f32],
        next: Option<&[f32]>,
        judge: impl Fn(&[f32]) -> Verdict,
    ) -> (Verdict, Option<NextProduct>) {
        (judge(first), next.map(|next| NextProduct::of(first, next, &judge)))
    }

    /// `first` (verified) and `last` compared bit for bit; `judge` gives the last C's verdict
    /// where they differ.
    pub fn of(first: &[f32], last: &[f32], judge: impl FnOnce(&[f32]) -> Verdict) -> NextProduct {
        let differ = first.iter().zip(last).filter(|(a, b)| a.to_bits() != b.to_bits()).count();
        match differ {
            0 => NextProduct::Same,
            _ => NextProduct::Differs { differ, verdict: Box::new(judge(last)) },
        }
    }

    /// Whether the next product's C passes: the first's bits, or its own verdict.
    pub fn passed(&self) -> bool {
        match self {
            NextProduct::Same => true,
            NextProduct::Differs { verdict, .. } => verdict.passed(),
        }
    }
}

/// A kernel's parameters in the JSON: an object of names and values, in the step's order.
fn params_map<S: Serializer>(params: &Params, to: S) -> Result<S::Ok, S::Error> {
    to.collect_map(params.defines())
}

/// The figures computed from the report's fields, once, for the text and the JSON alike: the
/// product's work, its rate and its shares of the baselines, of the peak and of its own roof, per
/// second and per clock, and the verdict's summary numbers. A share is in percent; a figure that
/// does not apply (no timing, no cuBLAS, not a GPU, not verified, no clock read) is null.
#[derive(Clone, Debug, Serialize)]
pub struct Derived {
    /// 2·M·N·K.
    pub flops: f64,
    /// The step's rate (GFLOP/s), where it was timed.
    pub gflops: Option<f64>,
    pub cublas_sgemm_gflops: Option<f64>,
    pub cublas_tf32_gflops: Option<f64>,
    pub share_of_cublas_sgemm: Option<f64>,
    pub share_of_cublas_tf32: Option<f64>,
    /// The GPU's FP32 peak (GFLOP/s), and the step's rate as a share of it.
    pub fp32_peak_gflops: Option<f64>,
    pub share_of_fp32_peak: Option<f64>,
    /// The roof of the step's arithmetic beside FP32's ("TF32 peak", "a seventh of INT8 peak":
    /// shared among the products a result takes), its GFLOP/s where this GPU's is known, and
    /// the step's rate as a share of it. None for a step held to FP32 and off a GPU.
    pub roof: Option<String>,
    pub roof_gflops: Option<f64>,
    pub share_of_roof: Option<f64>,
    /// Each share of a cuBLAS baseline per clock: the share times the baseline's SM clock over
    /// the step's, where both were read.
    pub share_of_cublas_sgemm_per_clock: Option<f64>,
    pub share_of_cublas_tf32_per_clock: Option<f64>,
    /// Whether every check of the first C passed (the verdict), and the product after it.
    pub passed: Option<bool>,
    pub next_product_passed: Option<bool>,
    /// Whether the step's own kernel multiplied any of C, for a step with an FP32 path (null for
    /// the others, whose kernel makes all of C): false where every row or column went around it.
    pub kernel_ran: Option<bool>,
    /// ‖ΔC‖/‖C‖, the error a correct result is expected to have and the limit, on the same
    /// scale; and the worst element's error and the normwise error as shares of their bounds.
    pub relative_error: Option<f64>,
    pub relative_expected: Option<f64>,
    pub relative_limit: Option<f64>,
    pub worst_of_bound: Option<f64>,
    pub normwise_of_limit: Option<f64>,
}

impl Derived {
    /// What `report`'s text computes from its fields.
    pub fn of(report: &Report) -> Derived {
        let flops = report.shape.flops();
        let timed = report.time.samples > 0;
        let peak = match &report.device {
            RanOn::Gpu(d) => Some(d.peak_gflops()),
            _ => None,
        };
        let v = report.verdict.as_ref();
        let roof = match &report.device {
            RanOn::Gpu(d) => {
                let (by, roof) = report.precision.roof(d.peak_gflops(), d.tf32_peak_gflops());
                let products = report.paths.as_ref().and_then(|(p, _)| p.products).unwrap_or(1);
                Some(crate::verify::shared_roof(by, roof, products)).filter(|(by, _)| by != "FP32 peak")
            }
            _ => None,
        };
        let per_clock = |b: Option<Stats>| {
            let (b, mine) = (b?, report.time.held?);
            Some(crate::clock::per_clock(report.share_of(b), mine, b.held?)).filter(|_| timed)
        };
        Derived {
            flops,
            gflops: timed.then(|| report.gflops()),
            cublas_sgemm_gflops: report.cublas.map(|c| c.gflops(flops)),
            cublas_tf32_gflops: report.cublas_tf32.map(|c| c.gflops(flops)),
            share_of_cublas_sgemm: report.cublas.filter(|_| timed).map(|c| report.share_of(c)),
            share_of_cublas_tf32: report.cublas_tf32.filter(|_| timed).map(|c| report.share_of(c)),
            fp32_peak_gflops: peak,
            share_of_fp32_peak: peak.filter(|_| timed).map(|p| 100.0 * report.gflops() / p),
            roof_gflops: roof.as_ref().and_then(|r| r.1),
            share_of_roof: roof
                .as_ref()
                .and_then(|r| r.1)
                .filter(|_| timed)
                .map(|r| 100.0 * report.gflops() / r),
            roof: roof.map(|r| r.0),
            share_of_cublas_sgemm_per_clock: per_clock(report.cublas),
            share_of_cublas_tf32_per_clock: per_clock(report.cublas_tf32),
            passed: v.map(|v| v.passed()),
            next_product_passed: report.next_product.as_ref().map(|l| l.passed()),
            kernel_ran: report.paths.as_ref().map(|(p, _)| p.kernel_ran(report.shape)),
            relative_error: v.map(|v| v.normwise.relative()),
            relative_expected: v.map(|v| v.normwise.relative_expected()),
            relative_limit: v.map(|v| v.normwise.relative_limit()),
            worst_of_bound: v.map(|v| v.worst.ratio()),
            normwise_of_limit: v.map(|v| v.normwise.ratio()),
        }
    }
}

/// One run's report: every figure the text shows is a field here, or is computed once from the
/// fields by [`Derived`] (rates and shares, which the JSON carries beside the fields).
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub step: String,
    pub device: RanOn,
    pub shape: Shape,
    /// What A and B are: a family and its seed, or the files they came from.
    pub inputs: String,
    pub kernel: Option<KernelFacts>,
    pub time: Stats,
    /// cuBLAS SGEMM on the same inputs, in the same run.
    pub cublas: Option<Stats>,
    /// cuBLAS with TF32 tensor-core math on the same inputs, for a step that computes in TF32.
    pub cublas_tf32: Option<Stats>,
    /// The arithmetic the step claims: a TF32 step is set against the TF32 peak.
    pub precision: Precision,
    pub verdict: Option<Verdict>,
    /// The product after the timed ones beside the first (a GPU run that verifies).
    pub next_product: Option<NextProduct>,
    /// ‖ΔC‖/‖C‖ of each baseline on the same inputs, against the same reference.
    pub baseline_errors: Vec<(&'static str, f64)>,
    /// Why a column is missing, e.g. no cuBLAS library.
    pub notes: Vec<String>,
    /// For a step with an FP32 path: the rows and columns it took, and the whole time of the
    /// product that timed it apart (milliseconds).
    pub paths: Option<(Paths, f64)>,
    /// Each profile's time the emulator's time model predicts (an emulated run), made
    /// by the run ([`Report::with_prediction`]).
    pub predicted: Option<Predicted>,
}

impl Report {
    /// The report of `step` (as the report names it) on `device` for `inputs`, in `precision`,
    /// timed `time` (zero samples: untimed) and verified as `verdict` (None: not verified). The
    /// `with_` methods add the rest.
    pub fn new(
        step: String,
        device: RanOn,
        inputs: &Inputs,
        precision: Precision,
        time: Stats,
        verdict: Option<Verdict>,
    ) -> Report {
        Report {
            step,
            device,
            shape: inputs.shape,
            inputs: inputs.source.clone(),
            kernel: None,
            time,
            cublas: None,
            cublas_tf32: None,
            precision,
            verdict,
            next_product: None,
            baseline_errors: Vec::new(),
            notes: Vec::new(),
            paths: None,
            predicted: None,
        }
    }

    /// With the kernel's facts.
    pub fn with_kernel(self, kernel: KernelFacts) -> Report {
        Report { kernel: Some(kernel), ..self }
    }

    /// With cuBLAS SGEMM's and TF32's times, and each baseline's ‖ΔC‖/‖C‖.
    pub fn with_baselines(
        self,
        (cublas, cublas_tf32): (Option<Stats>, Option<Stats>),
        baseline_errors: Vec<(&'static str, f64)>,
    ) -> Report {
        Report { cublas, cublas_tf32, baseline_errors, ..self }
    }

    /// With the product after the timed ones set beside the first.
    pub fn with_next_product(self, next_product: Option<NextProduct>) -> Report {
        Report { next_product, ..self }
    }

    /// With what the FP32 path took and the whole time of the product that timed it apart.
    pub fn with_paths(self, paths: Option<(Paths, f64)>) -> Report {
        Report { paths, ..self }
    }

    /// With the time model's prediction, for an emulated run with its kernel's facts: the
    /// model applied to what the emulator counted and recorded (nothing otherwise).
    pub fn with_prediction(self) -> Report {
        let (RanOn::Emulated(e), Some(k)) = (&self.device, &self.kernel) else { return self };
        let r = &k.resources;
        let predicted = Predicted::of(
            e.gpu,
            (&e.traffic, &e.recorded),
            (r.blocks_per_sm, r.registers, e.serialized_wgmma),
            (r.local_bytes, r.spill_bytes),
            self.shape,
            &e.others,
            self.precision.is_tf32(),
        );
        Report { predicted: Some(predicted), ..self }
    }

    /// With a note on a missing column.
    pub fn with_note(mut self, note: String) -> Report {
        self.notes.push(note);
        self
    }

    pub fn gflops(&self) -> f64 {
        self.time.gflops(self.shape.flops())
    }

    /// This step's rate as a share of a baseline's timed on the same shape, in percent.
    pub fn share_of(&self, baseline: Stats) -> f64 {
        100.0 * baseline.median_ms / self.time.median_ms
    }

    /// This step's rate as a share of cuBLAS SGEMM's, in percent.
    pub fn share_of_cublas(&self) -> Option<f64> {
        self.cublas.map(|c| self.share_of(c))
    }
}

/// A product's work: GFLOP to one decimal from 1 up, MFLOP below (a 256³ product is 33.6 MFLOP,
/// not "0.0 GFLOP").
fn gflop(flops: f64) -> String {
    if flops >= 1e9 { format!("{:.1} GFLOP", flops / 1e9) } else { format!("{:.1} MFLOP", flops / 1e6) }
}

/// Why a timed run has no clock line: NVML's own reason where it could not open the GPU, else
/// a sampler that read nothing.
fn not_held(nvml: Option<&str>) -> String {
    match nvml {
        Some(why) => format!("{why}, so the clock, power and energy are not known"),
        None => "NVML read nothing while the products were timed".to_owned(),
    }
}

/// The spill of a kernel that spills, for the report: the bytes spill code stores and loads a
/// thread (ptxas), and their cost, the local-memory traffic of `blocks` blocks of `threads` each
/// time the spill code runs once, which the time above includes. None where nothing spills.
pub fn spill_line(r: &crate::gpu::Resources, threads: u32, blocks: u64) -> Option<String> {
    if r.spill_bytes == 0 {
        return None;
    }
    let each = if r.spill_stores + r.spill_loads > 0 {
        format!(
            "{} stored and {} loaded a thread by spill code (ptxas's report)",
            bytes(u64::from(r.spill_stores)),
            bytes(u64::from(r.spill_loads))
        )
    } else {
        format!("{} of local memory a thread (the driver's figure)", bytes(u64::from(r.spill_bytes)))
    };
    let traffic = u64::from(r.spill_bytes) * u64::from(threads) * blocks;
    Some(format!(
        "registers spilled to local memory: {each} · {} of local-memory traffic through L1 each time the grid runs the spill code, which the run's time includes; the same kernel without the spill shows what it costs",
        bytes(traffic)
    ))
}

/// What a thread's local memory beyond its spills holds: arrays the compiler could not keep in
/// registers (indexed where it cannot tell the index at compile time), each access a load or
/// store through the L1.
fn local_arrays(local: u32, spilled: u32) -> String {
    if local > spilled {
        format!(
            " ({} of arrays in local memory: every access to them is a load or store through the L1)",
            bytes(u64::from(local - spilled))
        )
    } else {
        String::new()
    }
}

/// A rate as the reports and compare's tables print it: whole numbers from 100 up, one decimal
/// from 10, two below (three significant figures at small values).
pub fn rate(gflops: f64) -> String {
    match gflops {
        g if g < 10.0 => format!("{g:.2}"),
        g if g < 100.0 => format!("{g:.1}"),
        g => format!("{g:.0}"),
    }
}

fn dims((x, y, z): (u32, u32, u32)) -> String {
    format!("{x}×{y}×{z}")
}

impl Report {
    /// Whether the run emulated a few blocks and scaled their counts (`--scaled`).
    fn scaled(&self) -> bool {
        matches!(&self.device, RanOn::Emulated(e) if e.traffic.scaled_of > 0)
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let flops = self.shape.flops();
        match &self.device {
            RanOn::Gpu(d) => writeln!(
                f,
                "{} on {} ({}, {} SMs at {} MHz, FP32 peak {:.1} TFLOP/s)",
                self.step,
                d.name,
                d.arch(),
                d.sms,
                d.clock_mhz,
                d.peak_gflops() / 1e3
            )?,
            RanOn::Cpu => writeln!(f, "{} on the CPU (one thread)", self.step)?,
            RanOn::Emulated(e) => writeln!(
                f,
                "{} {DEVICE_LINE} (its PTX for {}: {} thread-instructions{} in {:.2} s on {} thread{})",
                self.step,
                e.arch,
                count(
                    e.traffic.thread_instructions
                        + e.others.iter().map(|(_, t)| t.thread_instructions).sum::<u64>()
                ),
                if e.traffic.scaled_of > 0 { ", scaled from a few blocks," } else { "" },
                e.seconds,
                e.workers,
                if e.workers == 1 { "" } else { "s" }
            )?,
        }
        writeln!(
            f,
            "  shape    {} · {} · {} of f32 operands · inputs {}",
            self.shape,
            gflop(flops),
            bytes(self.shape.f32_bytes()),
            self.inputs
        )?;
        if let Some(k) = &self.kernel {
            let r = &k.resources;
            if !k.params.is_empty() {
                writeln!(f, "  params   {}", k.params)?;
            }
            writeln!(
                f,
                "  launch   grid {} · block {} ({} threads) · shared {} per block ({} static + {} dynamic)",
                dims(k.geometry.grid),
                dims(k.geometry.block),
                k.geometry.threads(),
                bytes(u64::from(r.static_smem + r.dynamic_smem)),
                bytes(u64::from(r.static_smem)),
                bytes(u64::from(r.dynamic_smem)),
            )?;
            if let Some(why) = &k.why {
                writeln!(f, "  choice   {why}")?;
            }
            if let Some((label, line)) = &k.adds {
                writeln!(f, "  {label:<8} {line}")?;
            }
            if let Some(whole) = k.geometry.whole_rows.filter(|&w| w < k.geometry.grid.1) {
                let sharers = (k.geometry.grid.1 - whole) * k.geometry.grid.0;
                if whole == 0 {
                    writeln!(
                        f,
                        "  share    all {sharers} blocks share every tile, slice by slice (Stream-K)"
                    )?;
                } else {
                    writeln!(
                        f,
                        "  share    grid rows 0–{} take a tile per block; the {sharers} blocks of the other {} rows share the tile rows from {whole} on, slice by slice (Stream-K)",
                        whole - 1,
                        k.geometry.grid.1 - whole,
                    )?;
                }
            }
            if let Some(p) = k.padded {
                writeln!(
                    f,
                    "  padding  rows padded to 16 bytes: the kernel multiplies the {p} product of zero-padded copies, made in the product and counted in its time"
                )?;
            }
            writeln!(
                f,
                "  kernel   {} registers/thread · {} spilled · {} local/thread{} · resident blocks/SM: {} · occupancy {:.0}%",
                r.registers,
                bytes(u64::from(r.spill_bytes)),
                bytes(u64::from(r.local_bytes)),
                local_arrays(r.local_bytes, r.spill_bytes),
                r.blocks_per_sm,
                100.0 * r.occupancy
            )?;
            if let Some(line) = spill_line(r, k.geometry.threads(), k.geometry.blocks()) {
                writeln!(f, "  spills   {line}")?;
            }
        }
        if let Some((p, total)) = &self.paths {
            writeln!(f, "{}", paths_line(self.shape, p, *total))?;
        }
        if let RanOn::Emulated(e) = &self.device {
            writeln!(f, "  traffic  {}", traffic_line(&e.traffic, e.gpu.machine.sms))?;
            if e.traffic.scaled_of > 0 {
                writeln!(
                    f,
                    "  scaled   {} of the {} blocks emulated, one of each kind (every one along a side whose blocks differ), their counts multiplied out",
                    count(e.traffic.scaled_ran),
                    count(e.traffic.scaled_of)
                )?;
                if let Some([k0, k1]) = e.depths {
                    writeln!(
                        f,
                        "           at K = {k0} and {k1} (the launch planned for K = {}): each count and time carried to K = {} along the line through the two",
                        self.shape.k, self.shape.k
                    )?;
                }
            }
            // A grid of one wave (a persistent kernel's): its blocks' first tiles are what the
            // first round asks of L2 at once, which the order of the tiles sets.
            let blocks = self.kernel.as_ref().map(|k| k.geometry.blocks());
            if let Some(blocks) =
                blocks.filter(|&b| e.traffic.first_tiles > 0 && b <= u64::from(e.gpu.machine.sms))
            {
                writeln!(
                    f,
                    "  tiles    the {blocks} blocks' first copies read {} distinct tiles of the operands: what the first \
                     round asks of L2 at once (an order that shares tiles asks for fewer)",
                    count(e.traffic.first_tiles)
                )?;
            }
            for (name, t) in &e.others {
                writeln!(f, "           {name}: {}", traffic_line(t, e.gpu.machine.sms))?;
            }
            if let Some(predicted) = &self.predicted {
                write!(f, "{}", crate::predicted::lines(predicted))?;
            }
        } else {
            self.time_lines(f)?;
        }
        self.verdict_lines(f)
    }
}

impl Report {
    fn time_lines(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let flops = self.shape.flops();
        let t = &self.time;
        write!(
            f,
            "  time     {:.3} ms median (min {:.3}, max {:.3}) · {} samples",
            t.median_ms, t.min_ms, t.max_ms, t.samples
        )?;
        match (&self.device, t.batch) {
            (RanOn::Cpu, _) => writeln!(f)?,
            (_, 1) => writeln!(f, " of 1 product")?,
            (_, b) => writeln!(f, ", each the mean of {b} back-to-back products")?,
        }
        let d = Derived::of(self);
        write!(f, "  speed    {} GFLOP/s", rate(d.gflops.unwrap_or(0.0)))?;
        if let (Some(c), Some(share)) = (self.cublas_tf32, d.share_of_cublas_tf32) {
            write!(
                f,
                " · {share:.1}% of cuBLAS TF32 ({} GFLOP/s, {:.3} ms)",
                rate(c.gflops(flops)),
                c.median_ms
            )?;
        }
        if let (Some(c), Some(share)) = (self.cublas, d.share_of_cublas_sgemm) {
            write!(
                f,
                " · {share:.1}% of cuBLAS SGEMM ({} GFLOP/s, {:.3} ms)",
                rate(c.gflops(flops)),
                c.median_ms
            )?;
        }
        if let RanOn::Gpu(g) = &self.device {
            // Every step off the TF32 path is set against the FP32 peak; one on the tensor cores
            // also (or only, for TF32) against its own roof, shared among the products a result
            // takes (step 11's moduli).
            if let (false, Some(share)) = (self.precision.is_tf32(), d.share_of_fp32_peak) {
                write!(f, " · {share:.1}% of FP32 peak")?;
            }
            match (&d.roof, d.share_of_roof) {
                (Some(by), Some(share)) => write!(f, " · {share:.1}% of {by}")?,
                (Some(by), None) => write!(f, " · {by} of {} not known", g.arch())?,
                (None, _) => {}
            }
        }
        writeln!(f)?;
        if let RanOn::Gpu(_) = &self.device {
            self.clock_line(f)?;
        }
        if let Some(p) = self.kernel.as_ref().and_then(|k| k.predicted_us) {
            let measured = 1e3 * t.median_ms;
            writeln!(
                f,
                "  model    predicted {p:.1} µs · measured {measured:.1} µs ({:.2}× the prediction)",
                measured / p
            )?;
        }
        Ok(())
    }

    /// The SM clock and power each timed product held, the energy of one product, and the
    /// shares per clock: a kernel that runs at a lower clock than its baseline does more per
    /// clock than its share per second says, and under the power cap the clock it holds follows
    /// the energy its products take.
    fn clock_line(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Some(mine) = self.time.held else {
            let nvml = match &self.device {
                RanOn::Gpu(d) => d.nvml.as_deref(),
                _ => None,
            };
            return writeln!(f, "  clock    not read: {}", not_held(nvml));
        };
        let flops = self.shape.flops();
        let per_tflop = |h: Held| match h.joules_per_tflop(flops) {
            Some(per) => format!("{per:.2} J/TFLOP"),
            None => "energy not read".to_owned(),
        };
        let product = match (mine.joules, mine.no_energy) {
            (Some(j), _) => format!(" ({} a product)", joules(j)),
            (None, Some(why)) => format!(" ({})", why.words()),
            (None, None) => String::new(),
        };
        write!(
            f,
            "  clock    SM {:.0} MHz, {:.0} W, {}{product} while timed",
            mine.sm_mhz,
            mine.watts,
            per_tflop(mine)
        )?;
        let d = Derived::of(self);
        for (name, baseline, per_clock) in [
            ("cuBLAS TF32", self.cublas_tf32, d.share_of_cublas_tf32_per_clock),
            ("cuBLAS SGEMM", self.cublas, d.share_of_cublas_sgemm_per_clock),
        ] {
            if let (Some(held), Some(per_clock)) = (baseline.and_then(|b| b.held), per_clock) {
                write!(
                    f,
                    " · {name} {:.0} MHz, {:.0} W, {}: {per_clock:.1}% of its rate per clock",
                    held.sm_mhz,
                    held.watts,
                    per_tflop(held)
                )?;
            }
        }
        writeln!(f)
    }

    fn verdict_lines(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.verdict {
            None if self.scaled() => {
                writeln!(f, "  verify   skipped: a scaled run computes only a few blocks of C")?
            }
            None => writeln!(f, "  verify   skipped (--no-verify)")?,
            Some(v) => {
                let (w, n) = (&v.worst, &v.normwise);
                let verdict = |ok: bool| if ok { "PASS" } else { "FAIL" };
                // Where every row or column went around the kernel, the verdict is not its.
                let not_run = self.paths.as_ref().and_then(|(p, _)| p.not_run(self.shape));
                let whose =
                    if not_run.is_some() { " (the FP32 path alone: the kernel did not run)" } else { "" };
                writeln!(
                    f,
                    "  verify   {}{whose} · held to {} limits{}{} · reference: {}",
                    verdict(v.passed()),
                    v.precision.held_to(),
                    if v.precision.held_to() == v.precision {
                        String::new()
                    } else {
                        format!(", a strict FP32 product's, as {} claims", v.precision)
                    },
                    if v.separates {
                        String::new()
                    } else {
                        let held = v.precision.held_to();
                        format!(
                            ", which at this shape cannot tell {held} from {} (--exact checks every term)",
                            held.lower().0
                        )
                    },
                    v.source
                )?;
                write!(
                    f,
                    "           per element  {} · {} of {} outside the bound",
                    verdict(v.outside == 0),
                    v.outside,
                    v.checked
                )?;
                let (nan, infinite) = v.not_finite;
                let finite = v.checked - nan - infinite;
                if w.ratio() > 0.0 {
                    write!(
                        f,
                        " · worst C[{},{}] = {:.7e}, want {:.7e}, bound {:.1e} ({})",
                        w.row,
                        w.col,
                        w.got,
                        w.want,
                        w.bound,
                        share(w.ratio(), 3, "of it")
                    )?;
                } else if nan + infinite == 0 {
                    write!(f, " · every element exact")?;
                } else if finite > 0 {
                    write!(f, " · every finite element exact")?;
                }
                // Where the reference is not finite, C passes by being the same: say so, and
                // how often, since it says nothing of the arithmetic.
                match (nan, infinite) {
                    (0, 0) => writeln!(f)?,
                    _ => writeln!(
                        f,
                        " · C is NaN where the reference is NaN ({nan} of {}) and infinite where it is ({infinite})",
                        v.checked
                    )?,
                }
                writeln!(
                    f,
                    "           normwise     {} · ‖ΔC‖/‖C‖ = {:.1e}, expected {:.1e}, limit {:.1e} ({})",
                    verdict(n.passed()),
                    n.relative(),
                    n.relative_expected(),
                    n.relative_limit(),
                    share(n.ratio(), 3, "of it")
                )?;
                if !self.baseline_errors.is_empty() {
                    let each: Vec<String> =
                        self.baseline_errors.iter().map(|(name, e)| format!("{name} {e:.1e}")).collect();
                    writeln!(f, "           ‖ΔC‖/‖C‖ of  {}", each.join(" · "))?;
                }
                // A GPU run multiplies again after the timed ones; an emulated run, once more.
                let next = match self.device {
                    RanOn::Emulated(_) => "a second product",
                    _ => "a product after the timed ones",
                };
                match &self.next_product {
                    Some(NextProduct::Same) => writeln!(
                        f,
                        "           next product PASS · {next}, on output poisoned again, gives the same C bit for bit"
                    )?,
                    Some(NextProduct::Differs { differ, verdict: last }) => writeln!(
                        f,
                        "           next product {} · {next}, on output poisoned again, differs in {differ} of {} elements{}",
                        verdict(last.passed()),
                        v.checked,
                        if last.passed() {
                            " (within the same limits: the kernel's sums are not in a fixed order)".to_owned()
                        } else {
                            format!(": {}", last.summary())
                        }
                    )?,
                    None => {}
                }
                if let Some(m) = v.mismatched {
                    writeln!(
                        f,
                        "           exact        {} · {m} of {} elements differ from the reference",
                        verdict(m == 0),
                        v.checked
                    )?;
                }
            }
        }
        if let RanOn::Gpu(d) = &self.device {
            let operands = self.shape.f32_bytes();
            if operands <= u64::from(d.l2_bytes) {
                writeln!(
                    f,
                    "  note     A, B and C ({}) fit in the {} L2 cache: back-to-back products find them there",
                    bytes(operands),
                    bytes(u64::from(d.l2_bytes))
                )?;
            }
        }
        for note in &self.notes {
            writeln!(f, "  note     {note}")?;
        }
        if let Some(not_run) = self.paths.as_ref().and_then(|(p, _)| p.not_run(self.shape)) {
            writeln!(f, "  note     {not_run}")?;
        }
        Ok(())
    }
}

/// Where A's rows and B's columns went, and the FP32 path's share of one product's time.
pub fn paths_line(shape: Shape, p: &Paths, total_ms: f64) -> String {
    let own = &p.own;
    let time = match p.ms {
        Some(ms) if total_ms > 0.0 => format!(
            " · the FP32 path took {:.0}% of a product timed apart ({ms:.3} of {total_ms:.3} ms)",
            100.0 * ms / total_ms
        ),
        _ => String::new(),
    };
    let more = p.more.as_ref().map(|(label, n)| format!("\n  {label:<8} {n}")).unwrap_or_default();
    format!(
        "  paths    A's rows: {} {own}, {} in FP32 · B's columns: {} {own}, {} in FP32{time}{more}",
        shape.m - p.rows.min(shape.m),
        p.rows,
        shape.n - p.cols.min(shape.n),
        p.cols
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::verify;

    /// The same bits pass; other bits are judged by the reference: a last element off in its
    /// last place passes (sums in another order), a tile left NaN by a count never reset fails.
    #[test]
    fn the_next_product_is_judged_by_its_bits_then_by_the_reference() {
        let shape = Shape::new(4, 4, 64).unwrap();
        let want = crate::reference::cpu(&crate::Inputs::random(shape, 1));
        let first: Vec<f32> = want.c.iter().map(|&v| v as f32).collect();
        let judge = |c: &[f32]| verify(shape, c, &want, Precision::Fp32);
        assert!(matches!(NextProduct::of(&first, &first, judge), NextProduct::Same));
        let mut near = first.clone();
        near[3] = f32::from_bits(near[3].to_bits() + 1);
        let last = NextProduct::of(&first, &near, judge);
        assert!(matches!(last, NextProduct::Differs { differ: 1, .. }) && last.passed(), "{last:?}");
        let mut stale = first.clone();
        (stale[5], stale[6]) = (f32::NAN, f32::NAN);
        let last = NextProduct::of(&first, &stale, judge);
        assert!(matches!(last, NextProduct::Differs { differ: 2, .. }) && !last.passed(), "{last:?}");
    }

    /// A kernel that spills gets a line naming the bytes stored and loaded a thread and their
    /// traffic over the grid; one that does not, none.
    #[test]
    fn a_spill_is_named_with_its_stores_loads_and_traffic() {
        let mut r = crate::gpu::Resources {
            registers: 255,
            static_smem: 0,
            dynamic_smem: 0,
            local_bytes: 32,
            spill_bytes: 32,
            spill_stores: 16,
            spill_loads: 16,
            threads_per_block: 384,
            blocks_per_sm: 1,
            occupancy: 0.19,
            resident_blocks: 132,
        };
        let line = spill_line(&r, 384, 1000).unwrap();
        assert!(line.contains("16 B stored and 16 B loaded a thread by spill code"), "{line}");
        assert!(line.contains("11.7 MiB of local-memory traffic"), "{line}");
        (r.spill_stores, r.spill_loads) = (0, 0);
        assert!(spill_line(&r, 384, 1000).unwrap().contains("the driver's figure"));
        r.spill_bytes = 0;
        assert_eq!(spill_line(&r, 384, 1000), None);
    }

    /// Local memory beyond the spills is named as arrays, with their bytes; spills alone add
    /// nothing to the line.
    #[test]
    fn local_arrays_are_named_with_their_bytes() {
        assert!(local_arrays(320, 0).contains("320 B of arrays in local memory"), "{}", local_arrays(320, 0));
        assert!(local_arrays(400, 80).contains("320 B of arrays"), "{}", local_arrays(400, 80));
        assert_eq!(local_arrays(80, 80), "");
        assert_eq!(local_arrays(0, 0), "");
    }

    /// A missing clock or energy figure says why, in words that are true for the case: NVML's
    /// own reason, no counter, or a stretch too short for the counter's steps.
    #[test]
    fn a_missing_clock_or_energy_figure_says_why() {
        let why = "NVML (libnvidia-ml.so.1, part of the NVIDIA driver) was not found";
        assert!(not_held(Some(why)).starts_with(why), "{}", not_held(Some(why)));
        assert!(!not_held(None).contains("not found"));
        use crate::clock::NoEnergy;
        let short = NoEnergy::TooShort { steps: 1, stretch_ms: 42.4 }.words();
        assert!(short.contains("42 ms saw 1 step of") && short.contains("--reps"), "{short}");
        assert!(NoEnergy::TooShort { steps: 0, stretch_ms: 3.0 }.words().contains("0 steps"));
        assert!(NoEnergy::NoCounter.words().contains("no energy counter"));
    }

    #[test]
    fn small_products_are_counted_in_mflop() {
        assert_eq!(gflop(2.0 * 256f64.powi(3)), "33.6 MFLOP");
        assert_eq!(gflop(2.0 * 4096f64.powi(3)), "137.4 GFLOP");
    }
}

//! Kernels run on the PTX emulator, so that the tests execute every SIMT kernel of the course
//! without a GPU: each kernel, variant, stage and exercise at small shapes (odd ones among them)
//! against the f64 reference, each exercise's starting file caught, and planted hazards (a
//! missing barrier, an index off by one, a barrier some threads skip) named with their line.
//! The tests that use these need NVRTC for the PTX (`nvrtc_…`).

use anyhow::Result;

use crate::emulated;
use crate::matrix::{Family, Inputs, Shape};
use crate::reference;
use crate::run::EmulatorStep;
use crate::step::GpuStep;
use crate::testing::exercises::Exercise;
use crate::testing::faults::{self, FaultClass, PlantedFault};
use crate::verify::{self, Verdict};

/// Small shapes, square and odd, with a tile's edge and a single element among them.
pub const EMULATED_SHAPES: &[(usize, usize, usize)] =
    &[(64, 64, 64), (67, 45, 129), (1, 1, 1), (33, 7, 5), (130, 257, 40)];

/// `step`'s C on the emulator at `shape` (its parameters for the shape, then `overrides`), with
/// the race check on, and its verdict; or the fault that stopped it.
pub fn emulate(step: &GpuStep, overrides: &[(&str, u32)], shape: Shape) -> Result<(Vec<f32>, Verdict)> {
    emulate_counted(step, overrides, shape).map(|(c, v, _)| (c, v))
}

/// [`emulate`], with what the step's kernel moved.
pub fn emulate_counted(
    step: &GpuStep,
    overrides: &[(&str, u32)],
    shape: Shape,
) -> Result<(Vec<f32>, Verdict, emulated::Traffic)> {
    let overrides: Vec<(String, u32)> = overrides.iter().map(|(n, v)| ((*n).to_owned(), *v)).collect();
    let (params, _) = step.params_for(shape, emulated::profile::H100.machine.sms, &overrides)?;
    let inputs = Inputs::family(shape, 7, Family::Uniform);
    let (c, (traffic, _)) =
        EmulatorStep::new(step, params, shape, false, &emulated::profile::H100)?.multiply(&inputs, true)?;
    let verdict = verify::verify(shape, &c, &reference::cpu(&inputs), step.precision);
    Ok((c, verdict, traffic))
}

/// `step`'s C on the emulator for `inputs` (its parameters for their shape), with the race check
/// on, and its verdict against the reference of those inputs.
pub fn emulate_inputs(step: &GpuStep, inputs: &Inputs) -> Result<(Vec<f32>, Verdict)> {
    let (params, _) = step.params_for(inputs.shape, emulated::profile::H100.machine.sms, &[])?;
    let (c, _) = EmulatorStep::new(step, params, inputs.shape, false, &emulated::profile::H100)?
        .multiply(inputs, true)?;
    let verdict = verify::verify(inputs.shape, &c, &reference::cpu(inputs), step.precision);
    Ok((c, verdict))
}

/// Products among FP32's subnormals (`tiny:66`, C normal) at shapes from K = 256 to 1000.
pub const TINY_SHAPES: &[(usize, usize, usize)] = &[(32, 32, 256), (33, 17, 1000)];

/// `step` PASSes on the emulator where every product is subnormal (`tiny:66`) at
/// [`TINY_SHAPES`], and `faulty` (the step with a planted fault) FAILs there.
pub fn assert_tiny_products_pass_and_a_fault_fails(step: &GpuStep, faulty: &GpuStep) {
    for &(m, n, k) in TINY_SHAPES {
        let inputs = Inputs::family(Shape { m, n, k }, 5, Family::Tiny(66));
        let v = emulate_inputs(step, &inputs).map(|(_, v)| v);
        let v = v.unwrap_or_else(|e| panic!("{} on tiny:66 at {}: {e}", step.name, inputs.shape));
        assert!(v.passed(), "{} on tiny:66 at {}: {}", step.name, inputs.shape, v.summary());
        let f = emulate_inputs(faulty, &inputs).map(|(_, v)| v);
        let f = f.unwrap_or_else(|e| panic!("{} (planted) on tiny:66 at {}: {e}", step.name, inputs.shape));
        assert!(!f.passed(), "{} (planted) on tiny:66 at {}: {}", step.name, inputs.shape, f.summary());
    }
}

/// The timeline of `block` of `step`'s kernel at `shape` (`sanitize`: with the race check), as
/// `--picture-timeline` records it; the error of the run, or of a block it did not run.
pub fn timeline(
    step: &GpuStep,
    overrides: &[(&str, u32)],
    shape: Shape,
    block: [u32; 3],
    sanitize: bool,
) -> Result<emulated::Timeline> {
    let overrides: Vec<(String, u32)> = overrides.iter().map(|(n, v)| ((*n).to_owned(), *v)).collect();
    let (params, _) = step.params_for(shape, emulated::profile::H100.machine.sms, &overrides)?;
    let inputs = Inputs::family(shape, 7, Family::Uniform);
    let mut e = EmulatorStep::new(step, params, shape, false, &emulated::profile::H100)?;
    e.machine.timeline = Some((crate::gpu::ENTRY.to_owned(), block));
    e.multiply(&inputs, sanitize)?;
    e.machine.take_timeline().ok_or_else(|| anyhow::anyhow!("block {block:?} did not run"))
}

/// `step` PASSes on the emulator at each of `shapes`.
pub fn assert_emulated_pass(step: &GpuStep, overrides: &[(&str, u32)], shapes: &[(usize, usize, usize)]) {
    for &(m, n, k) in shapes {
        let shape = Shape { m, n, k };
        match emulate(step, overrides, shape) {
            Ok((_, v)) => assert!(
                v.passed(),
                "{} ({}) {overrides:?} at {shape} on the emulator: worst C[{},{}] = {}, want {}",
                step.name,
                step.file,
                v.worst.row,
                v.worst.col,
                v.worst.got,
                v.worst.want
            ),
            Err(e) => panic!("{} ({}) {overrides:?} at {shape} on the emulator: {e}", step.name, step.file),
        }
    }
}

/// A scaled emulation (`--scaled`: a block of each kind, its counts multiplied out) counts what
/// the whole emulation counts at each of `shapes`: every count that adds up block by block, of
/// the step's kernel and of the kernels around it (which a scaled run runs whole).
pub fn assert_scaled_counts_match(step: &GpuStep, shapes: &[(usize, usize, usize)]) {
    for &(m, n, k) in shapes {
        let shape = Shape { m, n, k };
        let inputs = Inputs::family(shape, 7, Family::Uniform);
        let counted = |scale: bool| -> Result<(emulated::Traffic, Vec<emulated::Traffic>)> {
            let (params, _) = step.params_for(shape, emulated::profile::H100.machine.sms, &[])?;
            let mut e = EmulatorStep::new(step, params, shape, false, &emulated::profile::H100)?;
            e.machine.scale = scale;
            let (_, (own, others)) = e.multiply(&inputs, false)?;
            Ok((own, others.iter().map(|(_, t)| t.additive()).collect()))
        };
        let name = format!("{} at {shape}", step.name);
        let whole = counted(false).unwrap_or_else(|e| panic!("{name}, emulated whole: {e}"));
        let scaled = counted(true).unwrap_or_else(|e| panic!("{name}, scaled: {e}"));
        let (own, of) = (scaled.0.scaled_ran, scaled.0.scaled_of);
        assert!(of > 0 && own <= of + 9, "{name}: {own} blocks emulated of {of}");
        assert_eq!(
            (scaled.0.additive(), scaled.1),
            (whole.0.additive(), whole.1),
            "{name}: the scaled counts differ from the whole emulation's"
        );
    }
}

/// The sentence a scaled emulation of `step` at `shape` refuses with: its grid is not regular.
pub fn scaled_refusal(step: &GpuStep, shape: (usize, usize, usize)) -> String {
    let shape = Shape { m: shape.0, n: shape.1, k: shape.2 };
    let inputs = Inputs::family(shape, 7, Family::Uniform);
    let (params, _) =
        step.params_for(shape, emulated::profile::H100.machine.sms, &[]).expect("the step serves the shape");
    let mut e = EmulatorStep::new(step, params, shape, false, &emulated::profile::H100).expect("it compiles");
    e.machine.scale = true;
    match e.multiply(&inputs, false) {
        Ok(_) => panic!("{} at {shape}: scaled, though its grid is not regular", step.name),
        Err(e) => e.to_string(),
    }
}

/// `step` at `shape` with `params` (the step's own choice, then these): a scaled run refused
/// from its launch alone, before a block is emulated. The sentence, which must be the
/// emulator's refusal (so that a prediction emulates the launch whole instead).
pub fn scaled_refusal_before_emulating(
    step: &GpuStep,
    params: &[(&str, u32)],
    shape: (usize, usize, usize),
) -> String {
    let shape = Shape { m: shape.0, n: shape.1, k: shape.2 };
    let given: Vec<(String, u32)> = params.iter().map(|&(n, v)| (n.to_owned(), v)).collect();
    let (chosen, _) = step
        .params_for(shape, emulated::profile::H100.machine.sms, &given)
        .expect("the step serves the shape");
    let mut e = EmulatorStep::new(step, chosen, shape, false, &emulated::profile::H100).expect("it compiles");
    match e.scaled_stand_in(None) {
        Ok(_) => panic!("{} at {shape}: a scaled run is not refused before it emulates", step.name),
        Err(err) => {
            let not_scalable = matches!(err.downcast_ref(), Some(emulated::EmulatorError::NotScalable(_)));
            assert!(
                not_scalable,
                "{} at {shape}: refused, but not as a grid a scaled run cannot take: {err}",
                step.name
            );
            err.to_string()
        }
    }
}

/// The step with `source` (named `file`) in place of its kernel.
pub fn with_source(step: &GpuStep, file: &'static str, source: String) -> GpuStep {
    GpuStep { file, source: Box::leak(source.into_boxed_str()), ..*step }
}

/// The step's kernel with the text `find` replaced once by `replace` (which must be there).
pub fn planted(step: &GpuStep, find: &str, replace: &str) -> GpuStep {
    let whole = crate::testing::whole(step);
    assert!(whole.contains(find), "{}: the planted edit's text `{find}` is not in the kernel", step.file);
    with_source(step, step.file, whole.replacen(find, replace, 1))
}

/// On the emulator at `shape`, `step` stops with a fault whose one sentence contains each of
/// `says` and names a line of the step's kernel file.
pub fn assert_fault_named(
    step: &GpuStep,
    overrides: &[(&str, u32)],
    shape: (usize, usize, usize),
    says: &[&str],
) -> String {
    let (m, n, k) = shape;
    let message = match emulate(step, overrides, Shape { m, n, k }) {
        Ok((_, v)) => {
            panic!("{}: the planted hazard ran to the end (verify passed: {})", step.file, v.passed())
        }
        Err(e) => e.to_string(),
    };
    assert!(
        message.contains(&format!("{}:", step.file)),
        "the fault names no line of {}: {message}",
        step.file
    );
    for s in says {
        assert!(message.contains(s), "`{s}` missing from the fault: {message}");
    }
    assert_eq!(message.lines().count(), 1, "one sentence: {message}");
    message
}

/// Each exercise's starting file, run on the emulator at a small shape, fails (its verdict, or a
/// fault the emulator names), as the chapter promises a learner who has not done it yet.
pub fn assert_starting_files_fail(step: &GpuStep, exercises: &[Exercise], shape: (usize, usize, usize)) {
    let (m, n, k) = shape;
    for e in exercises {
        let started = with_source(step, e.file, e.start.to_owned());
        if let Ok((_, v)) = emulate(&started, &[], Shape { m, n, k }) {
            assert!(!v.passed(), "{}: the starting file passes before its TODOs are done", e.file);
        }
    }
}

/// Where a class of planted fault runs on the emulator: small shapes that still show it (the
/// GPU's shapes, in [`crate::testing::faults::FaultClass::shapes`], are too large to emulate in a
/// test). Precision faults need enough terms for the limits to tell the precisions apart; a
/// split or cut product needs a shape the launch cuts for an H100 (step 12's 66 clusters); the
/// schedule's faults need several tiles.
pub fn fault_shapes(class: FaultClass) -> &'static [(usize, usize, usize)] {
    match class {
        FaultClass::DropTerm => &[(32, 32, 900)],
        FaultClass::DropSlice => &[(64, 64, 4096), (67, 45, 1000)],
        // K of 256 and more: below it step 09's FP32 path computes every row, around the kernel
        // these faults are planted in.
        FaultClass::Zero | FaultClass::Row | FaultClass::Column => &[(17, 33, 257), (130, 257, 260)],
        FaultClass::SplitDropped | FaultClass::SplitDoubled => &[(256, 256, 2048), (300, 260, 2000)],
        FaultClass::TileSkipped => &[(300, 700, 129), (17, 33, 9)],
        FaultClass::TileTwice => &[(300, 700, 129)],
        FaultClass::PeerNotAwaited => &[(256, 256, 512), (300, 700, 300)],
        _ => &[(32, 32, 900), (256, 256, 256)],
    }
}

/// Each planted fault of `faults` fails on the emulator at every shape of its class
/// ([`fault_shapes`]): its verdict FAILs, or the emulator stops it with a fault it names (a
/// race the sanitizer sees before the wrong C). The step's own kernel passes at all of them.
pub fn assert_faults_caught(step: &GpuStep, faults: &[PlantedFault]) {
    let mut missed = Vec::new();
    let mut shapes = Vec::new();
    for f in faults {
        let edited = with_source(step, step.file, faults::apply(&crate::testing::whole(step), f).unwrap());
        for &(m, n, k) in fault_shapes(f.class) {
            if let Ok((_, v)) = emulate(&edited, &[], Shape { m, n, k }) {
                if v.passed() {
                    missed.push(format!("{:?} at {m}×{n}×{k} passed", f.class));
                }
            }
            if !shapes.contains(&(m, n, k)) {
                shapes.push((m, n, k));
            }
        }
    }
    assert!(
        missed.is_empty(),
        "{}: planted faults not caught on the emulator: {}",
        step.name,
        missed.join("; ")
    );
    assert_emulated_pass(step, &[], &shapes);
}

/// The most seconds a scaled emulation of any lab, stage or variant may take to print its
/// predicted time, at 4096³ and 8192³ on two cores (the book's "Without a GPU").
pub const PREDICT_WITHIN: f64 = 60.0;

/// Runs the program at `bin` (a step's, as Cargo built it for the test) with `args` and
/// `--emulate --scaled --no-verify`, and asserts it prints a predicted time, and exits, within
/// [`PREDICT_WITHIN`] seconds of wall time (it is stopped there if not). Where a scaled run
/// emulates something else in the launch's place, its prediction says for what, as `stand_in`
/// expects (None: nothing else). Returns the predicted line.
pub fn assert_predicts_within_a_minute(bin: &str, args: &[&str], stand_in: Option<&str>) -> String {
    use std::io::Read;
    use std::time::{Duration, Instant};
    let mut command = std::process::Command::new(super::command_line::program(bin));
    command.args(args).args(["--emulate", "--scaled", "--no-verify"]);
    let mut child = command
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("could not start {command:?}: {e}"));
    // Read both pipes on threads of their own, so that a full pipe never holds the program.
    let pipe = |p: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            if let Some(mut p) = p {
                let _ = p.read_to_string(&mut text);
            }
            text
        })
    };
    let out = pipe(child.stdout.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let err = pipe(child.stderr.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("the program's status") {
            break Some(status);
        }
        if started.elapsed() > Duration::from_secs_f64(PREDICT_WITHIN) {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let seconds = started.elapsed().as_secs_f64();
    let (out, err) = (out.join().unwrap_or_default(), err.join().unwrap_or_default());
    let run = format!("{} {}", bin.rsplit('/').next().unwrap_or(bin), args.join(" "));
    let Some(status) = status else {
        panic!("{run}: no prediction within {PREDICT_WITHIN:.0} s (stopped then)\n{out}{err}");
    };
    assert!(status.success(), "{run}: exited with {status} after {seconds:.1} s\n{out}{err}");
    let predicted = out.lines().find(|l| l.starts_with("  predicted ")).unwrap_or_default().to_owned();
    assert!(!predicted.is_empty(), "{run}: no predicted line\n{out}{err}");
    match stand_in {
        Some(label) => assert!(predicted.contains(&format!(" for {label} ")), "{run}: {predicted}"),
        None => assert!(!predicted.contains(" for the "), "{run}: {predicted}"),
    }
    eprintln!("{run}: {seconds:.1} s: {}", predicted.trim());
    predicted
}

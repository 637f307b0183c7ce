//! Every GPU step and cuBLAS SGEMM on every family of inputs at the class shapes, K up to 2²⁰:
//! the check derived from the data must let every correct result through. Prints the table of
//! the book's "Your data" (each family and step: verdict, the largest share of the normwise limit
//! and of the per-element bound over the shapes).

use common::matrix::{Family, Inputs, Shape};
use common::testing::{self, Checker};
use common::verify::{self, Precision, Verdict};
use compare::GPU_STEPS;

/// The class shapes and the deep ones, each family drawn at each.
fn shapes() -> Vec<(usize, usize, usize)> {
    testing::SHAPES.iter().chain(testing::DEEP).copied().collect()
}

#[derive(Default, Clone, Copy)]
struct FamilyCell {
    shapes: usize,
    failed: usize,
    normwise: f64,
    element: f64,
}

impl FamilyCell {
    fn add(&mut self, v: &Verdict) {
        self.shapes += 1;
        self.failed += usize::from(!v.passed());
        self.normwise = self.normwise.max(v.normwise.ratio());
        self.element = self.element.max(v.worst.ratio());
    }

    fn show(&self) -> String {
        match (self.shapes, self.failed) {
            (0, _) => "–".to_owned(),
            (_, 0) => format!("PASS {:.2} / {:.2}", self.normwise, self.element),
            (n, f) => format!("**FAIL {f} of {n}** {:.2} / {:.2}", self.normwise, self.element),
        }
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU with cuBLAS"]
fn gpu_every_step_and_sgemm_pass_on_every_family() {
    let checkers: Vec<Checker> = GPU_STEPS.iter().map(|s| Checker::defaults(s).unwrap()).collect();
    let gpu = checkers[0].gpu();
    let mut table = vec![vec![FamilyCell::default(); GPU_STEPS.len() + 1]; Family::ALL.len()];
    let mut failures = Vec::new();
    for (f, family) in Family::ALL.into_iter().enumerate() {
        for (i, &(m, n, k)) in shapes().iter().enumerate() {
            let inputs = Inputs::family(Shape::new(m, n, k).unwrap(), 500 + i as u64, family);
            let reference = checkers[0].reference(&inputs).unwrap();
            let sgemm = verify::verify(
                inputs.shape,
                &checkers[0].sgemm(&inputs).unwrap(),
                &reference,
                Precision::Fp32,
            );
            table[f][GPU_STEPS.len()].add(&sgemm);
            if !sgemm.passed() {
                failures.push(format!("cuBLAS SGEMM, {family}, {m}×{n}×{k}: {}", sgemm.summary()));
            }
            for (s, checker) in checkers.iter().enumerate() {
                let step = GPU_STEPS[s];
                if step.check_compute(gpu.info.compute_capability, &gpu.info.name).is_err() {
                    continue;
                }
                let Some(v) = checker.check_inputs(&inputs, &reference).unwrap() else { continue };
                table[f][s].add(&v);
                if !v.passed() {
                    failures.push(format!("{}, {family}, {m}×{n}×{k}: {}", step.name, v.summary()));
                }
            }
        }
    }
    let mut head = String::from("| inputs |");
    for s in GPU_STEPS {
        head += &format!(" {} |", s.name);
    }
    println!("{head} cuBLAS SGEMM |");
    println!("|---|{}", "---|".repeat(GPU_STEPS.len() + 1));
    for (f, family) in Family::ALL.into_iter().enumerate() {
        let cells: Vec<String> = table[f].iter().map(FamilyCell::show).collect();
        println!("| {family} | {} |", cells.join(" | "));
    }
    println!(
        "(each cell: the verdict over {} shapes, then the largest share of the normwise limit / of the per-element bound)",
        shapes().len()
    );
    for line in &failures {
        println!("{line}");
    }
    assert!(failures.is_empty(), "{} results failed: {failures:#?}", failures.len());
}

/// NaN, +∞ and −∞ planted in A and B (`testing::special_inputs`): every GPU step gives, for
/// every element of C, the class cuBLAS SGEMM gives (NaN, +∞, −∞ or finite), at shapes that
/// reach each step's paths: square, odd, one row, one column, and K long enough to be split.
#[test]
#[ignore = "needs an NVIDIA GPU with cuBLAS"]
fn gpu_every_step_gives_sgemms_class_for_every_element() {
    let shapes =
        [(512, 512, 512), (300, 260, 1000), (1, 700, 3000), (700, 1, 3000), (64, 64, 65536), (7, 3, 5)];
    let mut failures = Vec::new();
    for step in GPU_STEPS {
        let checker = Checker::defaults(step).unwrap();
        let gpu = checker.gpu();
        if step.check_compute(gpu.info.compute_capability, &gpu.info.name).is_err() {
            continue;
        }
        for (i, &(m, n, k)) in shapes.iter().enumerate() {
            let shape = Shape::new(m, n, k).unwrap();
            if !checker.serves(shape) {
                continue;
            }
            let b = testing::beside_sgemm(&checker, &testing::special_inputs(shape, 40 + i as u64)).unwrap();
            let (wrong, nonfinite) = testing::class_mismatches(&b.c, &b.sgemm_c, n);
            println!(
                "{}, {shape}: {nonfinite} elements not finite, {} of another class",
                step.name,
                wrong.len()
            );
            assert!(nonfinite > 0, "{shape}: the planted values reached no element");
            failures.extend(wrong.iter().take(3).map(|w| format!("{}, {shape}: {w}", step.name)));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Per-element worst error in units of u·(|A||B|)ᵢⱼ (u = 2⁻²⁴), over the elements whose
/// reference is finite, and how many of them err by more than 16 times `than` does.
fn per_element(c: &[f32], reference: &common::reference::Reference, than: Option<&[f32]>) -> (f64, usize) {
    let u = f64::powi(2.0, -24);
    let err = |x: f32, e: usize| (f64::from(x) - reference.c[e]).abs();
    let (mut worst, mut beyond) = (0.0f64, 0);
    for (e, &x) in c
        .iter()
        .enumerate()
        .filter(|(e, _)| verify::ValueClass::of(reference.c[*e]) == verify::ValueClass::Finite)
    {
        let d = err(x, e);
        worst = worst.max(if d == 0.0 { 0.0 } else { d / (u * reference.abs[e]) });
        if let Some(than) = than {
            beyond += usize::from(d > 16.0 * err(than[e], e));
        }
    }
    (worst, beyond)
}

/// Steps 09 and 11 beside cuBLAS SGEMM on every family and on the inputs that exposed their
/// limits (identity plus noise of 2⁻²⁰ at 1024×1024×4096, log-normal magnitudes at 2048³, a row
/// of subnormals, NaN and infinities): per element, normwise and by class. Prints the table;
/// both steps and cuBLAS SGEMM must pass everywhere.
#[test]
#[ignore = "needs an NVIDIA GPU with cuBLAS"]
fn gpu_steps_09_and_11_beside_sgemm_on_every_family() {
    let steps: Vec<_> =
        GPU_STEPS.iter().filter(|s| s.name.starts_with("step09") || s.name.starts_with("step11")).collect();
    let checkers: Vec<Checker> = steps.iter().map(|s| Checker::defaults(s).unwrap()).collect();
    let shape = |m, n, k| Shape::new(m, n, k).unwrap();
    let mut cases: Vec<(String, Inputs)> = Family::ALL
        .into_iter()
        .map(|f| (format!("{f}, 1024³"), Inputs::family(shape(1024, 1024, 1024), 77, f)))
        .collect();
    let noise = Family::IdentityNoise(f64::powi(2.0, -20));
    cases.push((format!("{noise}, 1024×1024×4096"), Inputs::family(shape(1024, 1024, 4096), 78, noise)));
    cases.push((
        "lognormal:2, 2048³".to_owned(),
        Inputs::family(shape(2048, 2048, 2048), 79, Family::LogNormal(2.0)),
    ));
    let mut sub = Inputs::random(shape(256, 256, 256), 80);
    sub.a.data[..256].iter_mut().for_each(|v| *v *= 1e-39);
    cases.push(("a row of A subnormal, 256³".to_owned(), sub));
    cases.push(("NaN and ±∞ planted, 512³".to_owned(), testing::special_inputs(shape(512, 512, 512), 81)));
    println!("| inputs | {} | cuBLAS SGEMM |", steps.iter().map(|s| s.name).collect::<Vec<_>>().join(" | "));
    println!("|---|{}", "---|".repeat(steps.len() + 1));
    let mut failures = Vec::new();
    for (name, inputs) in &cases {
        let reference = checkers[0].reference(inputs).unwrap();
        let mut cells = Vec::new();
        let mut sgemm_cell = String::new();
        for (s, checker) in checkers.iter().enumerate() {
            let b = testing::beside_sgemm(checker, inputs).unwrap();
            let (worst, beyond) = per_element(&b.c, &reference, Some(&b.sgemm_c));
            let (wrong, _) = testing::class_mismatches(&b.c, &b.sgemm_c, inputs.shape.n);
            cells.push(format!(
                "{} · worst {worst:.3} · {beyond} beyond 16× SGEMM · {:.1e} · {} of another class",
                if b.verdict.passed() { "PASS" } else { "**FAIL**" },
                b.verdict.normwise.relative(),
                wrong.len()
            ));
            let (sgemm_worst, _) = per_element(&b.sgemm_c, &reference, None);
            sgemm_cell = format!(
                "{} · worst {sgemm_worst:.3} · {:.1e}",
                if b.sgemm.passed() { "PASS" } else { "**FAIL**" },
                b.sgemm.normwise.relative()
            );
            if !b.sgemm.passed() {
                failures.push(format!("cuBLAS SGEMM, {name}: {}", b.sgemm.summary()));
            }
            if !(b.verdict.passed() && wrong.is_empty()) {
                failures.push(format!("{}, {name}: {}", steps[s].name, b.verdict.summary()));
            }
        }
        println!("| {name} | {} | {sgemm_cell} |", cells.join(" | "));
    }
    println!(
        "(each cell: the verdict; the worst element in u·(|A||B|)ᵢⱼ, u = 2⁻²⁴; elements beyond 16× SGEMM's error; ‖ΔC‖/‖C‖; elements of another class than SGEMM's)"
    );
    assert!(failures.is_empty(), "{failures:#?}");
}

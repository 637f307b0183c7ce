//! What one gate run measures: each lab at its headline shapes, grouped by shape and inputs so
//! that each product's inputs are drawn, uploaded and referenced once, and each lab measured
//! once however many of the lists below name it there.
//!
//! - every GPU lab that serves 4096³ (all but step 03, one block's worth) at 4096³, uniform;
//! - the Hopper labs that chase cuBLAS at scale ([`AT_SCALE`]) at [`SCALE_SHAPES`] too;
//! - step 10, the lab of any shape, on `compare --suite`'s shapes;
//! - the labs of FP32 from the tensor cores on every built-in family at 4096³ (`--families`).

use common::matrix::Family;
use common::{GpuStep, Precision};

use super::{Entry, parse_shape};
use crate::{CUBLAS, CUBLAS_TF32, GPU_STEPS};

/// Timed samples a measurement (`--reps`). Each sample is a batch of launches lasting at least
/// [`common::timing::BATCH_MS`] (2 ms), after at least 100 ms of warm-up, so 30 samples time at
/// least 60 ms a measurement. The default (at least 20 samples and about half a second of them,
/// up to 1,000) would add about 0.4 s to most of the gate's 86 measurements for little: in the
/// H200's recorded runs at 4096³ (`docs/src/results/runs/2026-11-28-nvidia-h200-house-labs.log`)
/// each lab's fastest and slowest samples lie within 5.5% of its median (within 1.3% for the labs
/// of 1.2 ms or more), so the median of 30 moves far less than the gate's 3%, and a share below
/// it is measured once more before it fails. Fixed, so that a record and the gate are sampled
/// alike.
pub const REPS: usize = 30;

/// The seed of every family's inputs, as the other runs of compare draw them.
pub const SEED: u64 = 42;

/// The headline shape.
pub const HEADLINE: (usize, usize, usize) = (4096, 4096, 4096);

/// The one lab that cannot serve 4096³: the whole problem in one block's shared memory.
pub const ONE_BLOCK: &str = "step03_single_block";

/// The labs measured at [`SCALE_SHAPES`] as well as at 4096³.
pub const AT_SCALE: [&str; 4] =
    ["step08_wgmma_tma", "step09_3xtf32", "step11_int8_crt", "step12_persistent_clusters"];

/// The shapes beyond the headline where [`AT_SCALE`]'s labs are measured.
pub const SCALE_SHAPES: [(usize, usize, usize); 4] =
    [(8192, 8192, 8192), (2048, 2048, 2048), (1024, 1024, 1024), (1024, 1024, 4096)];

/// The lab measured on the suite's shapes ([`crate::suite::SHAPES`]).
pub const ANY_SHAPE: &str = "step10_any_shape";

/// The baseline a lab is set against, as compare's other runs pair them: cuBLAS TF32 for a TF32
/// lab, cuBLAS SGEMM for the others (those held to FP32's limits).
pub fn baseline(precision: Precision) -> &'static str {
    if precision.is_tf32() { CUBLAS_TF32 } else { CUBLAS }
}

/// The products of one shape on one family of inputs, and the labs that run them.
pub struct Group {
    pub shape: (usize, usize, usize),
    pub inputs: Family,
    /// In course order.
    pub labs: Vec<&'static GpuStep>,
}

impl Group {
    /// The baselines its labs are set against, SGEMM first.
    pub fn baselines(&self) -> Vec<&'static str> {
        [CUBLAS, CUBLAS_TF32]
            .into_iter()
            .filter(|b| self.labs.iter().any(|s| baseline(s.precision) == *b))
            .collect()
    }

    /// Products this group times: each lab and each baseline.
    pub fn measurements(&self) -> usize {
        self.labs.len() + self.baselines().len()
    }
}

/// The lab of the course named `name`.
fn lab(name: &str) -> Option<&'static GpuStep> {
    GPU_STEPS.iter().copied().find(|s| s.name == name)
}

/// Adds `lab` at `shape` on `inputs` to the group of that shape and inputs (a new one at the end
/// where there is none), once, keeping each group's labs in course order.
fn add(groups: &mut Vec<Group>, shape: (usize, usize, usize), inputs: Family, lab: &'static GpuStep) {
    let at = match groups.iter().position(|g| g.shape == shape && g.inputs == inputs) {
        Some(at) => at,
        None => {
            groups.push(Group { shape, inputs, labs: Vec::new() });
            groups.len() - 1
        }
    };
    let labs = &mut groups[at].labs;
    if !labs.iter().any(|s| s.name == lab.name) {
        labs.push(lab);
        let order = |s: &&GpuStep| GPU_STEPS.iter().position(|g| g.name == s.name);
        labs.sort_by_key(order);
    }
}

/// The families steps 09 and 11 are gated on at the headline shape beside every family at the
/// parameters the tests use ([`Family::ALL`]): the two that move data to FP32's edges, scales
/// moved along K (step 11's equilibration) and products among the subnormals (the FP32 paths).
pub const EDGES: [Family; 2] = [Family::KScaled(12), Family::Tiny(66)];

/// Every family the gate measures steps 09 and 11 on.
pub fn families() -> impl Iterator<Item = Family> {
    Family::ALL.into_iter().chain(EDGES)
}

/// Everything a gate run measures, of the labs `wanted` keeps (every lab, or `--steps`'),
/// grouped by shape and inputs: the headline shape first, then the shapes at scale, the suite's
/// and the families'. Empty when `wanted` keeps none of the gate's labs.
pub fn plan(wanted: impl Fn(&str) -> bool) -> Vec<Group> {
    let mut groups = Vec::new();
    let keep = |s: &&&GpuStep| wanted(s.name);
    for s in GPU_STEPS.iter().filter(|s| s.name != ONE_BLOCK).filter(keep) {
        add(&mut groups, HEADLINE, Family::Uniform, s);
    }
    for shape in SCALE_SHAPES {
        for s in AT_SCALE.iter().filter_map(|n| lab(n)).filter(|s| wanted(s.name)) {
            add(&mut groups, shape, Family::Uniform, s);
        }
    }
    if let Some(s) = lab(ANY_SHAPE).filter(|s| wanted(s.name)) {
        for &shape in crate::suite::SHAPES {
            add(&mut groups, shape, Family::Uniform, s);
        }
    }
    let fp32_from_tensor_cores = |s: &&&GpuStep| crate::families::fp32_from_tensor_cores(s.precision);
    for family in families() {
        for s in GPU_STEPS.iter().filter(fp32_from_tensor_cores).filter(keep) {
            add(&mut groups, HEADLINE, family, s);
        }
    }
    groups
}

/// The entries [`super::to_confirm`] named, grouped again by shape and inputs to be measured
/// once more; an entry whose lab, shape or inputs this program does not know is left out (it
/// cannot have come from a run of it).
pub fn regroup(entries: &[Entry]) -> Vec<Group> {
    let mut groups = Vec::new();
    for e in entries {
        let inputs = Family::parse(&e.inputs).ok();
        if let (Some(s), Some(shape), Some(inputs)) = (lab(&e.lab), parse_shape(&e.shape), inputs) {
            add(&mut groups, shape, inputs, s);
        }
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(groups: &[Group]) -> (usize, usize) {
        let entries = groups.iter().map(|g| g.labs.len()).sum();
        (entries, groups.iter().map(Group::measurements).sum())
    }

    #[test]
    fn every_lab_that_serves_4096_is_measured_there_first_beside_both_baselines() {
        let groups = plan(|_| true);
        let first = &groups[0];
        assert_eq!((first.shape, first.inputs), (HEADLINE, Family::Uniform));
        let names: Vec<&str> = first.labs.iter().map(|s| s.name).collect();
        let want: Vec<&str> = GPU_STEPS.iter().map(|s| s.name).filter(|n| *n != ONE_BLOCK).collect();
        assert_eq!(names, want);
        assert_eq!(names.len(), 10, "steps 02 and 04–12");
        assert_eq!(first.baselines(), [CUBLAS, CUBLAS_TF32]);
        for name in AT_SCALE.iter().chain([&ANY_SHAPE, &ONE_BLOCK]) {
            assert!(lab(name).is_some(), "{name} is a lab of compare's GPU_STEPS");
        }
    }

    #[test]
    fn each_lab_shape_and_inputs_is_measured_once() {
        let groups = plan(|_| true);
        // 10 labs at 4096³, 4 at 4 more shapes, step 10 on 16 more of the suite's 17 shapes, and
        // steps 09 and 11 on 9 more families: 60 entries, in 5 + 13 + 9 groups.
        assert_eq!(crate::suite::SHAPES.len(), 17);
        assert_eq!(count(&groups), (60, 92));
        assert_eq!(groups.len(), 27);
        for (i, g) in groups.iter().enumerate() {
            let twice = groups[..i].iter().any(|o| o.shape == g.shape && o.inputs == g.inputs);
            assert!(!twice && !g.labs.is_empty(), "{:?} {}", g.shape, g.inputs);
        }
        let at_8192 = groups.iter().find(|g| g.shape == (8192, 8192, 8192)).unwrap();
        let names: Vec<&str> = at_8192.labs.iter().map(|s| s.name).collect();
        assert_eq!(names, ["step08_wgmma_tma", "step09_3xtf32", ANY_SHAPE, "step11_int8_crt", AT_SCALE[3]]);
        let deep = groups.iter().find(|g| g.shape == (64, 64, 65536)).unwrap();
        assert_eq!((deep.labs.len(), deep.baselines()), (1, vec![CUBLAS]), "step 10 beside SGEMM");
        let families: Vec<String> =
            groups.iter().filter(|g| g.shape == HEADLINE).map(|g| g.inputs.to_string()).collect();
        assert_eq!(families.len(), super::families().count(), "{families:?}");
        let gram = groups.iter().find(|g| g.inputs == Family::Gram).unwrap();
        let names: Vec<&str> = gram.labs.iter().map(|s| s.name).collect();
        assert_eq!((names, gram.baselines()), (vec!["step09_3xtf32", "step11_int8_crt"], vec![CUBLAS]));
    }

    #[test]
    fn steps_keep_only_their_labs_entries() {
        let groups = plan(|n| n == "step11_int8_crt");
        assert_eq!(count(&groups), (1 + 4 + 9, 2 * 14));
        assert!(groups.iter().all(|g| g.labs.iter().all(|s| s.name == "step11_int8_crt")));
        assert_eq!(count(&plan(|n| n == ANY_SHAPE)).0, 17);
        assert!(plan(|n| n == ONE_BLOCK).is_empty(), "step 03 is not the gate's");
    }

    #[test]
    fn entries_to_measure_again_are_grouped_by_shape_and_inputs() {
        let entry = |lab: &str, shape: &str, inputs: &str| Entry {
            lab: lab.into(),
            shape: shape.into(),
            inputs: inputs.into(),
            baseline: CUBLAS.into(),
            share: 1.0,
            gflops: 1.0,
            passed: true,
        };
        let groups = regroup(&[
            entry("step11_int8_crt", "4096x4096x4096", "uniform"),
            entry("step09_3xtf32", "4096x4096x4096", "lognormal:2"),
            entry("step09_3xtf32", "4096x4096x4096", "uniform"),
            entry("step99_unknown", "4096x4096x4096", "uniform"),
            entry("step09_3xtf32", "4096x4096", "uniform"),
        ]);
        assert_eq!(groups.len(), 2);
        let names: Vec<&str> = groups[0].labs.iter().map(|s| s.name).collect();
        assert_eq!((groups[0].inputs, names), (Family::Uniform, vec!["step09_3xtf32", "step11_int8_crt"]));
        assert_eq!((groups[1].inputs, groups[1].labs.len()), (Family::LogNormal(2.0), 1));
    }
}

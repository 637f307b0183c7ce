//! Tests of the step contract: GpuStep::DEFAULT and what validate refuses.

use super::*;

const SHAPE: Shape = Shape { m: 64, n: 64, k: 64 };

fn one_block(_: &Params, _: Shape) -> Geometry {
    Geometry { grid: (1, 1, 1), block: (32, 1, 1), dynamic_smem: 0, whole_rows: None }
}

/// A declaration that forgets `check` or `geometry` takes DEFAULT's, which stop every run with
/// a sentence; one that names both is served.
#[test]
fn a_step_that_forgets_its_check_or_its_launch_is_refused() {
    let params = Params::defaults(&[]);
    let no_check = GpuStep { name: "test", geometry: one_block, ..GpuStep::DEFAULT };
    let err = no_check.validate(&params, SHAPE, &LaunchLimits::SM90).unwrap_err().to_string();
    assert!(err.contains("declares no `check`"), "{err}");
    let no_launch = GpuStep { name: "test", check: |_, _, _| Ok(()), ..GpuStep::DEFAULT };
    let err = no_launch.validate(&params, SHAPE, &LaunchLimits::SM90).unwrap_err().to_string();
    assert!(err.contains("test's launch gives a grid of (0, 0, 0) blocks"), "{err}");
    let named = GpuStep { geometry: one_block, ..no_launch };
    assert_eq!(named.validate(&params, SHAPE, &LaunchLimits::SM90).unwrap(), one_block(&params, SHAPE));
}

/// What the defaults stand for: the course's 4096³ problem on any supported GPU, B as it is,
/// rows as they are, plain launches of the six standard arguments.
#[test]
fn the_defaults_are_the_plain_steps_values() {
    let d = GpuStep::DEFAULT;
    let params = Params::defaults(&[]);
    for limits in [LaunchLimits::SM80, LaunchLimits::SM90] {
        assert_eq!((d.default_shape)(&limits), Shape { m: 4096, n: 4096, k: 4096 });
    }
    assert!(!(d.b_transposed)(&params) && !d.pads_rows && !d.schedule.shares());
    assert!(d.search.is_empty() && d.stages.is_empty() && d.variants.is_empty());
    assert_eq!((d.min_compute, d.precision), ((7, 5), Precision::Fp32));
    assert!(d.extension.boxes().is_none());
    let hooks = d.hooks;
    assert!(hooks.workspace_bytes(&params, SHAPE) == 0 && hooks.on_tiles(&params));
    assert!(hooks.report_line(&params, Shape::new(1, 1, 1).unwrap(), (1, 1, 1)).is_none());
}

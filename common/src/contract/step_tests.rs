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

/// The run compiles wide exactly where a matrix of the shape, or of the padded shape the launch
/// multiplies, passes 2³¹ − 1 elements, or where `--param WIDE=1` asks; `--param WIDE=0` is
/// refused there in one sentence and taken everywhere else.
#[test]
fn a_run_compiles_wide_exactly_where_a_matrix_passes_an_int() {
    let plain = GpuStep { name: "test", ..GpuStep::DEFAULT };
    let wide = |step: &GpuStep, (m, n, k): (usize, usize, usize), given: &[(&str, u32)]| {
        let given: Vec<(String, u32)> = given.iter().map(|&(n, v)| (n.to_owned(), v)).collect();
        step.params_for(Shape::new(m, n, k).unwrap(), 132, &given).map(|(p, _)| p.wide())
    };
    // 2^31 − 1 (a prime) elements at most, then one past it, in A, B and C each.
    let int = i32::MAX as usize;
    for (at, past) in [
        ((1, 1, int), (2_097_152, 1, 1024)),
        ((1, int, 1), (1, 2_097_152, 1024)),
        ((int, 1, 1), (2_097_152, 1024, 1)),
    ] {
        assert!(!wide(&plain, at, &[]).unwrap(), "{at:?}");
        assert!(wide(&plain, past, &[]).unwrap(), "{past:?}");
        assert!(wide(&plain, at, &[("WIDE", 1)]).unwrap(), "{at:?} with WIDE=1");
        assert!(!wide(&plain, at, &[("WIDE", 0)]).unwrap(), "{at:?} with WIDE=0");
        let err = wide(&plain, past, &[("WIDE", 0)]).unwrap_err().to_string();
        assert!(
            err.contains("--param WIDE=0 asks for 32-bit offsets") && err.contains("2147483648 elements"),
            "{err}"
        );
    }
    // A of 600,000,000 × 3 is narrow, but a launch that pads its rows to 4 floats multiplies
    // 2,400,000,000 of them.
    let pads = GpuStep { pads_rows: true, ..plain };
    assert!(!wide(&plain, (600_000_000, 1, 3), &[]).unwrap());
    assert!(wide(&pads, (600_000_000, 1, 3), &[]).unwrap());
    // The default shapes of the course stay narrow, so their kernels compile as they always have.
    assert!(!wide(&plain, (4096, 4096, 4096), &[]).unwrap());
    assert!(!wide(&plain, (8192, 8192, 8192), &[]).unwrap());
}

use common::matrix::Family;
use common::verify::{self, ROOM};
use common::{Inputs, Precision, Shape, reference, run};

fn product(inputs: &Inputs) -> Vec<f32> {
    let Shape { m, n, k } = inputs.shape;
    let mut c = vec![f32::NAN; m * n];
    step01_cpu_naive::matmul(m, n, k, &inputs.a.data, &inputs.b.data, &mut c);
    c
}

#[test]
#[ignore = "slow unoptimised: .ci/run runs it in release"]
fn slow_triple_loop_matches_the_reference_from_k_1_to_2_20() {
    for (m, n, k) in [(1, 1, 1), (7, 3, 5), (33, 65, 17), (128, 128, 128), (2, 2, 65536), (1, 1, 1 << 20)] {
        let shape = Shape::new(m, n, k).unwrap();
        let inputs = Inputs::random(shape, 5);
        let v = verify::verify(shape, &product(&inputs), &reference::cpu(&inputs), Precision::Fp32);
        assert!(v.passed(), "{shape}: {}", v.summary());
        assert!(v.normwise.ratio() < ROOM, "{shape}: {}", v.summary());
    }
}

#[test]
#[ignore = "slow unoptimised: .ci/run runs it in release"]
fn slow_triple_loop_passes_on_every_family_from_k_1_to_2_20() {
    for (m, n, k) in [(1, 1, 1), (7, 3, 5), (33, 65, 17), (64, 64, 256), (2, 2, 65536), (1, 1, 1 << 20)] {
        for family in Family::ALL {
            let inputs = Inputs::family(Shape::new(m, n, k).unwrap(), 8, family);
            let v =
                verify::verify(inputs.shape, &product(&inputs), &reference::cpu(&inputs), Precision::Fp32);
            assert!(v.passed(), "{family} {m}×{n}×{k}: {}", v.summary());
            assert!(v.normwise.ratio() < ROOM, "{family} {m}×{n}×{k}: {}", v.summary());
        }
    }
}

#[test]
#[ignore = "slow unoptimised: .ci/run runs it in release"]
fn slow_triple_loop_is_exact_on_small_integers() {
    for (m, n, k) in [(7, 3, 5), (33, 65, 1000), (1, 1, 1 << 20)] {
        let inputs = Inputs::integers(Shape::new(m, n, k).unwrap(), 6);
        let v = verify::verify(inputs.shape, &product(&inputs), &reference::cpu(&inputs), Precision::Fp32);
        assert_eq!(v.mismatched, Some(0), "{}", v.summary());
    }
}

#[test]
fn banded_runs_compute_the_same_product() {
    // The progress bar splits the work into bands of rows; the result must not change.
    let shape = Shape::new(37, 11, 13).unwrap();
    let inputs = Inputs::random(shape, 6);
    let mut banded = vec![f32::NAN; 37 * 11];
    run::cpu_product(shape, &inputs, &mut banded, step01_cpu_naive::matmul, false);
    assert_eq!(product(&inputs), banded);
}

/// Every product among FP32's subnormals while C stays normal (`tiny:66`): the triple loop, the
/// course's definition, passes with room at several K and shapes, and with the last term of every
/// dot product dropped it fails.
#[test]
fn products_in_the_subnormal_range_pass_and_a_dropped_term_fails() {
    for (m, n, k) in [(16, 16, 256), (7, 33, 1000), (4, 3, 4096)] {
        let inputs = Inputs::family(Shape::new(m, n, k).unwrap(), 9, Family::Tiny(66));
        let r = reference::cpu(&inputs);
        let v = verify::verify(inputs.shape, &product(&inputs), &r, Precision::Fp32);
        assert!(v.passed() && v.normwise.ratio() < ROOM, "{m}×{n}×{k}: {}", v.summary());
        let mut short = inputs.clone();
        (0..m).for_each(|i| short.a.data[i * k + k - 1] = 0.0);
        let f = verify::verify(inputs.shape, &product(&short), &r, Precision::Fp32);
        assert!(!f.passed(), "dropped term at {m}×{n}×{k}: {}", f.summary());
    }
}

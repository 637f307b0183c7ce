use common::{Inputs, Shape, reference, run, verify};

#[test]
fn triple_loop_matches_the_reference() {
    for (m, n, k) in [(1, 1, 1), (7, 3, 5), (33, 65, 17), (128, 128, 128)] {
        let shape = Shape::new(m, n, k).unwrap();
        let inputs = Inputs::random(shape, 5);
        let mut c = vec![f32::NAN; m * n];
        step01_cpu_naive::matmul(m, n, k, &inputs.a.data, &inputs.b.data, &mut c);
        let v = verify::verify(shape, &c, &reference::cpu(&inputs));
        assert!(v.passed(), "{shape}: {v:?}");
    }
}

#[test]
fn banded_runs_compute_the_same_product() {
    // The progress bar splits the work into bands of rows; the result must not change.
    let shape = Shape::new(37, 11, 13).unwrap();
    let inputs = Inputs::random(shape, 6);
    let mut whole = vec![0.0; 37 * 11];
    step01_cpu_naive::matmul(37, 11, 13, &inputs.a.data, &inputs.b.data, &mut whole);
    let mut banded = vec![f32::NAN; 37 * 11];
    run::cpu_product(shape, &inputs, &mut banded, step01_cpu_naive::matmul);
    assert_eq!(whole, banded);
}

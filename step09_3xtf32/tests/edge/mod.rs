//! The inputs the GPU test and the emulator test of subnormal, tiny, huge and non-finite rows
//! share, so that both judge the step on the same data.

use common::{Inputs, Shape, testing};

/// `testing::special_inputs` (NaN and infinities) with row 3 subnormal, row 5 tiny and row 9
/// huge, column 7 tiny, and row 13 and column 9 holding 1.3·2¹⁰⁰ and 1.7·2⁻⁴⁰, and 1.1·2⁶⁰ and
/// 1.9·2⁻³⁷, apart from zeros: C[13, 9] is the product of the two least entries, 1.7·1.9·2⁻⁷⁷,
/// whose scaled parts (2⁻⁹² and 2⁻⁴⁹) multiply to a subnormal.
pub fn inputs(shape: Shape) -> Inputs {
    let (n, k) = (shape.n, shape.k);
    let mut x = testing::special_inputs(shape, 11);
    let mut scale_row = |i: usize, s: f32| x.a.data[i * k..(i + 1) * k].iter_mut().for_each(|v| *v *= s);
    scale_row(3, 1e-39);
    scale_row(5, 2f32.powi(-60));
    scale_row(9, 2f32.powi(70));
    (0..k).for_each(|p| x.b.data[p * n + 7] *= 2f32.powi(-60));
    x.a.data[13 * k..14 * k].fill(0.0);
    (0..k).for_each(|p| x.b.data[p * n + 9] = 0.0);
    x.a.data[13 * k + 200] = 1.3 * 2f32.powi(100);
    x.a.data[13 * k + 17] = 1.7 * 2f32.powi(-40);
    x.b.data[100 * n + 9] = 1.1 * 2f32.powi(60);
    x.b.data[17 * n + 9] = 1.9 * 2f32.powi(-37);
    x
}

//! Step 09's launch on the PTX emulator: the kernels [`crate::apart::Apart`] queues on a GPU, with
//! the same arguments, grids and buffers, run one after another. On a GPU the FP32 path runs on a
//! second stream beside the product, after the marks and the split of A; the product leaves the
//! marked rows and columns of C to it, so running the path first and the product after is one of
//! the orders the two streams' events allow:
//!
//! ```text
//! mark_cols, scale_cols              the columns' exponents and marks, their least entry
//! split_a (through common's maps)    A's rows scaled, split and marked
//! list_paths, fp32_rows … fp32_cols_few   the FP32 path of the marked rows and columns
//! matmul                             the product, with a split of K where the grid has z > 1
//! ```

use anyhow::Result;

use common::Shape;
use common::emulated::{Arg, Config};
use common::hooks::{EmulatedCall, EmulatedOperands, Paths};

use crate::apart::{Layout, MARK_ENTRY, SCALE_ENTRY, mark_parts, slice_floats};

/// One product on the emulator: the launch of [`crate::apart::Apart`] for a kernel that defines
/// `mark_cols`, common's plain launch for one that does not, as on a GPU.
pub fn emulate(call: &mut EmulatedCall, (a, b, c): EmulatedOperands) -> Result<()> {
    if !call.machine.has_kernel(MARK_ENTRY) {
        return call.plain((a, b, c));
    }
    let shape = call.shape;
    let Shape { m, n, k } = shape;
    let (gx, gy, _) = call.config.grid;
    // The marks, exponents, the columns' least entry and the tiles' arrivals, zeroed (as the
    // workspace that `before` zeroes on a GPU), and the columns' ranges, which mark_cols writes whole.
    let layout = Layout::of(shape, (gx * gy) as usize);
    let marks = call.workspace(layout.ints, "the marks and exponents");
    let (exps, col_least, arrivals) =
        (marks + layout.exps, marks + layout.col_least, marks + layout.arrivals);
    let parts = mark_parts(k);
    let ranges = call.workspace(2 * n * parts, "the columns' ranges");
    let [ni, ki, pi] = [n, k, parts].map(|v| Arg::I32(v as i32));
    let base = call.config;
    let block = |grid| Config { grid, block: (256, 1, 1), dynamic_shared: 0, ..base };
    let mark = block((n.div_ceil(256) as u32, parts as u32, 1));
    call.run(MARK_ENTRY, mark, &[Arg::Ptr(b), Arg::Ptr(ranges), ki, ni])?;
    let scale = block((n.div_ceil(32) as u32, 1, 1));
    let (col_marks, col_exps) = (marks + 4 * m as u64, exps + 4 * m as u64);
    let scaled = [Arg::Ptr(ranges), pi, Arg::Ptr(col_marks), Arg::Ptr(col_exps), ni, Arg::Ptr(col_least)];
    call.run(SCALE_ENTRY, scale, &scaled)?;
    // split_a after its five standard arguments takes what the GPU's `Marks` passes, in order.
    let [a_map, b_map] = call.maps((a, b), &[Arg::Ptr(marks), Arg::Ptr(exps), Arg::Ptr(col_least)])?;
    let paths = crate::fp32_path::on_emulator(call, (a, b, c), marks)?;
    call.paths = Some(Paths { own: "split in two".to_owned(), ..paths });
    let slices = call.workspace(slice_floats(call.params.get("BN") as usize, call.config.grid), "the slices");
    let mut args = call.args((a, b, c));
    args.extend([Arg::Map(a_map), Arg::Map(b_map), Arg::Ptr(exps), Arg::Ptr(marks)]);
    args.extend([Arg::Ptr(slices), Arg::Ptr(arrivals)]);
    call.run(common::gpu::ENTRY, call.config, &args)
}

//! A scaled run at two shorter depths. A scaled run's few blocks each still run the whole of K,
//! and the time model replays the busiest SM's blocks over all of it: at 4096³ and beyond that
//! takes minutes. Where K is longer than [`LONG_K`], the launch is emulated instead at two depths
//! d and 2d, with the parameters and the grid chosen for the whole K, and every count and every
//! predicted time is carried to K along the line through the two: a block's work along K is a
//! prologue, one round of its main loop per k-tile and an epilogue, so each count and each time
//! is a + b·K once the main loop runs steadily.
//!
//! d is the deepest of 512, 256, 128, … whose emulation and replays stay within [`WORK`]
//! (measured by a first product at [`probe`]'s depth: the busiest block's instructions per unit of K,
//! times the blocks emulated and the blocks the replay runs), and never less than two of the
//! kernel's k-tiles or the tiles its pipeline holds (`STAGES`; a k-tile is its hooks', its `BK`
//! or `TILE`, else 128; [`choose`], [`floor`]). The variable [`DEPTHS_VAR`] sets the two
//! depths instead (or, set to 0, emulates the whole K), to measure what the line costs.
//! The data-dependent choices of a launch (step 09's and step 11's paths, step 11's moduli) are
//! those the data makes at the shorter depths; the report's paths line shows them.

use anyhow::{Result, bail};

use crate::carried::{along, carried};
use crate::emulated::profile::Profile;
use crate::emulated::{Recorded, Traffic};
use crate::matrix::Shape;
use crate::params::Params;
use crate::predicted::{self, Predicted};
use crate::step::GpuStep;

/// The longest K a scaled run emulates whole: 1024 takes every lab seconds.
pub const LONG_K: usize = 1024;

/// The depth of the first product where the depths are chosen, whose inputs the run draws.
pub const PROBE: usize = 256;

/// The depth of the product whose busiest block's instructions set the two depths, for a kernel
/// of `floor`: twice the floor, the deeper of the shallowest pair (the first product is then one
/// of the two where the work asks for the shallowest, as a kernel of heavy work a block does),
/// at most [`PROBE`]; none where the floor leaves nothing to choose.
pub fn probe(floor: usize) -> Option<usize> {
    (floor < DEEPEST).then_some((2 * floor).min(PROBE))
}

/// The deepest d.
const DEEPEST: usize = 512;

/// The work the two depths may take, in the busiest block's instructions: those of the blocks
/// emulated (a tensor-core instruction's FLOPs count one for each [`TENSOR_FLOPS`]), and eight
/// times those of the blocks replayed (each replay runs twice, for each of the model's three
/// GPUs, and a replayed instruction costs about 1.3 emulated ones). Step 05's kernel at d = 256
/// takes 37 million, about 20 s of one core on this project's machine.
const WORK: f64 = 40e6;

/// The tensor cores' FLOPs the emulator takes the time of one instruction for: it runs lab 12's
/// wgmma at about 92 MFLOP/s a thread, and step 05's instructions at about 1.5 million a second.
const TENSOR_FLOPS: f64 = 64.0;

/// The environment variable that sets the two depths, as `D1,D2` (D1 < D2 < K), or emulates the
/// whole K (`0`).
pub const DEPTHS_VAR: &str = "SCALED_DEPTHS";

/// How a scaled run of `shape` takes K.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Depths {
    /// At two depths [`choose`] picks after a product at [`PROBE`].
    Chosen,
    /// At the two depths [`DEPTHS_VAR`] gives.
    Given([usize; 2]),
}

impl Depths {
    /// The depth of the first product (whose inputs the run draws).
    pub fn first(self) -> usize {
        match self {
            Depths::Chosen => PROBE,
            Depths::Given([_, d]) => d,
        }
    }
}

/// How a scaled run of `shape` takes K: at shorter depths where K is longer than [`LONG_K`]
/// (None: whole), unless [`DEPTHS_VAR`] says otherwise.
pub fn depths(shape: Shape) -> Result<Option<Depths>> {
    match std::env::var(DEPTHS_VAR) {
        Ok(v) if v.trim() == "0" => Ok(None),
        Ok(v) => {
            let parsed =
                v.split_once(',').and_then(|(a, b)| Some([a.trim().parse().ok()?, b.trim().parse().ok()?]));
            match parsed {
                Some([a, b]) if 0 < a && a < b && b < shape.k => Ok(Some(Depths::Given([a, b]))),
                _ => bail!(
                    "{DEPTHS_VAR}={v}: give two depths D1,D2 with 0 < D1 < D2 < K = {} (or 0: the whole K)",
                    shape.k
                ),
            }
        }
        Err(_) => Ok((shape.k > LONG_K).then_some(Depths::Chosen)),
    }
}

/// The shallower depth d (the other is 2d): the deepest from [`DEEPEST`] down, halving, whose
/// work stays within [`WORK`], and at least `floor`. `per_k`: the busiest block's instructions
/// and its tensor cores' FLOPs per unit of K; `emulated` and `replayed`: the blocks a product
/// emulates and the replay runs.
pub fn choose((per_k, flops_per_k): (f64, f64), emulated: u64, replayed: u64, floor: usize) -> usize {
    let block = per_k + flops_per_k / TENSOR_FLOPS;
    let work = |d: usize| 3.0 * d as f64 * (emulated as f64 * block + 8.0 * replayed as f64 * per_k);
    let mut d = DEEPEST;
    while d / 2 >= floor && work(d) > WORK {
        d /= 2;
    }
    d.max(floor)
}

/// The least d: two of the kernel's k-tiles, or as many as its pipeline holds (`STAGES`), so
/// that even the shallower depth fills it (one k-tile alone is not enough: step 04's 32-deep
/// tiles at K = 32 and 64 carry to a time 13% short of the whole depth's at 1024³). A k-tile is
/// its hooks' ([`crate::hooks::Hooks::k_tile`]), its `BK`, or `TILE`, else 128.
pub fn floor(step: &GpuStep, params: &Params) -> usize {
    let tile = step.hooks.k_tile(params).or_else(|| params.find("BK")).or_else(|| params.find("TILE"));
    (tile.unwrap_or(128) * params.find("STAGES").unwrap_or(2).max(2)) as usize
}

/// Every count of `a` (at `depths[0]`) and `b` (at `depths[1]`) carried to `k`.
pub fn traffic(depths: [usize; 2], k: usize, a: &Traffic, b: &Traffic) -> Traffic {
    a.zip(b, |x, y| along(depths, k, x as f64, y as f64).round().max(0.0) as u64)
}

/// One product emulated at one depth: what it moved and what the replay needs.
pub struct DepthRun {
    pub k: usize,
    pub traffic: Traffic,
    pub others: Vec<(String, Traffic)>,
    pub recorded: std::sync::Arc<Vec<Recorded>>,
}

/// What the product moved at `k`, carried from the two depths: the step's kernel's counts and
/// each other kernel's. The two depths must launch the same kernels.
pub fn counts([a, b]: &[DepthRun; 2], k: usize) -> Result<(Traffic, Vec<(String, Traffic)>)> {
    let depths = [a.k, b.k];
    let names = |r: &DepthRun| r.others.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    if names(a) != names(b) {
        bail!(
            "the product launches other kernels at K = {} than at K = {}, so its counts cannot be carried to K = {k}",
            a.k,
            b.k
        );
    }
    let others = a
        .others
        .iter()
        .zip(&b.others)
        .map(|((name, x), (_, y))| (name.clone(), traffic(depths, k, x, y)))
        .collect();
    Ok((traffic(depths, k, &a.traffic, &b.traffic), others))
}

/// The prediction of a launch on `gpu` at `whole`, carried from the two depths' (each GPU's,
/// made from each depth's own counts and recording): `facts`, a block's residency, registers
/// and serialised wgmma; `local`, a thread's local memory and spills; set beside cuBLAS TF32
/// where `tf32`.
pub fn predicted(
    gpu: &'static Profile,
    (facts, local, tf32): ((u32, u32, bool), (u32, u32), bool),
    runs: &[DepthRun; 2],
    whole: Shape,
) -> Predicted {
    let each = |run: &DepthRun| {
        let step = (&run.traffic, run.recorded.as_slice());
        predicted::each_gpu(gpu, step, facts, at_depth(whole, run.k), &run.others)
    };
    // The two depths' replays side by side.
    let (a, b) = std::thread::scope(|scope| {
        let a = scope.spawn(|| each(&runs[0]));
        let b = each(&runs[1]);
        (a.join().unwrap_or_else(|e| std::panic::resume_unwind(e)), b)
    });
    let depths = [runs[0].k, runs[1].k];
    let blocks = runs[1].traffic.blocks;
    let each = a
        .iter()
        .zip(&b)
        .map(|((g, at_a), (_, at_b))| (*g, carried(g, at_a, at_b, (depths, whole.k), blocks)));
    Predicted::assemble(each.collect(), local, whole, runs[1].others.len(), tf32)
}

/// The shape `shape` at depth `k`.
pub fn at_depth(shape: Shape, k: usize) -> Shape {
    Shape { k, ..shape }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_through_two_depths_carries_each_count() {
        assert_eq!(along([256, 512], 4096, 10.0, 18.0), 10.0 + 8.0 * 15.0);
        assert_eq!(along([256, 512], 512, 10.0, 18.0), 18.0);
        let a = Traffic { blocks: 17, flops: 1000, most_block_instructions: 60, ..Traffic::default() };
        let b = Traffic { blocks: 17, flops: 1900, most_block_instructions: 110, ..Traffic::default() };
        let t = traffic([256, 512], 8192, &a, &b);
        // A count that does not grow with K (the blocks) stays; the others follow their line.
        assert_eq!((t.blocks, t.flops, t.most_block_instructions), (17, 1900 + 900 * 30, 110 + 50 * 30));
    }

    #[test]
    fn the_depths_are_the_deepest_the_work_allows_and_two_k_tiles_at_least() {
        // Step 05's kernel (590 instructions a unit of K, 17 blocks emulated, 8 replayed): 256.
        assert_eq!(choose((590.0, 0.0), 17, 8, 32), 256);
        // A kernel of little work a block: the deepest.
        assert_eq!(choose((9.0, 0.0), 63, 4, 256), 512);
        // Its loops left rolled (12 times the instructions): two 16-deep k-tiles, however far
        // past the budget (20 blocks replayed, at 8192³).
        assert_eq!(choose((7170.0, 0.0), 17, 8, 32), 32);
        assert_eq!(choose((7170.0, 0.0), 17, 20, 32), 32);
        // Step 12's blocks at 8192³ (16 units of 256×128 each, wgmma), four 32-deep tiles in
        // flight: 128.
        assert_eq!(choose((40.0, 16.0 * 65536.0), 6, 2, 128), 128);
    }
}

//! The parameter rules that more than one step's kernel obeys, written once: the thread tile of
//! steps 05 and 06 (and step 10, which launches step 06's kernel), and the warp-specialised
//! wgmma tile of step 08, which step 12 keeps. A step's `check` calls the rule its kernel
//! follows and adds its own; each refusal is one sentence that names the set and says why.

use crate::gpu::LaunchLimits;
use crate::params::Params;

/// Refuses a thread-tile set (BM, BN, BK, WM, WN, TM, TN, MINB) the kernel cannot serve: a zero
/// or an oversized block tile, a MINB beyond 32 blocks per SM, tiles that do not divide, a warp
/// region that is not exactly 32 thread tiles, a block tile whose rows are not whole 16-byte
/// loads, then the block's `threads` and its `smem_bytes` beyond `limits`. `threads` and
/// `smem_bytes` are the step's own, called only once the tiles divide.
pub fn thread_tile(
    p: &Params,
    limits: &LaunchLimits,
    threads: fn(&Params) -> u32,
    smem_bytes: fn(&Params) -> u32,
) -> Result<(), String> {
    let [bm, bn, bk, wm, wn, tm, tn, minb] =
        ["BM", "BN", "BK", "WM", "WN", "TM", "TN", "MINB"].map(|n| p.get(n));
    if [bm, bn, bk, wm, wn, tm, tn, minb].contains(&0) || [bm, bn, bk].iter().any(|&v| v > 1024) {
        return Err(format!("{p}: every parameter must be at least 1, and BM, BN, BK at most 1024"));
    }
    if minb > 32 {
        return Err(format!("{p}: MINB is a number of blocks per SM, at most 32"));
    }
    if bm % wm != 0 || bn % wn != 0 || wm % tm != 0 || wn % tn != 0 {
        return Err(format!(
            "{p}: the block tile must be a whole number of warp regions and a warp region a whole number of \
             thread tiles (WM divides BM, WN divides BN, TM divides WM, TN divides WN)"
        ));
    }
    if (wm / tm) * (wn / tn) != 32 {
        return Err(format!(
            "{p}: a warp region must hold exactly 32 thread tiles, but (WM/TM)·(WN/TN) = {}",
            (wm / tm) * (wn / tn)
        ));
    }
    if bm % 4 != 0 || bn % 4 != 0 || bk % 4 != 0 {
        return Err(format!("{p}: BM, BN and BK must be multiples of 4, the width of the 16-byte loads"));
    }
    limits.check_warp_tiled_block(p, threads(p), smem_bytes(p))
}

/// Refuses a set (BM, BN, STAGES, GROUP) that step 08's warp-specialised wgmma kernel, and
/// step 12's made from it, cannot serve: BM is the N of its wgmma instruction, BN one 64-column
/// strip per consumer warpgroup, STAGES the depth of the pipeline, GROUP the block-rows the
/// order walks down, and three consumers of BM = 256 have no room in an SM's registers. The
/// shared memory a set needs is the step's own to check.
pub fn wgmma_tile(p: &Params) -> Result<(), String> {
    let [bm, bn, stages, group] = ["BM", "BN", "STAGES", "GROUP"].map(|n| p.get(n));
    if bm != 128 && bm != 256 {
        return Err(format!("{p}: BM is the N of the kernel's wgmma instruction, written for 128 or 256"));
    }
    if ![64, 128, 192].contains(&bn) {
        return Err(format!("{p}: BN must be 64, 128 or 192, one 64-column strip per consumer warpgroup"));
    }
    if !(2..=8).contains(&stages) {
        return Err(format!("{p}: STAGES must be 2 to 8"));
    }
    if !(1..=64).contains(&group) {
        return Err(format!("{p}: GROUP must be 1 to 64 block-rows"));
    }
    if bm == 256 && bn == 192 {
        return Err(format!(
            "{p}: three consumers of 128 accumulators each do not fit in an SM's registers beside the producer"
        ));
    }
    Ok(())
}

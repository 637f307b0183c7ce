//! The parameter rules that more than one step's kernel obeys, written once: the thread tile of
//! steps 05 and 06 (and step 10, which launches step 06's kernel). A step's `check` calls the
//! rule its kernel follows and adds its own; each refusal is one sentence that names the set and
//! says why.

use crate::gpu::Limits;
use crate::params::Params;

/// Refuses a thread-tile set (BM, BN, BK, WM, WN, TM, TN, MINB) the kernel cannot serve: a zero
/// or an oversized block tile, a MINB beyond 32 blocks per SM, tiles that do not divide, a warp
/// region that is not exactly 32 thread tiles, a block tile whose rows are not whole 16-byte
/// loads, then the block's `threads` and its `smem_bytes` beyond `limits`. `threads` and
/// `smem_bytes` are the step's own, called only once the tiles divide.
pub fn thread_tile(
    p: &Params,
    limits: &Limits,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::Param;

    const THREAD_TILE: &[Param] = &[
        Param { name: "BM", default: 128, help: "" },
        Param { name: "BN", default: 128, help: "" },
        Param { name: "BK", default: 16, help: "" },
        Param { name: "WM", default: 64, help: "" },
        Param { name: "WN", default: 32, help: "" },
        Param { name: "TM", default: 8, help: "" },
        Param { name: "TN", default: 8, help: "" },
        Param { name: "MINB", default: 1, help: "" },
    ];

    fn threads(p: &Params) -> u32 {
        (p.get("BM") / p.get("WM")) * (p.get("BN") / p.get("WN")) * 32
    }

    fn smem_bytes(p: &Params) -> u32 {
        4 * p.get("BK") * (p.get("BM") + p.get("BN"))
    }

    fn with(decl: &[Param], name: &str, value: u32) -> Params {
        Params::with_overrides(decl, &[(name.to_owned(), value)]).unwrap()
    }

    /// Each rule refuses its own mistake, a zero divisor before the block's threads are counted.
    #[test]
    fn each_thread_tile_rule_refuses_its_set() {
        thread_tile(&Params::defaults(THREAD_TILE), &Limits::SM90, threads, smem_bytes).unwrap();
        for (name, value, says) in [
            ("WM", 0, "at least 1"),
            ("BK", 2048, "at most 1024"),
            ("MINB", 33, "at most 32"),
            ("WN", 48, "whole number of warp regions"),
            ("TN", 4, "exactly 32 thread tiles, but (WM/TM)·(WN/TN) = 64"),
            ("BK", 6, "multiples of 4"),
            ("BK", 1024, "bytes of A and B in shared memory"),
        ] {
            let err =
                thread_tile(&with(THREAD_TILE, name, value), &Limits::SM90, threads, smem_bytes).unwrap_err();
            assert!(err.contains(says), "{name}={value}: {err}");
        }
    }
}

//! What a ring run takes of the host's memory and of each GPU's, checked before anything is
//! drawn or allocated: a shape that does not fit is refused in one sentence naming the memory,
//! the bytes it needs and those there are.

use anyhow::{Result, bail};
use common::Shape;

/// Host bytes at the run's peak for `g` ranks of `shard`: A and B whole and in shards, one
/// rank's copy of the whole A for its reference, that reference's f64 operands (two pairs while
/// one replaces the other), and every rank's reference kept (C and |A|·|B| in f64).
pub fn host_bytes(shard: Shape, g: usize) -> u64 {
    let Shape { m, n, k } = shard;
    let (a, b, c) = ((g * m * k) as u64, (k * g * n) as u64, (g * m * n) as u64);
    let own_b = (k * n) as u64;
    8 * (a + b) + 4 * (a + own_b) + 16 * (a + own_b) + 16 * g as u64 * c
}

/// Device bytes of one GPU that holds `ranks` of the ring's ranks: each rank's shard of A, two
/// landing buffers for the shards passed on, the gathered A, its shard of B, C in blocks and
/// whole; then one rank's reference by cuBLAS DGEMM at a time (A, its B and C in f64).
pub fn device_bytes(shard: Shape, g: usize, ranks: usize) -> u64 {
    let Shape { m, n, k } = shard;
    let per_rank = 4 * (3 * m * k + g * m * k + k * n + 2 * g * m * n) as u64;
    ranks as u64 * per_rank + 8 * (g * m * k + k * n + g * m * n) as u64
}

fn gib(bytes: u64) -> f64 {
    bytes as f64 / (1u64 << 30) as f64
}

/// Refuses a run of `g` ranks of `shard` whose host bytes pass `available` (None: no figure).
pub fn check_host(shard: Shape, g: usize, available: Option<u64>) -> Result<()> {
    let need = host_bytes(shard, g);
    match available {
        Some(free) if need > free => bail!(
            "{g} ranks of the shard {shard} need {:.1} GiB of host memory for A and B, their shards and each \
             rank's f64 reference, but this machine has {:.1} GiB available; choose a smaller shard",
            gib(need),
            gib(free)
        ),
        _ => Ok(()),
    }
}

/// Refuses a run whose GPU `name`, holding `ranks` ranks, has fewer than the bytes they need free.
pub fn check_device(shard: Shape, g: usize, ranks: usize, free: u64, name: &str) -> Result<()> {
    let need = device_bytes(shard, g, ranks);
    if need > free {
        bail!(
            "{ranks} of {g} ranks of the shard {shard} need {:.1} GiB of GPU memory (their buffers and the f64 \
             reference) but {name} has {:.1} GiB free; choose a smaller shard",
            gib(need),
            gib(free)
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ring_past_the_memory_is_refused_in_one_sentence() {
        let shard = Shape::new(1 << 20, 16, 1024).unwrap();
        // Two ranks: A whole is 2^31 floats, 8 GiB; the host holds it in f32 twice, once more for
        // a rank's reference, and twice in f64 while its operands are made.
        assert_eq!(
            host_bytes(shard, 2),
            8 * ((1 << 31) + (1 << 15)) + 20 * ((1 << 31) + (1 << 14)) + 16 * 2 * (1 << 25)
        );
        let err = check_host(shard, 2, Some(24 << 30)).unwrap_err().to_string();
        assert!(
            err.starts_with("2 ranks of the shard M=1048576 N=16 K=1024 need 57.0 GiB of host memory"),
            "{err}"
        );
        assert!(err.contains("24.0 GiB available") && !err.contains('\n'), "{err}");
        assert!(check_host(shard, 2, Some(128 << 30)).is_ok() && check_host(shard, 2, None).is_ok());
        // On one H200 both ranks fit; on a GPU of 40 GiB free they do not.
        assert!(check_device(shard, 2, 2, 140 << 30, "H200").is_ok());
        let err = check_device(shard, 2, 2, 40 << 30, "Test GPU").unwrap_err().to_string();
        assert!(err.contains("but Test GPU has 40.0 GiB free"), "{err}");
    }
}

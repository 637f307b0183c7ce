//! The ring without a GPU: `--simulate G` on a machine that has none runs the schedule of
//! [`crate::rounds`] on the CPU, each rank's shard of A, two landing buffers and column block of C
//! in host memory, each round's product by the CPU in FP32 and each send a copy into the next
//! rank's landing buffer. It checks the schedule (every rank multiplies every shard once, into
//! the rows that shard belongs to), not the speed of any GPU: what a change to `next`, `prev` or
//! `shard` does is seen here as on a GPU.

use anyhow::{Result, bail};

use common::matrix::Family;
use common::reference::Reference;
use common::{Inputs, Precision, Shape};

use crate::report::{Check, Failure, RingWay, Run};
use crate::rounds::{Ring, ShardBuffer};

/// The shard a run without a GPU takes where the command gives the GPU run's default.
const SMALL: (usize, usize, usize) = (64, 64, 256);

/// The most multiply-adds the CPU's ring takes (a few seconds on one core).
const MOST_MACS: usize = 1 << 31;

/// Runs both ways on the CPU over `g` ranks, each of `shard` (the program's default where
/// `default`, which takes a small one instead), on `family`'s inputs from `seed`, and prints
/// their checks; Ok(false) where one failed.
pub fn run(
    g: usize,
    (given, default): ((usize, usize, usize), bool),
    family: Option<Family>,
    seed: u64,
) -> Result<bool> {
    let (m, n, k) = if default { SMALL } else { given };
    let shard = Shape::new(m, n, k).map_err(anyhow::Error::msg)?;
    let global = Shape::new(g * m, g * n, k).map_err(anyhow::Error::msg)?;
    if global.m * global.n * k > MOST_MACS {
        bail!(
            "the ring on the CPU over {g} ranks of {shard} would take {} multiply-adds, more than the {MOST_MACS} it runs in seconds: give a smaller shard (-m, -n, -k)",
            global.m * global.n * k
        );
    }
    println!(
        "{}: no NVIDIA GPU, so the ring's schedule runs on the CPU: {g} ranks, shard {shard} (A {m}×{k}, B {k}×{n} a rank){}",
        crate::NAME,
        if default { ", a small shard: give -m -n -k for another" } else { "" }
    );
    let inputs = match family {
        Some(family) => Inputs::family(global, seed, family),
        None => Inputs::random(global, seed),
    };
    let (a, b) = shards(&inputs, g);
    let references: Vec<Reference> = (0..g)
        .map(|r| {
            let b = common::Matrix { rows: k, cols: n, data: b[r].clone() };
            let own = Inputs::from_matrices(inputs.a.clone(), b, inputs.source.clone())
                .map_err(anyhow::Error::msg)?;
            Ok(common::reference::cpu(&own))
        })
        .collect::<Result<_>>()?;
    let ring = Ring { ranks: g };
    let mut passed = true;
    for way in [RingWay::Baseline, RingWay::Ring] {
        let blocks = match way {
            RingWay::Baseline => gathered(&a, &b, shard),
            RingWay::Ring => ringed(ring, &a, &b, shard),
        };
        let check = verify(way, &blocks, &references, Shape { m: global.m, ..shard });
        print!("{check}");
        passed &= check.passed;
    }
    Ok(passed)
}

/// A's rows and B's columns, one shard each per rank.
pub(crate) fn shards(inputs: &Inputs, g: usize) -> (Vec<Vec<f32>>, Vec<Vec<f32>>) {
    let Shape { m, n, k } = inputs.shape;
    let (m, n) = (m / g, n / g);
    let a = inputs.a.data.chunks(m * k).map(<[f32]>::to_vec).collect();
    let b = (0..g)
        .map(|r| {
            inputs.b.data.chunks(g * n).flat_map(|row| row[r * n..(r + 1) * n].iter().copied()).collect()
        })
        .collect();
    (a, b)
}

/// C's column block of each rank, its rows in the order of the shards of A.
type RankBlocks = Vec<Vec<f32>>;

/// The baseline: every rank gathers all of A, in rank order, then multiplies it.
fn gathered(a: &[Vec<f32>], b: &[Vec<f32>], shard: Shape) -> RankBlocks {
    b.iter().map(|b| a.iter().flat_map(|a| product(a, b, shard)).collect()).collect()
}

/// The ring: in each round every rank sends the shard it holds on to the next rank's landing
/// buffer and multiplies it into the rows of the shard the schedule says it holds.
fn ringed(ring: Ring, a: &[Vec<f32>], b: &[Vec<f32>], shard: Shape) -> RankBlocks {
    let g = ring.ranks;
    let rows = shard.m * shard.n;
    let mut landing = vec![[vec![f32::NAN; shard.m * shard.k], vec![f32::NAN; shard.m * shard.k]]; g];
    let mut c = vec![vec![f32::NAN; g * rows]; g];
    for round in 0..g {
        let held = |landing: &[[Vec<f32>; 2]], r: usize| match ring.buffer(round) {
            ShardBuffer::Own => a[r].clone(),
            ShardBuffer::Landing(l) => landing[r][l].clone(),
        };
        let sent: Vec<Vec<f32>> = (0..g).map(|r| held(&landing, r)).collect();
        for (r, c) in c.iter_mut().enumerate() {
            let s = ring.shard(r, round);
            c[s * rows..(s + 1) * rows].copy_from_slice(&product(&sent[r], &b[r], shard));
        }
        if let Some(l) = ring.landing(round) {
            for (r, shard_a) in sent.into_iter().enumerate() {
                landing[ring.next(r)][l] = shard_a;
            }
        }
    }
    c
}

/// One shard's product in FP32, each element a sum in the order of K.
fn product(a: &[f32], b: &[f32], s: Shape) -> Vec<f32> {
    let mut c = vec![0.0f32; s.m * s.n];
    for i in 0..s.m {
        for p in 0..s.k {
            let x = a[i * s.k + p];
            for j in 0..s.n {
                c[i * s.n + j] = x.mul_add(b[p * s.n + j], c[i * s.n + j]);
            }
        }
    }
    c
}

/// Every rank's column block against its reference, as the GPU run's line says it.
fn verify(way: RingWay, blocks: &RankBlocks, references: &[Reference], shape: Shape) -> Check {
    let mut worst = (0.0f64, "");
    let mut failures = Vec::new();
    for (r, (c, reference)) in blocks.iter().zip(references).enumerate() {
        let verdict = common::verify::verify(shape, c, reference, Precision::Fp32);
        let ratio = verdict.normwise.relative() / verdict.normwise.relative_limit();
        if r == 0 || ratio > worst.0 {
            worst = (ratio, verdict.source);
        }
        if !verdict.passed() {
            failures.push(Failure { rank: r, summary: verdict.summary(), verdict });
        }
    }
    Check {
        way,
        run: Run::First,
        passed: failures.is_empty(),
        worst_normwise: worst.0,
        reference: worst.1.to_owned(),
        failures,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs(g: usize, s: Shape) -> (Vec<Vec<f32>>, Vec<Vec<f32>>, Vec<Reference>) {
        let inputs = Inputs::random(Shape { m: g * s.m, n: g * s.n, k: s.k }, 7);
        let (a, b) = shards(&inputs, g);
        let refs = (0..g)
            .map(|r| {
                let bm = common::Matrix { rows: s.k, cols: s.n, data: b[r].clone() };
                common::reference::cpu(
                    &Inputs::from_matrices(inputs.a.clone(), bm, inputs.source.clone()).unwrap(),
                )
            })
            .collect();
        (a, b, refs)
    }

    #[test]
    fn the_cpus_ring_passes_on_every_rank_and_a_wrong_schedule_fails() {
        let s = Shape { m: 8, n: 8, k: 32 };
        for g in [2, 3, 4] {
            let (a, b, refs) = inputs(g, s);
            let whole = Shape { m: g * s.m, ..s };
            let ring = Ring { ranks: g };
            assert!(verify(RingWay::Ring, &ringed(ring, &a, &b, s), &refs, whole).passed, "{g} ranks");
            assert!(verify(RingWay::Baseline, &gathered(&a, &b, s), &refs, whole).passed);
        }
        // The products put into the rows of the wrong shard: the rank is named.
        let (a, b, refs) = inputs(4, s);
        let mut blocks = ringed(Ring { ranks: 4 }, &a, &b, s);
        let rows = s.m * s.n;
        let (first, second) = blocks[2].split_at_mut(rows);
        first.swap_with_slice(&mut second[..rows]);
        let check = verify(RingWay::Ring, &blocks, &refs, Shape { m: 4 * s.m, ..s });
        assert!(!check.passed && check.failures.iter().any(|f| f.rank == 2));
    }
}

//! The machine at work. A launch's clusters of blocks (a block alone, for a kernel without
//! clusters) are handed out in order to host threads. Within a cluster every warp of every block
//! runs in turn until it waits (at a barrier, on an mbarrier, at the cluster barrier) or has
//! left; each warp runs instruction by instruction for the lanes that stand at the lowest program
//! counter, so lanes that branch apart run one side, then the other, and meet again where the
//! paths join.
//!
//! The parts depend one way, each on those below it (`tests/structure.rs` checks it):
//!
//! - [`schedule`]: the rounds of a cluster's warps, barriers released, copies landed;
//! - [`deadlock`]: a round in which no warp gets further named, one line for each thing waited for;
//! - [`instruction`]: one instruction for the lanes that execute it, handed to the part it belongs to;
//! - [`cluster`] (the block's and the cluster's barriers, `mapa`), [`copy_engine`] (TMA),
//!   [`mbarrier`], [`tensor`] (`wgmma`), [`collective`] (warp-wide instructions), [`loads_stores`]
//!   (loads, stores, atomics, `cp.async`);
//! - [`fragments`]: the sanitizer's check of the registers a wgmma in flight still reads;
//! - [`operands`]: the sanitizer's trace of `mma.sync`'s operands to the elements of A and B;
//! - [`async_proxy`] and [`order`]: the sanitizer's checks of the copy engine's and the tensor
//!   cores' use of shared memory, and of what orders what across warps; [`picture`]: what a
//!   picture of one warp's access keeps (see [`crate::recording::warp_access`]); [`global_order`]: the order of
//!   global memory across clusters;
//! - [`names`]: how a fault names an mbarrier and a peer block as the kernel does, and [`causes`]
//!   the cause it names where that lies on neither of the lines that meet;
//! - [`timeline_hooks`] and [`trace_hooks`]: what a block's timeline picture and the time model's
//!   replay ([`crate::recording::trace`]) record as the warps run;
//! - [`state`], [`shadows`], [`operand_tags`] and [`global_watch`]: what a cluster, a block and a
//!   warp hold (how their program counters move among it), what the sanitizer keeps beside them
//!   (the operands' tags, and what each warp knows of other clusters' stores), and how a fault
//!   names them.
//! - [`lanes`]: the lanes of a mask, lowest first.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::memory::Global;
use crate::traffic::Traffic;
use crate::{Fault, FaultKind};

pub mod async_proxy;
mod causes;
mod cluster;
mod collective;
pub mod copy_engine;
mod deadlock;
mod fragments;
mod global_order;
pub mod global_watch;
mod instruction;
mod lanes;
mod loads_stores;
pub mod mbarrier;
mod names;
mod operand_tags;
mod operands;
mod order;
mod picture;
mod schedule;
mod shadows;
pub mod state;
pub mod tensor;
mod timeline_hooks;
mod trace_hooks;

pub use state::{Cluster, Lanes, Launch, Warp};

/// Runs every cluster of the launch; the first fault (of the lowest cluster) ends it.
pub fn run(global: &Global, launch: &Launch) -> Result<Traffic, Fault> {
    run_some(global, launch, None)
}

/// Runs the clusters `only` lists (by their index in launch order), or every cluster; the first
/// fault (of the lowest cluster) ends it.
pub fn run_some(global: &Global, launch: &Launch, only: Option<&[u64]>) -> Result<Traffic, Fault> {
    let (gx, gy, gz) = launch.grid;
    let all = u64::from(gx) * u64::from(gy) * u64::from(gz) / launch.cluster_size() as u64;
    let clusters = only.map_or(all, |list| list.len() as u64);
    let next = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let fault: Mutex<Option<(u64, Fault)>> = Mutex::new(None);
    let total = Mutex::new(Traffic::default());
    let first_tiles = Mutex::new(std::collections::BTreeSet::new());
    let block_sectors = Mutex::new(std::collections::HashMap::<u64, u64>::new());
    let block_stores = Mutex::new(std::collections::HashMap::<u64, u64>::new());
    let workers = launch.workers.clamp(1, clusters.max(1) as usize);
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                let mut cluster = Cluster::new(launch, global, &stop);
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    if i >= clusters || stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let c = only.map_or(i, |list| list[i as usize]);
                    if let Err(f) = cluster.run_cluster(c) {
                        stop.store(true, Ordering::SeqCst);
                        let mut slot = fault.lock().expect("no worker panics holding it");
                        // A cluster stopped by another's fault is not the cause.
                        if f.kind != FaultKind::Stopped && slot.as_ref().is_none_or(|(at, _)| c < *at) {
                            *slot = Some((c, f));
                        }
                        break;
                    }
                }
                total.lock().expect("no worker panics holding it").add(&cluster.traffic);
                first_tiles.lock().expect("no worker panics holding it").append(&mut cluster.first_tiles);
                let mut sectors = block_sectors.lock().expect("no worker panics holding it");
                for (block, s) in cluster.block_sectors.drain() {
                    *sectors.entry(block).or_default() += s;
                }
                let mut stores = block_stores.lock().expect("no worker panics holding it");
                for (block, s) in cluster.block_stores.drain() {
                    *stores.entry(block).or_default() += s;
                }
            });
        }
    });
    if let Some((_, f)) = fault.into_inner().expect("workers done") {
        return Err(f);
    }
    let mut total = total.into_inner().expect("workers done");
    total.first_tiles = first_tiles.into_inner().expect("workers done").len() as u64;
    (total.sm_sectors_most, total.sm_sectors_least) =
        per_sm(block_sectors.into_inner().expect("workers done"), launch.sms);
    (total.sm_stores_most, total.sm_stores_least) =
        per_sm(block_stores.into_inner().expect("workers done"), launch.sms);
    Ok(total)
}

/// Runs the clusters `list` names, spread over the launch's workers, and returns each one's
/// counts in the order of the list (what a scaled launch multiplies out).
pub fn run_each(global: &Global, launch: &Launch, list: &[u64]) -> Result<Vec<Traffic>, Fault> {
    let next = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let fault: Mutex<Option<(u64, Fault)>> = Mutex::new(None);
    let counts = Mutex::new(vec![Traffic::default(); list.len()]);
    let workers = launch.workers.clamp(1, list.len().max(1));
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                let mut cluster = Cluster::new(launch, global, &stop);
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst) as usize;
                    if i >= list.len() || stop.load(Ordering::Relaxed) {
                        break;
                    }
                    cluster.traffic = Traffic::default();
                    if let Err(f) = cluster.run_cluster(list[i]) {
                        stop.store(true, Ordering::SeqCst);
                        let mut slot = fault.lock().expect("no worker panics holding it");
                        if f.kind != FaultKind::Stopped && slot.as_ref().is_none_or(|(at, _)| list[i] < *at) {
                            *slot = Some((list[i], f));
                        }
                        break;
                    }
                    counts.lock().expect("no worker panics holding it")[i] = cluster.traffic;
                }
            });
        }
    });
    if let Some((_, f)) = fault.into_inner().expect("workers done") {
        return Err(f);
    }
    Ok(counts.into_inner().expect("workers done"))
}

/// The most and the least of `per_block` summed per SM, the blocks dealt to `sms` SMs in turn
/// (block b on SM b mod `sms`); zeros where no block counted anything.
fn per_sm(per_block: std::collections::HashMap<u64, u64>, sms: u32) -> (u64, u64) {
    if per_block.is_empty() {
        return (0, 0);
    }
    let mut each = vec![0u64; sms.max(1) as usize];
    for (block, v) in per_block {
        each[(block % u64::from(sms.max(1))) as usize] += v;
    }
    (each.iter().copied().max().unwrap_or(0), each.iter().copied().min().unwrap_or(0))
}

#[cfg(test)]
mod per_sm_tests {
    use super::per_sm;

    /// Blocks dealt to the SMs in turn: two waves of equal blocks give every SM two; one block
    /// leaves the others empty; nothing counted gives zeros. The SMs are the GPU's: 132 blocks
    /// are one wave of an H100 SXM and more than one of a 114-SM H100 PCIe.
    #[test]
    fn blocks_are_dealt_to_the_sms_in_turn() {
        for sms in [132, 114] {
            let waves = (0..2 * u64::from(sms)).map(|b| (b, 5)).collect();
            assert_eq!(per_sm(waves, sms), (10, 10));
            assert_eq!(per_sm([(7, 3)].into_iter().collect(), sms), (3, 0));
            let uneven = [(0, 4), (u64::from(sms), 6), (1, 1)].into_iter().collect();
            assert_eq!(per_sm(uneven, sms), (10, 0));
            assert_eq!(per_sm(Default::default(), sms), (0, 0));
        }
        let one_wave: std::collections::HashMap<u64, u64> = (0..132).map(|b| (b, 1)).collect();
        assert_eq!(per_sm(one_wave.clone(), 132), (1, 1));
        assert_eq!(per_sm(one_wave, 114), (2, 1));
    }
}

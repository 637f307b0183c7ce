//! The ranks on their GPUs: each rank's buffers, streams and events, and the two ways of
//! computing C queued on all of them from this one thread.
//!
//! Rank r holds A's rows r·M/G… (its shard) and B's columns r·N/G…, and ends with C's columns
//! r·N/G… for every row: G blocks of M/G rows, one per shard of A. Each rank has two streams:
//! its GPU's stream, where the products run, and an exchange stream, where shards travel; events
//! order one against the other.

use std::sync::Arc;

use anyhow::{Context, Result, anyhow};
use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaEvent, CudaSlice, CudaStream, DevicePtr};

use common::Shape;

use crate::nccl::Comms;
use crate::rank_gpu::{RankGpu, ShardKernel};
use crate::rounds::{Ring, ShardBuffer};

/// How shards travel: the baseline's all-gather by NCCL where there is a communicator (by copies
/// between ranks that share one GPU), and the ring's exchange by NCCL's kernels or by the copy
/// engines.
pub struct Link {
    pub nccl: Option<Comms>,
    pub ring: Via,
}

/// What moves A's shards between ranks (in the JSON, as --exchange names it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Via {
    /// NCCL's send and receive: kernels, on SMs the products then lack.
    Nccl,
    /// The copy engines: no SM.
    Copies,
}

/// One rank: where it runs, its buffers, and the events that order its streams.
pub struct Rank {
    pub device: usize,
    exchange: Arc<CudaStream>,
    own: CudaSlice<f32>,
    landing: [CudaSlice<f32>; 2],
    gathered: CudaSlice<f32>,
    b: CudaSlice<f32>,
    /// C's column block in G blocks of M/G rows (the ring), and whole (the baseline).
    pub blocks: Vec<CudaSlice<f32>>,
    pub whole: CudaSlice<f32>,
    /// On the GPU's stream where a run starts.
    started: CudaEvent,
    /// On the exchange stream after each round's exchange.
    moved: Vec<CudaEvent>,
    /// On the GPU's stream after each round's product.
    done: Vec<CudaEvent>,
}

/// Queues a copy of `floats` floats from `src` to `dst` on `stream`, by the copy engines: within
/// one GPU, or between two that reach each other's memory ([`enable_peer_access`]); unified
/// addressing tells the driver which GPU each pointer is on.
///
/// # Safety
/// Both are device buffers of at least `floats` floats.
unsafe fn copy(stream: &CudaStream, src: u64, dst: u64, floats: usize) -> Result<()> {
    stream.context().bind_to_thread()?;
    // SAFETY: as the caller promises.
    unsafe { cudarc::driver::sys::cuMemcpyAsync(dst, src, floats * 4, stream.cu_stream()) }
        .result()
        .map_err(|e| anyhow!("a copy between ranks failed: {e:?}"))
}

/// Every rank, on its GPU, and the link between them.
pub struct Ranks {
    pub devices: Vec<RankGpu>,
    pub ranks: Vec<Rank>,
    link: Link,
    pub ring: Ring,
    /// One shard's product: M/G × N/G × K.
    pub shard: Shape,
}

impl Ranks {
    /// Rank r on `devices[placement[r]]`, holding `a_shards[r]` and `b_shards[r]`.
    pub fn new(
        devices: Vec<RankGpu>,
        placement: &[usize],
        link: Link,
        shard: Shape,
        shards: (&[Vec<f32>], &[Vec<f32>]),
    ) -> Result<Ranks> {
        let g = placement.len();
        let Shape { m, n, k } = shard;
        let mut ranks = Vec::with_capacity(g);
        for (r, &device) in placement.iter().enumerate() {
            let gpu = &devices[device].gpu;
            let s = &gpu.stream;
            let alloc =
                |len: usize| s.alloc_zeros::<f32>(len).context("allocating a rank's buffers on its GPU");
            let event = || {
                gpu.ctx.new_event(Some(CUevent_flags::CU_EVENT_DISABLE_TIMING)).context("creating an event")
            };
            ranks.push(Rank {
                device,
                exchange: gpu.ctx.new_stream().context("creating an exchange stream")?,
                own: s.clone_htod(&shards.0[r]).context("copying A's shard to its GPU")?,
                landing: [alloc(m * k)?, alloc(m * k)?],
                gathered: alloc(g * m * k)?,
                b: s.clone_htod(&shards.1[r]).context("copying B's shard to its GPU")?,
                blocks: (0..g).map(|_| alloc(m * n)).collect::<Result<_>>()?,
                whole: alloc(g * m * n)?,
                started: event()?,
                moved: (0..g).map(|_| event()).collect::<Result<_>>()?,
                done: (0..g).map(|_| event()).collect::<Result<_>>()?,
            });
        }
        Ok(Ranks { devices, ranks, link, ring: Ring { ranks: g }, shard })
    }

    /// Whether the baseline gathers by NCCL, and what moves the ring's shards.
    pub fn link(&self) -> (bool, Via) {
        (self.link.nccl.is_some(), self.link.ring)
    }

    /// The stream a rank's products run on.
    pub fn stream(&self, r: usize) -> &Arc<CudaStream> {
        &self.devices[self.ranks[r].device].gpu.stream
    }

    /// The gathered product's shape: M × N/G × K.
    pub fn whole_shape(&self) -> Shape {
        Shape { m: self.ring.ranks * self.shard.m, ..self.shard }
    }

    /// Marks where a run starts on every rank, and lets each exchange stream start there.
    fn start(&self) -> Result<()> {
        for (r, rank) in self.ranks.iter().enumerate() {
            rank.started.record(self.stream(r))?;
        }
        for (r, rank) in self.ranks.iter().enumerate() {
            rank.exchange.wait(&rank.started)?;
            // A copy writes the next rank's buffers: it waits for that rank's start too.
            if self.link.ring == Via::Copies {
                rank.exchange.wait(&self.ranks[self.ring.next(r)].started)?;
            }
        }
        Ok(())
    }

    // ANCHOR: baseline
    /// The baseline on every rank: all-gather A's shards, then one product of the gathered A.
    pub fn baseline(&mut self, product: ShardKernel) -> Result<()> {
        self.gather()?;
        for r in 0..self.ranks.len() {
            let (device, rank) = (&self.devices[self.ranks[r].device], &mut self.ranks[r]);
            device.gpu.stream.wait(&rank.moved[0])?;
            let shape = Shape { m: self.ring.ranks * self.shard.m, ..self.shard };
            device.multiply(product, (shape, false), &rank.gathered, &rank.b, &mut rank.whole)?;
        }
        Ok(())
    }

    /// Every shard of A into every rank's gathered buffer, in rank order.
    pub fn gather(&mut self) -> Result<()> {
        self.start()?;
        let count = self.shard.m * self.shard.k;
        match &self.link.nccl {
            Some(comms) => comms.group(|comms| {
                for (r, rank) in self.ranks.iter().enumerate() {
                    let (send, _) = rank.own.device_ptr(&rank.exchange);
                    let (recv, _) = rank.gathered.device_ptr(&rank.exchange);
                    // SAFETY: own holds a shard and gathered G of them, on this rank's GPU; only
                    // this stream touches gathered until the product waits for `moved`.
                    unsafe { comms.all_gather(r, (send, recv), count, &rank.exchange)? };
                }
                Ok(())
            })?,
            None => {
                let owns: Vec<u64> =
                    self.ranks.iter().map(|rank| rank.own.device_ptr(&rank.exchange).0).collect();
                for rank in &self.ranks {
                    let (gathered, _) = rank.gathered.device_ptr(&rank.exchange);
                    for (j, &own) in owns.iter().enumerate() {
                        let slot = gathered + (j * count * 4) as u64;
                        // SAFETY: every shard and every slot holds `count` floats.
                        unsafe { copy(&rank.exchange, own, slot, count)? };
                    }
                }
            }
        }
        for rank in &self.ranks {
            rank.moved[0].record(&rank.exchange)?;
        }
        Ok(())
    }
    // ANCHOR_END: baseline

    // ANCHOR: ring
    /// The ring on every rank: in each round, every rank multiplies the shard it holds while that
    /// shard travels on to the next rank.
    pub fn ring(&mut self, product: ShardKernel) -> Result<()> {
        self.start()?;
        let rounds = self.ring.ranks;
        for round in 0..rounds {
            // The exchange is queued first, so that it starts as the round's product does.
            if let Some(landing) = self.ring.landing(round) {
                match self.link.ring {
                    Via::Nccl => self.exchange_by_nccl(round, landing)?,
                    Via::Copies => self.exchange_by_copies(round, landing)?,
                }
            }
            for r in 0..self.ranks.len() {
                if round > 0 {
                    let source = self.source(r);
                    self.stream(r).wait(&self.ranks[source].moved[round - 1])?;
                }
                let shard = self.ring.shard(r, round);
                let (device, rank) = (&self.devices[self.ranks[r].device], &mut self.ranks[r]);
                let a = match self.ring.buffer(round) {
                    ShardBuffer::Own => &rank.own,
                    ShardBuffer::Landing(l) => &rank.landing[l],
                };
                device.multiply(product, (self.shard, true), a, &rank.b, &mut rank.blocks[shard])?;
                rank.done[round].record(&device.gpu.stream)?;
            }
        }
        // Each GPU's stream ends after its own last send too: the next run's first copies may
        // overwrite what it sent, and a stop event recorded there covers the whole run.
        if rounds > 1 {
            for r in 0..self.ranks.len() {
                self.stream(r).wait(&self.ranks[r].moved[rounds - 2])?;
            }
        }
        Ok(())
    }

    /// The rank whose exchange stream records the arrival of rank `r`'s next shard: `r` itself
    /// through NCCL (its receive), the rank before it with copies (its push).
    fn source(&self, r: usize) -> usize {
        match self.link.ring {
            Via::Nccl => r,
            Via::Copies => self.ring.prev(r),
        }
    }

    /// The buffer rank `r` multiplies, and sends on, in `round`.
    fn held(&self, r: usize, round: usize) -> &CudaSlice<f32> {
        match self.ring.buffer(round) {
            ShardBuffer::Own => &self.ranks[r].own,
            ShardBuffer::Landing(l) => &self.ranks[r].landing[l],
        }
    }
    // ANCHOR_END: ring

    // ANCHOR: exchange
    /// Round `round`'s exchange by NCCL: each rank receives the next shard into its landing
    /// buffer `landing`, once the product that last read it has ended, and sends its own on.
    fn exchange_by_nccl(&self, round: usize, landing: usize) -> Result<()> {
        let comms = self.link.nccl.as_ref().context("the ring by NCCL needs a communicator")?;
        let count = self.shard.m * self.shard.k;
        for rank in &self.ranks {
            if let Some(p) = self.ring.reader_before(round) {
                rank.exchange.wait(&rank.done[p])?;
            }
        }
        comms.group(|comms| {
            for (r, rank) in self.ranks.iter().enumerate() {
                let (send, _) = self.held(r, round).device_ptr(&rank.exchange);
                let (recv, _) = rank.landing[landing].device_ptr(&rank.exchange);
                let peers = (self.ring.next(r), self.ring.prev(r));
                // SAFETY: both buffers hold a shard on this rank's GPU; the landing buffer's last
                // reader was waited for above, and its next reader waits for `moved`.
                unsafe { comms.ring_step(r, (send, recv), peers, count, &rank.exchange)? };
            }
            Ok(())
        })?;
        for rank in &self.ranks {
            rank.moved[round].record(&rank.exchange)?;
        }
        Ok(())
    }
    // ANCHOR_END: exchange

    // ANCHOR: copies
    /// Round `round`'s exchange by the copy engines: each rank pushes its shard into the next
    /// rank's landing buffer `landing`, on its own exchange stream.
    fn exchange_by_copies(&self, round: usize, landing: usize) -> Result<()> {
        let count = self.shard.m * self.shard.k;
        for r in 0..self.ranks.len() {
            let to = self.ring.next(r);
            let stream = &self.ranks[r].exchange;
            if let Some(p) = self.ring.reader_before(round) {
                stream.wait(&self.ranks[to].done[p])?;
            }
            if round > 0 {
                // What r sends arrived from the rank before it; what it overwrites, the next rank
                // has finished sending on.
                stream.wait(&self.ranks[self.ring.prev(r)].moved[round - 1])?;
                stream.wait(&self.ranks[to].moved[round - 1])?;
            }
            let (send, _) = self.held(r, round).device_ptr(stream);
            let (recv, _) = self.ranks[to].landing[landing].device_ptr(stream);
            // SAFETY: both hold a shard; the waits above order the copy after the last reader of
            // the landing buffer and after the arrival of what it sends.
            unsafe { copy(stream, send, recv, count)? };
            self.ranks[r].moved[round].record(stream)?;
        }
        Ok(())
    }
    // ANCHOR_END: copies

    /// One shard's product on every rank, alone (for the model).
    pub fn products_alone(&mut self, product: ShardKernel) -> Result<()> {
        for rank in &mut self.ranks {
            let device = &self.devices[rank.device];
            device.multiply(product, (self.shard, true), &rank.own, &rank.b, &mut rank.blocks[0])?;
        }
        Ok(())
    }

    /// One round of the ring's exchange, alone (for the model).
    pub fn exchange_alone(&mut self) -> Result<()> {
        self.start()?;
        match self.link.ring {
            Via::Nccl => self.exchange_by_nccl(0, 0)?,
            Via::Copies => self.exchange_by_copies(0, 0)?,
        }
        for r in 0..self.ranks.len() {
            let source = self.source(r);
            self.stream(r).wait(&self.ranks[source].moved[0])?;
        }
        Ok(())
    }

    /// The baseline's all-gather, alone (for the model).
    pub fn gather_alone(&mut self) -> Result<()> {
        self.gather()?;
        for r in 0..self.ranks.len() {
            self.stream(r).wait(&self.ranks[r].moved[0])?;
        }
        Ok(())
    }

    /// The baseline's product of the gathered A, alone (for the model).
    pub fn whole_alone(&mut self, product: ShardKernel) -> Result<()> {
        let shape = self.whole_shape();
        for rank in &mut self.ranks {
            let device = &self.devices[rank.device];
            device.multiply(product, (shape, false), &rank.gathered, &rank.b, &mut rank.whole)?;
        }
        Ok(())
    }

    /// Every rank's C filled with NaN, so that an element a way never writes fails.
    pub fn poison(&mut self) -> Result<()> {
        for r in 0..self.ranks.len() {
            let stream = self.stream(r).clone();
            let rank = &mut self.ranks[r];
            let nan = vec![f32::NAN; rank.whole.len()];
            stream.memcpy_htod(&nan, &mut rank.whole)?;
            for block in &mut rank.blocks {
                stream.memcpy_htod(&nan[..block.len()], block)?;
            }
        }
        self.synchronize()
    }

    /// Waits for every GPU.
    pub fn synchronize(&self) -> Result<()> {
        for device in &self.devices {
            device.gpu.stream.synchronize().context("waiting for a GPU")?;
        }
        for rank in &self.ranks {
            rank.exchange.synchronize().context("waiting for an exchange")?;
        }
        Ok(())
    }

    /// Rank `r`'s column block of C as the ring left it (its G blocks, stacked) or as the
    /// baseline did.
    pub fn result(&self, r: usize, ring: bool) -> Result<Vec<f32>> {
        let stream = self.stream(r);
        let rank = &self.ranks[r];
        match ring {
            false => Ok(stream.clone_dtoh(&rank.whole)?),
            true => {
                let mut c = Vec::with_capacity(rank.whole.len());
                for block in &rank.blocks {
                    c.extend(stream.clone_dtoh(block)?);
                }
                Ok(c)
            }
        }
    }
}

//! The copy engine (the tensor memory accelerator, TMA; PTX ISA §9.7.9.25). A bulk tensor copy
//! moves a box of a tensor map's tensor into shared memory, each element outside the tensor read
//! as zero and the box's 16-byte pieces swizzled as the map says, and counts its bytes off the
//! mbarrier it names; with `.multicast::cluster` the same box lands at the same place in every
//! block of the mask. The copy is read when issued and lands at the end of the scheduler's round,
//! as the engine works beside the warps: a warp that reads the bytes before waiting for them
//! sees what was there before, as it may on a GPU, and the sanitizer names it. A store moves a
//! box of shared memory into the tensor, skipping elements outside it; bulk groups
//! (`cp.async.bulk.commit_group`, `wait_group`) say when the engine has read its source.

use crate::inst::{Addr, Inst, Src};
use crate::memory::{PARAM_WINDOW, load_bytes, store_bytes};
use crate::tensor_map::TensorMap;
use crate::{Fault, FaultKind};

use super::shadows::{NO_ORIGIN, NONE, Origin};
use super::state::{Cluster, Landing, Lanes, Warp};

impl Cluster<'_> {
    /// The 128 bytes of a tensor map at `a`: a `__grid_constant__` parameter or global memory.
    fn tensor_map(&self, inst: &Inst, w: &Warp, l: usize, a: u64) -> Result<TensorMap, Fault> {
        let mut words = [0u64; 16];
        let bytes = if a >= PARAM_WINDOW {
            let at = (a - PARAM_WINDOW) as usize;
            self.launch.params.get(at..at + 128).map(<[u8]>::to_vec)
        } else {
            self.global.read(a, 128)
        };
        let bytes = bytes.ok_or_else(|| {
            self.fault(
                FaultKind::OutOfBounds,
                format!(
                    "{} reads a tensor map outside the kernel's parameters and global memory at {}",
                    self.who(w.index, l),
                    self.at(inst)
                ),
            )
        })?;
        for (i, word) in words.iter_mut().enumerate() {
            *word = load_bytes(&bytes, 8 * i, 8);
        }
        TensorMap::decode(&words).ok_or_else(|| {
            self.fault(
                FaultKind::Unsupported,
                format!("{} hands the copy engine 128 bytes that are not a tensor map the emulator encoded, at {} (the host encodes maps for the emulator with ptx_emulator::tensor_map)", self.who(w.index, l), self.at(inst)),
            )
        })
    }

    /// The tensor map lane `l` names and the box's coordinates in its tensor (signed: a box may
    /// start before the tensor).
    fn box_of(
        &self,
        inst: &Inst,
        w: &Warp,
        l: usize,
        map: Src,
        coords: &[Src],
    ) -> Result<(TensorMap, Vec<i64>), Fault> {
        let tmap = self.tensor_map(inst, w, l, Self::value(w, map, l))?;
        if coords.len() != tmap.rank as usize {
            return Err(self.fault(
                FaultKind::Unsupported,
                format!(
                    "a {}-d copy of a tensor map of {} dimensions at {}",
                    coords.len(),
                    tmap.rank,
                    self.at(inst)
                ),
            ));
        }
        let at = coords.iter().map(|c| i64::from(Self::value(w, *c, l) as u32 as i32)).collect();
        Ok((tmap, at))
    }

    /// The box's elements in order, each with its byte in the box (before the swizzle) and its
    /// global offset (None outside the tensor).
    fn box_elements(map: &TensorMap, coords: &[i64]) -> Vec<(usize, Option<u64>)> {
        let rank = map.rank as usize;
        let count = map.box_bytes() / map.element as usize;
        let mut out = Vec::with_capacity(count);
        let mut idx = [0i64; 5];
        for i in 0..count {
            let mut rest = i;
            for (d, slot) in idx.iter_mut().enumerate().take(rank) {
                *slot = (rest % map.boxes[d] as usize) as i64;
                rest /= map.boxes[d] as usize;
            }
            let at: Vec<i64> = (0..rank).map(|d| coords[d] + idx[d]).collect();
            out.push((i * map.element as usize, map.offset(&at)));
        }
        out
    }

    /// The element `e` of a box copied from `coords`, as a piece's origin: its map `id` and its
    /// place in the tensor, inside it or not (NONE for a map of one dimension, which has no rows
    /// to check, or of more than three, which no lab uses).
    fn origin(map: &TensorMap, id: u32, coords: &[i64], e: usize) -> Origin {
        if id == NONE {
            return NO_ORIGIN;
        }
        let mut at = [0i32; 3];
        let mut rest = e;
        for (d, slot) in at.iter_mut().enumerate().take(map.rank as usize) {
            *slot = (coords[d] + (rest % map.boxes[d] as usize) as i64) as i32;
            rest /= map.boxes[d] as usize;
        }
        // Bytes along the row (wrapping only for columns past 2²⁹, far beyond any lab's).
        at[0] = at[0].wrapping_mul(map.element as i32);
        Origin { map: id, at }
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn tma_load(
        &mut self,
        inst: &Inst,
        pc: u32,
        w: &Warp,
        exec: u32,
        (dst, map, coords, bar, multicast): (&Addr, Src, &[Src], &Addr, Option<Src>),
    ) -> Result<(), Fault> {
        for l in Lanes(exec) {
            let (tmap, at) = self.box_of(inst, w, l, map, coords)?;
            let cta = &mut self.ctas[self.rank];
            if !cta.copied_from.contains(&tmap.address) {
                cta.copied_from.push(tmap.address);
                let mut place = [0i64; 4];
                place.iter_mut().zip(&at).for_each(|(p, c)| *p = *c);
                self.first_tiles.insert((tmap.address, place));
            }
            let (_, dst_at) = self.cluster_address(self.address(w, dst, l));
            let (_, bar_at) = self.mbar_place(inst, w, l, bar)?;
            let ranks: Vec<usize> = match multicast {
                Some(mask) => {
                    let mask = Self::value(w, mask, l) as u16;
                    (0..self.ctas.len()).filter(|r| mask & (1 << r) != 0).collect()
                }
                None => vec![self.rank],
            };
            let bytes = tmap.box_bytes();
            if let Some(mask) = multicast {
                self.note_multicast(pc, Self::value(w, mask, l) as u16, bar_at, bytes as u32);
            }
            if dst_at % 128 != 0 || dst_at + bytes > self.shared().len() {
                return Err(self.fault(
                    FaultKind::OutOfBounds,
                    format!("{} copies a box of {bytes} bytes to byte {dst_at} of shared memory, which is not 128-byte aligned inside the block's {} bytes, at {}", self.who(w.index, l), self.shared().len(), self.at(inst)),
                ));
            }
            let elements = Self::box_elements(&tmap, &at);
            let size = tmap.element as usize;
            if self.footprint.is_some() {
                let sectors: Vec<u64> =
                    elements.iter().filter_map(|&(_, from)| from).map(|o| (tmap.address + o) / 32).collect();
                self.footprint_read(sectors);
            }
            // The box as the copy engine reads it: elements outside the tensor are zeros.
            let mut data = vec![0u8; bytes];
            for &(byte, from) in &elements {
                if let Some(o) = from {
                    let p = self.global.place(tmap.address + o, size).ok_or_else(|| {
                        self.fault(
                            FaultKind::OutOfBounds,
                            format!(
                                "the copy engine reads global memory {} for the tensor map used at {}",
                                self.global.describe(tmap.address + o, size),
                                self.at(inst)
                            ),
                        )
                    })?;
                    store_bytes(&mut data, byte, size, self.global.load(p, size));
                }
            }
            for &rank in &ranks {
                if rank != self.rank && self.block_done(rank) {
                    return Err(self.peer_gone(inst, w, l, rank));
                }
                let phase = self.mbar(inst, w, l, (rank, bar_at))?.phase;
                if let Some(m) = self.ctas[rank].mbars.get_mut(&bar_at) {
                    m.flying.push((pc, bytes as u32));
                }
                if self.ctas[rank].async_shadow.on() {
                    // From now on the bytes belong to the copy engine, until the phase completes;
                    // nothing may have read or written them since the last synchronisation. Each
                    // 16-byte piece remembers the tensor's element it starts with, for the wgmma
                    // that reads it.
                    let id = if (2..=3).contains(&tmap.rank) {
                        self.ctas[rank].async_shadow.map_index(&tmap)
                    } else {
                        NONE
                    };
                    for i in (0..bytes).step_by(size) {
                        let to = tmap.swizzle.apply(dst_at + i);
                        if i % 4 == 0 {
                            self.copy_writes(inst, pc, (rank, to / 4), (bar_at, phase))?;
                        }
                        self.async_write(rank, to, size, (bar_at as u32, phase), pc)?;
                        if i % 16 == 0 {
                            self.ctas[rank].async_shadow.origins[to / 16] =
                                Self::origin(&tmap, id, &at, i / size);
                        }
                    }
                    self.note_remote(rank, pc);
                }
                // The bytes land at the end of the round, as the copy engine works beside the
                // warps: until then a read sees what was there before.
                self.in_flight.push(Landing {
                    rank,
                    bar_at,
                    pc,
                    dst_at,
                    swizzle: tmap.swizzle,
                    size,
                    data: data.clone(),
                    phase,
                    clock: self.clocks[self.slot].clone(),
                });
                self.tick();
            }
            // The engine moves the whole box, sectors outside the tensor included (filled with
            // zeros), a sector per 32 bytes where the tensor's rows start on a sector. Where
            // they do not (rows of a pitch that is no multiple of 32 bytes), it reads more
            // sectors than that, by a rule this count does not model: an estimate there.
            let sectors = (bytes / 32) as u64;
            let inner = tmap.boxes[0] as u64 * u64::from(tmap.element);
            let aligned = tmap.address % 32 == 0
                && tmap.strides[..tmap.rank as usize - 1].iter().all(|s| s % 32 == 0)
                && (at[0] as u64 * u64::from(tmap.element)) % 32 == 0
                && inner % 32 == 0;
            if !aligned {
                self.traffic.bulk_estimated += 1;
            }
            self.traffic.multicast_sectors += sectors * ranks.len().saturating_sub(1) as u64;
            self.timeline_issue(w, (bar_at, dst_at), bytes, tmap.address, ranks.len());
            self.trace_copy(&ranks, bar_at);
            self.traffic.bulk_load_requests += 1;
            self.traffic.bulk_load_bytes += bytes as u64;
            self.traffic.bulk_load_sectors += sectors;
            if multicast.is_some() {
                self.traffic.multicast_load_bytes += bytes as u64;
            }
            self.traffic.multicast_bytes += (bytes * ranks.len().saturating_sub(1)) as u64;
            // What each receiving block's L1 gets, for the count per SM.
            for &rank in &ranks {
                let block = self.linear_block(rank);
                *self.block_sectors.entry(block).or_default() += sectors;
            }
        }
        Ok(())
    }

    /// The linear index of the block of rank `rank` in the grid.
    fn linear_block(&self, rank: usize) -> u64 {
        let [x, y, z] = self.ctas[rank].ctaid;
        let (gx, gy, _) = self.launch.grid;
        u64::from(x) + u64::from(gx) * (u64::from(y) + u64::from(gy) * u64::from(z))
    }

    /// The copies issued this round land: their bytes are written, and counted off their
    /// mbarriers, whose phases may complete. Returns whether any landed.
    pub fn land_copies(&mut self) -> Result<bool, Fault> {
        let copies = std::mem::take(&mut self.in_flight);
        let landed = !copies.is_empty();
        for c in copies {
            for i in (0..c.data.len()).step_by(c.size) {
                let to = c.swizzle.apply(c.dst_at + i);
                store_bytes(&mut self.ctas[c.rank].shared, to, c.size, load_bytes(&c.data, i, c.size));
            }
            self.land_on_phase((c.rank, c.bar_at), c.pc, c.phase, c.data.len())?;
            let Some(m) = self.ctas[c.rank].mbars.get_mut(&c.bar_at) else { continue };
            super::shadows::join(&mut m.clock, &c.clock);
            m.tx -= c.data.len() as i64;
            let (tx, pending) = (m.tx, m.pending);
            if tx < 0 && pending == 0 {
                self.rank = c.rank;
                let (announced, expect) = (m.announced, m.expect_pc);
                let expect = match expect {
                    Some(pc) => format!(
                        "the expect_tx at {} announced {announced} bytes for the phase, and its copies, this one included, carry {}",
                        self.at(&self.k.insts[pc as usize]),
                        announced - tx
                    ),
                    None => "no expect_tx of the phase announced them".to_owned(),
                };
                return Err(self.fault(
                    FaultKind::Barrier,
                    format!(
                        "the copies counted on {} deliver {} bytes more than its expect_tx announced, at {}: {expect}",
                        self.mbar_name(c.rank, c.bar_at),
                        -tx,
                        self.at(&self.k.insts[c.pc as usize])
                    ),
                ));
            }
            self.timeline_land(&c);
            self.complete_phase((c.rank, c.bar_at))?;
        }
        Ok(landed)
    }

    pub(super) fn tma_store(
        &mut self,
        inst: &Inst,
        pc: u32,
        w: &Warp,
        exec: u32,
        (map, coords, src): (Src, &[Src], &Addr),
    ) -> Result<(), Fault> {
        for l in Lanes(exec) {
            let (tmap, at) = self.box_of(inst, w, l, map, coords)?;
            let (_, src_at) = self.cluster_address(self.address(w, src, l));
            let bytes = tmap.box_bytes();
            if src_at % 128 != 0 || src_at + bytes > self.shared().len() {
                return Err(self.fault(
                    FaultKind::OutOfBounds,
                    format!("{} stores a box of {bytes} bytes from byte {src_at} of shared memory, which is not 128-byte aligned inside the block's {} bytes, at {}", self.who(w.index, l), self.shared().len(), self.at(inst)),
                ));
            }
            let size = tmap.element as usize;
            let mut written = 0u64;
            for (byte, to) in Self::box_elements(&tmap, &at) {
                let from = tmap.swizzle.apply(src_at + byte);
                self.async_read(inst, pc, l, (from, size), false)?;
                let Some(o) = to else { continue };
                let value = load_bytes(self.shared(), from, size);
                let p = self.global.place(tmap.address + o, size).ok_or_else(|| {
                    self.fault(
                        FaultKind::OutOfBounds,
                        format!(
                            "the copy engine writes global memory {} for the tensor map used at {}",
                            self.global.describe(tmap.address + o, size),
                            self.at(inst)
                        ),
                    )
                })?;
                self.global.store(p, size, value);
                written += size as u64;
            }
            self.timeline_store(written as usize, tmap.address, true);
            self.traffic.bulk_store_requests += 1;
            self.traffic.bulk_store_bytes += written;
            let block = self.linear_block(self.rank);
            *self.block_stores.entry(block).or_default() += written;
        }
        Ok(())
    }

    pub(super) fn bulk_commit(&mut self) {
        self.pending[self.slot].bulk_committed += 1;
    }

    pub(super) fn bulk_wait(&mut self, pending: u32) {
        let p = &mut self.pending[self.slot];
        p.bulk_retired = p.bulk_retired.max(p.bulk_committed.saturating_sub(pending));
    }

    /// A warp that has left with bulk stores in flight: fine on a GPU only if it waited, since
    /// the block's shared memory goes when the block ends.
    pub fn drain_at_exit(&self, w: &Warp) -> Result<(), Fault> {
        let p = &self.pending[self.slot];
        if p.bulk_committed > p.bulk_retired && w.present != 0 {
            return Err(self.fault(
                FaultKind::Race,
                format!(
                    "warp {} of block ({},{},{}) left with bulk stores from shared memory it never waited for (cp.async.bulk.wait_group): the block's shared memory may be gone before the copy engine has read it",
                    w.index,
                    self.ctas[self.rank].ctaid[0],
                    self.ctas[self.rank].ctaid[1],
                    self.ctas[self.rank].ctaid[2]
                ),
            ));
        }
        Ok(())
    }
}

//! The warpgroup's product, `wgmma.mma_async` (PTX ISA §9.7.15). Four warps issue it together
//! for a 64×N tile of D; each warp holds 16 of its rows (the accumulators' layout of §9.7.15.5.1),
//! and its rows depend only on its own rows of A and on all of B. So each warp's share is
//! computed when that warp reaches the instruction, with no wait for the other three.
//!
//! A comes from the warp's registers (the fragment layout of `mma.m16n8k8`) or, like B, from
//! shared memory through a *matrix descriptor* (§9.7.15.5.1.2.2): a 64-bit word with the
//! operand's start address, the byte offsets between its core matrices (leading and stride),
//! and the swizzle its rows were written with. An element's place is worked out here as the
//! hardware does, so a descriptor that does not match the layout the copy engine wrote reads
//! the wrong elements, as it would on a GPU. The sanitizer names the first of them: the copy
//! engine told it which element of which tensor starts each 16-byte piece, and a K-major
//! operand's row r, k = 0.. must be one row of one tensor, consecutive along it, and row r + 1
//! the tensor's next row (the tile's rows are the matrix's rows in every lab).
//!
//! The arithmetic is the tensor cores' own ([`crate::tensor_arith`]), not a plain sum.

use crate::inst::{Inst, Src, Wgmma, WgmmaKind};
use crate::tensor_arith;
use crate::tensor_map::{Swizzle, TensorMap};
use crate::{Fault, FaultKind};

use super::collective;
use super::state::{Cluster, Lanes, Warp};

/// A matrix descriptor taken apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Descriptor {
    pub start: usize,
    pub leading: usize,
    pub stride: usize,
    pub base_offset: u32,
    pub swizzle: Swizzle,
}

impl Descriptor {
    pub fn new(d: u64) -> Descriptor {
        Descriptor {
            start: ((d & 0x3fff) << 4) as usize,
            leading: (((d >> 16) & 0x3fff) << 4) as usize,
            stride: (((d >> 32) & 0x3fff) << 4) as usize,
            base_offset: ((d >> 49) & 7) as u32,
            swizzle: match d >> 62 {
                1 => Swizzle::B128,
                2 => Swizzle::B64,
                3 => Swizzle::B32,
                _ => Swizzle::None,
            },
        }
    }

    /// The shared-memory byte of the K-major operand's row `row` (of M or N), `byte` bytes along
    /// K: rows grouped by eight into core matrices `stride` bytes apart; within a group, rows
    /// one swizzle span apart with the pieces permuted, or without a swizzle 16-byte rows with
    /// K's 16-byte pieces `leading` bytes apart.
    pub fn place(&self, row: usize, byte: usize) -> usize {
        let group = self.start + (row / 8) * self.stride;
        match self.swizzle {
            Swizzle::None => group + (byte / 16) * self.leading + (row % 8) * 16 + byte % 16,
            s => s.apply(group + (row % 8) * s.span() + byte),
        }
    }

    /// The layout the descriptor reads, in words.
    fn layout(&self) -> String {
        match self.swizzle {
            Swizzle::None => format!(
                "16-byte rows without a swizzle, K's 16-byte pieces {} bytes apart and 8-row groups {} bytes apart",
                self.leading, self.stride
            ),
            s => format!("the {}-byte swizzle with 8-row groups {} bytes apart", s.span(), self.stride),
        }
    }
}

/// The first element of a descriptor's operand that a copy put in shared memory, (row, k), and
/// where the tensor has the operand's element (0, 0) if the layout is right: the block's map,
/// the byte along the tensor's row, the row and the third coordinate. The element (r, k') of the
/// operand is then at byte `inner + k'·len` of row `outer + r`.
#[derive(Clone, Copy, Debug)]
struct TensorAnchor {
    row: usize,
    k: usize,
    map: u32,
    inner: i64,
    outer: i64,
    third: i32,
}

/// An element of a tensor as a fault names it.
fn element(map: &TensorMap, [col, row, third]: [i64; 3]) -> String {
    if map.rank > 2 {
        format!("(row {row}, column {col}) of matrix {third}")
    } else {
        format!("(row {row}, column {col})")
    }
}

/// The kernel's matrix (`A` or `B` of C = A·B) a buffer holds, by the first word of its name: the
/// matrix itself, a padded copy (`A′`, `A padded`), B transposed (`Bᵀ`), A's parts.
pub(super) fn matrix_of(name: &str) -> Option<char> {
    match name.split(|c: char| !c.is_alphanumeric() || c == 'ᵀ').next()? {
        "A" => Some('A'),
        "B" => Some('B'),
        _ => None,
    }
}

/// Whether two maps describe the same tensor (their boxes and swizzles may differ).
fn same_tensor(a: &TensorMap, b: &TensorMap) -> bool {
    (a.address, a.element, a.rank, a.dims, a.strides) == (b.address, b.element, b.rank, b.dims, b.strides)
}

impl Cluster<'_> {
    /// A tensor as a fault names it: the kernel's matrix (`A (256×512)`) where its buffer has a
    /// name, else `the 256×512 tensor`; extents outermost first.
    fn tensor(&self, map: &TensorMap) -> String {
        let dims: Vec<String> = map.dims[..map.rank as usize].iter().rev().map(u64::to_string).collect();
        match self.global.name(map.address).filter(|name| matrix_of(name).is_some()) {
            Some(name) => format!("{name} ({})", dims.join("×")),
            None => format!("the {} tensor", dims.join("×")),
        }
    }

    pub(super) fn wgmma(
        &mut self,
        inst: &Inst,
        pc: u32,
        w: &mut Warp,
        (mask, exec): (u32, u32),
        g: &Wgmma,
    ) -> Result<(), Fault> {
        collective::whole_warp(self, inst, w, mask, exec)?;
        let lane0 = Lanes(exec).next().unwrap_or(0);
        let get = |w: &Warp, s: Src, l: usize| match s {
            Src::Reg(x) => w.regs[x as usize][l],
            Src::Imm(v) => v,
        };
        let (n, k) = (g.n as usize, g.k as usize);
        let elem = match g.kind {
            WgmmaKind::Tf32 => 4,
            WgmmaKind::Bf16 => 2,
            WgmmaKind::Int8 { .. } => 1,
        };
        if g.trans_a || g.trans_b {
            return Err(self.fault(
                FaultKind::Unsupported,
                format!("a wgmma with a transposed (MN-major) operand at {}: the emulator reads K-major operands only", self.at(inst)),
            ));
        }
        let b = Descriptor::new(get(w, g.b_desc, lane0));
        let a = g.a_desc.map(|d| Descriptor::new(get(w, d, lane0)));
        self.timeline_wgmma(w, b.start, a.map(|a| a.start));
        for d in [Some(b), a].into_iter().flatten() {
            if d.base_offset != 0 {
                return Err(self.fault(
                    FaultKind::Unsupported,
                    format!("a wgmma descriptor with a base offset at {}: the emulator models descriptors whose swizzle pattern starts at their address", self.at(inst)),
                ));
            }
        }
        // B: N rows of K elements, the bits of each.
        let mut bm = vec![0u32; n * k];
        let mut anchor = None;
        for row in 0..n {
            for kk in 0..k {
                bm[row * k + kk] =
                    self.operand(inst, pc, (lane0, "B", &mut anchor), &b, row, kk * elem, elem)?;
            }
        }
        // The kernel's matrix (of C = A·B) whose tile the descriptor read: the registers, where
        // the wgmma takes its operand A from them, hold the other's fragments.
        let shadow = &self.ctas[self.rank].async_shadow;
        let read =
            anchor.and_then(|a| shadow.maps.get(a.map as usize)).and_then(|m| self.global.name(m.address));
        let in_registers = read.and_then(matrix_of).map(|m| if m == 'A' { 'B' } else { 'A' });
        // The warp's 16 rows of A.
        let w4 = (w.index % 4) as usize;
        let mut am = vec![0u32; 16 * k];
        match (&g.a_regs, a) {
            (Some(regs), _) => {
                if self.launch.sanitize
                    && let Ok(four) = <[Src; 4]>::try_from(regs.as_slice())
                    && let Ok(four) = collective::regs_of(&four)
                {
                    self.check_operands(inst, w.index, (&four[..], &[]), &w.regs)?;
                }
                // The fragment of mma.m16n8k8: a0 (g, t), a1 (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4).
                for l in 0..32 {
                    let (gr, t) = (l / 4, l % 4);
                    for (i, (r, c)) in
                        [(gr, t), (gr + 8, t), (gr, t + 4), (gr + 8, t + 4)].into_iter().enumerate()
                    {
                        am[r * k + c] = get(w, regs[i], l) as u32;
                    }
                }
            }
            (None, Some(a)) => {
                let mut anchor = None;
                for r in 0..16 {
                    for kk in 0..k {
                        am[r * k + kk] = self.operand(
                            inst,
                            pc,
                            (lane0, "A", &mut anchor),
                            &a,
                            16 * w4 + r,
                            kk * elem,
                            elem,
                        )?;
                    }
                }
            }
            (None, None) => unreachable!("decoded with A's registers or descriptor"),
        }
        let add = |w: &Warp, l: usize| (get(w, g.scale_d.0, l) != 0) != g.scale_d.1;
        for l in 0..32usize {
            let (gr, t) = (l / 4, l % 4);
            let keep = add(w, l);
            for (i, d) in g.d.iter().enumerate() {
                let (j, h, v) = (i / 4, (i / 2) % 2, i % 2);
                let (row, col) = (gr + 8 * h, 8 * j + 2 * t + v);
                let c = if keep { w.regs[*d as usize][l] as u32 } else { 0 };
                let ar = &am[row * k..row * k + k];
                let bc = &bm[col * k..col * k + k];
                let out = match g.kind {
                    WgmmaKind::Tf32 => {
                        tensor_arith::tf32_dot(ar.try_into().expect("k8"), bc.try_into().expect("k8"), c)
                    }
                    WgmmaKind::Bf16 => bf16_dot(ar, bc, c),
                    WgmmaKind::Int8 { a_signed, b_signed } => {
                        let ext = |v: u32, signed: bool| {
                            if signed { i32::from(v as u8 as i8) } else { i32::from(v as u8) }
                        };
                        let av: Vec<i32> = ar.iter().map(|v| ext(*v, a_signed)).collect();
                        let bv: Vec<i32> = bc.iter().map(|v| ext(*v, b_signed)).collect();
                        tensor_arith::s8_dot(&av, &bv, c as i32) as u32
                    }
                };
                w.regs[*d as usize][l] = u64::from(out);
            }
        }
        if let Some(regs) = &g.a_regs {
            self.fragments_read(pc, regs, in_registers);
        }
        let p = &mut self.pending[self.slot];
        p.wgmma_issued = p.wgmma_committed + 1;
        self.traffic.wgmma_instructions += 1;
        self.computed();
        let work = 2 * 16 * (n * k) as u64;
        self.traffic.flops += work;
        match g.kind {
            WgmmaKind::Tf32 => self.traffic.wgmma_tf32_flops += work,
            WgmmaKind::Bf16 => self.traffic.wgmma_16bit_flops += work,
            WgmmaKind::Int8 { .. } => self.traffic.wgmma_int8_ops += work,
        }
        Ok(())
    }

    /// The bits of one element of a descriptor's operand (`len` bytes), checked by the sanitizer:
    /// `anchor` is the operand's first element a copy put in shared memory, once read.
    #[allow(clippy::too_many_arguments)]
    fn operand(
        &mut self,
        inst: &Inst,
        pc: u32,
        (lane, which, anchor): (usize, &str, &mut Option<TensorAnchor>),
        d: &Descriptor,
        row: usize,
        byte: usize,
        len: usize,
    ) -> Result<u32, Fault> {
        let at = d.place(row, byte);
        if at + len > self.shared().len() {
            return Err(self.fault(
                FaultKind::OutOfBounds,
                format!("the wgmma at {} reads byte {at} of shared memory through its descriptor, outside the block's {} bytes", self.at(inst), self.shared().len()),
            ));
        }
        if self.ctas[self.rank].async_shadow.on() {
            self.async_read(inst, pc, lane, (at, len), true)?;
            // Every layout keeps a 16-byte piece whole (a swizzle moves pieces, and the copy
            // writes whole pieces of a row), so the first element of each piece the descriptor
            // reads stands for the piece.
            if byte % 16 == 0 {
                self.check_layout(inst, (which, d), (row, byte / len, len), at, anchor)?;
            }
        }
        Ok(crate::memory::load_bytes(self.shared(), at, len) as u32)
    }

    /// The element (row, k) of a K-major operand, `len` bytes read at byte `at`, must be the
    /// tensor's element that the operand's anchor implies: as many rows below it and `len`-byte
    /// steps along. A piece that an ordinary store wrote last is not checked.
    #[inline]
    fn check_layout(
        &self,
        inst: &Inst,
        (which, d): (&str, &Descriptor),
        (row, k, len): (usize, usize, usize),
        at: usize,
        anchor: &mut Option<TensorAnchor>,
    ) -> Result<(), Fault> {
        let Some(o) = self.ctas[self.rank].async_shadow.origin(at) else {
            return Ok(());
        };
        let inner = i64::from(o.at[0]) + (at % 16) as i64;
        let Some(a) = *anchor else {
            *anchor = Some(TensorAnchor {
                row,
                k,
                map: o.map,
                inner: inner - (k * len) as i64,
                outer: i64::from(o.at[1]) - row as i64,
                third: o.at[2],
            });
            return Ok(());
        };
        let (want_inner, want_row) = (a.inner + (k * len) as i64, a.outer + row as i64);
        if o.map == a.map && inner == want_inner && i64::from(o.at[1]) == want_row && o.at[2] == a.third {
            return Ok(());
        }
        self.layout_fault(inst, (which, d), (row, k, len), at, a)
    }

    /// The element read is not where the anchor says: the fault that names it (or none, where
    /// another map of the same tensor put the right element there).
    #[cold]
    #[inline(never)]
    fn layout_fault(
        &self,
        inst: &Inst,
        (which, d): (&str, &Descriptor),
        (row, k, len): (usize, usize, usize),
        at: usize,
        a: TensorAnchor,
    ) -> Result<(), Fault> {
        let shadow = &self.ctas[self.rank].async_shadow;
        let (word, o) = (shadow.words[at / 4], shadow.origins[at / 16]);
        let (got, want) = (&shadow.maps[o.map as usize], &shadow.maps[a.map as usize]);
        let inner = i64::from(o.at[0]) + (at % 16) as i64;
        let (want_inner, want_row) = (a.inner + (k * len) as i64, a.outer + row as i64);
        let (third, want_third) = (i64::from(o.at[2]), i64::from(a.third));
        if same_tensor(got, want) && (inner, i64::from(o.at[1]), third) == (want_inner, want_row, want_third)
        {
            return Ok(());
        }
        // Elements by their column: the byte along the row over the element's bytes.
        let column = |byte: i64, m: &TensorMap| byte.div_euclid(i64::from(m.element));
        let found = [column(inner, got), i64::from(o.at[1]), third];
        let implied = [column(want_inner, want), want_row, want_third];
        let anchored = [column(a.inner + (a.k * len) as i64, want), a.outer + a.row as i64, want_third];
        let of_want =
            if same_tensor(got, want) { String::new() } else { format!(" of {}", self.tensor(want)) };
        // The operand as the kernel's C = A·B names it (A's tile may be the wgmma's operand B).
        let (operand, tensors) = match self.global.name(want.address).and_then(matrix_of) {
            Some(m) => (format!("{m}'s tile, its operand {which},"), format!("{m}'s")),
            None => (format!("its operand {which}"), "the tensor's".to_owned()),
        };
        // The map's box lies in shared memory as rows of `pitch` bytes, swizzled or not; the
        // descriptor that reads it has the same swizzle and 8-row groups 8 rows apart (without a
        // swizzle, rows of one 16-byte piece): the swizzle atoms of §9.7.15.5.1.2.
        let pitch = got.boxes[0] as usize * got.element as usize;
        let wrote = match got.swizzle {
            Swizzle::None => format!("rows of {pitch} bytes without a swizzle"),
            s => format!("rows of {pitch} bytes with the {}-byte swizzle", s.span()),
        };
        let fits =
            d.swizzle == got.swizzle && d.stride == 8 * pitch && (d.swizzle != Swizzle::None || pitch == 16);
        let why = if fits {
            format!(
                "its descriptor reads {}, the layout the tensor map wrote ({wrote}), so the copies did not put the tile's elements where that layout has them (check their coordinates and addresses)",
                d.layout()
            )
        } else {
            format!(
                "its descriptor reads {}, but the tensor map wrote {wrote}, 8-row groups {} bytes apart (PTX ISA §9.7.15.5.1.2)",
                d.layout(),
                8 * pitch
            )
        };
        Err(self.fault(
            FaultKind::Layout,
            format!(
                "the wgmma at {} reads element (row {row}, k {k}) of {operand} from {}, where the copy at {} put element {} of {}, not element {}{of_want}, which follows from its element (row {}, k {}) being {tensors} {}: {why}",
                self.at(inst),
                self.shared_place(at),
                self.at(&self.k.insts[word.filled_pc as usize]),
                element(got, found),
                self.tensor(got),
                element(want, implied),
                a.row,
                a.k,
                element(want, anchored),
            ),
        ))
    }

    pub(super) fn wgmma_commit(&mut self) {
        self.pending[self.slot].wgmma_committed += 1;
        self.timeline_group(None);
    }

    /// `wgmma.wait_group` at `pc`: the groups but the last `pending` are done. Where that retires
    /// groups, the warp's clock then is when their reads end ([`Self::async_write`] orders a copy
    /// over their bytes after it), and a register of A written before it is named.
    pub(super) fn wgmma_wait(&mut self, pc: u32, pending: u32) -> Result<(), Fault> {
        self.timeline_group(Some(pending));
        let clock = self.clocks[self.slot][self.slot];
        let p = &mut self.pending[self.slot];
        let retired = p.wgmma_retired.max(p.wgmma_committed.saturating_sub(pending));
        if retired > p.wgmma_retired {
            p.wgmma_retired = retired;
            p.wgmma_waits.push((retired, clock, pc));
            return self.fragments_waited(pc, retired);
        }
        Ok(())
    }
}

/// A bf16 product with f32 accumulation: the products are exact in f64 and the sum is rounded
/// once (the tensor cores' order of bf16 additions is not modelled).
fn bf16_dot(a: &[u32], b: &[u32], c: u32) -> u32 {
    let bf = |v: u32| f64::from(f32::from_bits((v & 0xffff) << 16));
    let sum: f64 = a.iter().zip(b).map(|(x, y)| bf(*x) * bf(*y)).sum::<f64>() + f64::from(f32::from_bits(c));
    (sum as f32).to_bits()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_is_named_by_the_matrix_it_holds() {
        for (name, matrix) in
            [("A", Some('A')), ("A′", Some('A')), ("A padded", Some('A')), ("A's parts", Some('A'))]
        {
            assert_eq!(matrix_of(name), matrix, "{name}");
        }
        for (name, matrix) in
            [("B", Some('B')), ("Bᵀ", Some('B')), ("B′", Some('B')), ("C", None), ("Abc", None)]
        {
            assert_eq!(matrix_of(name), matrix, "{name}");
        }
    }

    #[test]
    fn a_descriptor_of_the_128_byte_swizzle_reads_rows_as_the_copy_engine_wrote_them() {
        // Step 08's descriptor: 1024 bytes between groups of 8 rows, the 128-byte swizzle.
        let d = Descriptor::new((2048 >> 4) | (1 << 16) | ((1024u64 >> 4) << 32) | (1 << 62));
        assert_eq!(d.start, 2048);
        assert_eq!(d.stride, 1024);
        // Row 3, bytes 16..: the copy engine put piece 1 of row 3 at piece 1 ^ 3.
        assert_eq!(d.place(3, 16), 2048 + 3 * 128 + 32);
        assert_eq!(d.place(3, 16), Swizzle::B128.apply(2048 + 3 * 128 + 16));
        // Row 9 is row 1 of the second group.
        assert_eq!(d.place(9, 0), Swizzle::B128.apply(2048 + 1024 + 128));
    }

    #[test]
    fn a_descriptor_without_a_swizzle_walks_core_matrices() {
        let d = Descriptor::new((256 >> 4) | ((128u64 >> 4) << 16) | ((512u64 >> 4) << 32));
        assert_eq!(d.place(0, 0), 256);
        assert_eq!(d.place(1, 4), 256 + 16 + 4);
        assert_eq!(d.place(0, 16), 256 + 128, "the next 16 bytes of K are the next core matrix");
        assert_eq!(d.place(8, 0), 256 + 512, "the next eight rows are `stride` further");
    }
}

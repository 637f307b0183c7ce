//! Tensor maps as the emulator keeps them. On a GPU the host asks the driver
//! (`cuTensorMapEncodeTiled`) to encode the 128 opaque bytes a kernel passes to the copy engine;
//! a machine without a GPU has no driver, so the host encodes the same parameters here, checked
//! as the driver checks them, and the emulated copy engine reads them back.
//!
//! A map describes a tensor of up to five dimensions in global memory, innermost first: its
//! address, its extent in elements along each dimension, the bytes between consecutive indices
//! of each outer dimension, the box one copy moves, and how the box's rows are swizzled in shared
//! memory (PTX ISA §5.5, "Tensors"; the swizzle modes in §5.5.6).

/// How a box's 16-byte pieces are permuted in shared memory: piece `p` of the row at byte
/// offset `o` goes to piece `p ^ ((o / 128) % span)`, span 8 for 128 bytes, 4 for 64, 2 for 32.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Swizzle {
    None,
    B32,
    B64,
    B128,
}

impl Swizzle {
    /// The bytes of a swizzled row: a box's inner extent may not exceed them.
    pub fn span(self) -> usize {
        match self {
            Swizzle::None => usize::MAX,
            Swizzle::B32 => 32,
            Swizzle::B64 => 64,
            Swizzle::B128 => 128,
        }
    }

    /// Where the byte at shared-memory address `a` goes: bits 4–6 of the address take the
    /// exclusive or of bits 7–9 (as many as the mode swizzles).
    #[inline]
    pub fn apply(self, a: usize) -> usize {
        let bits = match self {
            Swizzle::None => return a,
            Swizzle::B32 => 1,
            Swizzle::B64 => 3,
            Swizzle::B128 => 7,
        };
        a ^ (((a >> 7) & bits) << 4)
    }

    fn code(self) -> u64 {
        match self {
            Swizzle::None => 0,
            Swizzle::B32 => 1,
            Swizzle::B64 => 2,
            Swizzle::B128 => 3,
        }
    }

    fn from_code(c: u64) -> Option<Swizzle> {
        Some(match c {
            0 => Swizzle::None,
            1 => Swizzle::B32,
            2 => Swizzle::B64,
            3 => Swizzle::B128,
            _ => return None,
        })
    }
}

/// A tiled tensor map.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TensorMap {
    /// The global address of element 0 (16-byte aligned).
    pub address: u64,
    /// Bytes of one element: 1, 2 or 4.
    pub element: u32,
    /// Dimensions used, 1 to 5.
    pub rank: u32,
    /// Elements along each dimension, innermost first.
    pub dims: [u64; 5],
    /// Bytes from one index of dimension i + 1 to the next (multiples of 16).
    pub strides: [u64; 4],
    /// The box one copy moves, in elements along each dimension (1 to 256).
    pub boxes: [u32; 5],
    pub swizzle: Swizzle,
}

/// Marks the 128 bytes as the emulator's own encoding.
const MAGIC: u64 = u64::from_le_bytes(*b"EMU-TMAP");

impl TensorMap {
    /// Checks the map as the driver does and encodes it: the error is one sentence.
    pub fn encode(&self) -> Result<[u64; 16], String> {
        let rank = self.rank as usize;
        if !(1..=5).contains(&rank) {
            return Err(format!("a tensor map has 1 to 5 dimensions, not {rank}"));
        }
        if ![1, 2, 4].contains(&self.element) {
            return Err(format!("a tensor map's elements are 1, 2 or 4 bytes, not {}", self.element));
        }
        if self.address % 16 != 0 {
            return Err(format!("a tensor map's address must be 16-byte aligned, not {:#x}", self.address));
        }
        if let Some(s) = self.strides[..rank - 1].iter().find(|s| **s % 16 != 0) {
            return Err(format!("a tensor map's strides must be multiples of 16 bytes, not {s}"));
        }
        if let Some(b) = self.boxes[..rank].iter().find(|b| !(1..=256).contains(*b)) {
            return Err(format!("a box has 1 to 256 elements along each dimension, not {b}"));
        }
        if self.dims[..rank].contains(&0) {
            return Err("a tensor map's dimensions are at least 1".into());
        }
        let inner = self.boxes[0] as usize * self.element as usize;
        if inner > self.swizzle.span() || inner % 16 != 0 {
            return Err(format!(
                "a box's rows are {inner} bytes: with this swizzle they must be a multiple of 16 of at most {}",
                self.swizzle.span()
            ));
        }
        let mut out = [0u64; 16];
        out[0] = MAGIC;
        out[1] = self.address;
        out[2] = u64::from(self.element) | (u64::from(self.rank) << 8) | (self.swizzle.code() << 16);
        out[3..8].copy_from_slice(&self.dims);
        out[8..12].copy_from_slice(&self.strides);
        for (i, b) in self.boxes.iter().enumerate() {
            out[12 + i / 4] |= u64::from(*b) << (16 * (i % 4));
        }
        Ok(out)
    }

    /// The map the 128 bytes encode, if they are one of the emulator's.
    pub fn decode(words: &[u64; 16]) -> Option<TensorMap> {
        if words[0] != MAGIC {
            return None;
        }
        let mut dims = [0u64; 5];
        dims.copy_from_slice(&words[3..8]);
        let mut strides = [0u64; 4];
        strides.copy_from_slice(&words[8..12]);
        let mut boxes = [0u32; 5];
        for (i, b) in boxes.iter_mut().enumerate() {
            *b = ((words[12 + i / 4] >> (16 * (i % 4))) & 0xffff) as u32;
        }
        Some(TensorMap {
            address: words[1],
            element: (words[2] & 0xff) as u32,
            rank: ((words[2] >> 8) & 0xff) as u32,
            dims,
            strides,
            boxes,
            swizzle: Swizzle::from_code((words[2] >> 16) & 0xff)?,
        })
    }

    /// Bytes of one box.
    pub fn box_bytes(&self) -> usize {
        self.boxes[..self.rank as usize].iter().map(|b| *b as usize).product::<usize>()
            * self.element as usize
    }

    /// The global byte offset of the element at `coords` (innermost first), or None outside the
    /// tensor (the copy engine reads zeros there).
    pub fn offset(&self, coords: &[i64]) -> Option<u64> {
        let mut at = 0u64;
        for (i, &c) in coords.iter().enumerate().take(self.rank as usize) {
            if c < 0 || c as u64 >= self.dims[i] {
                return None;
            }
            at += if i == 0 { c as u64 * u64::from(self.element) } else { c as u64 * self.strides[i - 1] };
        }
        Some(at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map() -> TensorMap {
        TensorMap {
            address: 1 << 36,
            element: 4,
            rank: 2,
            dims: [40, 10, 1, 1, 1],
            strides: [176, 0, 0, 0],
            boxes: [32, 8, 1, 1, 1],
            swizzle: Swizzle::B128,
        }
    }

    #[test]
    fn a_map_survives_its_encoding_and_bad_ones_are_refused() {
        let m = map();
        assert_eq!(TensorMap::decode(&m.encode().unwrap()), Some(m));
        assert!(TensorMap::decode(&[0; 16]).is_none(), "the driver's bytes are not the emulator's");
        let err = TensorMap { strides: [170, 0, 0, 0], ..m }.encode().unwrap_err();
        assert!(err.contains("multiples of 16"), "{err}");
        let err = TensorMap { boxes: [64, 8, 1, 1, 1], ..m }.encode().unwrap_err();
        assert!(err.contains("at most 128"), "{err}");
    }

    #[test]
    fn elements_outside_the_tensor_have_no_offset() {
        let m = map();
        assert_eq!(m.offset(&[3, 2]), Some(2 * 176 + 12));
        assert_eq!(m.offset(&[40, 0]), None);
        assert_eq!(m.offset(&[-1, 0]), None);
        assert_eq!(m.offset(&[0, 10]), None);
    }

    #[test]
    fn the_128_byte_swizzle_moves_pieces_by_the_row() {
        // Row 0 keeps its pieces; row 3's piece 1 (bytes 16–31) goes to piece 1 ^ 3 = 2.
        assert_eq!(Swizzle::B128.apply(20), 20);
        assert_eq!(Swizzle::B128.apply(3 * 128 + 16 + 4), 3 * 128 + 32 + 4);
        // The pattern repeats every 1024 bytes.
        assert_eq!(Swizzle::B128.apply(1024 + 3 * 128 + 16), 1024 + 3 * 128 + 32);
        assert_eq!(Swizzle::None.apply(3 * 128 + 16), 3 * 128 + 16);
    }
}

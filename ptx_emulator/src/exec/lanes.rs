//! The lanes of a 32-bit mask, lowest first: how the machine's parts walk the lanes an
//! instruction runs for; and the hasher of the machine's integer keys. Below every other part,
//! so that any may use them.

/// Iterates over the set lanes of a mask.
#[derive(Clone, Copy)]
pub struct Lanes(pub u32);

impl Iterator for Lanes {
    type Item = usize;
    #[inline]
    fn next(&mut self) -> Option<usize> {
        if self.0 == 0 {
            return None;
        }
        let l = self.0.trailing_zeros();
        self.0 &= self.0 - 1;
        Some(l as usize)
    }
}

/// A hasher for the machine's integer keys (the sector numbers of `Cluster::l1_seen`, the
/// registers of the operand tags): one multiply, where the standard hasher's resistance to
/// chosen keys costs several times more on every access.
#[derive(Default)]
pub struct SectorHasher(u64);

impl std::hash::Hasher for SectorHasher {
    fn finish(&self) -> u64 {
        // The product's high bits mix every bit of the key; bring them down to where the table
        // looks.
        self.0.rotate_left(26)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

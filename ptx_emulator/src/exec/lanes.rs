//! The lanes of a 32-bit mask, lowest first: how the machine's parts walk the lanes an
//! instruction runs for. Below every other part, so that any may use it.

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

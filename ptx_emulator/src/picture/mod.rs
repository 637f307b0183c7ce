//! Pictures drawn from what a run recorded ([`crate::record`]), as SVG text.
//!
//! - [`access`]: one warp's access at a `.cu` line, lane by lane, with the sectors and lines or
//!   the banks and wavefronts the emulator counted for it;
//! - the timeline (`timeline_rows`, `timeline_svg`): one block's pipeline round by round (its
//!   producer, the copy engine, its consumers and its stores), recorded while the block runs and
//!   drawn afterwards;
//! - [`cycles`]: the busiest block's warps in the time model's clocks, from its replay: when each
//!   issued, and what it waited for.

pub mod access;
pub mod cycles;
mod timeline_rows;
mod timeline_svg;

pub use timeline_rows::{ItemKind, RoleRow, RowItem};

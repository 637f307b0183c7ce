//! Pictures the emulator draws from a run, as SVG text.
//!
//! - [`timeline`]: one block's pipeline round by round (its producer, the copy engine, its
//!   consumers and its stores), recorded while the block runs and drawn afterwards;
//! - [`cycles`]: the busiest block's warps in the time model's clocks, from its replay: when each
//!   issued, and what it waited for.

pub mod cycles;
pub mod timeline;
mod timeline_rows;
mod timeline_svg;

pub use timeline_rows::{ItemKind, RoleRow, RowItem};

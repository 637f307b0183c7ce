//! Pictures of what the course's PTX emulator recorded of a run (`ptx_emulator::recording`), as SVG
//! text.
//!
//! - [`access`]: one warp's access at a `.cu` line, lane by lane, with the sectors and lines or
//!   the banks and wavefronts the emulator counted for it;
//! - the timeline ([`TimelinePicture`]): one block's pipeline round by round (its producer, the
//!   copy engine, its consumers and its stores), recorded while the block runs and drawn
//!   afterwards;
//! - [`cycles`]: the busiest block's warps in the time model's clocks, from its replay
//!   (`ptx_model::replay`): when each issued, and what it waited for.

pub mod access_svg;
pub mod cycles;
mod timeline_rows;
mod timeline_svg;

pub use timeline_rows::{ItemKind, RoleRow, RowItem};

/// A block's recorded timeline drawn: the drawing as methods of
/// [`Timeline`](ptx_emulator::recording::timeline::Timeline), which the machine's
/// crate defines.
pub trait TimelinePicture {
    /// The rounds a picture shows: `window` where given (clipped to the run), else the first
    /// rounds that fit the picture's width.
    fn window(&self, window: Option<(u32, u32)>) -> Result<(u32, u32), String>;
    /// The picture of rounds `from..to` as SVG text.
    fn svg(&self, rounds: (u32, u32)) -> String;
    /// The run in a few lines: what each role did and waited, and how far ahead the producer ran.
    fn summary(&self) -> String;
    /// The rows of rounds `from..to`: the producer, the copy engine, each consumer warpgroup, and
    /// the stores (where the block stores).
    fn rows(&self, from: u32, to: u32) -> Vec<RoleRow>;
}

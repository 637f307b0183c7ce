//! The time model of the course's PTX emulator: what a launch would take on a GPU, from what the
//! emulator counted and recorded of it (`ptx_emulator::Traffic`, `ptx_emulator::recording`).
//!
//! ```text
//! Emulator::launch ──▶ Traffic + record::Recorded ──▶ replay (clocks on one SM) ──▶ predict (time on the GPU)
//! ```
//!
//! - [`profile`]: each GPU's figures (SMs, clocks, the L2's and DRAM's rates and latencies), each
//!   with where it was measured or published;
//! - [`replay`]: the busiest cluster's warps re-run in clock cycles on one SM of a profile;
//! - [`predict`]: the equations that turn the counts and the replay into a time and its
//!   bottleneck.

pub mod predict;
pub mod profile;
pub mod replay;

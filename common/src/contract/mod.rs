//! Layer 3, the step contract: what a GPU step's `lib.rs` fills in (kernel, parameters, launch,
//! checks), and the launch's extensions: tensor maps, step 11's residues, row padding and the FP32
//! path of steps 09 and 11. Depends on the
//! layers below.

pub mod fp32_path;
pub mod hooks;
pub mod launch;
pub mod pad;
pub mod params;
pub mod step;
pub mod stream_k;
pub mod tma;

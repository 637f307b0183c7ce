//! Layer 0, data: the problem's shape and matrices, unified diffs applied to a text, and progress
//! bars. Depends on nothing else.

pub mod files;
pub mod matrix;
pub mod patch;
pub mod progress;

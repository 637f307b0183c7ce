//! Layer 0, data: the problem's shape and matrices, and progress bars. Depends on nothing else.

pub mod files;
pub mod matrix;
pub mod progress;

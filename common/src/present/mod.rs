//! Layer 4, presenting: the command line every step shares and the block a step prints.
//! Depends on the layers below.

pub mod carried;
pub mod cli;
pub mod emit;
pub mod numbers;
pub mod predicted;
pub mod record;
pub mod report;

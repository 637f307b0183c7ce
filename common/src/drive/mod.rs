//! Layer 5, driving: one measured launch (`session`), a step's program (`run`), `--tune`,
//! `--compile-only` and `--kernel`, and the benches. Depends on the layers below.

pub mod bench;
pub mod compile_only;
pub mod run;
pub mod session;
pub mod tune;

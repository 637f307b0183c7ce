//! Layer 5, driving: one launch checked and timed (`measure`), a step's program (`run`), `--tune`,
//! `--compile-only` and `--kernel`, and the benches. Depends on the layers below.

#[cfg(feature = "testing")]
pub mod bench;
pub mod compile_only;
pub mod every_path;
pub mod measure;
pub mod run;
pub mod tune;

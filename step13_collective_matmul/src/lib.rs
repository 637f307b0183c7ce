//! Step 13: one product over several GPUs. A's rows and B's columns are sharded, one shard of
//! each per GPU; each GPU computes C's columns of its B for every row. The baseline gathers A
//! with NCCL, then multiplies; the lab's ring multiplies the shard each GPU holds while passing
//! it on, so that the exchange hides under the products (docs/src/step13.md).
//!
//! The schedule ([`schedule`]) and the model ([`model`]) need no GPU; [`nccl`] loads NCCL at
//! run time; each GPU and its products are in `device`, the ranks' buffers, streams and
//! the two ways in `ranks`, the program in `run`, and what it prints, as text or JSON, in
//! `report`.

use std::process::ExitCode;

use clap::Parser;

pub mod bound;
mod cpu_ring;
pub mod nccl;
mod rank_gpu;
mod ranks;
mod report;
mod ring_memory;
pub mod rounds;
mod run;

pub use run::RingArgs;

pub const NAME: &str = "step13_collective_matmul";

/// The program: exit 0 when every result passed, 1 with one sentence otherwise.
pub fn main() -> ExitCode {
    common::record::begin();
    let args = RingArgs::try_parse().unwrap_or_else(|e| common::record::refused(e));
    // The record, where --record asks for one, is written as the run ends.
    let error = common::record::open(args.record.as_deref()).and_then(|()| run::run(&args));
    common::record::exit(match error {
        Ok(true) => None,
        Ok(false) => {
            let see = match args.format.unwrap_or_default() {
                common::cli::Format::Text => "the verify lines above",
                common::cli::Format::Json => "the checks that did not pass in the report",
            };
            Some(format!("a result is wrong (see {see})"))
        }
        Err(e) => Some(format!("{e:#}")),
    })
}

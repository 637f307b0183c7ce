//! `compare model-table`, `compare heldout-table`, `compare lessons-table`: the time model's
//! tables from the records' JSON (`compare::tables`), without a GPU.

use std::path::PathBuf;

use anyhow::Result;
use compare::tables::{heldout, lessons, model, read_cases};

/// The tables, each written as a record from the runs' JSON (`NAME.jsonl`, which `--record`
/// writes; `NAME.log` names the `NAME.jsonl` beside it).
#[derive(clap::Subcommand, Debug)]
pub enum Tables {
    /// The time model's predictions beside a GPU's times, and whether it orders each lab's
    /// stages as the GPU does.
    #[command(name = "model-table")]
    Model {
        /// The predictions (scripts/model-predictions.sh's record); a later one's prediction of
        /// a case replaces an earlier one's, and a refusal never replaces a prediction.
        #[arg(long, value_name = "RECORD", num_args = 1.., required = true)]
        predicted: Vec<PathBuf>,
        /// The GPU's times (scripts/gpu-model-runs.sh judged's records).
        #[arg(long, value_name = "RECORD", num_args = 1.., required = true)]
        times: Vec<PathBuf>,
        /// A suite page (`compare --suite`): its step 10 column gives step 10's times.
        #[arg(long, value_name = "PAGE.md")]
        suite: Option<PathBuf>,
        /// The GPU's name in the table.
        #[arg(long, value_name = "NAME", default_value = "H100")]
        gpu: String,
        /// Where the table is written.
        #[arg(long, value_name = "OUT.md")]
        out: PathBuf,
    },
    /// The held-out set: predicted, measured, and the limit the model and Nsight Compute name.
    #[command(name = "heldout-table")]
    Heldout {
        /// The GPU's times (scripts/model-heldout.sh gpu, or gpu-model-runs.sh judged).
        #[arg(long, value_name = "RECORD", num_args = 1.., required = true)]
        times: Vec<PathBuf>,
        /// The predictions (scripts/model-heldout.sh predict, or model-predictions.sh).
        #[arg(long, value_name = "RECORD", num_args = 1.., required = true)]
        predicted: Vec<PathBuf>,
        /// Nsight Compute's logs (scripts/model-heldout.sh ncu): `== CASE`, then its CSV.
        #[arg(long, value_name = "LOG", num_args = 1..)]
        ncu: Vec<PathBuf>,
        /// The named cases the runs are known by: NAME STEP ARGUMENTS… a line.
        #[arg(long, value_name = "FILE", default_value = "ptx_emulator/heldout/cases.txt")]
        cases: PathBuf,
        /// The table's title (default: "The time model beside the GPU").
        #[arg(long)]
        title: Option<String>,
        #[arg(long, value_name = "NAME", default_value = "H100")]
        gpu: String,
        #[arg(long, value_name = "OUT.md")]
        out: PathBuf,
    },
    /// Each comparison a chapter makes: its ratio on the GPU and predicted.
    #[command(name = "lessons-table")]
    Lessons {
        /// The GPU's times (scripts/model-heldout.sh gpu lessons).
        #[arg(long, value_name = "RECORD", num_args = 1.., required = true)]
        times: Vec<PathBuf>,
        /// The predictions (scripts/model-heldout.sh predict lessons, MODEL_GPU set to the GPU
        /// the times were measured on).
        #[arg(long, value_name = "RECORD", num_args = 1.., required = true)]
        predicted: Vec<PathBuf>,
        #[arg(long, value_name = "FILE", default_value = "ptx_emulator/heldout/lessons.txt")]
        cases: PathBuf,
        /// The comparisons: CHAPTER FIRST SECOND a line, cases of --cases.
        #[arg(long, value_name = "FILE", default_value = "ptx_emulator/heldout/lessons-pairs.txt")]
        pairs: PathBuf,
        #[arg(long, value_name = "NAME", default_value = "H100")]
        gpu: String,
        #[arg(long, value_name = "OUT.md")]
        out: PathBuf,
    },
}

/// Writes the table asked for.
pub fn run(table: &Tables) -> Result<()> {
    match table {
        Tables::Model { predicted, times, suite, gpu, out } => {
            let inputs = model::Inputs {
                predicted: predicted.clone(),
                times: times.clone(),
                suite: suite.clone(),
                gpu: gpu.clone(),
            };
            model::run(&inputs, out)
        }
        Tables::Heldout { times, predicted, ncu, cases, title, gpu, out } => {
            let inputs = heldout::Inputs {
                times: times.clone(),
                ncu: ncu.clone(),
                predicted: predicted.clone(),
                cases: read_cases(cases)?,
                gpu: gpu.clone(),
                title: title.clone(),
            };
            heldout::run(&inputs, out)
        }
        Tables::Lessons { times, predicted, cases, pairs, gpu, out } => {
            let inputs = lessons::Inputs {
                times: times.clone(),
                predicted: predicted.clone(),
                cases: read_cases(cases)?,
                pairs: lessons::read_pairs(pairs)?,
                gpu: gpu.clone(),
            };
            lessons::run(&inputs, out)
        }
    }
}

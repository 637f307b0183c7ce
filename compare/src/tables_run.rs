//! What `compare` does without a GPU, as subcommands: `compare model-table`, `compare
//! heldout-table`, `compare lessons-table`, the time model's tables from the records' JSON
//! (`compare::tables`); and `compare coherent-inputs`, step 11's coherent inputs as files.

use std::path::PathBuf;

use anyhow::{Result, anyhow};
use common::Shape;
use compare::tables::{heldout, lessons, model_table, read_cases, states};

/// The tables, each written as a record from the runs' JSON (`NAME.jsonl`, which `--record`
/// writes; `NAME.log` names the `NAME.jsonl` beside it), and step 11's coherent inputs.
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
    /// The time model's fingerprint (of ptx_model/src, from the repository root): the records
    /// of predictions name it in their header, and a test holds the chapters' records to it.
    #[command(name = "model-fingerprint")]
    Fingerprint,
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
    /// Each kernel's warp states: Nsight Compute's shares beside the time model's replay.
    #[command(name = "states-table")]
    States {
        /// Nsight Compute's logs (scripts/model-heldout.sh states): `== CASE`, then its CSV.
        #[arg(long, value_name = "LOG", num_args = 1.., required = true)]
        ncu: Vec<PathBuf>,
        /// The predictions (scripts/model-heldout.sh predict corpus, MODEL_GPU set to the GPU
        /// profiled).
        #[arg(long, value_name = "RECORD", num_args = 1.., required = true)]
        predicted: Vec<PathBuf>,
        #[arg(long, value_name = "FILE", default_value = "ptx_emulator/heldout/corpus.txt")]
        cases: PathBuf,
        #[arg(long, value_name = "NAME", default_value = "H200")]
        gpu: String,
        #[arg(long, value_name = "OUT.md")]
        out: PathBuf,
    },
    /// Writes DIR/a.npy and DIR/b.npy, on which rounding step 11's scaled entries to nearest errs
    /// the same way on every term while C cancels (`step11_int8_crt/src/coherent.rs`, the ties in
    /// B, seven moduli); run them with `step11_int8_crt --a DIR/a.npy --b DIR/b.npy`.
    #[command(name = "coherent-inputs")]
    CoherentInputs {
        /// The folder the two files are written to (made where missing).
        dir: PathBuf,
        #[arg(short, default_value_t = 16, value_parser = common::cli::parse_dim)]
        m: usize,
        #[arg(short, default_value_t = 16, value_parser = common::cli::parse_dim)]
        n: usize,
        #[arg(short, default_value_t = 4096, value_parser = common::cli::parse_dim)]
        k: usize,
    },
}

/// Writes the table asked for.
pub fn run(table: &Tables) -> Result<()> {
    match table {
        Tables::Model { predicted, times, suite, gpu, out } => {
            let inputs = model_table::ModelTableInputs {
                predicted: predicted.clone(),
                times: times.clone(),
                suite: suite.clone(),
                gpu: gpu.clone(),
            };
            model_table::run(&inputs, out)
        }
        Tables::Fingerprint => {
            println!("{}", compare::tables::fingerprint::model_fingerprint(std::path::Path::new("."))?);
            Ok(())
        }
        Tables::Heldout { times, predicted, ncu, cases, title, gpu, out } => {
            let inputs = heldout::HeldoutTableInputs {
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
            let inputs = lessons::LessonsTableInputs {
                times: times.clone(),
                predicted: predicted.clone(),
                cases: read_cases(cases)?,
                pairs: lessons::read_pairs(pairs)?,
                gpu: gpu.clone(),
            };
            lessons::run(&inputs, out)
        }
        Tables::States { ncu, predicted, cases, gpu, out } => {
            let inputs = states::StatesTableInputs {
                ncu: ncu.clone(),
                predicted: predicted.clone(),
                cases: read_cases(cases)?,
                gpu: gpu.clone(),
            };
            states::run(&inputs, out)
        }
        Tables::CoherentInputs { dir, m, n, k } => {
            coherent_inputs(dir, Shape::new(*m, *n, *k).map_err(|e| anyhow!(e))?)
        }
    }
}

/// Writes step 11's coherent inputs at `shape` to `dir`.
fn coherent_inputs(dir: &std::path::Path, shape: Shape) -> Result<()> {
    use step11_int8_crt::coherent::{Ties, coherent};
    let x = coherent(shape, 7, Ties::B).map_err(|e| anyhow!(e))?;
    std::fs::create_dir_all(dir).map_err(|e| anyhow!("could not make {}: {e}", dir.display()))?;
    let (a, b) = (dir.join("a.npy"), dir.join("b.npy"));
    common::files::write_npy(&a, x.a.rows, x.a.cols, &x.a.data)?;
    common::files::write_npy(&b, x.b.rows, x.b.cols, &x.b.data)?;
    println!(
        "wrote {} ({}×{}) and {} ({}×{}): {}",
        a.display(),
        x.a.rows,
        x.a.cols,
        b.display(),
        x.b.rows,
        x.b.cols,
        x.source
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coherent_inputs_are_written_as_step_11_builds_them() {
        let dir = std::env::temp_dir().join(format!("coherent-inputs-{}", std::process::id()));
        let shape = Shape::new(4, 3, 256).unwrap();
        coherent_inputs(&dir, shape).unwrap();
        let built =
            step11_int8_crt::coherent::coherent(shape, 7, step11_int8_crt::coherent::Ties::B).unwrap();
        let a = common::files::read_matrix(dir.join("a.npy").to_str().unwrap(), "A").unwrap();
        let b = common::files::read_matrix(dir.join("b.npy").to_str().unwrap(), "B").unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!((a.matrix.rows, a.matrix.cols, b.matrix.rows, b.matrix.cols), (4, 256, 256, 3));
        assert_eq!(a.matrix.data, built.a.data);
        assert_eq!(b.matrix.data, built.b.data);
    }
}

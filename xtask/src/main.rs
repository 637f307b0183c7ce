//! `cargo xtask`: the project's own tools, in Rust (the alias is in `.cargo/config.toml`).
//!
//! ```text
//! cargo xtask docs [MDBOOK]             build the book (mdbook on PATH, $MDBOOK, or MDBOOK) and
//!                                       fail on a broken include, anchor, link, record or figure,
//!                                       a stale list of records, a rule of reading or an illegible
//!                                       figure (CI runs it)
//! cargo xtask reading                   the reader's rules (figures::reading), on the built book too
//! cargo xtask figures-legible           every drawn figure legible at the size the book shows it
//! cargo xtask earlier-runs [--check]    write the book's lists of records (--check: write nothing,
//!                                       fail naming each stale list)
//! cargo xtask unused-deps               dependencies nothing uses, features a member forgets (CI)
//! cargo xtask gpu-bundle [--no-bench | --bins]
//!                                       the release programs, test binaries and benches packed in
//!                                       .gpu/ with .gpu/run (scripts/gpu-run), for a GPU machine
//! ```
//!
//! Each works on this repository, or on the one `--root ROOT` names.
//! The checks' rules live in the `figures` crate, which reads the book already; this crate drives
//! the external tools (cargo, mdbook, strip, tar, xz) and prints the faults, one line each.

mod docs;
mod gpu_bundle;
mod unused_deps;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use figures::Repo;

#[derive(Parser)]
#[command(
    name = "cargo xtask",
    about = "The project's own tools: the book's checks, the records, the GPU bundle"
)]
struct Cli {
    /// The repository to work on (default: the one this program was built from).
    #[arg(long, global = true, value_name = "ROOT")]
    root: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Build the book with mdbook and run every check of the book.
    Docs {
        /// The mdbook program (default: $MDBOOK, else mdbook on PATH).
        mdbook: Option<PathBuf>,
    },
    /// The reader's rules: words, widths, the sidebar, no history in a chapter.
    Reading,
    /// Every drawn figure legible at the size the book shows it.
    FiguresLegible,
    /// Write the book's lists of records from docs/src/results/.
    EarlierRuns {
        /// Write nothing; fail naming each list that is not current.
        #[arg(long)]
        check: bool,
    },
    /// Dependencies nothing uses, and features a member forgets.
    UnusedDeps,
    /// Build the release binaries and pack them into .gpu/ for a machine with a GPU.
    GpuBundle {
        /// Leave out the criterion bench binaries (faster).
        #[arg(long, conflicts_with = "bins")]
        no_bench: bool,
        /// The programs alone (fastest: for timing and profiling runs).
        #[arg(long)]
        bins: bool,
    },
}

/// The repository this program was built from.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().map(Path::to_owned).unwrap_or_default()
}

/// Prints `faults`, one a line; success when there are none.
fn report(faults: &[String]) -> ExitCode {
    for fault in faults {
        println!("{fault}");
    }
    if faults.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let repo = Repo::at(&cli.root.unwrap_or_else(root));
    if !repo.root().is_dir() {
        eprintln!("xtask: {} is not a folder", repo.root().display());
        return ExitCode::FAILURE;
    }
    let result = match cli.command {
        Command::Docs { mdbook } => {
            let mdbook = mdbook
                .or_else(|| std::env::var_os("MDBOOK").map(PathBuf::from))
                .unwrap_or_else(|| PathBuf::from("mdbook"));
            docs::run(&repo, &mdbook)
        }
        Command::Reading => Ok(report(&figures::reading::check(&repo))),
        Command::FiguresLegible => Ok(report(&figures::legible::check_all(&repo))),
        Command::EarlierRuns { check } => Ok(match figures::earlier::run(&repo, check) {
            Ok(lines) => {
                lines.iter().for_each(|l| println!("{l}"));
                ExitCode::SUCCESS
            }
            Err(lines) => report(&lines),
        }),
        Command::UnusedDeps => unused_deps::check(repo.root()).map(|faults| report(&faults)),
        Command::GpuBundle { no_bench, bins } => gpu_bundle::run(
            repo.root(),
            gpu_bundle::BundleParts { tests: !bins, benches: !bins && !no_bench },
        )
        .map(|()| ExitCode::SUCCESS),
    };
    result.unwrap_or_else(|why| {
        eprintln!("xtask: {why}");
        ExitCode::FAILURE
    })
}

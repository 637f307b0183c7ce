//! `cargo xtask docs`: builds the book and fails on a broken include, anchor or local link, a page
//! SUMMARY.md does not list, or a figure reference its record does not resolve (the figures
//! preprocessor, docs/book.toml); on a page of earlier runs or a records part of SUMMARY.md that
//! does not list the records as they are (`cargo xtask earlier-runs --check`); then checks what a
//! reader meets (`cargo xtask reading`: a sidebar of at most 40 entries, the records hidden from
//! it, word caps, the README's length, commit hashes and words of the workshop in a chapter, code
//! wider than 100 columns, records missing from the page of earlier runs) and every drawn figure
//! (`cargo xtask figures-legible`).

use std::path::Path;
use std::process::{Command, ExitCode};

use figures::Repo;

/// Whether mdbook's log reports a problem: a line tagged `[ERROR]` or `[WARN]`.
fn reports_problems(log: &str) -> bool {
    log.contains("[ERROR]") || log.contains("[WARN]")
}

/// Builds the book with `mdbook`, then runs every check; each fault is printed on a line of its
/// own. An error is a tool that could not be run at all.
pub fn run(repo: &Repo, mdbook: &Path) -> Result<ExitCode, String> {
    // mdbook runs the preprocessor through `cargo run`; built here, its build stays out of
    // mdbook's log.
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let built = Command::new(&cargo)
        .args(["build", "--quiet", "-p", "figures"])
        .current_dir(repo.root())
        .status()
        .map_err(|e| format!("cargo cannot be run ({e})"))?;
    if !built.success() {
        return Err("the figures preprocessor does not build (cargo build -p figures)".into());
    }
    let out =
        Command::new(mdbook).args(["build", "docs"]).current_dir(repo.root()).output().map_err(|e| {
            format!("{} cannot be run ({e}): give mdbook's path, or set $MDBOOK", mdbook.display())
        })?;
    let log = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    if !out.status.success() {
        print!("{log}");
        return Ok(ExitCode::FAILURE);
    }
    if reports_problems(&log) {
        print!("{log}");
        eprintln!("docs: mdbook reported problems");
        return Ok(ExitCode::FAILURE);
    }
    let mut faults = figures::sources::check(repo);
    faults.extend(figures::earlier::run(repo, true).err().unwrap_or_default());
    faults.extend(figures::reading::check(repo));
    faults.extend(figures::legible::check_all(repo));
    for fault in &faults {
        println!("{fault}");
    }
    if !faults.is_empty() {
        return Ok(ExitCode::FAILURE);
    }
    println!("docs: book built, includes and links resolve, the reader's rules hold");
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_or_a_warning_in_mdbooks_log_is_a_problem() {
        assert!(!reports_problems("2026-01-01 10:00:00 [INFO] (mdbook::book): Book building has started\n"));
        assert!(reports_problems(
            "2026-01-01 10:00:00 [WARN] (mdbook::preprocess::cmd): The command wasn't found\n"
        ));
        assert!(reports_problems("[ERROR] (mdbook::utils): Error: Unable to parse the input\n"));
    }
}

//! `figures`: the book's preprocessor and the README's generator.
//!
//! ```text
//! figures                      read [context, book] from mdbook, print the book, figures filled in
//! figures supports RENDERER    (mdbook asks) every renderer is served
//! figures readme [--check]     write README.md from docs/readme.md (--check: only say if stale)
//! ```

use std::io::{IsTerminal, Read};
use std::process::ExitCode;

use figures::Repo;

const USAGE: &str = "usage: figures (as mdbook's preprocessor) | figures readme [--check]";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let result = match args[..] {
        [] => preprocess(),
        ["supports", _] => Ok(()),
        ["readme"] => readme(false),
        ["readme", "--check"] => readme(true),
        _ => Err(vec![USAGE.to_owned()]),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(errors) => {
            for error in errors {
                eprintln!("figures: {error}");
            }
            ExitCode::FAILURE
        }
    }
}

/// mdbook's side of the protocol: the book on standard input, the book on standard output.
fn preprocess() -> Result<(), Vec<String>> {
    if std::io::stdin().is_terminal() {
        return Err(vec![USAGE.to_owned()]);
    }
    let mut input = String::new();
    std::io::stdin()
        .read_to_string(&mut input)
        .map_err(|e| vec![format!("mdbook's input cannot be read ({e})")])?;
    let book = figures::book::preprocess(&input)?;
    println!("{book}");
    Ok(())
}

fn readme(check: bool) -> Result<(), Vec<String>> {
    let repo = Repo::find().map_err(|why| vec![why])?;
    let text = figures::readme::render(&repo)?;
    let path = repo.readme();
    let now = std::fs::read_to_string(&path).unwrap_or_default();
    if now == text {
        println!("README.md is up to date");
        return Ok(());
    }
    if check {
        return Err(vec![
            "README.md is not what docs/readme.md and the records say: run `cargo run -p figures -- readme`"
                .to_owned(),
        ]);
    }
    std::fs::write(&path, text).map_err(|e| vec![format!("README.md cannot be written ({e})")])?;
    println!("wrote README.md from docs/readme.md");
    Ok(())
}

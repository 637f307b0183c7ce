//! `figures`: the book's preprocessor, the README's generator, the converter of old quotes.
//!
//! ```text
//! figures                      read [context, book] from mdbook, print the book, figures filled in
//! figures supports RENDERER    (mdbook asks) every renderer is served
//! figures readme [--check]     write README.md from docs/readme.md (--check: only say if stale)
//! figures convert FILE...      turn old quotes in FILE... into references and catalog lines
//! ```

use std::io::{IsTerminal, Read};
use std::process::ExitCode;

use figures::Repo;
use figures::convert::Converter;

const USAGE: &str =
    "usage: figures (as mdbook's preprocessor) | figures readme [--check] | figures convert FILE...";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let result = match args[..] {
        [] => preprocess(),
        ["supports", _] => Ok(()),
        ["readme"] => readme(false),
        ["readme", "--check"] => readme(true),
        ["convert", ref files @ ..] if !files.is_empty() => convert(files),
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

fn convert(files: &[&str]) -> Result<(), Vec<String>> {
    let repo = Repo::find().map_err(|why| vec![why])?;
    let here =
        std::env::current_dir().map_err(|e| vec![format!("the current folder cannot be read ({e})")])?;
    let mut converter = Converter::new(&repo).map_err(|why| vec![why])?;
    let (mut converted, mut errors, mut quotes) = (Vec::new(), Vec::new(), 0);
    for file in files {
        // One spelling of each path (`docs/../README.md` is README.md), so the checks below hold.
        let path = here.join(file);
        let path = path.canonicalize().unwrap_or(path);
        let readme = repo.readme().canonicalize().unwrap_or(repo.readme());
        if path == readme && repo.template().exists() {
            errors.push("README.md is written from docs/readme.md: convert the template instead".to_owned());
            continue;
        }
        match converter.convert(&path) {
            Ok((text, count)) => {
                quotes += count;
                converted.push((path, text));
            }
            Err(wrong) => errors.extend(wrong),
        }
    }
    if !errors.is_empty() {
        errors.push("nothing was written".to_owned());
        return Err(errors);
    }
    let write = |path: &std::path::Path, text: &str| {
        std::fs::write(path, text).map_err(|e| vec![format!("{} cannot be written ({e})", path.display())])
    };
    for (path, text) in &converted {
        write(path, text)?;
    }
    write(&repo.catalog(), &converter.catalog().text())?;
    println!(
        "converted {quotes} quotes in {} files; {} new figures in docs/figures.txt ({} in all)",
        converted.len(),
        converter.added,
        converter.catalog().entries.len()
    );
    Ok(())
}

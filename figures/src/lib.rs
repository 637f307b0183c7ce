//! Every figure the README and the book quote, read from its record at build time.
//!
//! A page of the book, or `docs/readme.md` (the README's template), writes a reference where a
//! measured figure goes: `{{#figure h200.step06_prefetch.4096.share}}`. The catalog,
//! `docs/figures.txt`, says for each id which record holds the figure (a results page or a run's
//! log under `docs/src/results/`), how to find it there and how to print it. The book's
//! preprocessor and the README's generator replace each reference with the figure, linked to
//! its record: `[91.8%](results/nvidia-h200.md)`. A reference whose id is unknown, or whose
//! record no longer holds the figure, is an error that names the page and line.
//!
//! The program (`src/main.rs`): mdbook runs it as the book's preprocessor;
//! `cargo run -p figures -- readme` writes README.md.
//!
//! The book's checks live here too, each a function that returns one line per fault, which
//! `cargo xtask` runs: the sources mdBook says nothing of (`sources`), the reader's rules
//! (`reading`), the drawn figures' legibility (`legible`), and the lists of records, which
//! `earlier` also writes.

use std::path::{Path, PathBuf};

pub mod book;
pub mod catalog;
pub mod earlier;
pub mod field;
pub mod form;
pub mod legible;
pub mod mentions;
pub mod reading;
pub mod readme;
pub mod record;
pub mod regex_links;
pub mod sources;

/// The repository's files the figures live in.
#[derive(Clone, Debug)]
pub struct Repo {
    root: PathBuf,
}

impl Repo {
    /// The repository whose root is `root`.
    pub fn at(root: &Path) -> Repo {
        Repo { root: root.to_owned() }
    }

    /// The repository around the current folder: the nearest folder, upwards, with
    /// `docs/book.toml`.
    pub fn find() -> Result<Repo, String> {
        let here = std::env::current_dir().map_err(|e| format!("the current folder cannot be read ({e})"))?;
        here.ancestors().find(|dir| dir.join("docs/book.toml").is_file()).map(Repo::at).ok_or_else(|| {
            "no folder above this one holds docs/book.toml: run this inside the course's repository".into()
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The book's pages and the records: `docs/src`.
    pub fn src(&self) -> PathBuf {
        self.root.join("docs/src")
    }

    /// `docs/figures.txt`.
    pub fn catalog(&self) -> PathBuf {
        self.root.join("docs/figures.txt")
    }

    /// The README's template, `docs/readme.md`.
    pub fn template(&self) -> PathBuf {
        self.root.join("docs/readme.md")
    }

    /// `README.md`.
    pub fn readme(&self) -> PathBuf {
        self.root.join("README.md")
    }

    /// The book's pages: every `.md` under `docs/src`, sorted.
    pub fn pages(&self) -> Vec<PathBuf> {
        let mut files = Vec::new();
        let mut dirs = vec![self.src()];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "md") {
                    files.push(path);
                }
            }
        }
        files.sort();
        files
    }
}

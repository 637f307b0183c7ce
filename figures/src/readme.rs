//! README.md, written from its template `docs/readme.md` with every reference filled in.

use crate::Repo;
use crate::catalog::Catalog;
use crate::mentions::{self, Page};
use crate::record::Records;

/// The first line of README.md: where it comes from.
pub const NOTICE: &str = "<!-- Written by `cargo run -p figures -- readme` from docs/readme.md and the records \
                          in docs/src/results/: edit the template, then run the command. -->\n";

/// What README.md must say now: the template with every reference filled in; or one sentence
/// per wrong reference, naming the template's line.
pub fn render(repo: &Repo) -> Result<String, Vec<String>> {
    let template = std::fs::read_to_string(repo.template())
        .map_err(|e| vec![format!("the README's template docs/readme.md cannot be read ({e})")])?;
    let catalog = Catalog::load(&repo.catalog()).map_err(|why| vec![why])?;
    let mut records = Records::new(&repo.src());
    let filled = mentions::fill(&template, Page::Readme, &catalog, &mut records).map_err(|wrong| {
        wrong.into_iter().map(|(line, why)| format!("docs/readme.md:{line}: {why}")).collect::<Vec<_>>()
    })?;
    Ok(format!("{NOTICE}{filled}"))
}

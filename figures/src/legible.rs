//! Every drawn figure the book shows is legible as shown (`cargo xtask figures-legible`, which
//! `cargo xtask docs` runs): no wider than the book's column (920 px, so it is shown at its own
//! size) and no text under its minimum size: 11 px for the figures in `docs/src/figures`
//! (`scripts/hopper-figures.py`, `scripts/mma-figure.py` and the others), 12 px for the results
//! charts (compare's roofline and size charts) that a chapter links to.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;

use crate::Repo;

/// The book's column, in pixels.
pub const COLUMN: f64 = 920.0;
/// The smallest text of a drawn figure, and of a results chart, in pixels.
pub const FIGURE_FONT: f64 = 11.0;
pub const CHART_FONT: f64 = 12.0;

static WIDTH: LazyLock<Regex> = LazyLock::new(|| Regex::new(r#"<svg[^>]*\bwidth="([\d.]+)""#).unwrap());
static FONT: LazyLock<Regex> = LazyLock::new(|| Regex::new(r#"font-size="([\d.]+)""#).unwrap());
static CHART: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\]\((results/runs/[^)]+\.svg)\)").unwrap());

/// A number as Python's `{:g}` prints it: six significant digits, no trailing zeros.
fn general(value: f64) -> String {
    if value == 0.0 || !value.is_finite() {
        return format!("{value}");
    }
    let exponent = value.abs().log10().floor() as i32;
    let trim = |s: String| {
        if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_owned() } else { s }
    };
    if (-4..6).contains(&exponent) {
        trim(format!("{value:.*}", (5 - exponent) as usize))
    } else {
        let scientific = format!("{value:.5e}");
        let (mantissa, power) = scientific.split_once('e').unwrap_or((&scientific, "0"));
        let power: i32 = power.parse().unwrap_or(0);
        format!("{}e{}{:02}", trim(mantissa.to_owned()), if power < 0 { '-' } else { '+' }, power.abs())
    }
}

fn number(text: &str, what: &str, shown: &str) -> Result<f64, String> {
    text.parse().map_err(|_| format!("{shown}: its {what} \"{text}\" is not a number"))
}

/// The faults of one drawn figure, `shown` as its name.
fn check(path: &Path, shown: &str, min_font: f64) -> Vec<String> {
    let svg = match std::fs::read_to_string(path) {
        Ok(svg) => svg,
        Err(e) => return vec![format!("{shown}: cannot be read ({e})")],
    };
    let width = match WIDTH.captures(&svg) {
        Some(c) => number(&c[1], "width", shown),
        None => Err(format!("{shown}: its <svg> element has no width")),
    };
    let sizes: Result<Vec<f64>, String> =
        FONT.captures_iter(&svg).map(|c| number(&c[1], "font-size", shown)).collect();
    let (width, sizes) = match (width, sizes) {
        (Ok(width), Ok(sizes)) => (width, sizes),
        (Err(why), _) | (_, Err(why)) => return vec![why],
    };
    let mut problems = Vec::new();
    if width > COLUMN {
        problems.push(format!("{} px wide, over the column's {COLUMN}: the book shrinks it", general(width)));
    }
    let small = sizes.iter().copied().filter(|&v| v < min_font).reduce(f64::min);
    if let Some(small) = small {
        problems.push(format!("text at {} px, under {min_font}", general(small)));
    }
    problems.into_iter().map(|p| format!("{shown}: {p}")).collect()
}

/// Every fault of the book's drawn figures and the charts its top-level pages link to, one line
/// each, named relative to `docs/src`.
pub fn check_all(repo: &Repo) -> Vec<String> {
    let src = repo.src();
    let mut problems = Vec::new();
    let mut figures: Vec<_> = std::fs::read_dir(src.join("figures"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "svg"))
        .collect();
    figures.sort();
    for path in figures {
        let shown = format!("figures/{}", path.file_name().unwrap_or_default().to_string_lossy());
        problems.extend(check(&path, &shown, FIGURE_FONT));
    }
    let mut charts = BTreeSet::new();
    for entry in std::fs::read_dir(&src).into_iter().flatten().flatten() {
        let page = entry.path();
        if page.extension().is_some_and(|e| e == "md") && page.is_file() {
            let text = std::fs::read_to_string(&page).unwrap_or_default();
            charts.extend(CHART.captures_iter(&text).map(|c| c[1].to_owned()));
        }
    }
    for chart in charts {
        problems.extend(check(&src.join(&chart), &chart, CHART_FONT));
    }
    problems.into_iter().map(|p| format!("figures-legible: {p}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn svg(width: &str, fonts: &[&str]) -> String {
        let texts: String = fonts.iter().map(|f| format!("<text font-size=\"{f}\">a</text>")).collect();
        format!("<?xml version=\"1.0\"?>\n<svg xmlns=\"x\" width=\"{width}\" height=\"10\">{texts}</svg>\n")
    }

    /// A book with one drawn figure and one chart a page links to, both legible.
    fn book(test: &str) -> Repo {
        let root = std::env::temp_dir().join(format!("figures-legible-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("docs/src/figures")).unwrap();
        std::fs::create_dir_all(root.join("docs/src/results/runs")).unwrap();
        std::fs::write(root.join("docs/src/figures/a.svg"), svg("920", &["11", "14"])).unwrap();
        std::fs::write(root.join("docs/src/results/runs/c.svg"), svg("800", &["12"])).unwrap();
        std::fs::write(root.join("docs/src/step01.md"), "See [the chart](results/runs/c.svg).\n").unwrap();
        Repo::at(&root)
    }

    #[test]
    fn legible_figures_pass_and_each_fault_is_named() {
        let repo = book("faults");
        assert_eq!(check_all(&repo), Vec::<String>::new());
        let src = repo.src();
        std::fs::write(src.join("figures/a.svg"), svg("920.5", &["10.5", "11", "9"])).unwrap();
        std::fs::write(src.join("results/runs/c.svg"), svg("800", &["11"])).unwrap();
        assert_eq!(
            check_all(&repo),
            [
                "figures-legible: figures/a.svg: 920.5 px wide, over the column's 920: the book shrinks it",
                "figures-legible: figures/a.svg: text at 9 px, under 11",
                "figures-legible: results/runs/c.svg: text at 11 px, under 12",
            ]
        );
        std::fs::write(src.join("figures/a.svg"), "<svg height=\"3\"/>").unwrap();
        std::fs::remove_file(src.join("results/runs/c.svg")).unwrap();
        let faults = check_all(&repo);
        assert_eq!(faults[0], "figures-legible: figures/a.svg: its <svg> element has no width");
        assert!(faults[1].starts_with("figures-legible: results/runs/c.svg: cannot be read"), "{faults:?}");
        std::fs::remove_dir_all(repo.root()).unwrap();
    }

    #[test]
    fn numbers_print_as_python_general_format() {
        assert_eq!(general(920.0), "920");
        assert_eq!(general(920.5), "920.5");
        assert_eq!(general(10.25), "10.25");
        assert_eq!(general(1234567.0), "1.23457e+06");
        assert_eq!(general(0.5), "0.5");
    }
}

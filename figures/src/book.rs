//! The book's preprocessor: mdBook hands it `[context, book]` as JSON and takes the book back
//! with every reference filled in (the protocol of mdBook 0.4's external preprocessors).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::catalog::Catalog;
use crate::mentions::{self, Page};
use crate::record::Records;

/// The book, as JSON, with every chapter's references filled in; or one sentence per wrong
/// reference, naming its page and line.
pub fn preprocess(input: &str) -> Result<String, Vec<String>> {
    let fail = |why: String| vec![why];
    let [context, mut book]: [Value; 2] = serde_json::from_str(input)
        .map_err(|e| fail(format!("mdbook's input is not [context, book] as JSON ({e})")))?;
    let root = context["root"]
        .as_str()
        .map(PathBuf::from)
        .ok_or_else(|| fail("mdbook's context names no book root".to_owned()))?;
    let src = context["config"]["book"]["src"].as_str().unwrap_or("src");
    let catalog = Catalog::load(&root.join("figures.txt")).map_err(fail)?;
    let mut records = Records::new(&root.join(src));
    let shown = Path::new(root.file_name().unwrap_or_default()).join(src);
    let mut errors = Vec::new();
    let sections = book.get_mut("sections").and_then(Value::as_array_mut);
    let sections = sections.ok_or_else(|| fail("mdbook's book has no sections".to_owned()))?;
    for item in sections {
        fill_item(item, &catalog, &mut records, &shown, &mut errors);
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    serde_json::to_string(&book).map_err(|e| fail(format!("the book cannot be written as JSON ({e})")))
}

/// Fills a chapter and its sub-chapters; separators and part titles have no text.
fn fill_item(
    item: &mut Value,
    catalog: &Catalog,
    records: &mut Records,
    shown: &Path,
    errors: &mut Vec<String>,
) {
    let Some(chapter) = item.get_mut("Chapter") else { return };
    let path = chapter["path"].as_str().map(PathBuf::from);
    if let (Some(path), Some(content)) = (path, chapter.get_mut("content")) {
        if let Some(text) = content.as_str() {
            match mentions::fill(text, Page::Book(&path), catalog, records) {
                Ok(filled) => *content = Value::String(filled),
                Err(wrong) => errors.extend(
                    wrong
                        .into_iter()
                        .map(|(line, why)| format!("{}:{line}: {why}", shown.join(&path).display())),
                ),
            }
        }
    }
    if let Some(items) = chapter.get_mut("sub_items").and_then(Value::as_array_mut) {
        for item in items {
            fill_item(item, catalog, records, shown, errors);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn book_dir(test: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("figures-book-{test}-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("src/results")).unwrap();
        std::fs::write(dir.join("src/results/r.md"), "| step06 | 46832 (91.8%) |\n").unwrap();
        std::fs::write(
            dir.join("figures.txt"),
            "r.share | 0.0% | results/r.md | step06 \\| \\d+ \\(([\\d.]+)%\n",
        )
        .unwrap();
        dir
    }

    fn input(dir: &Path, content: &str) -> String {
        let chapter = |name: &str, path: &str, content: &str, sub: Vec<Value>| {
            serde_json::json!({"Chapter": {"name": name, "content": content, "number": null,
                "sub_items": sub, "path": path, "source_path": path, "parent_names": []}})
        };
        let book = serde_json::json!({"sections": [
            chapter("Results", "results.md", content, vec![chapter("R", "results/r.md", content, vec![])]),
            "Separator",
            {"PartTitle": "Part"},
        ], "__non_exhaustive": null});
        let context = serde_json::json!({"root": dir, "config": {"book": {"src": "src"}},
            "renderer": "html", "mdbook_version": "0.4.52"});
        serde_json::to_string(&serde_json::json!([context, book])).unwrap()
    }

    #[test]
    fn chapters_and_sub_chapters_are_filled() {
        let dir = book_dir("filled");
        let out: Value = serde_json::from_str(
            &preprocess(&input(&dir, "at {{#figure r.share}} ({{#record r.share}})")).unwrap(),
        )
        .unwrap();
        let results = &out["sections"][0]["Chapter"];
        assert_eq!(results["content"], "at 91.8% ([r.md](results/r.md))");
        assert_eq!(results["sub_items"][0]["Chapter"]["content"], "at 91.8% ([r.md](r.md))");
        assert_eq!(out["sections"][1], "Separator");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_wrong_reference_names_its_page_and_line() {
        let dir = book_dir("wrong");
        let errors = preprocess(&input(&dir, "\n{{#figure r.none}}")).unwrap_err();
        let name = dir.file_name().unwrap().to_str().unwrap();
        assert_eq!(
            errors[0],
            format!("{name}/src/results.md:2: the figure r.none is not in docs/figures.txt")
        );
        assert_eq!(errors.len(), 2);
        assert!(preprocess("{}").unwrap_err()[0].contains("is not [context, book]"));
        std::fs::remove_dir_all(dir).unwrap();
    }
}

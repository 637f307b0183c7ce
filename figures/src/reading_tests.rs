//! The reader's rules on a small repository that keeps them, then with one fault planted at a
//! time: each fault is found, named in one line.

use super::*;

/// A repository that keeps every rule: a sidebar of two chapters and a record after the
/// separator, a lab chapter, a README with its set-up commands, a kernel, a built page.
struct Fixture {
    root: PathBuf,
}

impl Fixture {
    fn new(test: &str) -> Fixture {
        let root = std::env::temp_dir().join(format!("figures-reading-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let fixture = Fixture { root };
        fixture.write(
            "docs/src/SUMMARY.md",
            "# Summary\n\n- [Intro](intro.md)\n- [Step 01](step01.md)\n- [Results](results.md)\n\
             - [Earlier runs](results/earlier.md)\n\n---\n\n# Records\n\n- [A run](results/runs/a-run.md)\n",
        );
        fixture.write("docs/wide.css", "ol.chapter > li.spacer ~ li { display: none; }\n");
        fixture.write("docs/src/intro.md", "# Intro\n\nA few words, and 1.5e10 is no hash.\n");
        fixture.write(
            "docs/src/step01.md",
            "# Step 01\n\n```rust\nlet x = 1;\n```\n\nIt runs at {{#figure a}}.\n",
        );
        fixture.write("docs/src/results.md", "# Results\n");
        fixture.write("docs/src/results/earlier.md", "# Earlier runs\n\n- [a-run.md](runs/a-run.md)\n");
        fixture.write("docs/src/results/runs/a-run.md", "# A run at abc1234\n");
        fixture.write(
            "README.md",
            "# Course\n\ncargo run --release -p step01_cpu_naive -- 256\ncargo test --workspace --quiet\n",
        );
        fixture.write("step01_cpu_naive/src/kernel.cu", &format!("{}\n", "x".repeat(COLUMNS)));
        fixture.write("docs/book/intro.html", "<pre><code class=\"rust\">let a = b &lt; c;</code></pre>");
        fixture
    }

    fn write(&self, path: &str, text: &str) {
        let path = self.root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn append(&self, path: &str, text: &str) {
        let now = std::fs::read_to_string(self.root.join(path)).unwrap();
        self.write(path, &format!("{now}{text}"));
    }

    fn check(&self) -> Vec<String> {
        check(&Repo::at(&self.root))
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// The one fault `plant` makes the fixture show, which holds every rule before.
fn one_fault(test: &str, plant: impl FnOnce(&Fixture)) -> String {
    let fixture = Fixture::new(test);
    assert_eq!(fixture.check(), Vec::<String>::new(), "the fixture keeps every rule");
    plant(&fixture);
    let faults = fixture.check();
    assert_eq!(faults.len(), 1, "{faults:?}");
    faults[0].clone()
}

#[test]
fn a_chapter_of_3001_words_is_over_its_cap_and_3000_is_not() {
    let words = |n: usize| vec!["word"; n].join(" ");
    let fault = one_fault("words", |f| f.write("docs/src/intro.md", &words(WORDS + 1)));
    assert_eq!(
        fault,
        "reading: docs/src/intro.md: 3001 words outside code, over 3000 (move the rest to an appendix page)"
    );
    let fixture = Fixture::new("words-cap");
    fixture.write("docs/src/intro.md", &format!("{}\n```\n{}\n```\n", words(WORDS - 1), words(10)));
    assert_eq!(fixture.check(), Vec::<String>::new(), "words in code do not count");
}

#[test]
fn measuring_correctly_has_half_the_cap() {
    let fault = one_fault("measuring", |f| {
        let summary = std::fs::read_to_string(f.root.join("docs/src/SUMMARY.md")).unwrap();
        f.write(
            "docs/src/SUMMARY.md",
            &summary.replace("- [Results]", "- [Measuring](measuring.md)\n- [Results]"),
        );
        f.write("docs/src/measuring.md", &vec!["w"; MEASURING_WORDS + 1].join(" "));
    });
    assert!(fault.contains("measuring.md: 1501 words outside code, over 1500"), "{fault}");
}

#[test]
fn a_kernel_line_of_101_columns_is_too_wide() {
    let fault = one_fault("kernel", |f| f.append("step01_cpu_naive/src/kernel.cu", &"y".repeat(COLUMNS + 1)));
    assert_eq!(fault, "reading: step01_cpu_naive/src/kernel.cu:2: 101 columns, over 100");
}

#[test]
fn a_diff_kept_alone_adds_no_wide_line() {
    let added = format!("+++ b/x.cu\n+{}\n-{}\n", "a".repeat(COLUMNS), "b".repeat(COLUMNS + 5));
    let fixture = Fixture::new("diff-ok");
    fixture.write("step01_cpu_naive/variants/v.diff", &added);
    assert_eq!(fixture.check(), Vec::<String>::new());
    let fault = one_fault("diff", |f| {
        f.write("step01_cpu_naive/variants/v.diff", &format!("{added}+{}\n", "c".repeat(COLUMNS + 1)))
    });
    assert_eq!(fault, "reading: step01_cpu_naive/variants/v.diff:4: an added line of 101 columns, over 100");
}

#[test]
fn a_wide_line_in_the_built_books_code_is_found() {
    let fault = one_fault("built", |f| {
        f.write("docs/book/intro.html", &format!("<pre><code>{}&amp;</code></pre>", "z".repeat(COLUMNS)))
    });
    assert!(
        fault.starts_with("reading: docs/book/intro.html: a code line of 101 columns, over 100: zzz"),
        "{fault}"
    );
}

#[test]
fn a_commit_hash_in_a_chapter_is_found() {
    let fault = one_fault("hash", |f| f.append("docs/src/intro.md", "Since 1a2b3c4d, it is faster.\n"));
    assert_eq!(
        fault,
        "reading: docs/src/intro.md: a commit hash in text a reader sees: 1a2b3c4d (history goes to the performance log)"
    );
}

#[test]
fn hashes_are_words_of_hex_digits_with_a_letter_and_a_digit() {
    assert_eq!(hashes("at 1a2b3c4 and (deadbeef0)"), ["1a2b3c4", "deadbeef0"]);
    assert!(hashes("abcdefa 1234567 7.7037239e1 12345e1 x1a2b3c4 1a2b3c4/x a1b2c3 feed").is_empty());
    assert!(hashes(&"a1".repeat(21)).is_empty(), "over 40 digits");
}

#[test]
fn words_of_the_workshop_are_found_across_lines() {
    let fault = one_fault("workshop", |f| f.append("docs/src/intro.md", "\nThe current\ncode is fast.\n"));
    assert!(
        fault.starts_with("reading: docs/src/intro.md:5: \"current code\": a chapter teaches"),
        "{fault}"
    );
}

#[test]
fn a_lab_keeps_eight_figures_in_its_running_text() {
    // The fixture's chapter has one: seven more, and one in a table, keep the rule.
    let fixture = Fixture::new("figures-cap");
    fixture.append("docs/src/step01.md", &format!("{}\n| {{{{#figure t}}}} |\n", "{{#figure b}} ".repeat(7)));
    assert_eq!(fixture.check(), Vec::<String>::new());
    let fault = one_fault("figures", |f| f.append("docs/src/step01.md", &"{{#figure b}} ".repeat(8)));
    assert_eq!(
        fault,
        "reading: docs/src/step01.md: 9 measured figures in the running text, over 8 (keep those that carry \
         the lesson; move the rest to a table at the end or to an appendix)"
    );
}

#[test]
fn the_sidebar_holds_40_entries_and_records_alone_after_the_separator() {
    let summary = |entries: usize, after: &str| {
        let course: String = (0..entries).map(|i| format!("- [P{i}](p{i}.md)\n")).collect();
        format!("{course}- [Earlier](results/earlier.md)\n\n---\n\n{after}")
    };
    let fault = one_fault("sidebar", |f| f.write("docs/src/SUMMARY.md", &summary(SIDEBAR_ENTRIES, "")));
    assert!(fault.contains("the sidebar shows 41 entries, over 40"), "{fault}");
    let fault = one_fault("after", |f| f.write("docs/src/SUMMARY.md", &summary(1, "- [X](x.md)\n")));
    assert!(fault.contains("x.md is listed after the separator"), "{fault}");
    let fault = one_fault("css", |f| f.write("docs/wide.css", ""));
    assert!(fault.starts_with("reading: docs/wide.css: no rule"), "{fault}");
    let fault =
        one_fault("separator", |f| f.write("docs/src/SUMMARY.md", "- [Earlier](results/earlier.md)\n"));
    assert!(fault.contains("no separator line `---`"), "{fault}");
}

#[test]
fn the_readme_is_short_and_starts_with_its_commands() {
    let fault = one_fault("readme-lines", |f| f.append("README.md", &"\n".repeat(README_LINES)));
    assert!(fault.starts_with("reading: README.md: 154 lines, over 150"), "{fault}");
    let fault = one_fault("readme-links", |f| f.append("README.md", &"[a](b) ".repeat(README_LINKS + 1)));
    assert_eq!(fault, "reading: README.md: 21 links, over 20");
    let fault = one_fault("readme-setup", |f| {
        let readme = std::fs::read_to_string(f.root.join("README.md")).unwrap();
        f.write("README.md", &readme.replace("cargo test --workspace", "cargo  test"));
    });
    assert_eq!(fault, "reading: README.md: `cargo test --workspace` at line None, not within its first 40");
}

#[test]
fn every_record_is_on_the_page_of_earlier_runs_and_none_is_named_by_a_hash() {
    let fault = one_fault("unlisted", |f| f.write("docs/src/results/runs/b.log", ""));
    assert_eq!(
        fault,
        "reading: docs/src/results/runs/b.log: a record the page of earlier runs does not list \
         (run `cargo xtask earlier-runs`)"
    );
    let fault = one_fault("hash-name", |f| f.write("docs/src/results/runs/run-1a2b3c4.txt", ""));
    assert!(
        fault.starts_with("reading: docs/src/results/runs/run-1a2b3c4.txt: a record named by a commit hash")
    );
}

#[test]
fn a_missing_readme_or_summary_is_named() {
    let fault = one_fault("no-readme", |f| std::fs::remove_file(f.root.join("README.md")).unwrap());
    assert!(fault.starts_with("reading: README.md cannot be read ("), "{fault}");
    let fault =
        one_fault("no-summary", |f| std::fs::remove_file(f.root.join("docs/src/SUMMARY.md")).unwrap());
    assert!(fault.starts_with("reading: docs/src/SUMMARY.md cannot be read ("), "{fault}");
}

#[test]
fn character_references_are_decoded() {
    assert_eq!(unescape("a &lt;b&gt; &amp;&amp; &#39;c&#x27; &bogus; & d"), "a <b> && 'c' &bogus; & d");
}

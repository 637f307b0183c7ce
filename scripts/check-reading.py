#!/usr/bin/env python3
"""What a reader of the README and the book meets, checked against the course's rules:

- a step chapter, an appendix, the introduction or "Your data": at most 3,000 words outside code
  blocks; "Measuring correctly": at most 1,500;
- README.md: at most 150 lines and 20 links, its two set-up commands within its first 40 lines;
- no commit hash in the text a reader sees of those pages and the README (history goes to the
  performance log and the records);
- no line wider than 100 columns in a kernel (every .cu of a step: its kernel, stages, variants
  and exercises, and the lines a variant kept as its diff alone adds) or in a code block the
  built book shows;
- every record under docs/src/results/ listed on the page of earlier runs, and none named by a
  commit hash (links show a record's name);
- the sidebar holds the course alone: at most 40 entries before SUMMARY.md's separator line
  `---`, only records after it, and docs/wide.css hiding what follows it (docs/book.toml says why);
- a lab chapter (docs/src/stepNN.md) keeps at most 8 measured figures (`{{#figure …}}`) in its
  running text: tables and code blocks do not count, and the rest go to a table at the end or to
  an appendix, so that the few that carry the lesson stand out;
- no chapter or appendix speaks of the workshop ("current code", "same device session", "the day
  before"): a chapter teaches the code as it is, and history goes to the performance log.

    scripts/check-reading.py [ROOT]       (after `mdbook build docs`: the built book is read too)

Exits 1 with one line per fault.
"""

import html
import pathlib
import re
import sys

ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
SRC = ROOT / "docs" / "src"
WORDS, MEASURING_WORDS, README_LINES, README_LINKS, COLUMNS = 3000, 1500, 150, 20, 100
SIDEBAR_ENTRIES = 40
README_SETUP_LINE = 40
RUNNING_FIGURES = 8
LAB = re.compile(r"step\d\d\.md$")
# Words of the workshop, not of the course: each a phrase, matched across line breaks, any case.
WORKSHOP = ("current code", "same device session", "the day before")
SEPARATOR = re.compile(r"^-{3,}\s*$", re.M)
ENTRY = re.compile(r"^\s*(?:[-*]\s+)?\[[^\]]*\]\(([^)]*)\)", re.M)
# The rule in docs/wide.css that hides the records part of the sidebar.
HIDE = re.compile(r"li\.spacer\s*~\s*li\s*\{[^}]*display:\s*none", re.S)
# Pages that tell history or hold records: the performance log and the results.
HISTORY = ("performance.md", "results.md", "SUMMARY.md")
HASH = re.compile(r"(?<![\w/.-])[0-9a-f]{7,40}(?![\w/.-])")


def visible(text, keep_code=False):
    """The text a reader sees: link targets, HTML tags and (unless keep_code) code blocks out."""
    out, fence = [], False
    for line in text.split("\n"):
        if re.match(r"\s*(```|~~~)", line):
            fence = not fence
            continue
        if "{{#include" in line or (fence and not keep_code):
            continue
        line = re.sub(r"\]\([^)]*\)", "]", line)
        # A figure reads as one word; a record's reference is counted as written (two words,
        # where its link shows one), so that the count is never below what a reader meets.
        line = re.sub(r"\{\{#figure [^}]*\}\}", "9", line)
        out.append(re.sub(r"<[^>]+>", " ", line))
    return "\n".join(out)


def running_figures(text):
    """The figures of a page's running text: outside code blocks and outside table rows."""
    count, fence = 0, False
    for line in text.split("\n"):
        if re.match(r"\s*(```|~~~)", line):
            fence = not fence
            continue
        if not fence and not line.lstrip().startswith("|"):
            count += len(re.findall(r"\{\{#figure ", line))
    return count


def hashes(text):
    """Words that look like commit hashes: hex digits, a letter and a digit among them; not a
    number in scientific notation (7.7037239e1)."""
    return [h for h in HASH.findall(text)
            if re.search("[a-f]", h) and re.search("[0-9]", h) and not re.fullmatch(r"\d+e\d+", h)]


def reader_pages():
    """The book's pages for the learner: every page in SUMMARY.md but the results and the log."""
    summary = (SRC / "SUMMARY.md").read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)]+\.md)\)", summary):
        if target.startswith(("results/", "log/")) or target in HISTORY:
            continue
        yield SRC / target


def sidebar():
    """What the sidebar shows and hides: faults, one line each."""
    text = (SRC / "SUMMARY.md").read_text(encoding="utf-8")
    m = SEPARATOR.search(text)
    if not m:
        return ["docs/src/SUMMARY.md: no separator line `---` before the records, so the sidebar "
                "lists every record (run scripts/earlier-runs.py)"]
    faults = []
    shown = ENTRY.findall(text[:m.start()])
    if len(shown) > SIDEBAR_ENTRIES:
        faults.append(f"docs/src/SUMMARY.md: the sidebar shows {len(shown)} entries, over "
                      f"{SIDEBAR_ENTRIES}: it holds the course alone (a record goes after the separator "
                      "`---`, where docs/wide.css hides it)")
    for target in ENTRY.findall(text[m.end():]):
        if not target.startswith("results/") or target == "results/earlier.md":
            faults.append(f"docs/src/SUMMARY.md: {target} is listed after the separator `---`, where "
                          "the sidebar hides it; only records go there")
    css = ROOT / "docs" / "wide.css"
    if not HIDE.search(css.read_text(encoding="utf-8") if css.exists() else ""):
        faults.append("docs/wide.css: no rule `ol.chapter > li.spacer ~ li { display: none; }`, so the "
                      "sidebar shows every record listed after SUMMARY.md's separator")
    return faults


def workshop(page, text):
    """Faults for each phrase of the workshop in the text a reader sees, with its line."""
    lines = []
    fence = False
    for line in text.split("\n"):
        if re.match(r"\s*(```|~~~)", line):
            fence = not fence
            line = ""
        # Keep the line count: a fault names the line of the source.
        lines.append(visible(line, keep_code=True) if "{{#include" not in line else "")
    seen = "\n".join(lines)
    faults = []
    for phrase in WORKSHOP:
        for m in re.finditer(r"\s+".join(map(re.escape, phrase.split())), seen, re.I):
            n = seen.count("\n", 0, m.start()) + 1
            said = " ".join(m.group(0).split())
            faults.append(f"{page.relative_to(ROOT)}:{n}: \"{said}\": a chapter teaches the code as it "
                          "is, with no time or session in it (history goes to the performance log)")
    return faults


def main():
    faults = sidebar()
    for page in reader_pages():
        if not page.exists():
            continue
        text = page.read_text(encoding="utf-8")
        cap = MEASURING_WORDS if page.name == "measuring.md" else WORDS
        words = len(visible(text).split())
        if words > cap:
            faults.append(f"{page.relative_to(ROOT)}: {words} words outside code, over {cap} "
                          "(move the rest to an appendix page)")
        for h in sorted(set(hashes(visible(text, keep_code=True)))):
            faults.append(f"{page.relative_to(ROOT)}: a commit hash in text a reader sees: {h} "
                          "(history goes to the performance log)")
        faults.extend(workshop(page, text))
        if LAB.search(page.name) and (n := running_figures(text)) > RUNNING_FIGURES:
            faults.append(f"{page.relative_to(ROOT)}: {n} measured figures in the running text, over "
                          f"{RUNNING_FIGURES} (keep those that carry the lesson; move the rest to a table at the "
                          "end or to an appendix)")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    lines = readme.count("\n")
    links = len(re.findall(r"\]\([^)]+\)", readme))
    if lines > README_LINES:
        faults.append(f"README.md: {lines} lines, over {README_LINES} (details go to the book or CONTRIBUTING.md)")
    # The two set-up commands, where a reader finds them without scrolling.
    for command in ("cargo run --release -p step01_cpu_naive ", "cargo test --workspace "):
        at = next((n for n, line in enumerate(readme.split("\n"), 1) if line.startswith(command)), None)
        if at is None or at > README_SETUP_LINE:
            faults.append(f"README.md: `{command.strip()}` at line {at}, not within its first {README_SETUP_LINE}")
    if links > README_LINKS:
        faults.append(f"README.md: {links} links, over {README_LINKS}")
    for h in sorted(set(hashes(visible(readme, keep_code=True)))):
        faults.append(f"README.md: a commit hash in text a reader sees: {h}")
    for kernel in sorted(ROOT.glob("step*/**/*.cu")):
        for n, line in enumerate(kernel.read_text(encoding="utf-8").split("\n"), 1):
            if len(line) > COLUMNS:
                faults.append(f"{kernel.relative_to(ROOT)}:{n}: {len(line)} columns, over {COLUMNS}")
    # A variant kept as its diff alone: the lines it adds are lines of its kernel.
    for diff in sorted(ROOT.glob("step*/variants/*.diff")):
        if diff.with_suffix(".cu").exists():
            continue
        for n, line in enumerate(diff.read_text(encoding="utf-8").split("\n"), 1):
            if line.startswith("+") and not line.startswith("+++ ") and len(line) - 1 > COLUMNS:
                faults.append(f"{diff.relative_to(ROOT)}:{n}: an added line of {len(line) - 1} columns, over {COLUMNS}")
    book = ROOT / "docs" / "book"
    shown = [book / p.relative_to(SRC).with_suffix(".html") for p in reader_pages()] + [book / "results.html"]
    for page in [p for p in shown if p.exists()] if book.is_dir() else []:
        for block in re.findall(r"<pre><code[^>]*>(.*?)</code></pre>", page.read_text(encoding="utf-8"), re.S):
            for line in html.unescape(re.sub(r"<[^>]+>", "", block)).split("\n"):
                if len(line) > COLUMNS:
                    faults.append(f"docs/book/{page.relative_to(book)}: a code line of {len(line)} columns, over "
                                  f"{COLUMNS}: {line[:60]}…")
    for record in sorted((SRC / "results").rglob("*")):
        if hashes(record.name.replace("-", " ").replace(".", " ")):
            faults.append(f"docs/src/results/{record.relative_to(SRC / 'results')}: a record named by a commit "
                          "hash (a link shows its name: name it by what it measured; the hash goes inside)")
    earlier = (SRC / "results" / "earlier.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"\]\(([^)]+)\)", earlier))
    # The results pages the sidebar shows (the main run's, and this page) are not listed there.
    summary = (SRC / "SUMMARY.md").read_text(encoding="utf-8")
    course = summary[:m.start()] if (m := SEPARATOR.search(summary)) else summary
    skip = {t[len("results/"):] for t in ENTRY.findall(course) if t.startswith("results/")}
    for record in sorted((SRC / "results").rglob("*")):
        rel = record.relative_to(SRC / "results").as_posix()
        if record.suffix in (".md", ".log") and rel not in skip and rel not in listed:
            faults.append(f"docs/src/results/{rel}: a record the page of earlier runs does not list "
                          "(run scripts/earlier-runs.py)")
    for fault in faults:
        print(f"check-reading: {fault}")
    return 1 if faults else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Writes the two lists of the book's records from the files under docs/src/results/:

- the page of earlier runs, docs/src/results/earlier.md: every record but the main run's
  pages, newest first, grouped by date and device;
- the records part of docs/src/SUMMARY.md, everything after its separator line `---`: every
  `.md` record the sidebar does not show already.

mdBook renders only the pages SUMMARY.md lists, and a figure's link leads to its record's page, so
every `.md` record must be listed there; docs/wide.css hides what follows the separator from the
sidebar, so that the sidebar holds the course alone and the page of earlier runs lists the records.
The main run's pages are the `results/` pages listed before the separator.

    scripts/earlier-runs.py            write both
    scripts/earlier-runs.py --check    write nothing; exit 1 naming each list that is not current

scripts/check-docs.sh runs the check: run this again after adding or renaming a record.
"""
import collections
import pathlib
import re
import sys

SRC = pathlib.Path(__file__).resolve().parent.parent / "docs" / "src"
SUMMARY = SRC / "SUMMARY.md"
EARLIER = SRC / "results" / "earlier.md"
# The line that ends the sidebar's course and opens the records part (mdBook's separator).
SEPARATOR = re.compile(r"^-{3,}\s*$", re.M)
RECORDS_PART = ("# Records\n\n"
                "<!-- Written by scripts/earlier-runs.py; docs/wide.css hides this part from the sidebar. -->\n\n")


def split_summary(text):
    """SUMMARY.md as (the course, the records part): the text before and after the separator."""
    m = SEPARATOR.search(text)
    if not m:
        sys.exit("earlier-runs: docs/src/SUMMARY.md has no separator line `---` before its records")
    return text[:m.start()], text[m.end():]


def shown_results(course):
    """The `results/` pages the sidebar shows: the main run's, and the page of earlier runs."""
    return {t for t in re.findall(r"\]\(([^)]+)\)", course) if t.startswith("results/")}


def records():
    """Every record under docs/src/results/, relative to docs/src."""
    for path in sorted((SRC / "results").rglob("*")):
        if path.suffix in (".md", ".log"):
            yield path.relative_to(SRC).as_posix()


def date_device(rel):
    name = rel.rsplit("/", 1)[1]
    m = re.match(r"(\d{4}-\d\d-\d\d)-(.*)\.(md|log)$", name)
    date, rest = (m.group(1), m.group(2)) if m else ("undated", name.rsplit(".", 1)[0])
    device = "H100" if "h100" in rest else "H200" if "h200" in rest else "no GPU"
    return date, device, rest


def earlier_page(listed):
    groups = collections.defaultdict(list)
    for rel in records():
        if rel not in listed:
            date, device, _ = date_device(rel)
            groups[(date, device)].append(rel)
    out = ["# Earlier runs\n",
           "Every record this book quotes apart from [the main run](../results.md), newest first, "
           "by date and device: the runs a chapter quotes beside the main run, and those behind "
           "the [performance log](../performance.md). A `.md` record is a page of this book; a `.log` "
           "record is the program's output as it was printed, every command before its output.\n"]
    # Newest first; the undated records, the oldest, last.
    for (date, device) in sorted(groups, key=lambda g: (g[0] != "undated", g), reverse=True):
        out.append(f"## {date}, {device}\n")
        out.extend(f"- [{rel.rsplit('/', 1)[1]}]({pathlib.PurePosixPath(rel).relative_to('results')})"
                   for rel in groups[(date, device)])
        out.append("")
    return "\n".join(out)


def title(rel):
    """A hidden record's name in SUMMARY.md, which is also its page's title in the browser."""
    date, device, rest = date_device(rel)
    if date == "undated":
        first = (SRC / rel).read_text(encoding="utf-8").split("\n", 1)[0]
        return first.lstrip("# ").strip() or rest
    rest = re.sub(r"^nvidia-h(100|200)(-80gb-hbm3)?-", "", rest).replace("-", " ")
    rest = re.sub(r"code(\d\d)(\d\d)T(\d\d)(\d\d)", r"(code of \1-\2 \3:\4)", rest)
    return f"{date} {device}: {rest}"


def summary(text):
    course, _ = split_summary(text)
    shown = shown_results(course)
    hidden = [rel for rel in records() if rel.endswith(".md") and rel not in shown]
    entries = "".join(f"- [{title(rel)}]({rel})\n" for rel in hidden)
    return f"{course.rstrip()}\n\n---\n\n{RECORDS_PART}{entries}"


def main():
    check = sys.argv[1:] == ["--check"]
    if sys.argv[1:] not in ([], ["--check"]):
        sys.exit(__doc__)
    now_summary = SUMMARY.read_text(encoding="utf-8")
    new_summary = summary(now_summary)
    new_earlier = earlier_page(shown_results(split_summary(now_summary)[0]))
    stale = []
    for path, new in ((SUMMARY, new_summary), (EARLIER, new_earlier)):
        now = path.read_text(encoding="utf-8") if path.exists() else ""
        if now == new:
            continue
        stale.append(path)
        if not check:
            path.write_text(new, encoding="utf-8")
            print(f"earlier-runs: wrote {path.relative_to(SRC.parent.parent)}")
    if check and stale:
        for path in stale:
            print(f"earlier-runs: {path.relative_to(SRC.parent.parent)} does not list the records under "
                  "docs/src/results/ as they are (run scripts/earlier-runs.py)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

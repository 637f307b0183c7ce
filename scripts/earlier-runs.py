#!/usr/bin/env python3
"""Writes the book's page of earlier runs, docs/src/results/earlier.md: every record under
docs/src/results/ but the reference run's, newest first, grouped by date and device.

    scripts/earlier-runs.py > docs/src/results/earlier.md

scripts/check-docs.sh fails when a record is missing from the page (run this again after adding one).
"""
import collections
import pathlib
import re

SRC = pathlib.Path(__file__).resolve().parent.parent / "docs" / "src"
REFERENCE = {"results/runs/2026-11-24-nvidia-h100-80gb-hbm3-reference.md", "results/profiles-h100.md",
             "results/earlier.md"}


def records():
    for path in sorted((SRC / "results").rglob("*")):
        rel = path.relative_to(SRC).as_posix()
        if path.suffix in (".md", ".log") and rel not in REFERENCE:
            yield rel


def main():
    groups = collections.defaultdict(list)
    for rel in records():
        name = rel.rsplit("/", 1)[1]
        m = re.match(r"(\d{4}-\d\d-\d\d)-(.*)\.(md|log)$", name)
        date, rest = (m.group(1), m.group(2)) if m else ("undated", name.rsplit(".", 1)[0])
        device = "H100" if "h100" in rest else "H200" if "h200" in rest else "no GPU"
        groups[(date, device)].append(rel)
    print("# Earlier runs\n")
    print("Every record the book has quoted, newest first: the runs behind the performance log, and the "
          "measurements of earlier code. The current code's figures are on the page of "
          "[the reference run](../results.md). A `.md` record is a page of this book; a `.log` record is "
          "the program's output as it was printed, every command before its output.\n")
    for (date, device) in sorted(groups, reverse=True):
        print(f"## {date}, {device}\n")
        for rel in groups[(date, device)]:
            print(f"- [{rel.rsplit('/', 1)[1]}]({pathlib.PurePosixPath(rel).relative_to('results')})")
        print()


if __name__ == "__main__":
    main()

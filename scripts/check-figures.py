#!/usr/bin/env python3
"""Checks that every drawn figure the book shows is legible as shown: no wider than the book's
column (920 px, so it is shown at its own size) and no text under its minimum size: 11 px for the
figures of scripts/hopper-figures.py, scripts/mma-figure.py and the others in docs/src/figures,
12 px for the results charts (compare's roofline and size charts) that a chapter links to.

    scripts/check-figures.py          (run by scripts/check-docs.sh)
"""
import glob
import os
import re
import sys

COLUMN = 920
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs", "src")


def check(path, min_font):
    svg = open(path, encoding="utf-8").read()
    width = float(re.search(r'<svg[^>]*\bwidth="([\d.]+)"', svg).group(1))
    sizes = [float(v) for v in re.findall(r'font-size="([\d.]+)"', svg)]
    problems = []
    if width > COLUMN:
        problems.append(f"{width:g} px wide, over the column's {COLUMN}: the book shrinks it")
    small = [v for v in sizes if v < min_font]
    if small:
        problems.append(f"text at {min(small):g} px, under {min_font}")
    return [f"{os.path.relpath(path, ROOT)}: {p}" for p in problems]


problems = []
for path in sorted(glob.glob(os.path.join(ROOT, "figures", "*.svg"))):
    problems += check(path, 11)
charts = set()
for page in glob.glob(os.path.join(ROOT, "*.md")):
    charts.update(re.findall(r"\]\((results/runs/[^)]+\.svg)\)", open(page, encoding="utf-8").read()))
for chart in sorted(charts):
    problems += check(os.path.join(ROOT, chart), 12)
for p in problems:
    print(f"check-figures: {p}")
sys.exit(1 if problems else 0)

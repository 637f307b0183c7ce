#!/usr/bin/env python3
"""Rewrites every quoted figure from its record, after a record was measured again.

A quoted figure is a Markdown link [number](record "regex with one group"), as
compare/tests/figures.rs describes; that test fails when a quote disagrees with its record, and
this script makes them agree: it keeps each quote's decimals, digit grouping and % sign, and
prints every change so that the text around a figure can be read again.

    scripts/refresh-figures.py          # rewrite in place, list the changes
    scripts/refresh-figures.py --check  # list only; exit 1 if anything would change
"""

import math
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
LINK = re.compile(r'\[([^\]\n]+)\]\(([^)\s]+) "((?:[^"\\]|\\.)+)"\)')
QUOTE = re.compile(r"^-?\d[\d \u2009\u00a0]*(?:\.(\d+))?%?$")


def quoting_files():
    files = [ROOT / "README.md", *sorted((ROOT / "docs/src").rglob("*.md"))]
    files += sorted(ROOT.glob("*/src/kernel.cu"))
    return files


def rust_regex(pattern):
    # The titles are Rust regexes; the few constructs they use mean the same in Python, apart
    # from \x7c, which both read as '|'.
    return re.compile(pattern)


def formatted(value, quote):
    decimals = len(QUOTE.match(quote.strip()).group(1) or "")
    # Round half away from zero on the scaled float, as the figures test (Rust's f64::round) does.
    scaled = value * 10**decimals
    rounded = math.copysign(math.floor(abs(scaled) + 0.5), scaled) / 10**decimals
    text = f"{rounded:.{decimals}f}"
    whole, _, frac = text.partition(".")
    sep = next((c for c in quote if c in " \u2009\u00a0"), None)
    if sep:
        sign = "-" if whole.startswith("-") else ""
        digits = whole.lstrip("-")
        groups = []
        while len(digits) > 3:
            groups.insert(0, digits[-3:])
            digits = digits[:-3]
        whole = sign + sep.join([digits, *groups])
    out = whole + ("." + frac if frac else "")
    return out + ("%" if quote.strip().endswith("%") else "")


def main():
    check_only = "--check" in sys.argv
    changes = 0
    for path in quoting_files():
        text = path.read_text()

        def replace(m):
            nonlocal changes
            quote, record, title = m.group(1), m.group(2), m.group(3).replace('\\"', '"')
            if not QUOTE.match(quote.strip()):
                return m.group(0)
            pattern, _, divisor = title.rpartition(" /")
            try:
                divisor = float(divisor)
            except ValueError:
                pattern, divisor = title, 1.0
            try:
                source = (path.parent / record.split("#")[0]).read_text()
            except OSError:
                print(f"{path.relative_to(ROOT)}: the record {record} cannot be read")
                return m.group(0)
            found = rust_regex(pattern).search(source)
            if not found:
                print(f"{path.relative_to(ROOT)}: \"{pattern}\" matches nothing in {record}")
                return m.group(0)
            new = formatted(float(found.group(1).rstrip("%")) / divisor, quote)
            if new != quote:
                changes += 1
                print(f"{path.relative_to(ROOT)}: {quote} -> {new}   ({record})")
            return m.group(0).replace(f"[{quote}]", f"[{new}]", 1)

        new_text = LINK.sub(replace, text)
        if new_text != text and not check_only:
            path.write_text(new_text)
    print(f"{changes} figure(s) {'would change' if check_only else 'changed'}")
    return 1 if check_only and changes else 0


if __name__ == "__main__":
    sys.exit(main())

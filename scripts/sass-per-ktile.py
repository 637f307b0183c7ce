#!/usr/bin/env python3
"""Counts a kernel's machine instructions per consumer warp and k-tile, from Nsight Compute's
source page (`ncu --import X.ncu-rep --page source --csv --print-source sass`): the main loop's
`HGMMA` instructions set the loop's trip count; every instruction run as often (or twice as
often, for a loop unrolled by two) belongs to the loop body. Prints the groups of instructions by
how often each ran, and the body's instructions per warp per k-tile.

    scripts/sass-per-ktile.py step12-sass.csv K_TILES_PER_WARP
"""

import collections
import csv
import sys


def load(path):
    rows = list(csv.reader(open(path, encoding="utf-8")))
    start = next(i for i, r in enumerate(rows) if r and r[0] == "Address")
    head = rows[start]
    executed, source = head.index("Instructions Executed"), head.index("Source")
    out = []
    for r in rows[start + 1:]:
        try:
            out.append((r[source].strip(), int(r[executed].replace(",", ""))))
        except (IndexError, ValueError):
            continue
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: sass-per-ktile.py SASS.csv K_TILES_PER_WARP (warp k-tiles in the launch)")
    sass, ktiles = load(sys.argv[1]), int(sys.argv[2])
    total = sum(n for _, n in sass)
    print(f"{len(sass)} SASS instructions, {total} warp-instructions executed, {ktiles} warp k-tiles")
    groups = collections.Counter()
    lines = collections.Counter()
    for s, n in sass:
        groups[n] += n
        lines[n] += 1
    print("runs a line | lines | warp-instructions | per warp k-tile")
    for n, insts in sorted(groups.items(), key=lambda g: -g[1])[:10]:
        print(f"{n} | {lines[n]} | {insts} | {insts / ktiles:.1f}")
    hgmma = collections.Counter(n for s, n in sass if s.split(" ")[0].lstrip("@!P0123456789UT ").startswith("HGMMA"))
    trip = max(hgmma, key=lambda n: n * hgmma[n])
    body = sum(n for _, n in sass if n in (trip, 2 * trip))
    print(f"main-loop HGMMA lines run {trip} times each; the lines run {trip} or {2 * trip} times: "
          f"{body} warp-instructions, {body / ktiles:.1f} per warp k-tile")
    ops = collections.Counter()
    for s, n in sass:
        if n in (trip, 2 * trip):
            words = [w for w in s.split() if not w.startswith("@")]
            ops[words[0].split(".")[0] if words else "?"] += n
    body_ops = ", ".join(f"{op} {n / ktiles:.1f}" for op, n in ops.most_common(8))
    print(f"the loop body's opcodes per warp k-tile: {body_ops}")
    polls = sum(n for s, n in sass if "SYNCS" in s and "TRYWAIT" in s)
    print(f"mbarrier try-waits (SYNCS…TRYWAIT): {polls} warp-instructions, {polls / ktiles:.1f} per warp k-tile")


main()

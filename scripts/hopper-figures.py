#!/usr/bin/env python3
# Labs: 08, 09 and 12, the Hopper chapters these figures belong to.
"""Draws the figures of the Hopper chapters (steps 08 and 09) into the directory given:

    wgmma-fragments.svg        step 08: the warpgroup's fragments of wgmma.m64nBMk8 (TF32): which
                               lane holds which element of the 64×8 first operand (Bᵀ) and of the
                               64×BM accumulator strip (Cᵀ), cell by cell for one warp, with the
                               lane the chapter follows outlined
    tma-pipeline.svg           step 08: the ring of STAGES shared-memory buffers with a full and an
                               empty mbarrier each, the producer, the copy engine and the
                               consumers, and a timeline of copies running ahead of the multiplies
    step08-registers.svg       step 08: the SM's registers at launch and after setmaxnreg
    swizzle-128b.svg           step 08: the 128-byte swizzle (piece p of row r stored at place
                               p ⊕ (r mod 8)) and one element's address before and after it
    step08-fragment-loads.svg  step 08: fragment_col's columns and the banks that half a warp's
                               8-byte loads hit, beside an arrangement that conflicts
    tf32-split.svg             step 09: an FP32 value split into big = tf32(x) and small =
                               tf32(x − big), bit by bit, and the three products the kernel issues

Step 08's figures are drawn at most 900 px wide with no text under 11 px, so that the book
shows them at their size with legible labels (`legible` asserts both).
Every cell, bank and bit is computed from the formulas the kernels use (fragment layouts,
fragment_col, the swizzle, cvt.rna.tf32.f32); nothing is placed by hand. Standard library only:

    scripts/hopper-figures.py docs/src/figures
"""

import math
import os
import struct
import sys
from fractions import Fraction

COLORS = ["#dbeafe", "#dcfce7", "#fef9c3", "#fee2e2", "#ede9fe", "#cffafe", "#ffedd5", "#f3f4f6"]
HIGHLIGHT = "#c2410c"
DARK = "#333"

# step 08's defaults (step08_wgmma_tma/src/lib.rs) and the kernel's constants derived from them
BM, BN, STAGES, BK = 256, 128, 4, 32
CONSUMERS = BN // 64
THREADS = 128 * (CONSUMERS + 1)
BUFFER_BYTES = 4 * (BM * BK + BK * BN)
PRODUCER_REGS = 40
BLOCK_REGS = THREADS * ((65536 // THREADS) // 8 * 8)
CONSUMER_REGS = min((BLOCK_REGS - 128 * PRODUCER_REGS) // (128 * CONSUMERS) // 8 * 8, 240)


def esc(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def num(v):
    return f"{v:.2f}".rstrip("0").rstrip(".")


class Svg:
    def __init__(self, width, height, title):
        self.width, self.height, self.title = width, height, title
        self.parts = []
        self.markers = set()
        self.min_font = None  # when set, text() refuses anything smaller

    def text(self, x, y, s, size=11, anchor="start", bold=False, fill=None, mono=False, rotate=False):
        assert self.min_font is None or size >= self.min_font, f"{self.title}: '{s}' at {size} px"
        attrs = f'x="{num(x)}" y="{num(y)}" font-size="{size}"'
        if anchor != "start":
            attrs += f' text-anchor="{anchor}"'
        if bold:
            attrs += ' font-weight="bold"'
        if fill:
            attrs += f' fill="{fill}"'
        if mono:
            attrs += ' font-family="monospace"'
        if rotate:
            attrs += f' transform="rotate(-90 {num(x)} {num(y)})"'
        self.parts.append(f"<text {attrs}>{esc(s)}</text>")

    def rect(self, x, y, w, h, fill="none", stroke="#555", width=0.5, rx=0, dash=None):
        attrs = f'x="{num(x)}" y="{num(y)}" width="{num(w)}" height="{num(h)}" fill="{fill}"'
        if stroke:
            attrs += f' stroke="{stroke}" stroke-width="{width}"'
        if rx:
            attrs += f' rx="{rx}"'
        if dash:
            attrs += f' stroke-dasharray="{dash}"'
        self.parts.append(f"<rect {attrs}/>")

    def path(self, d, stroke=DARK, width=1.2, arrow=False, dash=None, fill="none"):
        attrs = f'd="{d}" fill="{fill}" stroke="{stroke}" stroke-width="{width}"'
        if dash:
            attrs += f' stroke-dasharray="{dash}"'
        if arrow:
            self.markers.add(stroke)
            attrs += f' marker-end="url(#arrow{stroke.lstrip("#")})"'
        self.parts.append(f"<path {attrs}/>")

    def line(self, x1, y1, x2, y2, **kw):
        self.path(f"M{num(x1)},{num(y1)} L{num(x2)},{num(y2)}", **kw)

    def save(self, directory, name):
        w, h = self.width, self.height
        out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
               'font-family="sans-serif">',
               f"<title>{esc(self.title)}</title>"]
        if self.markers:
            out.append("<defs>")
            for c in sorted(self.markers):
                out.append(f'<marker id="arrow{c.lstrip("#")}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
                           f'markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="{c}"/></marker>')
            out.append("</defs>")
        out.append(f'<rect width="{w}" height="{h}" fill="white"/>')
        out += self.parts
        out.append("</svg>")
        with open(os.path.join(directory, name), "w", encoding="utf-8") as f:
            f.write("\n".join(out) + "\n")


# ---------------------------------------------------------------------------------------------
# Step 08's figures are drawn for the book's column: at most COLUMN pixels wide, so that they are
# shown at their own size, and no text smaller than MIN_FONT pixels (Svg.legible checks both).

COLUMN, MIN_FONT = 900, 11


def legible(width, height, title):
    s = Svg(width, height, title)
    assert width <= COLUMN, f"{title}: {width} px is wider than the column ({COLUMN} px)"
    s.min_font = MIN_FONT
    return s


# The worked examples the chapter follows: lane 22 of warp 1 of the first consumer, and the
# element of A's tile at row 5, column 13.
EXAMPLE_WARP, EXAMPLE_LANE = 1, 22
EXAMPLE_ROW, EXAMPLE_COL = 5, 13


# ---------------------------------------------------------------------------------------------
# 1. wgmma-fragments.svg


def first_operand_owner(r, k):
    """Lane and register of row r (0..15 within the warp) and column k of the 64×8 operand."""
    g, h = r % 8, r // 8
    return 4 * g + k % 4, f"a{h + 2 * (k // 4)}"


def accumulator_owner(r, c):
    """Lane and register of row r (0..15 within the warp) and column c of the 64×BM strip:
    d[4j + 2h + v] = (row g + 8h, column 8j + 2t + v)."""
    g, h = r % 8, r // 8
    j, t, v = c // 8, (c % 8) // 2, c % 2
    return 4 * g + t, f"d{4 * j + 2 * h + v}"


def fragment_col(g, half):
    piece = 2 * half + g // 4 + 4 * ((g // 2) % 2)
    return 4 * piece + 2 * (g % 2)


def b_column(consumer, warp, r):
    """Column of the block's B tile that row r (0..15) of this warp's fragment carries."""
    box, half = 2 * consumer + warp // 2, warp % 2
    return 32 * box + fragment_col(r % 8, half) + r // 8


def wgmma_figure(directory):
    W, H = 900, 1130
    w = EXAMPLE_WARP
    s = legible(W, H, "Step 08: the fragments of wgmma.m64nBMk8 with TF32 operands, for one warpgroup")
    s.text(W / 2, 28, "Cᵀ strip (64 × BM)  +=  Bᵀ fragment (64 × 8)  ·  Aᵀ slice (8 × BM)", 17, "middle",
           bold=True)
    s.text(W / 2, 50, f"one wgmma per 8-deep step and consumer warpgroup; TF32 operands, FP32 accumulators; BM = {BM}",
           12, "middle")

    # Overview, not to scale across operands: rows 2.5 px, columns of the strips 1 px.
    y0, rh, colw = 110, 2.5, 1.0
    cx, cw = 150, BM * colw
    s.text(cx + cw / 2, y0 - 14, "Cᵀ strip: accumulators", 13, "middle", bold=True)
    for wp in range(4):
        s.rect(cx, y0 + 16 * wp * rh, cw, 16 * rh, "#f4f4f4", "#555", 0.8)
        s.text(cx - 10, y0 + (16 * wp + 8) * rh + 4, f"warp {wp} · rows {16 * wp}–{16 * wp + 15}", 12, "end")
    for j in range(1, BM // 8):
        x = cx + 8 * j * colw
        s.line(x, y0, x, y0 + 64 * rh, stroke="#ccc", width=0.4)
    s.rect(cx, y0 + 16 * w * rh, 8 * colw, 16 * rh, COLORS[6], HIGHLIGHT, 1.5)
    s.text(cx + cw / 2, y0 + 64 * rh + 20, f"registers: BM/2 = {BM // 2} a thread", 12, "middle", fill="#444")

    s.text(cx + cw + 28, y0 + 32 * rh + 6, "+=", 18, "middle", bold=True)
    bx, bw = cx + cw + 56, 40
    s.text(bx + bw / 2, y0 - 14, "Bᵀ fragment", 13, "middle", bold=True)
    for wp in range(4):
        s.rect(bx, y0 + 16 * wp * rh, bw, 16 * rh, COLORS[7], "#555", 0.8)
    s.rect(bx, y0 + 16 * w * rh, bw, 16 * rh, COLORS[6], HIGHLIGHT, 1.5)
    s.text(bx + bw / 2, y0 + 64 * rh + 20, "registers: 4", 12, "middle", fill="#444")

    s.text(bx + bw + 22, y0 + 32 * rh + 6, "·", 22, "middle", bold=True)
    ax, aw, ah = bx + bw + 44, BM * colw, 40
    s.text(ax + aw / 2, y0 - 14, "Aᵀ slice", 13, "middle", bold=True)
    s.rect(ax, y0, aw, ah, "#fef9c3", "#555", 0.8)
    s.text(ax + aw / 2, y0 + ah / 2 + 5, "8 k down, BM rows of A across", 12, "middle", fill="#444")
    for i, line in enumerate(["in shared memory, read by the", "tensor cores through the descriptor:",
                              "column m = 8 consecutive k of", "row m of A's tile (K-major)"]):
        s.text(ax, y0 + ah + 24 + 17 * i, line, 12, fill="#444")
    s.text(W / 2, y0 + 64 * rh + 52, f"Outlined: warp {w}'s 16 rows, drawn cell by cell below (of the strip, "
           "its first 8 columns)", 12, "middle", fill=HIGHLIGHT)

    # One warp, cell by cell: the first consumer's warp w.
    cell, top = 36, 420
    fx = 160
    acx = fx + 8 * cell + 60
    s.text(fx + 4 * cell, top - 62, f"warp {w}: Bᵀ fragment", 13, "middle", bold=True)
    s.text(acx + 4 * cell, top - 62, f"warp {w}: accumulators, j = 0", 13, "middle", bold=True)
    s.text(fx + 4 * cell, top - 26, "k", 12, "middle", fill="#444")
    s.text(acx + 4 * cell, top - 26, "column of the strip = row of C", 12, "middle", fill="#444")
    for k in range(8):
        s.text(fx + k * cell + cell / 2, top - 8, str(k), 12, "middle", fill="#444")
        s.text(acx + k * cell + cell / 2, top - 8, str(k), 12, "middle", fill="#444")
    s.text(fx - 100, top - 26, "row of", 12, "middle", fill="#444")
    s.text(fx - 100, top - 10, "the strip", 12, "middle", fill="#444")
    s.text(fx - 36, top - 26, "column", 12, "middle", fill="#444")
    s.text(fx - 36, top - 10, "of B", 12, "middle", fill="#444")
    g_ex, t_ex = EXAMPLE_LANE // 4, EXAMPLE_LANE % 4
    for r in range(16):
        y = top + r * cell
        s.text(fx - 100, y + cell / 2 + 5, str(16 * w + r), 12, "middle")
        s.rect(fx - 60, y, 48, cell, "#f3f4f6", "#999", 0.5)
        s.text(fx - 36, y + cell / 2 + 5, str(b_column(0, w, r)), 12, "middle",
               bold=r % 8 == g_ex, fill=HIGHLIGHT if r % 8 == g_ex else "#333")
        for k in range(8):
            lane, reg = first_operand_owner(r, k)
            x = fx + k * cell
            s.rect(x, y, cell, cell, COLORS[lane // 4], "#555", 0.5)
            s.text(x + cell / 2, y + 15, f"T{lane}", 12, "middle")
            s.text(x + cell / 2, y + 30, reg, 11, "middle", fill="#444")
            if lane == EXAMPLE_LANE:
                s.rect(x + 1.5, y + 1.5, cell - 3, cell - 3, "none", HIGHLIGHT, 2.5)
        for c in range(8):
            lane, reg = accumulator_owner(r, c)
            x = acx + c * cell
            s.rect(x, y, cell, cell, COLORS[lane // 4], "#555", 0.5)
            s.text(x + cell / 2, y + 15, f"T{lane}", 12, "middle")
            s.text(x + cell / 2, y + 30, reg, 11, "middle", fill="#444")
            if lane == EXAMPLE_LANE:
                s.rect(x + 1.5, y + 1.5, cell - 3, cell - 3, "none", HIGHLIGHT, 2.5)
    s.rect(fx, top, 8 * cell, 16 * cell, "none", "#333", 1.2)
    s.rect(acx, top, 8 * cell, 16 * cell, "none", "#333", 1.2)
    s.text(acx + 8 * cell + 14, top + 8 * cell - 8, "j = 1 …", 12)
    s.text(acx + 8 * cell + 14, top + 8 * cell + 10, "BM/8 − 1:", 12)
    s.text(acx + 8 * cell + 14, top + 8 * cell + 28, "the same", 12)
    s.text(acx + 8 * cell + 14, top + 8 * cell + 46, "lanes, d4 …", 12)

    # The worked example, checked against the kernel's formulas.
    col = fragment_col(g_ex, w % 2)
    assert [b_column(0, w, r) for r in (g_ex, g_ex + 8)] == [col, col + 1]
    notes = [
        ("Tn = lane n of the warp, n = 4g + t; a0–a3, d0–d3: which of its registers; one colour per g.", None),
        ("a0 = (row g, k t), a1 = (row g + 8, k t), a2 = (row g, k t + 4), a3 = (row g + 8, k t + 4).", None),
        ("d[4j + 2h + v] = (row g + 8h, column 8j + 2t + v); column blocks j = 1 … BM/8 − 1 use d4, d5, … .",
         None),
        (f"Column of B: for the first consumer's warp {w} (box {w // 2}, half {w % 2}), from fragment_col; "
         "rows g and g + 8 are neighbours.", None),
        (f"Outlined: lane {EXAMPLE_LANE} (g = {g_ex}, t = {t_ex}) holds B's columns {col} and {col + 1} at k = "
         f"{t_ex} and {t_ex + 4}, and C's rows {2 * t_ex}, {2 * t_ex + 1} at those columns.", HIGHLIGHT),
    ]
    for i, (n, fill) in enumerate(notes):
        s.text(20, top + 16 * cell + 32 + 19 * i, n, 12, fill=fill)
    s.save(directory, "wgmma-fragments.svg")


# ---------------------------------------------------------------------------------------------
# 2. tma-pipeline.svg


def simulate(tiles, copy_time, mma_time, issue_gap):
    """A model of the pipeline: the producer issues copy kt once empty[kt mod STAGES] has
    released use kt/STAGES − 1; a copy lands copy_time later; the consumers multiply tile kt once
    it has landed and tile kt − 1 is done."""
    issue, landed, start, end = [], [], [], []
    for kt in range(tiles):
        t = 0.0 if kt == 0 else issue[kt - 1] + issue_gap
        if kt >= STAGES:
            t = max(t, end[kt - STAGES])
        issue.append(t)
        landed.append(t + copy_time)
        start.append(max(landed[kt], end[kt - 1] if kt else 0.0))
        end.append(start[kt] + mma_time)
    return issue, landed, start, end


def pipeline_figure(directory):
    W, H = 900, 850
    s = legible(W, H, "Step 08: the producer, the copy engine, STAGES buffers with full and empty mbarriers, "
                "and the consumers")
    s.text(W / 2, 26, f"STAGES = {STAGES} buffers in a ring, each with a full and an empty mbarrier", 17, "middle",
           bold=True)
    s.text(W / 2, 47, f"defaults BM = {BM}, BN = {BN}, {THREADS} threads · tile kt goes to buffer s = kt mod STAGES, "
           "as its use u = kt / STAGES", 12, "middle")

    # The producer on the left, the consumers on the right, the copy engine above the ring.
    px, pw, py, ph = 8, 207, 70, 300
    rx, colw, gap = 310, 64, 8
    ring_w = STAGES * colw + (STAGES - 1) * gap
    cx = rx + ring_w + 95
    cw = W - 8 - cx
    top_ring = 130
    row_buf = top_ring + 28
    row_full = row_buf + 122
    row_empty = row_full + 34

    s.rect(rx, py, ring_w, 44, "#cffafe", "#555", 0.8, rx=6)
    s.text(rx + ring_w / 2, py + 19, "copy engine (TMA)", 13, "middle", bold=True)
    s.text(rx + ring_w / 2, py + 36, "global → shared memory, by tensor map", 12, "middle")

    s.rect(rx - 10, top_ring, ring_w + 20, row_empty + 48 - top_ring, "#fafafa", "#999", 0.8, rx=6)
    s.text(rx, top_ring + 19, "shared memory", 12, bold=True)
    for st in range(STAGES):
        x = rx + st * (colw + gap)
        s.rect(x, row_buf, colw, 74, COLORS[0], "#555", 0.6)
        s.text(x + colw / 2, row_buf + 32, f"As[{st}]", 13, "middle")
        s.text(x + colw / 2, row_buf + 50, f"{BM}×{BK}", 11, "middle", fill="#444")
        s.rect(x, row_buf + 74, colw, 38, COLORS[2], "#555", 0.6)
        s.text(x + colw / 2, row_buf + 91, f"Bs[{st}]", 12, "middle")
        s.text(x + colw / 2, row_buf + 106, f"{BK}×{BN}", 11, "middle", fill="#444")
        s.rect(x, row_full, colw, 24, "#dcfce7", "#555", 0.8, rx=4)
        s.text(x + colw / 2, row_full + 17, f"full[{st}]", 12, "middle")
        s.rect(x, row_empty, colw, 24, "#fee2e2", "#555", 0.8, rx=4)
        s.text(x + colw / 2, row_empty + 17, f"empty[{st}]", 12, "middle")
        s.text(x + colw / 2, row_empty + 41, f"buffer {st}", 12, "middle", fill="#444")
    # tile kt + STAGES comes back to the buffer of tile kt
    last = rx + (STAGES - 1) * (colw + gap) + colw / 2
    yb = row_empty + 48
    s.path(f"M{last},{yb + 2} C{last},{yb + 24} {rx + colw / 2},{yb + 24} {rx + colw / 2},{yb + 4}",
           stroke="#777", width=1, arrow=True)
    s.text(rx + ring_w / 2, yb + 38, f"tile kt + {STAGES} refills the buffer of tile kt", 12, "middle", fill="#444")

    # Data: copy engine down into the buffers, buffers out to the consumers.
    teal, green, red = "#0e7490", "#15803d", "#b91c1c"
    s.line(rx + ring_w / 2, py + 44, rx + ring_w / 2, row_buf - 2, stroke=teal, width=2.5, arrow=True)
    s.line(rx + ring_w + 10, row_buf + 56, cx - 2, row_buf + 56, stroke=teal, width=2.5, arrow=True)
    s.text(rx + ring_w + 16, row_buf + 47, "wgmma: As[s]", 11, fill=teal)
    s.text(rx + ring_w + 16, row_buf + 72, "loads: Bs[s]", 11, fill=teal)

    # Signals.
    s.line(px + pw, py + 22, rx - 2, py + 22, arrow=True)
    s.text(px + pw + 6, py + 15, "issues copies", 11)
    s.line(px + pw, row_full + 12, rx - 12, row_full + 12, stroke=green, arrow=True)
    s.text(px + pw + 6, row_full + 5, "expect_tx", 11, fill=green)
    s.path(f"M{rx + 14},{py + 44} L{rx + 14},{py + 54} L{rx - 24},{py + 54} L{rx - 24},{row_full + 4} "
           f"L{rx - 12},{row_full + 4}", stroke=teal, width=1, dash="4 3", arrow=True)
    s.text(rx - 29, (py + 54 + row_full) / 2, "bytes land on full[s]", 11, "middle", fill=teal, rotate=True)
    s.line(rx - 10, row_empty + 12, px + pw + 2, row_empty + 12, stroke=red, arrow=True)
    s.text(px + pw + 6, row_empty + 29, "wait empty[s]", 11, fill=red)
    s.line(rx + ring_w + 10, row_full + 12, cx - 2, row_full + 12, stroke=green, arrow=True)
    s.text(rx + ring_w + 16, row_full + 5, "wait full[s]", 11, fill=green)
    s.line(cx, row_empty + 12, rx + ring_w + 12, row_empty + 12, stroke=red, arrow=True)
    s.text(rx + ring_w + 16, row_empty + 29, "arrive", 11, fill=red)

    # The two kinds of warpgroup.
    buffer_bytes = f"{BUFFER_BYTES:,}".replace(",", " ")
    for bx, bw, lines in ((px, pw, [("producer warpgroup", True), (f"warps 0–3, {PRODUCER_REGS} registers", False),
                                    ("thread 0 alone works.", False), ("For each tile kt:", False),
                                    ("1. wait empty[s], parity", False),
                                    (f"    (u − 1) mod 2, if kt ≥ {STAGES}", False),
                                    ("2. expect_tx on full[s]:", False), (f"    {buffer_bytes} bytes", False),
                                    ("3. copy A's tile → As[s]", False),
                                    (f"    and {BN // 32} boxes of B → Bs[s]", False)]),
                          (cx, cw, [(f"{CONSUMERS} consumer warpgroups", True),
                                    (f"warps 4–{4 * CONSUMERS + 3}, {CONSUMER_REGS} registers", False),
                                    ("each a 64-column strip of C.", False), ("For each tile kt:", False),
                                    ("1. wait full[s],", False), ("    parity u mod 2", False),
                                    ("2. load Bᵀ fragments", False), (f"3. {BK // 8} × wgmma on As[s],", False),
                                    ("    commit, wait", False), ("4. lane 0 of each warp:", False),
                                    ("    arrive on empty[s]", False)])):
        s.rect(bx, py, bw, ph, "#f3f4f6", "#555", 0.8, rx=6)
        for i, (line, bold) in enumerate(lines):
            indent = 4 * (len(line) - len(line.lstrip()))
            s.text(bx + 10 + indent, py + 24 + 24 * i, line.lstrip(), 13 if bold else 12, bold=bold)

    ny = yb + 78
    s.text(W / 2, ny, f"full[s] completes after 1 arrival (the producer's expect_tx) and all {buffer_bytes} bytes; "
           f"empty[s] after {4 * CONSUMERS} arrivals,", 12, "middle")
    s.text(W / 2, ny + 19, "one per consumer warp. A barrier's phases alternate, so each wait names the parity of "
           "the use it waits for.", 12, "middle")

    # The timeline of a model.
    tiles, copy_time, mma_time = 10, 3.0, 2.0
    issue, landed, start, end = simulate(tiles, copy_time, mma_time, 0.2)
    tx, unit, rowh = 100, 32, 32
    ty = ny + 80
    assert tx + unit * (end[-1] + 0.3) <= W - 8
    s.text(W / 2, ty - 28, f"Over time, in a model: the copies run up to STAGES = {STAGES} tiles ahead of the "
           "multiplies", 14, "middle", bold=True)
    labels = ["producer"] + [f"buffer {st}" for st in range(STAGES)] + ["consumers"]
    for i, lab in enumerate(labels):
        s.text(tx - 10, ty + i * rowh + 17, lab, 12, "end")
        s.line(tx, ty + i * rowh + rowh - 4, tx + unit * (end[-1] + 0.3), ty + i * rowh + rowh - 4, stroke="#ddd",
               width=0.5)
    for kt in range(tiles):
        st = kt % STAGES
        y = ty + (1 + st) * rowh
        s.rect(tx + unit * issue[kt], y, unit * copy_time, 24, COLORS[0], "#555", 0.6)
        s.text(tx + unit * (issue[kt] + copy_time / 2), y + 17, f"copy {kt}", 12, "middle")
        if start[kt] > landed[kt]:
            s.rect(tx + unit * landed[kt], y, unit * (start[kt] - landed[kt]), 24, "#fef9c3", "#555", 0.6)
        s.rect(tx + unit * start[kt], y, unit * mma_time, 24, COLORS[1], "#555", 0.6)
        s.text(tx + unit * (start[kt] + mma_time / 2), y + 17, f"wgmma {kt}", 11, "middle")
        yc = ty + (1 + STAGES) * rowh
        s.rect(tx + unit * start[kt], yc, unit * mma_time, 24, COLORS[1], "#555", 0.6)
        s.text(tx + unit * (start[kt] + mma_time / 2), yc + 17, f"tile {kt}", 12, "middle")
        if kt >= STAGES:
            # the multiply of tile kt − STAGES completes empty[s]; the producer then issues copy kt
            xe = tx + unit * end[kt - STAGES]
            s.line(xe, y - 4, xe, y + 28, stroke=red, width=2.5)
        # the producer: a tick per copy issued, a bar while it waits on empty[s]
        x = tx + unit * issue[kt]
        s.line(x, ty + 3, x, ty + 25, stroke=DARK, width=1.5)
        if kt >= STAGES and issue[kt] - issue[kt - 1] > 0.3:
            s.rect(tx + unit * issue[kt - 1] + 3, ty + 9, unit * (issue[kt] - issue[kt - 1]) - 6, 12, "#e5e7eb",
                   "#999", 0.5)
    # a moment when the ring is full
    moment = start[1] + 0.1
    held = [kt for kt in range(tiles) if issue[kt] <= moment < end[kt]]
    x = tx + unit * moment
    ybot = ty + (2 + STAGES) * rowh
    s.line(x, ty - 8, x, ybot + 2, stroke=HIGHLIGHT, width=1, dash="4 3")
    s.text(x + 4, ybot + 17, f"here tiles {held[0]}–{held[-1]} occupy the buffers: {len(held)} = STAGES, "
           "as far ahead as the ring allows", 12, fill=HIGHLIGHT)
    ly = ybot + 38
    items = [(COLORS[0], "copy in flight (TMA)"), ("#fef9c3", "landed (full[s] complete), not yet used"),
             (COLORS[1], "consumers multiply (wgmma)"), ("#e5e7eb", "producer waits on empty[s]")]
    for i, (fill, lab) in enumerate(items):
        x, y = tx + 300 * (i % 2), ly + 22 * (i // 2)
        s.rect(x, y, 15, 15, fill, "#555", 0.6)
        s.text(x + 21, y + 12, lab, 12)
    x, y = tx + 590, ly
    s.line(x, y + 1, x, y + 17, stroke=DARK, width=1.5)
    s.text(x + 10, y + 12, "producer issues a copy", 12)
    s.line(x, y + 21, x, y + 39, stroke=red, width=2.5)
    s.text(x + 10, y + 34, "empty[s] completes", 12)
    s.text(tx, ly + 64, f"Model: a copy takes {num(copy_time)} time units, the wgmmas of a tile {num(mma_time)}; "
           "real durations differ, the dependences are the kernel's.", 12, fill="#444")
    s.save(directory, "tma-pipeline.svg")


# ---------------------------------------------------------------------------------------------
# 3. step08-registers.svg


def registers_figure(directory):
    W, H = 900, 330
    s = legible(W, H, "Step 08: the SM's registers at launch and after setmaxnreg")

    def fmt(n):
        return f"{n:,}".replace(",", " ")

    file_regs = 65536
    launch = (file_regs // THREADS) // 8 * 8
    assert BLOCK_REGS == THREADS * launch
    assert 128 * PRODUCER_REGS + CONSUMERS * 128 * CONSUMER_REGS <= BLOCK_REGS
    s.text(W / 2, 26, "setmaxnreg moves registers from the producer to the consumers", 17, "middle", bold=True)
    s.text(W / 2, 47, f"one block of {THREADS} threads per SM; the SM's register file holds {fmt(file_regs)} "
           "registers of 32 bits", 12, "middle")
    x0, bar_w, bar_h = 150, 700, 44
    scale = bar_w / file_regs

    def bar(y, label, parts):
        s.text(x0 - 12, y + bar_h / 2 + 5, label, 13, "end", bold=True)
        x = x0
        for name, regs, fill, inside in parts:
            wd = regs * scale
            s.rect(x, y, wd, bar_h, fill, "#555", 0.8)
            if inside:
                s.text(x + wd / 2, y + 19, name, 12, "middle", bold=True)
                s.text(x + wd / 2, y + 36, inside, 12, "middle")
            x += wd
        return x

    y1 = 110
    s.text(x0, y1 - 14, f"at launch: __launch_bounds__({THREADS}, 1) → ⌊{fmt(file_regs)} / {THREADS}⌋ = "
           f"{file_regs // THREADS}, down to a multiple of 8: {launch} a thread", 12)
    parts = [("producer", 128 * launch, "#e5e7eb", f"128 × {launch} = {fmt(128 * launch)}")]
    parts += [(f"consumer {c + 1}", 128 * launch, COLORS[1], f"128 × {launch} = {fmt(128 * launch)}")
              for c in range(CONSUMERS)]
    parts.append(("", file_regs - BLOCK_REGS, "white", None))
    bar(y1, "at launch", parts)
    s.text(x0 + bar_w, y1 + bar_h + 17, f"{fmt(BLOCK_REGS)} in use, {fmt(file_regs - BLOCK_REGS)} unused "
           "(the white end)", 12, "end", fill="#444")

    y2 = 230
    s.text(x0, y2 - 14, f"after setmaxnreg: producer .dec {PRODUCER_REGS}, consumers .inc {CONSUMER_REGS} "
           f"= ({fmt(BLOCK_REGS)} − 128·{PRODUCER_REGS}) / ({CONSUMERS}·128)", 12)
    parts = [("", 128 * PRODUCER_REGS, "#e5e7eb", None)]
    parts += [(f"consumer {c + 1}", 128 * CONSUMER_REGS, COLORS[1], f"128 × {CONSUMER_REGS} = "
               f"{fmt(128 * CONSUMER_REGS)}") for c in range(CONSUMERS)]
    parts.append(("", file_regs - BLOCK_REGS, "white", None))
    bar(y2, "after", parts)
    s.text(x0, y2 + bar_h + 18, f"producer: 128 × {PRODUCER_REGS} = {fmt(128 * PRODUCER_REGS)}", 12)
    given = 128 * (launch - PRODUCER_REGS)
    taken = 128 * (CONSUMER_REGS - launch)
    s.text(x0, y2 + bar_h + 38, f"The producer gives up 128 × ({launch} − {PRODUCER_REGS}) = {fmt(given)}; "
           f"each consumer takes 128 × ({CONSUMER_REGS} − {launch}) = {fmt(taken)}; "
           f"{fmt(given)} = {CONSUMERS} × {fmt(taken)}.", 12, fill=HIGHLIGHT)
    assert given == CONSUMERS * taken
    s.save(directory, "step08-registers.svg")


# ---------------------------------------------------------------------------------------------
# 4. swizzle-128b.svg


def stored_place(piece, row):
    return piece ^ (row % 8)


def swizzle_figure(directory):
    W, H = 900, 712
    s = legible(W, H, "Step 08: the 128-byte swizzle, and one element's address before and after it")
    s.text(W / 2, 26, "The 128-byte swizzle: piece p of row r is stored at place p ⊕ (r mod 8)", 17, "middle",
           bold=True)
    s.text(W / 2, 47, "a row of a tile: 128 bytes = 32 floats = 8 pieces of 16 bytes (4 floats); colour and "
           "number: the piece as the matrix has it", 12, "middle")
    cw, ch, top = 44, 30, 110
    r_ex, p_ex = EXAMPLE_ROW, EXAMPLE_COL // 4
    grids = ((80, "as the matrix has it", "piece", False), (515, "as the copy engine stores it", "place", True))
    for gx, title, unit, stored in grids:
        s.text(gx + 4 * cw, top - 36, title, 14, "middle", bold=True)
        s.text(gx + 4 * cw, top - 12, f"{unit} (16 bytes each) →", 12, "middle", fill="#444")
        for r in range(8):
            if not stored:
                s.text(gx - 10, top + r * ch + ch / 2 + 5, f"row {r}", 12, "end")
            for q in range(8):
                piece = q ^ (r % 8) if stored else q
                if stored:
                    assert stored_place(piece, r) == q
                x, y = gx + q * cw, top + r * ch
                s.rect(x, y, cw, ch, COLORS[piece], "#555", 0.5)
                s.text(x + cw / 2, y + ch / 2 + 5, str(piece), 14, "middle")
                if r == r_ex and piece == p_ex:
                    s.rect(x + 1.5, y + 1.5, cw - 3, ch - 3, "none", HIGHLIGHT, 3)
        for q in range(8):
            s.text(gx + q * cw + cw / 2, top + 8 * ch + 17, f"{16 * q}", 11, "middle", fill="#444")
        s.text(gx + 4 * cw, top + 8 * ch + 34, "byte offset of the place in the row", 11, "middle", fill="#444")
    s.line(80 + 8 * cw + 14, top + 4 * ch, 515 - 14, top + 4 * ch, arrow=True, width=1.5)
    s.text((80 + 8 * cw + 515) / 2, top + 4 * ch - 10, "p → p ⊕ r", 13, "middle")
    s.text(W / 2, top + 8 * ch + 62, "Rows 8–15, 16–23, … repeat rows 0–7: the pattern covers 8 rows of 128 "
           "bytes, 1024 bytes.", 12, "middle")

    # The worked example, bit by bit.
    logical = 4 * (32 * r_ex + EXAMPLE_COL)
    stored = logical ^ (((logical >> 7) & 7) << 4)
    assert stored == 4 * (32 * r_ex + 4 * stored_place(p_ex, r_ex) + EXAMPLE_COL % 4)
    y0 = top + 8 * ch + 108
    s.text(W / 2, y0, f"Outlined: A's tile, row {r_ex}, column {EXAMPLE_COL} (piece {p_ex}, float {EXAMPLE_COL % 4} "
           f"of it): byte {logical} of the tile becomes byte {stored}", 14, "middle", bold=True, fill=HIGHLIGHT)
    bw, bh, bx = 44, 32, 230
    groups = [(9, 7, "row mod 8"), (6, 4, "piece"), (3, 0, "byte in the piece")]
    fills = {9: COLORS[4], 8: COLORS[4], 7: COLORS[4], 6: COLORS[6], 5: COLORS[6], 4: COLORS[6]}

    def x_of(b):
        return bx + (9 - b) * bw + (10 if b < 7 else 0) + (10 if b < 4 else 0)

    def bits(y, value, name):
        s.text(bx - 14, y + bh / 2 + 5, name, 13, "end")
        for b in range(9, -1, -1):
            s.rect(x_of(b), y, bw, bh, fills.get(b, "#f3f4f6"), "#555", 0.6)
            s.text(x_of(b) + bw / 2, y + bh / 2 + 6, str((value >> b) & 1), 16, "middle", mono=True)
        s.text(x_of(0) + bw + 16, y + bh / 2 + 6, f"= byte {value}", 14, mono=True)

    yb = y0 + 52
    for hi, lo, lab in groups:
        xm = (x_of(hi) + x_of(lo) + bw) / 2
        s.text(xm, yb - 18, f"bits {hi}–{lo}", 12, "middle", fill="#444")
        s.text(xm, yb - 2, lab, 12, "middle", fill="#444")
    bits(yb + 6, logical, "before")
    bits(yb + 6 + bh + 40, stored, "after")
    xm = (x_of(6) + x_of(4) + bw) / 2
    s.text(xm, yb + 6 + bh + 27, f"{p_ex:03b} ⊕ {r_ex:03b} = {stored_place(p_ex, r_ex):03b}", 14, "middle",
           bold=True, fill=HIGHLIGHT, mono=True)
    s.text(x_of(0) + bw + 16, yb + 6 + bh + 27, f"piece {p_ex} goes to place {stored_place(p_ex, r_ex)}", 12,
           fill=HIGHLIGHT)
    s.text(W / 2, yb + 2 * bh + 96, "The copy engine writes this permutation (the tensor map's 128-byte swizzle); "
           "wgmma undoes it for A's tile", 12, "middle")
    s.text(W / 2, yb + 2 * bh + 115, "(the descriptor's swizzle mode) and the consumers' loads for B's tile "
           "(load_pair). Tiles start on 1024-byte boundaries.", 12, "middle")
    s.save(directory, "swizzle-128b.svg")


# ---------------------------------------------------------------------------------------------
# 5. step08-fragment-loads.svg


def half_warp_banks(piece_of_g, row_offset=0):
    """Banks hit by the 8-byte loads of lanes 0–15 (g = 0..3, t = 0..3): lane 4g + t reads row
    t + row_offset of the box, floats col % 4 and col % 4 + 1 of its piece."""
    hits = {}
    for g in range(4):
        for t in range(4):
            piece, sub = piece_of_g(g)
            row = t + row_offset
            for f in (sub, sub + 1):
                bank = 4 * stored_place(piece, row) + f
                hits.setdefault(bank, []).append(4 * g + t)
    return hits


def kernel_piece(g, half=0):
    col = fragment_col(g, half)
    return col // 4, col % 4


def neighbour_piece(g):
    """The alternative the chapter rules out: 8 floats as one pair of neighbouring pieces."""
    col = 4 * (g // 2) + 2 * (g % 2)
    return col // 4, col % 4


def fragment_loads_figure(directory):
    W, H = 900, 850
    s = legible(W, H, "Step 08: the columns fragment_col gives each lane, and the banks half a warp's 8-byte "
                "loads hit")
    s.text(W / 2, 26, "fragment_col: which columns of B's box each lane loads", 17, "middle", bold=True)
    s.text(W / 2, 47, "piece = 2·half + ⌊g/4⌋ + 4·(⌊g/2⌋ mod 2),  column = 4·piece + 2·(g mod 2): "
           "the lane loads that column and the next", 12, "middle")

    # The table of fragment_col.
    tx, ty, cw, rh = 190, 70, 64, 24
    rows = [("g", [str(g) for g in range(8)], True)]
    for half in (0, 1):
        rows.append((f"piece, half {half}", [str(fragment_col(g, half) // 4) for g in range(8)], False))
        rows.append((f"column, half {half}", [str(fragment_col(g, half)) for g in range(8)], False))
    for i, (name, cells, head) in enumerate(rows):
        y = ty + i * rh
        s.text(tx - 10, y + 17, name, 12, "end", bold=head)
        for g, v in enumerate(cells):
            fill = "#e5e7eb" if head else COLORS[g // 2] if "piece" in name else "white"
            s.rect(tx + g * cw, y, cw, rh, fill, "#777", 0.5)
            s.text(tx + g * cw + cw / 2, y + 17, v, 12, "middle", bold=head)
    s.text(tx + 8 * cw + 14, ty + 2 * rh, "half = warp mod 2: the two", 12, fill="#444")
    s.text(tx + 8 * cw + 14, ty + 2 * rh + 18, "warps reading one box", 12, fill="#444")
    s.text(tx + 8 * cw + 14, ty + 2 * rh + 36, "share its 8 pieces", 12, fill="#444")

    bw, rowh = 24, 40
    panels = [("The kernel's fragment_col, warp 0 (half 0): lanes 0–15 load row t = 0…3, pieces "
               + ", ".join(str(kernel_piece(g)[0]) for g in range(4)) + " for g = 0…3", kernel_piece),
              ("Ruled out, neighbouring pieces: pieces "
               + ", ".join(str(neighbour_piece(g)[0]) for g in range(4)) + " for g = 0…3", neighbour_piece)]
    py = ty + 5 * rh + 76
    gx = 100
    for title, piece_of_g in panels:
        s.text(W / 2, py - 40, title, 13, "middle", bold=True)
        for q in range(8):
            s.text(gx + 4 * q * bw + 2 * bw, py - 8, f"place {q}", 12, "middle", fill="#444")
        hits = half_warp_banks(piece_of_g)
        for t in range(4):
            y = py + t * rowh
            s.text(gx - 10, y + rowh / 2 + 5, f"row {t}", 12, "end")
            for bank in range(32):
                s.rect(gx + bank * bw, y, bw, rowh, "white", "#ccc", 0.4)
            for q in range(8):
                s.rect(gx + 4 * q * bw, y, 4 * bw, rowh, "none", "#555", 0.8)
            for g in range(4):
                piece, sub = piece_of_g(g)
                q = stored_place(piece, t)
                x = gx + (4 * q + sub) * bw
                s.rect(x + 1, y + 2, 2 * bw - 2, rowh - 4, COLORS[g], "#555", 0.6)
                s.text(x + bw, y + 17, f"T{4 * g + t}", 12, "middle")
                s.text(x + bw, y + 32, f"piece {piece}", 11, "middle", fill="#444")
        yb = py + 4 * rowh + 10
        s.text(gx - 10, yb + 10, "lanes", 12, "end")
        s.text(gx - 10, yb + 24, "per bank", 12, "end")
        for bank in range(32):
            n = len(hits.get(bank, []))
            fill = {0: "#f3f4f6", 1: "#dcfce7"}.get(n, "#fca5a5")
            s.rect(gx + bank * bw, yb, bw, 22, fill, "#777", 0.5)
            s.text(gx + bank * bw + bw / 2, yb + 16, str(n), 12, "middle")
        passes = max(len(v) for v in hits.values())
        verdict = (f"{len(hits)} banks, each once: one pass" if passes == 1 else
                   f"{len(hits)} banks, {passes} lanes each: {passes} passes")
        s.text(gx + 16 * bw, yb + 46, verdict, 13, "middle", bold=True, fill="#15803d" if passes == 1 else "#b91c1c")
        if passes == 1:
            # the kernel's other loads: rows t + 4 (a2, a3), lanes 16–31 and the box's other half
            for half in (0, 1):
                for g0 in (0, 4):
                    for off in (0, 4, 8, 12, 16, 20, 24, 28):
                        h = half_warp_banks(lambda g: kernel_piece(g + g0, half), off)
                        assert len(h) == 32 and all(len(v) == 1 for v in h.values())
        py = yb + 120
    s.text(20, yb + 84, "Rows t + 4 (the loads of a2, a3) swap the two halves of the row; lanes 16–31 "
           "(g = 4…7) take pieces p + 1 and p + 5;", 12)
    s.text(20, yb + 104, "the box's other warp (half 1) pieces 2, 3, 6, 7: in every case each half-warp load takes "
           "one pass.", 12)
    s.save(directory, "step08-fragment-loads.svg")


# ---------------------------------------------------------------------------------------------
# 6. tf32-split.svg


def f32_bits(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


def f32_from_bits(b):
    return struct.unpack("<f", struct.pack("<I", b))[0]


def f32(x):
    return f32_from_bits(f32_bits(x))


def tf32(x):
    """cvt.rna.tf32.f32: round the magnitude to 10 mantissa bits, ties away from zero (finite x)."""
    b = f32_bits(x)
    sign, mag = b & 0x80000000, b & 0x7FFFFFFF
    mag = (mag + 0x1000) & ~0x1FFF
    return f32_from_bits(sign | mag)


def sci(v, digits=8):
    return f"{v:.{digits}g}" if v else "0"


def pow2(e):
    sup = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")
    return "2" + str(e).translate(sup)


def binary_digits(v, hi, lo):
    """Binary digits of |v| at the positions 2^hi … 2^lo; v must be a multiple of 2^lo."""
    q = abs(Fraction(v)) / Fraction(2) ** lo
    assert q.denominator == 1 and q < 2 ** (hi - lo + 1)
    n = int(q)
    return [(n >> (p - lo)) & 1 for p in range(hi, lo - 1, -1)]


def split_figure(directory):
    W, H = 900, 790
    s = legible(W, H, "Step 09: an FP32 value split into two TF32 numbers, and the three products the kernel issues")
    x = f32(math.pi)
    big = tf32(x)
    diff = f32(x - big)
    assert Fraction(diff) == Fraction(x) - Fraction(big), "x − big is exact in FP32"
    small = tf32(diff)
    rest = Fraction(x) - Fraction(big) - Fraction(small)
    ex = math.frexp(x)[1] - 1  # x = 1.m · 2^ex

    s.text(W / 2, 26, "x = big + small + r:  big = tf32(x),  small = tf32(x − big)", 16, "middle", bold=True)
    s.text(W / 2, 45, "worked example: x = π as float32; tf32() rounds the magnitude to 10 mantissa bits, ties away "
           "from zero, as cvt.rna.tf32.f32 does", 11, "middle")

    # FP32 bit patterns.
    cw, ch, bx, top = 16, 22, 170, 112
    s.text(bx + 16 * cw, top - 40, "the FP32 bits", 13, "middle", bold=True)
    spans = [(0, 1, "sign"), (1, 9, "exponent (8)"), (9, 19, "mantissa: 10 bits TF32 keeps"),
             (19, 32, "13 bits TF32 drops")]
    for a, b, lab in spans:
        xa, xb = bx + a * cw + 1, bx + b * cw - 1
        s.path(f"M{xa},{top - 6} L{xa},{top - 12} L{xb},{top - 12} L{xb},{top - 6}", stroke="#777", width=0.8)
        s.text((xa + xb) / 2, top - 16, lab, 11, "middle", fill="#444")
    rows = [("x", x), ("big = tf32(x)", big), ("x − big (exact)", diff), ("small = tf32(x − big)", small)]
    for i, (name, v) in enumerate(rows):
        y = top + i * (ch + 12)
        b = f32_bits(v)
        s.text(bx - 10, y + 15, name, 11, "end", bold=i in (1, 3))
        for k in range(32):
            bit = (b >> (31 - k)) & 1
            fill = "#fee2e2" if k == 0 else "#ede9fe" if k < 9 else COLORS[0] if k < 19 else "#f3f4f6"
            s.rect(bx + k * cw, y, cw, ch, fill, "#555", 0.5)
            s.text(bx + k * cw + cw / 2, y + 15, str(bit), 11, "middle", mono=True,
                   fill="#999" if k >= 19 and bit == 0 else None)
        e = ((b >> 23) & 0xFF) - 127
        s.text(bx + 32 * cw + 10, y + 11, f"0x{b:08X} = {sci(v, 9)}", 11, mono=True)
        s.text(bx + 32 * cw + 10, y + 24, f"exponent {pow2(e)}", 11, fill="#555")

    # The same numbers by weight: one column per power of two.
    top2 = top + 4 * (ch + 12) + 70
    lo = ex - 23
    cols = list(range(ex, lo - 1, -1))
    cw2, bx2 = 24, 150
    s.text(W / 2, top2 - 44, "the same numbers by weight: x has 24 significant bits, big takes the first 11, small the "
           "next 11", 13, "middle", bold=True)
    for i, p in enumerate(cols):
        s.text(bx2 + i * cw2 + cw2 / 2, top2 - 8, pow2(p), 11, "middle", fill="#555")
    small_top = math.frexp(small)[1] - 1
    def region(p):
        if p > ex - 11:
            return COLORS[0]  # big's 11 bits
        if small_top - 11 < p <= small_top:
            return COLORS[1]  # small's 11 bits
        return "#fee2e2" if p <= small_top - 11 else "white"
    rows2 = [("x", Fraction(x), "all"), ("big", Fraction(big), "all"), ("x − big", Fraction(diff), "from"),
             ("small", Fraction(small), "from"), ("r = x − big − small", rest, "from")]
    notes = {"x": None, "big": f"{sci(big)}: 11 bits", "x − big": f"{sci(diff, 6)}: 12 bits, exact",
             "small": f"{sci(small, 6)}: 11 bits", "r = x − big − small": None}
    for i, (name, v, shown) in enumerate(rows2):
        y = top2 + i * (ch + 8)
        s.text(bx2 - 30, y + 15, name, 11, "end", bold=name in ("big", "small"))
        s.text(bx2 - 14, y + 15, "−" if v < 0 else "+", 12, "middle", bold=True)
        digits = binary_digits(v, ex, lo)
        first = next(p for p, d in zip(cols, digits) if d)
        for k, (p, d) in enumerate(zip(cols, digits)):
            if shown == "from" and p > first:
                s.rect(bx2 + k * cw2, y, cw2, ch, "white", "#ddd", 0.5)
                continue
            fill = region(p)
            if name == "big" and p <= ex - 11 or name == "small" and p <= small_top - 11:
                fill = "white"
            s.rect(bx2 + k * cw2, y, cw2, ch, fill, "#555" if fill != "white" else "#bbb", 0.5)
            s.text(bx2 + k * cw2 + cw2 / 2, y + 15, str(d), 11, "middle", mono=True)
        note = notes[name]
        if name == "x":
            note = f"1.{''.join(map(str, digits[1:6]))}…₂ · {pow2(ex)}"
        if note is None:
            note = f"{float(v):.3g} = {float(v / Fraction(x)):.2g}·x".replace("-", "−")
        s.text(bx2 + len(cols) * cw2 + 10, y + 15, note, 11)
    rel = abs(rest / Fraction(x))
    s.text(60, top2 + 5 * (ch + 8) + 14, f"|x − big| ≤ {pow2(-11)}·|x| and |r| ≤ {pow2(-23)}·|x|: "
           f"here {float(abs(Fraction(diff) / Fraction(x))):.2g}·|x| and {float(rel):.2g}·|x| "
           f"(≈ {pow2(round(math.log2(rel)))}).".replace("e-0", "e−0"), 11)
    s.text(60, top2 + 5 * (ch + 8) + 30, "Two TF32 numbers hold 22 of the 24 bits.", 11)

    # The products.
    top3 = top2 + 5 * (ch + 8) + 86
    s.text(W / 2, top3 - 22, "a·b with both operands split: four products, the kernel issues three", 13, "middle",
           bold=True)
    a, b = f32(math.pi), f32(1 / 3)
    ab, bb = tf32(a), tf32(b)
    as_, bs = tf32(f32(a - ab)), tf32(f32(b - bb))
    exact = Fraction(a) * Fraction(b)
    terms = [("a_big · b_big", Fraction(ab) * Fraction(bb), "3rd: wgmma(part, b_big, a_big, 1)", True),
             ("a_big · b_small", Fraction(ab) * Fraction(bs), "1st: wgmma(part, b_small, a_big, k8)", True),
             ("a_small · b_big", Fraction(as_) * Fraction(bb), "2nd: wgmma(part, b_big, a_small, 1)", True),
             ("a_small · b_small", Fraction(as_) * Fraction(bs), "dropped", False)]
    s.text(60, top3 + 4, "term", 11, bold=True)
    s.text(200, top3 + 4, "size, relative to a·b", 11, bold=True)
    s.text(360, top3 + 4, "here (a = π, b = 1/3)", 11, bold=True)
    s.text(520, top3 + 4, "order in the kernel (B first: Cᵀ = Bᵀ·Aᵀ)", 11, bold=True)
    bounds = ["≈ 1", f"≤ {pow2(-11)}", f"≤ {pow2(-11)}", f"≤ {pow2(-22)}"]
    for i, (name, v, order, kept) in enumerate(terms):
        y = top3 + 12 + i * 26
        s.rect(50, y, W - 100, 24, COLORS[1] if kept and i else COLORS[0] if kept else "#fee2e2", "#999", 0.5)
        s.text(60, y + 16, name, 11.5, mono=True)
        s.text(200, y + 16, bounds[i], 11.5)
        s.text(360, y + 16, f"{float(v / exact):.3g}", 11.5, mono=True)
        s.text(520, y + 16, order, 11, mono=True, fill="#b91c1c" if not kept else None)
    three = sum(v for _, v, _, kept in terms if kept)
    yb = top3 + 12 + 4 * 26 + 24
    err_three = float(abs(three - exact) / exact)
    err_big = float(abs(terms[0][1] - exact) / exact)
    err_f32 = float(abs(Fraction(f32(a * b)) - exact) / exact)
    lines = [
        "Per 8-deep step the kernel issues the two corrections first, then big·big, all into the slice's part (the first "
        "wgmma,",
        "k8 = 0, overwrites it). A product of two TF32 numbers has at most 22 significant bits: exact in FP32.",
        f"Relative error against the exact a·b: big·big alone {err_big:.1e}, the three products {err_three:.1e}, "
        f"one rounded FP32 multiply {err_f32:.1e}:",
        "for one product the split loses more than FP32 does; it wins in long sums, where FP32 rounds K times.",
        f"Bound per product: {pow2(-23)} + {pow2(-23)} (the r terms, times the big parts) + {pow2(-22)} (small·small), "
        f"in all {pow2(-21)}·(1 + {pow2(-12)})·|a·b|."]
    for i, line in enumerate(lines):
        s.text(60, yb + 18 * i, line.replace("e-0", "e−0"), 11)
    s.save(directory, "tf32-split.svg")


# ---------------------------------------------------------------------------------------------
# Step 12's figures, drawn as step 08's (legible: at most COLUMN wide, no text under MIN_FONT).
# Step 12's defaults (step12_persistent_clusters/src/lib.rs): BM, BN, STAGES, BK as step 08's.
GROUP, CLUSTER, C_ROWS = 8, 2, 32
EMPTY_ARRIVALS = 4 * CONSUMERS * CLUSTER


def tile_origin(tile, tiles_m, units_n):
    """kernel.cu's tile_origin: a unit's number to its block-row and unit column."""
    first = tile // (GROUP * units_n) * GROUP
    rows = min(GROUP, tiles_m - first)
    in_group = tile % (GROUP * units_n)
    return first + in_group % rows, in_group // rows


def sharing(units, clusters, k_tiles, min_piece=32):
    """lib.rs's Sharing::new: (whole, share)."""
    rounds, rest = units // clusters, units % clusters
    if rest == 0 or 4 * (clusters - rest) <= clusters * (rounds + 1):
        return units, k_tiles
    share = max(-(-rest * k_tiles // clusters), min_piece)
    if share >= k_tiles:
        return units, k_tiles
    return units - rest, share


def piece(units, clusters, k_tiles, whole, share, c, n):
    """kernel.cu's Schedule::piece: the n-th piece of work of cluster c, (unit, k_begin, k_end)."""
    own = (whole - c + clusters - 1) // clusters if whole > c else 0
    if n < own:
        return c + n * clusters, 0, k_tiles
    first = c * share
    last = min(first + share, (units - whole) * k_tiles)
    frm = first if n == own else (first // k_tiles + 1) * k_tiles
    if n > own + 1 or frm >= last:
        return None
    unit = frm // k_tiles
    to = min(last, (unit + 1) * k_tiles)
    return whole + unit, frm - unit * k_tiles, to - unit * k_tiles


def scheduler_figure(directory):
    size, clusters = 4096, 66
    tiles_m, units_n = size // BM, size // (CLUSTER * BN)
    units = tiles_m * units_n
    cell = 34
    W = 900
    gx, gy = 120, 110
    H = gy + tiles_m * cell + 150
    s = legible(W, H, "Step 12: the order in which the tile scheduler hands out C's units")
    s.text(W / 2, 28, f"The tile scheduler over C at {size}³: {units} units, {clusters} clusters", 17, "middle",
           bold=True)
    s.text(W / 2, 50, f"a unit = {CLUSTER} tiles of {BM}×{BN} side by side; numbered down GROUP = {GROUP} "
           "block-rows, then right; cluster c takes units c, c + 66, …", 12, "middle")
    rounds = ["#dbeafe", "#dcfce7", "#fef9c3", "#fee2e2"]
    for t in range(units):
        r, c = tile_origin(t, tiles_m, units_n)
        x, y = gx + c * cell, gy + r * cell
        s.rect(x, y, cell, cell, rounds[t // clusters], "#777", 0.5)
        s.text(x + cell / 2, y + cell / 2 + 4, str(t), 12, "middle", bold=t < clusters and t % 8 == 0)
    for g in range(0, tiles_m, GROUP):
        s.rect(gx, gy + g * cell, units_n * cell, GROUP * cell, "none", "#333", 2)
    for c in range(units_n):
        s.line(gx + c * cell + cell / 2, gy - 6, gx + c * cell + cell / 2, gy - 6, stroke="#fff")
    s.text(gx + units_n * cell / 2, gy - 14, f"unit columns ({CLUSTER}·BN = {CLUSTER * BN} columns of C each) →",
           12, "middle")
    s.text(gx - 12, gy + tiles_m * cell / 2, f"block-rows (BM = {BM} rows of C each) →", 12, "middle", rotate=True)
    s.text(gx - 40, gy + GROUP * cell / 2, f"GROUP = {GROUP}", 12, "middle", bold=True, rotate=True)
    ly = gy + tiles_m * cell + 30
    for i, col in enumerate(rounds):
        lo, hi = i * clusters, min((i + 1) * clusters, units) - 1
        x = gx + i * 190
        s.rect(x, ly - 13, 18, 18, col, "#777", 0.5)
        s.text(x + 24, ly + 1, f"round {i + 1}: units {lo}–{hi}", 12)
    s.text(gx, ly + 30, f"In each round the {clusters} clusters hold consecutive numbers: about eight block-rows "
           "of A and eight unit columns of B,", 12)
    s.text(gx, ly + 48, f"which stay in L2. The last round has {units - 3 * clusters} units for {clusters} clusters: "
           f"{4 * clusters - units} clusters idle (not enough to cut, lib.rs).", 12)
    s.save(directory, "step12-scheduler.svg")


def multicast_figure(directory):
    """The two copy engines sit between the blocks, engine 0 above engine 1, and both blocks'
    shared memory is listed in the same order (A's box lands at the same place in both): B's
    tile at the top, A's two halves, full[s] between them, empty[s] at the bottom. Engine 1's
    arrow up to its block's B crosses engine 0's arrows, drawn over them on a white edge."""
    W, H = 900, 660
    s = legible(W, H, "Step 12: a cluster's two blocks share A's tile by multicast, one buffer's fill")
    s.text(W / 2, 28, "One buffer's fill in a cluster: each block's copy engine loads half of A and multicasts it", 17,
           "middle", bold=True)
    s.text(W / 2, 50, f"CLUSTER = {CLUSTER}, BM = {BM}, BN = {BN}, BK = {BK}: the unit is two tiles side by side, "
           "with the same rows of A", 12, "middle")
    half = BM // CLUSTER
    teal, grey, green = "#0e7490", "#555", "#15803d"
    bw, top, bh = 250, 70, 440
    block_x = [20, W - 20 - bw]
    ex, ew, eh = 315, 270, 64
    engine_y = [190, 352]  # engine 0 at As[s] half 0's height, engine 1 at half 1's
    box_x, box_w, box_h = 20, bw - 40, 48
    inner = [block_x[0] + box_x + box_w, block_x[1] + box_x]  # the boxes' sides facing the engines
    a_y = [engine_y[0] + 8, engine_y[1] + 8]
    full_y = (a_y[0] + a_y[1]) // 2
    # the same order in both blocks: B at the top, empty[s] at the bottom
    b_y = [a_y[0] - 70, a_y[0] - 70]
    empty_y = [a_y[1] + 70, a_y[1] + 70]
    for b in range(CLUSTER):
        x = block_x[b]
        s.rect(x, top, bw, bh, "#fafafa", "#555", 1, rx=6)
        s.text(x + bw / 2, top + 20, f"block {b} (rank {b}): tile {b} of the unit", 12, "middle", bold=True)
        s.text(x + bw / 2, top + 36, f"C columns {b * BN}–{(b + 1) * BN - 1} of the unit", 11, "middle",
               fill="#444")
        bx = x + box_x
        for a in range(CLUSTER):
            s.rect(bx, a_y[a], box_w, box_h, COLORS[4 * a], "#555", 0.6)
            s.text(bx + box_w / 2, a_y[a] + 19, f"As[s]: A rows {a * half}–{(a + 1) * half - 1}", 12, "middle")
            s.text(bx + box_w / 2, a_y[a] + 37, f"from block {a}'s copy engine", 11, "middle", fill="#444")
        s.rect(bx, b_y[b], box_w, box_h, COLORS[2], "#555", 0.6)
        s.text(bx + box_w / 2, b_y[b] + 19, f"Bs[s]: B columns {b * BN}–{(b + 1) * BN - 1}", 12, "middle")
        s.text(bx + box_w / 2, b_y[b] + 37, f"{BN // 32} boxes by its own copy engine", 11, "middle", fill="#444")
        s.rect(bx, full_y, box_w, box_h, "#dcfce7", green, 1.2, rx=4)
        s.text(bx + box_w / 2, full_y + 19, "full[s]", 12, "middle", bold=True)
        s.text(bx + box_w / 2, full_y + 37, f"expect_tx: 1 arrival + {BUFFER_BYTES // 1024} KiB", 11, "middle")
        s.rect(bx, empty_y[b], box_w, box_h, "#fee2e2", "#b91c1c", 1.2, rx=4)
        s.text(bx + box_w / 2, empty_y[b] + 19, "empty[s]", 12, "middle", bold=True)
        s.text(bx + box_w / 2, empty_y[b] + 37, f"{EMPTY_ARRIVALS} consumer-warp arrivals", 11, "middle")
    for e in range(CLUSTER):
        y = engine_y[e]
        s.rect(ex, y, ew, eh, "#cffafe", "#555", 0.8, rx=6)
        s.text(ex + ew / 2, y + 18, f"copy engine of block {e}", 12, "middle", bold=True)
        s.text(ex + ew / 2, y + 35, "(its producer's thread 0)", 11, "middle", fill="#444")
        s.text(ex + ew / 2, y + 52, "tma_load_multicast, mask 0b11", 11, "middle", fill=teal)
        mid = y + eh / 2 - 8
        # A's box: into both blocks, at the same place
        s.line(ex, mid, inner[0] + 2, a_y[e] + box_h / 2 - 8, stroke=teal, width=1.8, arrow=True)
        s.line(ex + ew, mid, inner[1] - 2, a_y[e] + box_h / 2 - 8, stroke=teal, width=1.8, arrow=True)
        # B's boxes: into its own block only (engine 0 feeds block 0, engine 1 block 1); engine
        # 1's goes up over engine 0's arrows, so it is drawn last (below)
        if e == 0:
            s.line(ex, y + 6, inner[0] + 2, b_y[0] + box_h / 2, stroke=grey, width=1.4, arrow=True)
        # complete_tx: the bytes each block received, on that block's full[s]
        fy = full_y + (14 if e == 0 else box_h - 14)
        cy = y + eh if e == 0 else y
        s.line(ex + 30, cy, inner[0] + 2, fy, stroke=green, width=1.4, arrow=True, dash="5,3")
        s.line(ex + ew - 30, cy, inner[1] - 2, fy, stroke=green, width=1.4, arrow=True, dash="5,3")
    s.text(W / 2, full_y + box_h / 2 + 4, "complete_tx", 12, "middle", fill=green, bold=True)
    up = (ex + ew - 14, engine_y[1], inner[1] - 2, b_y[1] + box_h / 2)
    s.line(*up, stroke="white", width=6)
    s.line(*up, stroke=grey, width=1.4, arrow=True)
    ky = top + bh + 28
    keys = [(teal, None, f"A's box ({half} rows): written into both blocks' As[s] at the same place"),
            (grey, None, f"B's {BN // 32} boxes: into the block's own Bs[s] only"),
            (green, "5,3", "complete_tx: the bytes that landed in a block, counted on that block's full[s]")]
    for i, (col, dash, t) in enumerate(keys):
        s.line(40, ky + 18 * i - 4, 80, ky + 18 * i - 4, stroke=col, width=1.6, arrow=True, dash=dash)
        s.text(90, ky + 18 * i, t, 12)
    s.text(40, ky + 64, "full[s] completes when its producer's expect_tx has arrived and all the buffer's bytes "
           "have landed: its own box of A,", 12)
    s.text(40, ky + 82, "its peer's and its own B. Block b's empty[s] takes lane b of every consumer warp of both "
           f"blocks (the peer's by mapa), {4 * CONSUMERS} + {4 * CONSUMERS} = {EMPTY_ARRIVALS},", 12)
    s.text(40, ky + 100, "once the warp's products of the buffer are done (wgmma.wait_group); the producer waits "
           "on it before refilling buffer s.", 12)
    s.save(directory, "step12-multicast.svg")


def store_figure(directory):
    W, H = 900, 420
    s = legible(W, H, "Step 12: C leaves through shared memory and the copy engine")
    s.text(W / 2, 28, f"The epilogue of one consumer warpgroup: its 64-column strip, {C_ROWS} rows at a time "
           f"(q = 0 … {BM // C_ROWS - 1})", 16, "middle", bold=True)
    boxes = [(20, "registers", ["acc[4j … 4j+3]", f"BM/2 = {BM // 2} floats", "a thread"], "#f3f4f6"),
             (200, "shared memory", ["two boxes of 32×32", "floats, swizzled", "(store_pair)"], COLORS[0]),
             (380, "fence.proxy.async", ["shared::cta, then", "bar.sync: the copy", "engine may read"], COLORS[4]),
             (560, "copy engine", ["thread 0: tma_store", "of both boxes,", "commit_group"], "#cffafe"),
             (740, "global C", [f"{C_ROWS} whole rows", "× 64 columns;", "outside C clipped"], COLORS[2])]
    y = 70
    for x, title, lines, col in boxes:
        s.rect(x, y, 140, 110, col, "#555", 0.8, rx=6)
        s.text(x + 70, y + 24, title, 13, "middle", bold=True)
        for i, t in enumerate(lines):
            s.text(x + 70, y + 50 + 18 * i, t, 12, "middle")
    for i in range(4):
        s.line(20 + 180 * i + 142, y + 55, 20 + 180 * (i + 1) - 2, y + 55, arrow=True, width=2)
    steps = [
        "For each q, in order:",
        "1. thread 0: cp.async.bulk.wait_group.read 0: the copy engine has read the boxes of q − 1;",
        "2. bar.sync (the warpgroup's 128 threads): nobody writes a box before it is free;",
        "3. every thread writes its accumulators of rows 32q … 32q + 31 into the boxes (st.shared);",
        "4. fence.proxy.async.shared::cta: the ordinary writes become visible to the copy engine;",
        "5. bar.sync, then thread 0 hands the two boxes to the copy engine (tma_store, a bulk group each).",
        "Meanwhile the producer fills the buffers of the next tile. Before the block exits, thread 0 of each",
        "warpgroup waits for all its bulk groups (cp.async.bulk.wait_group 0): shared memory must outlive the reads.",
    ]
    for i, t in enumerate(steps):
        s.text(30, 220 + 22 * i, t, 12, bold=i == 0)
    s.save(directory, "step12-store.svg")


def cut_figure(directory):
    M = N = 1024
    K, clusters = 4096, 66
    tiles_m, units_n = M // BM, N // (CLUSTER * BN)
    units, k_tiles = tiles_m * units_n, K // BK
    whole, share = sharing(units, clusters, k_tiles)
    W = 900
    rowh, gx, gy = 22, 110, 100
    H = gy + units * rowh + 190
    s = legible(W, H, "Step 12: the last round cut along K between clusters, and the pieces added")
    s.text(W / 2, 28, f"{M}×{N}×{K}: {units} units of {k_tiles} k-tiles on {clusters} clusters, matmul_cut", 17,
           "middle", bold=True)
    s.text(W / 2, 50, f"lib.rs cuts: whole = {whole}, share = {share} k-tiles; cluster c runs k-tiles "
           f"[{share}c, {share}c + {share}) of the units laid end to end", 12, "middle")
    kw = 520 / k_tiles
    s.text(gx + 260, gy - 12, "k-tiles of the unit →", 12, "middle")
    pieces = {}
    for c in range(clusters):
        for n in range(3):
            p = piece(units, clusters, k_tiles, whole, share, c, n)
            if p:
                pieces.setdefault(p[0], []).append((c, p[1], p[2]))
    idle = [c for c in range(clusters) if piece(units, clusters, k_tiles, whole, share, c, 0) is None]
    for u in range(units):
        y = gy + u * rowh
        s.text(gx - 8, y + 15, f"unit {u}", 12, "end")
        for i, (c, kb, ke) in enumerate(sorted(pieces.get(u, []), key=lambda p: p[1])):
            s.rect(gx + kb * kw, y, (ke - kb) * kw, rowh - 3, COLORS[c % 4], "#555", 0.6)
            s.text(gx + (kb + ke) / 2 * kw, y + 14, f"cluster {c}", 11, "middle")
    ax = gx + 540
    s.text(ax, gy + 15, "Each piece: its sums (one tile per", 12)
    s.text(ax, gy + 33, "block) to the workspace, in register", 12)
    s.text(ax, gy + 51, "order; then one atomic add counts it in", 12)
    s.text(ax, gy + 69, "(release its sums, acquire the others').", 12)
    s.text(ax, gy + 100, "The piece whose count completes the", 12, fill=HIGHLIGHT)
    s.text(ax, gy + 118, "unit's (per block and 64-column strip)", 12, fill=HIGHLIGHT)
    s.text(ax, gy + 136, "adds every piece in the order of K", 12, fill=HIGHLIGHT)
    s.text(ax, gy + 154, "(clusters in order), resets the count", 12, fill=HIGHLIGHT)
    s.text(ax, gy + 172, "and stores C like a whole unit.", 12, fill=HIGHLIGHT)
    s.text(ax, gy + 203, "The others go on to their next piece:", 12)
    s.text(ax, gy + 221, "nobody waits for anybody.", 12)
    if idle:
        s.text(ax, gy + 252, f"Clusters {idle[0]}–{idle[-1]}: no work.", 12, bold=True)
    ny = gy + units * rowh + 30
    notes = [f"A launch that cuts nothing runs matmul, the same body (product<false>) without the pieces' code.",
             f"matmul_cut (product<true>) is launched in its place only when lib.rs cuts: when the idle clusters' "
             "time would exceed",
             f"a quarter of the whole. At 4096³ (256 units, 66 clusters: 58 in the last round) it does not cut.",
             "A run that crosses from one unit into the next makes two pieces; every run gives the same C "
             "whichever piece ends last."]
    for i, t in enumerate(notes):
        s.text(20, ny + 20 * i, t, 12)
    s.save(directory, "step12-cut.svg")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    directory = sys.argv[1]
    wgmma_figure(directory)
    pipeline_figure(directory)
    registers_figure(directory)
    swizzle_figure(directory)
    fragment_loads_figure(directory)
    split_figure(directory)
    scheduler_figure(directory)
    multicast_figure(directory)
    store_figure(directory)
    cut_figure(directory)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Draws the figures of the Hopper chapters (steps 08 and 09) into the directory given:

    wgmma-fragments.svg  step 08: the warpgroup's fragments of wgmma.m64nBMk8 (TF32): which lane
                         holds which element of the 64×8 first operand (Bᵀ) and of the 64×BM
                         accumulator strip (Cᵀ), beside the 8×BM shared-memory operand (Aᵀ)
    tma-pipeline.svg     step 08: the ring of STAGES shared-memory stages with a full and an
                         empty mbarrier each, the producer, the copy engine and the consumers,
                         and a timeline of copies running ahead of the multiplies
    swizzle-128b.svg     step 08: the 128-byte swizzle (piece p of row r stored at place
                         p ⊕ (r mod 8)) and the banks that the consumers' 8-byte loads hit
    tf32-split.svg       step 09: an FP32 value split into big = tf32(x) and small =
                         tf32(x − big), bit by bit, and the three products the kernel issues

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
STAGE_BYTES = 4 * (BM * BK + BK * BN)
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

    def text(self, x, y, s, size=11, anchor="start", bold=False, fill=None, mono=False, rotate=False):
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
    """Column of the block's B tile that row r of this warp's fragment carries."""
    box, half = 2 * consumer + warp // 2, warp % 2
    return 32 * box + fragment_col(r % 8, half) + r // 8


def wgmma_figure(directory):
    W, H = 960, 1010
    s = Svg(W, H, "Step 08: the fragments of wgmma.m64nBMk8 with TF32 operands, for one warpgroup")
    s.text(W / 2, 28, "Cᵀ strip (64 × BM)  +=  Bᵀ fragment (64 × 8)  ·  Aᵀ slice (8 × BM)", 16, "middle", bold=True)
    s.text(W / 2, 48, "one wgmma.m64nBMk8 per 8-deep step and consumer warpgroup: TF32 operands, FP32 accumulators "
           f"(BM = {BM} by default)", 11, "middle")

    # Overview, not to scale across operands: rows 2.5 px, columns of the strips 1.25 px.
    y0, rh = 100, 2.5
    cx, cw = 110, BM * 1.25
    s.text(cx + cw / 2, y0 - 10, "Cᵀ strip (64 × BM): accumulators, registers", 12, "middle", bold=True)
    for w in range(4):
        s.rect(cx, y0 + 16 * w * rh, cw, 16 * rh, "#f4f4f4", "#555", 0.8)
        s.text(cx - 8, y0 + (16 * w + 8) * rh - 2, f"warp {w}", 10, "end")
        s.text(cx - 8, y0 + (16 * w + 8) * rh + 10, f"rows {16 * w}–{16 * w + 15}", 9, "end", fill="#555")
    for j in range(1, BM // 8):
        x = cx + 8 * j * 1.25
        s.line(x, y0, x, y0 + 64 * rh, stroke="#bbb", width=0.4)
    s.rect(cx, y0, 16 * 1.25, 16 * rh, "none", HIGHLIGHT, 1.5)
    s.text(cx + cw / 2, y0 + 64 * rh + 16, "column blocks j = 0 … BM/8 − 1 (8 columns each)", 10, "middle", fill="#555")
    s.text(cx + cw / 2, y0 + 64 * rh + 30, f"each thread: BM/2 accumulators ({BM // 2} at BM = {BM})", 10, "middle",
           fill="#555")

    s.text(cx + cw + 26, y0 + 32 * rh + 5, "+=", 16, "middle", bold=True)
    bx, bw = cx + cw + 52, 8 * 5
    s.text(bx + bw / 2, y0 - 10, "Bᵀ fragment (64 × 8)", 12, "middle", bold=True)
    for w in range(4):
        s.rect(bx, y0 + 16 * w * rh, bw, 16 * rh, COLORS[7], "#555", 0.8)
    s.rect(bx, y0, bw, 16 * rh, "none", HIGHLIGHT, 1.5)
    s.text(bx + bw / 2, y0 + 64 * rh + 16, "registers,", 10, "middle", fill="#555")
    s.text(bx + bw / 2, y0 + 64 * rh + 30, "4 per thread", 10, "middle", fill="#555")

    s.text(bx + bw + 20, y0 + 32 * rh + 5, "·", 20, "middle", bold=True)
    ax, aw, ah = bx + bw + 40, BM * 1.25, 8 * 5
    s.text(ax + aw / 2, y0 - 10, "Aᵀ slice (8 × BM): shared memory", 12, "middle", bold=True)
    s.rect(ax, y0, aw, ah, "#fef9c3", "#555", 0.8)
    s.text(ax + aw / 2, y0 + ah / 2 + 4, "k = 0 … 7 down, m = 0 … BM − 1 across", 10, "middle", fill="#555")
    for i, line in enumerate(["read by wgmma itself, through the 64-bit descriptor",
                              "(address, 1024 bytes between 8-row groups, 128-byte swizzle);",
                              "column m of the slice = 8 consecutive k of row m of A's tile,",
                              "which is why A's tile, K-major as it lies, can be this operand"]):
        s.text(ax, y0 + ah + 22 + 15 * i, line, 10, fill="#444")
    s.text(ax, y0 + ah + 22 + 15 * 4 + 8, "outlined: the part drawn cell by cell below", 10, fill=HIGHLIGHT)

    # One warp, cell by cell.
    cell, top = 30, 400
    fx = 112
    acx = fx + 8 * cell + 50
    s.text(fx + 4 * cell, top - 48, "warp w, first operand (rows 16w … 16w+15)", 12, "middle", bold=True)
    s.text(acx + 8 * cell, top - 48, "warp w, accumulators: the same rows, columns 0–15 of the strip", 12, "middle",
           bold=True)
    s.text(fx + 4 * cell, top - 22, "k →", 10, "middle")
    for k in range(8):
        s.text(fx + k * cell + cell / 2, top - 6, str(k), 9, "middle", fill="#555")
    for j in range(2):
        x = acx + 8 * j * cell
        s.path(f"M{x + 2},{top - 30} L{x + 2},{top - 26} L{x + 8 * cell - 2},{top - 26} L{x + 8 * cell - 2},{top - 30}",
               stroke="#777", width=0.8)
        s.text(x + 4 * cell, top - 32, f"j = {j}", 10, "middle")
    for c in range(16):
        s.text(acx + c * cell + cell / 2, top - 6, str(c), 9, "middle", fill="#555")
    s.text(fx - 72, top - 6, "row", 9, "middle", fill="#555")
    s.text(fx - 30, top - 18, "column", 9, "middle", fill="#555")
    s.text(fx - 30, top - 6, "of B", 9, "middle", fill="#555")
    for r in range(16):
        y = top + r * cell
        s.text(fx - 72, y + cell / 2 + 4, str(r), 10, "middle")
        s.rect(fx - 48, y, 36, cell, "#f3f4f6", "#999", 0.5)
        s.text(fx - 30, y + cell / 2 + 4, str(b_column(0, 0, r)), 10, "middle", fill="#444")
        for k in range(8):
            lane, reg = first_operand_owner(r, k)
            x = fx + k * cell
            s.rect(x, y, cell, cell, COLORS[lane // 4], "#555", 0.5)
            s.text(x + cell / 2, y + 13, f"T{lane}", 10, "middle")
            s.text(x + cell / 2, y + 25, reg, 9, "middle", fill="#444")
        for c in range(16):
            lane, reg = accumulator_owner(r, c)
            x = acx + c * cell
            s.rect(x, y, cell, cell, COLORS[lane // 4], "#555", 0.5)
            s.text(x + cell / 2, y + 13, f"T{lane}", 10, "middle")
            s.text(x + cell / 2, y + 25, reg, 9, "middle", fill="#444")
    s.rect(fx, top, 8 * cell, 16 * cell, "none", HIGHLIGHT, 1.5)
    s.rect(acx, top, 16 * cell, 16 * cell, "none", HIGHLIGHT, 1.5)
    s.text(acx + 16 * cell + 24, top + 8 * cell, "…", 18, "middle")
    s.text(acx + 16 * cell + 24, top + 8 * cell + 18, "j = 2 …", 9, "middle", fill="#555")
    s.text(acx + 16 * cell + 24, top + 8 * cell + 30, "BM/8 − 1", 9, "middle", fill="#555")

    notes = [
        "Tn = lane n of the warp, n = 4g + t; a0–a3 and d0–d7 = which of its registers; one colour per g, "
        "as in step 07.",
        "a0 = (row g, k t), a1 = (row g+8, k t), a2 = (row g, k t+4), a3 = (row g+8, k t+4): mma.sync's A fragment, "
        "once per warp.",
        "d[4j + 2h + v] = (row g + 8h, column 8j + 2t + v), so columns 16 … BM − 1 repeat the pattern with d8, d9, … "
        "up to d[BM/2 − 1].",
        "Column of B: which column of the block's B tile each row carries, for warp 0 of the first consumer "
        "(fragment_col);",
        "rows g and g + 8 are neighbouring columns, so one 8-byte load gives a0 and a1, another a2 and a3.",
    ]
    for i, n in enumerate(notes):
        s.text(40, top + 16 * cell + 30 + 17 * i, n, 11)
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
    W, H = 960, 780
    s = Svg(W, H, "Step 08: the producer, the copy engine, STAGES stages with full and empty mbarriers, and the consumers")
    s.text(W / 2, 26, f"STAGES = {STAGES} stages in a ring, each with a full and an empty mbarrier", 16, "middle",
           bold=True)
    s.text(W / 2, 45, f"defaults BM = {BM}, BN = {BN}, {THREADS} threads; tile kt goes to stage s = kt mod STAGES, "
           "as that stage's use number u = kt / STAGES", 11, "middle")

    # The producer on the left, the consumers on the right, the copy engine above the ring.
    px, pw, py, ph = 14, 222, 66, 262
    rx, colw, gap = 346, 64, 8
    ring_w = STAGES * colw + (STAGES - 1) * gap
    cx = rx + ring_w + 100
    cw = W - 12 - cx
    top_ring = 124
    row_buf = top_ring + 26
    row_full = row_buf + 118
    row_empty = row_full + 32

    s.rect(rx, py, ring_w, 40, "#cffafe", "#555", 0.8, rx=6)
    s.text(rx + ring_w / 2, py + 17, "copy engine (TMA)", 12, "middle", bold=True)
    s.text(rx + ring_w / 2, py + 32, "global → shared memory, by tensor map", 10, "middle")

    s.rect(rx - 10, top_ring, ring_w + 20, row_empty + 44 - top_ring, "#fafafa", "#999", 0.8, rx=6)
    s.text(rx, top_ring + 17, "shared memory", 11, bold=True)
    for st in range(STAGES):
        x = rx + st * (colw + gap)
        s.rect(x, row_buf, colw, 72, COLORS[0], "#555", 0.6)
        s.text(x + colw / 2, row_buf + 30, f"As[{st}]", 11, "middle")
        s.text(x + colw / 2, row_buf + 44, f"{BM}×{BK}", 9, "middle", fill="#555")
        s.rect(x, row_buf + 72, colw, 36, COLORS[2], "#555", 0.6)
        s.text(x + colw / 2, row_buf + 88, f"Bs[{st}]", 11, "middle")
        s.text(x + colw / 2, row_buf + 100, f"{BK}×{BN}", 9, "middle", fill="#555")
        s.rect(x, row_full, colw, 22, "#dcfce7", "#555", 0.8, rx=4)
        s.text(x + colw / 2, row_full + 15, f"full[{st}]", 10, "middle")
        s.rect(x, row_empty, colw, 22, "#fee2e2", "#555", 0.8, rx=4)
        s.text(x + colw / 2, row_empty + 15, f"empty[{st}]", 10, "middle")
        s.text(x + colw / 2, row_empty + 37, f"stage {st}", 10, "middle", fill="#555")
    # tile kt + STAGES comes back to the stage of tile kt
    last = rx + (STAGES - 1) * (colw + gap) + colw / 2
    yb = row_empty + 44
    s.path(f"M{last},{yb + 2} C{last},{yb + 22} {rx + colw / 2},{yb + 22} {rx + colw / 2},{yb + 4}",
           stroke="#777", width=1, arrow=True)
    s.text(rx + ring_w / 2, yb + 32, f"tile kt + {STAGES} refills the stage of tile kt", 10, "middle", fill="#555")

    # Data: copy engine down into the buffers, buffers out to the consumers.
    teal, green, red = "#0e7490", "#15803d", "#b91c1c"
    s.line(rx + ring_w / 2, py + 40, rx + ring_w / 2, row_buf - 2, stroke=teal, width=2.5, arrow=True)
    s.line(rx + ring_w + 10, row_buf + 54, cx - 2, row_buf + 54, stroke=teal, width=2.5, arrow=True)
    s.text(rx + ring_w + 16, row_buf + 46, "wgmma: As[s]", 9, fill=teal)
    s.text(rx + ring_w + 16, row_buf + 68, "loads: Bs[s]", 9, fill=teal)

    # Signals.
    s.line(px + pw, py + 20, rx - 2, py + 20, arrow=True)
    s.text(px + pw + 8, py + 14, "issues copies", 9)
    s.line(px + pw, row_full + 15, rx - 12, row_full + 15, stroke=green, arrow=True)
    s.text(px + pw + 8, row_full + 10, "expect_tx", 9, fill=green)
    s.path(f"M{rx + 14},{py + 40} L{rx + 14},{py + 52} L{rx - 26},{py + 52} L{rx - 26},{row_full + 6} "
           f"L{rx - 12},{row_full + 6}", stroke=teal, width=1, dash="4 3", arrow=True)
    s.text(rx - 30, (py + 52 + row_full) / 2, "bytes land on full[s]", 9, "middle", fill=teal, rotate=True)
    s.line(rx - 10, row_empty + 11, px + pw + 2, row_empty + 11, stroke=red, arrow=True)
    s.text(px + pw + 8, row_empty + 26, "wait empty[s]", 9, fill=red)
    s.line(rx + ring_w + 10, row_full + 11, cx - 2, row_full + 11, stroke=green, arrow=True)
    s.text(rx + ring_w + 16, row_full + 5, "wait full[s]", 9, fill=green)
    s.line(cx, row_empty + 11, rx + ring_w + 12, row_empty + 11, stroke=red, arrow=True)
    s.text(rx + ring_w + 16, row_empty + 26, "arrive", 9, fill=red)

    # The two kinds of warpgroup.
    for bx, lines in ((px, [("producer warpgroup", True), (f"warps 0–3, {PRODUCER_REGS} registers a thread;", False),
                            ("thread 0 alone works.", False), ("For each tile kt:", False),
                            ("1. wait empty[s],", False), (f"    parity (u − 1) mod 2, once kt ≥ {STAGES}", False),
                            ("2. arrive.expect_tx on full[s]", False),
                            (f"    with {STAGE_BYTES:,} bytes".replace(",", " "), False),
                            ("3. TMA: A's tile → As[s],", False),
                            (f"    {BN // 32} boxes of B ({BK} × 32) → Bs[s]", False)]),
                      (cx, [(f"{CONSUMERS} consumer warpgroups", True),
                            (f"warps 4–{4 * CONSUMERS + 3}, {CONSUMER_REGS} registers a thread;", False),
                            ("each a 64-column strip of C.", False), ("For each tile kt:", False),
                            ("1. wait full[s], parity u mod 2", False),
                            ("2. load Bᵀ fragments from Bs[s]", False),
                            (f"3. {BK // 8} × wgmma on As[s],", False), ("    commit, wait", False),
                            ("4. lane 0 of each warp:", False), ("    arrive on empty[s]", False)])):
        s.rect(bx, py, pw if bx == px else cw, ph, "#f3f4f6", "#555", 0.8, rx=6)
        for i, (line, bold) in enumerate(lines):
            indent = 4 * (len(line) - len(line.lstrip()))
            s.text(bx + 10 + indent, py + 22 + 20 * i, line.lstrip(), 12 if bold else 10.5, bold=bold)

    ny = row_empty + 100
    s.text(W / 2, ny, f"full[s] completes after 1 arrival (the producer's expect_tx) and all {STAGE_BYTES:,} bytes; "
           .replace(",", " ") + f"empty[s] after {4 * CONSUMERS} arrivals, one per consumer warp.", 11, "middle")
    s.text(W / 2, ny + 17, "A barrier's phases alternate, so each wait names the parity of the use it waits for.", 11,
           "middle")

    # The timeline of a model.
    tiles, copy_time, mma_time = 10, 3.0, 2.0
    issue, landed, start, end = simulate(tiles, copy_time, mma_time, 0.2)
    tx, ty, unit, rowh = 120, ny + 80, 34, 30
    s.text(W / 2, ty - 26, f"Over time, in a model: the copies run up to STAGES = {STAGES} tiles ahead of the multiplies",
           13, "middle", bold=True)
    labels = ["producer"] + [f"stage {st}" for st in range(STAGES)] + ["consumers"]
    for i, lab in enumerate(labels):
        s.text(tx - 10, ty + i * rowh + 15, lab, 11, "end")
        s.line(tx, ty + i * rowh + rowh - 4, tx + unit * (end[-1] + 0.5), ty + i * rowh + rowh - 4, stroke="#ddd",
               width=0.5)
    for kt in range(tiles):
        st = kt % STAGES
        y = ty + (1 + st) * rowh
        s.rect(tx + unit * issue[kt], y, unit * copy_time, 20, COLORS[0], "#555", 0.6)
        s.text(tx + unit * (issue[kt] + copy_time / 2), y + 14, f"copy {kt}", 10, "middle")
        if start[kt] > landed[kt]:
            s.rect(tx + unit * landed[kt], y, unit * (start[kt] - landed[kt]), 20, "#fef9c3", "#555", 0.6)
        s.rect(tx + unit * start[kt], y, unit * mma_time, 20, COLORS[1], "#555", 0.6)
        s.text(tx + unit * (start[kt] + mma_time / 2), y + 14, f"wgmma {kt}", 10, "middle")
        yc = ty + (1 + STAGES) * rowh
        s.rect(tx + unit * start[kt], yc, unit * mma_time, 20, COLORS[1], "#555", 0.6)
        s.text(tx + unit * (start[kt] + mma_time / 2), yc + 14, f"tile {kt}", 10, "middle")
        if kt >= STAGES:
            # the multiply of tile kt − STAGES completes empty[s]; the producer then issues copy kt
            xe = tx + unit * end[kt - STAGES]
            s.line(xe, y - 4, xe, y + 24, stroke=red, width=2.5)
        # the producer: a tick per copy issued, a bar while it waits on empty[s]
        x = tx + unit * issue[kt]
        s.line(x, ty + 2, x, ty + 20, stroke=DARK, width=1.5)
        if kt >= STAGES and issue[kt] - issue[kt - 1] > 0.3:
            s.rect(tx + unit * issue[kt - 1] + 3, ty + 8, unit * (issue[kt] - issue[kt - 1]) - 6, 10, "#e5e7eb", "#999",
                   0.5)
            s.text(tx + unit * (issue[kt - 1] + issue[kt]) / 2, ty + 5, f"waits empty[{st}]", 8, "middle", fill="#555")
    # a moment when the ring is full
    moment = start[1] + 0.1
    held = [kt for kt in range(tiles) if issue[kt] <= moment < end[kt]]
    x = tx + unit * moment
    ybot = ty + (2 + STAGES) * rowh
    s.line(x, ty - 8, x, ybot + 2, stroke=HIGHLIGHT, width=1, dash="4 3")
    s.text(x + 4, ybot + 14, f"at this moment tiles {held[0]}–{held[-1]} occupy the stages: {len(held)} = STAGES, "
           "as far ahead as the ring allows", 10, fill=HIGHLIGHT)
    ly = ybot + 34
    items = [(COLORS[0], "copy in flight (TMA)"), ("#fef9c3", "landed (full[s] complete), not yet used"),
             (COLORS[1], "consumers multiply (wgmma)"), ("#e5e7eb", "producer waits on empty[s]")]
    for i, (fill, lab) in enumerate(items):
        x, y = tx + 330 * (i % 2), ly + 20 * (i // 2)
        s.rect(x, y, 14, 14, fill, "#555", 0.6)
        s.text(x + 20, y + 11, lab, 10)
    x, y = tx + 660, ly
    s.line(x, y + 3, x, y + 17, stroke=DARK, width=1.5)
    s.text(x + 10, y + 11, "producer issues a copy", 10)
    s.line(x, y + 22, x, y + 38, stroke=red, width=2.5)
    s.text(x + 10, y + 31, "empty[s] completes: stage free", 10)
    s.text(tx, ly + 58, f"Model: a copy takes {num(copy_time)} time units, the wgmmas of a tile {num(mma_time)}; "
           "real durations differ, the dependences are the kernel's.", 10, fill="#555")
    s.save(directory, "tma-pipeline.svg")


# ---------------------------------------------------------------------------------------------
# 3. swizzle-128b.svg


def stored_place(piece, row):
    return piece ^ (row % 8)


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


def swizzle_figure(directory):
    W, H = 960, 780
    s = Svg(W, H, "Step 08: the 128-byte swizzle and the banks of the consumers' 8-byte loads")
    s.text(W / 2, 26, "128-byte swizzle: piece p of row r is stored at place p ⊕ (r mod 8)", 16, "middle", bold=True)
    s.text(W / 2, 45, "a row of a tile = 128 bytes = 32 floats = 8 pieces of 16 bytes (4 floats); colour = the logical "
           "piece", 11, "middle")
    cw, ch, top = 42, 26, 100
    for gx, title, stored in ((90, "as the matrix has it (logical)", False), (560, "as the copy engine stores it", True)):
        s.text(gx + 4 * cw, top - 30, title, 13, "middle", bold=True)
        s.text(gx + 4 * cw, top - 8, "place (16 bytes each) →" if stored else "piece (16 bytes each) →", 10, "middle",
               fill="#555")
        for r in range(8):
            s.text(gx - 8, top + r * ch + ch / 2 + 4, f"row {r}", 10, "end")
            for q in range(8):
                piece = q ^ (r % 8) if stored else q
                if stored:
                    assert stored_place(piece, r) == q
                x, y = gx + q * cw, top + r * ch
                s.rect(x, y, cw, ch, COLORS[piece], "#555", 0.5)
                s.text(x + cw / 2, y + ch / 2 + 5, str(piece), 13, "middle")
        # the pieces that lanes 0–15 read in the load drawn below (rows 0–3 of a box)
        for r in range(4):
            for piece in sorted({kernel_piece(g)[0] for g in range(4)}):
                q = stored_place(piece, r) if stored else piece
                s.rect(gx + q * cw + 1.5, top + r * ch + 1.5, cw - 3, ch - 3, "none", HIGHLIGHT, 1.8)
        for q in range(8):
            s.text(gx + q * cw + cw / 2, top + 8 * ch + 14, f"{16 * q}", 8, "middle", fill="#777")
        s.text(gx + 4 * cw, top + 8 * ch + 28, "byte offset of the place in the row", 9, "middle", fill="#777")
    s.line(90 + 8 * cw + 16, top + 4 * ch, 560 - 50, top + 4 * ch, arrow=True, width=1.5)
    s.text((90 + 8 * cw + 560 - 50) / 2 + 8, top + 4 * ch - 8, "p → p ⊕ r", 12, "middle")
    s.text(W / 2, top + 8 * ch + 52, "Rows 8, 16, 24 of a 32-row box of B start the pattern again (r mod 8); "
           "A's tile is stored the same way, and wgmma undoes it through the descriptor.", 11, "middle")
    s.text(W / 2, top + 8 * ch + 70, "Outlined: pieces 0 and 4 of rows 0–3, which lanes 0–15 read in the load below.",
           11, "middle", fill=HIGHLIGHT)

    # The consumers' loads.
    y0 = top + 8 * ch + 110
    s.text(W / 2, y0, "One 8-byte load of lanes 0–15 (half a warp, g = 0…3, t = 0…3): lane 4g + t reads row t of B's box",
           13, "middle", bold=True)
    s.text(W / 2, y0 + 18, "at column fragment_col(g, 0), two floats; a row is 32 banks of 4 bytes, so place q holds "
           "banks 4q … 4q+3", 11, "middle")
    bw, rh = 12, 28
    panels = [(40, "fragment_col (the kernel)", kernel_piece), (510, "neighbouring pieces (ruled out)", neighbour_piece)]
    py = y0 + 86
    for px, title, piece_of_g in panels:
        pieces = [piece_of_g(g)[0] for g in range(4)]
        s.text(px + 16 * bw + 40, py - 38, title, 12, "middle", bold=True)
        s.text(px + 16 * bw + 40, py - 22, "pieces for g = 0…3: " + ", ".join(map(str, pieces)), 10, "middle",
               fill="#555")
        gx = px + 40
        for q in range(8):
            s.text(gx + 4 * q * bw + 2 * bw, py - 6, f"place {q}", 8, "middle", fill="#555")
        hits = half_warp_banks(piece_of_g)
        for t in range(4):
            y = py + t * rh
            s.text(gx - 6, y + rh / 2 + 4, f"row {t}", 10, "end")
            for bank in range(32):
                s.rect(gx + bank * bw, y, bw, rh, "white", "#ccc", 0.4)
            for q in range(8):
                s.rect(gx + 4 * q * bw, y, 4 * bw, rh, "none", "#555", 0.7)
            for g in range(4):
                piece, sub = piece_of_g(g)
                q = stored_place(piece, t)
                x = gx + (4 * q + sub) * bw
                s.rect(x + 1, y + 2, 2 * bw - 2, rh - 4, COLORS[g], "#555", 0.6)
                s.text(x + bw, y + 12, f"T{4 * g + t}", 8, "middle")
                s.text(x + bw, y + 22, f"p{piece}", 7.5, "middle", fill="#444")
        # hits per bank
        yb = py + 4 * rh + 12
        s.text(gx - 6, yb + 11, "lanes", 9, "end")
        s.text(gx - 6, yb + 21, "per bank", 9, "end")
        for bank in range(32):
            n = len(hits.get(bank, []))
            fill = {0: "#f3f4f6", 1: "#dcfce7"}.get(n, "#fca5a5")
            s.rect(gx + bank * bw, yb, bw, 18, fill, "#777", 0.5)
            s.text(gx + bank * bw + bw / 2, yb + 13, str(n), 9, "middle")
        passes = max(len(v) for v in hits.values())
        used = len(hits)
        verdict = (f"{used} banks, each once: one pass" if passes == 1 else
                   f"{used} banks, {passes} lanes each: {passes} passes")
        s.text(gx + 16 * bw, yb + 38, verdict, 11, "middle", bold=True, fill="#15803d" if passes == 1 else "#b91c1c")
        if passes == 1:
            # the kernel's other loads: rows t + 4 (a2, a3) and the second half of the warp
            assert all(len(v) == 1 for v in half_warp_banks(piece_of_g, 4).values())
            upper = half_warp_banks(lambda g: kernel_piece(g + 4))
            assert len(upper) == 32 and all(len(v) == 1 for v in upper.values())
            for half in (0, 1):
                for g0 in (0, 4):
                    for off in (0, 4):
                        h = half_warp_banks(lambda g: kernel_piece(g + g0, half), off)
                        assert len(h) == 32 and all(len(v) == 1 for v in h.values())
    s.text(40, py + 4 * rh + 84, "Lanes g = 0, 1 share piece p and g = 2, 3 piece p + 4: p ⊕ t and (p + 4) ⊕ t are 8 "
           "different places for t = 0…3, the same holds for rows t + 4", 10.5)
    s.text(40, py + 4 * rh + 100, "(a2, a3), for lanes 16–31 (pieces p + 1, p + 5) and for the warps reading the "
           "box's other half (p + 2): every half-warp load takes one pass.", 10.5)
    s.text(40, py + 4 * rh + 118, "With neighbouring pieces 0 and 1, rows t and t ⊕ 1 put them at the same two places: "
           "two passes per load.", 10.5)
    s.save(directory, "swizzle-128b.svg")


# ---------------------------------------------------------------------------------------------
# 4. tf32-split.svg


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
    W, H = 960, 800
    s = Svg(W, H, "Step 09: an FP32 value split into two TF32 numbers, and the three products the kernel issues")
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
    cw, ch, bx, top = 17, 22, 200, 112
    s.text(bx + 16 * cw, top - 40, "the FP32 bits", 13, "middle", bold=True)
    spans = [(0, 1, "sign"), (1, 9, "exponent (8)"), (9, 19, "mantissa: 10 bits TF32 keeps"),
             (19, 32, "13 bits TF32 drops")]
    for a, b, lab in spans:
        xa, xb = bx + a * cw + 1, bx + b * cw - 1
        s.path(f"M{xa},{top - 6} L{xa},{top - 12} L{xb},{top - 12} L{xb},{top - 6}", stroke="#777", width=0.8)
        s.text((xa + xb) / 2, top - 16, lab, 9.5 if b - a > 1 else 8.5, "middle", fill="#444")
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
        s.text(bx + 32 * cw + 10, y + 11, f"0x{b:08X} = {sci(v, 9)}", 10.5, mono=True)
        s.text(bx + 32 * cw + 10, y + 23, f"exponent {pow2(e)}", 9, fill="#555")

    # The same numbers by weight: one column per power of two.
    top2 = top + 4 * (ch + 12) + 70
    lo = ex - 23
    cols = list(range(ex, lo - 1, -1))
    cw2, bx2 = 24, 196
    s.text(W / 2, top2 - 44, "the same numbers by weight: x has 24 significant bits, big takes the first 11, small the "
           "next 11", 13, "middle", bold=True)
    for i, p in enumerate(cols):
        s.text(bx2 + i * cw2 + cw2 / 2, top2 - 8, pow2(p), 8.5, "middle", fill="#555")
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
        s.text(bx2 + len(cols) * cw2 + 10, y + 15, note, 10)
    rel = abs(rest / Fraction(x))
    s.text(bx2, top2 + 5 * (ch + 8) + 14, f"|x − big| ≤ {pow2(-11)}·|x| and |r| ≤ {pow2(-23)}·|x|: "
           f"here {float(abs(Fraction(diff) / Fraction(x))):.2g}·|x| and {float(rel):.2g}·|x| "
           f"(≈ {pow2(round(math.log2(rel)))}). Two TF32 numbers hold 22 of the 24 bits.".replace("e-0", "e−0"), 10.5)

    # The products.
    top3 = top2 + 5 * (ch + 8) + 72
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
    s.text(220, top3 + 4, "size, relative to a·b", 11, bold=True)
    s.text(420, top3 + 4, "here (a = π, b = 1/3)", 11, bold=True)
    s.text(620, top3 + 4, "order in the kernel (B first: Cᵀ = Bᵀ·Aᵀ)", 11, bold=True)
    bounds = ["≈ 1", f"≤ {pow2(-11)}", f"≤ {pow2(-11)}", f"≤ {pow2(-22)}"]
    for i, (name, v, order, kept) in enumerate(terms):
        y = top3 + 12 + i * 26
        s.rect(50, y, W - 100, 24, COLORS[1] if kept and i else COLORS[0] if kept else "#fee2e2", "#999", 0.5)
        s.text(60, y + 16, name, 11.5, mono=True)
        s.text(220, y + 16, bounds[i], 11.5)
        s.text(420, y + 16, f"{float(v / exact):.3g}", 11.5, mono=True)
        s.text(620, y + 16, order, 11, mono=True, fill="#b91c1c" if not kept else None)
    three = sum(v for _, v, _, kept in terms if kept)
    yb = top3 + 12 + 4 * 26 + 24
    err_three = float(abs(three - exact) / exact)
    err_big = float(abs(terms[0][1] - exact) / exact)
    err_f32 = float(abs(Fraction(f32(a * b)) - exact) / exact)
    lines = [
        "Per 8-deep step the kernel issues the two corrections first, then big·big, all into the stage's part (the first "
        "wgmma,",
        "k8 = 0, overwrites it). A product of two TF32 numbers has at most 22 significant bits: exact in FP32.",
        f"Relative error against the exact a·b: big·big alone {err_big:.1e}, the three products {err_three:.1e}, "
        f"one rounded FP32 multiply {err_f32:.1e}:",
        "for one product the split loses more than FP32 does; it wins in long sums, where FP32 rounds K times.",
        f"Bound per product: {pow2(-23)} + {pow2(-23)} (the r terms, times the big parts) + {pow2(-22)} (small·small), "
        f"in all {pow2(-21)}·(1 + {pow2(-12)})·|a·b|."]
    for i, line in enumerate(lines):
        s.text(60, yb + 18 * i, line.replace("e-0", "e−0"), 10.5)
    s.save(directory, "tf32-split.svg")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    directory = sys.argv[1]
    wgmma_figure(directory)
    pipeline_figure(directory)
    swizzle_figure(directory)
    split_figure(directory)


if __name__ == "__main__":
    main()

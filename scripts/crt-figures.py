#!/usr/bin/env python3
"""Draws step 11's figures into docs/src/figures/:

- crt-example.svg: a dot product of two rows of three integers taken through three moduli,
  worked out in full as the kernel does it (the operands' residues, the three INT8 dot products,
  their residues, the weights and the rebuilt integer), computed here, not typed;
- crt-moduli.svg: ‖ΔC‖/‖C‖ against the number of moduli at 4096³, with cuBLAS SGEMM's and step
  09's as lines, read from the recorded test run;
- crt-pipeline.svg: the five kernels' times at 4096³ and 8192³ under Nsight Compute, read from the
  recorded profiles.

    scripts/crt-figures.py        # from the repository's root
"""

import math
import re
from pathlib import Path

RUNS = Path("docs/src/results/runs")
OUT = Path("docs/src/figures")
RECORD = "2026-11-23-nvidia-h100-80gb-hbm3-step11"
FONT = 'font-family="sans-serif"'


def svg(width, height, body):
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" {FONT} font-size="13">\n'
        f'<rect width="{width}" height="{height}" fill="white"/>\n' + "\n".join(body) + "\n</svg>\n"
    )


def text(x, y, s, anchor="start", size=13, weight="normal", fill="black"):
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return f'<text x="{x}" y="{y}" text-anchor="{anchor}" font-size="{size}" font-weight="{weight}" fill="{fill}">{s}</text>'


def grouped(n):
    """n with its digits in threes, split by spaces, and a true minus sign."""
    return f"{n:,}".replace(",", " ").replace("-", "−")


def example_figure():
    """The scheme on one dot product, as the kernel does it: the operands' residues symmetric
    (between −m/2 and m/2, a signed byte; for 256, −128 and +128 are one byte), the INT8 dot
    product exact, its residue reduced into 0 … m−1 (an unsigned byte, as store_residues
    writes it), the weights of the rebuild, and the multiple of P taken away."""
    moduli = [256, 255, 253]
    p = math.prod(moduli)
    a, b = [1893, -2417, 771], [-1302, 655, 2049]
    c = sum(x * y for x, y in zip(a, b))
    assert abs(c) < p // 2

    def sym(x, m):
        r = x % m
        return r - m if r >= (m + 1) // 2 else r

    rows = []
    for m in moduli:
        q = p // m
        w = q * pow(q, -1, m)
        ra, rb = [sym(x, m) for x in a], [sym(x, m) for x in b]
        assert all(-128 <= r <= 127 for r in ra + rb), "an operand's residue must fit a signed byte"
        dot = sum(x * y for x, y in zip(ra, rb))
        r = dot % m  # Python's % is already in 0 … m−1, as the kernel's % plus m if negative
        assert 0 <= r < m <= 256
        rows.append((m, ra, rb, dot, r, w))
    s = sum(w * r for (_, _, _, _, r, w) in rows)
    k = round(s / p)
    assert s - k * p == c, "the rebuild must give the dot product"

    def tup(v):
        return "(" + ", ".join(str(x).replace("-", "−") for x in v) + ")"

    W = 760
    body = [text(16, 28, f"a = {tup(a)},  b = {tup(b)}:  a·b = {grouped(c)}", size=16, weight="bold")]
    body.append(text(16, 52, f"moduli 256, 255, 253:  P = {grouped(p)}", size=15))
    body.append(text(16, 74, "The operands' residues lie between −m/2 and m/2: each fits a signed byte.",
                     size=15))
    body.append(text(16, 96, "Each product's residue is reduced into 0 … m−1: a byte without sign.", size=15))
    xs = [16, 66, 206, 346, 506, 606]
    head = [("m", ""), ("residues", "of a"), ("residues", "of b"), ("INT8 dot", "product (exact)"),
            ("its", "residue r"), ("weight", "w")]
    top = 130
    for x, (h1, h2) in zip(xs, head):
        body.append(text(x, top, h1, size=15, weight="bold"))
        body.append(text(x, top + 18, h2, size=15, weight="bold"))
    body.append(f'<line x1="16" y1="{top + 28}" x2="{W - 16}" y2="{top + 28}" stroke="#9ca3af"/>')
    for i, (m, ra, rb, dot, r, w) in enumerate(rows):
        y = top + 52 + 28 * i
        for x, v in zip(xs, [str(m), tup(ra), tup(rb), grouped(dot), str(r), grouped(w)]):
            body.append(text(x, y, v, size=15))
    y = top + 52 + 28 * len(rows) - 12
    body.append(f'<line x1="16" y1="{y}" x2="{W - 16}" y2="{y}" stroke="#9ca3af"/>')
    body.append(text(16, y + 26, f"Σ w·r = {grouped(s)} = {k}·P {'−' if c < 0 else '+'} {grouped(abs(c))}",
                     size=15, weight="bold"))
    body.append(text(16, y + 52, f"Take away the multiple of P nearest to it ({k}·P):  {grouped(c)} = a·b",
                     size=15, weight="bold", fill="#065f46"))
    body.append(text(16, y + 82, "Each weight is 1 modulo its own modulus and 0 modulo the others,", size=15))
    body.append(text(16, y + 104, "so Σ w·r has the residue r modulo each modulus.", size=15))
    return svg(W, y + 122, body)


def moduli_figure():
    log = (RUNS / f"{RECORD}-tests.log").read_text()
    points = [(int(m), float(e)) for m, e in re.findall(r"^moduli (\d) ([\d.e+-]+)$", log, re.M)]
    sgemm = float(re.search(r"^cuBLAS SGEMM ([\d.e+-]+)$", log, re.M).group(1))
    step09 = float(re.search(r"^step09 ([\d.e+-]+)$", log, re.M).group(1))
    w, h, left, right, top, bottom = 640, 400, 80, 170, 30, 60
    lo, hi = -8.0, -1.0

    def px(m):
        return left + (m - 3) * (w - left - right) / 5

    def py(e):
        return top + (hi - math.log10(e)) * (h - top - bottom) / (hi - lo)

    body = [text(w / 2 - 40, 20, "‖ΔC‖/‖C‖ at 4096³ against the number of moduli (H100)", anchor="middle", weight="bold")]
    for k in range(int(lo), int(hi) + 1):
        y = py(10.0**k)
        body.append(f'<line x1="{left}" y1="{y}" x2="{w - right}" y2="{y}" stroke="#e5e7eb"/>')
        body.append(text(left - 8, y + 4, f"1e{k}", anchor="end"))
    for m in range(3, 9):
        body.append(text(px(m), h - bottom + 20, str(m), anchor="middle"))
    body.append(text((left + w - right) / 2, h - 16, "moduli (INT8 products)", anchor="middle"))
    for value, label, colour in [(sgemm, "cuBLAS SGEMM", "#b91c1c"), (step09, "step 09 (3×TF32)", "#7c3aed")]:
        y = py(value)
        body.append(f'<line x1="{left}" y1="{y}" x2="{w - right}" y2="{y}" stroke="{colour}" stroke-dasharray="6 4"/>')
        body.append(text(w - right + 6, y + 4, f"{label} {value:.1e}", fill=colour))
    path = " ".join(f"{'M' if i == 0 else 'L'}{px(m):.1f},{py(e):.1f}" for i, (m, e) in enumerate(points))
    body.append(f'<path d="{path}" fill="none" stroke="#047857" stroke-width="2"/>')
    for m, e in points:
        body.append(f'<circle cx="{px(m):.1f}" cy="{py(e):.1f}" r="4" fill="#047857"/>')
        body.append(text(px(m) + 7, py(e) - 7, f"{e:.1e}", size=11))
    body.append(text(left + 4, h - bottom - 8, "inputs uniform in [-1, 1], every significand bit drawn", size=11, fill="#374151"))
    return svg(w, h, body)


def pipeline_figure():
    names = ["scale_rows", "col_norms", "scale_cols", "matmul", "reconstruct"]
    colours = ["#93c5fd", "#a5b4fc", "#c4b5fd", "#34d399", "#fcd34d"]
    rows = []
    for size in (4096, 8192):
        log = (RUNS / f"{RECORD}-ncu-{size}.log").read_text()
        times = {}
        for name, unit, value in re.findall(r"^  (\w+) \(.*?\n(?:.*\n)*?\s+Duration\s+(us|ms)\s+([\d.]+)", log, re.M):
            times[name] = float(value) * (1000.0 if unit == "ms" else 1.0)
        rows.append((size, [times[n] for n in names]))
    w, left, bar = 900, 90, 34
    body = [text(20, 24, "Step 11's five kernels, one after another (Nsight Compute, H100)", weight="bold")]
    for i, (size, times) in enumerate(rows):
        y = 50 + i * 80
        total = sum(times)
        body.append(text(20, y + 22, f"{size}³"))
        x = left
        for name, t, colour in zip(names, times, colours):
            width = (w - left - 30) * t / total
            body.append(f'<rect x="{x:.1f}" y="{y}" width="{width:.1f}" height="{bar}" fill="{colour}" stroke="white"/>')
            if width > 60:
                body.append(text(x + width / 2, y + 15, name, anchor="middle", size=11))
                label = f"{t:.0f} µs" if t < 1000 else f"{t / 1000:.2f} ms"
                body.append(text(x + width / 2, y + 29, label, anchor="middle", size=11))
            x += width
        body.append(text(left, y + bar + 16, f"{total / 1000:.3f} ms in all; the INT8 products {100 * times[3] / total:.0f}%", size=11))
    return svg(w, 220, body)


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    for name, draw in [("crt-example.svg", example_figure), ("crt-moduli.svg", moduli_figure), ("crt-pipeline.svg", pipeline_figure)]:
        (OUT / name).write_text(draw())
        print(f"wrote {OUT / name}")


if __name__ == "__main__":
    main()

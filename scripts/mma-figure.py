#!/usr/bin/env python3
"""Draws docs/src/figures/mma-fragments.svg: which lane holds which element of the A, B and C
fragments of mma.sync.m16n8k8 with TF32 operands (step 07's chapter).

    scripts/mma-figure.py > docs/src/figures/mma-fragments.svg
"""

CELL = 34
GAP = 60
COLORS = ["#dbeafe", "#dcfce7", "#fef9c3", "#fee2e2", "#ede9fe", "#cffafe", "#ffedd5", "#f3f4f6"]


def a_owner(r, c):
    g, t = r % 8, c % 4
    reg = (r // 8) + 2 * (c // 4)
    return 4 * g + t, f"a{reg}"


def b_owner(r, c):
    t, g = r % 4, c
    return 4 * g + t, f"b{r // 4}"


def c_owner(r, c):
    g, t = r % 8, c // 2
    return 4 * g + t, f"c{2 * (r // 8) + c % 2}"


def grid(x0, y0, rows, cols, owner, title, row_label, col_label):
    out = [f'<text x="{x0 + cols * CELL / 2}" y="{y0 - 26}" text-anchor="middle" font-size="15" font-weight="bold">{title}</text>',
           f'<text x="{x0 + cols * CELL / 2}" y="{y0 - 8}" text-anchor="middle" font-size="11">{col_label} →</text>',
           f'<text x="{x0 - 10}" y="{y0 + rows * CELL / 2}" text-anchor="middle" font-size="11" '
           f'transform="rotate(-90 {x0 - 10} {y0 + rows * CELL / 2})">{row_label} →</text>']
    for r in range(rows):
        for c in range(cols):
            lane, reg = owner(r, c)
            x, y = x0 + c * CELL, y0 + r * CELL
            out.append(f'<rect x="{x}" y="{y}" width="{CELL}" height="{CELL}" fill="{COLORS[lane // 4]}" stroke="#555" stroke-width="0.5"/>')
            out.append(f'<text x="{x + CELL / 2}" y="{y + 14}" text-anchor="middle" font-size="11">T{lane}</text>')
            out.append(f'<text x="{x + CELL / 2}" y="{y + 27}" text-anchor="middle" font-size="9" fill="#444">{reg}</text>')
    return out


def main():
    x_a, y0 = 40, 60
    x_b = x_a + 8 * CELL + GAP
    x_c = x_b + 8 * CELL + GAP
    width, height = x_c + 8 * CELL + 20, y0 + 16 * CELL + 60
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif">',
             f'<rect width="{width}" height="{height}" fill="white"/>']
    parts += grid(x_a, y0, 16, 8, a_owner, "A fragment (16×8, row-major)", "row m", "column k")
    parts += grid(x_b, y0, 8, 8, b_owner, "B fragment (8×8)", "row k", "column n")
    parts += grid(x_c, y0, 16, 8, c_owner, "C and D (16×8, f32)", "row m", "column n")
    parts.append(f'<text x="{width / 2}" y="{height - 24}" text-anchor="middle" font-size="12">'
                 'Tn = lane n of the warp; a0–a3, b0–b1, c0–c3 = which of its registers. Lane n has g = n / 4 '
                 'and t = n mod 4; one colour per g.</text>')
    parts.append('</svg>')
    print("\n".join(parts))


if __name__ == "__main__":
    main()

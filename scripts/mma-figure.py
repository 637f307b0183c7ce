#!/usr/bin/env python3
"""Draws docs/src/figures/mma-fragments.svg: which lane holds which element of the operands of
mma.sync.m16n8k8 with TF32 operands, as step 07's kernel hands them to the instruction: a 16×8
tile of Bᵀ as the first operand, an 8×8 tile of Aᵀ as the second, a 16×8 tile of Cᵀ as the
accumulator (Cᵀ = Bᵀ·Aᵀ).

    scripts/mma-figure.py > docs/src/figures/mma-fragments.svg

The figure is drawn at the width it is shown (at most the book's 920-pixel column), so that its
smallest text, 11 px, stays 11 px on the page.
"""

CELL = 31          # a cell's width and height, in pixels
GAP = 40           # between two grids, where the = and · stand
LEFT = 36          # room for the first grid's row label
TOP = 78           # room for the titles and column labels
COLORS = ["#dbeafe", "#dcfce7", "#fef9c3", "#fee2e2", "#ede9fe", "#cffafe", "#ffedd5", "#e5e7eb"]


def b_owner(r, c):
    """Bᵀ, 16×8: row r (g or g + 8) is a column of B, column c (t or t + 4) a depth k."""
    g, t = r % 8, c % 4
    return 4 * g + t, f"p{r // 8 + 2 * (c // 4)}"


def a_owner(r, c):
    """Aᵀ, 8×8: row r (t or t + 4) is a depth k, column c (g) a row of A."""
    return 4 * c + r % 4, f"q{r // 4}"


def c_owner(r, c):
    """Cᵀ, 16×8: row r (g or g + 8) is a column of C, column c (2t or 2t + 1) a row of C."""
    g, t = r % 8, c // 2
    return 4 * g + t, f"d{2 * (r // 8) + c % 2}"


def grid(x0, y0, rows, cols, owner, title, subtitle, row_label, col_label, splits):
    mid_x, mid_y = x0 + cols * CELL / 2, y0 + rows * CELL / 2
    out = [f'<text x="{mid_x}" y="{y0 - 50}" text-anchor="middle" font-size="14" font-weight="bold">{title}</text>',
           f'<text x="{mid_x}" y="{y0 - 32}" text-anchor="middle" font-size="12">{subtitle}</text>',
           f'<text x="{mid_x}" y="{y0 - 10}" text-anchor="middle" font-size="11">{col_label} →</text>',
           f'<text x="{x0 - 12}" y="{mid_y}" text-anchor="middle" font-size="11" '
           f'transform="rotate(-90 {x0 - 12} {mid_y})">{row_label} →</text>']
    for r in range(rows):
        for c in range(cols):
            lane, reg = owner(r, c)
            x, y = x0 + c * CELL, y0 + r * CELL
            out.append(f'<rect x="{x}" y="{y}" width="{CELL}" height="{CELL}" fill="{COLORS[lane // 4]}" '
                       'stroke="#555" stroke-width="0.5"/>')
            out.append(f'<text x="{x + CELL / 2}" y="{y + 13}" text-anchor="middle" font-size="11">T{lane}</text>')
            out.append(f'<text x="{x + CELL / 2}" y="{y + 26}" text-anchor="middle" font-size="11" '
                       f'fill="#444">{reg}</text>')
    # Heavier lines around the grid and where a lane's next register begins.
    row_splits, col_splits = splits
    for r in [0, *row_splits, rows]:
        out.append(f'<line x1="{x0}" y1="{y0 + r * CELL}" x2="{x0 + cols * CELL}" y2="{y0 + r * CELL}" '
                   'stroke="#222" stroke-width="1.5"/>')
    for c in [0, *col_splits, cols]:
        out.append(f'<line x1="{x0 + c * CELL}" y1="{y0}" x2="{x0 + c * CELL}" y2="{y0 + rows * CELL}" '
                   'stroke="#222" stroke-width="1.5"/>')
    return out


def main():
    x_c = LEFT
    x_b = x_c + 8 * CELL + GAP
    x_a = x_b + 8 * CELL + GAP
    width = x_a + 8 * CELL + 12
    height = TOP + 16 * CELL + 58
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" font-family="sans-serif">',
             f'<rect width="{width}" height="{height}" fill="white"/>']
    parts += grid(x_c, TOP, 16, 8, c_owner, "d: a tile of Cᵀ", "16×8, f32 (acc[j][i])",
                  "column of C", "row of C", ([8], []))
    parts += grid(x_b, TOP, 16, 8, b_owner, "p: a tile of Bᵀ", "16×8, first operand (load_b)",
                  "column of B", "depth k", ([8], [4]))
    parts += grid(x_a, TOP, 8, 8, a_owner, "q: a tile of Aᵀ", "8×8, second operand (load_a)",
                  "depth k", "row of A", ([4], []))
    # Cᵀ = Bᵀ·Aᵀ between the grids.
    for x, sign in ((x_c + 8 * CELL + GAP / 2, "="), (x_b + 8 * CELL + GAP / 2, "·")):
        parts.append(f'<text x="{x}" y="{TOP + 2 * CELL + 10}" text-anchor="middle" font-size="28">{sign}</text>')
    # For each grid, the rule it follows, below the short grid.
    notes = ["Lane l holds the cells marked T followed by l (T5: lane 5), in the registers named "
             "under them: p0–p3, q0–q1, d0–d3.",
             "g = l / 4 (one colour each), t = l mod 4:",
             "p: (g, t) (g+8, t) (g, t+4) (g+8, t+4)",
             "q: (t, g) (t+4, g)",
             "d: (g, 2t) (g, 2t+1) (g+8, 2t) (g+8, 2t+1)",
             "Rows of Bᵀ and Cᵀ: the warp's columns,",
             "in warp_col's order."]
    for i, line in enumerate(notes[1:]):
        parts.append(f'<text x="{x_a}" y="{TOP + 8 * CELL + 40 + 20 * i}" font-size="12">{line}</text>')
    parts.append(f'<text x="{width / 2}" y="{height - 20}" text-anchor="middle" font-size="12">{notes[0]}</text>')
    parts.append('</svg>')
    print("\n".join(parts))


if __name__ == "__main__":
    main()

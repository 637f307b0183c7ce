#!/usr/bin/env python3
"""Draws docs/src/figures/mma-fragments.svg: which lane holds which element of the operands of
mma.sync.m16n8k8 with TF32 operands, as step 07's kernel hands them to the instruction: a 16×8
tile of Bᵀ as the first operand, an 8×8 tile of Aᵀ as the second, a 16×8 tile of Cᵀ as the
accumulator (Cᵀ = Bᵀ·Aᵀ).

    scripts/mma-figure.py > docs/src/figures/mma-fragments.svg

The grids are laid out as the product is: Bᵀ left of Cᵀ, Aᵀ above it, so that row r of Bᵀ and
column c of Aᵀ meet at cell (r, c) of Cᵀ. The figure is drawn at the width it is shown (under the
book's 920-pixel column), so its sizes are the page's: 15 px in the cells (capitals 11 px high),
no text under MIN_FONT (asserted).
"""

CELL = 44          # a cell's width and height, in pixels
CELL_FONT = 15     # the lane and register in a cell
MIN_FONT = 13      # no text smaller
LEFT = 62          # room for the row labels left of Bᵀ
GAP = 56           # between Bᵀ and Cᵀ, and between Aᵀ and Cᵀ
TOP = 120          # room for the title and Aᵀ's labels
COLORS = ["#dbeafe", "#dcfce7", "#fef9c3", "#fee2e2", "#ede9fe", "#cffafe", "#ffedd5", "#e5e7eb"]
WIDTH_LIMIT = 900  # the book's column is 920 px: the figure is shown at its own size


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


def text(x, y, s, size, anchor="middle", bold=False, fill=None, rotate=False):
    assert size >= MIN_FONT, f"'{s}' at {size} px"
    attrs = f'x="{x}" y="{y}" font-size="{size}" text-anchor="{anchor}"'
    if bold:
        attrs += ' font-weight="bold"'
    if fill:
        attrs += f' fill="{fill}"'
    if rotate:
        attrs += f' transform="rotate(-90 {x} {y})"'
    return f"<text {attrs}>{s}</text>"


def grid(x0, y0, rows, cols, owner, splits):
    out = []
    for r in range(rows):
        for c in range(cols):
            lane, reg = owner(r, c)
            x, y = x0 + c * CELL, y0 + r * CELL
            out.append(f'<rect x="{x}" y="{y}" width="{CELL}" height="{CELL}" fill="{COLORS[lane // 4]}" '
                       'stroke="#555" stroke-width="0.5"/>')
            out.append(text(x + CELL / 2, y + 19, f"T{lane}", CELL_FONT))
            out.append(text(x + CELL / 2, y + 37, reg, CELL_FONT, fill="#444"))
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
    x_b = LEFT
    x_c = x_b + 8 * CELL + GAP
    y_a = TOP
    y_c = y_a + 8 * CELL + GAP
    width = x_c + 8 * CELL + 24
    height = y_c + 16 * CELL + 40
    assert width <= WIDTH_LIMIT, f"{width} px is wider than the column"
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" font-family="sans-serif">',
             f'<rect width="{width}" height="{height}" fill="white"/>']
    parts.append(text(width / 2, 30, "mma.sync.m16n8k8, TF32: d (Cᵀ) = p (Bᵀ) · q (Aᵀ), which lane holds what",
                      18, bold=True))
    # Aᵀ above Cᵀ, its columns those of Cᵀ.
    parts.append(text(x_c + 4 * CELL, y_a - 44, "q: a tile of Aᵀ, 8×8, second operand (load_a)", 15, bold=True))
    parts.append(text(x_c + 4 * CELL, y_a - 14, "row of A (= row of C) →", 14))
    parts.append(text(x_c - 14, y_a + 4 * CELL, "depth k →", 14, rotate=True))
    parts += grid(x_c, y_a, 8, 8, a_owner, ([4], []))
    # Bᵀ left of Cᵀ, its rows those of Cᵀ.
    parts.append(text(x_b + 4 * CELL, y_c - 44, "p: a tile of Bᵀ, 16×8,", 15, bold=True))
    parts.append(text(x_b + 4 * CELL, y_c - 26, "first operand (load_b)", 15, bold=True))
    parts.append(text(x_b + 4 * CELL, y_c - 8, "depth k →", 14))
    parts.append(text(x_b - 16, y_c + 8 * CELL, "column of B (= column of C) →", 14, rotate=True))
    parts += grid(x_b, y_c, 16, 8, b_owner, ([8], [4]))
    parts.append(text(x_c + 4 * CELL, y_c - 26, "d: a tile of Cᵀ, 16×8, f32 (acc[j][i])", 15, bold=True))
    parts.append(text(x_c + 4 * CELL, y_c - 8, "row of C →", 14))
    parts += grid(x_c, y_c, 16, 8, c_owner, ([8], []))
    # The rules, in the corner the product leaves free.
    notes = ["Lane l holds the cells marked Tl (T5:",
             "lane 5), in the registers named under",
             "them: p0–p3, q0–q1, d0–d3.",
             "g = l / 4 (one colour each), t = l mod 4:",
             "p: (g, t) (g+8, t) (g, t+4) (g+8, t+4)",
             "q: (t, g) (t+4, g)",
             "d: (g, 2t) (g, 2t+1) (g+8, 2t) (g+8, 2t+1)",
             "Row r of p and column c of q meet",
             "at cell (r, c) of d. Rows of p and d:",
             "the warp's columns, in warp_col's order."]
    for i, line in enumerate(notes):
        parts.append(text(LEFT - 40, y_a + 10 + 24 * i, line, 14, anchor="start"))
    parts.append('</svg>')
    print("\n".join(parts))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Writes A and B (.npy) on which rounding step 11's scaled entries to nearest errs the same way on
every term while C cancels: the inputs of the FP32-from-tensor-cores issue's correctness item, as
`step11_int8_crt/src/coherent.rs` builds them for the tests (ties in B, seven moduli).

Each column j of B alternates +(n + 1/2)·2^-e and -(n + 3/2)·2^-e, with n even and e the exponent
step 11 scales the column by at seven moduli: scaled, both are half-integers, and rounding to
nearest (ties to even) takes 1/2 from each. Row i of A is one value, 1 + i/4096, all along K. The
K errors then add up to K/2 units, as large as C itself, which cancels to about a (2n)th of
(|A||B|). Step 11 rounds its scaled entries without bias, and its errors cancel instead.

    python3 scripts/coherent-inputs.py DIR [M N K]      (default 16 16 4096; K from 130 on)
    cargo run --release -p step11_int8_crt -- --a DIR/a.npy --b DIR/b.npy
"""
import math
import sys
from pathlib import Path

import numpy as np

MODULI = [256, 255, 253, 251, 247, 241, 239]


def room(k: int) -> float:
    """T = sqrt(P/2)·(1 - 2^-20) - sqrt(K): how long a scaled column may be (the kernel's)."""
    return math.sqrt(math.prod(MODULI) / 2) * (1 - 2.0**-20) - math.sqrt(k)


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    m, n_cols, k = (int(v) for v in sys.argv[2:5]) if len(sys.argv) >= 5 else (16, 16, 4096)
    t = room(k)
    n = 2 * math.floor(0.375 * t / math.sqrt(k))
    if n + 1.5 >= 2**23 or (n + 1) * math.sqrt(k) <= t / 2:
        sys.exit(f"coherent-inputs: K = {k} is too short for entries of one size to fall on half-integers")
    half = k // 2 * 2
    units = np.zeros(k)
    units[0:half:2] = n + 0.5
    units[1:half:2] = -(n + 1.5)
    e = math.floor(math.log2(n + 1.5))
    col = units * 2.0**-e
    b = np.tile(col[:, None], (1, n_cols)).astype(np.float32)
    assert np.array_equal(b[:, 0].astype(np.float64), col), "not exact in f32"
    scale = math.floor(math.log2(t / np.linalg.norm(b[:, 0].astype(np.float64))))
    assert scale == e, f"the step would scale by 2^{scale}, not 2^{e}"
    a = np.tile((1 + np.arange(m) / 4096)[:, None], (1, k)).astype(np.float32)
    out.mkdir(parents=True, exist_ok=True)
    np.save(out / "a.npy", a)
    np.save(out / "b.npy", b)
    c = a.astype(np.float64) @ b.astype(np.float64)
    size = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    print(f"wrote {out / 'a.npy'} ({m}×{k}) and {out / 'b.npy'} ({k}×{n_cols}): "
          f"C[0,0] = {c[0, 0]:.6e}, (|A||B|)[0,0] = {size[0, 0]:.6e}, scaled entries ±{n + 0.5}, ∓{n + 1.5}")


if __name__ == "__main__":
    main()

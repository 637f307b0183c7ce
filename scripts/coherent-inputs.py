#!/usr/bin/env python3
"""Writes A and B (.npy) on which every rounding error of step 11's scaling has one sign while C
cancels: the input of the FP32-from-tensor-cores issue's correctness item.

A is all ones (its scaled rows are whole numbers: nothing rounds). Each column of B alternates
+(2^21 + 2.5) and -(2^21 + 1.5), times 2^-21. At K = 4096 and 7 moduli the scaling picks the
exponent that makes these entries exactly +(2^21 + 2.5) and -(2^21 + 1.5) again: half-integers,
which round to even, to 2^21 + 2 and -(2^21 + 2), both by -1/2. C cancels to 2^-22 of |A||B|
(each element 2048 · 2^-21), and the K errors of -1/2 take all of it. Every sum of FP32 on these
inputs is exact.

    python3 scripts/coherent-inputs.py DIR
    cargo run --release -p step11_int8_crt -- --emulate --a DIR/a.npy --b DIR/b.npy
"""
import sys
from pathlib import Path

import numpy as np

M, N, K = 16, 16, 4096


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    out.mkdir(parents=True, exist_ok=True)
    a = np.ones((M, K), dtype=np.float32)
    col = np.empty(K, dtype=np.float64)
    col[0::2] = 2**21 + 2.5
    col[1::2] = -(2**21 + 1.5)
    b = np.tile((col * 2.0**-21)[:, None], (1, N)).astype(np.float32)
    assert np.array_equal(b.astype(np.float64) * 2**21, np.tile(col[:, None], (1, N))), "not exact in f32"
    np.save(out / "a.npy", a)
    np.save(out / "b.npy", b)
    c = a.astype(np.float64) @ b.astype(np.float64)
    size = (np.abs(a) @ np.abs(b))[0, 0]
    print(f"wrote {out / 'a.npy'} and {out / 'b.npy'}: C = {c[0, 0]} in every element, (|A||B|) = {size}")


if __name__ == "__main__":
    main()

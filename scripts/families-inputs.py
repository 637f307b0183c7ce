#!/usr/bin/env python3
"""Writes the real-looking inputs `compare --families --pair A,B` runs beside the random families:
ReLU activations times weights, softmax rows, sparse, signed heavy-tailed, identity plus tiny
noise, tiny magnitudes, and columns of B scaled by powers of two across 120 binades. Needs numpy.

    scripts/families-inputs.py OUT [N]        (N×N times N×N, default 4096; prints the --pair flags)
"""
import pathlib
import sys

import numpy as np


def main():
    out = pathlib.Path(sys.argv[1])
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 4096
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(7)
    z = lambda: rng.standard_normal((n, n))
    ident = np.eye(n)

    def softmax(x):
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    def sparse():
        x = z()
        x[rng.random((n, n)) < 0.95] = 0.0
        return x

    def signed_lognormal():
        return np.sign(z()) * np.exp(3.0 * z())

    def noisy_identity():
        return ident + rng.uniform(-2.0**-24, 2.0**-24, (n, n))

    scales = np.exp2(np.round(np.linspace(-60, 60, n)))
    pairs = {
        "relu": (np.maximum(z(), 0.0), 0.02 * z()),
        "softmax": (softmax(3.0 * z()), z()),
        "sparse95": (sparse(), sparse()),
        "signed-lognormal3": (signed_lognormal(), signed_lognormal()),
        "identity-noise-2e-24": (noisy_identity(), noisy_identity()),
        "normal-1e-20": (1e-20 * z(), 1e-20 * z()),
        "columns-2e60": (z(), z() * scales[None, :]),
    }
    flags = []
    for name, (a, b) in pairs.items():
        pa, pb = out / f"{name}-a.npy", out / f"{name}-b.npy"
        np.save(pa, a.astype(np.float32))
        np.save(pb, b.astype(np.float32))
        flags.append(f"--pair {pa},{pb}")
    print(" ".join(flags))


if __name__ == "__main__":
    main()

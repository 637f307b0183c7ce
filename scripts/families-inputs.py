#!/usr/bin/env python3
"""Writes the real-looking inputs `compare --families --pair A,B` runs beside the random families:
ReLU activations times weights, softmax rows (of 3·z, and of 12·z whose smallest entries fall out
of FP32's normal range), sparse, signed heavy-tailed, identity plus tiny noise, tiny magnitudes,
columns of B scaled by powers of two across 120 binades, uniform inputs with a NaN in every row
of A (every row on a step's FP32 path), and uniform inputs with NaN in three rows of A, +∞ in a
fourth and NaN in one column of B (a few rows and a column on the FP32 path); then GELU
activations, attention probabilities, 8-bit quantized weights and unit-length embeddings. Needs
numpy.

    scripts/families-inputs.py OUT [N]        (N×N times N×N, default 4096; prints the --pair flags)
    scripts/families-inputs.py OUT M N K      (M×K times K×N, for compare --families -m M -n N -k K)
"""
import pathlib
import sys

import numpy as np


def main():
    out = pathlib.Path(sys.argv[1])
    dims = [int(v) for v in sys.argv[2:]] or [4096]
    if len(dims) not in (1, 3):
        sys.exit("families-inputs: give N, or M N K")
    m, n, k = dims * 3 if len(dims) == 1 else dims
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(7)
    # A is M×K, B is K×N; with M = N = K the draws are those of the square inputs.
    sa, sb = (m, k), (k, n)
    z = lambda shape: rng.standard_normal(shape)

    def softmax(x):
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    def sparse(shape):
        x = z(shape)
        x[rng.random(shape) < 0.95] = 0.0
        return x

    def signed_lognormal(shape):
        return np.sign(z(shape)) * np.exp(3.0 * z(shape))

    def noisy_identity(shape):
        return np.eye(*shape) + rng.uniform(-2.0**-24, 2.0**-24, shape)

    def nan_every_row(shape):
        x = rng.uniform(-1.0, 1.0, shape)
        x[np.arange(shape[0]), rng.integers(0, shape[1], shape[0])] = np.nan
        return x

    def nan_few(sa, sb):
        a, b = rng.uniform(-1.0, 1.0, sa), rng.uniform(-1.0, 1.0, sb)
        a[[1, sa[0] // 2, sa[0] - 2], rng.integers(0, sa[1], 3)] = np.nan
        a[sa[0] // 3, rng.integers(0, sa[1])] = np.inf
        b[rng.integers(0, sb[0]), sb[1] // 2] = np.nan
        return a, b

    def gelu(x):
        return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)))

    def int8_weights(w):
        scale = np.abs(w).max(axis=0, keepdims=True) / 127.0
        return np.round(w / scale) * scale

    def unit_rows(x):
        return x / np.linalg.norm(x, axis=1, keepdims=True)

    scales = np.exp2(np.round(np.linspace(-60, 60, n)))
    pairs = {
        "relu": (np.maximum(z(sa), 0.0), 0.02 * z(sb)),
        "softmax": (softmax(3.0 * z(sa)), z(sb)),
        "sparse95": (sparse(sa), sparse(sb)),
        "signed-lognormal3": (signed_lognormal(sa), signed_lognormal(sb)),
        "identity-noise-2e-24": (noisy_identity(sa), noisy_identity(sb)),
        "normal-1e-20": (1e-20 * z(sa), 1e-20 * z(sb)),
        "columns-2e60": (z(sa), z(sb) * scales[None, :]),
        # Drawn after the others, so that their inputs stay those of earlier records.
        "softmax12": (softmax(12.0 * z(sa)), z(sb)),
        "nan-every-row": (nan_every_row(sa), rng.uniform(-1.0, 1.0, sb)),
        "nan-few": nan_few(sa, sb),
        # Four more layers' worth, drawn last: GELU activations times weights of variance 1/K,
        # attention probabilities softmax(QKᵀ/8) over 64-wide heads times values, activations
        # times weights quantized to 8 bits (a scale a column), and unit-length embeddings
        # against unit-length embeddings (cosine similarities).
        "gelu": (gelu(z(sa)), z(sb) / np.sqrt(k)),
        "attention": (softmax(z((m, 64)) @ z((k, 64)).T / 8.0), z(sb)),
        "int8-weights": (z(sa), int8_weights(z(sb))),
        "embeddings": (unit_rows(z(sa)), unit_rows(z((n, k))).T),
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

#!/usr/bin/env python3
"""Draws shapes M N K for step 10 the way a GPU engineer's own matrices come, one a line: sizes
log-uniform from 1 to 2^14, decode products of 1 to 16 rows, mixture-of-experts blocks (a few
hundred rows of a model's width), tall and wide products past 2^20 rows or columns, K up to 2^22,
K of 1, and primes. Every shape fits in 8 GiB of operands and is at most 2·10^12 FLOPs, so a run
takes seconds on one GPU.

    scripts/step10-shapes.py SEED [COUNT]     (COUNT shapes, default 24)
"""
import math
import random
import sys

PRIMES = [p for p in range(2, 20000) if all(p % d for d in range(2, int(p ** 0.5) + 1))]


def log_uniform(rng, lo, hi):
    return int(round(math.exp(rng.uniform(math.log(lo), math.log(hi)))))


def draw(rng):
    kind = rng.choice(["log", "decode", "experts", "tall", "wide", "deep", "k1", "primes"])
    if kind == "log":
        return [log_uniform(rng, 1, 1 << 14) for _ in range(3)]
    if kind == "decode":
        return [rng.randint(1, 16), log_uniform(rng, 1024, 32768), log_uniform(rng, 1024, 16384)]
    if kind == "experts":
        width = rng.choice([1024, 2048, 4096, 5120, 7168])
        return [log_uniform(rng, 16, 1024), rng.choice([width, 4 * width // 3, 2 * width]), width]
    if kind == "tall":
        return [log_uniform(rng, 1 << 20, 1 << 23), log_uniform(rng, 1, 64), log_uniform(rng, 1, 256)]
    if kind == "wide":
        return [log_uniform(rng, 1, 64), log_uniform(rng, 1 << 20, 1 << 23), log_uniform(rng, 1, 256)]
    if kind == "deep":
        return [log_uniform(rng, 1, 256), log_uniform(rng, 1, 256), log_uniform(rng, 1 << 16, 1 << 22)]
    if kind == "k1":
        return [log_uniform(rng, 1, 1 << 16), log_uniform(rng, 1, 1 << 16), 1]
    return [rng.choice(PRIMES) for _ in range(3)]


def fits(m, n, k):
    return 4 * (m * k + k * n + m * n) <= 8 << 30 and 2 * m * n * k <= 2e12


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: scripts/step10-shapes.py SEED [COUNT]")
    rng = random.Random(int(sys.argv[1]))
    count = int(sys.argv[2]) if len(sys.argv) == 3 else 24
    done = 0
    while done < count:
        m, n, k = (max(1, x) for x in draw(rng))
        if fits(m, n, k):
            print(m, n, k)
            done += 1


if __name__ == "__main__":
    main()

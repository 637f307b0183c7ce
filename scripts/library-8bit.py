"""The library's 8-bit products beside cuBLAS SGEMM, timed the way the course times kernels.

Runs on the GPU machine (PyTorch is there, Rust is not): PyTorch's INT8 product (`torch._int_mm`,
cuBLASLt, B column-major) and its FP8 product (`torch._scaled_mm`, e4m3, B column-major), both on
the 8-bit tensor cores, and cuBLAS SGEMM (`torch.mm` in strict FP32), at the shapes given. Each is
launched in batches back to back between two CUDA events after a warm-up, and the median batch is
reported in TOPS (2·M·N·K per product), with the share of the dense INT8 peak given.

    python3 scripts/library-8bit.py [--peak TOPS] SIZE...
"""

import argparse
import statistics

import torch


def timed(fn, reps=20, batches=7):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(batches):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3 / reps)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--peak", type=float, default=1979.0, help="dense INT8 peak in TOPS")
    parser.add_argument("sizes", type=int, nargs="+")
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    print(f"device {torch.cuda.get_device_name()} · torch {torch.__version__} · INT8 peak {args.peak:.0f} TOPS")
    for n in args.sizes:
        ops = 2.0 * n * n * n
        a8 = torch.randint(-128, 128, (n, n), dtype=torch.int8, device="cuda")
        b8 = torch.randint(-128, 128, (n, n), dtype=torch.int8, device="cuda").t().contiguous().t()
        af, bf = torch.randn(n, n, device="cuda"), torch.randn(n, n, device="cuda")
        a_fp8 = af.to(torch.float8_e4m3fn)
        b_fp8 = bf.to(torch.float8_e4m3fn).t().contiguous().t()
        one = torch.tensor(1.0, device="cuda")
        rows = [
            ("cuBLAS SGEMM (torch.mm, FP32)", timed(lambda: torch.mm(af, bf))),
            ("INT8 (torch._int_mm)", timed(lambda: torch._int_mm(a8, b8))),
            ("FP8 e4m3 (torch._scaled_mm)", timed(lambda: torch._scaled_mm(a_fp8, b_fp8, one, one, out_dtype=torch.bfloat16))),
        ]
        for name, t in rows:
            rate = ops / t / 1e12
            print(f"{n}³  {name:<32} {t * 1e3:8.3f} ms  {rate:8.1f} TOPS  {100 * rate / args.peak:5.1f}% of INT8 peak")


if __name__ == "__main__":
    main()

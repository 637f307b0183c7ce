#!/usr/bin/env python3
"""Sets two kernels' Nsight Compute counters side by side, from the raw CSVs that
`ncu --import X.ncu-rep --page raw --csv` writes (scripts/gpu-step12-levers.sh ncu keeps them):
one row per counter that tells where a product's energy goes, with both values, their ratio and
what the counter counts.

    scripts/ncu-compare.py step12.csv cublas.csv "lab 12" "cuBLAS TF32" > record.md
"""

import csv
import sys

# (counter, scale, unit shown, what it counts)
COUNTERS = [
    ("gpu__time_duration.sum", 1, "", "time of the profiled launch"),
    ("sm__cycles_elapsed.avg", 1, "cycles", "SM cycles of the launch"),
    ("sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active", 1, "%", "tensor pipe busy, of active cycles"),
    ("lts__t_sectors.sum", 32e-9, "GB", "L2: every 32-byte sector in or out of the L2"),
    ("lts__t_sectors_srcunit_tex_op_read.sum", 32e-9, "GB", "L2 reads for the SMs (the copy engine's loads, multicast included)"),
    ("lts__t_sectors_srcunit_tex_op_write.sum", 32e-9, "GB", "L2 writes from the SMs (C's stores, a workspace's)"),
    ("lts__t_sectors_srcunit_ltcfabric.sum", 32e-9, "GB", "L2 to L2 across the fabric between its two halves"),
    ("l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld.sum", 1, "", "bytes the copy engine brought to the SMs"),
    ("dram__bytes_read.sum", 1, "", "DRAM read"),
    ("dram__bytes_write.sum", 1, "", "DRAM written"),
    ("l1tex__data_pipe_lsu_wavefronts_mem_shared.sum", 1, "", "shared-memory wavefronts"),
    ("smsp__sass_inst_executed_op_shared_ld.sum", 1, "", "shared-memory load instructions"),
    ("smsp__sass_inst_executed_op_shared_st.sum", 1, "", "shared-memory store instructions"),
    ("smsp__inst_executed.sum", 1, "", "warp instructions issued"),
    ("smsp__inst_executed_op_branch.sum", 1, "", "branch instructions (a polling loop is one a try)"),
    ("smsp__inst_executed_op_tma_ld.sum", 1, "", "copy-engine load instructions"),
    ("smsp__inst_executed_op_tma_st.sum", 1, "", "copy-engine store instructions"),
    ("launch__cluster_dim_x", 1, "", "cluster width (blocks along x)"),
    ("launch__cluster_dim_y", 1, "", "cluster height (blocks along y)"),
]


def load(path):
    rows = list(csv.reader(open(path, encoding="utf-8")))
    head, units, values = rows[0], rows[1], rows[2]
    return {h: (v, u) for h, u, v in zip(head, units, values)}


def number(text):
    return float(text.replace(",", ""))


def show(v):
    """A whole count with its digits grouped, anything else to three decimals."""
    return f"{v:,.0f}" if v == int(v) and abs(v) >= 10 else f"{v:,.3f}"


def main():
    if len(sys.argv) != 5:
        sys.exit("usage: ncu-compare.py A.csv B.csv NAME_A NAME_B")
    a, b = load(sys.argv[1]), load(sys.argv[2])
    name_a, name_b = sys.argv[3], sys.argv[4]
    print(f"# Nsight Compute: {name_a} beside {name_b}, one launch each\n")
    print(f"From `{sys.argv[1].split('/')[-1]}` and `{sys.argv[2].split('/')[-1]}` (raw counters, every section).\n")
    print(f"| counter | {name_a} | {name_b} | ratio | what it counts |")
    print("| --- | ---: | ---: | ---: | --- |")
    for counter, scale, unit, what in COUNTERS:
        if counter not in a or counter not in b:
            continue
        (va, ua), (vb, _) = a[counter], b[counter]
        x, y = number(va) * scale, number(vb) * scale
        shown = unit or ua
        ratio = f"{x / y:.3f}" if y else "–"
        shown = f" ({shown})" if shown else ""
        print(f"| `{counter}`{shown} | {show(x)} | {show(y)} | {ratio} | {what} |")


main()

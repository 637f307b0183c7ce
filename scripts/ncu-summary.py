#!/usr/bin/env python3
"""Writes the book's page of Nsight Compute counters from the raw CSVs of scripts/profile.sh.

    scripts/ncu-summary.py docs/src/results/ncu-h100 > docs/src/results/profiles-h100.md

One section per profiled kernel, one table row per counter the chapters use, with the value as
ncu reported it (units included, digits grouped in threes from five on) and the CSV beside it for everything
else.
"""

import csv
import pathlib
import sys

# (counter, what it says), in the order the chapters discuss them.
COUNTERS = [
    ("gpu__time_duration.sum", "time of the profiled launch"),
    ("sm__throughput.avg.pct_of_peak_sustained_elapsed", "SM throughput, % of peak"),
    ("sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active", "FMA pipe busy, % of cycles"),
    ("sm__issue_active.avg.pct_of_peak_sustained_active", "issue slots busy, % of cycles"),
    ("smsp__issue_inst0.avg.pct_of_peak_sustained_active", "cycles with no instruction issued, %"),
    ("smsp__warps_eligible.avg.per_cycle_active", "eligible warps per scheduler per cycle"),
    ("sm__warps_active.avg.pct_of_peak_sustained_active", "achieved occupancy, %"),
    ("smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
     "warps waiting on a global (L1) load, per issue"),
    ("smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio",
     "warps waiting for the shared-memory queue, per issue"),
    ("smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
     "warps waiting at a barrier, per issue"),
    ("smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio",
     "warps waiting for the global-load queue, per issue"),
    ("smsp__inst_executed.sum", "warp instructions executed"),
    ("dram__throughput.avg.pct_of_peak_sustained_elapsed", "DRAM throughput, % of peak"),
    ("dram__bytes_read.sum", "bytes read from DRAM"),
    ("lts__t_bytes.sum", "bytes through L2"),
    ("lts__t_sector_hit_rate.pct", "L2 hit rate, %"),
    ("l1tex__t_sector_hit_rate.pct", "L1 hit rate, %"),
    ("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", "global load requests (warp instructions)"),
    ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "global load sectors (32 bytes)"),
    ("smsp__inst_executed_op_shared_ld.sum", "shared-memory load instructions (warp)"),
    ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", "shared-memory load wavefronts"),
    ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", "shared-memory load bank conflicts"),
    ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum", "shared-memory store bank conflicts"),
    ("l1tex__data_pipe_lsu_wavefronts_mem_shared.sum.pct_of_peak_sustained_elapsed",
     "shared-memory pipe busy, % of peak"),
    ("sm__inst_executed_pipe_fma.sum", "FMA-pipe instructions (warp)"),
    ("sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active", "tensor pipe busy, % of cycles"),
    ("sm__inst_executed_pipe_tensor_op_hmma.sum", "tensor-core MMA instructions (warp)"),
    ("sm__inst_executed_pipe_tensor_op_gmma.sum", "of which warpgroup MMA (wgmma), per warp"),
    ("smsp__average_warps_issue_stalled_wait_per_issue_active.ratio",
     "warps waiting a fixed-latency dependency, per issue"),
    ("smsp__average_warps_issue_stalled_gmma_per_issue_active.ratio",
     "warps waiting to issue a wgmma, per issue"),
    ("sm__cycles_elapsed.avg", "cycles per SM"),
]


def grouped(value):
    """A number as a reader reads it: 2684354560 as 2 684 354 560 (narrow no-break spaces)."""
    whole, dot, fraction = value.partition(".")
    if not whole.isdigit() or len(whole) < 5:
        return value
    head = len(whole) % 3
    parts = ([whole[:head]] if head else []) + [whole[i:i + 3] for i in range(head, len(whole), 3)]
    return "\u202f".join(parts) + dot + fraction


def read(path):
    rows = list(csv.reader(path.open()))
    if len(rows) < 3:
        return None
    header, units, values = rows[0], rows[1], rows[2]
    return {h: (v, u) for h, u, v in zip(header, units, values)}


def main():
    folder = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "docs/src/results/ncu")
    files = sorted(folder.glob("*.csv"))
    first = next((read(f) for f in files if read(f)), {})
    device = first.get("device__attribute_display_name", ("?", ""))[0]
    print(f"# Nsight Compute counters ({device.removeprefix('NVIDIA ')})\n")
    print(
        "One launch of each chapter's kernel, profiled by "
        "`scripts/profile.sh` with "
        "`ncu --clock-control none -k matmul --launch-count 1`. "
        f"Device: {device}. Each section names the program and arguments profiled. "
        "Each section links the raw CSV, which holds every counter of the sections collected; "
        "the table picks the ones the chapters discuss. Regenerate with "
        f"`scripts/ncu-summary.py docs/src/results/{folder.name}`.\n"
    )
    for f in files:
        data = read(f)
        if not data:
            continue
        name = f.stem
        kernel = data.get("Kernel Name", ("?", ""))[0]
        grid, block = data.get("Grid Size", ("?", ""))[0], data.get("Block Size", ("?", ""))[0]
        print(f"## {name}\n")
        args = f.with_suffix(".args")
        command = f"`target/release/{args.read_text().strip()}`, " if args.exists() else ""
        print(f"{command}kernel `{kernel}`, grid {grid}, block {block}; raw counters: [{folder.name}/{f.name}]({folder.name}/{f.name}).\n")
        # What the counter says first: the counters' names are long and do not wrap.
        print("| meaning | value | unit | counter |")
        print("| --- | ---: | --- | --- |")
        for counter, meaning in COUNTERS:
            if counter in data:
                value, unit = data[counter]
                value = grouped(value.replace(",", ""))
                print(f"| {meaning} | {value} | {unit} | `{counter}` |")
        print()


if __name__ == "__main__":
    main()

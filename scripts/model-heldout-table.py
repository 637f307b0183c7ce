#!/usr/bin/env python3
"""Sets the time model's predictions beside the GPU's times and Nsight Compute's busiest unit,
and writes the table as a record (the book's appendix "The time model" quotes it).

    python3 scripts/model-heldout-table.py --times GPU.log [...] --ncu NCU.log [...] \
        --predicted PRED.log [...] [--title TITLE] [--gpu NAME] --out OUT.md

GPU.log: scripts/model-heldout.sh gpu, or scripts/gpu-model-runs.sh judged ("== case" then the
report's lines). NCU.log: scripts/model-heldout.sh ncu. PRED.log: scripts/model-heldout.sh
predict, or scripts/model-predictions.sh. A case is its title, e.g. "blocktile_2d --size 4096".
Where a log keeps its reports as JSON beside it (NAME.jsonl), the times and predictions are read
from their fields; an older log is read as text.

Nsight Compute's limit: the busiest of the units the model weighs, each as a share of its peak
over the launch: SM issue (issue slots, or the FMA pipe where that is busier), the tensor pipe,
L1/shared (l1tex throughput), L2 (lts throughput) and DRAM; where none reaches 60%, latency.
"""
import csv
import re
import sys
from pathlib import Path

import report_json

BUSY = 60.0
# The model's limits, as its prediction line names them, and the unit each stands for.
MODEL_UNIT = {
    "instruction issue": "SM issue",
    "tensor-core issue": "tensor pipe",
    "shared-memory and L1 wavefronts": "L1/shared",
    "L2 bytes": "L2",
    "DRAM bytes": "DRAM",
    "latency at this occupancy": "latency",
    "the launch itself": "latency",
}
NCU_UNITS = [
    ("SM issue", ["sm__issue_active.avg.pct_of_peak_sustained_active",
                  "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active"]),
    ("tensor pipe", ["sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"]),
    ("L1/shared", ["l1tex__throughput.avg.pct_of_peak_sustained_active"]),
    ("L2", ["lts__throughput.avg.pct_of_peak_sustained_elapsed"]),
    ("DRAM", ["gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"]),
]


def blocks(path):
    """(title, lines) for each "== title" block of a log."""
    title, lines = None, []
    for line in Path(path).read_text().splitlines():
        if line.startswith("== "):
            if title:
                yield title, lines
            title, lines = line[3:].strip(), []
        elif title:
            lines.append(line)
    if title:
        yield title, lines


def times(paths):
    """title -> ms: from the speed line where the case is a square (its GFLOP/s carry more digits
    than the time's three decimals, which a launch of a few microseconds needs), else the time."""
    out = {}
    for p in paths:
        runs = report_json.runs(p)
        if runs is not None:
            for title, e in runs.items():
                ms = report_json.measured_ms(e["report"])
                if ms is not None and title not in out:
                    out[title] = ms
            continue
        for title, lines in blocks(p):
            size = re.search(r"--size (\d+)", title)
            for line in lines:
                m = re.match(r"  time +([\d.]+) ms median", line)
                if m and title not in out:
                    out[title] = float(m.group(1))
                s = re.match(r"  speed +([\d.]+) GFLOP/s", line)
                if s and size and float(s.group(1)) > 0:
                    n = int(size.group(1))
                    out[title] = 2.0 * n ** 3 / (float(s.group(1)) * 1e9) * 1e3
    return out


def ncu(paths):
    """title -> (unit, its %, every unit's %)."""
    out = {}
    for p in paths:
        for title, lines in blocks(p):
            rows = list(csv.reader([line for line in lines if line.startswith('"')]))
            if len(rows) < 3:
                continue
            header, values = rows[0], rows[-1]
            got = {}
            for name, v in zip(header, values):
                try:
                    got[name] = float(v.replace(",", ""))
                except ValueError:
                    pass
            shares = {unit: max(got.get(n, 0.0) for n in names) for unit, names in NCU_UNITS}
            unit, pct = max(shares.items(), key=lambda kv: kv[1])
            out[title] = ("latency" if pct < BUSY else unit, pct, shares)
    return out


def predictions(paths):
    """title -> (ms or None, limit or the refusal)."""
    out = {}
    for p in paths:
        runs = report_json.runs(p)
        if runs is not None:
            for title, e in runs.items():
                ms = report_json.predicted_ms(e["report"])
                if ms is not None:
                    out[title] = (ms, e["report"]["predicted"]["limit"])
                elif title not in out or out[title][0] is None:
                    out[title] = (None, e.get("error") or "no prediction")
            continue
        for title, lines in blocks(p):
            text = "\n".join(lines)
            m = re.search(r"predicted H[12]00 ([\d.]+) (ms|µs) .*? set by (.+?)(?: \(\d+% of it FP32\))? at (\d+) MHz", text)
            if m:
                ms = float(m.group(1)) / (1000 if m.group(2) == "µs" else 1)
                out[title] = (ms, m.group(3))
            elif title not in out or out[title][0] is None:
                err = re.search(r"^error: (.*)$", text, re.M)
                out[title] = (None, err.group(1) if err else "no prediction")
    return out


def main():
    opts, key = {"--times": [], "--ncu": [], "--predicted": [], "--title": [], "--out": [], "--gpu": []}, None
    for a in sys.argv[1:]:
        if a in opts:
            key = a
        elif key:
            opts[key].append(a)
        else:
            sys.exit(__doc__)
    if len(opts["--out"]) != 1 or not opts["--times"] or not opts["--predicted"]:
        sys.exit(__doc__)
    args = opts["--out"]
    measured, profiled, predicted = times(opts["--times"]), ncu(opts["--ncu"]), predictions(opts["--predicted"])
    gpu = (opts["--gpu"] or ["H100"])[0]
    title = " ".join(opts["--title"]) or f"The time model beside the {gpu}"
    rows, errs, agree, compared = [], [], 0, 0
    # Every case timed or predicted: a timed case without a prediction is a refusal.
    cases = list(predicted) + [c for c in measured if c not in predicted]
    for case in cases:
        p, limit = predicted.get(case, (None, "no prediction in the logs"))
        m = measured.get(case)
        n = profiled.get(case)
        ncu_cell = f"{n[0]} ({n[1]:.0f}%)" if n else "–"
        if p is None:
            rows.append(f"| `{case}` | {f'{m:.4g}' if m else '–'} | – | – | refused: {limit[:100]} | {ncu_cell} | – |")
            continue
        unit = MODEL_UNIT.get(limit, limit)
        same = "–"
        if n:
            compared += 1
            ok = n[0] == unit
            agree += ok
            same = "yes" if ok else "no"
        if m is None:
            rows.append(f"| `{case}` | – | {p:.4g} | – | {unit} | {ncu_cell} | {same} |")
            continue
        e = p / m - 1
        errs.append((case, e))
        rows.append(f"| `{case}` | {m:.4g} | {p:.4g} | {100 * e:+.0f}% | {unit} | {ncu_cell} | {same} |")
    lines = [f"# {title}", "",
             "Times: " + ", ".join(f"`{Path(p).name}`" for p in opts["--times"]) + ". "
             "Predictions: " + ", ".join(f"`{Path(p).name}`" for p in opts["--predicted"]) + ". "
             "Nsight Compute: " + (", ".join(f"`{Path(p).name}`" for p in opts["--ncu"]) or "none") + ". "
             "Error: predicted over measured, less one. Nsight Compute's limit: the busiest of SM issue, the tensor "
             f"pipe, L1/shared, L2 and DRAM as a share of its peak, or latency where none reaches {BUSY:.0f}%. "
             "Written by scripts/model-heldout-table.py.", "",
             f"| case | {gpu} ms | predicted ms | error | the model's limit | Nsight Compute's | same |",
             "| --- | ---: | ---: | ---: | --- | --- | --- |"] + rows
    lines += ["", "## Summary", ""]
    for size in ("256", "1024", "4096", ""):
        sel = [e for c, e in errs if c.endswith(f"--size {size}")] if size else [e for _, e in errs]
        if not sel:
            continue
        mean = sum(abs(e) for e in sel) / len(sel)
        worst = max(sel, key=abs)
        label = f"at {size}³" if size else "in all"
        lines.append(f"- {label}: {len(sel)} cases, mean |error| {100 * mean:.1f}%, worst {100 * worst:+.0f}%, "
                     f"{sum(abs(e) <= 0.25 for e in sel)} within ±25%, {sum(abs(e) <= 0.10 for e in sel)} within ±10%, "
                     f"{sum(e < 0 for e in sel)} too fast and {sum(e > 0 for e in sel)} too slow")
    refused = sum(1 for c in cases if predicted.get(c, (None,))[0] is None)
    if refused:
        lines.append(f"- refused: {refused}")
    if compared:
        lines.append(f"- the limit named: the model and Nsight Compute agree in {agree} of {compared} cases "
                     f"({100 * agree / compared:.0f}%)")
    Path(args[0]).write_text("\n".join(lines) + "\n")
    print("\n".join(lines[-8:]))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Sets the emulator's predicted H100 times (scripts/model-predictions.sh's log) beside the times
the H100 measured (scripts/gpu-model-runs.sh judged, and step 10's suite record), and writes the
table as a record.

    python3 scripts/model-table.py PREDICTIONS.log [MORE.log ...] OUT.md

A later log's prediction of a case replaces an earlier one's (a whole emulation run apart, where
the scaled run refused).

For each case: the measured median, the predicted time, the error (predicted over measured, less
one), and the limit the model names. Then, for each lab with stages, whether the model orders each
stage after the one before as the GPU does: a change the GPU makes more than 3% faster (slower)
must be predicted faster (slower); within 3% either way is noise and passes.
"""
import csv
import re
import sys
from pathlib import Path

import report_json

ROOT = Path(__file__).resolve().parent.parent
RUNS = ROOT / "docs/src/results/runs"
JUDGED = ["2026-11-27-nvidia-h100-80gb-hbm3-model-judged-1024.log",
          "2026-11-27-nvidia-h100-80gb-hbm3-model-judged-4096.log"]
SUITE = "2026-11-23-nvidia-h100-80gb-hbm3-suite-1.md"
NOISE = 0.03


def modelled_labs():
    """labs.tsv's labs the model judges, (number, crate, needs) in order: every lab the emulator
    runs but 03, whose one block holds 32³ at most."""
    with open(ROOT / "labs.tsv", newline="") as f:
        rows = [r for r in csv.reader(f, delimiter="\t") if r and not r[0].startswith("#")]
    return [(r[0], r[1], r[4]) for r in rows if r[5] == "yes" and r[0] != "03"]


def label(numbers, order):
    """'labs 02–06 and 10' for numbers among `order`: a run of three or more neighbours in
    `order` as a range, the rest one by one."""
    at = [order.index(n) for n in numbers]
    runs, start = [], 0
    for i in range(1, len(at) + 1):
        if i == len(at) or at[i] != at[i - 1] + 1:
            part = numbers[start:i]
            runs += [f"{part[0]}–{part[-1]}"] if len(part) >= 3 else part
            start = i
    return "labs " + (", ".join(runs[:-1]) + " and " + runs[-1] if len(runs) > 1 else runs[0])


def measured():
    """Case title -> measured ms, from the judged logs (their reports' JSON where they keep it,
    else their text) and step 10's column of the suite."""
    times = {}
    for name in JUDGED:
        runs = report_json.runs(RUNS / name)
        if runs is not None:
            times.update({t: ms for t, e in runs.items() if (ms := report_json.measured_ms(e["report"]))})
            continue
        title = None
        for line in (RUNS / name).read_text().splitlines():
            if line.startswith("== "):
                title = line[3:].strip()
            m = re.match(r"  time +([\d.]+) ms median", line)
            if m and title:
                times[title] = float(m.group(1))
    cols = None
    for line in (RUNS / SUITE).read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and cells[0] == "shape":
            cols = cells
            continue
        if cols and len(cells) == len(cols) and re.match(r"^[\d×³]+$", cells[0]):
            shape = cells[0]
            m = re.match(r"^(\d+)³$", shape)
            mnk = [int(m.group(1))] * 3 if m else [int(v) for v in shape.split("×")]
            rate = cells[cols.index("10")].split()[0]
            if rate != "–":
                flops = 2 * mnk[0] * mnk[1] * mnk[2]
                times[f"step10_any_shape -m {mnk[0]} -n {mnk[1]} -k {mnk[2]}"] = flops / float(rate) / 1e6
    return times


def predicted(path):
    """Case title -> (predicted ms, limit, emulation seconds, note): from the reports' JSON beside
    the log where it keeps them, else from its text."""
    runs = report_json.runs(path)
    if runs is not None:
        out = {}
        for title, e in runs.items():
            report = e["report"]
            ms = report_json.predicted_ms(report)
            if ms is None:
                out[title] = (None, (e.get("error") or "no prediction")[:90], None, "")
            else:
                note = "scaled" if report_json.scaled(report) else "whole"
                out[title] = (ms, report["predicted"]["limit"], e["wall_s"], note)
        return out
    out, title, block = {}, None, []

    def close():
        if title is None:
            return
        text = "\n".join(block)
        m = re.search(r"predicted H100 ([\d.]+) (ms|µs) .*? set by (.+?)(?: \(\d+% of it FP32\))? at (\d+) MHz", text)
        secs = re.search(r"^-- ([\d.]+) s", text, re.M)
        if m:
            ms = float(m.group(1)) / (1000 if m.group(2) == "µs" else 1)
            note = "scaled" if "  scaled " in text else "whole"
            out[title] = (ms, m.group(3), float(secs.group(1)) if secs else None, note)
        else:
            err = re.search(r"^error: (.*)$", text, re.M)
            out[title] = (None, (err.group(1) if err else "no prediction")[:90], None, "")

    for line in Path(path).read_text().splitlines():
        if line.startswith("== "):
            close()
            title, block = line[3:].strip(), []
        else:
            block.append(line)
    close()
    return out


def main():
    pred_paths, out_path = sys.argv[1:-1], sys.argv[-1]
    meas, pred = measured(), {}
    for path in pred_paths:
        pred.update({t: p for t, p in predicted(path).items() if p[0] is not None or t not in pred})
    rows, errors = [], {}
    for title, (p, limit, secs, how) in pred.items():
        m = meas.get(title)
        if p is None:
            rows.append(f"| `{title}` | {f'{m:.4g}' if m else '–'} | – | – | {limit} | – |")
            continue
        if m is None:
            rows.append(f"| `{title}` | – | {p:.4g} | – | {limit} | {secs:.1f} s ({how}) |")
            continue
        err = p / m - 1
        errors[title] = (p, m, err)
        rows.append(f"| `{title}` | {m:.4g} | {p:.4g} | {100 * err:+.0f}% | {limit} | {secs:.1f} s ({how}) |")

    lines = ["# The time model's predictions beside the H100's times", "",
             f"Predictions: {', '.join('`' + Path(p).name + '`' for p in pred_paths)} (scripts/model-predictions.sh on the CPU, and a whole emulation run apart). "
             f"Times: {', '.join('`' + j + '`' for j in JUDGED)} (scripts/gpu-model-runs.sh judged) and step 10's column of `{SUITE}`. "
             "Error: predicted over measured, less one. Written by scripts/model-table.py.", "",
             "| case | H100 ms | predicted ms | error | the model's limit | emulation |",
             "| --- | ---: | ---: | ---: | --- | --- |"] + rows

    def lab_case(t, labs, size):
        return t.split()[0] in labs and t.endswith(f"--size {size}") and "--stage" not in t and "--kernel" not in t

    def within(labs, size, bound):
        sel = [(t, e) for t, e in errors.items() if lab_case(t, labs, size)]
        ok = [t for t, e in sel if abs(e[2]) <= bound]
        worst = max(sel, key=lambda x: abs(x[1][2])) if sel else None
        missing = sum(1 for t, v in pred.items() if lab_case(t, labs, size) and v[0] is None)
        return len(ok), len(sel) + missing, worst, missing

    lines += ["", "## Summary", ""]
    # The labs of compute capability 7.5 (the SIMT cores' FP32), then those of the tensor cores.
    modelled = modelled_labs()
    order = [n for n, _, _ in modelled]
    groups = [[(n, c) for n, c, needs in modelled if (needs == "gpu") == simt] for simt in (True, False)]
    for group in groups:
        labs, name = [c for _, c in group], label([n for n, _ in group], order)
        for size in (4096, 1024):
            for bound in (0.25, 0.10):
                ok, n, worst, missing = within(labs, size, bound)
                w = f"; the worst {100 * worst[1][2]:+.0f}% (`{worst[0]}`)" if worst else ""
                m = f"; {missing} without a prediction" if missing else ""
                lines.append(f"- {name} at {size}³: {ok} of {n} within ±{100 * bound:.0f}%{w}{m}")
    suite = [e for t, e in errors.items() if t.startswith("step10_any_shape -m")]
    if suite:
        ok = sum(1 for e in suite if abs(e[2]) <= 0.25)
        worst = max(suite, key=lambda e: abs(e[2]))
        unpredicted = sum(1 for t, v in pred.items() if t.startswith("step10_any_shape -m") and v[0] is None)
        lines.append(f"- step 10 over the suite: {ok} of {len(suite)} shapes within ±25%; the worst {100 * worst[2]:+.0f}%; "
                     f"{unpredicted} more without a prediction")

    timed = [e[2] for t, e in errors.items() if "--kernel" not in t]
    if timed:
        mean = sum(abs(e) for e in timed) / len(timed)
        lines.append(f"- every lab, stage and shape timed: {len(timed)} cases, mean |error| {100 * mean:.1f}%, "
                     f"{sum(abs(e) <= 0.25 for e in timed)} within ±25%, {sum(e < 0 for e in timed)} too fast and "
                     f"{sum(e > 0 for e in timed)} too slow")

    lines += ["", "## The order of the stages", "",
              "Each stage beside the one before (the lab's own kernel last): the GPU's change and the model's. "
              f"A GPU change within ±{100 * NOISE:.0f}% is noise: either prediction passes.", "",
              "| size | from | to | GPU | model | order |", "| --- | --- | --- | ---: | ---: | --- |"]
    wrong = right = 0
    for size in (1024, 4096):
        for lab in sorted(p.parent.name for p in ROOT.glob("step*/stages")):
            chain = sorted(t for t in errors if t.startswith(lab + " --stage") and f"--size {size}" in t)
            own = f"{lab} --size {size}"
            if own in errors:
                chain.append(own)
            for a, b in zip(chain, chain[1:]):
                g = errors[b][1] / errors[a][1] - 1
                mo = errors[b][0] / errors[a][0] - 1
                ok = abs(g) <= NOISE or (g < 0) == (mo < 0)
                right += ok
                wrong += not ok
                short = lambda t: (t.split("--stage ")[1].split()[0] if "--stage" in t else "the kernel")
                lines.append(f"| {size}³ | {short(a)} | {short(b)} | {100 * g:+.0f}% | {100 * mo:+.0f}% | {'right' if ok else 'WRONG'} |")
    lines += ["", f"Stage orders: {right} right, {wrong} wrong."]
    Path(out_path).write_text("\n".join(lines) + "\n")
    print("\n".join(lines[-60:]))


if __name__ == "__main__":
    main()

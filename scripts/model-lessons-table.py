#!/usr/bin/env python3
"""The lessons table: for each comparison a chapter or exercise makes
(ptx_emulator/heldout/lessons-pairs.txt), the ratio of the two kernels' times on the GPU and as
the time model predicts it, at each size both were run at. A lesson holds where the predicted
ratio lies on the GPU's side of 1 (where the GPU's differs from 1 by more than 3%: less is noise,
and has no side) and within ±10% of the GPU's ratio.

    python3 scripts/model-lessons-table.py --times GPU.log --predicted PRED.log [...] [--gpu NAME] --out OUT.md

GPU.log: scripts/model-heldout.sh gpu lessons; PRED.log: scripts/model-heldout.sh predict lessons
(MODEL_GPU set to the GPU that GPU.log was timed on). --gpu names it in the table (H100 unless given).
"""
import importlib.util
import sys
from pathlib import Path

here = Path(__file__).resolve().parent
spec = importlib.util.spec_from_file_location("heldout_table", here / "model-heldout-table.py")
table = importlib.util.module_from_spec(spec)
spec.loader.exec_module(table)

TOLERANCE = 0.10
NOISE = 0.03


def pairs():
    path = here.parent / "ptx_emulator/heldout/lessons-pairs.txt"
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            chapter, first, second = line.split()
            yield chapter, first, second


def main():
    opts, key = {"--times": [], "--predicted": [], "--out": [], "--gpu": []}, None
    for a in sys.argv[1:]:
        if a in opts:
            key = a
        elif key:
            opts[key].append(a)
        else:
            sys.exit(__doc__)
    if len(opts["--out"]) != 1 or not opts["--times"] or not opts["--predicted"]:
        sys.exit(__doc__)
    gpu_name = (opts["--gpu"] or ["H100"])[0]
    measured = table.times(opts["--times"])
    predicted = {c: p for c, (p, _) in table.predictions(opts["--predicted"]).items() if p is not None}
    rows, held, judged = [], 0, 0
    for size in ("256", "1024", "4096"):
        for chapter, first, second in pairs():
            a, b = f"{first} --size {size}", f"{second} --size {size}"
            if a not in measured or b not in measured:
                continue
            gpu = measured[a] / measured[b]
            if a in predicted and b in predicted:
                model = predicted[a] / predicted[b]
                sided = abs(gpu - 1) <= NOISE or (model - 1) * (gpu - 1) > 0
                ok = sided and abs(model / gpu - 1) <= TOLERANCE
                judged += 1
                held += ok
                cell = f"{model:.3f} | {100 * (model / gpu - 1):+.0f}% | {'yes' if ok else 'no'}"
            else:
                cell = "– | – | not predicted"
            rows.append(f"| {chapter} | `{first}` / `{second}` | {size}³ | {gpu:.3f} | {cell} |")
    lines = [f"# The lessons table: each comparison a chapter makes, on the {gpu_name} and predicted", "",
             "Times: " + ", ".join(f"`{Path(p).name}`" for p in opts["--times"]) + ". Predictions: "
             + ", ".join(f"`{Path(p).name}`" for p in opts["--predicted"]) + ". Ratio: the first kernel's time over "
             "the second's. A lesson holds where the predicted ratio is on the same side of 1 as the "
             f"{gpu_name}'s (where the {gpu_name}'s differs from 1 by more than {100 * NOISE:.0f}%) and within ±{100 * TOLERANCE:.0f}% of it. "
             "Written by scripts/model-lessons-table.py.", "",
             f"| chapter | pair | size | {gpu_name} ratio | predicted ratio | off by | holds |",
             "| --- | --- | --- | ---: | ---: | ---: | --- |"] + rows
    lines += ["", f"Holds in {held} of {judged} comparisons predicted."]
    Path(opts["--out"][0]).write_text("\n".join(lines) + "\n")
    print("\n".join(rows))
    print(lines[-1])


if __name__ == "__main__":
    main()

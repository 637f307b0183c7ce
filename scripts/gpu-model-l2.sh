#!/usr/bin/env bash
# The time model's L2 term judged against Nsight Compute: the sectors the L2 sends to the SMs and
# takes from them (lts__t_sectors_srcunit_tex_op_read/write), beside the sectors the model counts
# (the report's `predicted.h100.l2_read_sectors` and `l2_written_sectors`, read from its JSON,
# which the `L2 … (N sectors read, M written)` clause of the `each term` line shows: each block's
# first-time global sectors, cp.async's and the copy engine's, and the stores). Run on the device
# from the repository root with the bundle of `cargo xtask gpu-bundle` in .gpu/.
#   bash scripts/gpu-model-l2.sh [SHAPE ...]      (default: --size 1024 and -m 1000 -n 1000 -k 1000)
# Labs: 02 and 04 to 08, the labs the L2 term was first judged on; another joins by hand.
set -uo pipefail
cd "$(dirname "$0")/.."
export CUDA_CACHE_DISABLE=1
metrics=lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_write.sum
report=$(mktemp)
trap 'rm -f "$report"' EXIT
[ $# -eq 0 ] && set -- "--size 1024" "-m 1000 -n 1000 -k 1000"
echo "# L2 sectors: Nsight Compute on $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1) beside the time model, $(date -u +%F)"
echo "| kernel and shape | ncu read | model read | model / ncu | ncu written | model written | model / ncu |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
for shape in "$@"; do
  for step in step02_gpu_naive step04_tiled step05_thread_tile step06_prefetch step07_tf32_mma step08_wgmma_tma; do
    # shellcheck disable=SC2086
    ncu_csv=$(ncu --clock-control none -k regex:matmul --launch-count 1 --metrics "$metrics" --csv \
      bash .gpu/run bin "$step" $shape --no-cublas --no-verify --reps 1 2>/dev/null)
    rm -f "$report"
    # shellcheck disable=SC2086
    emu=$(bash .gpu/run bin "$step" $shape --emulate --scaled --json-to "$report" 2>&1 | grep -m1 '^error')
    python3 - "$step $shape" "$ncu_csv" "$report" "$emu" <<'PY'
import csv, io, json, os, sys
what, ncu_csv, report, emu = sys.argv[1:5]
ncu = {}
for row in csv.DictReader(io.StringIO(ncu_csv[ncu_csv.find('"ID"'):] if '"ID"' in ncu_csv else ncu_csv)):
    if row.get("Metric Name"):
        ncu[row["Metric Name"]] = float(row["Metric Value"].replace(",", ""))
p = None
if os.path.exists(report) and os.path.getsize(report) > 0:
    p = json.load(open(report)).get("predicted")
if not p or len(ncu) < 2:
    print(f"| {what} | – | – | – | – | – | – | (ncu {len(ncu)} metrics; emulator: {emu or 'no prediction'})")
    sys.exit()
r, w = p["h100"]["l2_read_sectors"], p["h100"]["l2_written_sectors"]
nr, nw = ncu["lts__t_sectors_srcunit_tex_op_read.sum"], ncu["lts__t_sectors_srcunit_tex_op_write.sum"]
print(f"| {what} | {nr:.0f} | {r} | {r / nr:.3f} | {nw:.0f} | {w} | {w / max(nw, 1):.3f} |")
PY
  done
done

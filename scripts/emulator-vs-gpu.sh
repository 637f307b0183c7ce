#!/usr/bin/env bash
# The PTX emulator judged against the GPU, on a machine with one (run from the repository root
# with the bundle of `cargo xtask gpu-bundle` in .gpu/; Nsight Compute's ncu and python3 with
# numpy on the PATH):
#
#   1. C bit for bit: each lab's kernel on the GPU and on the emulator, same inputs, C saved by
#      both (--save-c) and compared element by element (lab 07: the largest difference too);
#   2. traffic: Nsight Compute's counters of labs 02-06 at 1024³ and at an odd shape beside the
#      emulator's traffic line for the same kernel and shape;
#   3. calibration: the shared-memory patterns of ptx_emulator/calibration/banks.cu, one launch
#      each, Nsight Compute's wavefronts beside the emulator's;
#   4. hopper: the Hopper labs' counters (the copy engine's bytes in total and per SM, the L2
#      reads multicast saves, wgmma instructions, shared-memory wavefronts) beside Nsight
#      Compute's.
#
#   bash scripts/emulator-vs-gpu.sh [bits|traffic|banks|hopper]...   (the first three by default)
#
# With NCU_ONLY=1, traffic and banks run Nsight Compute alone and keep its CSV files (in
# $OUT/ncu.tar.gz), for the emulator's side to be counted on another machine: the emulator's
# counts depend only on the PTX, which NVRTC makes the same everywhere. KERNELS and PATTERNS
# narrow the traffic and banks parts, and SHAPES (separated by ;) replaces the traffic's shapes
# (e.g. KERNELS="05 06" SHAPES="--size 1024" PATTERNS="20 23"); ONLY (a regular expression on
# the case's id, e.g. "odd|10-") narrows the bits and hopper parts.
#
# Writes its tables to standard output and its logs and C files under $OUT (or /tmp/emu-vs-gpu).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/emu-vs-gpu}
mkdir -p "$out/c" "$out/log"
export CUDA_CACHE_DISABLE=1
parts=("$@")
[ ${#parts[@]} -eq 0 ] && parts=(bits traffic banks)
# BIN_DIR (e.g. target/release) runs the programs from there instead of the bundle: with
# NCU_RECORD (a recorded run's tables) the traffic and banks parts then count the emulator's side
# on a machine without a GPU, beside the recorded Nsight Compute counts.
if [ -n "${BIN_DIR:-}" ]; then
  bin() { local name=$1; shift; "$BIN_DIR/$name" "$@"; }
else
  bash .gpu/run list > /dev/null
  bin() { bash .gpu/run bin "$@"; }
fi

# step|id|arguments
bit_cases=(
  "step02_gpu_naive|02-64|--size 64"
  "step02_gpu_naive|02-odd|-m 67 -n 45 -k 129"
  "step02_gpu_naive|02-256|--size 256"
  "step02_gpu_naive|02-uncoalesced|-m 67 -n 45 -k 129 --param COALESCED=0"
  "step03_single_block|03-32|--size 32"
  "step03_single_block|03-odd|-m 7 -n 5 -k 3"
  "step04_tiled|04-64|--size 64"
  "step04_tiled|04-odd|-m 67 -n 45 -k 129"
  "step04_tiled|04-256|--size 256"
  "step04_tiled|04-bt-odd|-m 67 -n 45 -k 129 --param BT=1 --param PAD=1"
  "step05_thread_tile|05-64|--size 64"
  "step05_thread_tile|05-odd|-m 67 -n 45 -k 129"
  "step05_thread_tile|05-256|--size 256"
  "step06_prefetch|06-64|--size 64"
  "step06_prefetch|06-odd|-m 67 -n 45 -k 129"
  "step06_prefetch|06-256|--size 256"
  "step06_prefetch|06-stream-k|-m 1000 -n 1000 -k 200 --kernel step06_prefetch/variants/stream_k.cu --param SHARE=1"
  "step10_any_shape|10-256|--size 256"
  "step10_any_shape|10-odd|-m 67 -n 45 -k 129"
  "step10_any_shape|10-split|-m 64 -n 64 -k 4000"
  "step10_any_shape|10-tiles|-m 1000 -n 1000 -k 64"
  "step10_any_shape|10-stream-k|-m 1000 -n 1000 -k 200 --param PATH=0 --param SPLIT=1 --param SHARE=1"
  "step10_any_shape|10-few-rows|-m 4 -n 300 -k 500 --param PATH=1 --param SPLIT=1"
  "step10_any_shape|10-few-cols|-m 300 -n 5 -k 400 --param PATH=2 --param SPLIT=1"
  "step10_any_shape|10-short-k|-m 300 -n 200 -k 8 --param PATH=3"
  "step07_tf32_mma|07-64|--size 64"
  "step07_tf32_mma|07-odd|-m 67 -n 45 -k 129"
  "step07_tf32_mma|07-256|--size 256"
  "step07_tf32_mma|07-s1-256|--size 256 --stage 1_mma_sync --param WN=32"
  "step07_tf32_mma|07-s2-256|--size 256 --stage 2_cp_async"
  "step07_tf32_mma|07-s3-256|--size 256 --stage 3_padded_rows"
  "step07_tf32_mma|07-s4-256|--size 256 --stage 4_swapped_operands"
  "step07_tf32_mma|07-s5-odd|-m 67 -n 45 -k 129 --stage 5_paired_columns"
  "step08_wgmma_tma|08-256|--size 256"
  "step08_wgmma_tma|08-odd|-m 67 -n 45 -k 129"
  "step08_wgmma_tma|08-1024|--size 1024"
  "step08_wgmma_tma|08-narrow|-m 300 -n 200 -k 500 --param BM=128 --param BN=64 --param STAGES=2"
  "step08_wgmma_tma|08-transposing|-m 67 -n 45 -k 129 --kernel step08_wgmma_tma/variants/transposing_prologue.cu"
  "step08_wgmma_tma|08-in-pipeline|--size 256 --kernel step08_wgmma_tma/variants/in_pipeline_transpose.cu"
  "step09_3xtf32|09-256|--size 256"
  "step09_3xtf32|09-odd|-m 67 -n 45 -k 129"
  "step09_3xtf32|09-split|-m 130 -n 257 -k 1030"
  "step09_3xtf32|09-in-pipeline|--size 256 --kernel step09_3xtf32/variants/in_pipeline.diff"
  "step11_int8_crt|11-256|--size 256"
  "step11_int8_crt|11-odd|-m 67 -n 45 -k 129"
  "step11_int8_crt|11-1024|--size 1024"
  "step11_int8_crt|11-lognormal|-m 130 -n 257 -k 192 --inputs lognormal:3"
  "step11_int8_crt|11-wide|-m 200 -n 100 -k 300 --inputs wide:30"
  "step11_int8_crt|11-moduli16|-m 67 -n 45 -k 129 --moduli 16"
  "step11_int8_crt|11-identity|--size 256 --inputs identity+noise:1e-7"
  "step11_int8_crt|11-special|--a $out/special-a.npy --b $out/special-b.npy"
  "step11_int8_crt|11-fused|--size 256 --kernel step11_int8_crt/variants/fused.cu"
  "step12_persistent_clusters|12-256|--size 256"
  "step12_persistent_clusters|12-odd|-m 67 -n 45 -k 129"
  "step12_persistent_clusters|12-1024|--size 1024"
  "step12_persistent_clusters|12-cut|-m 256 -n 256 -k 2048"
  "step12_persistent_clusters|12-cut-odd|-m 300 -n 260 -k 2000"
  "step12_persistent_clusters|12-cluster4|--size 256 --param BM=128 --param STAGES=6 --param CLUSTER=4"
  "step12_persistent_clusters|12-s1|--size 256 --stage 1_persistent"
  "step12_persistent_clusters|12-s2|--size 256 --stage 2_multicast"
  "step12_persistent_clusters|12-s3|--size 256 --stage 3_tma_store"
  "step12_persistent_clusters|12-s4|--size 256 --stage 4_in_flight"
  "step12_persistent_clusters|12-pp-many|-m 3000 -n 2100 -k 97 --kernel step12_persistent_clusters/variants/ping_pong.cu"
  "step12_persistent_clusters|12-pp-odd|-m 67 -n 45 -k 129 --kernel step12_persistent_clusters/variants/ping_pong.cu"
  "step12_persistent_clusters|12-pp-c2|-m 3000 -n 2100 -k 97 --kernel step12_persistent_clusters/variants/ping_pong.cu --param CLUSTER=2"
  "step12_persistent_clusters|12-mb-many|-m 3000 -n 2100 -k 97 --kernel step12_persistent_clusters/variants/multicast_b.cu"
  "step12_persistent_clusters|12-mb-odd|-m 67 -n 45 -k 129 --kernel step12_persistent_clusters/variants/multicast_b.cu"
)

bits() {
  # Inputs for the FP32 path: NaN, an infinity, subnormals, a row at 2^70 and a zero row in A
  # (67x129), an infinity and a column at 2^-60 in B (129x45); the rest uniform.
  python3 - "$out" <<'EOF'
import sys, numpy as np
r = np.random.default_rng(7)
a = r.uniform(-1, 1, (67, 129)).astype(np.float32)
b = r.uniform(-1, 1, (129, 45)).astype(np.float32)
a[3, 5], a[10, 0], a[20] = np.nan, np.inf, a[20] * np.float32(2.0**-130)
a[30] *= np.float32(2.0**70); a[40] = 0
b[7, 4], b[:, 9] = -np.inf, b[:, 9] * np.float32(2.0**-60)
np.save(f"{sys.argv[1]}/special-a.npy", a); np.save(f"{sys.argv[1]}/special-b.npy", b)
EOF
  echo "## C from the GPU and from the emulator"
  echo
  echo "| step | shape and parameters | GPU launch | emulated launch | equal elements | largest difference |"
  echo "|---|---|---|---|---:|---:|"
  for c in "${bit_cases[@]}"; do
    IFS='|' read -r step id args <<< "$c"
    [[ "$id" =~ ${ONLY:-.} ]] || continue
    # shellcheck disable=SC2086
    rm -f "$out/log/$id-gpu.json" "$out/log/$id-emu.json"
    bin "$step" $args --no-cublas --reps 1 --save-c "$out/c/$id-gpu.npy" --json-to "$out/log/$id-gpu.json" \
      > "$out/log/$id-gpu.log" 2>&1
    # One launch on each side: C is compared here, so the emulated run need not verify (and launch
    # a second time to check what the first left behind).
    # shellcheck disable=SC2086
    bin "$step" $args --emulate --no-verify --save-c "$out/c/$id-emu.npy" --json-to "$out/log/$id-emu.json" \
      > "$out/log/$id-emu.log" 2>&1
    python3 - "$step" "$args" "$out/c/$id-gpu.npy" "$out/c/$id-emu.npy" "$out/log/$id-gpu.json" "$out/log/$id-emu.json" <<'EOF'
import json, os, sys, numpy as np
step, args, g, e, gj, ej = sys.argv[1:7]

def launch(report):
    """The launch from the report's geometry: the grid and block, and the rows of whole tiles
    where a Stream-K layout shares the others (empty where the run wrote no report)."""
    if not os.path.exists(report):
        return ""
    geo = json.load(open(report))["kernel"]["geometry"]
    (gx, gy, gz), (bx, by, bz) = geo["grid"], geo["block"]
    text = f"grid {gx}×{gy}×{gz} · block {bx}×{by}×{bz} ({bx * by * bz} threads)"
    whole = geo.get("whole_rows")
    if whole is not None and whole < gy:
        text += f" whole rows 0–{whole - 1}" if whole else " every tile shared"
    return text

gl, el = launch(gj), launch(ej)
try:
    a, b = np.load(g), np.load(e)
except Exception as x:
    print(f"| {step} | {args} | {gl} | {el} | missing ({x.__class__.__name__}) | |"); sys.exit()
same = int((a.view(np.uint32) == b.view(np.uint32)).sum())
# The largest difference where the bits differ (NaN where one holds NaN and the other not).
differ = a.view(np.uint32) != b.view(np.uint32)
diff = float(np.max(np.abs(a[differ].astype(np.float64) - b[differ].astype(np.float64)))) if differ.any() else 0.0
print(f"| {step} | {args} | {gl} | {el} | {same} of {a.size} | {diff:.3g} |")
EOF
  done
  echo
}

metrics=l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,smsp__inst_executed_op_shared_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,smsp__inst_executed_op_shared_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,smsp__sass_thread_inst_executed_op_ffma_pred_on.sum

# One kernel under ncu and on the emulator: a row per counter (ncu, emulator, ratio).
compare_traffic() { # id step args...
  local id=$1 step=$2; shift 2
  if [ -n "${NCU_RECORD:-}" ]; then
    # Nsight Compute's counts from a recorded run's table, as CSV.
    python3 - "$step $*" "$NCU_RECORD" > "$out/log/$id-ncu.csv" <<'EOF'
import sys
what, record = sys.argv[1:3]
print('"Metric Name","Metric Value"')
for line in open(record):
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if len(cells) >= 3 and cells[0] == what and cells[1].startswith(("l1tex", "smsp")):
        print(f'"{cells[1]}","{cells[2]}"')
EOF
  else
    ncu --clock-control none -k regex:matmul --launch-count 1 --metrics "$metrics" --csv \
      bash .gpu/run bin "$step" "$@" --no-cublas --no-verify --reps 1 > "$out/log/$id-ncu.csv" 2> "$out/log/$id-ncu.err"
  fi
  rm -f "$out/log/$id-emu.json"
  [ "${NCU_ONLY:-0}" = 1 ] && { mkdir -p "$out/ncu" && cp "$out/log/$id-ncu.csv" "$out/ncu/"; : > "$out/log/$id-emu.log"; }
  [ "${NCU_ONLY:-0}" = 1 ] ||
    bin "$step" "$@" --emulate --no-verify --json-to "$out/log/$id-emu.json" > "$out/log/$id-emu.log" 2>&1
  python3 - "$id" "$step $*" "$out/log/$id-ncu.csv" "$out/log/$id-emu.json" <<'EOF'
import csv, json, os, sys
id, what, ncu_csv, emu_json = sys.argv[1:5]
ncu = {}
with open(ncu_csv) as f:
    rows = [r for r in csv.reader(l for l in f if l.startswith('"'))]
if rows:
    head = rows[0]
    for r in rows[1:]:
        d = dict(zip(head, r))
        if "Metric Name" in d:
            ncu[d["Metric Name"]] = float(d["Metric Value"].replace(",", ""))
# The emulator's counts: the report's traffic fields (NaN where the run wrote no report).
report = json.load(open(emu_json)) if os.path.exists(emu_json) else {}
traffic = report.get("device", {}).get("emulated", {}).get("traffic", {})
num = lambda field: float(traffic.get(field, float("nan")))
emu = {
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": num("global_load_requests"),
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": num("global_load_sectors"),
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum": num("global_store_requests"),
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum": num("global_store_sectors"),
    "smsp__inst_executed_op_shared_ld.sum": num("shared_load_requests"),
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": num("shared_load_wavefronts"),
    "smsp__inst_executed_op_shared_st.sum": num("shared_store_requests"),
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum": num("shared_store_wavefronts"),
}
for k, e in emu.items():
    g = ncu.get(k, float("nan"))
    ratio = e / g if g else float("nan")
    print(f"| {what} | {k} | {g:.0f} | {e:.0f} | {ratio:.4f} |")
ffma = ncu.get("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum")
if ffma is not None:
    print(f"| {what} | FFMA thread instructions (ncu) | {ffma:.0f} | | |")
EOF
}

traffic() {
  echo "## Nsight Compute's counters beside the emulator's"
  echo
  echo "| kernel and shape | counter | ncu | emulator | emulator / ncu |"
  echo "|---|---|---:|---:|---:|"
  local want=" ${KERNELS:-02 02u 04 04bt 04btpad 05 06} "
  local shapes=("--size 1024" "-m 1000 -n 999 -k 1001")
  [ -n "${SHAPES:-}" ] && IFS=';' read -r -a shapes <<< "$SHAPES"
  for shape in "${shapes[@]}"; do
    tag=$(echo "$shape" | tr -dc '0-9')
    for k in 02 02u 04 04bt 04btpad 05 06; do
      [[ "$want" == *" $k "* ]] || continue
      case $k in
        02) set -- step02_gpu_naive ;;
        02u) set -- step02_gpu_naive --param COALESCED=0 ;;
        04) set -- step04_tiled ;;
        04bt) set -- step04_tiled --param BT=1 --param PAD=0 ;;
        04btpad) set -- step04_tiled --param BT=1 --param PAD=1 ;;
        05) set -- step05_thread_tile ;;
        06) set -- step06_prefetch ;;
      esac
      # shellcheck disable=SC2086
      compare_traffic "$k-$tag" "$1" $shape "${@:2}"
    done
  done
  echo
}

banks() {
  echo "## Shared-memory patterns (ptx_emulator/calibration/banks.cu), one block of 32 warps"
  echo
  echo "| pattern | counter | ncu | emulator | emulator / ncu |"
  echo "|---|---|---:|---:|---:|"
  for p in ${PATTERNS:-$(seq 1 37)}; do
    sed "s/^#define PATTERN 1$/#define PATTERN $p/" ptx_emulator/calibration/banks.cu > "$out/log/banks-$p.cu"
    compare_traffic "banks-$p" step02_gpu_naive -m 32 -n 32 -k 1 --kernel "$out/log/banks-$p.cu" | grep -E "shared|PATTERN" | sed "s/^| step02_gpu_naive[^|]*|/| $p |/"
  done
  echo
}

# The Hopper labs under ncu: every counter it has for the copy engine (their names differ between
# versions, so they are looked up), the tensor pipe's wgmma, L2 reads and the shared and global
# counters, beside the emulator's traffic line for the same kernel and shape.
hopper() {
  echo "## Hopper's counters: Nsight Compute beside the emulator"
  echo
  local found
  found=$(ncu --query-metrics --chip gh100 2> /dev/null | awk '{print $1}' | grep -E '^(l1tex|lts|sm|smsp)__' | grep -iE 'tma|utma|bulk' | grep -v average | sed 's/$/.sum/' | paste -sd, -)
  echo "copy-engine metrics found: ${found:-none}"
  echo
  local base=$metrics,sm__inst_executed_pipe_tensor_op_gmma.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_op_read.sum,dram__bytes_read.sum,l1tex__m_xbar2l1tex_read_sectors_mem_global_op_tma_ld.max,l1tex__m_xbar2l1tex_read_sectors_mem_global_op_tma_ld.min,l1tex__m_l1tex2xbar_write_bytes_mem_global_op_tma_st.max,l1tex__m_l1tex2xbar_write_bytes_mem_global_op_tma_st.min
  echo "| kernel and shape | counter | ncu | emulator | emulator / ncu |"
  echo "|---|---|---:|---:|---:|"
  local cases=(
    "08-1024|step08_wgmma_tma --size 1024"
    "08-odd|step08_wgmma_tma -m 1000 -n 999 -k 1001"
    "12-1024|step12_persistent_clusters --size 1024"
    "12-1024-c1|step12_persistent_clusters --size 1024 --param CLUSTER=1"
    "12-odd|step12_persistent_clusters -m 1000 -n 999 -k 1001"
    "12pp-1024|step12_persistent_clusters --size 1024 --kernel step12_persistent_clusters/variants/ping_pong.cu"
    "12mb-1024|step12_persistent_clusters --size 1024 --kernel step12_persistent_clusters/variants/multicast_b.cu"
    "12mb-odd|step12_persistent_clusters -m 1000 -n 999 -k 1001 --kernel step12_persistent_clusters/variants/multicast_b.cu"
    "11-1024|step11_int8_crt --size 1024"
    "11-odd|step11_int8_crt -m 1000 -n 999 -k 1001"
  )
  for c in "${cases[@]}"; do
    IFS='|' read -r id args <<< "$c"
    [[ "$id" =~ ${ONLY:-.} ]] || continue
    # shellcheck disable=SC2086
    ncu --clock-control none -k regex:matmul --launch-count 1 --metrics "$base${found:+,$found}" --csv \
      bash .gpu/run bin $args --no-cublas --no-verify --reps 1 > "$out/log/$id-ncu.csv" 2> "$out/log/$id-ncu.err" ||
      ncu --clock-control none -k regex:matmul --launch-count 1 --metrics "$base" --csv \
        bash .gpu/run bin $args --no-cublas --no-verify --reps 1 > "$out/log/$id-ncu.csv" 2> "$out/log/$id-ncu.err"
    # shellcheck disable=SC2086
    bin $args --emulate --no-verify > "$out/log/$id-emu.log" 2>&1
    python3 - "$args" "$out/log/$id-ncu.csv" "$out/log/$id-emu.log" <<'EOF'
import csv, re, sys
what, ncu_csv, emu_log = sys.argv[1:4]
ncu = {}
with open(ncu_csv) as f:
    rows = [r for r in csv.reader(l for l in f if l.startswith('"'))]
if rows:
    for r in rows[1:]:
        d = dict(zip(rows[0], r))
        if "Metric Name" in d:
            try:
                ncu[d["Metric Name"]] = float(d["Metric Value"].replace(",", ""))
            except ValueError:
                pass
line = next((l for l in open(emu_log).read().splitlines() if l.strip().startswith("traffic")), "")
num = lambda pat: float(re.search(pat, line).group(1).replace(",", "")) if re.search(pat, line) else float("nan")
emu = {
    "smsp__inst_executed_op_shared_ld.sum": num(r"shared loads ([\d,]+)"),
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": num(r"shared loads [\d,]+ · ([\d,]+) wavefronts"),
    "smsp__inst_executed_op_shared_st.sum": num(r"wavefronts \([\d.]+\) · stores ([\d,]+) · [\d,]+ wavefronts"),
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum": num(r"wavefronts \([\d.]+\) · stores [\d,]+ · ([\d,]+) wavefronts"),
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum": num(r"· stores [\d,]+ · ([\d,]+) sectors"),
    # Counted a warp at a time, four per warpgroup's instruction, as the emulator counts them.
    "sm__inst_executed_pipe_tensor_op_gmma.sum": num(r"wgmma ([\d,]+)"),
    # What the blocks' L1s receive from L2: the sectors read, and those multicast delivers to
    # further blocks; the boxes' bytes; multicast's 128-byte requests to L2.
    "l1tex__m_xbar2l1tex_read_sectors_mem_global_op_tma_ld.sum":
        num(r"\(([\d,]+) sectors read\)") + (num(r"bytes \(([\d,]+) sectors\) more") if "multicast" in line else 0),
    "copy engine: box bytes loaded": num(r"copy engine loads [\d,]+ · ([\d,]+) bytes of boxes"),
    # Per SM: the most and the least sectors an SM's L1 receives (blocks dealt to SMs in turn).
    "l1tex__m_xbar2l1tex_read_sectors_mem_global_op_tma_ld.max": num(r"an SM receives [\d,]+ to ([\d,]+) sectors"),
    "l1tex__m_xbar2l1tex_read_sectors_mem_global_op_tma_ld.min": num(r"an SM receives ([\d,]+) to"),
    "l1tex__m_l1tex2xbar_write_bytes_mem_global_op_tma_st.max": num(r"an SM stores [\d,]+ to ([\d,]+)\)"),
    "l1tex__m_l1tex2xbar_write_bytes_mem_global_op_tma_st.min": num(r"an SM stores ([\d,]+) to"),
    "l1tex__m_l1tex2xbar_read_requests_mem_global_op_tma_ld_dest_multicast.sum":
        num(r"([\d,]+) bytes of them by multicast") / 128 if "multicast" in line else 0,
    "copy engine: bytes multicast delivers to more blocks": num(r"which delivers ([\d,]+) bytes"),
    "l1tex__m_l1tex2xbar_write_bytes_mem_global_op_tma_st.sum": num(r"copy engine loads .* · stores [\d,]+ · ([\d,]+) bytes"),
    "copy engine: bytes stored": num(r"copy engine loads .* · stores [\d,]+ · ([\d,]+) bytes"),
}
for k, e in emu.items():
    g = ncu.get(k, float("nan"))
    ratio = e / g if g and g == g else float("nan")
    print(f"| {what} | {k} | {g:.0f} | {e:.0f} | {ratio:.4f} |")
for k, g in sorted(ncu.items()):
    if k not in emu:
        print(f"| {what} | {k} | {g:.0f} | | |")
EOF
  done
  echo
}

nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2> /dev/null || echo "no GPU here: Nsight Compute's counts from ${NCU_RECORD:-nowhere}"
for part in "${parts[@]}"; do "$part"; done
[ -d "$out/ncu" ] && tar -czf "$out/ncu.tar.gz" -C "$out" ncu && rm -rf "$out/ncu"
tar -czf "$out/c-and-logs.tar.gz" -C "$out" c log 2> /dev/null && rm -rf "$out/c" "$out/log"

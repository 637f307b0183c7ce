#!/usr/bin/env bash
# Every GPU lab on a matrix past 2^31 elements, on ONE H200 (141 GB): each lab's kernel compiled
# wide (WIDE=1: 64-bit offsets, as a run sets it where a matrix passes 2^31 - 1 elements), run
# once at a shape it serves, verified against cuBLAS DGEMM; each lab's verdict line and the
# seconds it took, then one summary line. Run from the repository root with the bundle of
# `cargo xtask gpu-bundle --bins` in .gpu/ (or BIN_DIR, a folder of the release programs):
#
#   bash scripts/gpu-wide.sh                          # every lab below
#   ONLY="02 03 04 05 06 07" bash scripts/gpu-wide.sh   # some of them: a run of every lab may pass
#   ONLY="08 09 10 11 12 13" bash scripts/gpu-wide.sh   # the 600 s of one call of the device
#
# Labs: 02 and 04 to 12 at a shape each serves, 03 shown refusing (one block computes all of C,
# a thread an element, from shared memory), 13 with --simulate 2 (two ranks on the one GPU, whose gathered A
# passes 2^31 elements). Lab 01 runs on the CPU: docs/src/results/runs/2026-11-29-cpu-step01-wide.log.
#
# The shapes: A is M×K with M·K > 2^31 - 1. Labs 02 and 04 launch a block row per 32 rows of C
# in grid.y (at most 65535), so M = 2097120 = 65535·32 and K = 1025 (A: 2,149,548,000 elements).
# The labs whose rows must be 16-byte multiples or which feed the copy engine take K = 1024 and
# M = 2^21 (A: 2,147,483,648 elements), which no launch pads. N = 16 keeps C and B small and each
# run's FLOPs near 70 G, so the kernels take milliseconds and the host (drawing A, cuBLAS DGEMM's
# reference, which converts A to f64 four times) most of each run's time.
# Writes the log to $OUT/gpu-wide.log (OUT defaults to /tmp/gpu-wide); exits non-zero where a lab
# that should pass does not, or lab 03 does not refuse.
set -uo pipefail
cd "$(dirname "$0")/.."
if [ -n "${BIN_DIR:-}" ]; then
  bin() { local name=$1; shift; "$BIN_DIR/$name" "$@"; }
else
  bash .gpu/run list > /dev/null || exit 1
  bin() { bash .gpu/run bin "$@"; }
fi
out=${OUT:-/tmp/gpu-wide}
mkdir -p "$out"
log=$out/gpu-wide.log
export CUDA_CACHE_DISABLE=1

tall="-m 2097120 -n 16 -k 1025"
aligned="-m 2097152 -n 16 -k 1024"
# step|arguments|expected: pass, or the sentence of a refusal
cases=(
  "step02_gpu_naive|$tall|pass"
  "step03_single_block|$tall|one block"
  "step04_tiled|$tall|pass"
  "step05_thread_tile|$tall|pass"
  "step06_prefetch|$tall|pass"
  "step07_tf32_mma|$aligned|pass"
  "step08_wgmma_tma|$aligned|pass"
  "step09_3xtf32|$aligned|pass"
  "step10_any_shape|$tall|pass"
  "step11_int8_crt|$aligned|pass"
  "step12_persistent_clusters|$aligned|pass"
  "step13_collective_matmul|--simulate 2 -m 1048576 -n 16 -k 1024 --reps 3|pass"
)

status=0
{
  echo "# Every GPU lab on a matrix past 2^31 elements (scripts/gpu-wide.sh), $(date -u +%F), one GPU"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  grep MemAvailable /proc/meminfo
  echo "# Each run: cargo run --release -p STEP -- ARGS (the built program, the same arguments)"
} > "$log"
for case in "${cases[@]}"; do
  IFS='|' read -r step args expect <<< "$case"
  lab=${step:4:2}
  if [ -n "${ONLY:-}" ] && ! grep -qw "$lab" <<< "$ONLY"; then continue; fi
  started=$(date +%s%N)
  # shellcheck disable=SC2086  # the arguments are words
  output=$(bin "$step" $args 2>&1); rc=$?
  seconds=$(awk -v a="$started" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')
  {
    echo
    echo "## lab $lab"
    echo "\$ cargo run --release -p $step -- $args"
    echo "$output"
    echo "# exit $rc, $seconds s"
  } >> "$log"
  if [ "$expect" = pass ]; then
    # The verify line (lab 13 has one a way and product): the first that fails, else the first.
    lines=$(grep -E '^ *verify' <<< "$output")
    verdict=$(grep -m 1 FAIL <<< "$lines" || head -n 1 <<< "$lines")
    [ $rc -eq 0 ] || status=1
  else
    verdict=$(tail -n 1 <<< "$output")
    { [ $rc -ne 0 ] && grep -q "$expect" <<< "$output"; } || status=1
  fi
  printf 'lab %s  exit %d  %6s s  %s\n' "$lab" "$rc" "$seconds" "${verdict:-(no verdict line)}" | tee -a "$log"
done
echo "gpu-wide: $(grep -c '^lab ' "$log") labs run, log in $log, $([ $status = 0 ] && echo 'all as expected' || echo 'SOME NOT AS EXPECTED')" | tee -a "$log"
exit $status

#!/usr/bin/env bash
# The GPU checks of step 10's short side (issue 41) in one call of the device, from a gpu-bundle
# (../shared/tools/gpu-bundle) carried as .gpu. Writes its logs under $OUT (or ./gpu-check):
# step 10's GPU tests; the step at shapes with a short side, at its choice and with the tiles
# forced (--param PATH=0), each against cuBLAS SGEMM in its own run; compute-sanitizer's memcheck
# and racecheck on each path.
#
#   CUDA_CACHE_DISABLE=1 bash scripts/gpu-check-short-side.sh
set -uo pipefail
out=${OUT:-gpu-check}
mkdir -p "$out"
bash .gpu/run list > /dev/null || exit 1
dir=$(ls -d "${TMPDIR:-/tmp}"/gpu-bundle-*/ 2>/dev/null | head -1)
[ -n "$dir" ] || { echo "gpu-check: no unpacked bundle" >&2; exit 1; }
header() { { nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; git rev-parse --short HEAD 2>/dev/null; } > "$out/$1"; }
fail=0
shapes="1,4096,4096 2,4096,4096 4,4096,4096 8,4096,4096 4096,1,4096 4096,4,4096 4096,8,4096 1,16384,16384 16384,1,16384 4099,3,2049 3,4099,2049 2,2,1048576 1,1,1048576 8,8,65536 1,14336,4096 4096,2,11008"
header speed.log
for s in $shapes; do
  IFS=, read -r m n k <<< "$s"
  for forced in "" "--param PATH=0"; do
    echo "== $m×$n×$k ${forced:-choice}"
    bash .gpu/run bin step10_any_shape -m "$m" -n "$n" -k "$k" $forced 2>&1 | grep -E "params|choice|  time|speed|verify|error"
  done
done >> "$out/speed.log"
grep -E "^==|speed" "$out/speed.log" | sed 's/ · [0-9.]*% of FP32 peak.*//'
header sanitize.log
for s in 4099,3,2049 3,4099,2049 2,2,65536 8,1000,4097; do
  IFS=, read -r m n k <<< "$s"
  for tool in memcheck racecheck; do
    echo "== $tool $m×$n×$k"
    compute-sanitizer --tool $tool --error-exitcode 9 "$dir/bin/step10_any_shape" -m "$m" -n "$n" -k "$k" --reps 1 --no-cublas 2>&1 | grep -E "ERROR SUMMARY|verify|params" || fail=1
  done
done >> "$out/sanitize.log"
grep -E "ERROR SUMMARY" "$out/sanitize.log" | sort | uniq -c
header tests.log
t=$(for f in "$dir"/tests/*; do "$f" --list 2>/dev/null | grep -q "^gpu_forced_paths_and_splits_match_the_reference: test" && echo "$f"; done)
timeout 400 "$t" --include-ignored --test-threads=1 --skip nvrtc_ >> "$out/tests.log" 2>&1 || fail=1
grep -E "^test |test result|panicked" "$out/tests.log"
exit $fail

#!/usr/bin/env bash
# Part 3 of step 11's unbiased-rounding checks (see gpu-check-unbiased.sh): step 11 before (.gpu-old)
# and after (.gpu), in turn, at 4096³ on three families, twice; coherent inputs at 4096³; then
# step 11's GPU tests but the planted faults, until the call's end.
set -u
export CUDA_CACHE_DISABLE=1
R="bash .gpu/run"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for run in 1 2; do
  for x in uniform normal lognormal:2; do
    for v in old new; do
      [ $v = old ] && c=".gpu-old/bin/step11_int8_crt" || c="$R bin step11_int8_crt"
      echo "== $run $v $x: $($c --size 4096 --inputs $x 2>&1 | grep -E '^  speed' | grep -oE '[0-9.]+% of cuBLAS SGEMM')"
    done
  done
done
python3 scripts/coherent-inputs.py /tmp/c4 4096 4096 4096 >/dev/null
echo "== coherent 4096: $($R bin step11_int8_crt --a /tmp/c4/a.npy --b /tmp/c4/b.npy 2>&1 | grep -E 'normwise|speed')"
bash .gpu/run list >/dev/null
dir=$(ls -d /tmp/gpu-bundle-*/ | head -1)
b=$(for x in "$dir"/tests/*; do "$x" --list 2>/dev/null | grep -q "^gpu_coherent_half_integers_pass_and_rounding_to_nearest_fails: test" && echo "$x"; done | head -1)
echo "=== step 11's GPU tests: $(basename "$b")"
timeout 420 "$b" --include-ignored --test-threads=1 --skip gpu_planted_faults_are_caught gpu_ 2>&1 | tee $OUT/tests.log | grep -vE '^test .* ok$' | grep -v '^$' | tail -30

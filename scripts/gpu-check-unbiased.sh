#!/usr/bin/env bash
# The GPU checks of step 11's unbiased rounding (the issue on FP32 from the tensor cores), from a
# gpu-bundle carried as .gpu, and the bundle of the code before the change carried as .gpu-old
# (its bin/ folder: step11_int8_crt and compare built from the commit before):
#
#   bash scripts/gpu-check-unbiased.sh 1   # coherent inputs before and after, step 11's GPU tests,
#                                          # compute-sanitizer on the changed kernels
#   bash scripts/gpu-check-unbiased.sh 2   # every input family at 4096³ before and after (speed)
set -u
export CUDA_CACHE_DISABLE=1
part=${1:-}
R="bash .gpu/run"
keep() { grep -E "^(  shape|  speed|  paths|  needs|  verify|           (per element|normwise|next launch)|error)"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
case "$part" in
  1)
    for shape in "16 16 4096" "256 256 1000" "1024 1024 4096" "4096 4096 4096"; do
      dir=/tmp/coherent-${shape// /x}
      python3 scripts/coherent-inputs.py "$dir" $shape
      echo "== before: step 11 on coherent inputs $shape"
      timeout 120 .gpu-old/bin/step11_int8_crt --a "$dir/a.npy" --b "$dir/b.npy" 2>&1 | keep
      echo "== after"
      timeout 120 $R bin step11_int8_crt --a "$dir/a.npy" --b "$dir/b.npy" 2>&1 | keep
    done
    bash .gpu/run list >/dev/null
    dir=$(ls -d /tmp/gpu-bundle-*/ | head -1)
    b=$(for x in "$dir"/tests/*; do "$x" --list 2>/dev/null | grep -q "^gpu_coherent_half_integers_pass_and_rounding_to_nearest_fails: test" && echo "$x"; done | head -1)
    echo "=== step 11's GPU tests: $(basename "$b")"
    timeout 400 "$b" --include-ignored --test-threads=1 gpu_ 2>&1 | grep -vE '^test .* ok$' | grep -v '^$' | tail -40
    ;;
  2)
    python3 scripts/families-inputs.py /tmp/fi 4096 > /tmp/pairs
    pairs=$(grep -o -- '--pair [^ ]*' /tmp/pairs | tr '\n' ' ')
    for run in old new old new; do
      [ $run = old ] && c=".gpu-old/bin/compare" || c="$R bin compare"
      echo "== $run: compare --families --size 4096"
      timeout 280 $c --families --size 4096 $pairs --out /tmp/fam-$run 2>&1 | grep -E "^\| " | cut -d'|' -f2,3,10,11,12,13
    done
    ;;
esac

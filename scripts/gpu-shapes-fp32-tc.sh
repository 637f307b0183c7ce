#!/usr/bin/env bash
# The shape table of the issue on FP32 from the tensor cores: steps 09 and 11 at 1024³,
# 1024×1024×4096, 2048³, 4096³ and 8192³, each as a share of cuBLAS SGEMM in its own run, the
# whole table twice, from a gpu-bundle carried as .gpu. Prints one line a run; `RUNS=3` for more.
#
#   bash scripts/gpu-shapes-fp32-tc.sh
set -u
runs=${RUNS:-2}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for run in $(seq "$runs"); do
  for shape in "-m 1024 -n 1024 -k 1024" "-m 1024 -n 1024 -k 4096" "-m 2048 -n 2048 -k 2048" \
               "-m 4096 -n 4096 -k 4096" "-m 8192 -n 8192 -k 8192"; do
    for step in step09_3xtf32 step11_int8_crt; do
      out=$(timeout 120 bash .gpu/run bin "$step" $shape 2>&1)
      share=$(grep -E '^  speed' <<< "$out" | grep -oE '[0-9.]+% of cuBLAS SGEMM')
      verdict=$(grep -E '^  verify' <<< "$out" | awk '{print $2}')
      echo "run $run · $step · ${shape//-/} · ${share:-no speed line} · ${verdict:-no verdict}"
    done
  done
done

#!/usr/bin/env bash
# Step 10 at shapes a GPU engineer brings, each in a program run of its own beside cuBLAS SGEMM,
# from a gpu-bundle (`cargo xtask gpu-bundle --bins`) carried as .gpu. The shapes: the six where
# the block tiles fell off (few columns and many rows, a column against a long K, …), then those
# scripts/step10-shapes.py draws with SEED (default 20261129). Keeps the lines that matter in
# $OUT/step10-shapes.log and each run's JSON in $OUT/step10-shapes.jsonl.
#
#   CUDA_CACHE_DISABLE=1 bash scripts/gpu-step10-shapes.sh [SEED] [COUNT]
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-./gpu-step10-shapes}
mkdir -p "$out"
seed=${1:-20261129}
count=${2:-24}
gpu="$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
{
  echo "# $gpu, $(date -u '+%F %H:%M') UTC: step10_any_shape -m M -n N -k K, one program run each, beside cuBLAS SGEMM: six cliff shapes, then $count drawn by scripts/step10-shapes.py $seed"
  { printf '4194304 4 16\n4257 1 2357\n35304 29 3\n28 14759 464\n2097152 8 8\n257 1 65537\n'
    python3 scripts/step10-shapes.py "$seed" "$count"; } |
    while read -r m n k; do
      echo "=== ${m}×${n}×${k}"
      timeout 60 bash .gpu/run bin step10_any_shape -m "$m" -n "$n" -k "$k" --record "$out/step10-shapes.jsonl" 2>&1 |
        grep -E "^  (choice|kernel|time|speed|model|verify)|^error" | cut -c1-330
    done
} > "$out/step10-shapes.log" 2>&1
grep -c "verify   PASS" "$out/step10-shapes.log"

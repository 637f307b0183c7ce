#!/usr/bin/env bash
# Each lab's hands-on exercise on the PTX emulator, as a learner without a GPU runs it: the
# starting file (which must fail, or for step 06 pass two barriers a slice), then the answer (the
# step's own kernel), at one small shape, with their verify and traffic lines.
#   scripts/emulator-exercises.sh [BIN_DIR]      (default target/release; build it first)
set -uo pipefail
cd "$(dirname "$0")/.."
bin=${1:-target/release}
for case in "step02_gpu_naive mapping -m 67 -n 45 -k 129" "step03_single_block staging -m 20 -n 30 -k 17" \
            "step04_tiled tiles -m 67 -n 45 -k 129" "step05_thread_tile outer_product -m 67 -n 45 -k 129" \
            "step06_prefetch prefetch -m 128 -n 256 -k 160" "step07_tf32_mma mma -m 67 -n 45 -k 129" \
            "step10_any_shape split_k -m 64 -n 64 -k 4000"; do
  read -r step exercise shape <<< "$case"
  for kernel in "--kernel $step/exercises/$exercise.cu" ""; do
    echo "\$ cargo run --release -p $step -- --emulate $shape $kernel"
    # shellcheck disable=SC2086
    "$bin/$step" --emulate $shape $kernel 2>&1 | grep -E "^(step|  traffic|  verify|error)"
    echo
  done
done

#!/usr/bin/env bash
# Step 13's levers on a machine of several GPUs (carry .gpu): the exchange by NCCL with 0 and 16
# SMs left to it, and by the copy engines, on 2 GPUs and on all of them. Output: $OUT/sweep.txt.
export NCCL_NVLS_ENABLE=0
b="bash .gpu/run bin step13_collective_matmul"
gpus=$(nvidia-smi -L | wc -l)
for g in 2 "$gpus"; do
    for way in "--exchange nccl --leave-sms 0" "--exchange nccl --leave-sms 16" "--exchange copies --leave-sms 0"; do
        echo "=== gpus $g $way"
        # shellcheck disable=SC2086
        timeout 100 $b --gpus "$g" $way --reps 10 "$@" 2>&1 |
            grep -E "^(devices|sms|product|verify|baseline|ring|speedup|model|error)|a shard|a ring step|all-gather|gathered product|of its bound"
    done
done > "$OUT/sweep.txt" 2>&1
cat "$OUT/sweep.txt"

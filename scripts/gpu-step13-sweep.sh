#!/usr/bin/env bash
# Step 13's levers on a machine of several GPUs (carry .gpu): the exchange by NCCL with 0 and 16
# SMs left to it, and by the copy engines, on 2 GPUs and on all of them. Output: $OUT/sweep.txt,
# and each run's report as JSON, a line each, in $OUT/sweep.jsonl (scripts/record-json.sh).
export NCCL_NVLS_ENABLE=0
source scripts/record-json.sh
b="bash .gpu/run bin step13_collective_matmul"
gpus=$(nvidia-smi -L | wc -l)
jsonl="$OUT/sweep.jsonl"
: > "$jsonl"
for g in 2 "$gpus"; do
    for way in "--exchange nccl --leave-sms 0" "--exchange nccl --leave-sms 16" "--exchange copies --leave-sms 0"; do
        echo "=== gpus $g $way"
        # shellcheck disable=SC2086
        args=(--gpus "$g" $way --reps 10 "$@")
        mapfile -t more < <(json_flags "${args[@]}")
        timeout 100 $b "${args[@]}" "${more[@]}" 2>&1 |
            grep -E "^(devices|sms|product|verify|baseline|ring|speedup|model|error)|a shard|a ring step|all-gather|gathered product|of its bound"
        json_line "$jsonl" "$b ${args[*]}" "${PIPESTATUS[0]}"
    done
done > "$OUT/sweep.txt" 2>&1
cat "$OUT/sweep.txt"

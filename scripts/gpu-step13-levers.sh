#!/usr/bin/env bash
# Step 13's ring with lab 12 on 2 GPUs and on all of them (carry .gpu): SMs left to NCCL, NCCL's
# channels capped to match (NCCL_MAX_P2P_NCHANNELS), and lab 12's smaller tile for the ring.
# Output: $OUT/levers.txt, and each run's report as JSON, a line each, in $OUT/levers.jsonl
# (scripts/record-json.sh; a line's command names the channels' cap where there is one).
export NCCL_NVLS_ENABLE=0
source scripts/record-json.sh
b="bash .gpu/run bin step13_collective_matmul --product lab12 --reps 10"
gpus=$(nvidia-smi -L | wc -l)
jsonl="$OUT/levers.jsonl"
: > "$jsonl"
for g in 2 "$gpus"; do
    for set in "0 - 256" "4 4 256" "8 8 256" "8 8 128" "16 16 128" "16 - 128"; do
        read -r leave channels bm <<< "$set"
        echo "=== gpus $g leave $leave channels $channels BM $bm"
        env=(NCCL_NVLS_ENABLE=0)
        [ "$channels" != - ] && env+=("NCCL_MAX_P2P_NCHANNELS=$channels")
        args=(--gpus "$g" --leave-sms "$leave" --ring-param "BM=$bm")
        mapfile -t more < <(json_flags "${args[@]}")
        env "${env[@]}" timeout 100 $b "${args[@]}" "${more[@]}" 2>&1 |
            grep -E "^(baseline|ring|speedup|error)|a shard|a ring step|of its bound|FAIL"
        json_line "$jsonl" "${env[*]} $b ${args[*]}" "${PIPESTATUS[0]}"
    done
done > "$OUT/levers.txt" 2>&1
cat "$OUT/levers.txt"

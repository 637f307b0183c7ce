#!/usr/bin/env bash
# Profiles one launch of each chapter's kernel with Nsight Compute and keeps the raw counters as
# CSV, one file per kernel, beside the results record. Needs an NVIDIA GPU, ncu on PATH and
# permission to read the performance counters.
#
#   cargo build --release && scripts/profile.sh                      # programs from target/release
#   scripts/profile.sh .gpu/bin docs/src/results/ncu                 # or from another folder
#   ONLY=step07 scripts/profile.sh                                   # only the profiles that match
#
# Each profile is the command a chapter gives, e.g. for step 04:
#   ncu --clock-control none -k matmul --launch-count 1 --section SpeedOfLight … \
#       target/release/step04_tiled --reps 1
# The first launch of `matmul` is the verified one, on the step's default shape.
set -uo pipefail
# Both folders are read relative to where the script is called from, before it moves to the root.
bin=$(cd "${1:-target/release}" 2>/dev/null && pwd) || { echo "profile: no folder ${1:-target/release}" >&2; exit 2; }
mkdir -p "${2:-docs/src/results/ncu}" && out=$(cd "${2:-docs/src/results/ncu}" && pwd)
cd "$(dirname "$0")/.."
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
[ -x "$ncu" ] || { echo "profile: ncu not found; install Nsight Compute" >&2; exit 2; }

sections=(SpeedOfLight MemoryWorkloadAnalysis ComputeWorkloadAnalysis Occupancy SchedulerStats
    WarpStateStats LaunchStats InstructionStats)
# Counters the chapters quote that the sections above do not all collect.
metrics=(
    l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum
    l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum
    l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum
    l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum
    l1tex__data_pipe_lsu_wavefronts_mem_shared.sum.pct_of_peak_sustained_elapsed
    smsp__inst_executed_op_shared_ld.sum
    smsp__inst_executed_op_shared_st.sum
    l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum
    l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum
    l1tex__t_sector_hit_rate.pct
    lts__t_sector_hit_rate.pct
    lts__t_bytes.sum
    dram__bytes_read.sum
    dram__bytes_write.sum
    sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active
    sm__inst_executed_pipe_fma.sum
    sm__issue_active.avg.pct_of_peak_sustained_active
    sm__warps_active.avg.pct_of_peak_sustained_active
    smsp__warps_eligible.avg.per_cycle_active
    smsp__issue_inst0.avg.pct_of_peak_sustained_active
    sm__cycles_elapsed.avg
    gpu__time_duration.sum
    sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active
    sm__inst_executed_pipe_tensor_op_hmma.sum
    sm__inst_executed_pipe_tensor_op_gmma.sum
)

# Keep the counters this ncu knows (names differ between versions); say which were dropped.
known=$("$ncu" --query-metrics 2>/dev/null || true)
if [ -n "$known" ]; then
    kept=()
    for m in "${metrics[@]}"; do
        if grep -qw -- "${m%%.*}" <<< "$known"; then kept+=("$m"); else echo "profile: ncu has no $m" >&2; fi
    done
    metrics=("${kept[@]}")
fi

one_d="--param BM=64 --param BN=64 --param BK=8 --param WM=8 --param WN=32 --param TM=8 --param TN=1"
profiles=(
    "step02_gpu_naive|step02_gpu_naive|"
    "step02_uncoalesced|step02_gpu_naive|--param COALESCED=0"
    "step03_single_block|step03_single_block|-m 32 -n 32 -k 908"
    "step04_tiled|step04_tiled|"
    "step04_b_transposed|step04_tiled|--param BT=1"
    "step04_b_transposed_padded|step04_tiled|--param BT=1 --param PAD=1"
    "step04_l1_cache|step04_tiled|--kernel step04_tiled/variants/l1_cache.cu"
    "step05_thread_tile|step05_thread_tile|"
    "step05_one_dimensional|step05_thread_tile|$one_d"
    "step06_prefetch|step06_prefetch|"
    "step07_tf32_mma|step07_tf32_mma|"
    "step08_wgmma_tma|step08_wgmma_tma|"
    "step09_3xtf32|step09_3xtf32|"
    "step10_any_shape|step10_any_shape|"
    "step11_int8_crt|step11_int8_crt|"
    "step12_persistent_clusters|step12_persistent_clusters|"
)

status=0
for p in "${profiles[@]}"; do
    IFS='|' read -r name step args <<< "$p"
    [ -n "${ONLY:-}" ] && ! grep -q -- "$ONLY" <<< "$name" && continue
    echo "profile: $name" >&2
    raw=$(mktemp)
    # shellcheck disable=SC2086
    "$ncu" --clock-control none -k matmul --launch-count 1 \
        $(printf -- '--section %s ' "${sections[@]}") --metrics "$(IFS=,; echo "${metrics[*]}")" \
        --csv --page raw "$bin/$step" --reps 1 $args > "$raw" 2> "$out/$name.err"
    # ncu prints the program's own output and its banner before the CSV: keep only the CSV, and
    # replace the kept file only with one that holds a profile.
    if grep -q '^"ID","Process ID"' "$raw"; then
        grep '^"' "$raw" > "$out/$name.csv"
        echo "$step --reps 1${args:+ $args}" > "$out/$name.args"
        [ -s "$out/$name.err" ] || rm -f "$out/$name.err"
    else
        echo "profile: $name gave no profile; see $out/$name.err (the previous CSV is kept)" >&2
        cat "$raw" >> "$out/$name.err"
        status=1
    fi
    rm -f "$raw"
done
exit $status

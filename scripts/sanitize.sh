#!/usr/bin/env bash
# Runs every GPU step under compute-sanitizer (memcheck, racecheck, synccheck, initcheck) on odd
# shapes, with the default and other documented kernel parameters, and fails on any report.
# Needs an NVIDIA GPU and the CUDA toolkit's compute-sanitizer on PATH (or in /usr/local/cuda/bin).
#
#   cargo build --release && scripts/sanitize.sh            # programs from target/release
#   scripts/sanitize.sh .gpu/bin                            # or from another folder
#   JOBS=8 scripts/sanitize.sh                              # runs at once (default 4)
#   ONLY='step04_tiled\|BT=1' scripts/sanitize.sh          # only the sets that match (grep)
#   PART=2/3 scripts/sanitize.sh                            # the second of three parts of the runs
#                                                           # (each part its share of the slow runs)
#
# Run it from the repository root: one set names a kernel variant by its path.
# Each run is one launch checked against the reference plus a few timed ones (--reps 1), with
# the CPU reference (--no-cublas) so that only the course's kernels run under the tools.
set -uo pipefail

bin=${1:-target/release}
jobs=${JOBS:-4}
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
[ -x "$sanitizer" ] || { echo "sanitize: compute-sanitizer not found; install the CUDA toolkit" >&2; exit 2; }
log=$(mktemp -d)

shapes="1,1,1 17,33,9 127,129,65 1000,1000,1000"
one_block_shapes="1,1,1 17,33,9 31,33,65 8,8,1000"  # step03 holds C in one block
thread_tile_1d="--param BM=64 --param BN=64 --param BK=8 --param WM=8 --param WN=32 --param TM=8 --param TN=1"
configs=(
    "step02_gpu_naive|"
    "step02_gpu_naive|--param BLOCK=8"
    "step03_single_block|"
    "step04_tiled|"
    "step04_tiled|--param TILE=16"
    "step04_tiled|--param BT=1"
    "step04_tiled|--param BT=1 --param PAD=1"
    "step04_tiled|--kernel step04_tiled/variants/l1_cache.cu"
    "step05_thread_tile|"
    "step05_thread_tile|$thread_tile_1d"
    "step06_prefetch|"
    "step06_prefetch|$thread_tile_1d"
    "step06_prefetch|--kernel step06_prefetch/variants/stream_k.cu"
    "step05_thread_tile|--stage 1_column_tile"
    "step05_thread_tile|--stage 4_transposed_a"
    "step05_thread_tile|--stage 5_staged_copies"
    "step05_thread_tile|--stage 7_launch_bounds"
    "step07_tf32_mma|"
    "step07_tf32_mma|--param WN=32"
    "step07_tf32_mma|--stage 1_mma_sync --param WN=32"
    "step07_tf32_mma|--stage 2_cp_async"
    "step07_tf32_mma|--stage 4_swapped_operands"
    "step08_wgmma_tma|"
    "step08_wgmma_tma|--param BM=128 --param BN=192 --param STAGES=2"
    "step08_wgmma_tma|--kernel step08_wgmma_tma/variants/transposing_prologue.cu"
    "step08_wgmma_tma|--kernel step08_wgmma_tma/variants/in_pipeline_transpose.cu"
    "step09_3xtf32|"
    "step09_3xtf32|--param BN=64 --param STAGES=2"
    "step09_3xtf32|--param SPLIT_K=3"
    "step09_3xtf32|--kernel step09_3xtf32/variants/in_pipeline.diff"
    "step10_any_shape|"
    "step10_any_shape|--param SPLIT=1 --param SHARE=1"
    "step10_any_shape|--param SPLIT=3"
    "step11_int8_crt|"
    "step11_int8_crt|--param MODULI=8 --param STAGES=2"
    "step11_int8_crt|--kernel step11_int8_crt/variants/fused.cu"
    "step11_int8_crt|--inputs wide:20"
    "step11_int8_crt|--inputs identity+noise:0.000000059604644775390625"
    "step11_int8_crt|--kernel step11_int8_crt/variants/fused.cu --inputs wide:20"
    "step11_int8_crt|--moduli 12"
    "step12_persistent_clusters|"
    "step12_persistent_clusters|--param CLUSTER=1"
    "step12_persistent_clusters|--param BM=128 --param STAGES=6 --param CLUSTER=4"
    "step12_persistent_clusters|--stage 1_persistent"
    "step12_persistent_clusters|--stage 2_multicast"
    "step12_persistent_clusters|--stage 3_tma_store"
    "step12_persistent_clusters|--stage 4_in_flight"
    "step12_persistent_clusters|--param PIECE=8"
    "step12_persistent_clusters|--kernel step12_persistent_clusters/variants/ping_pong.cu"
    "step12_persistent_clusters|--kernel step12_persistent_clusters/variants/ping_pong.cu --param CLUSTER=2"
    "step12_persistent_clusters|--kernel step12_persistent_clusters/variants/multicast_b.cu"
)

# One line per run: tool step M N K extra-args.
list=$(
    for cfg in "${configs[@]}"; do
        step=${cfg%%|*}; params=${cfg#*|}
        [ -n "${ONLY:-}" ] && ! grep -q -- "${ONLY}" <<< "$cfg" && continue
        s=$shapes; [ "$step" = step03_single_block ] && s=$one_block_shapes
        # step10 splits K at a deep shape (and shares 1000³'s tiles with SPLIT=1 SHARE=1)
        [ "$step" = step10_any_shape ] && s="$shapes 64,64,65536"
        # step12 cuts the depth of a last round that leaves most clusters idle (Stream-K)
        # and walks several tiles a cluster only where there are more units than clusters
        [ "$step" = step12_persistent_clusters ] && s="$shapes 300,260,2000 3000,2100,97"
        for shape in $s; do
            for tool in memcheck racecheck synccheck initcheck; do
                # No trailing blank: xargs -L would join the next line onto this one.
                echo "$tool $step ${shape//,/ }${params:+ $params}"
            done
        done
    done
)

if [ -n "${PART:-}" ]; then
    if ! [[ $PART =~ ^([0-9]+)/([0-9]+)$ ]] || [ "${BASH_REMATCH[1]}" -lt 1 ] || [ "${BASH_REMATCH[1]}" -gt "${BASH_REMATCH[2]}" ]; then
        echo "sanitize: PART must be I/N with 1 <= I <= N, as in PART=2/3 (got '$PART')" >&2
        exit 2
    fi
    # Runs of one shape and tool side by side, then dealt out in turn: each part gets its share
    # of the slow ones (racecheck at 1000³).
    list=$(sort -s -k3,3n -k4,4n -k5,5n -k1,1 <<< "$list" | awk -v i="${BASH_REMATCH[1]}" -v n="${BASH_REMATCH[2]}" 'NR % n == i % n')
fi

if [ -z "$list" ]; then
    echo "sanitize: ONLY='${ONLY:-}'${PART:+ PART=$PART} leaves no runs" >&2
    exit 2
fi

run_one() { # tool step m n k params...
    local tool=$1 step=$2 m=$3 n=$4 k=$5; shift 5
    local out
    out=$(mktemp "$log/$tool-$step-$m-$n-$k-XXXX.txt")
    "$sanitizer" --tool "$tool" --error-exitcode 99 "$bin/$step" -m "$m" -n "$n" -k "$k" --reps 1 --no-cublas "$@" >"$out" 2>&1
    local rc=$?
    if [ $rc -eq 0 ] && grep -qE "(ERROR SUMMARY: 0 errors|RACECHECK SUMMARY: 0 hazards)" "$out"; then
        echo "ok   $tool $step ${m}x${n}x${k} $*"
    else
        echo "FAIL $tool $step ${m}x${n}x${k} $* (exit $rc, log $out)"
    fi
}
export -f run_one
export sanitizer bin log

# Each verdict is printed as it comes, so an interrupted sweep still shows how far it got.
results=$(echo "$list" | xargs -r -P "$jobs" -L 1 bash -c 'run_one "$@"' _ | tee /dev/stderr)
echo "$results" | sort
total=$(echo "$results" | grep -c .)
failed=$(echo "$results" | grep -c '^FAIL')
echo "sanitize: $((total - failed)) passed, $failed failed"
if [ "$failed" -gt 0 ]; then
    for f in $(echo "$results" | grep '^FAIL' | sed -E 's/.*log (.*)\)$/\1/'); do echo "=== $f"; grep -vE "^\s*$" "$f" | head -40; done
    exit 1
fi

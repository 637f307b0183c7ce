#!/usr/bin/env bash
# A scaled run of a long K emulates two shorter depths and carries the prediction to K
# (common/src/drive/run/depth.rs): each case below predicted with the whole K (SCALED_DEPTHS=0)
# and at pairs of shorter depths, beside each other, with the CPU and wall seconds each took.
# Needs NVRTC; builds the labs in release (or takes the programs of $BIN_DIR).
#   scripts/emulator-depths.sh > NAME.log
#   JOBS=N: N cases at once (default 1), each case's lines still in the order below.
set -uo pipefail
cd "$(dirname "$0")/.."
bin_dir=${BIN_DIR:-target/release}
if [ -z "${BIN_DIR:-}" ]; then
    # shellcheck disable=SC2046
    cargo build --quiet --release $(awk -F'\t' '!/^#/ && $6 == "yes" { print "-p " $2 }' labs.tsv)
fi
jobs=${JOBS:-1}
echo "# $(date -u +%F), $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), $jobs case(s) at once, commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'): the whole K (depths 0) beside pairs of shorter depths, --emulate --scaled --no-verify --gpu H200"
cases_dir=$(mktemp -d)
trap 'rm -rf "$cases_dir"' EXIT
one() { # the run's number, NAME, the depths (0: the whole K; `chosen`: the program's own), the run
    local i=$1 name=$2 depths=$3 env_depths start end cpu_file got cpu
    shift 3
    env_depths=$depths
    [ "$depths" = chosen ] && env_depths=
    start=$(date +%s.%N)
    cpu_file=$(mktemp)
    # `chosen`: the variable unset, so that the program chooses.
    got=$( [ -n "$env_depths" ] && export SCALED_DEPTHS=$env_depths
        /usr/bin/time -f "%U %S" -o "$cpu_file" "$bin_dir/$@" --emulate --scaled --no-verify --gpu H200 2>&1)
    end=$(date +%s.%N)
    cpu=$(awk 'NF == 2 && $1 ~ /^[0-9.]+$/ { printf "%.1f", $1 + $2 }' "$cpu_file")
    rm -f "$cpu_file"
    {
        echo "== $name depths $depths"
        echo "$got" | grep -E "^  predicted |^           at K = |^error"
        echo "-- $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }') s, ${cpu:-?} s of CPU"
    } > "$cases_dir/$i.out"
}
count=0
# NAME, the pairs of depths, the run.
while read -r name pairs run; do
    for depths in ${pairs//;/ }; do
        count=$((count + 1))
        # shellcheck disable=SC2086
        one "$count" "$name" "$depths" $run &
        while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
    done
done <<'CASES'
step04_1024 0;256,512;64,128 step04_tiled --size 1024
step05_1024 0;256,512;128,256;64,128 step05_thread_tile --size 1024
step05_rolled_loops_1024 0;64,128;32,64 step05_thread_tile --size 1024 --kernel ptx_emulator/heldout/kernels/step05_rolled_loops.cu
step06_1024 0;256,512;64,128 step06_prefetch --size 1024
step07_1024 0;256,512;128,256 step07_tf32_mma --size 1024
step08_1024 0;256,512;128,256 step08_wgmma_tma --size 1024
step09_1024 0;256,512 step09_3xtf32 --size 1024
step10_1024 0;256,512;64,128 step10_any_shape --size 1024
step08_4096 0;chosen step08_wgmma_tma --size 4096
step11_4096 0;chosen;256,512 step11_int8_crt --size 4096
step12_4096 0;chosen;512,1024;128,256 step12_persistent_clusters --size 4096
CASES
wait
for i in $(seq 1 "$count"); do cat "$cases_dir/$i.out"; done

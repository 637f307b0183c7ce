#!/usr/bin/env bash
# The commands of the book's page "Without a GPU", each run once on this machine's cores as the
# page gives them: the wall-clock time of each, for the page's table. Writes the record's log,
# RECORD.log (the report lines a reader looks at), and beside it RECORD.jsonl: a line a run, its
# command, exit status, wall time and whole report as JSON, which the page's figures read.
#   scripts/without-a-gpu.sh [BIN_DIR] [RECORD]
#   (BIN_DIR default target/release; build it first; NVRTC on the library path;
#    RECORD default docs/src/results/runs/DATE-cpu-without-a-gpu)
set -uo pipefail
cd "$(dirname "$0")/.."
bin=${1:-target/release}
record=${2:-docs/src/results/runs/$(date -u +%Y-%m-%d)-cpu-without-a-gpu}
: > "$record.jsonl"
{
echo "# $(date -u +%Y-%m-%d) on $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
while read -r run; do
  [ -z "$run" ] && continue
  echo "\$ $run"
  start=$(date +%s.%N)
  # shellcheck disable=SC2086
  "$bin"/$run --record "$record.jsonl" 2>&1 | grep -E '^(step|  predicted|  verify|error)'
  printf 'wall %.2f s\n' "$(echo "$(date +%s.%N) - $start" | bc)"
done <<'RUNS'
step01_cpu_naive --size 256
step02_gpu_naive --emulate --size 256
step02_gpu_naive --emulate --scaled --size 4096
step03_single_block --emulate
step04_tiled --emulate --size 256
step04_tiled --emulate --scaled --size 4096
step05_thread_tile --emulate --size 256
step05_thread_tile --emulate --scaled --size 4096
step06_prefetch --emulate --size 256
step06_prefetch --emulate --scaled --size 4096
step07_tf32_mma --emulate --size 256
step07_tf32_mma --emulate --scaled --size 4096
step08_wgmma_tma --emulate --size 256
step08_wgmma_tma --emulate --scaled --size 4096
step09_3xtf32 --emulate --size 256
step10_any_shape --emulate -m 1000 -n 8 -k 300
step11_int8_crt --emulate --size 256
step12_persistent_clusters --emulate --size 512
step12_persistent_clusters --emulate --size 1024
RUNS
} | tee "$record.log"

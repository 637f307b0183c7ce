#!/usr/bin/env bash
# How fast the PTX emulator runs each lab: every lab of 02-06 and 10 at 256³, lab 07 at 128³ (and
# 256³), and the Hopper labs 08 and 12 at 256³ (lab 12 also at a shape it cuts), three times each, on this machine's cores; each run's first line gives the
# thread-instructions and the seconds of the emulation alone, the line after it the whole run's
# wall-clock time (NVRTC's compiles for the PTX and for the report's registers, the reference and
# the verdict included).
#   scripts/emulator-speed.sh [BIN_DIR] > RECORD.log   (default target/release; build it first)
# Each run's whole report is kept as JSON beside the log (RECORD.jsonl, a line a run, with its
# wall-clock seconds: the program's --record).
# Labs: every lab the emulator runs but 09 and 11 (whose products launch several kernels); a new
# emulated lab joins the list by hand.
set -uo pipefail
cd "$(dirname "$0")/.."
bin=${1:-target/release}
# Each run's record (--record): NAME.jsonl beside NAME.log where standard output is that file.
jsonl=/dev/null
log=$(readlink -f /proc/$$/fd/1 2>/dev/null)
case $log in *.log) jsonl=${log%.log}.jsonl && : > "$jsonl" ;; esac
echo "# $(date -u +%Y-%m-%d) on $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
for run in "step02_gpu_naive --size 256" "step03_single_block --size 32" "step04_tiled --size 256" \
           "step05_thread_tile --size 256" "step06_prefetch --size 256" "step10_any_shape --size 256" \
           "step07_tf32_mma --size 128" "step07_tf32_mma --size 256" "step08_wgmma_tma --size 256" \
           "step12_persistent_clusters --size 256" "step12_persistent_clusters -m 256 -n 256 -k 2048"; do
  for i in 1 2 3; do
    echo "\$ $run --emulate"
    start=$(date +%s.%N)
    # shellcheck disable=SC2086
    "$bin"/$run --emulate --record "$jsonl" | sed -n 1p
    echo "wall $(echo "$(date +%s.%N) - $start" | bc) s"
  done
done

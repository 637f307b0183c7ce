#!/usr/bin/env bash
# Calibration: step10 with each tile forced, the split searched (--tune), at the suite's shapes;
# then the step's own choice, its report kept whole as JSON beside the log where standard output
# is RECORD.log (RECORD.jsonl, a line a run: the program's --record). --tune prints no report.
set -u
# Each run's record (--record): NAME.jsonl beside NAME.log where standard output is that file.
jsonl=/dev/null
log=$(readlink -f /proc/$$/fd/1 2>/dev/null)
case $log in *.log) jsonl=${log%.log}.jsonl && : > "$jsonl" ;; esac
bash .gpu/run list > /dev/null
d=$(ls -d ${TMPDIR:-/tmp}/gpu-bundle-*/ | head -1)
B=$d/bin/step10_any_shape
tile() { case $1 in
  L) echo "--param BM=128 --param BN=256 --param WM=128 --param WN=16 --param TM=8 --param TN=8";;
  M) echo "--param BM=128 --param BN=128 --param WM=64 --param WN=32 --param TM=8 --param TN=8";;
  S) echo "--param BM=64 --param BN=64 --param WM=32 --param WN=32 --param TM=8 --param TN=4";;
  F) echo "--param BM=16 --param BN=128 --param WM=16 --param WN=64 --param TM=4 --param TN=8";;
  V) echo "--param BM=8 --param BN=256 --param WM=8 --param WN=128 --param TM=4 --param TN=8";;
  W) echo "--param BM=4 --param BN=256 --param WM=4 --param WN=256 --param TM=4 --param TN=8";;
esac; }
IFS=';' read -ra LIST <<< "${SPECS:-1 4096 4096:F S}"
for spec in "${LIST[@]}"; do
  shape=${spec%%:*}; tiles=${spec#*:}; set -- $shape
  for t in $tiles; do
    echo "=== $shape tile $t"
    $B -m $1 -n $2 -k $3 --tune --param SHARE=1 --param BK=${BK:-16} --param MINB=1 $(tile $t) 2>&1 | grep -vE "^\s*skipped" | tail -14
  done
  echo "=== $shape chosen"
  $B -m $1 -n $2 -k $3 --record "$jsonl" 2>&1 | grep -E "params|choice|split|time|cuBLAS|verif|GFLOP"
done

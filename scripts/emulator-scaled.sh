#!/usr/bin/env bash
# The scaled emulation (--emulate --scaled: one block of each kind, its counts multiplied out)
# beside the whole emulation, lab by lab at one shape (default 1024³): the traffic lines, the
# time each took, and whether the counts that add up block by block agree (the per-SM clauses,
# which a scaled run leaves out, set aside). Then each lab that scales at 4096³, scaled alone.
# Needs NVRTC; builds the labs in release.
#   scripts/emulator-scaled.sh [SIZE]
set -uo pipefail
cd "$(dirname "$0")/.."
size=${1:-1024}
# Every lab the emulator runs (labs.tsv), but 03, whose one block holds 32³ at most.
labs=$(awk -F'\t' '!/^#/ && $6 == "yes" && $1 != "03" { print $2 }' labs.tsv)
# shellcheck disable=SC2086
cargo build --quiet --release $(printf -- '-p %s ' $labs)
echo "# $(date -u +%F), $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), --size $size"
counts() { grep -E "^  traffic " | sed -E 's/ · an SM receives [^·]*\)//; s/ \(an SM stores [0-9,]+ to [0-9,]+\)//'; }
run() { # lab, flags…: prints the time, keeps the output in $out
    local start end
    start=$(date +%s.%N)
    out=$(target/release/"$@" 2>&1)
    end=$(date +%s.%N)
    secs=$(echo "$end - $start" | bc)
}
scales=""
for lab in $labs; do
    run "$lab" --emulate --size "$size"
    whole=$out
    echo "== $lab whole: $secs s"
    echo "$whole" | grep -E "^  (traffic|verify) |^error"
    run "$lab" --emulate --scaled --size "$size"
    echo "== $lab scaled: $secs s"
    echo "$out" | grep -E "^  (traffic|scaled|verify) |^error"
    if echo "$out" | grep -q "^error"; then
        echo "-- $lab: refused"
    elif [ "$(echo "$whole" | counts)" = "$(echo "$out" | counts)" ]; then
        echo "-- $lab: the counts agree"
        scales="$scales $lab"
    else
        echo "-- $lab: the counts DIFFER"
    fi
done
for lab in $scales; do
    run "$lab" --emulate --scaled --size 4096
    echo "== $lab scaled at 4096: $secs s"
    echo "$out" | grep -E "^  (traffic|scaled) |^error"
done

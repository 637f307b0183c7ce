#!/usr/bin/env bash
# The scaled emulation (--emulate --scaled: one block of each kind, its counts multiplied out)
# beside the whole emulation, lab by lab at one shape (default 1024³): the traffic lines, the
# time each took, and whether the counts that add up block by block agree (the reports' traffic
# fields, read from their JSON; the per-SM counts, which a scaled run leaves out, set aside). Then each lab that scales at 4096³, scaled alone.
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
json=$(mktemp -d)
trap 'rm -rf "$json"' EXIT
# Whether two reports' traffic fields agree, the per-SM counts and the distinct tiles the first
# copies read (counts of a whole grid, which a scaled run cannot add up block by block) and the
# scaled run's own counts of blocks set aside; prints the fields that differ.
agree() {
    python3 - "$1" "$2" <<'EOF'
import json, sys
skip = {"sm_sectors_most", "sm_sectors_least", "sm_stores_most", "sm_stores_least", "first_tiles", "scaled_ran", "scaled_of"}
t = [json.load(open(f))["device"]["emulated"]["traffic"] for f in sys.argv[1:3]]
differ = sorted(k for k in t[0] if k not in skip and t[0][k] != t[1].get(k))
print(" ".join(differ))
sys.exit(1 if differ else 0)
EOF
}
run() { # name, lab, flags…: prints the time, keeps the output in $out and the report in $json/NAME
    local start end name=$1
    shift
    rm -f "$json/$name"
    start=$(date +%s.%N)
    out=$(target/release/"$@" --json-to "$json/$name" 2>&1)
    end=$(date +%s.%N)
    secs=$(echo "$end - $start" | bc)
}
scales=""
for lab in $labs; do
    run whole "$lab" --emulate --size "$size"
    whole=$out
    echo "== $lab whole: $secs s"
    echo "$whole" | grep -E "^  (traffic|verify) |^error"
    run scaled "$lab" --emulate --scaled --size "$size"
    echo "== $lab scaled: $secs s"
    echo "$out" | grep -E "^  (traffic|scaled|verify) |^error"
    if echo "$out" | grep -q "^error"; then
        echo "-- $lab: refused"
    elif differ=$(agree "$json/whole" "$json/scaled"); then
        echo "-- $lab: the counts agree"
        scales="$scales $lab"
    else
        echo "-- $lab: the counts DIFFER ($differ)"
    fi
done
for lab in $scales; do
    run scaled "$lab" --emulate --scaled --size 4096
    echo "== $lab scaled at 4096: $secs s"
    echo "$out" | grep -E "^  (traffic|scaled) |^error"
done

#!/usr/bin/env bash
# The emulator's time model over what the GPU measured in scripts/gpu-model-runs.sh judged: every
# lab and stage at 1024³ and 4096³ (--emulate --scaled, or at 1024³ the whole emulation where a
# scaled run is refused), then step 10 over the suite of shapes of
# the H100 suite record. Prints each case's predicted lines and how long the emulation took.
# Needs NVRTC; builds the labs in release. `compare model-table` sets the predictions beside
# the GPU's times. Written to NAME.log, it keeps each case's report as JSON beside it, in
# NAME.jsonl (the programs' --record), which `compare model-table` reads.
#   scripts/model-predictions.sh [LIMIT_SECONDS] > NAME.log   (default 300: the longest a whole emulation may take)
#   MODEL_GPU=NAME: predict that GPU's time (--gpu NAME; default the H100).
#   JOBS=N: N cases at once (default 1), each case's lines still in the order above; its wall
#   time is then shared with the others', and the header says how many ran at once.
set -uo pipefail
cd "$(dirname "$0")/.."
# Each run's record (--record): NAME.jsonl beside NAME.log where standard output is that file.
jsonl=/dev/null
log=$(readlink -f /proc/$$/fd/1 2>/dev/null)
case $log in *.log) jsonl=${log%.log}.jsonl && : > "$jsonl" ;; esac
limit=${1:-300}
# Every lab the emulator runs (labs.tsv), but 03, whose one block holds 32³ at most.
labs=$(awk -F'\t' '!/^#/ && $6 == "yes" && $1 != "03" { print $2 }' labs.tsv)
# The programs of target/release, or of $BIN_DIR (a copy, so that a long run keeps one build).
bin_dir=${BIN_DIR:-target/release}
if [ -z "${BIN_DIR:-}" ]; then
    # shellcheck disable=SC2086
    cargo build --quiet --release -p compare $(printf -- '-p %s ' $labs)
fi
jobs=${JOBS:-1}
# The model's fingerprint (compare model-fingerprint) names the model that made these predictions:
# the chapters' tables of predictions are held to it (compare/tests/predictions_fresh.rs).
echo "# $(date -u +%F), $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), $jobs case(s) at once, MODEL_GPU=${MODEL_GPU:-H100}, model $("$bin_dir/compare" model-fingerprint), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
# Each case writes its lines and its records to a file of its own, printed in order at the end.
cases_dir=$(mktemp -d)
count=0
# Prints the cases that ended, in order (at the end, or when the script is stopped).
flush() {
    for i in $(seq 1 "$count"); do
        [ -f "$cases_dir/$i.out" ] && cat "$cases_dir/$i.out"
        [ -f "$cases_dir/$i.jsonl" ] && cat "$cases_dir/$i.jsonl" >> "$jsonl"
    done
    rm -rf "$cases_dir"
}
trap 'flush; echo "stopped before every case ended"; exit 1' TERM INT
one_case() { # the case's number, then the lab and its arguments
    local i=$1 start end out status
    shift
    start=$(date +%s.%N)
    out=$(timeout "$limit" "$bin_dir/$@" --emulate --scaled ${MODEL_GPU:+--gpu "$MODEL_GPU"} --record "$cases_dir/$i.jsonl" 2>&1)
    # A refused scaled run is recorded too; the whole run's line, after it, stands for the case.
    if echo "$out" | grep -qE "^error: .*(scaling would guess|emulate it whole)" && [ "${big:-0}" = 0 ]; then
        out=$(timeout "$limit" "$bin_dir/$@" --emulate ${MODEL_GPU:+--gpu "$MODEL_GPU"} --record "$cases_dir/$i.jsonl" 2>&1)
        status=$?
        # A run that timeout stops writes no record; the log says why.
        [ "$status" = 0 ] || out="$out
error: the whole emulation did not finish in $limit s"
    fi
    end=$(date +%s.%N)
    {
        echo "== $*"
        echo "$out" | grep -E "^  (predicted|scaled|verify) |^            |^error" | grep -v "per element\|normwise"
        echo "-- $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", b - a }') s"
    } > "$cases_dir/$i.out"
}
predict() { # the lab and its arguments, in the order of the case's title (the log's `== ` line)
    count=$((count + 1))
    one_case "$count" "$@" &
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
}
for s in 1024 4096; do
    big=$([ "$s" -gt 1024 ] && echo 1 || echo 0)
    for lab in $labs; do
        stages=$("$bin_dir/$lab" --help 2>/dev/null | sed -n 's/^  \([0-9]_[a-z_]*\) .*/\1/p' | sort -u)
        for stage in "" $stages; do
            # shellcheck disable=SC2086
            predict "$lab" ${stage:+--stage "$stage"} --size "$s"
        done
    done
done
# Step 10's suite: the shapes of docs/src/results/runs/2026-11-23-nvidia-h100-80gb-hbm3-suite-1.md.
for shape in 256,256,256 512,512,512 1024,1024,1024 2048,2048,2048 4096,4096,4096 8192,8192,8192 1000,1000,1000 \
             4097,4097,4097 16,4096,4096 128,4096,4096 512,11008,4096 2048,4096,11008 8192,1024,4096 \
             1,4096,4096 64,64,65536 128,128,16384 4096,64,4096; do
    IFS=, read -r m n k <<< "$shape"
    big=$([ $((m * n * k)) -gt $((1 << 31)) ] && echo 1 || echo 0)
    predict step10_any_shape -m "$m" -n "$n" -k "$k"
done
# Each lab's exercise as it starts (its TODOs left): what the prediction shows before the work,
# beside the lab's own kernel above, which is what it shows when the exercise is done. C is wrong
# or zero before the work, and a scaled run does not check it. The exercises of the labs above
# but 11's (minutes a case at 4096³) and 12's (its scaled run is refused at 4096³).
for ex in step*/exercises/*.cu; do
    lab=${ex%%/*}
    grep -qxF "$lab" <<< "$labs" || continue
    case $lab in step11_* | step12_*) continue ;; esac
    big=1 predict "$lab" --kernel "$ex" --size 4096
done
wait
trap - TERM INT
flush

#!/usr/bin/env bash
# The time model judged on what it was never built on: the held-out set of
# ptx_emulator/heldout/cases.txt, timed on a GPU, profiled by Nsight Compute, and predicted on the
# CPU, at 1024³ and 4096³ (the book's appendix "The time model"). The GPU verbs run from a bundle
# carried as .gpu (`cargo xtask gpu-bundle`) and write their records under $OUT (or ./gpu-model).
#
#   bash scripts/model-heldout.sh gpu [lessons] [S...] # each case's report: time, speed, verify
#                                                      (lessons: the pairs the chapters compare)
#   bash scripts/model-heldout.sh ncu heldout [S...] # each case's busiest units by Nsight Compute
#   bash scripts/model-heldout.sh ncu labs [S...]    # the same for every lab and stage
#   bash scripts/model-heldout.sh states [S...]      # the whole corpus (labs, stages, variants,
#                                                      held-out and lessons' kernels): Nsight
#                                                      Compute's warp states, issue slots, pipes,
#                                                      L2 hit rate and DRAM bytes
#   scripts/model-heldout.sh predict corpus [S...]   # the same corpus predicted on the CPU
#   scripts/model-heldout.sh predict [lessons] [S...] > NAME.log # each case predicted on the CPU (needs NVRTC;
#                                                      MODEL_GPU=H200 predicts for the H200)
#
# `compare heldout-table` (and `lessons-table`) sets the three side by side. `gpu` and `predict` keep each
# case's report as JSON beside their log, NAME.jsonl (the programs' --record), which it reads.
set -uo pipefail
cd "$(dirname "$0")/.."
verb=${1:-}
shift || true

# The cases of the set asked for (`lessons` as the verb's first argument: the kernels the
# chapters compare, ptx_emulator/heldout/lessons.txt), "NAME|STEP|ARGUMENTS" a line.
case_file=ptx_emulator/heldout/cases.txt
set_name=heldout
if [ "${1:-}" = lessons ]; then
    case_file=ptx_emulator/heldout/lessons.txt
    set_name=lessons
    shift
elif [ "${1:-}" = corpus ]; then
    case_file=ptx_emulator/heldout/corpus.txt
    set_name=corpus
    shift
fi
cases_of() {
    grep -v '^#' "$1" | awk 'NF >= 2 { n = $1; s = $2; $1 = ""; $2 = ""; sub(/^ +/, ""); print n "|" s "|" $0 }'
}
# CASES_FROM: another file of cases in their place (a part of one, to run parts side by side).
cases() {
    cases_of "${CASES_FROM:-$case_file}"
}

# Every lab and stage, in the same form (the labs the model was built on).
labs() {
    local lab stage
    # Every lab the emulator runs (labs.tsv), but 03, whose one block holds 32³ at most.
    for lab in $(awk -F'\t' '!/^#/ && $6 == "yes" && $1 != "03" { print $2 }' labs.tsv); do
        echo "$lab|$lab|"
        for stage in $("$bin/$lab" --help 2>/dev/null | sed -n 's/^  \([0-9]_[a-z_]*\) .*/\1/p' | sort -u); do
            echo "$lab --stage $stage|$lab|--stage $stage"
        done
    done
}

gpu_header() {
    device=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr 'A-Z ' 'a-z-')
    driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)
    out=${OUT:-gpu-model}
    mkdir -p "$out"
    stem="$out/$(date -u +%F)-$device"
}

# The counters that say which unit is busiest (names as this ncu gives them on an H100).
metrics=gpu__time_duration.sum,sm__issue_active.avg.pct_of_peak_sustained_active,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active,l1tex__throughput.avg.pct_of_peak_sustained_active,l1tex__data_pipe_lsu_wavefronts.avg.pct_of_peak_sustained_elapsed,lts__throughput.avg.pct_of_peak_sustained_elapsed,gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum

# ncu's raw page has hundreds of columns (the device's attributes among them): keep the kernel's
# name, its grid and registers, and the counters asked for.
keep() {
    python3 -c '
import csv, sys
rows = list(csv.reader(sys.stdin))
if rows:
    want = ("Kernel Name", "launch__grid_size", "launch__registers_per_thread") + tuple(m.split(".")[0] for m in sys.argv[1].split(","))
    cols = [i for i, n in enumerate(rows[0]) if n.startswith(want)]
    out = csv.writer(sys.stdout, quoting=csv.QUOTE_ALL, lineterminator="\n")
    for r in rows:
        out.writerow([r[i] for i in cols if i < len(r)])
' "$metrics"
}

case "$verb" in
gpu)
    # Uncached compiles carry ptxas's report, which tells a kernel's local arrays (the rolled
    # loops') from spills; a cached one does not, and a run would refuse it as spilling.
    export CUDA_CACHE_DISABLE=1
    gpu_header
    jsonl="$stem-model-$set_name.jsonl"
    : > "$jsonl"
    {
        echo "# The time model's $set_name set ($case_file) on $device, driver $driver, $(date -u +%F)."
        echo "# Command: bash .gpu/run bin STEP --size S ARGUMENTS"
        for s in ${@:-1024 4096}; do
            cases | while IFS='|' read -r name step args; do
                echo "== $name --size $s"
                # shellcheck disable=SC2086
                bash .gpu/run bin "$step" --size "$s" $args --record "$jsonl" 2>&1 \
                    | grep -E "^  (time|speed|verify|kernel)|rror"
            done
        done
    } > "$stem-model-$set_name.log" 2>&1
    cat "$stem-model-$set_name.log"
    ;;
states)
    # The warp states Nsight Compute samples, each as warps a cycle per issued instruction (their
    # sum is the cycles between two issues of a warp), beside the units the time model replays.
    gpu_header
    bash .gpu/run list > /dev/null
    bin=${TMPDIR:-/tmp}/gpu-bundle-$(cksum < .gpu/pack.tar.xz | cut -d' ' -f1)/bin
    ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
    state_metrics='regex:^smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio$,gpu__time_duration.sum,sm__cycles_elapsed.avg,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,smsp__warps_active.avg.per_cycle_active,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active,l1tex__data_pipe_lsu_wavefronts.avg.pct_of_peak_sustained_elapsed,lts__t_sector_hit_rate.pct,lts__t_sectors.sum,lts__t_sectors_srcunit_tex.sum,dram__bytes_read.sum,dram__bytes_write.sum,launch__grid_size,launch__registers_per_thread,launch__occupancy_limit_registers'
    {
        echo "# Nsight Compute's warp states for the time model's corpus on $device, driver $driver, $(date -u +%F): one launch of"
        echo "# matmul each (the first, where a product launches several). Command: ncu --clock-control none -k regex:matmul"
        echo "#   --launch-count 1 --csv --page raw --metrics METRICS STEP --size S --reps 1 --no-verify --no-cublas ARGUMENTS"
        echo "# METRICS: $state_metrics"
        for s in ${@:-1024 4096}; do
            cases_of "${CASES_FROM:-ptx_emulator/heldout/corpus.txt}" | while IFS='|' read -r name step args; do
                echo "== $name --size $s"
                args=${args//--no-verify/}
                # shellcheck disable=SC2086
                timeout 120 "$ncu" --clock-control none -k regex:matmul --launch-count 1 --csv --page raw \
                    --metrics "$state_metrics" "$bin/$step" --size "$s" --reps 1 --no-verify --no-cublas $args 2>&1 |
                    python3 -c '
import csv, sys
lines = [l for l in sys.stdin if l.startswith("\"")]
rows = list(csv.reader(lines))
if not rows:
    print("# no profile")
    sys.exit()
keep = [i for i, n in enumerate(rows[0]) if n == "Kernel Name" or "__" in n]
out = csv.writer(sys.stdout, quoting=csv.QUOTE_ALL, lineterminator="\n")
for r in rows[:3]:
    out.writerow([r[i] for i in keep if i < len(r)])
'
            done
        done
    } > "$stem-model-states.log" 2>&1
    grep -c '^==' "$stem-model-states.log"
    grep -B1 '^# no profile' "$stem-model-states.log" | grep '^==' | head -20
    ;;
ncu)
    if [ "$set_name" = lessons ]; then
        set_=lessons
    else
        set_=${1:-heldout}
        shift || true
    fi
    gpu_header
    # The bundle unpacks its programs outside the repository on first use; ncu runs them there.
    bash .gpu/run list > /dev/null
    bin=${TMPDIR:-/tmp}/gpu-bundle-$(cksum < .gpu/pack.tar.xz | cut -d' ' -f1)/bin
    ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
    {
        echo "# Nsight Compute's busiest units for the $set_ cases on $device, driver $driver, $(date -u +%F): one launch of"
        echo "# matmul each. Command: ncu --clock-control none -k regex:matmul --launch-count 1 --csv --page raw"
        echo "#   --metrics $metrics STEP --size S --reps 1 --no-verify --no-cublas ARGUMENTS"
        for s in ${@:-1024 4096}; do
            if [ "$set_" = labs ]; then list=$(labs); else list=$(cases); fi
            echo "$list" | while IFS='|' read -r name step args; do
                echo "== $name --size $s"
                # shellcheck disable=SC2086
                "$ncu" --clock-control none -k regex:matmul --launch-count 1 --csv --page raw --metrics "$metrics" \
                    "$bin/$step" --size "$s" --reps 1 --no-verify --no-cublas $args 2>&1 | grep -E '^"' | keep
            done
        done
    } > "$stem-model-ncu-$set_.log" 2>&1
    tail -3 "$stem-model-ncu-$set_.log"
    ;;
predict)
    # The programs of target/release, or of $BIN_DIR (a copy, so that a long run keeps one build).
    bin_dir=${BIN_DIR:-target/release}
    bin=$bin_dir
    if [ -z "${BIN_DIR:-}" ]; then
        # shellcheck disable=SC2046
        cargo build --quiet --release $(awk -F'\t' '!/^#/ && $6 == "yes" { print "-p " $2 }' labs.tsv)
    fi
    # Each run's record (--record): NAME.jsonl beside NAME.log where standard output is that file.
    jsonl=/dev/null
    log=$(readlink -f /proc/$$/fd/1 2>/dev/null)
    case $log in *.log) jsonl=${log%.log}.jsonl && : > "$jsonl" ;; esac
    gpus=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
    echo "# $(date -u +%F), $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), ${gpus:-no GPU}, commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . 2>/dev/null || echo ' with changes'): predict $set_name ${*:-1024 4096}, MODEL_GPU=${MODEL_GPU:-H100}, at most ${PREDICT_TIMEOUT:-600} s a case; each case's wall time closes it, with the load average (1 min) when it started and the CPU seconds it took"
    for s in ${@:-1024 4096}; do
        cases | while IFS='|' read -r name step args; do
            load=$(cut -d' ' -f1 /proc/loadavg)
            start=$(date +%s.%N)
            # A scaled run verifies nothing; --no-verify says so where the case does not already.
            case " $args " in *" --no-verify "*) ;; *) args="$args --no-verify" ;; esac
            # The CPU seconds beside the wall's: other work on the machine stretches the wall alone.
            cpu_file=$(mktemp)
            # shellcheck disable=SC2086
            got=$(/usr/bin/time -f "%U %S" -o "$cpu_file" timeout "${PREDICT_TIMEOUT:-600}" "$bin_dir/$step" --size "$s" $args --emulate --scaled --gpu "${MODEL_GPU:-H100}" --record "$jsonl" 2>&1)
            rc=$?
            # A grid a few blocks cannot stand for runs whole where that is short (1024³ or less):
            # the refused scaled run is recorded too, and the whole run's line after it stands
            # for the case.
            if echo "$got" | grep -q "emulate it whole" && [ "$s" -le 1024 ]; then
                # shellcheck disable=SC2086
                got=$(timeout "${PREDICT_TIMEOUT:-600}" "$bin_dir/$step" --size "$s" $args --emulate --gpu "${MODEL_GPU:-H100}" --record "$jsonl" 2>&1)
                rc=$?
            fi
            end=$(date +%s.%N)
            echo "== $name --size $s"
            echo "$got" | grep -E "^  (predicted|scaled|kernel) |^            |^           at K = |^error|^note: .*(scaled|emulat)"
            [ "$rc" = 124 ] && echo "timed out: no prediction within ${PREDICT_TIMEOUT:-600} s"
            cpu=$(awk 'NF == 2 && $1 ~ /^[0-9.]+$/ { printf "%.1f", $1 + $2 }' "$cpu_file")
            rm -f "$cpu_file"
            echo "-- $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", b - a }') s (load $load, ${cpu:-?} s of CPU)"
        done
    done
    ;;
*)
    echo "usage: model-heldout.sh gpu [S...] | ncu heldout|labs [S...] | states [S...] | predict [lessons|corpus] [S...]" >&2
    exit 2
    ;;
esac

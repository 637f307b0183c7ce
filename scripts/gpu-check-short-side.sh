#!/usr/bin/env bash
# The GPU checks of step 10's short side, from a gpu-bundle (`cargo xtask gpu-bundle`)
# carried as .gpu, in parts that each fit one call of the device (at most 600 s). Writes its logs
# under $OUT (or ./gpu-check).
#
#   CUDA_CACHE_DISABLE=1 bash scripts/gpu-check-short-side.sh tests all # step 10's GPU tests, each test in
#                                                                        # its own process, six at once
#   CUDA_CACHE_DISABLE=1 bash scripts/gpu-check-short-side.sh tests 1   # or one after another: the first
#                                                                        # third; then tests 2 and tests 3
#   CUDA_CACHE_DISABLE=1 bash scripts/gpu-check-short-side.sh speed     # the short side beside the tiles
#   CUDA_CACHE_DISABLE=1 bash scripts/gpu-check-short-side.sh sanitize  # memcheck and racecheck, each path
#
# speed: at each shape, the step's choice, then the short side's kernel (--param PATH=1 where M is
# short, PATH=2 where N is) with K split 1, 8 and 64 ways; each run against cuBLAS SGEMM in its
# own run; the choice and the first split verified, the others timed only. The log keeps the
# lines that matter; each run's whole report is kept as JSON beside it (speed.jsonl, a line a run:
# the program's --record).
set -uo pipefail
part=${1:-}
. "$(dirname "$0")/gpu-check-common.sh"
# speed_run LINES ARGS...: step 10 run with ARGS, the lines matching LINES shown, its JSON kept.
speed_run() {
  local lines=$1; shift
  bash .gpu/run bin step10_any_shape "$@" --record "$out/speed.jsonl" 2>&1 | grep -E "$lines"
}
fail=0
case "$part" in
  tests)
    # One after another the binary took about 13 minutes on an H100 at b82246f, more than one call
    # allows, so it runs in thirds by name: 1 before "gpu_m", 2 from there to "gpu_r", 3 the rest.
    # "all" runs each test in its own process, six at once, the slow ones first: 112 s on an H200
    # at 293b096, where the tests' own times add up to 528 s.
    part=${2:-}
    case "$part" in
      1) keep='$0 < "gpu_m"' ;;
      2) keep='$0 >= "gpu_m" && $0 < "gpu_r"' ;;
      3) keep='$0 >= "gpu_r"' ;;
      all) keep=1 ;;
      *) echo "gpu-check: say which tests: tests all, or a third: tests 1, tests 2 or tests 3" >&2; exit 2 ;;
    esac
    header tests-$part.log
    t=$(holding gpu_forced_paths_and_splits_match_the_reference)
    names=$("$t" --list 2>/dev/null | sed -n 's/: test$//p' | grep -v '^nvrtc_' | awk "$keep")
    [ -n "$names" ] || { echo "gpu-check: no tests listed in step 10's test binary" >&2; exit 1; }
    if [ "$part" = all ]; then
      slow="gpu_planted_faults_are_caught gpu_random_shapes_match_the_reference gpu_exact_inputs_give_the_exact_product
        gpu_matches_the_reference_at_every_shape_of_the_suite gpu_forced_paths_and_splits_match_the_reference"
      one() { # one test alone; its verdict, its seconds, and its output if it failed
        local t0 o rc; t0=$(date +%s)
        o=$(timeout 570 "$t" --include-ignored --test-threads=1 --exact "$1" 2>&1); rc=$?
        if [ $rc -eq 0 ]; then echo "ok   $1 ($(( $(date +%s) - t0 )) s)"; else echo "FAIL $1 (exit $rc)"; echo "$o"; fi
      }
      export -f one; export t
      # shellcheck disable=SC2086 # one name a word
      { printf '%s\n' $slow | grep -Fxf <(echo "$names"); grep -vFxf <(printf '%s\n' $slow) <<< "$names"; } \
        | xargs -P 6 -I{} bash -c 'one {}' >> "$out/tests-all.log" 2>&1
      grep -E "^(ok|FAIL) " "$out/tests-all.log"
      ran=$(grep -cE "^(ok|FAIL) " "$out/tests-all.log"); failed=$(grep -c "^FAIL " "$out/tests-all.log")
      echo "step 10's tests: $ran run, $failed failed, of $(echo "$names" | wc -l) listed"
      [ "$failed" -eq 0 ] && [ "$ran" -eq "$(echo "$names" | wc -l)" ] || fail=1
    else
      # shellcheck disable=SC2086 # one argument per test name
      timeout 580 "$t" --include-ignored --test-threads=1 --exact $names >> "$out/tests-$part.log" 2>&1 || fail=1
      grep -E "^test |test result|panicked" "$out/tests-$part.log"
    fi ;;
  speed)
    header speed.log
    : > "$out/speed.jsonl"
    for s in 1,4096,4096 2,4096,4096 8,4096,4096 4096,1,4096 4096,4,4096 4096,8,4096 4099,3,2049 3,4099,2049 \
             2,2,1048576 1,1,1048576 8,8,65536 1,14336,4096 4096,2,11008; do
      IFS=, read -r m n k <<< "$s"
      path=$([ "$n" -le 8 ] && echo 2 || echo 1)
      echo "== $m×$n×$k choice"
      speed_run "params|choice|speed|verify|error" -m "$m" -n "$n" -k "$k"
      for split in 1 8 64; do
        echo "== $m×$n×$k PATH=$path SPLIT=$split"
        verify=$([ "$split" = 1 ] || echo --no-verify)
        # shellcheck disable=SC2086
        speed_run "params|speed|verify|error" -m "$m" -n "$n" -k "$k" --param PATH=$path --param SPLIT=$split $verify
      done
    done >> "$out/speed.log"
    grep -E "^==|speed" "$out/speed.log" | sed 's/ · [0-9.]*% of FP32 peak.*//' ;;
  sanitize)
    header sanitize.log
    # PATH 0 with PAD=0: the tiles reading rows that are not 16-byte multiples as they are;
    # 1×13×7860 runs few rows with 4 lanes across C; PATH 3 (short K) keeps K whole. A C of
    # under 4096 elements is summed by sum_few (2×12×7000 split 256: 8 groups, four batches each;
    # 33×17×1003 split 7 on the tiles: 4 groups, the last with one slice).
    for s in 4099,3,2049,2,8 3,4099,2049,1,8 2,2,65536,2,8 8,1000,4097,1,8 1000,8,4097,2,8 37,5,1001,2,8 \
             1,13,7860,1,8 1001,999,1003,0,8 1443,1242,4,3,1 77,1000,7,3,1 4096,5,16,3,1 \
             2,12,7000,1,256 33,17,1003,0,7; do
      IFS=, read -r m n k path split <<< "$s"
      for tool in memcheck racecheck; do
        echo "== $tool $m×$n×$k PATH=$path SPLIT=$split PAD=0"
        compute-sanitizer --tool $tool --error-exitcode 9 "$dir/bin/step10_any_shape" -m "$m" -n "$n" -k "$k" \
          --param PATH=$path --param SPLIT=$split --param PAD=0 --reps 1 --no-cublas 2>&1 | grep -E "SUMMARY|verify" || fail=1
      done
    done >> "$out/sanitize.log"
    grep -E "^==|SUMMARY" "$out/sanitize.log" ;;
  *) echo "gpu-check: say which part: tests, speed or sanitize" >&2; exit 2 ;;
esac
exit $fail

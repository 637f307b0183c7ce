#!/usr/bin/env bash
# check-gpu-runner: the bundle's runner (scripts/gpu-run, .gpu/run in a bundle) checked without a
# GPU: its `tests` and `emulator` verbs run on a fake bundle, small shell scripts standing in for
# test binaries (they print what libtest prints, and note each run: its GPUs, its arguments, when
# it started and ended) under a fake nvidia-smi that lists FAKE_GPUS GPUs. Exits non-zero on any
# wrong behaviour, naming it.
#
#   bash scripts/check-gpu-runner.sh                      # the runner in scripts/
#   RUNNER=/tmp/edited-run bash scripts/check-gpu-runner.sh  # another copy of it
#
# Takes about 20 s (the fakes sleep, so that running at once shows).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
runner=${RUNNER:-$root/scripts/gpu-run}
work=$(mktemp -d "${TMPDIR:-/tmp}/check-gpu-runner.XXXXXX")
trap 'rm -rf "$work"' EXIT
wrong=0
fail() { echo "check-gpu-runner: WRONG: $*"; wrong=1; }
ok() { echo "check-gpu-runner: ok: $*"; }

# ---- the fake machine ---------------------------------------------------------------------------

mkdir -p "$work/bin" "$work/repo/.gpu/tests" "$work/repo/scripts"
cp "$runner" "$work/repo/.gpu/run"
cat > "$work/bin/nvidia-smi" <<'EOF'
#!/usr/bin/env bash
# nvidia-smi -L of a machine of FAKE_GPUS H200s
[ "${1:-}" = -L ] || exit 1
for ((i = 0; i < ${FAKE_GPUS:-4}; i++)); do
  echo "GPU $i: NVIDIA H200 (UUID: GPU-0000000$i-fake)"
done
EOF
chmod +x "$work/bin/nvidia-smi"
export PATH="$work/bin:$PATH"
unset CUDA_VISIBLE_DEVICES GPUS CPUS OUT TEST_LOGS DURATIONS TEST_TIMEOUT NCCL_NVLS_ENABLE
export TRACE=$work/trace
# The runner's folders (its queues; its logs where OUT is unset) go here, to be looked at below.
export TMPDIR=$work/tmp
mkdir -p "$TMPDIR"

# A fake test binary: fake NAME SECONDS TEST... where a test named *fails* fails and SECONDS is
# how long a run sleeps. A run appends one line to $TRACE:
#   NAME|CUDA_VISIBLE_DEVICES|NCCL_NVLS_ENABLE|start|end|the tests it ran|its arguments
fake() {
  local name=$1 seconds=$2
  shift 2
  {
    echo '#!/usr/bin/env bash'
    printf 'name=%q; seconds=%q; all=(' "$name" "$seconds"; [ $# -eq 0 ] || printf ' %q' "$@"; echo ' )'
    cat <<'EOF'
filters=(); skips=(); exact=0; list=0
for ((i = 1; i <= $#; i++)); do
  a=${!i}
  case $a in
    --list) list=1 ;;
    --exact) exact=1 ;;
    --skip) i=$((i + 1)); skips+=("${!i}") ;;
    --*) ;;
    *) filters+=("$a") ;;
  esac
done
match() { if [ $exact = 1 ]; then [ "$1" = "$2" ]; else [[ $1 == *"$2"* ]]; fi; }
run=(); out=0
for t in "${all[@]}"; do
  keep=$([ ${#filters[@]} -eq 0 ] && echo 1 || echo 0)
  for f in "${filters[@]}"; do match "$t" "$f" && keep=1; done
  for s in "${skips[@]}"; do match "$t" "$s" && keep=0; done
  if [ $keep = 1 ]; then run+=("$t"); else out=$((out + 1)); fi
done
if [ $list = 1 ]; then
  for t in "${run[@]}"; do echo "$t: test"; done
  echo; echo "${#run[@]} tests, 0 benchmarks"; exit 0
fi
start=$(date +%s.%N)
noted() { echo "$name|${CUDA_VISIBLE_DEVICES-unset}|${NCCL_NVLS_ENABLE-unset}|$start|$(date +%s.%N)|${run[*]}|$*" >> "$TRACE"; }
# Stopped (by the runner's time limit), it notes its run too, once: `timeout` signals it, then its
# process group, and the second signal must not cut the note short.
trap 'trap "" TERM; noted "$@"; kill $! 2> /dev/null; exit 143' TERM
sleep "$seconds" & wait $!
noted "$@"
echo; echo "running ${#run[@]} tests"
passed=0; failed=0; failing=()
for t in "${run[@]}"; do
  if [[ $t == *fails* ]]; then echo "test $t ... FAILED"; failed=$((failed + 1)); failing+=("$t")
  else echo "test $t ... ok"; passed=$((passed + 1)); fi
done
if [ $failed -gt 0 ]; then
  echo; echo "failures:"; echo
  for t in "${failing[@]}"; do
    echo "---- $t stdout ----"
    echo "thread '$t' panicked at fake.rs:1:1:"
    echo "planted failure of $t"
  done
  echo; echo "failures:"; for t in "${failing[@]}"; do echo "    $t"; done; echo
  echo "test result: FAILED. $passed passed; $failed failed; 0 ignored; 0 measured; $out filtered out; finished in ${seconds}s"
  exit 101
fi
echo "test result: ok. $passed passed; 0 failed; 0 ignored; 0 measured; $out filtered out; finished in ${seconds}s"
EOF
  } > "$work/repo/.gpu/tests/$name"
  chmod +x "$work/repo/.gpu/tests/$name"
}

# The bundle: slow and quick binaries, one with a failing test, one that outlives the limit, step
# 13's CLI tests with a two-GPU test, tests for machines without NVRTC or NCCL (never run on the
# GPU machine), emulator tests, and a binary with nothing to run.
fake a.kernel 2 gpu_a1 gpu_a2 nvrtc_emulated_a
fake b.kernel 2 gpu_b1 nvrtc_emulated_b1 nvrtc_emulated_b2
fake c.cli 1 gpu_c1 gpu_c2 gpu_c3
fake d.cli 1 d1 without_the_compiler_library_d
fake e.families 2 gpu_e1
fake f.lib 1 f1 f2
fake fails.cli 1 gpu_ok gpu_fails_here
fake hangs.kernel 30 gpu_hangs
fake step13_collective_matmul.cli 1 gpu_simulated_rings_match gpu_nccl_rings_over_two_gpus_match without_nccl_x
fake z.emulator 1 nvrtc_emulated_z1 nvrtc_emulated_z2
fake empty.lib 1

run() { # TAG ARGS...: the fake bundle's runner from its repository; $work/TAG.{out,rc,trace}
  local tag=$1
  shift
  : > "$TRACE"
  (cd "$work/repo" && bash .gpu/run "$@") > "$work/$tag.out" 2>&1
  echo $? > "$work/$tag.rc"
  cp "$TRACE" "$work/$tag.trace"
}
# same WHAT GOT WANT: ok if GOT is WANT, else wrong, showing both.
same() {
  if [ "$2" = "$3" ]; then ok "$1"; else fail "$1: got '$2', want '$3'"; fi
}
# holds WHAT TAG PATTERN: ok if a line of the run's output matches the (extended) PATTERN.
holds() {
  if grep -qE -- "$3" "$work/$2.out"; then ok "$1"; else fail "$1: no line matches '$3'"; fi
}
status() { cat "$work/$1.rc"; }
last() { tail -n 1 "$work/$1.out"; }
# runs TAG [NAME-PATTERN]: the trace's runs, of the binaries whose name matches.
runs() { awk -F'|' -v p="${2:-.}" '$1 ~ p' "$work/$1.trace"; }
# most_at_once: the most runs whose times overlap, from trace lines on stdin.
most_at_once() {
  awk -F'|' '{ print $4, 1; print $5, -1 }' | sort -n -k1,1 -k2,2n |
    awk '{ c += $2; if (c > m) m = c } END { print m + 0 }'
}
# field N: the Nth field of trace lines on stdin, one a line.
field() { cut -d'|' -f"$1"; }
joined() { paste -sd' ' -; }

# ---- four GPUs, the whole suite -----------------------------------------------------------------

mkdir -p "$work/out4"
OUT=$work/out4 TEST_TIMEOUT=4 FAKE_GPUS=4 run four tests
same "the status after a failure and a timeout" "$(status four)" 1
same "the last line" "$(last four)" "gpu tests: 13 passed, 2 failed"
same "the line before it" "$(tail -n 2 "$work/four.out" | head -n 1 | sed -E 's/wall [0-9]+ s/wall N s/')" \
  "gpu tests: wall N s, 4 shards (GPUs 0,1,2,3)"
singles=$(runs four | awk -F'|' '$2 !~ /,/')
# Each single-GPU run has one GPU of the four, all four are used, no GPU runs two binaries at
# once, four run at once, and no binary runs twice.
same "the GPUs the shards' binaries see" "$(field 2 <<< "$singles" | sort -u | joined)" "0 1 2 3"
overlap=$(awk -F'|' '{ g[NR] = $2; s[NR] = $4; e[NR] = $5; n[NR] = $1 }
  END { for (i = 1; i <= NR; i++) for (j = i + 1; j <= NR; j++)
          if (g[i] == g[j] && s[i] < e[j] && s[j] < e[i]) print n[i] "+" n[j] "@" g[i] }' \
  <<< "$singles" | joined)
same "binaries at once on one GPU (none)" "$overlap" ""
same "the most binaries at once" "$(most_at_once <<< "$singles")" 4
same "binaries run twice (none)" "$(field 1 <<< "$singles" | sort | uniq -d | joined)" ""
# Longest first: the kernel binaries (guessed slowest) start before the CLI and library ones.
same "a kernel binary started after a CLI or library one (no)" "$(awk -F'|' '
  $1 ~ /kernel$/ && $4 > k { k = $4 }
  $1 ~ /(cli|lib)$/ && (o == "" || $4 < o) { o = $4 }
  END { print (k < o ? "no" : "yes") }' <<< "$singles")" no
# Step 13: its one-GPU test in a shard, its two-GPU test on a pair with NVLink multicast off,
# after every shard has ended.
same "step 13's tests in a shard" \
  "$(runs four '^step13_collective_matmul' | awk -F'|' '$2 !~ /,/' | field 6)" gpu_simulated_rings_match
pair=$(runs four | awk -F'|' '$2 ~ /,/')
same "the runs on two GPUs" "$(field 1,6 <<< "$pair")" \
  "step13_collective_matmul.cli|gpu_nccl_rings_over_two_gpus_match"
IFS='|' read -r _ pgpus nvls pstart _ <<< "$pair"
IFS=, read -r ga gb <<< "$pgpus"
if [[ $ga =~ ^[0-3]$ && $gb =~ ^[0-3]$ && $ga != "$gb" ]]; then
  ok "the two-GPU test gets two GPUs ($pgpus)"
else
  fail "the two-GPU test gets CUDA_VISIBLE_DEVICES=$pgpus"
fi
same "its NCCL_NVLS_ENABLE" "$nvls" 0
same "shards still running when it started (none)" "$(awk -F'|' -v p="$pstart" '$5 > p { print $1 }' <<< "$singles" | joined)" ""
# Never on a GPU machine: the tests for machines without NVRTC or NCCL; the emulator's run apart.
same "tests for other machines, or the emulator's, run (none)" "$(runs four | field 6 | tr ' ' '\n' |
  grep -E '^(without_|nvrtc_emulat)' | joined)" ""
same "binaries with nothing to run, run (none)" "$(runs four '^(z.emulator|empty.lib)$' | field 1 | joined)" ""
# Standard output: a line a binary, the failure with its panic, the timeout with its limit, and no
# passing test.
holds "a line a binary: status, name, GPU, seconds, counts" four '^ok +c\.cli +gpu [0-3] +[0-9]+ s  3 passed, 0 failed$'
holds "the failure's line" four '^FAIL +fails\.cli +gpu [0-3] '
holds "the failure's panic" four '^ +planted failure of gpu_fails_here$'
holds "the timeout's line" four '^TIME +hangs\.kernel '
holds "the timeout, naming the binary and the limit" four 'hangs\.kernel ran past the limit, TEST_TIMEOUT=4 s'
same "passing tests printed (none)" "$(grep -cE '^test .* \.\.\. ok$' "$work/four.out")" 0
# The logs: one a binary, all in one, and the summary.
for f in tests/a.kernel.log tests/step13_collective_matmul.cli.2gpu.log gpu-tests.log gpu-tests-summary.tsv; do
  [ -s "$work/out4/$f" ] || fail "no \$OUT/$f"
done
same "binaries in the combined log" "$(sed -nE 's/^==== ([^ ]+) .*/\1/p' "$work/out4/gpu-tests.log" | sort -u | joined)" \
  "a.kernel b.kernel c.cli d.cli e.families f.lib fails.cli hangs.kernel step13_collective_matmul.cli"
same "the summary's header" "$(head -n 1 "$work/out4/gpu-tests-summary.tsv")" \
  $'binary\tgpus\tseconds\tpassed\tfailed\tignored\texit'
same "the summary's rows (9 binaries, 1 pair)" "$(($(wc -l < "$work/out4/gpu-tests-summary.tsv") - 1))" 10
same "the summary's row of the timeout: failed, exit" \
  "$(awk -F'\t' '$1 == "hangs.kernel" { print $5, $7 }' "$work/out4/gpu-tests-summary.tsv")" "1 124"

# ---- one GPU, a filter: the two-GPU test is skipped, in one line ---------------------------------

FAKE_GPUS=1 run one tests rings
same "one GPU: the status" "$(status one)" 0
same "one GPU: the last line" "$(last one)" "gpu tests: 1 passed, 0 failed"
same "one GPU: lines saying the two-GPU test is skipped" \
  "$(grep -c '^gpu tests: skipped 1 two-GPU test (gpu_nccl_… in step13_collective_matmul.cli): ' "$work/one.out")" 1
same "one GPU: the runs" "$(runs one | field 1,2,6)" "step13_collective_matmul.cli|0|gpu_simulated_rings_match"

# ---- CUDA_VISIBLE_DEVICES set: its GPUs are the shards -------------------------------------------

CUDA_VISIBLE_DEVICES=5,7 run visible tests rings
gpus=$(runs visible | field 2 | sort | joined)
[[ $gpus =~ ^(5 5,7|5,7 7)$ ]] && ok "CUDA_VISIBLE_DEVICES=5,7: a shard on 5 or 7, the pair on 5,7" \
  || fail "CUDA_VISIBLE_DEVICES=5,7: the runs' GPUs are $gpus"

# ---- stopped from outside, it stops the binaries it runs ----------------------------------------

: > "$TRACE"
(cd "$work/repo" && FAKE_GPUS=2 TEST_TIMEOUT=60 timeout 3 bash .gpu/run tests hangs) > /dev/null 2>&1
sleep 1
same "stopped after 3 s, binaries stopped within 10 s" \
  "$(awk -F'|' '$1 == "hangs.kernel" && $5 != "" && $5 - $4 < 10 { print $1 }' "$TRACE")" hangs.kernel

# ---- the dry run: the shards, nothing run ---------------------------------------------------------

{
  echo '# an earlier run, its summary'
  printf 'binary\tgpus\tseconds\tpassed\tfailed\tignored\texit\n'
  printf 'c.cli\t2\t1000\t3\t0\t0\t0\n'
  printf 'step13_collective_matmul.cli\t0,1\t500\t1\t0\t0\t0\n'
} > "$work/repo/scripts/gpu-test-durations.tsv"
GPUS=3 run dry tests --list-shards
same "--list-shards: the status" "$(status dry)" 0
same "--list-shards: tests run (none)" "$(runs dry | field 1 | joined)" ""
holds "--list-shards: the order from the committed durations" dry 'longest first by .*/scripts/gpu-test-durations\.tsv$'
same "--list-shards: the first shard line (the longest recorded)" "$(sed -n 2p "$work/dry.out")" \
  "shard 1 (GPU 0): c.cli, about 1000 s"
same "--list-shards: the binaries on shards 1-3" \
  "$(sed -nE 's/^shard [1-3] \(GPU [0-2]\): ([^,]+),.*/\1/p' "$work/dry.out" | sort | joined)" \
  "a.kernel b.kernel c.cli d.cli e.families f.lib fails.cli hangs.kernel step13_collective_matmul.cli"
holds "--list-shards: step 13's shard guessed, not its pair's seconds" dry \
  '^shard [1-3] \(GPU [0-2]\): step13_collective_matmul\.cli, about 60 s$'
holds "--list-shards: the pair" dry '^pair \(GPUs 0,1\): step13_collective_matmul\.cli, 1 two-GPU test,'
rm "$work/repo/scripts/gpu-test-durations.tsv"

# ---- packed, as gpu-bundle leaves it: unpacked on first use -------------------------------------

mkdir -p "$work/packed/.gpu" "$work/packed/bin" "$work/packed/benches"
cp -r "$work/repo/.gpu/tests" "$work/packed/"
tar -C "$work/packed" -cf - bin tests benches | xz > "$work/packed/.gpu/pack.tar.xz"
cp "$runner" "$work/packed/.gpu/run"
(cd "$work/packed" && FAKE_GPUS=2 bash .gpu/run tests rings) > "$work/packed.out" 2>&1
same "packed: the last line" "$(last packed)" "gpu tests: 2 passed, 0 failed"
same "packed: unpacked under TMPDIR" "$(ls "$work"/tmp/gpu-bundle-*/tests/ | joined)" "$(ls "$work/repo/.gpu/tests" | joined)"

# ---- the emulator's tests over the cores ----------------------------------------------------------

CPUS=12 run emu emulator
same "emulator: the status" "$(status emu)" 0
same "emulator: the last line" "$(last emu)" "emulator tests: 5 passed, 0 failed"
same "emulator: the tests run" "$(runs emu | field 6 | tr ' ' '\n' | sort | joined)" \
  "nvrtc_emulated_a nvrtc_emulated_b1 nvrtc_emulated_b2 nvrtc_emulated_z1 nvrtc_emulated_z2"
same "emulator: 3 binaries on 12 cores, their test threads" \
  "$(runs emu | grep -oE -- '--test-threads=[0-9]+' | sort -u | joined)" "--test-threads=4"
holds "emulator: the line before the last" emu '^emulator tests: wall [0-9]+ s, 3 jobs at once × 4 test-threads on 12 cores$'
same "emulator: the most binaries at once" "$(runs emu | most_at_once)" 3
CPUS=12 run emu1 emulator z1
same "emulator with a filter: the runs" "$(runs emu1 | field 1,6)" "z.emulator|nvrtc_emulated_z1"

# ---- no queue left behind, stopped or not ----------------------------------------------------------

same "the runner's queues left in TMPDIR (none)" "$(ls -d "$TMPDIR"/gpu-run.* 2> /dev/null | joined)" ""

if [ $wrong -ne 0 ]; then
  rm -rf "$work.kept"
  cp -r "$work" "$work.kept"
  echo "check-gpu-runner: the runner is wrong (above); its runs are kept in $work.kept"
  exit 1
fi
echo "check-gpu-runner: all ok"

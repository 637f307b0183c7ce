#!/usr/bin/env bash
# Runs the test binaries of a gpu-bundle (`cargo xtask gpu-bundle`) on the GPU machine in parts,
# so that each part fits in one call of the device (at most 600 s): the whole suite with every
# test binary's ignored tests included, as `bash .gpu/run tests` runs it, split by test name.
# On a machine of four GPUs, `bash .gpu/run tests` runs it in one call, sharded over the GPUs.
#
#   bash scripts/gpu-tests.sh gpu      # every test but the NVRTC compile tests (those CI runs too)
#   bash scripts/gpu-tests.sh nvrtc    # the NVRTC compile tests alone (six architectures a step)
#   SHARD=1/2 bash scripts/gpu-tests.sh gpu   # every second test binary from the first: to split
#                                             # a part over two calls of the device
#   WITHOUT=TEST bash scripts/gpu-tests.sh gpu  # leave out the binary that holds TEST (one too long
#                                             # for a part, such as step 10's, run alone by
#                                             # gpu-check-short-side.sh tests all)
#
# Prints each binary's failures and its result line, then one summary line; exits non-zero on a
# failure. Run from the repository root with CUDA_CACHE_DISABLE=1 (NVRTC's cache hides ptxas).
set -uo pipefail
part=${1:-}
case "$part" in
  gpu) filter=(--skip nvrtc_) ;;
  nvrtc) filter=(nvrtc_) ;;
  *) echo "gpu-tests: say which part, gpu or nvrtc" >&2; exit 2 ;;
esac
bash .gpu/run list > /dev/null || exit 1
dir=$(ls -d "${TMPDIR:-/tmp}"/gpu-bundle-*/ 2>/dev/null | head -1)
[ -n "$dir" ] || { echo "gpu-tests: no unpacked bundle; build one with gpu-bundle and carry .gpu" >&2; exit 1; }
passed=0; failed=0; fail=0; index=0; left=0
shard=${SHARD:-1/1}; which=${shard%/*}; of=${shard#*/}
for t in "$dir"/tests/*; do
  [ -x "$t" ] || continue
  index=$((index + 1))
  [ $(( (index - 1) % of + 1 )) -eq "$which" ] || continue
  if [ -n "${WITHOUT:-}" ]; then
    # The list is read whole first: grep -q stopping early would break the binary's pipe.
    list=$("$t" --list 2>/dev/null)
    if grep -Fxq -- "$WITHOUT: test" <<< "$list"; then
      echo "=== $(basename "$t") left out (it holds $WITHOUT)"; left=$((left + 1)); continue
    fi
  fi
  echo "=== $(basename "$t")"
  out=$("$t" --include-ignored --test-threads=1 --skip without_the_compiler_library "${filter[@]}" 2>&1); rc=$?
  echo "$out" | grep -vE '^test .* ok$' | grep -v '^$'
  line=$(echo "$out" | grep -E '^test result:' | tail -n 1)
  p=$(echo "$line" | sed -nE 's/.* ([0-9]+) passed.*/\1/p'); f=$(echo "$line" | sed -nE 's/.* ([0-9]+) failed.*/\1/p')
  passed=$((passed + ${p:-0})); failed=$((failed + ${f:-0}))
  [ $rc -eq 0 ] || fail=1
done
echo "gpu tests ($part, binaries $shard${WITHOUT:+, $left binary left out for holding $WITHOUT}): $passed passed, $failed failed"
exit $fail

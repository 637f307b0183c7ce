#!/usr/bin/env bash
# The GPU checks of the verdict on a GPU engineer's own data and shapes, from a gpu-bundle
# (`cargo xtask gpu-bundle`) carried as .gpu, in parts that each fit one call of the device (at most
# 600 s; about 8 minutes in all on an H200). Writes its logs under $OUT (or ./gpu-check).
#
#   CUDA_CACHE_DISABLE=1 bash scripts/gpu-check-verdict.sh subnormal  # products among FP32's subnormals
#   CUDA_CACHE_DISABLE=1 bash scripts/gpu-check-verdict.sh kscaled    # steps 09 and 11 on data scaled along K
#   CUDA_CACHE_DISABLE=1 bash scripts/gpu-check-verdict.sh tall       # dimensions of millions
#   CUDA_CACHE_DISABLE=1 bash scripts/gpu-check-verdict.sh spills     # kernels that spill run
#   CUDA_CACHE_DISABLE=1 bash scripts/gpu-check-verdict.sh all        # the four, one after another
#
# Labs: every lab of labs.tsv but 13 in `subnormal` (13 needs several GPUs); 09 and 11 in
# `kscaled` (the labs that claim FP32's accuracy from narrower parts; each report sets cuBLAS
# SGEMM's ‖ΔC‖/‖C‖ beside theirs); 10 and 02 in `tall` (the lab for every shape, and the plainest kernel); 08 and
# 11 in `spills` (a learner's 08 without setmaxnreg, and 11's planted spill).
#
# subnormal: A and B of `--inputs tiny:66` (every product below 2⁻¹²⁶, C normal) at 2048³ on every
#   lab and step 01 at 512³, each verify line beside cuBLAS SGEMM's ‖ΔC‖/‖C‖ of the same run; then
#   common's test that holds cuBLAS SGEMM to FP32's limits there (up to 4096³) and fails cuBLAS
#   TF32 as FP32.
# kscaled: steps 09 and 11 at 4096³ and 1024×1024×4096 on kscaled:12 and kscaled:40: the verify
#   lines (a strict FP32 product's limits), the speed against SGEMM, the paths
#   and needs lines (what step 11's equilibration moved); then step 11's test of one modulus short.
# tall: step 10 at M = 2²¹, 2²², 13074999 and 1724256 (N and K of 1 to 132), and step 02 at
#   1724256×132×2: each runs, verifies, and is timed against SGEMM.
# spills: step 08 without its two setmaxnreg (ptxas spills 32 bytes) at 4096³, and step 11's test
#   of a spill planted in `reconstruct`: each runs, verifies, and names its spill.
set -uo pipefail
part=${1:-}
. "$(dirname "$0")/gpu-check-common.sh"
# run_kept LOG LINES BIN ARGS...: BIN with ARGS, the lines matching LINES shown, its JSON kept in
# LOG.jsonl; a failed run marks the part failed.
run_kept() {
  local log=$1 lines=$2 bin=$3; shift 3
  echo "== $bin $*"
  bash .gpu/run bin "$bin" "$@" --record "$out/$log.jsonl" 2>&1 | grep -E "$lines"
  [ "${PIPESTATUS[0]}" -eq 0 ] || fail=1
}
# a_test NAME: the bundle's test NAME alone, its output kept.
a_test() {
  local t; t=$(holding "$1")
  [ -n "$t" ] || { echo "gpu-check: no test binary holds $1" >&2; fail=1; return; }
  echo "== test $1"
  timeout 500 "$t" --include-ignored --exact --nocapture "$1" 2>&1 | grep -vE "^\s*$"
  [ "${PIPESTATUS[0]}" -eq 0 ] || fail=1
}
fail=0
subnormal() {
  header subnormal.log
  : > "$out/subnormal.jsonl"
  {
    run_kept subnormal "shape|verify|normwise|per element|error" step01_cpu_naive --size 512 --inputs tiny:66
    while IFS=$'\t' read -r number crate _ _ needs _ _; do
      case "$number" in ''|\#*) continue ;; esac
      [ "$needs" = cpu ] || [ "$needs" = gpus ] && continue
      run_kept subnormal "speed|verify|normwise|per element|cuBLAS|error" "$crate" --size 2048 --inputs tiny:66
    done < labs.tsv
    a_test gpu_cublas_sgemm_passes_on_subnormal_products_and_tf32_fails
  } >> "$out/subnormal.log"
  grep -E "^==|verify|normwise|result" "$out/subnormal.log"
}
kscaled() {
  header kscaled.log
  : > "$out/kscaled.jsonl"
  {
    for inputs in kscaled:12 kscaled:40; do
      for shape in "--size 4096" "-m 1024 -n 1024 -k 4096"; do
        for bin in step09_3xtf32 step11_int8_crt; do
          # shellcheck disable=SC2086 # the shape is three flags
          run_kept kscaled "speed|verify|normwise|paths|needs|error" "$bin" $shape --inputs "$inputs"
        done
      done
    done
    a_test gpu_every_family_passes_and_the_faults_only_a_family_exposes_fail
  } >> "$out/kscaled.log"
  grep -E "^==|speed|verify|normwise|paths|needs" "$out/kscaled.log"
}
tall() {
  header tall.log
  : > "$out/tall.jsonl"
  {
    for s in 2097152,8,8 4194304,4,16 13074999,2,1 1724256,132,2; do
      IFS=, read -r m n k <<< "$s"
      run_kept tall "shape|choice|speed|verify|error" step10_any_shape -m "$m" -n "$n" -k "$k"
    done
    # Step 02's grid has a block-row per 32 rows of C, at most 65535: 1724256 rows fit.
    run_kept tall "shape|speed|verify|error" step02_gpu_naive -m 1724256 -n 132 -k 2
  } >> "$out/tall.log"
  grep -E "^==|speed|verify|error" "$out/tall.log"
}
spills() {
  header spills.log
  : > "$out/spills.jsonl"
  grep -v "asm volatile(\"setmaxnreg" step08_wgmma_tma/src/kernel.cu > "$out/step08_without_setmaxnreg.cu"
  {
    run_kept spills "kernel|spills|speed|verify|error" step08_wgmma_tma --size 4096 \
      --kernel "$out/step08_without_setmaxnreg.cu"
    a_test gpu_a_spill_planted_in_reconstruct_runs_and_is_named
    a_test gpu_a_kernel_without_setmaxnreg_runs_and_names_its_spill
  } >> "$out/spills.log"
  grep -E "^==|kernel |spills|speed|verify|result" "$out/spills.log"
}
case "$part" in
  subnormal) subnormal ;;
  kscaled) kscaled ;;
  tall) tall ;;
  spills) spills ;;
  all) subnormal; kscaled; tall; spills ;;
  *) echo "gpu-check: say which part: subnormal, kscaled, tall, spills or all" >&2; exit 2 ;;
esac
exit $fail

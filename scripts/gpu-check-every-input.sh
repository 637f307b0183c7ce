#!/usr/bin/env bash
# The GPU checks of "FP32 on every input" (steps 09 and 11 and every step's NaN and infinities),
# in two parts that each fit one call of the device (at most 600 s), from a gpu-bundle
# (scripts/gpu-bundle) carried as .gpu. Writes its logs under $OUT (or ./gpu-check).
#
#   CUDA_CACHE_DISABLE=1 bash scripts/gpu-check-every-input.sh 1   # speed twice, the families tests, the .npy inputs
#   CUDA_CACHE_DISABLE=1 bash scripts/gpu-check-every-input.sh 2   # steps 09 and 11's kernel tests, ncu at 4096³
set -uo pipefail
part=${1:-}
. "$(dirname "$0")/gpu-check-common.sh"
fail=0
case "$part" in
  1)
    header speed.log
    for r in 1 2; do for s in 4096 8192; do for st in step09_3xtf32 step11_int8_crt; do
      echo "== run $r: $st --size $s"; bash .gpu/run bin $st --size $s 2>&1
    done; done; done >> "$out/speed.log"
    grep -E "==|  speed" "$out/speed.log"
    header families.log
    fam=$(holding gpu_every_step_and_sgemm_pass_on_every_family)
    timeout 420 "$fam" --ignored --test-threads=1 --nocapture >> "$out/families.log" 2>&1 || fail=1
    grep -E "^\| |test result|panicked" "$out/families.log"
    header npy.log
    for t in $(holding gpu_real_looking_inputs_from_npy_files_pass); do
      timeout 60 "$t" --ignored --nocapture gpu_real_looking >> "$out/npy.log" 2>&1 || fail=1
    done
    grep -E "test result|panicked|verify" "$out/npy.log" ;;
  2)
    for st in gpu_subnormal_tiny_huge_and_non_finite_inputs_give_fp32s_answer gpu_every_family_passes_and_the_faults_only_a_family_exposes_fail; do
      t=$(holding $st); header "kernel-$st.log"
      timeout 280 "$t" --include-ignored --test-threads=1 --skip nvrtc_ --nocapture >> "$out/kernel-$st.log" 2>&1 || fail=1
      grep -E "test result|panicked|FAILED" "$out/kernel-$st.log"
    done
    header ncu-4096.log
    ncu --clock-control none -k regex:"scale_rows|col_norms|scale_cols|matmul|reconstruct|compute_apart" --launch-count 6 \
      --section SpeedOfLight "$dir/bin/step11_int8_crt" --size 4096 --reps 1 --no-verify --no-cublas >> "$out/ncu-4096.log" 2>&1
    grep -E "^  [a-z_]+ \(|Duration" "$out/ncu-4096.log" ;;
  *) echo "gpu-check: say which part, 1 or 2" >&2; exit 2 ;;
esac
exit $fail

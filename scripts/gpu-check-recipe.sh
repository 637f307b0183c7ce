#!/usr/bin/env bash
# The GPU checks of "one measuring recipe" (issue 84), in two parts that each fit one call of the
# device (at most 600 s), from a gpu-bundle carried as .gpu:
#
#   CUDA_CACHE_DISABLE=1 bash scripts/gpu-check-recipe.sh 1   # runs, planted faults, --tune, compare
#   CUDA_CACHE_DISABLE=1 bash scripts/gpu-check-recipe.sh 2   # the GPU tests the recipe touches, a bench
set -u
part=${1:-}
case "$part" in
  1)
    export CUDA_CACHE_DISABLE=1
    R="bash .gpu/run"
    keep() { grep -E "^(step|  shape|  params|  speed|  paths|  needs|  verify|           (per element|normwise|next launch)|  schedule|  moduli|error|note)" ; }
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    for s in step04_tiled step06_prefetch step08_wgmma_tma step09_3xtf32 step11_int8_crt step12_persistent_clusters; do
      echo "== $s 4096"; timeout 120 $R bin $s --size 4096 2>&1 | keep; echo "rc=${PIPESTATUS[0]}"
    done
    echo "== step10_any_shape 1024x1024x4096"; timeout 120 $R bin step10_any_shape -m 1024 -n 1024 -k 4096 2>&1 | keep
    echo "== step11 --moduli 9 2048"; timeout 120 $R bin step11_int8_crt --size 2048 --moduli 9 2>&1 | keep
    echo "== step09 lognormal:3 1024"; timeout 120 $R bin step09_3xtf32 --size 1024 --inputs lognormal:3 2>&1 | keep
    echo "== step09 --kernel variants/no_flush.diff 4096"; timeout 120 $R bin step09_3xtf32 --kernel step09_3xtf32/variants/no_flush.diff --size 4096 2>&1 | keep
    echo "== step09 a diff that does not apply"; sed 's/^-\(.\)/-XX\1/' step09_3xtf32/variants/no_flush.diff > /tmp/bad.diff; timeout 60 $R bin step09_3xtf32 --kernel /tmp/bad.diff --size 256 2>&1 | tail -2; echo "rc=${PIPESTATUS[0]}"
    echo "== step12 count never reset"
    grep -c 'if (adder\[role - 1\]) \*count = 0;  // ready for the next launch' step12_persistent_clusters/src/kernel.cu
    sed '/if (adder\[role - 1\]) \*count = 0;  \/\/ ready for the next launch/d' step12_persistent_clusters/src/kernel.cu > /tmp/noreset.cu
    timeout 120 $R bin step12_persistent_clusters --kernel /tmp/noreset.cu -m 1024 -n 1024 -k 4096 2>&1 | keep; echo "rc=${PIPESTATUS[0]}"
    echo "== step12 missing arrive"
    sed 's/if (kt > k_begin \&\& lane < CLUSTER)/if (kt > k_begin \&\& lane < CLUSTER - 1)/' step12_persistent_clusters/src/kernel.cu > /tmp/noarrive.cu
    cmp -s /tmp/noarrive.cu step12_persistent_clusters/src/kernel.cu && echo "PLANT DID NOT APPLY"
    timeout 120 $R bin step12_persistent_clusters --kernel /tmp/noarrive.cu --size 1024 2>&1 | tail -2; echo "rc=${PIPESTATUS[0]}"
    echo "== after"; timeout 60 $R bin step12_persistent_clusters --size 1024 2>&1 | keep
    echo "== step04 --tune"; timeout 150 $R bin step04_tiled --tune --reps 3 --size 1024 2>&1 | tail -6
    echo "== compare --sizes 256,1024"; timeout 200 $R bin compare --sizes 256,1024 --cpu-max 256 --reps 5 --out /tmp/cmp 2>&1 | tail -22
    echo "== compare --families 1024"; timeout 200 $R bin compare --families --size 1024 --reps 5 --out /tmp/cmp 2>&1 | tail -26
    ;;
  2)
    bash .gpu/run list >/dev/null
    dir=$(ls -d /tmp/gpu-bundle-*/ | head -1)
    # The test binary of the bundle that holds test $1, run with the filters after it.
    t() {
      local b; b=$(for x in "$dir"/tests/*; do "$x" --list 2>/dev/null | grep -q "^$1: test" && echo "$x"; done | head -1)
      shift; echo "=== $(basename "$b") $*"
      timeout 150 "$b" --include-ignored --test-threads=1 --skip without_the_compiler_library "$@" 2>&1 \
        | grep -vE '^test .* ok$' | grep -v '^$' | tail -15
    }
    t gpu_device_facts_are_plausible
    t fp32_path::tests::gpu_the_fp32_path_writes_the_marked_rows_and_columns_alone gpu_
    t gpu_a_split_k_matches_the_reference_and_its_faults_fail gpu_matches_the_reference_on_many_shapes gpu_variants gpu_a_split_k
    t gpu_a_spill_planted_in_reconstruct_is_refused_by_the_program
    t gpu_every_count_of_moduli_matches_the_reference gpu_matches_the_reference_on_many_shapes gpu_every_count_of_moduli gpu_the_one_pass
    t gpu_documented_sets_match_the_reference gpu_documented_sets
    t gpu_b_transposed_by_the_host_with_and_without_padding_matches_the_reference gpu_
    t gpu_real_looking_inputs_from_npy_files_pass gpu_
    for b in "$dir"/benches/step-*; do
      if strings "$b" | grep -q "step04_tiled/src/kernel.cu"; then
        echo "=== bench $(basename "$b")"
        timeout 240 "$b" --bench 2>&1 | grep -E "time:|thrpt:|error|matmul/" | head -30
      fi
    done
    ;;
  *) echo "usage: bash scripts/gpu-check-recipe.sh 1|2" >&2; exit 2 ;;
esac

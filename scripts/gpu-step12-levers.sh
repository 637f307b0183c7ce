#!/usr/bin/env bash
# Lab 12's levers on the GPU (toward cuBLAS TF32), from the repository root with the
# bundle of `cargo xtask gpu-bundle` in .gpu/. Every share is of cuBLAS TF32 timed in the same
# program run, with the SM clock and power NVML read while each product was timed.
#   bash scripts/gpu-step12-levers.sh shapes FAMILY [RUN]  compare: labs 08 and 12 (with lab 12's
#                                                         variants) and cuBLAS at the issue's shapes
#   bash scripts/gpu-step12-levers.sh tiles                the kernel's tile height by shape: the
#                                                         rule's choice, BM=256, BM=128 and PIECE=8
#   bash scripts/gpu-step12-levers.sh tune                 one program per lever set by a parameter
#   bash scripts/gpu-step12-levers.sh group                the units' order (GROUP), one program a shape
#   bash scripts/gpu-step12-levers.sh stages               step 08, each stage and the kernel, 4096³ and 8192³
#   bash scripts/gpu-step12-levers.sh l2                   Nsight Compute: L2 and DRAM bytes at 4096³
#   bash scripts/gpu-step12-levers.sh ncu                  Nsight Compute, every section, one launch
#                                                         of lab 12 and of cuBLAS TF32 at 4096³: each
#                                                         one's counters (raw CSV) and its SASS with
#                                                         the instructions each executed (CSV)
# Output goes to $OUT (or /tmp).
# Labs: 12, and 08 beside it as the kernel lab 12 starts from.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp}
s12="bash .gpu/run bin step12_persistent_clusters"
kernel="--param BM=256 --param BN=128 --param STAGES=4"
header() {
  echo "# $(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | head -1), $(date -u '+%F %H:%M') UTC"
}
case "${1:-}" in
  tiles)
    header
    echo "# lab 12's kernel at each shape with the rule's choice, BM=256, BM=128 and PIECE=8: each run's share of cuBLAS TF32 timed in the same program run"
    for shape in "--size 1024" "--size 2048" "-m 1024 -n 1024 -k 4096" "--size 1536" "-m 2048 -n 1024 -k 2048" \
                 "-m 1024 -n 2048 -k 1024" "--size 4096" "--size 8192"; do
      for p in "" "--param BM=256" "--param BM=128" "--param PIECE=8"; do
        echo "### $shape $p"
        # shellcheck disable=SC2086
        $s12 $shape $p 2>&1 | grep -E "^  (params|choice|time|speed|verify) "
      done
    done
    ;;
  shapes)
    family=$2 run=${3:-1}
    bash .gpu/run bin compare --shapes 4096,8192,2048,1024x1024x4096,1024 --steps 8,12 \
      --inputs "$family" --out /tmp/compare-"$family"-"$run" 2>&1 | grep -v "^wrote"
    cp /tmp/compare-"$family"-"$run"/*-shapes-"$family".md "$out/shapes-$family-r$run.md"
    ;;
  tune)
    header
    for set in "--size 1024|$kernel --param GROUP=8 --param CLUSTER=2" \
               "-m 1024 -n 1024 -k 4096|$kernel --param GROUP=8 --param CLUSTER=2" \
               "--size 2048|$kernel --param GROUP=8 --param PIECE=32" \
               "--size 4096|$kernel --param CLUSTER=2 --param PIECE=32" \
               "--size 4096 --kernel step12_persistent_clusters/variants/ping_pong.cu|$kernel --param GROUP=8 --param PIECE=32"; do
      IFS='|' read -r shape params <<< "$set"
      echo "### $shape $params --tune --reps 40"
      # shellcheck disable=SC2086
      $s12 $shape $params --tune --reps 40 2>&1 | grep -vE "^\s*$|compiling|timing"
    done
    ;;
  group)
    # The order of the units: GROUP block-rows walked down before moving right, one program each.
    header
    for shape in "--size 4096" "--size 4096" "--size 8192" "--size 2048" "--size 4096 --inputs normal"; do
      echo "### $shape $kernel --param CLUSTER=2 --param PIECE=32 --tune --reps 60"
      # shellcheck disable=SC2086
      $s12 $shape $kernel --param CLUSTER=2 --param PIECE=32 --tune --reps 60 2>&1 | grep -vE "^\s*$|compiling|timing"
    done
    # 1024³: the tile's size and the least piece, then ping-pong's cluster size.
    echo "### --size 1024 --param STAGES=4 --param GROUP=8 --param CLUSTER=2 --tune --reps 60 (BM, BN, PIECE)"
    $s12 --size 1024 --param STAGES=4 --param GROUP=8 --param CLUSTER=2 --tune --reps 60 2>&1 |
      grep -vE "^\s*$|compiling|timing|BN=192"
    echo "### --size 1024 --kernel variants/ping_pong.cu $kernel --param GROUP=8 --param PIECE=32 --tune --reps 60"
    # shellcheck disable=SC2086
    $s12 --size 1024 --kernel step12_persistent_clusters/variants/ping_pong.cu $kernel --param GROUP=8 \
      --param PIECE=32 --tune --reps 60 2>&1 | grep -vE "^\s*$|compiling|timing"
    ;;
  stages)
    # Step 08, each stage and the kernel at 4096³ and 8192³, a program run each (cuBLAS TF32 in
    # each), in two rounds.
    header
    for round in 1 2; do
      for size in 4096 8192; do
        echo "## round $round, ${size}³"
        bash .gpu/run bin step08_wgmma_tma --size $size 2>&1
        for stage in 1_persistent 2_multicast 3_tma_store 4_in_flight kernel; do
          arg="--stage $stage"; [ $stage = kernel ] && arg=""
          # shellcheck disable=SC2086
          $s12 --size $size $arg 2>&1
        done
      done
    done
    ;;
  l2)
    header
    metrics=lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_write.sum,lts__t_bytes.sum,dram__bytes_read.sum,sm__cycles_elapsed.avg,smsp__cycles_active.avg
    for set in "kernel|" "GROUP=1|--param GROUP=1" "GROUP=16|--param GROUP=16" \
               "ping_pong|--kernel step12_persistent_clusters/variants/ping_pong.cu" \
               "multicast_b|--kernel step12_persistent_clusters/variants/multicast_b.cu"; do
      IFS='|' read -r name args <<< "$set"
      echo "### $name"
      # shellcheck disable=SC2086
      ncu --clock-control none -k regex:matmul --launch-count 1 --metrics "$metrics" \
        $s12 --size 4096 $args --no-cublas --no-verify --reps 1 2>&1 | grep -E "^\s+(lts|dram|sm__|smsp)"
    done
    echo "### cuBLAS TF32 (its first kernel of the run whose name has tf32)"
    ncu --clock-control none -k regex:tf32 --launch-count 1 --metrics "$metrics" \
      $s12 --size 4096 --no-verify --reps 1 2>&1 | grep -E "^\s+(lts|dram|sm__|smsp)|tf32"
    ;;
  ncu)
    header
    for set in "step12|-k regex:matmul|--no-cublas" "cublas-tf32|-k regex:tf32|"; do
      IFS='|' read -r name filter args <<< "$set"
      echo "### $name: ncu --set full $filter --launch-count 1"
      # shellcheck disable=SC2086
      ncu --clock-control none $filter --launch-count 1 --set full --import-source no -f -o /tmp/"$name" \
        $s12 --size 4096 $args --no-verify --reps 1 2>&1 | grep -E "^==PROF==|error" | head -5
      ncu --import /tmp/"$name".ncu-rep --page raw --csv > "$out/$name-raw.csv"
      ncu --import /tmp/"$name".ncu-rep --page source --csv --print-source sass > "$out/$name-sass.csv"
      wc -c "$out/$name-raw.csv" "$out/$name-sass.csv"
    done
    ;;
  *) echo "usage: $0 shapes FAMILY [RUN] | tune | group | stages | l2 | ncu" >&2; exit 2 ;;
esac

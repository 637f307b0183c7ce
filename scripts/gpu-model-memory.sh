#!/usr/bin/env bash
# The memory system the time model's replay reads, beside Nsight Compute: for the labs that hide
# a wait (06 to 08) and the copy engine's (08, 12), the L2's sectors read and written by the SMs
# and by the copy engine, the share that hit, and DRAM's bytes, one launch each. Run on the
# device from the repository root with the bundle of `cargo xtask gpu-bundle` in .gpu/.
#   bash scripts/gpu-model-memory.sh [SIZE ...]      (default: 1024 4096)
# Labs: 06, 07 and 08, which hide a global wait, and 12, whose copy engine reads with multicast.
set -uo pipefail
cd "$(dirname "$0")/.."
export CUDA_CACHE_DISABLE=1
bash .gpu/run list > /dev/null
bin=${TMPDIR:-/tmp}/gpu-bundle-$(cksum < .gpu/pack.tar.xz | cut -d' ' -f1)/bin
metrics=lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_write.sum,lts__t_sectors_op_read.sum,lts__t_sectors_op_write.sum,lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum,lts__t_sectors_op_read_lookup_hit.sum,dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum
echo "# The memory system by Nsight Compute on $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1), driver $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1), $(date -u +%F)"
echo "# Command: ncu --clock-control none -k regex:matmul --launch-count 1 --csv --metrics $metrics STEP --size S --reps 1 --no-verify --no-cublas"
for s in ${@:-1024 4096}; do
  for step in step06_prefetch step07_tf32_mma step08_wgmma_tma step12_persistent_clusters; do
    echo "== $step --size $s"
    ncu --clock-control none -k regex:matmul --launch-count 1 --csv --metrics "$metrics" \
      "$bin/$step" --size "$s" --reps 1 --no-verify --no-cublas 2>&1 | grep -E '^"[0-9]' | awk -F'","' '{ print $(NF-2) " " $NF }' | tr -d '",'
  done
done

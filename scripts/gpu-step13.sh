#!/usr/bin/env bash
# Step 13 on a machine of several GPUs (carry .gpu built by `cargo xtask gpu-bundle`): the
# machine's facts, the GPU tests, then the program on 2 GPUs and on all of them, each twice.
# Logs go to $OUT, each run's report as JSON beside its log (gG-R.jsonl; the program's --record).
# NVLink multicast stays off (NCCL_NVLS_ENABLE=0), as the machines require.
#   bash scripts/gpu-step13.sh [tests] [runs] [extra program arguments…]
set -uo pipefail
export NCCL_NVLS_ENABLE=0
out=${OUT:-/tmp/step13}
mkdir -p "$out"
what=${1:-all}; shift || true
gpus=$(nvidia-smi -L | wc -l)
{
    date -u
    nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm --format=csv
    nvidia-smi topo -m
    ls -l /usr/lib/x86_64-linux-gnu/libnccl* /usr/local/lib/libnccl* 2>&1
    # The copy engines between two GPUs, as PyTorch drives them: what a copy without SMs gets.
    python3 - <<'PY'
import time, torch
print("peer access 0 -> 1:", torch.cuda.can_device_access_peer(0, 1))
x = torch.empty(4 << 20, dtype=torch.float32, device="cuda:0")
y = torch.empty(4 << 20, dtype=torch.float32, device="cuda:1")
for _ in range(5):
    y.copy_(x)
torch.cuda.synchronize(0); torch.cuda.synchronize(1)
n, t = 50, time.time()
for _ in range(n):
    y.copy_(x, non_blocking=True)
torch.cuda.synchronize(0); torch.cuda.synchronize(1)
dt = (time.time() - t) / n
print(f"16 MiB from GPU 0 to GPU 1 by PyTorch: {dt * 1e6:.1f} us a copy, {x.numel() * 4 / dt / 1e9:.0f} GB/s")
PY
} > "$out/machine.txt" 2>&1
if [ "$what" = all ] || [ "$what" = tests ]; then
    # The runner's own logs stay out of $OUT (the device brings back 8 files): its output is kept here.
    TEST_LOGS=$(mktemp -d) timeout 90 bash .gpu/run tests gpu_simulated_ring > "$out/tests-simulated.log" 2>&1
    echo "simulated tests: rc $?" | tee -a "$out/summary.txt"
    TEST_LOGS=$(mktemp -d) timeout 90 bash .gpu/run tests gpu_nccl_rings > "$out/tests-nccl.log" 2>&1
    echo "nccl tests: rc $?" | tee -a "$out/summary.txt"
fi
if [ "$what" = all ] || [ "$what" = runs ]; then
    for g in 2 "$gpus"; do
        for run in a b; do
            : > "$out/g$g-$run.jsonl"
            timeout 60 bash .gpu/run bin step13_collective_matmul --gpus "$g" "$@" --record "$out/g$g-$run.jsonl" \
                > "$out/g$g-$run.log" 2>&1
            rc=$?
            echo "gpus $g run $run: rc $rc" | tee -a "$out/summary.txt"
        done
    done
fi

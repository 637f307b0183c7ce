#!/usr/bin/env bash
# The GPU side of the emulator's time model (the book's appendix "The time model"), from a
# gpu-bundle (`cargo xtask gpu-bundle`) carried as .gpu. Writes its records under $OUT (or
# ./gpu-model).
#
#   bash scripts/gpu-model-runs.sh constants  # the microbenchmarks of ptx_emulator/calibration/
#                                             # throughput.cu (built with nvcc there), and the SM
#                                             # clock cuBLAS's FP32 and TF32 products hold
#   bash scripts/gpu-model-runs.sh latency    # the latency microbenchmarks of
#                                             # ptx_emulator/calibration/latency.cu (built with nvcc
#                                             # there): cycles a dependent step, by instruction class
#   bash scripts/gpu-model-runs.sh loaded     # ptx_emulator/calibration/loaded.cu (built with nvcc
#                                             # there): the L2's and DRAM's latency at several loads
#   bash scripts/gpu-model-runs.sh judged [S] # every lab and stage at 1024³ and 4096³ (or at S³
#                                             # alone): the times the model's predictions are set beside
set -uo pipefail
out=${OUT:-gpu-model}
mkdir -p "$out"
device=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr 'A-Z ' 'a-z-')
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)
stem="$out/$(date -u +%F)-$device"
case "${1:-}" in
constants)
  {
    echo "# The time model's constants: ptx_emulator/calibration/throughput.cu on $device, driver $driver, $(date -u +%F)"
    echo "# Command: nvcc -O3 -gencode=arch=compute_90a,code=sm_90a throughput.cu && ./throughput (twice), then"
    echo "# the SM clock nvidia-smi reads while cuBLAS multiplies 8192³ in FP32 and in TF32 for 4 s each."
    nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -o /tmp/throughput ptx_emulator/calibration/throughput.cu 2>&1
    for run in 1 2; do echo "## run $run"; /tmp/throughput 2>&1; done
    for math in fp32 tf32; do
      echo "## clock under cuBLAS $math, 8192³ (nvidia-smi every 200 ms: SM MHz, W)"
      nvidia-smi --query-gpu=clocks.sm,power.draw --format=csv,noheader -lms 200 > /tmp/clocks.txt &
      smi=$!
      python3 - "$math" <<'PY'
import sys, time, torch
torch.backends.cuda.matmul.allow_tf32 = sys.argv[1] == "tf32"
a = torch.rand(8192, 8192, device="cuda") * 2 - 1
b = torch.rand(8192, 8192, device="cuda") * 2 - 1
end = time.time() + 4
n = 0
while time.time() < end:
    for _ in range(4): c = a @ b
    torch.cuda.synchronize(); n += 4
print(f"{n} products")
PY
      kill $smi; wait $smi 2>/dev/null
      # The first readings are before the products start: keep the last 15 (3 s).
      tail -15 /tmp/clocks.txt | tr '\n' ';'; echo
    done
  } > "$stem-model-constants.log" 2>&1
  cat "$stem-model-constants.log"
  ;;
latency)
  {
    echo "# The time model's latencies: ptx_emulator/calibration/latency.cu on $device, driver $driver, $(date -u +%F)"
    echo "# Command: nvcc -O3 -gencode=arch=compute_90a,code=sm_90a latency.cu && ./latency (twice)"
    nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -o /tmp/latency ptx_emulator/calibration/latency.cu 2>&1
    for run in 1 2; do echo "## run $run"; /tmp/latency 2>&1; done
  } > "$stem-model-latency.log" 2>&1
  cat "$stem-model-latency.log"
  ;;
loaded)
  {
    echo "# The memory system under load: ptx_emulator/calibration/loaded.cu on $device, driver $driver, $(date -u +%F)"
    echo "# Command: nvcc -O3 -gencode=arch=compute_90a,code=sm_90a loaded.cu && ./loaded (twice)"
    nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -o /tmp/loaded ptx_emulator/calibration/loaded.cu 2>&1
    for run in 1 2; do echo "## run $run"; /tmp/loaded 2>&1; done
  } > "$stem-model-loaded.log" 2>&1
  cat "$stem-model-loaded.log"
  ;;
judged)
  # Each run's record beside the log (the program's --record), which `compare model-table` reads.
  jsonl="$stem-model-judged${2:+-$2}.jsonl"
  : > "$jsonl"
  {
    echo "# Every lab and stage at 1024³ and 4096³ on $device, driver $driver, $(date -u +%F): the times the"
    echo "# emulator's time model is judged against. Each line: the step (and --stage), the size, then its report's"
    echo "# time and speed lines. Command: bash .gpu/run bin STEP --size S [--stage NAME]"
    for s in ${2:-1024 4096}; do
      # Every lab the emulator runs (labs.tsv, at the root the bundle is run from), but 03, whose
      # one block holds 32³ at most.
      for step in $(awk -F'\t' '!/^#/ && $6 == "yes" && $1 != "03" { print $2 }' labs.tsv); do
        stages=$(bash .gpu/run bin "$step" --help 2>/dev/null | sed -n 's/^  \([0-9]_[a-z_]*\) .*/\1/p' | sort -u)
        for stage in "" $stages; do
          echo "== $step ${stage:+--stage $stage }--size $s"
          bash .gpu/run bin "$step" ${stage:+--stage "$stage"} --size "$s" --record "$jsonl" 2>&1 \
            | grep -E "^  (time|speed|verify)|rror"
        done
      done
    done
  } > "$stem-model-judged${2:+-$2}.log" 2>&1
  cat "$stem-model-judged${2:+-$2}.log"
  ;;
*) echo "usage: gpu-model-runs.sh constants|latency|loaded|judged" >&2; exit 2 ;;
esac

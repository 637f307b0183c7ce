#!/usr/bin/env bash
# Writes docs/src/results/runs/<date>-compile-only-nvrtc-<version>.log: the --compile-only reports
# that the chapters quote (the register cost of unrolling, a spilling thread tile, a kernel
# without launch bounds). Needs NVRTC on LD_LIBRARY_PATH, no GPU:
#   cargo build --release && scripts/compile-only-record.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bin=target/release
version=$("$bin/step04_tiled" --compile-only | sed -nE 's/.*by NVRTC ([0-9.]+).*/\1/p')
out=docs/src/results/runs/$(date -u +%F)-compile-only-nvrtc-$version.log
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
run() { # step, then its arguments
    local step=$1; shift
    echo "\$ cargo run --release -p $step -- --compile-only${*:+ $*}"
    (cd "$work" && "$OLDPWD/$bin/$step" --compile-only "$@")
    echo
}
{
    echo "# --compile-only with NVRTC $version, no GPU, on $(date -u +%F)"
    run step04_tiled --param UNROLL=1
    run step04_tiled --param UNROLL=4
    run step04_tiled --param UNROLL=32
    run step05_thread_tile
    run step05_thread_tile --param TM=16 --param TN=16 --param WM=64 --param WN=128
    run step06_prefetch
    echo '$ grep -v "#pragma unroll UNROLL" step04_tiled/src/kernel.cu > my.cu'
    grep -v "#pragma unroll UNROLL" step04_tiled/src/kernel.cu > "$work/my.cu"
    run step04_tiled --kernel my.cu
    echo '$ sed "s/__launch_bounds__(THREADS, MINB) //" step06_prefetch/src/kernel.cu > my.cu'
    sed "s/__launch_bounds__(THREADS, MINB) //" step06_prefetch/src/kernel.cu > "$work/my.cu"
    run step06_prefetch --kernel my.cu
} > "$out"
echo "wrote $out"

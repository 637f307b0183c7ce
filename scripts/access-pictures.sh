#!/usr/bin/env bash
# Writes the book's pictures of one warp's access (docs/src/figures/access-*.svg) and their
# record; run from the repository root after `cargo build --release` of steps 02, 04, 05, 07, 08.
# Labs: 02, 04, 05, 07 and 08, the chapters that show a warp's access (a figure each, not every lab).
set -euo pipefail
BIN=${BIN_DIR:-target/release}
LOG=docs/src/results/runs/2026-11-27-emulator-access-pictures.log
F=docs/src/figures
{
echo "# The book's pictures of one warp's access (--emulate --picture-access), 2026-11-27, development machine (2 cores, no GPU, NVRTC 13.0.88)"
echo "# Each run: cargo run --release -p STEP -- ARGS (the built program, the same arguments); the SVGs are under docs/src/figures/"
run() {
    local name=$1 step=$2; shift 2
    echo
    echo "## $name"
    echo "\$ cargo run --release -p $step -- $*"
    "$BIN/$step" "$@" 2>&1
}
run step02-coalesced step02_gpu_naive --emulate --size 256 --picture-access kernel.cu:35 --picture-to $F/access-step02-coalesced.svg
run step02-uncoalesced step02_gpu_naive --emulate --size 256 --param COALESCED=0 --picture-access kernel.cu:35 --picture-to $F/access-step02-uncoalesced.svg
run step04-bt step04_tiled --emulate --size 256 --param BT=1 --picture-access kernel.cu:50 --picture-to $F/access-step04-bt.svg
run step04-bt-pad step04_tiled --emulate --size 256 --param BT=1 --param PAD=1 --picture-access kernel.cu:50 --picture-to $F/access-step04-bt-pad.svg
run step05-b step05_thread_tile --emulate --size 256 --picture-access kernel.cu:193 --picture-to $F/access-step05-b.svg
run step07-ldmatrix step07_tf32_mma --emulate --size 256 --picture-access kernel.cu:189 --picture-to $F/access-step07-ldmatrix.svg
run step08-pairs step08_wgmma_tma --emulate --size 256 --picture-access kernel.cu:266:warp=4 --picture-to $F/access-step08-pairs.svg
} > "$LOG"

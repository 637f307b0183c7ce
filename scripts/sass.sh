#!/usr/bin/env bash
# Compiles each GPU step's kernel for one architecture and counts the instructions of its machine
# code (scripts/sass-summary.py): the whole kernel and its hot loop, by opcode. Needs NVRTC and
# nvdisasm or cuobjdump (CUDA toolkit, or the nvidia-cuda-nvdisasm wheel); no GPU.
#
#   cargo build --release && scripts/sass.sh                        # sm_90, programs from target/release
#   ARCH=sm_80 scripts/sass.sh .gpu/bin > sass.log                   # another architecture or folder
#   NVDISASM=/path/to/nvdisasm STEPS="step05_thread_tile step06_prefetch" scripts/sass.sh
set -uo pipefail
bin=$(cd "${1:-target/release}" 2>/dev/null && pwd) || { echo "sass: no folder ${1:-target/release}" >&2; exit 2; }
cd "$(dirname "$0")/.."
arch=${ARCH:-sm_90}
if [ -n "${NVDISASM:-}" ]; then disasm=("$NVDISASM" -c)
elif command -v nvdisasm > /dev/null; then disasm=(nvdisasm -c)
elif command -v cuobjdump > /dev/null; then disasm=(cuobjdump -sass)
else echo "sass: neither nvdisasm nor cuobjdump found; set NVDISASM" >&2; exit 2; fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0
# Every lab of one GPU (labs.tsv: needs neither the CPU alone nor several GPUs), unless STEPS names some.
steps=${STEPS:-$(awk -F'\t' '!/^#/ && $5 != "cpu" && $5 != "gpus" { print $2 }' labs.tsv)}
for step in $steps; do
    echo "\$ cargo run --release -p $step -- --compile-only --arch $arch --cubin k.cubin"
    if ! CUDA_CACHE_DISABLE=1 "$bin/$step" --compile-only --arch "$arch" --cubin "$work/k.cubin" > "$work/out" 2>&1; then
        sed 's/^/  /' "$work/out"; echo
        # A step written for another architecture refuses in one sentence; anything else fails.
        grep -q "needs a GPU of compute capability" "$work/out" || status=1
        continue
    fi
    grep -E "^  (params|kernel) " "$work/out"
    echo "\$ ${disasm[0]##*/} ${disasm[1]} k.cubin | scripts/sass-summary.py"
    "${disasm[@]}" "$work/k.cubin" | scripts/sass-summary.py || status=1
    echo
done
exit $status

#!/usr/bin/env bash
# Step 07's stages on the PTX emulator, as a learner without a GPU runs them: each stage and the
# step's kernel at 256³ and at an odd shape (stage 1 also with the 64×32 warps a GPU runs it
# with), then the hands-on exercise: the starting file and two typical mistakes in the
# finished kernel. The chapter quotes the traffic lines (docs/src/step07.md). Written to a file
# NAME.log, it keeps each run's report as JSON beside it, in NAME.jsonl (the program's --record).
#   scripts/emulator-step07-stages.sh [BIN_DIR] > docs/src/results/runs/DATE-emulator-step07-stages.log
# BIN_DIR defaults to target/release (build it first: cargo build --release -p step07_tf32_mma).
set -uo pipefail
cd "$(dirname "$0")/.."
bin=$(cd "${1:-target/release}" && pwd) || exit 2
# Each run's record (--record): NAME.jsonl beside NAME.log where standard output is that file.
jsonl=/dev/null
log=$(readlink -f /proc/$$/fd/1 2>/dev/null)
case $log in *.log) jsonl=${log%.log}.jsonl && : > "$jsonl" ;; esac
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/step07_tf32_mma" && cp -r step07_tf32_mma/exercises "$work/step07_tf32_mma/"

run() { # the arguments after `--`, as a learner types them, from the scratch folder
    echo "\$ cargo run --release -p step07_tf32_mma -- $*"
    (cd "$work" && "$bin/step07_tf32_mma" "$@" --record "$jsonl" 2>&1)
    echo "(exit status $?)"
    echo
}
edit() { # a sed script, then the file it writes: the step's kernel with one mistake
    echo "\$ sed '$1' step07_tf32_mma/src/kernel.cu > $2"
    sed "$1" step07_tf32_mma/src/kernel.cu > "$work/$2"
    cmp -s step07_tf32_mma/src/kernel.cu "$work/$2" && echo "(the edit did not apply)"
}

echo "# Step 07's stages and its exercise on the PTX emulator, $(date -u +%F), $(nproc) cores, no GPU"
echo "# Command: scripts/emulator-step07-stages.sh (each run from a scratch folder holding the exercise)"
echo
for shape in "--size 256" "-m 67 -n 45 -k 129"; do
    for stage in 1_mma_sync 2_cp_async 3_padded_rows 4_swapped_operands 5_paired_columns; do
        # shellcheck disable=SC2086 # the shape is several words
        run --emulate --stage "$stage" $shape
    done
    # shellcheck disable=SC2086
    run --emulate --stage 1_mma_sync --param WN=32 $shape
    # shellcheck disable=SC2086
    run --emulate $shape
done

echo "The hands-on exercise as it starts, then the finished kernel with a typical mistake each:"
echo
run --emulate --kernel step07_tf32_mma/exercises/ldmatrix.cu
run --emulate --kernel step07_tf32_mma/exercises/ldmatrix.cu -m 67 -n 45 -k 129
edit 's#"=r"(a0\[0\]), "=r"(a0\[1\]), "=r"(a1\[0\]), "=r"(a1\[1\])#"=r"(a0[0]), "=r"(a1[0]), "=r"(a0[1]), "=r"(a1[1])#' registers.cu
run --emulate --kernel registers.cu
run --emulate --kernel registers.cu -m 67 -n 45 -k 129
edit 's#smem_address(&As\[\(.*\) + (lane / 8) % 2 \* 4\])#smem_address(\&As[\1]) + (lane / 8) % 2 * 4#' byte_offset.cu
run --emulate --kernel byte_offset.cu

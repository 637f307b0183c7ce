#!/usr/bin/env bash
# Measures the lessons the chapters quote, each into its own record: every command is printed
# before its output, as a learner would type it. Needs an NVIDIA GPU.
#
#   cargo build --release && scripts/lessons.sh                      # programs from target/release
#   scripts/lessons.sh .gpu/bin docs/src/results/runs                # or from another folder
#
# Writes <out>/<date>-<device>-<lesson>.log for each lesson below, and beside it <lesson>.jsonl,
# each run's record (the program's --record); a lesson runs every measurement twice, so
# a reader can see how far two runs agree.
# Labs: 02 to 10, the chapters that quote a lesson measured here (the others' chapters quote
# records of their own scripts).
set -uo pipefail
# Both folders are read relative to where the script is called from, before it moves to the root.
bin=$(cd "${1:-target/release}" 2>/dev/null && pwd) || { echo "lessons: no folder ${1:-target/release}" >&2; exit 2; }
mkdir -p "${2:-docs/src/results/runs}" && out=$(cd "${2:-docs/src/results/runs}" && pwd)
cd "$(dirname "$0")/.."
jsonl=/dev/null
device=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 | tr 'A-Z ' 'a-z-')
stem="$out/$(date -u +%F)-${device:-gpu}"
# Every run starts in a scratch folder that holds the variants, so that the records show the
# relative paths a learner types (my.cu, step04_tiled/variants/…).
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for dir in step*/variants; do mkdir -p "$work/${dir%/*}" && cp -r "$dir" "$work/${dir%/*}/"; done
for dir in step*/exercises; do mkdir -p "$work/${dir%/*}" && cp -r "$dir" "$work/${dir%/*}/"; done

run() { # step, then its arguments; a STREAM_K_LAYOUT set for the call is shown and passed on
    local step=$1; shift
    local shown="${STREAM_K_LAYOUT:+STREAM_K_LAYOUT=$STREAM_K_LAYOUT }cargo run --release -p $step${*:+ -- $*}"
    echo "\$ $shown"
    (cd "$work" && timeout 120 "$bin/$step" "$@" --record "$jsonl" 2>&1)
    echo "(exit status $?)"
    echo
}
twice() { run "$@"; run "$@"; }
kernels() { # step, size, a kernel file or -, then the kernels one launch runs: each one's GPU time
    local step=$1 size=$2 file=$3; shift 3
    local ncu out; ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
    [ -x "$ncu" ] || { echo "(ncu not found: the kernels' own times are not measured)"; echo; return; }
    local pick; pick=$(IFS='|'; echo "$*")
    local extra=(); [ "$file" != - ] && extra=(--kernel "$file")
    echo "\$ ncu --clock-control none -k regex:'$pick' --launch-count $# --metrics gpu__time_duration.sum target/release/$step --size $size --reps 1${extra[*]:+ ${extra[*]}}"
    out=$(cd "$work" && "$ncu" --clock-control none -k "regex:$pick" --launch-count $# \
        --metrics gpu__time_duration.sum "$bin/$step" --size "$size" --reps 1 "${extra[@]}" 2>&1)
    # Each kernel's name line (ncu prints "  name (grid)x(block), ...") and its time.
    grep -E '^  [A-Za-z_][A-Za-z0-9_]* \(|gpu__time_duration' <<< "$out" ||
        { echo "(ncu measured nothing; the end of its output:)"; tail -5 <<< "$out"; }
    echo
}
header() { # lesson title
    echo "# $1"
    echo "# $(date -u '+%F %T') UTC on ${device:-an unnamed GPU}, driver $(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)"
    echo
}

one_d="--param BM=64 --param BN=64 --param BK=8 --param WM=8 --param WN=32 --param TM=8 --param TN=1"

lesson() { # name, then the commands (a function) that measure it
    local name=$1; shift
    echo "lessons: $name" >&2
    jsonl="$stem-$name.jsonl"
    : > "$jsonl"
    { header "$name"; "$@"; } > "$stem-$name.log"
}

coalescing() { # step02: which index threadIdx.x follows, at three block sizes
    twice step02_gpu_naive --tune
}
tiles() { # step04: TILE and UNROLL over the tuner's space
    twice step04_tiled --tune
}
banks() { # step04: B transposed by the host (coalesced copies, a column read per k), then padded
    for args in "" "--param BT=1" "--param BT=1 --param PAD=1"; do
        # shellcheck disable=SC2086
        twice step04_tiled $args
    done
    echo "A kernel that reads B as it is while the host passes Bᵀ must fail verification:"
    echo '$ sed "s/^#if BT$/#if 0/" step04_tiled/src/kernel.cu > my.cu'
    sed "s/^#if BT$/#if 0/" step04_tiled/src/kernel.cu > "$work/my.cu"
    run step04_tiled --param BT=1 --kernel my.cu
}
l1_cache() { # step04: its tiles read through L1 instead of staged in shared memory
    twice step04_tiled
    twice step04_tiled --kernel step04_tiled/variants/l1_cache.cu
    echo "The same variant without its barrier, and step 02 (the same reads, no tile walk):"
    echo '$ grep -v "__syncthreads();" step04_tiled/variants/l1_cache.cu > my.cu'
    grep -v "__syncthreads();" step04_tiled/variants/l1_cache.cu > "$work/my.cu"
    twice step04_tiled --kernel my.cu
    twice step02_gpu_naive
}
single_block() { # step03 against step02 at the shapes one block holds
    for shape in "--size 32" "-m 32 -n 32 -k 908" "-m 8 -n 8 -k 3632" "-m 1 -n 1 -k 29056"; do
        # shellcheck disable=SC2086
        twice step02_gpu_naive $shape
        # shellcheck disable=SC2086
        twice step03_single_block $shape
    done
}
thread_tile_1d() { # step05: the one-dimensional tile with one and two blocks' worth of registers
    twice step05_thread_tile
    # shellcheck disable=SC2086
    twice step05_thread_tile $one_d
    # shellcheck disable=SC2086
    twice step05_thread_tile $one_d --param MINB=2
    # shellcheck disable=SC2086
    run step05_thread_tile $one_d --param MINB=3
    echo "The best one-dimensional tile in the tuner's space (TN=1 fixed):"
    run step05_thread_tile --tune --param TN=1
}
edges() { # step06 at sizes that are not multiples of its tiles
    for size in 4095 4096 4097; do
        twice step06_prefetch --size "$size"
    done
}
stages() { # step05 built up one idea at a time (--stage), then the step's kernel; step06 beside it
    local s
    # shellcheck disable=SC2086 # the parameters are several words
    twice step05_thread_tile --stage 1_column_tile $one_d
    for s in 1_column_tile 2_outer_products 3_warp_regions 4_transposed_a 5_staged_copies 6_vector_loads 7_launch_bounds; do
        twice step05_thread_tile --stage "$s"
    done
    run step05_thread_tile --stage 7_launch_bounds --param MINB=2
    twice step05_thread_tile
    twice step06_prefetch
}

step07-stages() { # step07 built up one idea at a time (--stage), then the step's kernel, vs cuBLAS TF32
    local s
    # Stage 1 keeps step 06's register staging: at the default 64×64 warps it spills, which a run
    # refuses (shown once), so it runs with 64×32 warps, beside stage 2 and the kernel at that set.
    run step07_tf32_mma --stage 1_mma_sync
    for s in "--stage 1_mma_sync" "--stage 2_cp_async" ""; do
        # shellcheck disable=SC2086 # the stage is two words, or none
        twice step07_tf32_mma $s --param WN=32
    done
    for s in 2_cp_async 3_padded_rows 4_swapped_operands 5_paired_columns; do
        twice step07_tf32_mma --stage "$s"
    done
    twice step07_tf32_mma
}

targets() { # steps 05 and 06 at 2048³, 4096³ and 8192³, then step06 at odd sizes, twice each
    local size
    for size in 2048 4096 8192; do
        twice step05_thread_tile --size "$size"
        twice step06_prefetch --size "$size"
    done
    twice step06_prefetch -m 4095 -n 4095 -k 4095
    twice step06_prefetch -m 4097 -n 4097 -k 4097
}

# The Stream-K variant beside step06: its kernel file, which brings its own launch.
stream_k_variant="--kernel step06_prefetch/variants/stream_k.cu"

padding() { # K or N not a multiple of 4: step06 reads such rows 4 bytes at a time; the variant pads them
    local shape
    for shape in "-m 4095 -n 4095 -k 4095" "-m 4095 -n 4096 -k 4096" "-m 4097 -n 4097 -k 4097" "-m 4097 -n 4100 -k 4100"; do
        # shellcheck disable=SC2086 # the shape is several words
        twice step06_prefetch $shape
        # shellcheck disable=SC2086
        twice step06_prefetch $shape $stream_k_variant --param SHARE=0
    done
}

stream_k() { # step06 against its Stream-K variant (the last tile rows shared slice by slice), SHARE=0 beside
    local shape
    for shape in "--size 4096" "--size 8192" "--size 2048" "-m 4095 -n 4095 -k 4095" "-m 4097 -n 4097 -k 4097" "--size 1024" "--size 1000" "-m 64 -n 64 -k 65536"; do
        # shellcheck disable=SC2086 # the shape is several words
        twice step06_prefetch $shape
        # shellcheck disable=SC2086
        twice step06_prefetch $shape $stream_k_variant
        # shellcheck disable=SC2086
        run step06_prefetch $shape $stream_k_variant --param SHARE=0
    done
}

layouts() { # the Stream-K variant with its layout forced, twice each: what the host's model is fitted to
    local l
    for l in 32,32 24,32 24,33 25,33 20,33 28,33 24,34 0,33; do
        # shellcheck disable=SC2086
        STREAM_K_LAYOUT=$l twice step06_prefetch --size 4096 $stream_k_variant
    done
    for l in 64,64 61,66 61,65 60,66 62,66 0,66; do
        # shellcheck disable=SC2086
        STREAM_K_LAYOUT=$l twice step06_prefetch --size 8192 --no-verify $stream_k_variant
    done
    # shellcheck disable=SC2086
    STREAM_K_LAYOUT=24,31 run step06_prefetch --size 4096 $stream_k_variant
}

tensor_cores() { # step07: TF32 mma.sync against both cuBLAS baselines, at 4096³ and 8192³
    for size in 4096 8192; do
        twice step07_tf32_mma --size "$size"
    done
    run step07_tf32_mma --size 1000 --exact
    # The same MMAs with operands in registers: what the instructions alone cost.
    for size in 4096 8192; do
        twice step07_tf32_mma --size "$size" --kernel step07_tf32_mma/variants/mma_only.cu --no-verify
    done
    # Warps of 64×32 instead of 64×64: more fragment loads per MMA.
    twice step07_tf32_mma --param WN=32
}
wgmma() { # step08: wgmma fed by the copy engine, against both cuBLAS baselines, and what each choice buys
    for size in 4096 8192; do
        twice step08_wgmma_tma --size "$size"
    done
    run step08_wgmma_tma --size 1000 --exact
    # Blocks in plain launch order (one block-row at a time), at both sizes.
    for size in 4096 8192; do
        twice step08_wgmma_tma --size "$size" --param GROUP=1
    done
    # Two stages instead of four; a 128-row instruction with three consumers.
    twice step08_wgmma_tma --param STAGES=2
    twice step08_wgmma_tma --param BM=128 --param BN=192
    # Shapes whose rows the copy engine cannot take as they are: padded copies, timed.
    twice step08_wgmma_tma -m 4096 -n 4095 -k 4095
    twice step08_wgmma_tma --size 4097
    run step08_wgmma_tma --tune
}
layout() { # step08: the three ways to give wgmma a K-major B, each timed with all it launches
    local v
    for size in 4096 8192; do
        twice step08_wgmma_tma --size "$size"
        for v in transposing_prologue in_pipeline_transpose; do
            twice step08_wgmma_tma --size "$size" --kernel "step08_wgmma_tma/variants/$v.cu"
        done
    done
    for v in transposing_prologue in_pipeline_transpose; do
        run step08_wgmma_tma -m 4096 -n 4095 -k 4095 --kernel "step08_wgmma_tma/variants/$v.cu"
    done
    # Each kernel on its own: the prologue apart from the product.
    kernels step08_wgmma_tma 4096 - matmul
    kernels step08_wgmma_tma 4096 step08_wgmma_tma/variants/transposing_prologue.cu transpose_b matmul
    kernels step08_wgmma_tma 4096 step08_wgmma_tma/variants/in_pipeline_transpose.cu matmul
}
split() { # step09: FP32 accuracy from three TF32 products, against both cuBLAS baselines, and the choices
    for size in 4096 8192; do
        twice step09_3xtf32 --size "$size"
    done
    twice step09_3xtf32 --size 1024
    twice step09_3xtf32 -m 256 -n 256 -k 1048576
    # Small K, where SGEMM rounds only a few times and the split's own error shows.
    twice step09_3xtf32 -m 1024 -n 1024 -k 16
    run step09_3xtf32 --size 1000 --exact
    # The accumulation: the tensor cores' own sums over all of K; one running sum of K/32
    # parts; Kahan's compensated sum.
    for v in one_accumulator no_flush compensated; do
        twice step09_3xtf32 --size 4096 --kernel "step09_3xtf32/variants/$v.diff"
        run step09_3xtf32 -m 256 -n 256 -k 1048576 --kernel "step09_3xtf32/variants/$v.diff"
    done
    # A split in the pipeline, by the producer's idle warps (its launch still copies A once).
    for size in 4096 8192; do
        twice step09_3xtf32 --size "$size" --kernel step09_3xtf32/variants/in_pipeline.diff
    done
    # Each kernel on its own: the split apart from the product, in front of it or inside it.
    kernels step09_3xtf32 4096 - split_a matmul
    kernels step09_3xtf32 4096 step09_3xtf32/variants/in_pipeline.diff split_a matmul
    # Exercise 2: the small part left unrounded, for the tensor cores to cut.
    echo '$ sed "s/parts\[small + at\] = tf32(a - big);/parts[small + at] = a - big;/" step09_3xtf32/src/kernel.cu > my.cu'
    sed 's/parts\[small + at\] = tf32(a - big);/parts[small + at] = a - big;/' step09_3xtf32/src/kernel.cu > "$work/my.cu"
    grep -qF 'parts[small + at] = tf32(a - big);' "$work/my.cu" && echo "(the edit did not apply)"
    run step09_3xtf32 -m 1024 -n 1024 -k 1
    for shape in "-m 1024 -n 1024 -k 1" "--size 4096" "-m 256 -n 256 -k 1048576"; do
        # shellcheck disable=SC2086
        run step09_3xtf32 $shape --kernel my.cu
    done
    twice step09_3xtf32 -m 4096 -n 4095 -k 4095
    twice step09_3xtf32 --size 4097
    run step09_3xtf32 --tune
}
skinny() { # a small, deep shape: big tiles leave SMs idle unless blocks share the K loop (the variant)
    for step in step02_gpu_naive step04_tiled step05_thread_tile step06_prefetch; do
        twice $step -m 64 -n 64 -k 65536
    done
    # shellcheck disable=SC2086
    twice step06_prefetch -m 64 -n 64 -k 65536 $stream_k_variant
}
limits() { # what the verdict says: expected error and limit, a shape too small to tell, bf16 caught
    run step06_prefetch --size 4096
    run step07_tf32_mma -m 7 -n 3 -k 5
    run step07_tf32_mma -m 64 -n 64 -k 65536
    run step08_wgmma_tma -m 64 -n 64 -k 65536
    echo '$ sed "s/frag\[k8\]\[\([0-3]\)\] = __float_as_uint(\([a-z.]*\));/frag[k8][\1] = __float_as_uint(\2) \& 0xffff0000u;/" step08_wgmma_tma/src/kernel.cu > my.cu'
    sed "s/frag\[k8\]\[\([0-3]\)\] = __float_as_uint(\([a-z.]*\));/frag[k8][\1] = __float_as_uint(\2) \& 0xffff0000u;/" step08_wgmma_tma/src/kernel.cu > "$work/my.cu"
    [ "$(grep -c '0xffff0000u' "$work/my.cu")" = 4 ] || echo "(the edit did not apply)"
    run step08_wgmma_tma --size 4096 --kernel my.cu
    run step08_wgmma_tma -m 64 -n 64 -k 65536 --kernel my.cu
}
break_it() { # the chapters' "break it, then fix it" exercises that need a GPU
    echo '$ sed "s/if (row < M \&\& col < N) {/{/" step02_gpu_naive/src/kernel.cu > my.cu'
    sed 's/if (row < M \&\& col < N) {/{/' step02_gpu_naive/src/kernel.cu > "$work/my.cu"
    grep -q 'row < M && col < N' "$work/my.cu" && echo "(the edit did not apply)"
    run step02_gpu_naive -m 1000 -n 17 -k 1 --kernel my.cu
    run step02_gpu_naive -m 1000 -n 17 -k 1
    echo '$ grep -v "__syncthreads();" step03_single_block/src/kernel.cu > my.cu'
    grep -v "__syncthreads();" step03_single_block/src/kernel.cu > "$work/my.cu"
    run step03_single_block --kernel my.cu
    run step03_single_block -m 32 -n 32 -k 908 --kernel my.cu
    run step03_single_block
    if command -v compute-sanitizer > /dev/null; then
        echo '$ compute-sanitizer --tool racecheck target/release/step03_single_block --kernel my.cu --reps 1 --no-cublas'
        (cd "$work" && compute-sanitizer --tool racecheck "$bin/step03_single_block" --kernel my.cu --reps 1 --no-cublas 2>&1 | grep -vE "^=+ +(at |in |Saved host backtrace)" | head -40)
        echo
    fi
    echo '$ grep -v "#pragma unroll UNROLL" step04_tiled/src/kernel.cu > my.cu'
    grep -v "#pragma unroll UNROLL" step04_tiled/src/kernel.cu > "$work/my.cu"
    run step04_tiled --kernel my.cu
    run step04_tiled --param UNROLL=1
}

exercises() { # each lab's hands-on starting file as the learner first runs it, TODOs not done
    for file in step*/exercises/*.cu; do
        local step=${file%%/*} shape=()
        # Step 10's exercise is its split of K, which the rule takes at a deep shape, not at 4096³.
        [ "$step" = step10_any_shape ] && shape=(-m 64 -n 64 -k 65536)
        [ "$step" = step03_single_block ] && shape=(-m 32 -n 32 -k 908)
        run "$step" "${shape[@]}" --kernel "$file"
    done
}

for name in ${LESSONS:-coalescing tiles banks l1_cache single_block thread_tile_1d edges stages targets padding skinny tensor_cores wgmma layout split break_it limits}; do
    lesson "$name" "$name"
done
echo "lessons: wrote $stem-*.log" >&2

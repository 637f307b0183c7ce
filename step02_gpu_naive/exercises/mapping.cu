// EXERCISE (step 02, hands-on): give each thread its element of C.
//
// Starts from: this step's kernel, src/kernel.cu, with the thread -> element mapping and the
// dot product taken out. Every thread now takes element (0, 0), so the result is wrong.
// To do: TODO 1 (the mapping to use), TODO 2 (the mapping to avoid), TODO 3 (the dot product).
// Run a copy of your own, from the repository's root (git ignores mine/; --emulate runs it on
// the CPU, with no GPU):
//   mkdir -p mine && cp step02_gpu_naive/exercises/mapping.cu mine/ && ex=mine/mapping.cu
//   cargo run --release -p step02_gpu_naive -- --emulate --kernel $ex
//   cargo run --release -p step02_gpu_naive -- --emulate --kernel $ex -m 67 -n 45 -k 129
//   (add --param COALESCED=0 to run the mapping of TODO 2)
// Check: `verify ... PASS` at both shapes with both values of COALESCED. On a GPU (without
//   --emulate) COALESCED=1 runs at about step 02's speed (docs/src/step02.md, "What it
//   measures"), COALESCED=0 many times slower.
// Solution: exercises/mapping.diff turns this file into src/kernel.cu:
//   cd step02_gpu_naive && patch -o /tmp/solved.cu exercises/mapping.cu exercises/mapping.diff

// Step 02: the naive GPU kernel, one thread per element of C.
//
// Idea: the M·N dot products of C = A·B are independent, so give each its own thread. A 2-D
// grid of 2-D blocks covers C; the thread at (row, col) walks K, reading a row of A and a
// column of B from global memory, and writes one element.
//
// Why threadIdx.x is the column: the 32 threads of a warp have consecutive threadIdx.x. With x
// mapped to col, a warp shares one row: it reads one A[row][k] (a broadcast), reads
// B[k][col..col+31] (128 contiguous bytes: one request of four 32-byte sectors) and writes
// C[row][col..col+31] the same way. Mapped the other way round, a warp would touch 32 rows K
// floats apart on every access: 32 sectors where four suffice.
//
// What it buys: every SM busy, but two global loads per FMA (an intensity of 1/4 FLOP per
// byte). Caches absorb most of that traffic, yet the kernel stays far below the FP32 peak; its
// chapter, docs/src/step02.md, measures how far, against cuBLAS SGEMM. Step 03 keeps data on chip.

// COALESCED (a -D define, 1 by default) picks the mapping; 0 shows what the other one costs.
// offset_t (defined by the host): int, or long long where a matrix passes 2^31 - 1 elements.
// ANCHOR: kernel
extern "C" __global__ void matmul(int M, int N, int K, const float* A, const float* B, float* C)
{
#if COALESCED
    // TODO 1: the row and column of C this thread computes. No two threads of the grid may
    // share an element, so use where the block sits in the grid as well as where the thread
    // sits in its block. Make threadIdx.x run along a row of C: a warp then reads one value
    // of A and 32 neighbouring floats of B at each k (the coalesced mapping of the chapter).
    int col = 0;
    int row = 0;
#else
    // The mapping to avoid: the threads of a warp take 32 different rows.
    // TODO 2: the same, with the roles of x and y exchanged: threadIdx.x runs down a column.
    int row = 0;
    int col = 0;
#endif

    // The grid is rounded up to whole blocks: threads past the edge of C do nothing.
    if (row < M && col < N) {
        float sum = 0.0f;
        // TODO 3: the dot product of row `row` of A (M×K) with column `col` of B (K×N), in
        // sum. Both matrices are row-major (step 01: where element (r, c) of a matrix lies).
        C[(offset_t)row * N + col] = sum;
    }
}
// ANCHOR_END: kernel

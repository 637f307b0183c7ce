// EXERCISE (step 04, hands-on): stage the tiles in shared memory.
//
// Starts from: step 02's kernel (one thread per element of C, threadIdx.x along a row), turned
// toward step 04. The block is one TILE×TILE tile of C, the two shared tiles are declared, and
// the loop walks K one tile at a time, but the loop does nothing yet: C comes out zero.
// To do: the four TODOs, the four steps of the chapter's idea: stage a tile of A and one
// of B, wait, add TILE terms of each dot product from shared memory, wait again.
// Run a copy of your own, from the repository's root (git ignores mine/; --emulate runs it on
// the CPU, with no GPU):
//   mkdir -p mine && cp step04_tiled/exercises/tiles.cu mine/ && ex=mine/tiles.cu
//   cargo run --release -p step04_tiled -- --emulate --kernel $ex
//   cargo run --release -p step04_tiled -- --emulate --kernel $ex -m 67 -n 45 -k 129
// Check: the verify line reads PASS at both shapes and no race or out-of-bounds access is
//   named; try --param TILE=16 too. On a GPU (without --emulate), at about step 04's speed
//   (docs/src/step04.md, Exercises).
// Solution: exercises/tiles.diff turns this file into src/kernel.cu:
//   cd step04_tiled && patch -o /tmp/solved.cu exercises/tiles.cu exercises/tiles.diff
// (It also adds the BT branches, which only the chapter's bank-conflict lesson uses.)

// TILE, UNROLL and PAD are set at compile time (-D NAME=value); the launch reads the same TILE:
// a grid of tiles of C, a block of TILE×TILE threads. Leave BT at 0 here.

// ANCHOR: kernel
extern "C" __global__ void matmul(int M, int N, int K, const float* A, const float* B, float* C)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE + PAD];

    int tx = threadIdx.x;
    int ty = threadIdx.y;
    int col = blockIdx.x * TILE + tx;
    int row = blockIdx.y * TILE + ty;

    float sum = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        // TODO 1: stage this trip's tiles. As gets the TILE×TILE piece of A that this block's
        // rows of C need for the k from k0 on, Bs the matching piece of B for its columns; each
        // thread copies one element of each, chosen so that a warp (a row of threads) reads 32
        // adjacent floats of global memory. Where a tile reaches past the edge of A (M×K) or
        // B (K×N), store zeros, so that the extra terms add nothing.

        // TODO 2: no thread may read the tiles before every thread has stored its elements.

        // UNROLL copies of the body per trip of the loop (TILE: no loop left at all).
#pragma unroll UNROLL
        for (int k = 0; k < TILE; ++k) {
            // TODO 3: add to sum the term k0 + k of the dot product of row `row` of A and
            // column `col` of B, reading it from the tiles alone.
        }
        // TODO 4: no thread may start the next trip's copies while another still reads the
        // tiles.
    }

    if (row < M && col < N) {
        C[(offset_t)row * N + col] = sum;
    }
}
// ANCHOR_END: kernel

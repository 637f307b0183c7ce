// Step 04, hands-on exercise: stage the tiles in shared memory.
//
// Starts from: step 02's kernel (one thread per element of C, threadIdx.x along a row), turned
// toward step 04. The block is one TILE×TILE tile of C, the two shared tiles are declared, and
// the loop walks K one tile at a time, but the loop does nothing yet: C comes out zero.
// What to do: the four TODOs. Copy one element of each tile (a zero past the edge of A or B),
// wait, add TILE terms of the dot product from shared memory, and wait again.
// Run:   cargo run --release -p step04_tiled -- --kernel step04_tiled/exercises/tiles.cu
// Check: the report's verify line reads PASS, at step 04's speed (docs/src/step04.md, Exercises);
//        try --param TILE=16 and a shape such as -m 1000 -n 999 -k 1001 too.
// Solution: exercises/tiles.diff turns this file into src/kernel.cu:
//   cd step04_tiled && patch -o /tmp/solved.cu exercises/tiles.cu exercises/tiles.diff
// (It also adds the BT branches, which only the chapter's bank-conflict lesson uses.)

// The finished kernel, as src/kernel.cu describes it:
//
// Step 04: shared-memory tiles, for matrices of any size.
//
// Idea: C is cut into TILE×TILE tiles, one block each. The block walks along K one tile at a
// time: it copies a TILE×TILE tile of A and one of B into shared memory (one element per
// thread), waits, accumulates TILE terms of every dot product from shared memory, and waits
// again before the next copy overwrites the tiles.
//
// What it buys: each element loaded from global memory is used TILE times, so global load
// requests fall by a factor of TILE (an intensity of TILE/4 FLOP per byte instead of 1/4), and the
// problem size is no longer bounded by one block. Loads past the edge of A or B store zeros, so
// any M, N, K works and partial tiles add nothing. A warp is one tile row: it loads 32
// consecutive floats of A and of B (coalesced), reads As[ty][k] as a broadcast and Bs[k][tx]
// from 32 different banks (no conflicts). It is faster than step 02 (docs/src/step04.md measures
// by how much), but each warp-wide FMA still costs 1.5 passes through the shared-memory banks,
// and that bandwidth now sets the pace, which step 05 attacks.

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
        // TODO 1: copy one element of each tile. Thread (ty, tx) copies A[row][k0 + tx] into
        // As[ty][tx] and B[k0 + ty][col] into Bs[ty][tx], or stores 0.0f where that element lies
        // outside A (M×K) or B (K×N). Hint: a warp is one row of the tile, so both copies read
        // 32 adjacent floats of global memory.

        // TODO 2: wait until every thread of the block has stored its elements.

        // UNROLL copies of the body per trip of the loop (TILE: no loop left at all).
#pragma unroll UNROLL
        for (int k = 0; k < TILE; ++k) {
            // TODO 3: add one term to sum, from the tiles: row ty of As times column tx of Bs.
        }
        // TODO 4: wait until every thread has finished reading the tiles, before the next trip
        // of the loop overwrites them.
    }

    if (row < M && col < N) {
        C[row * N + col] = sum;
    }
}
// ANCHOR_END: kernel

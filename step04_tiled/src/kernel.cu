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

// TILE, UNROLL, BT and PAD are set at compile time (-D NAME=value); the launch reads the same
// TILE. BT and PAD exist to measure a lesson (the chapter's "Bank conflicts" section): BT=1 has
// the host pass B transposed, PAD adds floats after each row of the B tile.

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
        // Each thread copies one element of each tile; outside the matrices it stores a zero.
        As[ty][tx] = (row < M && k0 + tx < K) ? A[(offset_t)row * K + k0 + tx] : 0.0f;
#if BT
        // B holds Bᵀ (N×K): a row of threads copies TILE floats of one of its rows: Bs[n][k].
        int n = blockIdx.x * TILE + ty;
        Bs[ty][tx] = (n < N && k0 + tx < K) ? B[(offset_t)n * K + k0 + tx] : 0.0f;
#else
        Bs[ty][tx] = (k0 + ty < K && col < N) ? B[(offset_t)(k0 + ty) * N + col] : 0.0f;
#endif
        // The tiles are complete before anyone reads them...
        __syncthreads();

        // UNROLL copies of the body per trip of the loop (TILE: no loop left at all).
#pragma unroll UNROLL
        for (int k = 0; k < TILE; ++k) {
#if BT
            sum += As[ty][k] * Bs[tx][k];  // lanes read a column of Bs: TILE + PAD floats apart
#else
            sum += As[ty][k] * Bs[k][tx];
#endif
        }
        // ...and everyone has finished reading them before the next copy overwrites them.
        __syncthreads();
    }

    if (row < M && col < N) {
        C[(offset_t)row * N + col] = sum;
    }
}
// ANCHOR_END: kernel

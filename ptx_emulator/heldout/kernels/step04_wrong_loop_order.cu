// Held-out kernel of a learner's slow-but-correct variants: step04_tiled/src/kernel.cu with one
// change, the thread index mapped to C the other way round: threadIdx.x picks the row of the
// tile (ty) and threadIdx.y the column (tx), everything after that as step 04 writes it.
//
// The most common mistake in a first tiled kernel: reading "x" as the first index of C[row][col]
// (as in a[i][j]), so consecutive threads of a warp walk down a column of C instead of along a
// row. The result is still right, since every thread computes its own element and copies its own
// element of each tile, but each warp now touches memory across rows, 32 of them: the copies of
// A and B read one float from each of 32 rows (32 sectors a request instead of 4), the stores
// of As[ty][tx] and Bs[ty][tx] and the reads of As[ty][k] hit one bank 32 times (TILE = 32
// floats a row), only Bs[k][tx] becomes a broadcast, and the write of C is uncoalesced too.
// Launch: step04_tiled at its defaults (TILE 32, 32x32 threads, UNROLL 32, BT 0, PAD 0).
//   Assumes what step 04 assumes: any M, N, K.

// TILE, UNROLL, BT and PAD are set at compile time (-D NAME=value); the launch reads the same
// TILE. BT and PAD exist to measure a lesson (the chapter's "Bank conflicts" section): BT=1 has
// the host pass B transposed, PAD adds floats after each row of the B tile.

// ANCHOR: kernel
extern "C" __global__ void matmul(int M, int N, int K, const float* A, const float* B, float* C)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE + PAD];

    // The learner's mapping: x is the row, as in C[x][y], so the lanes of a warp (consecutive
    // threadIdx.x) take consecutive rows of the tile.
    int ty = threadIdx.x;
    int tx = threadIdx.y;
    int col = blockIdx.x * TILE + tx;
    int row = blockIdx.y * TILE + ty;

    float sum = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        // Each thread copies one element of each tile; outside the matrices it stores a zero.
        As[ty][tx] = (row < M && k0 + tx < K) ? A[row * K + k0 + tx] : 0.0f;
#if BT
        // B holds Bᵀ (N×K): a row of threads copies TILE floats of one of its rows: Bs[n][k].
        int n = blockIdx.x * TILE + ty;
        Bs[ty][tx] = (n < N && k0 + tx < K) ? B[n * K + k0 + tx] : 0.0f;
#else
        Bs[ty][tx] = (k0 + ty < K && col < N) ? B[(k0 + ty) * N + col] : 0.0f;
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
        C[row * N + col] = sum;
    }
}
// ANCHOR_END: kernel

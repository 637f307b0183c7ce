// Step 05, stage 2 of 7, from step05_thread_tile/stages/1_column_tile.cu: a TM×TN register tile per
// thread, built from outer products: TM + TN loads for TM·TN FMAs.
//
// Stage 1 reads A's TM values again for each of a thread's TN columns. Here a thread loads, at
// each k, TM values of A's column k and TN values of B's row k into registers once and adds
// their outer product to its TM×TN tile (compute_tile): TM + TN loads for TM·TN FMAs, 16 for 64
// at 8×8. A thread's rows are BM/TM apart and its columns BN/TN apart (tile_row, tile_col).

// BM, BN, BK, TM, TN are set at compile time (-D NAME=value) from the step's lib.rs.

// ANCHOR: constants
constexpr int THREADS = (BM / TM) * (BN / TN);  // one per TM×TN tile of accumulators
constexpr int THREADS_N = BN / TN;  // threads across the block tile
// ANCHOR_END: constants

// ANCHOR: helpers
// Row (within the block tile) of a thread's i-th accumulator row, given its first row r0: a
// thread's rows are BM/TM apart, so the block's threads cover BM consecutive rows; likewise
// for columns.
__device__ __forceinline__ int tile_row(int i, int r0) { return r0 + i * (BM / TM); }
__device__ __forceinline__ int tile_col(int j, int c0) { return c0 + j * (BN / TN); }
// ANCHOR_END: helpers

// ANCHOR: compute
// acc += the BK outer products of the staged slice: per k, TM values of A's column k times
// TN values of B's row k.
__device__ __forceinline__ void compute_tile(const float (*As)[BK], const float (*Bs)[BN], int r0,
                                             int c0, float (&acc)[TM][TN]) {
    float a[TM], b[TN];
#pragma unroll
    for (int k = 0; k < BK; ++k) {
#pragma unroll
        for (int i = 0; i < TM; ++i) a[i] = As[tile_row(i, r0)][k];
#pragma unroll
        for (int j = 0; j < TN; ++j) b[j] = Bs[k][tile_col(j, c0)];
#pragma unroll
        for (int i = 0; i < TM; ++i) {
#pragma unroll
            for (int j = 0; j < TN; ++j) {
                acc[i][j] += a[i] * b[j];
            }
        }
    }
}
// ANCHOR_END: compute

// ANCHOR: kernel
extern "C" __global__ void matmul(int M, int N, int K, const float* A, const float* B, float* C)
{
    // The A tile (BM×BK) and the B tile (BK×BN) in dynamic shared memory.
    extern __shared__ __align__(16) float smem[];
    float (*As)[BK] = reinterpret_cast<float (*)[BK]>(smem);
    float (*Bs)[BN] = reinterpret_cast<float (*)[BN]>(smem + BK * BM);

    // The thread's first row and column in the block tile.
    int r0 = threadIdx.x / THREADS_N, c0 = threadIdx.x % THREADS_N;
    int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;

    float acc[TM][TN] = {};
    for (int k0 = 0; k0 < K; k0 += BK) {
        // The block copies both tiles, element by element; outside the matrices it stores a zero.
        for (int e = threadIdx.x; e < BM * BK; e += THREADS) {
            int m = e / BK, k = e % BK;
            As[m][k] = (row0 + m < M && k0 + k < K) ? A[(offset_t)(row0 + m) * K + k0 + k] : 0.0f;
        }
        for (int e = threadIdx.x; e < BK * BN; e += THREADS) {
            int k = e / BN, n = e % BN;
            Bs[k][n] = (k0 + k < K && col0 + n < N) ? B[(offset_t)(k0 + k) * N + col0 + n] : 0.0f;
        }
        // The tiles are complete before anyone reads them...
        __syncthreads();
        compute_tile(As, Bs, r0, c0, acc);
        // ...and everyone has finished reading them before the next copy overwrites them.
        __syncthreads();
    }

    // Write the tile back.
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        int row = row0 + tile_row(i, r0);
        if (row >= M) continue;
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            int col = col0 + tile_col(j, c0);
            if (col < N) C[(offset_t)row * N + col] = acc[i][j];
        }
    }
}
// ANCHOR_END: kernel

// Step 05, stage 4 of 7, from step05_thread_tile/stages/3_warp_regions.cu: A's tile stored
// transposed in shared memory, free of bank conflicts.
//
// Stage 3 stores its A tile as it is, BM rows of BK floats. The rows a warp reads at one k are
// then BK floats apart, and with BK = 16 eight rows fall on two banks: a four-way bank conflict
// on every read of A. Here the copy writes the tile transposed, As[k][m], so those rows are
// adjacent floats in different banks, as B's columns already are.

// BM, BN, BK, WM, WN, TM, TN, MINB are set at compile time (-D NAME=value) from the step's lib.rs.

// ANCHOR: constants
constexpr int WARPS_N = BN / WN;  // warps across the block tile
constexpr int THREADS = (BM / WM) * WARPS_N * 32;
constexpr int THREADS_N = WN / TN;  // threads across a warp's region
// ANCHOR_END: constants

// ANCHOR: helpers
// Row (within the block tile) of a thread's i-th accumulator row, given its first row r0: a
// thread's rows are WM/TM apart, so the warp's threads cover WM consecutive rows; likewise for
// columns.
__device__ __forceinline__ int tile_row(int i, int r0) { return r0 + i * (WM / TM); }
__device__ __forceinline__ int tile_col(int j, int c0) { return c0 + j * (WN / TN); }
// ANCHOR_END: helpers

// ANCHOR: compute
// acc += the BK outer products of the staged slice: per k, TM values of A's column k times
// TN values of B's row k.
__device__ __forceinline__ void compute_tile(const float (*As)[BM], const float (*Bs)[BN], int r0,
                                             int c0, float (&acc)[TM][TN]) {
    float a[TM], b[TN];
#pragma unroll
    for (int k = 0; k < BK; ++k) {
#pragma unroll
        for (int i = 0; i < TM; ++i) a[i] = As[k][tile_row(i, r0)];
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
    // The A tile (transposed, BK×BM) and the B tile (BK×BN) in dynamic shared memory.
    extern __shared__ __align__(16) float smem[];
    float (*As)[BM] = reinterpret_cast<float (*)[BM]>(smem);
    float (*Bs)[BN] = reinterpret_cast<float (*)[BN]>(smem + BK * BM);

    // The warp's region of the block tile, and the thread's first row and column in it.
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    int r0 = (warp / WARPS_N) * WM + lane / THREADS_N;
    int c0 = (warp % WARPS_N) * WN + lane % THREADS_N;
    int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    // Uniform across the warp: its region holds at least one element of C.
    bool active = row0 + (warp / WARPS_N) * WM < M && col0 + (warp % WARPS_N) * WN < N;

    float acc[TM][TN] = {};
    for (int k0 = 0; k0 < K; k0 += BK) {
        // The block copies both tiles, element by element, A transposed; outside the matrices it
        // stores a zero.
        for (int e = threadIdx.x; e < BM * BK; e += THREADS) {
            int m = e / BK, k = e % BK;
            As[k][m] = (row0 + m < M && k0 + k < K) ? A[(offset_t)(row0 + m) * K + k0 + k] : 0.0f;
        }
        for (int e = threadIdx.x; e < BK * BN; e += THREADS) {
            int k = e / BN, n = e % BN;
            Bs[k][n] = (k0 + k < K && col0 + n < N) ? B[(offset_t)(k0 + k) * N + col0 + n] : 0.0f;
        }
        // The tiles are complete before anyone reads them...
        __syncthreads();
        if (active) compute_tile(As, Bs, r0, c0, acc);
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

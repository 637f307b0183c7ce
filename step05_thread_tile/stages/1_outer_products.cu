// Step 05, stage 1 of 7: the register tile.
//
// Step 04 loads two floats from shared memory for every FMA. Here a block computes a BM×BN tile
// of C and each of its threads a TM×TN tile of accumulators, held in registers. For every k of
// a BK-deep slice staged in shared memory, a thread reads TM values of A's column k and TN values
// of B's row k and adds their outer product to its tile: TM + TN loads for TM·TN FMAs (16 for 64
// at 8×8). The threads are laid out over the whole block tile; a thread's rows are BM/TM apart
// and its columns BN/TN apart, so neighbouring threads read neighbouring columns of B. Every load
// is 4 bytes wide. WM, WN and MINB are not used yet.
//
// Each later stage changes one thing: `diff` a stage with the next to see it. The last stage is
// step 05's kernel, src/kernel.cu. The chapter gives each stage's measured effect.

// BM, BN, BK, WM, WN, TM, TN, MINB are set at compile time (-D NAME=value) from the step's lib.rs.

// ANCHOR: constants
constexpr int THREADS = (BM / TM) * (BN / TN);  // one per TM×TN tile of accumulators
constexpr int THREADS_N = BN / TN;  // threads across the block tile
// 4-element pieces of the A and B tiles, and how many each thread copies.
constexpr int A_PIECES = BM * BK / 4;
constexpr int B_PIECES = BK * BN / 4;
constexpr int A_LOADS = (A_PIECES + THREADS - 1) / THREADS;
constexpr int B_LOADS = (B_PIECES + THREADS - 1) / THREADS;
// ANCHOR_END: constants

// ANCHOR: helpers
// Row (within the block tile) of a thread's i-th accumulator row, given its first row r0: a
// thread's rows are BM/TM apart, so the block's threads cover BM consecutive rows; likewise
// for columns.
__device__ __forceinline__ int tile_row(int i, int r0) { return r0 + i * (BM / TM); }
__device__ __forceinline__ int tile_col(int j, int c0) { return c0 + j * (BN / TN); }

// p[row][col .. col+3] of a rows×cols row-major matrix, zero outside it: four 4-byte loads.
__device__ __forceinline__ float4 load4(const float* p, int row, int col, int rows, int cols)
{
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (row < rows) {
        const float* r = p + row * cols;
        if (col + 0 < cols) v.x = r[col + 0];
        if (col + 1 < cols) v.y = r[col + 1];
        if (col + 2 < cols) v.z = r[col + 2];
        if (col + 3 < cols) v.w = r[col + 3];
    }
    return v;
}

// Copies this thread's pieces of the A and B tiles at k0 from global memory into registers.
__device__ __forceinline__ void fetch_tiles(const float* A, const float* B, int M, int N, int K, int row0, int col0,
                                            int k0, float4 (&a_next)[A_LOADS], float4 (&b_next)[B_LOADS])
{
#pragma unroll
    for (int i = 0; i < A_LOADS; ++i) {
        int e = threadIdx.x + i * THREADS;  // A piece e: row e / (BK/4), columns 4·(e % (BK/4)) + 0..3
        if (A_PIECES % THREADS == 0 || e < A_PIECES) {
            a_next[i] = load4(A, row0 + e / (BK / 4), k0 + 4 * (e % (BK / 4)), M, K);
        }
    }
#pragma unroll
    for (int i = 0; i < B_LOADS; ++i) {
        int e = threadIdx.x + i * THREADS;  // B piece e: row e / (BN/4), columns 4·(e % (BN/4)) + 0..3
        if (B_PIECES % THREADS == 0 || e < B_PIECES) {
            b_next[i] = load4(B, k0 + e / (BN / 4), col0 + 4 * (e % (BN / 4)), K, N);
        }
    }
}

// Writes the fetched pieces into shared memory, both tiles as they are.
__device__ __forceinline__ void store_tiles(float (*As)[BK], float (*Bs)[BN], const float4 (&a_next)[A_LOADS],
                                            const float4 (&b_next)[B_LOADS])
{
#pragma unroll
    for (int i = 0; i < A_LOADS; ++i) {
        int e = threadIdx.x + i * THREADS;
        if (A_PIECES % THREADS == 0 || e < A_PIECES) {
            *reinterpret_cast<float4*>(&As[e / (BK / 4)][4 * (e % (BK / 4))]) = a_next[i];
        }
    }
#pragma unroll
    for (int i = 0; i < B_LOADS; ++i) {
        int e = threadIdx.x + i * THREADS;
        if (B_PIECES % THREADS == 0 || e < B_PIECES) {
            *reinterpret_cast<float4*>(&Bs[e / (BN / 4)][4 * (e % (BN / 4))]) = b_next[i];
        }
    }
}
// ANCHOR_END: helpers

// ANCHOR: compute
// acc += the BK outer products of the staged slice: per k, TM values of A's column k times
// TN values of B's row k.
__device__ __forceinline__ void compute_tile(const float (*As)[BK], const float (*Bs)[BN], int r0, int c0,
                                             float (&acc)[TM][TN])
{
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
    int r0 = threadIdx.x / THREADS_N;
    int c0 = threadIdx.x % THREADS_N;
    int row0 = blockIdx.y * BM;
    int col0 = blockIdx.x * BN;

    float acc[TM][TN] = {};
    float4 a_next[A_LOADS], b_next[B_LOADS];

    for (int k0 = 0; k0 < K; k0 += BK) {
        fetch_tiles(A, B, M, N, K, row0, col0, k0, a_next, b_next);
        store_tiles(As, Bs, a_next, b_next);
        __syncthreads();
        compute_tile(As, Bs, r0, c0, acc);
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
            if (col < N) C[row * N + col] = acc[i][j];
        }
    }
}
// ANCHOR_END: kernel

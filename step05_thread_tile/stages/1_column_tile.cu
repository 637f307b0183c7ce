// Step 05, stage 1 of 7, from step04_tiled/src/kernel.cu: a column of TM results per thread in
// registers, one load of B for TM FMAs (TN = 1: the one-dimensional thread tile).
//
// Step 04 loads two floats from shared memory per FMA. Here a block computes a BM×BN tile of C
// from BK-deep slices, and a thread keeps TM results of a column in registers: at each k, one
// load of B for TM FMAs (TN = 1: the one-dimensional thread tile; TN > 1: TN such columns, one
// after another). Each later stage changes one thing, up to step 05's src/kernel.cu.

// BM, BN, BK, TM, TN are set at compile time (-D NAME=value) from the step's lib.rs.

// ANCHOR: kernel
extern "C" __global__ void matmul(int M, int N, int K, const float* A, const float* B, float* C)
{
    constexpr int THREADS = (BM / TM) * (BN / TN);  // one per TM×TN tile of results
    // The A tile (BM×BK) and the B tile (BK×BN) in dynamic shared memory.
    extern __shared__ __align__(16) float smem[];
    float (*As)[BK] = reinterpret_cast<float (*)[BK]>(smem);
    float (*Bs)[BN] = reinterpret_cast<float (*)[BN]>(smem + BK * BM);

    // The thread's rows of the block tile are r0 + i·BM/TM, its columns c0 + j·BN/TN.
    int r0 = threadIdx.x / (BN / TN), c0 = threadIdx.x % (BN / TN);
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

#pragma unroll
        for (int k = 0; k < BK; ++k) {
#pragma unroll
            for (int j = 0; j < TN; ++j) {
                float b = Bs[k][c0 + j * (BN / TN)];  // one load of B for TM FMAs
#pragma unroll
                for (int i = 0; i < TM; ++i) acc[i][j] += As[r0 + i * (BM / TM)][k] * b;
            }
        }
        // ...and everyone has finished reading them before the next copy overwrites them.
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < TM; ++i) {
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            int row = row0 + r0 + i * (BM / TM), col = col0 + c0 + j * (BN / TN);
            if (row < M && col < N) C[(offset_t)row * N + col] = acc[i][j];
        }
    }
}
// ANCHOR_END: kernel

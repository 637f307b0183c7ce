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
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
#else
    // The mapping to avoid: the threads of a warp take 32 different rows.
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    int col = blockIdx.y * blockDim.y + threadIdx.y;
#endif

    // The grid is rounded up to whole blocks: threads past the edge of C do nothing.
    if (row < M && col < N) {
        float sum = 0.0f;
        for (int k = 0; k < K; ++k) {
            sum += A[(offset_t)row * K + k] * B[(offset_t)k * N + col];
        }
        C[(offset_t)row * N + col] = sum;
    }
}
// ANCHOR_END: kernel

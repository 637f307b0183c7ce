// Held-out kernel, written independently for the course's time-model held-out set in the
// manner of the textbook shared-memory tiled SGEMM with 16x16 tiles extended for instruction-
// level parallelism (each thread computes 4 outputs strided by 16 columns, so one A value read
// from shared memory feeds 4 independent FMAs); not copied from any source.
// Launch: step05_thread_tile --param BM=16 --param BN=64 --param BK=16 --param WM=16
//         --param WN=8 --param TM=1 --param TN=4 --param MINB=1
//         (step02's geometry has one thread per element of C and cannot cover C/4, so this uses
//          step05's: 256 threads viewed as 16x16, a block computes a 16x64 tile of C; the 16x16
//          A tile and four 16x16 B tiles fill exactly the runner's 4*BK*(BM+BN) = 5 KiB of
//          dynamic shared memory).
// Assumes: M % 16 == 0, N % 64 == 0, K % 16 == 0 (no bounds checks).

#define TILE 16
#define ILP 4

extern "C" __global__ void matmul(int M, int N, int K, const float* __restrict__ A,
                                  const float* __restrict__ B, float* __restrict__ C)
{
    extern __shared__ float smem[];
    float (*As)[TILE] = reinterpret_cast<float (*)[TILE]>(smem);                   // [16][16]
    float (*Bs)[TILE * ILP] = reinterpret_cast<float (*)[TILE * ILP]>(smem + TILE * TILE); // [16][64]

    const int tx = threadIdx.x % TILE;
    const int ty = threadIdx.x / TILE;
    const int row = blockIdx.y * TILE + ty;
    const int colBase = blockIdx.x * (TILE * ILP) + tx;

    float sum[ILP];
#pragma unroll
    for (int j = 0; j < ILP; ++j)
        sum[j] = 0.0f;

    for (int t = 0; t < K; t += TILE) {
        As[ty][tx] = A[(size_t)row * K + t + tx];
#pragma unroll
        for (int j = 0; j < ILP; ++j)
            Bs[ty][tx + j * TILE] = B[(size_t)(t + ty) * N + colBase + j * TILE];
        __syncthreads();

#pragma unroll
        for (int k = 0; k < TILE; ++k) {
            const float a = As[ty][k];
#pragma unroll
            for (int j = 0; j < ILP; ++j)
                sum[j] += a * Bs[k][tx + j * TILE];
        }
        __syncthreads();
    }

#pragma unroll
    for (int j = 0; j < ILP; ++j)
        C[(size_t)row * N + colBase + j * TILE] = sum[j];
}

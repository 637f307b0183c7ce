// Held-out kernel, written independently for the course's time-model held-out set in the
// manner of the classic shared-memory tiled SGEMM (one element of C per thread), with the
// B tile stored transposed so that the inner product walks both tiles along a row - a
// natural-looking choice that makes both the stores into BsT and the reads BsT[tx][k]
// hit one bank per warp (32-way conflicts with BLOCK=32); not copied from any source.
// Launch: step02_gpu_naive --param BLOCK=32 --param COALESCED=1
// Assumes: COALESCED=1 (threadIdx.x along a row of C), M % BLOCK == 0, N % BLOCK == 0,
//          K % BLOCK == 0 (no bounds checks).

#ifndef BLOCK
#define BLOCK 32
#endif

extern "C" __global__ void matmul(int M, int N, int K, const float* __restrict__ A,
                                  const float* __restrict__ B, float* __restrict__ C)
{
    __shared__ float As[BLOCK][BLOCK];
    __shared__ float BsT[BLOCK][BLOCK];   // BsT[n][k] = B[k][n]

    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int row = blockIdx.y * BLOCK + ty;
    const int col = blockIdx.x * BLOCK + tx;

    float sum = 0.0f;
    for (int t = 0; t < K; t += BLOCK) {
        As[ty][tx] = A[(size_t)row * K + t + tx];
        BsT[tx][ty] = B[(size_t)(t + ty) * N + col];
        __syncthreads();

        for (int k = 0; k < BLOCK; ++k)
            sum += As[ty][k] * BsT[tx][k];
        __syncthreads();
    }
    C[(size_t)row * N + col] = sum;
}

// Held-out kernel, written independently for the course's time-model held-out set in the manner of
// the "shared memory cache-blocking" kernel of the step-by-step SGEMM tutorials (a BLOCK x BLOCK
// tile of A and of B staged in shared memory per step along K, one element of C per thread);
// not copied from any source.
// Launch: step02_gpu_naive --param BLOCK=32 --param COALESCED=1
//   (grid = (ceil(N/BLOCK), ceil(M/BLOCK)); block = BLOCK x BLOCK = 1024 threads).
// Assumes: M, N and K are multiples of BLOCK (32); no bounds checks.

#ifndef BLOCK
#define BLOCK 32
#endif

extern "C" __global__ void matmul(int M, int N, int K, const float* A, const float* B, float* C)
{
    __shared__ float As[BLOCK * BLOCK];
    __shared__ float Bs[BLOCK * BLOCK];

    const int blockRow = blockIdx.y;
    const int blockCol = blockIdx.x;
    const int threadRow = threadIdx.y;
    const int threadCol = threadIdx.x;

    // Move the pointers to this block's starting tiles.
    A += blockRow * BLOCK * K;
    B += blockCol * BLOCK;
    C += blockRow * BLOCK * N + blockCol * BLOCK;

    float acc = 0.0f;
    for (int bk = 0; bk < K; bk += BLOCK) {
        // Each thread copies one element of each tile; threadCol is the fast index so the
        // global reads are coalesced.
        As[threadRow * BLOCK + threadCol] = A[threadRow * K + threadCol];
        Bs[threadRow * BLOCK + threadCol] = B[threadRow * N + threadCol];
        __syncthreads();

        A += BLOCK;
        B += BLOCK * N;

        for (int i = 0; i < BLOCK; ++i) {
            acc += As[threadRow * BLOCK + i] * Bs[i * BLOCK + threadCol];
        }
        __syncthreads();
    }

    C[threadRow * N + threadCol] = acc;
}

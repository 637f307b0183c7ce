// Held-out kernel, written independently for the course's time-model held-out set in the manner of
// the "global memory coalescing" kernel of the step-by-step SGEMM tutorials (one thread per element
// of C; the 2-D thread block is viewed as a flat list of threads and the row/column of C are
// derived from that flat index, so consecutive threads of a warp take consecutive columns);
// not copied from any source.
// Launch: step02_gpu_naive --param BLOCK=32 --param COALESCED=1
//   (grid = (ceil(N/BLOCK), ceil(M/BLOCK)); block = BLOCK x BLOCK).
// Assumes: nothing beyond row-major storage; the bounds check handles any M, N, K.

#ifndef BLOCK
#define BLOCK 32
#endif

extern "C" __global__ void matmul(int M, int N, int K, const float* A, const float* B, float* C)
{
    // Flatten the 2-D block, then cut the flat index back into a BLOCK-wide tile of C.
    const int tid = threadIdx.y * blockDim.x + threadIdx.x;
    const int row = blockIdx.y * BLOCK + tid / BLOCK;
    const int col = blockIdx.x * BLOCK + tid % BLOCK;

    if (row < M && col < N) {
        float acc = 0.0f;
        for (int i = 0; i < K; ++i) {
            acc += A[row * K + i] * B[i * N + col];
        }
        C[row * N + col] = acc;
    }
}

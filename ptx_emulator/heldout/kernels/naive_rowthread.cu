// Held-out kernel, written independently for the course's time-model held-out set in the manner of
// the first "naive" kernel of the step-by-step SGEMM tutorials (one thread per element of C, with
// threadIdx.x walking down a column of C, so neighbouring threads of a warp read A with a stride
// of K floats and write C with a stride of N floats); not copied from any source.
// Launch: step02_gpu_naive --param BLOCK=32 --param COALESCED=0
//   (grid.x covers the M rows of C, grid.y the N columns; block = BLOCK x BLOCK).
// Assumes: nothing beyond row-major storage; the bounds check handles any M, N, K.

#ifndef BLOCK
#define BLOCK 32
#endif

extern "C" __global__ void matmul(int M, int N, int K, const float* A, const float* B, float* C)
{
    // x runs over rows of C, y over columns: the classic uncoalesced mapping.
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    const int col = blockIdx.y * blockDim.y + threadIdx.y;

    if (row < M && col < N) {
        float acc = 0.0f;
        for (int i = 0; i < K; ++i) {
            acc += A[row * K + i] * B[i * N + col];
        }
        C[row * N + col] = acc;
    }
}

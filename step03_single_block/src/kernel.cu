// Step 03: the whole problem in one block's shared memory.
//
// Idea: in step 02 every element of A is read N times and every element of B M times, all from
// global memory. Here one block copies all of A and B into shared memory once, waits at a
// barrier, and then every dot product reads only on-chip memory: each input element crosses
// the global-memory bus exactly once.
//
// What it buys, and what it costs: global traffic falls to the minimum, (M·K + K·N) floats.
// But one block runs on one SM while the rest of the GPU idles, the block's thread limit caps
// M·N at 1024, and shared memory (227 KB on Hopper) caps M·K + K·N. It only serves tiny
// matrices; step 04 keeps the shared-memory reuse and lifts both limits by tiling.

// ANCHOR: kernel
extern "C" __global__ void matmul(int M, int N, int K, const float* A, const float* B, float* C)
{
    // A (M×K) then B (K×N), row-major, in dynamic shared memory sized at launch.
    extern __shared__ float smem[];
    float* As = smem;
    float* Bs = smem + M * K;

    // All threads copy together; the strided loops let K exceed the thread count.
    int tid = threadIdx.y * blockDim.x + threadIdx.x;
    int threads = blockDim.x * blockDim.y;
    for (int i = tid; i < M * K; i += threads) {
        As[i] = A[i];
    }
    for (int i = tid; i < K * N; i += threads) {
        Bs[i] = B[i];
    }
    // No thread may read shared memory before every thread has written its part.
    __syncthreads();

    int col = threadIdx.x;
    int row = threadIdx.y;

    if (row < M && col < N) {
        float sum = 0.0f;
        for (int k = 0; k < K; ++k) {
            sum += As[row * K + k] * Bs[k * N + col];
        }
        C[row * N + col] = sum;
    }
}
// ANCHOR_END: kernel

// Held-out kernel of the course's own slow examples: step 02's coalesced kernel with its warps
// split in two. Lanes of odd threadIdx.x walk K forwards, lanes of even threadIdx.x walk it
// backwards, so every warp takes both sides of the branch one after the other: twice the
// instructions, half the lanes active in each. C is the same product (the sum's order differs).
// Launch: step02_gpu_naive --kernel ptx_emulator/heldout/kernels/divergent_halves.cu (BLOCK 32,
// COALESCED 1). Assumes nothing of the shape.

extern "C" __global__ void matmul(int M, int N, int K, const float* A, const float* B, float* C)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < M && col < N) {
        float sum = 0.0f;
        if (threadIdx.x & 1) {
            for (int k = 0; k < K; ++k) sum += A[row * K + k] * B[k * N + col];
        } else {
            for (int k = K - 1; k >= 0; --k) sum += A[row * K + k] * B[k * N + col];
        }
        C[row * N + col] = sum;
    }
}

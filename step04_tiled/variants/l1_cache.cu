// Variant of step04_tiled/src/kernel.cu: the same tiles with no shared memory, leaving the reuse to
// the L1 cache.
//
// The launch, the tile walk along K and the barriers are step 04's; only the copies into As and
// Bs are gone, and the inner loop reads A and B from global memory. Each value is still read by
// the TILE threads that share a row or column of the tile, so whether it comes from DRAM, L2 or
// L1 is up to the caches, not the program. Run it with
//   cargo run --release -p step04_tiled -- --kernel step04_tiled/variants/l1_cache.cu
// and compare with the step's own kernel (chapter 4, "Shared memory or the L1 cache").

#if BT
#error "the L1-cache variant reads B as it is; run it with BT=0"
#endif

extern "C" __global__ void matmul(int M, int N, int K, const float* A, const float* B, float* C)
{
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    int col = blockIdx.x * TILE + tx;
    int row = blockIdx.y * TILE + ty;

    float sum = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        // The same TILE terms as step 04, read where they lie; the last slice stops at K instead
        // of adding the zeros the copies stored past the edge.
        int terms = min(TILE, K - k0);
        if (row < M && col < N) {
            const float* a = A + (offset_t)row * K + k0;
            const float* b = B + (offset_t)k0 * N + col;
#pragma unroll UNROLL
            for (int k = 0; k < terms; ++k) {
                sum += a[k] * b[(offset_t)k * N];
            }
        }
        // Kept so the warps of a block walk K together, as in step 04: their reads overlap in L1.
        __syncthreads();
    }

    if (row < M && col < N) {
        C[(offset_t)row * N + col] = sum;
    }
}

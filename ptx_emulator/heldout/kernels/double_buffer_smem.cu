// Held-out kernel, written independently for the course's time-model held-out set in the
// manner of the public "double-buffered shared memory" SGEMM kernels (128x128x8 block tile,
// 8x8 per thread, global->register prefetch of the next slice while the current one is
// computed, two shared buffers, one __syncthreads per slice); not copied from any source.
// Launch: step05_thread_tile --param BM=128 --param BN=128 --param BK=8 --param WM=64
//         --param WN=32 --param TM=8 --param TN=8 --param MINB=1
//         (256 threads as a 16x16 grid, each thread a contiguous 8x8 tile of C; the two
//          buffers are static __shared__ arrays, the runner's dynamic shared memory is unused).
// Assumes: M % 128 == 0, N % 128 == 0, K % 8 == 0 (no bounds checks), 16-byte aligned rows.

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 8
#endif
#ifndef WM
#define WM 64
#endif
#ifndef WN
#define WN 32
#endif
#ifndef TM
#define TM 8
#endif
#ifndef TN
#define TN 8
#endif
#ifndef MINB
#define MINB 1
#endif

#define NUM_THREADS ((BM / WM) * (BN / WN) * 32)
#define THREADS_X (BN / TN)
// float4 pieces of each tile that one thread copies
#define A_PIECES ((BM * BK / 4) / NUM_THREADS)
#define B_PIECES ((BK * BN / 4) / NUM_THREADS)

extern "C" __global__ void __launch_bounds__(NUM_THREADS, MINB)
matmul(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
       float* __restrict__ C)
{
    __shared__ __align__(16) float As[2][BK][BM];   // transposed A slices
    __shared__ __align__(16) float Bs[2][BK][BN];

    const int tid = threadIdx.x;
    const int tx = tid % THREADS_X;
    const int ty = tid / THREADS_X;

    const float* Ablk = A + (size_t)blockIdx.y * BM * K;
    const float* Bblk = B + (size_t)blockIdx.x * BN;

    // copy coordinates
    const int aRow = tid / (BK / 4);
    const int aCol = (tid % (BK / 4)) * 4;
    const int bRow = tid / (BN / 4);
    const int bCol = (tid % (BN / 4)) * 4;
    const int aRowStride = NUM_THREADS / (BK / 4);
    const int bRowStride = NUM_THREADS / (BN / 4);

    float4 stageA[A_PIECES];
    float4 stageB[B_PIECES];

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j)
            acc[i][j] = 0.0f;

    float fragA[TM];
    float fragB[TN];

    // ---- prologue: slice 0 goes straight to buffer 0
#pragma unroll
    for (int p = 0; p < A_PIECES; ++p)
        stageA[p] = *reinterpret_cast<const float4*>(
            &Ablk[(size_t)(aRow + p * aRowStride) * K + aCol]);
#pragma unroll
    for (int p = 0; p < B_PIECES; ++p)
        stageB[p] = *reinterpret_cast<const float4*>(
            &Bblk[(size_t)(bRow + p * bRowStride) * N + bCol]);
#pragma unroll
    for (int p = 0; p < A_PIECES; ++p) {
        As[0][aCol + 0][aRow + p * aRowStride] = stageA[p].x;
        As[0][aCol + 1][aRow + p * aRowStride] = stageA[p].y;
        As[0][aCol + 2][aRow + p * aRowStride] = stageA[p].z;
        As[0][aCol + 3][aRow + p * aRowStride] = stageA[p].w;
    }
#pragma unroll
    for (int p = 0; p < B_PIECES; ++p)
        *reinterpret_cast<float4*>(&Bs[0][bRow + p * bRowStride][bCol]) = stageB[p];
    __syncthreads();

    int cur = 0;
    for (int k0 = 0; k0 < K; k0 += BK) {
        const bool more = (k0 + BK) < K;

        // ---- fetch the next slice into registers; its latency hides behind the FMAs
        if (more) {
#pragma unroll
            for (int p = 0; p < A_PIECES; ++p)
                stageA[p] = *reinterpret_cast<const float4*>(
                    &Ablk[(size_t)(aRow + p * aRowStride) * K + k0 + BK + aCol]);
#pragma unroll
            for (int p = 0; p < B_PIECES; ++p)
                stageB[p] = *reinterpret_cast<const float4*>(
                    &Bblk[(size_t)(k0 + BK + bRow + p * bRowStride) * N + bCol]);
        }

        // ---- compute on the current buffer
#pragma unroll
        for (int k = 0; k < BK; ++k) {
#pragma unroll
            for (int i = 0; i < TM; i += 4) {
                const float4 a = *reinterpret_cast<const float4*>(&As[cur][k][ty * TM + i]);
                fragA[i + 0] = a.x;
                fragA[i + 1] = a.y;
                fragA[i + 2] = a.z;
                fragA[i + 3] = a.w;
            }
#pragma unroll
            for (int j = 0; j < TN; j += 4) {
                const float4 b = *reinterpret_cast<const float4*>(&Bs[cur][k][tx * TN + j]);
                fragB[j + 0] = b.x;
                fragB[j + 1] = b.y;
                fragB[j + 2] = b.z;
                fragB[j + 3] = b.w;
            }
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j)
                    acc[i][j] += fragA[i] * fragB[j];
        }

        // ---- park the prefetched slice in the other buffer
        if (more) {
            const int nxt = cur ^ 1;
#pragma unroll
            for (int p = 0; p < A_PIECES; ++p) {
                As[nxt][aCol + 0][aRow + p * aRowStride] = stageA[p].x;
                As[nxt][aCol + 1][aRow + p * aRowStride] = stageA[p].y;
                As[nxt][aCol + 2][aRow + p * aRowStride] = stageA[p].z;
                As[nxt][aCol + 3][aRow + p * aRowStride] = stageA[p].w;
            }
#pragma unroll
            for (int p = 0; p < B_PIECES; ++p)
                *reinterpret_cast<float4*>(&Bs[nxt][bRow + p * bRowStride][bCol]) = stageB[p];
        }
        __syncthreads();
        cur ^= 1;
    }

    // ---- store the 8x8 tile
    float* Cblk = C + ((size_t)blockIdx.y * BM + ty * TM) * N + blockIdx.x * BN + tx * TN;
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; j += 4)
            *reinterpret_cast<float4*>(&Cblk[(size_t)i * N + j]) =
                make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]);
}

// Held-out kernel, written independently for the course's time-model held-out set in the
// manner of Volkov & Demmel's (2008) SGEMM: 64 threads per block, a 16x16 tile of one operand
// in shared memory, the other operand streamed through registers straight from global memory,
// and a 16-element strip of C accumulated per thread; not copied from any source.
// Volkov's kernel is column-major; in this row-major version the roles are mirrored: the block
// computes a 16x64 tile of C, thread t owns column t of it (16 rows, c[16] in registers), the
// 16x16 A tile sits in shared memory (read as broadcasts), and each thread streams its own
// column of B from global memory (coalesced across the 64 threads).
// Launch: step05_thread_tile --param BM=16 --param BN=64 --param BK=16 --param WM=16
//         --param WN=32 --param TM=16 --param TN=1 --param MINB=1
//         (64 threads; the A tile uses the first 1 KiB of the runner's dynamic shared memory).
// Assumes: M % 16 == 0, N % 64 == 0, K % 16 == 0 (no bounds checks), K a multiple of 4 for
//          the float4 loads of A.

#ifndef BM
#define BM 16
#endif
#ifndef BN
#define BN 64
#endif
#ifndef BK
#define BK 16
#endif
#ifndef WM
#define WM 16
#endif
#ifndef WN
#define WN 32
#endif
#ifndef MINB
#define MINB 1
#endif

#define NUM_THREADS ((BM / WM) * (BN / WN) * 32)

extern "C" __global__ void __launch_bounds__(NUM_THREADS, MINB)
matmul(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
       float* __restrict__ C)
{
    extern __shared__ float smem[];
    float (*As)[16] = reinterpret_cast<float (*)[16]>(smem);   // [16 rows][16 k]

    const int tid = threadIdx.x;               // 0..63
    const int col = blockIdx.x * 64 + tid;

    // this thread's piece of the A tile: one float4
    const int aRow = tid >> 2;                 // 0..15
    const int aCol = (tid & 3) << 2;           // 0,4,8,12
    const float* Ap = A + (size_t)(blockIdx.y * 16 + aRow) * K + aCol;
    const float* Bp = B + col;

    float c[16];
#pragma unroll
    for (int i = 0; i < 16; ++i)
        c[i] = 0.0f;

    float4 aNext = *reinterpret_cast<const float4*>(Ap);

    for (int k0 = 0; k0 < K; k0 += 16) {
        *reinterpret_cast<float4*>(&As[aRow][aCol]) = aNext;
        __syncthreads();

        // start fetching the next A piece while this tile is used
        if (k0 + 16 < K)
            aNext = *reinterpret_cast<const float4*>(Ap + k0 + 16);

        // B is streamed through registers four rows at a time
#pragma unroll
        for (int kk = 0; kk < 16; kk += 4) {
            const float b0 = Bp[(size_t)(k0 + kk + 0) * N];
            const float b1 = Bp[(size_t)(k0 + kk + 1) * N];
            const float b2 = Bp[(size_t)(k0 + kk + 2) * N];
            const float b3 = Bp[(size_t)(k0 + kk + 3) * N];
#pragma unroll
            for (int i = 0; i < 16; ++i) {
                c[i] += As[i][kk + 0] * b0;
                c[i] += As[i][kk + 1] * b1;
                c[i] += As[i][kk + 2] * b2;
                c[i] += As[i][kk + 3] * b3;
            }
        }
        __syncthreads();
    }

    float* Cp = C + (size_t)(blockIdx.y * 16) * N + col;
#pragma unroll
    for (int i = 0; i < 16; ++i)
        Cp[(size_t)i * N] = c[i];
}

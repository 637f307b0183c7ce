// Held-out kernel, written independently for the course's time-model held-out set in the
// manner of the public "register-blocked, no shared memory" SGEMM kernels (each thread a 4x4
// tile of C read straight from global memory through the L1 cache, K loop unrolled by 4 with
// float4 loads of a 4x4 block of A and of B); not copied from any source.
// Launch: step05_thread_tile --param BM=64 --param BN=64 --param BK=4 --param WM=32
//         --param WN=16 --param TM=4 --param TN=4 --param MINB=1
//         (256 threads as a 16x16 grid covering a 64x64 tile of C; BK is unused and the
//          runner's dynamic shared memory is left untouched).
// Assumes: M % 64 == 0, N % 64 == 0, K % 4 == 0 (no bounds checks), 16-byte aligned rows.

#ifndef BM
#define BM 64
#endif
#ifndef BN
#define BN 64
#endif
#ifndef WM
#define WM 32
#endif
#ifndef WN
#define WN 16
#endif
#ifndef MINB
#define MINB 1
#endif

#define NUM_THREADS ((BM / WM) * (BN / WN) * 32)
#define THREADS_X (BN / 4)

extern "C" __global__ void __launch_bounds__(NUM_THREADS, MINB)
matmul(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
       float* __restrict__ C)
{
    const int tx = threadIdx.x % THREADS_X;
    const int ty = threadIdx.x / THREADS_X;
    const int row = blockIdx.y * BM + ty * 4;
    const int col = blockIdx.x * BN + tx * 4;

    float acc[4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
            acc[i][j] = 0.0f;

    const float* Arow = A + (size_t)row * K;
    const float* Bcol = B + col;

    for (int k = 0; k < K; k += 4) {
        // a[i] = A[row+i][k..k+3],  b[kk] = B[k+kk][col..col+3]
        float4 a[4], b[4];
#pragma unroll
        for (int i = 0; i < 4; ++i)
            a[i] = __ldg(reinterpret_cast<const float4*>(Arow + (size_t)i * K + k));
#pragma unroll
        for (int kk = 0; kk < 4; ++kk)
            b[kk] = __ldg(reinterpret_cast<const float4*>(Bcol + (size_t)(k + kk) * N));

#pragma unroll
        for (int i = 0; i < 4; ++i) {
            acc[i][0] += a[i].x * b[0].x + a[i].y * b[1].x + a[i].z * b[2].x + a[i].w * b[3].x;
            acc[i][1] += a[i].x * b[0].y + a[i].y * b[1].y + a[i].z * b[2].y + a[i].w * b[3].y;
            acc[i][2] += a[i].x * b[0].z + a[i].y * b[1].z + a[i].z * b[2].z + a[i].w * b[3].z;
            acc[i][3] += a[i].x * b[0].w + a[i].y * b[1].w + a[i].z * b[2].w + a[i].w * b[3].w;
        }
    }

#pragma unroll
    for (int i = 0; i < 4; ++i)
        *reinterpret_cast<float4*>(&C[(size_t)(row + i) * N + col]) =
            make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
}

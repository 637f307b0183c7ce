// Held-out kernel, written independently for the course's time-model held-out set in the
// manner of the public "warp-tiling" SGEMM kernels (block tile -> warp tile -> warp sub-tiles
// -> per-thread register tile, float4 global and shared loads); not copied from any source.
// Launch: step05_thread_tile --param BM=128 --param BN=128 --param BK=16 --param WM=64
//         --param WN=32 --param TM=8 --param TN=8 --param MINB=1
//         (256 threads = 8 warps laid out 2x4, each warp a 64x32 region of C, each thread 8x8
//          results made of WMITER x WNITER = 2x2 sub-tiles of 4x4).
// Assumes: M % BM == 0, N % BN == 0, K % BK == 0 (no bounds checks), and 16-byte aligned rows
//          (N and K multiples of 4).

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 16
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
#define WARPS_N (BN / WN)

// Inside a warp tile each thread owns WMITER x WNITER small 4x4 pieces.
#define SUB 4
#define WMITER (TM / SUB)
#define WNITER (TN / SUB)
#define WSUB_M (WM / WMITER)          // rows of one warp sub-tile
#define WSUB_N (WN / WNITER)          // cols of one warp sub-tile
#define THREADS_PER_SUB_ROW (WSUB_N / SUB)

extern "C" __global__ void __launch_bounds__(NUM_THREADS, MINB)
matmul(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
       float* __restrict__ C)
{
    extern __shared__ float smem[];
    float* As = smem;             // [BK][BM]  (A tile stored transposed)
    float* Bs = smem + BK * BM;   // [BK][BN]

    const int tid = threadIdx.x;
    const int warpId = tid / 32;
    const int lane = tid % 32;
    const int warpRow = warpId / WARPS_N;
    const int warpCol = warpId % WARPS_N;
    const int tRow = lane / THREADS_PER_SUB_ROW;   // 0..7
    const int tCol = lane % THREADS_PER_SUB_ROW;   // 0..3

    // move the pointers to this block's tiles
    A += (size_t)blockIdx.y * BM * K;
    B += (size_t)blockIdx.x * BN;
    C += ((size_t)blockIdx.y * BM + warpRow * WM) * N + blockIdx.x * BN + warpCol * WN;

    // indices used to copy the tiles with float4 loads
    const int aLoadRow = tid / (BK / 4);
    const int aLoadCol = (tid % (BK / 4)) * 4;
    const int aRowStep = NUM_THREADS / (BK / 4);
    const int bLoadRow = tid / (BN / 4);
    const int bLoadCol = (tid % (BN / 4)) * 4;
    const int bRowStep = NUM_THREADS / (BN / 4);

    float acc[WMITER * SUB][WNITER * SUB];
#pragma unroll
    for (int i = 0; i < WMITER * SUB; ++i)
#pragma unroll
        for (int j = 0; j < WNITER * SUB; ++j)
            acc[i][j] = 0.0f;

    float regA[WMITER * SUB];
    float regB[WNITER * SUB];

    for (int k0 = 0; k0 < K; k0 += BK) {
        // A: BM x BK, read along K with float4 and scattered transposed into As
#pragma unroll
        for (int r = 0; r < BM; r += aRowStep) {
            const float4 v =
                *reinterpret_cast<const float4*>(&A[(size_t)(aLoadRow + r) * K + aLoadCol]);
            As[(aLoadCol + 0) * BM + aLoadRow + r] = v.x;
            As[(aLoadCol + 1) * BM + aLoadRow + r] = v.y;
            As[(aLoadCol + 2) * BM + aLoadRow + r] = v.z;
            As[(aLoadCol + 3) * BM + aLoadRow + r] = v.w;
        }
        // B: BK x BN, copied row by row
#pragma unroll
        for (int r = 0; r < BK; r += bRowStep) {
            *reinterpret_cast<float4*>(&Bs[(bLoadRow + r) * BN + bLoadCol]) =
                *reinterpret_cast<const float4*>(&B[(size_t)(bLoadRow + r) * N + bLoadCol]);
        }
        __syncthreads();

        A += BK;
        B += (size_t)BK * N;

#pragma unroll
        for (int k = 0; k < BK; ++k) {
            // fragments of A and B for all the sub-tiles this thread takes part in
#pragma unroll
            for (int wm = 0; wm < WMITER; ++wm) {
                const float4 a = *reinterpret_cast<const float4*>(
                    &As[k * BM + warpRow * WM + wm * WSUB_M + tRow * SUB]);
                regA[wm * SUB + 0] = a.x;
                regA[wm * SUB + 1] = a.y;
                regA[wm * SUB + 2] = a.z;
                regA[wm * SUB + 3] = a.w;
            }
#pragma unroll
            for (int wn = 0; wn < WNITER; ++wn) {
                const float4 b = *reinterpret_cast<const float4*>(
                    &Bs[k * BN + warpCol * WN + wn * WSUB_N + tCol * SUB]);
                regB[wn * SUB + 0] = b.x;
                regB[wn * SUB + 1] = b.y;
                regB[wn * SUB + 2] = b.z;
                regB[wn * SUB + 3] = b.w;
            }
            // outer products
#pragma unroll
            for (int i = 0; i < WMITER * SUB; ++i)
#pragma unroll
                for (int j = 0; j < WNITER * SUB; ++j)
                    acc[i][j] += regA[i] * regB[j];
        }
        __syncthreads();
    }

    // write the results back, one float4 per row of each 4x4 piece
#pragma unroll
    for (int wm = 0; wm < WMITER; ++wm) {
#pragma unroll
        for (int wn = 0; wn < WNITER; ++wn) {
            float* Csub = C + (size_t)(wm * WSUB_M) * N + wn * WSUB_N;
#pragma unroll
            for (int i = 0; i < SUB; ++i) {
                float4 out;
                out.x = acc[wm * SUB + i][wn * SUB + 0];
                out.y = acc[wm * SUB + i][wn * SUB + 1];
                out.z = acc[wm * SUB + i][wn * SUB + 2];
                out.w = acc[wm * SUB + i][wn * SUB + 3];
                *reinterpret_cast<float4*>(&Csub[(size_t)(tRow * SUB + i) * N + tCol * SUB]) = out;
            }
        }
    }
}

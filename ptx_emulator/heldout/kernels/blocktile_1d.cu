// Held-out kernel, written independently for the course's time-model held-out set in the manner of
// the "1-D blocktiling" kernel of the step-by-step SGEMM tutorials (a BM x BN tile of C per block,
// BK-deep slices of A and B in static shared memory, each thread accumulating a column of TM
// results in registers and reusing one value of B for TM multiply-adds); not copied from any source.
// Launch: step05_thread_tile --param BM=64 --param BN=64 --param BK=8 --param WM=16 --param WN=16
//   --param TM=8 --param TN=1
//   (512 threads per block; WM/WN/TN only fix the thread count, the kernel does not use warp
//   regions; the runner's dynamic shared memory is left unused).
// Assumes: M divisible by BM (64), N by BN (64), K by BK (8); BM*BK == BN*BK == BM*BN/TM (the
//   thread count), so each thread copies exactly one element of each tile. No bounds checks.

#ifndef BM
#define BM 64
#endif
#ifndef BN
#define BN 64
#endif
#ifndef BK
#define BK 8
#endif
#ifndef TM
#define TM 8
#endif

extern "C" __global__ void matmul(int M, int N, int K, const float* A, const float* B, float* C)
{
    __shared__ float As[BM * BK];
    __shared__ float Bs[BK * BN];

    const int cRow = blockIdx.y;
    const int cCol = blockIdx.x;

    // Which column of C and which group of TM rows this thread owns.
    const int threadCol = threadIdx.x % BN;
    const int threadRow = threadIdx.x / BN;

    // Positions used to copy the tiles: one element of A and one of B per thread.
    const int innerColA = threadIdx.x % BK;
    const int innerRowA = threadIdx.x / BK;
    const int innerColB = threadIdx.x % BN;
    const int innerRowB = threadIdx.x / BN;

    A += cRow * BM * K;
    B += cCol * BN;
    C += cRow * BM * N + cCol * BN;

    float threadResults[TM];
    for (int i = 0; i < TM; ++i) {
        threadResults[i] = 0.0f;
    }

    for (int bkIdx = 0; bkIdx < K; bkIdx += BK) {
        As[innerRowA * BK + innerColA] = A[innerRowA * K + innerColA];
        Bs[innerRowB * BN + innerColB] = B[innerRowB * N + innerColB];
        __syncthreads();

        A += BK;
        B += BK * N;

        for (int dotIdx = 0; dotIdx < BK; ++dotIdx) {
            // One shared load of B is reused for TM results.
            const float tmpB = Bs[dotIdx * BN + threadCol];
            for (int resIdx = 0; resIdx < TM; ++resIdx) {
                threadResults[resIdx] += As[(threadRow * TM + resIdx) * BK + dotIdx] * tmpB;
            }
        }
        __syncthreads();
    }

    for (int resIdx = 0; resIdx < TM; ++resIdx) {
        C[(threadRow * TM + resIdx) * N + threadCol] = threadResults[resIdx];
    }
}

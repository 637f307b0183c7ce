// Held-out kernel, written independently for the course's time-model held-out set in the manner of
// the "2-D blocktiling" kernel of the step-by-step SGEMM tutorials (a BM x BN tile of C per block,
// BK-deep slices of A and B in shared memory, each thread computing a TM x TN tile of C in
// registers as a sum of outer products, copies done with scalar loads in strided passes);
// not copied from any source.
// Launch: step05_thread_tile --param BM=128 --param BN=128 --param BK=8 --param WM=64 --param WN=32
//   --param TM=8 --param TN=8
//   (256 threads per block; WM/WN only fix the thread count, the kernel lays threads out row by
//   row over the block tile; uses the runner's dynamic shared memory of 4*BK*(BM+BN) bytes).
// Assumes: M divisible by BM (128), N by BN (128), K by BK (8); the thread count
//   BM*BN/(TM*TN) is a multiple of BK and of BN. No bounds checks.

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 8
#endif
#ifndef TM
#define TM 8
#endif
#ifndef TN
#define TN 8
#endif

extern "C" __global__ void matmul(int M, int N, int K, const float* A, const float* B, float* C)
{
    extern __shared__ float smem[];
    float* As = smem;             // BM x BK, row-major
    float* Bs = smem + BM * BK;   // BK x BN, row-major

    const int cRow = blockIdx.y;
    const int cCol = blockIdx.x;

    const int numThreads = (BM * BN) / (TM * TN);

    // This thread's TM x TN tile inside the block tile.
    const int threadCol = threadIdx.x % (BN / TN);
    const int threadRow = threadIdx.x / (BN / TN);

    // Copy layout: a numThreads-sized sweep covers strideA rows of A's slice, strideB of B's.
    const int innerColA = threadIdx.x % BK;
    const int innerRowA = threadIdx.x / BK;
    const int strideA = numThreads / BK;
    const int innerColB = threadIdx.x % BN;
    const int innerRowB = threadIdx.x / BN;
    const int strideB = numThreads / BN;

    A += cRow * BM * K;
    B += cCol * BN;
    C += cRow * BM * N + cCol * BN;

    float threadResults[TM * TN];
    for (int i = 0; i < TM * TN; ++i) {
        threadResults[i] = 0.0f;
    }
    float regM[TM];
    float regN[TN];

    for (int bkIdx = 0; bkIdx < K; bkIdx += BK) {
        for (int off = 0; off < BM; off += strideA) {
            As[(innerRowA + off) * BK + innerColA] = A[(innerRowA + off) * K + innerColA];
        }
        for (int off = 0; off < BK; off += strideB) {
            Bs[(innerRowB + off) * BN + innerColB] = B[(innerRowB + off) * N + innerColB];
        }
        __syncthreads();

        A += BK;
        B += BK * N;

        for (int dotIdx = 0; dotIdx < BK; ++dotIdx) {
            for (int i = 0; i < TM; ++i) {
                regM[i] = As[(threadRow * TM + i) * BK + dotIdx];
            }
            for (int j = 0; j < TN; ++j) {
                regN[j] = Bs[dotIdx * BN + threadCol * TN + j];
            }
            for (int i = 0; i < TM; ++i) {
                for (int j = 0; j < TN; ++j) {
                    threadResults[i * TN + j] += regM[i] * regN[j];
                }
            }
        }
        __syncthreads();
    }

    for (int i = 0; i < TM; ++i) {
        for (int j = 0; j < TN; ++j) {
            C[(threadRow * TM + i) * N + threadCol * TN + j] = threadResults[i * TN + j];
        }
    }
}

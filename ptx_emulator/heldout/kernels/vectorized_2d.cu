// Held-out kernel, written independently for the course's time-model held-out set in the manner of
// the "vectorized memory access" kernel of the step-by-step SGEMM tutorials (2-D blocktiling with
// TM x TN results per thread, global copies done as float4, A's slice stored transposed in shared
// memory so a thread's TM values of A are contiguous, float4 shared loads and float4 stores of C);
// not copied from any source.
// Launch: step05_thread_tile --param BM=128 --param BN=128 --param BK=8 --param WM=64 --param WN=32
//   --param TM=8 --param TN=8
//   (256 threads per block; WM/WN only fix the thread count; uses the runner's dynamic shared
//   memory of 4*BK*(BM+BN) bytes).
// Assumes: M divisible by BM (128), N by BN (128), K by BK (8); K and N multiples of 4 with
//   16-byte aligned A, B, C; TM and TN multiples of 4; the thread count BM*BN/(TM*TN) a multiple
//   of BK/4 and of BN/4. No bounds checks.

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
    float* As = smem;             // BK x BM: A's slice transposed
    float* Bs = smem + BM * BK;   // BK x BN, row-major

    const int cRow = blockIdx.y;
    const int cCol = blockIdx.x;

    const int numThreads = (BM * BN) / (TM * TN);

    const int threadCol = threadIdx.x % (BN / TN);
    const int threadRow = threadIdx.x / (BN / TN);

    // Copy layout in units of float4.
    const int innerColA = threadIdx.x % (BK / 4);
    const int innerRowA = threadIdx.x / (BK / 4);
    const int strideA = numThreads / (BK / 4);
    const int innerColB = threadIdx.x % (BN / 4);
    const int innerRowB = threadIdx.x / (BN / 4);
    const int strideB = numThreads / (BN / 4);

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
            const float4 a = reinterpret_cast<const float4*>(&A[(innerRowA + off) * K + innerColA * 4])[0];
            // Transpose while storing: As[k][m].
            As[(innerColA * 4 + 0) * BM + innerRowA + off] = a.x;
            As[(innerColA * 4 + 1) * BM + innerRowA + off] = a.y;
            As[(innerColA * 4 + 2) * BM + innerRowA + off] = a.z;
            As[(innerColA * 4 + 3) * BM + innerRowA + off] = a.w;
        }
        for (int off = 0; off < BK; off += strideB) {
            reinterpret_cast<float4*>(&Bs[(innerRowB + off) * BN + innerColB * 4])[0] =
                reinterpret_cast<const float4*>(&B[(innerRowB + off) * N + innerColB * 4])[0];
        }
        __syncthreads();

        A += BK;
        B += BK * N;

        for (int dotIdx = 0; dotIdx < BK; ++dotIdx) {
            for (int i = 0; i < TM; i += 4) {
                const float4 m = reinterpret_cast<const float4*>(&As[dotIdx * BM + threadRow * TM + i])[0];
                regM[i + 0] = m.x;
                regM[i + 1] = m.y;
                regM[i + 2] = m.z;
                regM[i + 3] = m.w;
            }
            for (int j = 0; j < TN; j += 4) {
                const float4 n = reinterpret_cast<const float4*>(&Bs[dotIdx * BN + threadCol * TN + j])[0];
                regN[j + 0] = n.x;
                regN[j + 1] = n.y;
                regN[j + 2] = n.z;
                regN[j + 3] = n.w;
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
        for (int j = 0; j < TN; j += 4) {
            float4 out;
            out.x = threadResults[i * TN + j + 0];
            out.y = threadResults[i * TN + j + 1];
            out.z = threadResults[i * TN + j + 2];
            out.w = threadResults[i * TN + j + 3];
            reinterpret_cast<float4*>(&C[(threadRow * TM + i) * N + threadCol * TN + j])[0] = out;
        }
    }
}

// Variant of step07_tf32_mma/src/kernel.cu: not a matrix product, the kernel's MMAs alone on
// operands kept in registers, to measure what the instructions cost.
//
// Each warp issues exactly the mma.sync instructions of step07_tf32_mma/src/kernel.cu, on the
// same accumulators, with the same launch (grid, threads, shared memory), but on operands that
// stay in registers: no copies, no shared-memory reads, no conversions, no barriers. It needs
// fewer registers, so at least as many blocks fit per SM as the kernel's, and its time is a floor
// that the MMA instructions set for the kernel. The result is meaningless, so run it with
// --no-verify:
//
//   cargo run --release -p step07_tf32_mma -- --kernel step07_tf32_mma/variants/mma_only.cu
//   --no-verify

constexpr int WARPS_N = BN / WN;                  // warps across the block tile
constexpr int THREADS = (BM / WM) * WARPS_N * 32;
constexpr int MT = WM / 8;                        // 8-row strips of a warp's region
constexpr int NT = WN / 16;                       // and 16-column strips across it
constexpr int AS = BK + 4;                        // floats per row of the A tile, padded
constexpr int BS = BN + 8;                        // floats per row of the B tile, padded
constexpr int A_TILE = BM * AS;                   // floats of one buffer of A
constexpr int B_TILE = BK * BS;                   // floats of one buffer of B

// d += p·q for one 16×8×8 tile: p is the 16×8 first operand (4 registers), q the 8×8 second
// (2), d the 16×8 accumulator fragment (4 floats), all spread over the warp's 32 lanes.
__device__ __forceinline__ void mma(float (&d)[4], const unsigned (&p)[4], const unsigned (&q)[2])
{
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(p[0]), "r"(p[1]), "r"(p[2]), "r"(p[3]), "r"(q[0]), "r"(q[1]));
}

// Where row r (0–15) of the MMA's 16-row tile j lies among the warp's WN columns of C: rows r
// and r + 8 are neighbouring columns, so a lane's two B values of a row are one 8-byte load.
__device__ __forceinline__ int warp_col(int j, int r)
{
    return 16 * j + 2 * (r % 8) + r / 8;
}

extern "C" __global__ void __launch_bounds__(THREADS)
    matmul(int M, int N, int K, const float* A, const float* B, float* C) {
    int warp = threadIdx.x / 32;
    int wr = (warp / WARPS_N) * WM, wc = (warp % WARPS_N) * WN;
    int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    unsigned a[MT][2], b[NT][4];
    float x = A[0], y = B[0];
#pragma unroll
    for (int i = 0; i < MT; ++i) a[i][0] = __float_as_uint(x + i), a[i][1] = __float_as_uint(x - i);
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int q = 0; q < 4; ++q) b[j][q] = __float_as_uint(y + j + q);
    float acc[NT][MT][4] = {};
    for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
        for (int k = 0; k < BK; k += 8)
#pragma unroll
            for (int j = 0; j < NT; ++j)
#pragma unroll
                for (int i = 0; i < MT; ++i) mma(acc[j][i], b[j], a[i]);
    }
    int g = (threadIdx.x % 32) / 4, t = threadIdx.x % 4;
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int i = 0; i < MT; ++i)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                int row = row0 + wr + 8 * i + 2 * t + e % 2;
                int col = col0 + wc + warp_col(j, g + 8 * (e / 2));
                if (row < M && col < N) C[(offset_t)row * N + col] = acc[j][i][e];
            }
}

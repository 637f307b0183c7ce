// Not a matrix product: step 07's MMAs alone, to measure what the instructions cost.
//
// Each warp issues exactly the mma.sync instructions of step07_tf32_mma/src/kernel.cu, on the
// same accumulators, with the same launch (grid, threads, shared memory), but on operands that
// stay in registers: no copies, no shared-memory reads, no conversions, no barriers. Its time is
// the floor that the MMA instructions set for the kernel at this occupancy; the result is
// meaningless, so run it with --no-verify:
//
//   cargo run --release -p step07_tf32_mma -- --kernel step07_tf32_mma/variants/mma_only.cu --no-verify

constexpr int WARPS_N = BN / WN;                  // warps across the block tile
constexpr int THREADS = (BM / WM) * WARPS_N * 32;
constexpr int MT = WM / 16;                       // MMA tiles down a warp's region (16 rows each)
constexpr int NT = WN / 8;                        // and across it (8 columns each)
constexpr int AS = BK + 4;                        // floats per row of the A tile, padded
constexpr int BS = BN + 8;                        // floats per row of the B tile, padded
constexpr int A_TILE = BM * AS;                   // floats of one buffer of A
constexpr int B_TILE = BK * BS;                   // floats of one buffer of B

// d += a·b for one 16×8×8 tile: a is the 16×8 A fragment (4 registers), b the 8×8 B fragment
// (2), d the 16×8 accumulator fragment (4 floats), all spread over the warp's 32 lanes.
__device__ __forceinline__ void mma(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2])
{
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// Where column n (0–7) of the warp's 8-column tile j lies among the warp's WN columns: within
// each 32 columns, the columns n of four neighbouring tiles sit side by side.
__device__ __forceinline__ int warp_col(int j, int n)
{
    return (j / 4) * 32 + n * 4 + j % 4;
}

extern "C" __global__ void __launch_bounds__(THREADS) matmul(int M, int N, int K, const float* A, const float* B, float* C)
{
    int warp = threadIdx.x / 32;
    int wr = (warp / WARPS_N) * WM, wc = (warp % WARPS_N) * WN;
    int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    unsigned a[MT][4], b[NT][2];
    float x = A[0], y = B[0];
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int q = 0; q < 4; ++q) a[i][q] = __float_as_uint(x + i + q);
#pragma unroll
    for (int j = 0; j < NT; ++j) b[j][0] = __float_as_uint(y + j), b[j][1] = __float_as_uint(y - j);
    float acc[MT][NT][4] = {};
    for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
        for (int k = 0; k < BK; k += 8)
#pragma unroll
            for (int j = 0; j < NT; ++j)
#pragma unroll
                for (int i = 0; i < MT; ++i) mma(acc[i][j], a[i], b[j]);
    }
    int g = (threadIdx.x % 32) / 4, t = threadIdx.x % 4;
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                int row = row0 + wr + 16 * i + g + 8 * (e / 2);
                int col = col0 + wc + warp_col(j, 2 * t + e % 2);
                if (row < M && col < N) C[row * N + col] = acc[i][j][e];
            }
}

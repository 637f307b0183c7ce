// Step 07: TF32 on the tensor cores, one warp-wide mma.sync at a time.
//
// Idea: step 06 computes each K slice as outer products on the FMA units, one multiply-add per
// lane per instruction. The tensor cores of sm_80 and newer multiply a 16×8 tile of A by an 8×8
// tile of B in one warp-wide instruction, mma.sync.m16n8k8, with operands rounded to TF32 (a
// float with a 10-bit fraction) and products summed in FP32. This kernel keeps step 06's block
// tile and double-buffered slices and replaces the outer products by such MMAs: each warp owns a
// WM×WN region of the block tile, (WM/16)·(WN/8) MMA tiles, and per 8-deep step of the slice it
// loads one A fragment per 16 rows and one B fragment per 8 columns and issues one MMA per tile.
//
// What else had to change, and why:
// - A is staged as it lies (As[m][k], K contiguous): the A fragment wants, per lane, elements
//   of one row, and the copies into shared memory are then 16-byte pieces of A's rows.
// - The slices travel with cp.async, which copies global memory into shared memory without
//   passing through registers (sm_80 and newer), in place of step 06's register staging: the
//   registers go to the accumulators, and the copy of slice t+1 runs behind the MMAs of slice t.
// - The rows of both tiles are padded (A by 4 floats, B by 8) so that the 32 lanes of a warp
//   reading a fragment hit 32 different banks.
// - Values are converted to TF32 when a fragment is read (cvt.rna: round to nearest, ties away).

// BM, BN, BK, WM, WN are set at compile time (-D NAME=value) from the step's lib.rs.

// ANCHOR: constants
constexpr int WARPS_N = BN / WN;                  // warps across the block tile
constexpr int THREADS = (BM / WM) * WARPS_N * 32;
constexpr int MT = WM / 16;                       // MMA tiles down a warp's region (16 rows each)
constexpr int NT = WN / 8;                        // and across it (8 columns each)
constexpr int AS = BK + 4;                        // floats per row of the A tile, padded
constexpr int BS = BN + 8;                        // floats per row of the B tile, padded
constexpr int A_TILE = BM * AS;                   // floats of one buffer of A
constexpr int B_TILE = BK * BS;                   // floats of one buffer of B
constexpr int A_PIECES = BM * BK / 4;             // 16-byte pieces per slice of A
constexpr int B_PIECES = BK * BN / 4;
// ANCHOR_END: constants

// ANCHOR: helpers
// The shared-memory address of a pointer into shared memory, as cp.async wants it.
__device__ __forceinline__ unsigned smem_address(const void* p)
{
    unsigned a;
    asm("{ .reg .u64 s; cvta.to.shared.u64 s, %1; cvt.u32.u64 %0, s; }" : "=r"(a) : "l"(p));
    return a;
}

// Copies `bytes` (16 or 0) from global to shared memory and fills the rest of 16 with zeros;
// with 0 nothing is read, so `src` need only be a valid address.
__device__ __forceinline__ void copy16(float* dst, const float* src, int bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_address(dst)), "l"(src), "r"(bytes));
}

// The same for one float (4 or 0 bytes).
__device__ __forceinline__ void copy4(float* dst, const float* src, int bytes)
{
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_address(dst)), "l"(src), "r"(bytes));
}

// Starts the copies of the BK-deep slice at k0: A's BM×BK tile and B's BK×BN tile. A piece of
// 4 floats is one 16-byte copy when the row length (K for A, N for B) is a multiple of 4, so
// that every piece is aligned and wholly inside or outside the matrix; otherwise four 4-byte
// copies. Outside the matrices the copies store zeros.
__device__ __forceinline__ void fetch_tiles(const float* A, const float* B, int M, int N, int K, int row0, int col0,
                                            int k0, float* As, float* Bs)
{
    for (int p = threadIdx.x; p < A_PIECES; p += THREADS) {
        int r = p / (BK / 4), c = (p % (BK / 4)) * 4;
        int row = row0 + r, k = k0 + c;
        float* dst = &As[r * AS + c];
        if (K % 4 == 0) {
            bool in = row < M && k < K;
            copy16(dst, in ? &A[row * K + k] : A, in ? 16 : 0);
        } else {
#pragma unroll
            for (int v = 0; v < 4; ++v) {
                bool in = row < M && k + v < K;
                copy4(dst + v, in ? &A[row * K + k + v] : A, in ? 4 : 0);
            }
        }
    }
    for (int p = threadIdx.x; p < B_PIECES; p += THREADS) {
        int r = p / (BN / 4), c = (p % (BN / 4)) * 4;
        int k = k0 + r, col = col0 + c;
        float* dst = &Bs[r * BS + c];
        if (N % 4 == 0) {
            bool in = k < K && col < N;
            copy16(dst, in ? &B[k * N + col] : B, in ? 16 : 0);
        } else {
#pragma unroll
            for (int v = 0; v < 4; ++v) {
                bool in = k < K && col + v < N;
                copy4(dst + v, in ? &B[k * N + col + v] : B, in ? 4 : 0);
            }
        }
    }
    asm volatile("cp.async.commit_group;\n" ::);
}

// Waits until at most `pending` groups of this thread's copies are still in flight.
template <int pending> __device__ __forceinline__ void wait_copies()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(pending));
}
// ANCHOR_END: helpers

// ANCHOR: compute
// A float rounded to TF32 (10 fraction bits), in the 32-bit register the MMA reads.
__device__ __forceinline__ unsigned tf32(float x)
{
    unsigned r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
    return r;
}

// d += a·b for one 16×8×8 tile: a is the 16×8 A fragment (4 registers), b the 8×8 B fragment
// (2), d the 16×8 accumulator fragment (4 floats), all spread over the warp's 32 lanes.
__device__ __forceinline__ void mma(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2])
{
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// acc += the warp's region of the staged slice. Lane l holds, of each fragment, the elements of
// row (or column) g = l / 4 and of column (or row) t = l % 4, and the same 8 rows or 4 columns
// further on:
//   A: (g, t), (g + 8, t), (g, t + 4), (g + 8, t + 4)     B: (t, g), (t + 4, g)
//   C: (g, 2t), (g, 2t + 1), (g + 8, 2t), (g + 8, 2t + 1)
__device__ __forceinline__ void compute_tile(const float* As, const float* Bs, int wr, int wc, float (&acc)[MT][NT][4])
{
    int g = (threadIdx.x % 32) / 4, t = threadIdx.x % 4;
#pragma unroll
    for (int k = 0; k < BK; k += 8) {
        unsigned a[MT][4], b[NT][2];
#pragma unroll
        for (int i = 0; i < MT; ++i) {
            const float* p = &As[(wr + 16 * i + g) * AS + k + t];
            a[i][0] = tf32(p[0]);
            a[i][1] = tf32(p[8 * AS]);
            a[i][2] = tf32(p[4]);
            a[i][3] = tf32(p[8 * AS + 4]);
        }
#pragma unroll
        for (int j = 0; j < NT; ++j) {
            const float* p = &Bs[(k + t) * BS + wc + 8 * j + g];
            b[j][0] = tf32(p[0]);
            b[j][1] = tf32(p[4 * BS]);
        }
#pragma unroll
        for (int i = 0; i < MT; ++i) {
#pragma unroll
            for (int j = 0; j < NT; ++j) {
                mma(acc[i][j], a[i], b[j]);
            }
        }
    }
}
// ANCHOR_END: compute

// ANCHOR: kernel
extern "C" __global__ void __launch_bounds__(THREADS) matmul(int M, int N, int K, const float* A, const float* B, float* C)
{
    // Two buffers of the A tile (BM×BK, rows padded), then two of the B tile (BK×BN, rows
    // padded); buffer `buf` of A starts at As + buf * A_TILE.
    extern __shared__ __align__(16) float smem[];
    float* As = smem;
    float* Bs = smem + 2 * A_TILE;

    // The warp's region of the block tile.
    int warp = threadIdx.x / 32;
    int wr = (warp / WARPS_N) * WM;
    int wc = (warp % WARPS_N) * WN;
    int row0 = blockIdx.y * BM;
    int col0 = blockIdx.x * BN;

    float acc[MT][NT][4] = {};

    fetch_tiles(A, B, M, N, K, row0, col0, 0, As, Bs);

    int buf = 0;
    for (int k0 = 0; k0 < K; k0 += BK) {
        // Start the next slice's copies into the other buffer (an empty group after the last
        // slice keeps the count uniform), then wait for this slice's: all but the newest group.
        if (k0 + BK < K) {
            fetch_tiles(A, B, M, N, K, row0, col0, k0 + BK, As + (buf ^ 1) * A_TILE, Bs + (buf ^ 1) * B_TILE);
        } else {
            asm volatile("cp.async.commit_group;\n" ::);
        }
        wait_copies<1>();
        // Every thread's copies of this slice have landed before anyone reads them...
        __syncthreads();
        compute_tile(As + buf * A_TILE, Bs + buf * B_TILE, wr, wc, acc);
        // ...and everyone has finished reading this buffer before the next trip refills it.
        __syncthreads();
        buf ^= 1;
    }

    // Write the accumulators back, element by element where they lie inside C.
    int g = (threadIdx.x % 32) / 4, t = threadIdx.x % 4;
#pragma unroll
    for (int i = 0; i < MT; ++i) {
#pragma unroll
        for (int j = 0; j < NT; ++j) {
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                int row = row0 + wr + 16 * i + g + 8 * (e / 2);
                int col = col0 + wc + 8 * j + 2 * t + e % 2;
                if (row < M && col < N) C[row * N + col] = acc[i][j][e];
            }
        }
    }
}
// ANCHOR_END: kernel

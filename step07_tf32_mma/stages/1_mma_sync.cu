// Step 07, stage 1 of 5, from step06_prefetch/src/kernel.cu: the tensor cores: each warp
// computes its region with mma.sync.m16n8k8 on operands rounded to TF32, reading its fragments
// from shared memory one float at a time.
//
// Step 06 adds each slice's products on the FMA units, one multiply-add per lane per
// instruction. The tensor cores of sm_80 and newer multiply a 16×8 tile by an 8×8 tile in one
// warp-wide instruction, mma.sync.m16n8k8, on operands rounded to TF32 (a float with a 10-bit
// fraction), with the products summed in FP32. Here each warp owns a WM×WN region of the block
// tile, as in step 06, and covers it with such tiles: per 8-deep step of the slice, one A
// fragment per 16 rows and one B fragment per 8 columns, one MMA per pair. No lane holds a row
// or a column of a tile; each holds a fixed pattern of its elements (a fragment), and here reads
// them from the staged slice one float at a time. The staging is step 06's, A transposed, its
// next slice prefetched into registers. A warp whose region lies outside C, in an edge tile,
// multiplies zeros: mma.sync needs every lane of the warp.

// BM, BN, BK, WM, WN are set at compile time (-D NAME=value) from the step's lib.rs.

// ANCHOR: constants
constexpr int WARPS_N = BN / WN;                  // warps across the block tile
constexpr int THREADS = (BM / WM) * WARPS_N * 32;
constexpr int MT = WM / 16;                       // 16-row strips of a warp's region
constexpr int NT = WN / 8;                        // and 8-column strips across it
// 4-element pieces of the A and B tiles, and how many each thread copies.
constexpr int A_PIECES = BM * BK / 4;
constexpr int B_PIECES = BK * BN / 4;
constexpr int A_LOADS = (A_PIECES + THREADS - 1) / THREADS;
constexpr int B_LOADS = (B_PIECES + THREADS - 1) / THREADS;
// ANCHOR_END: constants

// ANCHOR: helpers
// p[row][col .. col+3] of a rows×cols row-major matrix, zero outside it. `vec`: rows start on
// 16-byte boundaries (cols % 4 == 0), so an in-bounds piece is one float4 load.
__device__ __forceinline__ float4 load4(const float* p, int row, int col, int rows, int cols,
                                        bool vec) {
    if (vec && row < rows && col + 3 < cols) {
        return *reinterpret_cast<const float4*>(p + (offset_t)row * cols + col);
    }
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (row < rows) {
        const float* r = p + (offset_t)row * cols;
        if (col + 0 < cols) v.x = r[col + 0];
        if (col + 1 < cols) v.y = r[col + 1];
        if (col + 2 < cols) v.z = r[col + 2];
        if (col + 3 < cols) v.w = r[col + 3];
    }
    return v;
}

// p[row][col .. col+3], known to lie inside the matrix: no bounds checks. VEC: rows start on
// 16-byte boundaries, so the piece is one float4 load. Read-only loads (__ldg) tell the
// compiler nothing writes the matrix while the kernel runs.
template <bool VEC>
__device__ __forceinline__ float4 load4_inside(const float* p, int row, int col, int cols)
{
    const float* q = p + (offset_t)row * cols + col;
    if constexpr (VEC) return __ldg(reinterpret_cast<const float4*>(q));
    return make_float4(__ldg(q + 0), __ldg(q + 1), __ldg(q + 2), __ldg(q + 3));
}

// fetch_tiles for a slice wholly inside A and B: no piece needs a bounds check.
template <bool VEC>
__device__ __forceinline__ void fetch_inside(const float* A, const float* B, int N, int K, int row0,
                                             int col0, int k0, float4 (&a_next)[A_LOADS],
                                             float4 (&b_next)[B_LOADS]) {
#pragma unroll
    for (int i = 0; i < A_LOADS; ++i) {
        int e = threadIdx.x + i * THREADS;
        if (A_PIECES % THREADS == 0 || e < A_PIECES) {
            a_next[i] = load4_inside<VEC>(A, row0 + e / (BK / 4), k0 + 4 * (e % (BK / 4)), K);
        }
    }
#pragma unroll
    for (int i = 0; i < B_LOADS; ++i) {
        int e = threadIdx.x + i * THREADS;
        if (B_PIECES % THREADS == 0 || e < B_PIECES) {
            b_next[i] = load4_inside<VEC>(B, k0 + e / (BN / 4), col0 + 4 * (e % (BN / 4)), N);
        }
    }
}

// Copies this thread's pieces of the A and B tiles at k0 from global memory into registers.
__device__ __forceinline__ void fetch_tiles(const float* A, const float* B, int M, int N, int K,
                                            int row0, int col0, int k0, float4 (&a_next)[A_LOADS],
                                            float4 (&b_next)[B_LOADS]) {
    // The common case, every slice but those at the edges of A and B: the whole slice lies
    // inside both, so no piece needs a bounds check. Each row length gets its own copy of the
    // loads, so the choice is made once per slice, not once per piece.
    if (row0 + BM <= M && col0 + BN <= N && k0 + BK <= K) {
        if (K % 4 == 0 && N % 4 == 0) {
            fetch_inside<true>(A, B, N, K, row0, col0, k0, a_next, b_next);
        } else {
            fetch_inside<false>(A, B, N, K, row0, col0, k0, a_next, b_next);
        }
        return;
    }
    // A slice at an edge: each piece checked, zero outside the matrices.
#pragma unroll
    for (int i = 0; i < A_LOADS; ++i) {
        int e =
            threadIdx.x + i * THREADS;  // A piece e: row e / (BK/4), columns 4·(e % (BK/4)) + 0..3
        if (A_PIECES % THREADS == 0 || e < A_PIECES) {
            a_next[i] = load4(A, row0 + e / (BK / 4), k0 + 4 * (e % (BK / 4)), M, K, K % 4 == 0);
        }
    }
#pragma unroll
    for (int i = 0; i < B_LOADS; ++i) {
        int e =
            threadIdx.x + i * THREADS;  // B piece e: row e / (BN/4), columns 4·(e % (BN/4)) + 0..3
        if (B_PIECES % THREADS == 0 || e < B_PIECES) {
            b_next[i] = load4(B, k0 + e / (BN / 4), col0 + 4 * (e % (BN / 4)), K, N, N % 4 == 0);
        }
    }
}

// Writes the fetched pieces into shared memory: A transposed, B as it is.
__device__ __forceinline__ void store_tiles(float (*As)[BM], float (*Bs)[BN],
                                            const float4 (&a_next)[A_LOADS],
                                            const float4 (&b_next)[B_LOADS]) {
#pragma unroll
    for (int i = 0; i < A_LOADS; ++i) {
        int e = threadIdx.x + i * THREADS;
        if (A_PIECES % THREADS == 0 || e < A_PIECES) {
            int m = e / (BK / 4), k = 4 * (e % (BK / 4));
            As[k + 0][m] = a_next[i].x;
            As[k + 1][m] = a_next[i].y;
            As[k + 2][m] = a_next[i].z;
            As[k + 3][m] = a_next[i].w;
        }
    }
#pragma unroll
    for (int i = 0; i < B_LOADS; ++i) {
        int e = threadIdx.x + i * THREADS;
        if (B_PIECES % THREADS == 0 || e < B_PIECES) {
            *reinterpret_cast<float4*>(&Bs[e / (BN / 4)][4 * (e % (BN / 4))]) = b_next[i];
        }
    }
}
// ANCHOR_END: helpers

// ANCHOR: compute
// ANCHOR: fragments
// ANCHOR: tf32
// A float (as its bits) rounded to TF32, 10 fraction bits, in the 32-bit register the MMA
// reads; the MMA ignores the 13 low bits. Both conversions round to nearest and differ only on
// ties: cvt.rn (sm_90 and newer) is one instruction, cvt.rna two (a compare and an add).
__device__ __forceinline__ unsigned tf32(unsigned x)
{
    unsigned r;
#if __CUDA_ARCH__ >= 900
    asm("cvt.rn.tf32.f32 %0, %1;" : "=r"(r) : "f"(__uint_as_float(x)));
#else
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(__uint_as_float(x)));
#endif
    return r;
}
// ANCHOR_END: tf32

// ANCHOR: mma
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
// ANCHOR_END: mma

// ANCHOR: load_a
// The A fragment of one 16-row strip: rows g and g + 8 at depths t and t + 4 of the 8-deep
// step.
__device__ __forceinline__ void load_a(unsigned (&a)[4], const float* col)
{
    a[0] = tf32(__float_as_uint(col[0])), a[1] = tf32(__float_as_uint(col[8]));
    a[2] = tf32(__float_as_uint(col[4 * BM])), a[3] = tf32(__float_as_uint(col[4 * BM + 8]));
}
// ANCHOR_END: load_a

// ANCHOR: load_b
// The B fragment of one 8-column strip: column g at depths t and t + 4.
__device__ __forceinline__ void load_b(unsigned (&b)[2], const float* col)
{
    b[0] = tf32(__float_as_uint(col[0])), b[1] = tf32(__float_as_uint(col[4 * BN]));
}
// ANCHOR_END: load_b
// ANCHOR_END: fragments

// ANCHOR: compute_tile
// acc += the warp's region of the staged slice. Each MMA computes a 16×8 tile of C from a 16×8
// tile of A and an 8×8 tile of B. Lane l holds, of each fragment, the elements of row (or
// column) g = l / 4 and of column (or row) t = l % 4, and the same 8 rows or 4 columns further
// on:
//   A: (g, t), (g + 8, t), (g, t + 4), (g + 8, t + 4)     B: (t, g), (t + 4, g)
//   C: (g, 2t), (g, 2t + 1), (g + 8, 2t), (g + 8, 2t + 1)
__device__ __forceinline__ void compute_tile(const float (*As)[BM], const float (*Bs)[BN], int wr,
                                             int wc, float (&acc)[MT][NT][4]) {
    int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const float* a_col = &As[t][wr + g];
    const float* b_col = &Bs[t][wc + g];
#pragma unroll
    for (int k = 0; k < BK; k += 8) {
        unsigned a[MT][4], b[NT][2];
#pragma unroll
        for (int i = 0; i < MT; ++i) load_a(a[i], a_col + k * BM + 16 * i);
#pragma unroll
        for (int j = 0; j < NT; ++j) load_b(b[j], b_col + k * BN + 8 * j);
#pragma unroll
        for (int i = 0; i < MT; ++i) {
#pragma unroll
            for (int j = 0; j < NT; ++j) {
                mma(acc[i][j], a[i], b[j]);
            }
        }
    }
}
// ANCHOR_END: compute_tile
// ANCHOR_END: compute

// ANCHOR: kernel
extern "C" __global__ void __launch_bounds__(THREADS)
    matmul(int M, int N, int K, const float* A, const float* B, float* C) {
    // Two buffers of the A tile (transposed, BK×BM) and the B tile (BK×BN) in dynamic shared
    // memory.
    extern __shared__ __align__(16) float smem[];
    float (*As)[BK][BM] = reinterpret_cast<float (*)[BK][BM]>(smem);
    float (*Bs)[BK][BN] = reinterpret_cast<float (*)[BK][BN]>(smem + 2 * BK * BM);

    // The warp's region of the block tile.
    int warp = threadIdx.x / 32;
    int wr = (warp / WARPS_N) * WM;
    int wc = (warp % WARPS_N) * WN;
    int row0 = blockIdx.y * BM;
    int col0 = blockIdx.x * BN;

    float acc[MT][NT][4] = {};
    float4 a_next[A_LOADS], b_next[B_LOADS];

    fetch_tiles(A, B, M, N, K, row0, col0, 0, a_next, b_next);
    store_tiles(As[0], Bs[0], a_next, b_next);
    __syncthreads();

    int buf = 0;
    for (int k0 = 0; k0 < K; k0 += BK) {
        bool more = k0 + BK < K;
        // Issue the next slice's loads first: they are in flight during the MMAs below.
        if (more) fetch_tiles(A, B, M, N, K, row0, col0, k0 + BK, a_next, b_next);
        compute_tile(As[buf], Bs[buf], wr, wc, acc);
        // The other buffer was last read before the previous barrier: it is free to fill.
        if (more) store_tiles(As[buf ^ 1], Bs[buf ^ 1], a_next, b_next);
        __syncthreads();
        buf ^= 1;
    }

    // ANCHOR: write_back
    // Write the accumulators back, element by element where they lie inside C: element e of
    // tile (i, j) is C's row 16i + g + 8 (e / 2) and column 8j + 2t + e % 2.
    int g = (threadIdx.x % 32) / 4, t = threadIdx.x % 4;
#pragma unroll
    for (int i = 0; i < MT; ++i) {
#pragma unroll
        for (int j = 0; j < NT; ++j) {
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                int row = row0 + wr + 16 * i + g + 8 * (e / 2);
                int col = col0 + wc + 8 * j + 2 * t + e % 2;
                if (row < M && col < N) C[(offset_t)row * N + col] = acc[i][j][e];
            }
        }
    }
    // ANCHOR_END: write_back
}
// ANCHOR_END: kernel

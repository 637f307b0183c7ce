// Step 07, stage 5 of 5, from step07_tf32_mma/stages/4_swapped_operands.cu: a warp's columns
// permuted (warp_col), so that the two B values a lane reads from a row lie side by side and
// arrive in one 8-byte load.
//
// In stage 4 a lane reads columns g and g + 8 of each 16-column strip of B, 8 floats apart. Any
// order of the warp's columns computes the same product, as long as the write-back uses the
// same one. Here the MMA's row r of strip j is the warp's column 16j + 2(r % 8) + r / 8, so rows
// g and g + 8 are neighbouring columns, and a lane's four B values are two float2 loads.

// BM, BN, BK, WM, WN are set at compile time (-D NAME=value) from the step's lib.rs.

// ANCHOR: constants
constexpr int WARPS_N = BN / WN;                  // warps across the block tile
constexpr int THREADS = (BM / WM) * WARPS_N * 32;
constexpr int MT = WM / 8;                        // 8-row strips of a warp's region
constexpr int NT = WN / 16;                       // and 16-column strips across it
constexpr int AS = BK + 4;                        // floats per row of the A tile, padded
constexpr int BS = BN + 8;                        // floats per row of the B tile, padded
constexpr int A_TILE = BM * AS;                   // floats of one buffer of A
constexpr int B_TILE = BK * BS;                   // floats of one buffer of B
// ANCHOR_END: constants

// ANCHOR: helpers
// ANCHOR: cp_async
// The shared-memory address of a pointer into shared memory, as cp.async and ldmatrix want it.
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
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_address(dst)),
                 "l"(src), "r"(bytes));
}

// The same for one float (4 or 0 bytes).
__device__ __forceinline__ void copy4(float* dst, const float* src, int bytes)
{
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_address(dst)),
                 "l"(src), "r"(bytes));
}
// ANCHOR_END: cp_async

// A thread's share of a staged tile of ROWS×COLS floats: pieces of 4 floats of a row. The
// threads cover the tile row by row, THREADS pieces at a time, so a thread's pieces lie in one
// column c, STEP rows apart from row r on; piece i is at row r + i·STEP, if that is inside.
template <int ROWS, int COLS> struct Share {
    static constexpr int STEP = THREADS / (COLS / 4);
    static constexpr int PIECES = (ROWS + STEP - 1) / STEP;
    static_assert(THREADS % (COLS / 4) == 0, "a row of pieces must not straddle two passes");
    int r = threadIdx.x / (COLS / 4), c = threadIdx.x % (COLS / 4) * 4;
    __device__ int row(int i) const { return r + i * STEP; }
    __device__ bool has(int i) const { return ROWS % STEP == 0 || row(i) < ROWS; }
};

// Copies 4 floats, row `row`, columns col..col+3 of a row-major rows×cols matrix, to dst, with
// zeros for whatever lies outside the matrix. WHOLE: cols is a multiple of 4, so the piece is
// aligned and wholly inside or outside, one 16-byte copy; otherwise four 4-byte copies.
template <bool WHOLE>
__device__ __forceinline__ void copy_piece(float* dst, const float* src, int row, int col, int rows,
                                           int cols) {
    if (WHOLE) {
        bool in = row < rows && col < cols;
        copy16(dst, in ? &src[(offset_t)row * cols + col] : src, in ? 16 : 0);
    } else {
#pragma unroll
        for (int v = 0; v < 4; ++v) {
            bool in = row < rows && col + v < cols;
            copy4(dst + v, in ? &src[(offset_t)row * cols + col + v] : src, in ? 4 : 0);
        }
    }
}

// Starts the copies of this thread's share of the A tile and of the B tile.
template <bool WHOLE>
__device__ __forceinline__ void copy_a(float* As, const float* A, int row0, int k0, int M, int K) {
    Share<BM, BK> s;
#pragma unroll
    for (int i = 0; i < s.PIECES; ++i) {
        if (s.has(i))
            copy_piece<WHOLE>(&As[s.row(i) * AS + s.c], A, row0 + s.row(i), k0 + s.c, M, K);
    }
}

template <bool WHOLE>
__device__ __forceinline__ void copy_b(float* Bs, const float* B, int k0, int col0, int K, int N) {
    Share<BK, BN> s;
#pragma unroll
    for (int i = 0; i < s.PIECES; ++i) {
        if (s.has(i))
            copy_piece<WHOLE>(&Bs[s.row(i) * BS + s.c], B, k0 + s.row(i), col0 + s.c, K, N);
    }
}

// ANCHOR: fetch
// Starts the copies of the BK-deep slice at k0, A's BM×BK tile and B's BK×BN tile, as one group.
__device__ __forceinline__ void fetch_tiles(const float* A, const float* B, int M, int N, int K,
                                            int row0, int col0, int k0, float* As, float* Bs) {
    if (K % 4 == 0) copy_a<true>(As, A, row0, k0, M, K);
    else copy_a<false>(As, A, row0, k0, M, K);
    if (N % 4 == 0) copy_b<true>(Bs, B, k0, col0, K, N);
    else copy_b<false>(Bs, B, k0, col0, K, N);
    asm volatile("cp.async.commit_group;\n" ::);
}

// Waits until this thread's copies have landed.
__device__ __forceinline__ void wait_copies()
{
    asm volatile("cp.async.wait_group 0;\n" ::);
}
// ANCHOR_END: fetch

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
// The A fragment of one 8-row strip: row g at depths t and t + 4 of the 8-deep step.
__device__ __forceinline__ void load_a(unsigned (&a)[2], const float* row)
{
    a[0] = tf32(__float_as_uint(row[0])), a[1] = tf32(__float_as_uint(row[4]));
}
// ANCHOR_END: load_a

// ANCHOR: load_b
// The B fragment of one 16-column strip: rows t and t + 4 of the slice, two floats each.
__device__ __forceinline__ void load_b(unsigned (&b)[4], const float* row)
{
    float2 lo = *reinterpret_cast<const float2*>(row);
    float2 hi = *reinterpret_cast<const float2*>(row + 4 * BS);
    b[0] = tf32(__float_as_uint(lo.x)), b[1] = tf32(__float_as_uint(lo.y));
    b[2] = tf32(__float_as_uint(hi.x)), b[3] = tf32(__float_as_uint(hi.y));
}
// ANCHOR_END: load_b
// ANCHOR_END: fragments

// ANCHOR: compute_tile
// ANCHOR: warp_col
// Where row r (0–15) of the MMA's 16-row tile j lies among the warp's WN columns of C: rows r
// and r + 8 are neighbouring columns, so a lane's two B values of a row are one 8-byte load.
__device__ __forceinline__ int warp_col(int j, int r)
{
    return 16 * j + 2 * (r % 8) + r / 8;
}
// ANCHOR_END: warp_col

// acc += the warp's region of the staged slice. Each MMA computes a 16×8 tile of Cᵀ = Bᵀ·Aᵀ:
// 16 columns of C (its rows) by 8 rows of C (its columns). Lane l holds, of each fragment, the
// elements of row (or column) g = l / 4 and of column (or row) t = l % 4, and the same 8 rows
// or 4 columns further on:
//   Bᵀ: (g, t), (g + 8, t), (g, t + 4), (g + 8, t + 4)     Aᵀ: (t, g), (t + 4, g)
//   Cᵀ: (g, 2t), (g, 2t + 1), (g + 8, 2t), (g + 8, 2t + 1)
// so from A it wants row g at columns t and t + 4 of the 8-deep step, and from B rows t and
// t + 4 at columns g and g + 8 of the strip, which warp_col places side by side.
__device__ __forceinline__ void compute_tile(const float* As, const float* Bs, int wr, int wc,
                                             float (&acc)[NT][MT][4]) {
    int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const float* a_row = &As[(wr + g) * AS + t];
    const float* b_row = &Bs[t * BS + wc + warp_col(0, g)];
#pragma unroll
    for (int k = 0; k < BK; k += 8) {
        unsigned a[MT][2], b[NT][4];
#pragma unroll
        for (int i = 0; i < MT; ++i) load_a(a[i], a_row + 8 * i * AS + k);
#pragma unroll
        for (int j = 0; j < NT; ++j) load_b(b[j], b_row + k * BS + 16 * j);
#pragma unroll
        for (int j = 0; j < NT; ++j) {
#pragma unroll
            for (int i = 0; i < MT; ++i) {
                mma(acc[j][i], b[j], a[i]);
            }
        }
    }
}
// ANCHOR_END: compute_tile
// ANCHOR_END: compute

// ANCHOR: kernel
extern "C" __global__ void __launch_bounds__(THREADS)
    matmul(int M, int N, int K, const float* A, const float* B, float* C) {
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

    float acc[NT][MT][4] = {};

    fetch_tiles(A, B, M, N, K, row0, col0, 0, As, Bs);
    wait_copies();
    __syncthreads();

    int buf = 0;
    for (int k0 = 0; k0 < K; k0 += BK) {
        bool more = k0 + BK < K;
        // Start the next slice's copies first: they are in flight during the MMAs below.
        if (more)
            fetch_tiles(A, B, M, N, K, row0, col0, k0 + BK, As + (buf ^ 1) * A_TILE,
                        Bs + (buf ^ 1) * B_TILE);
        compute_tile(As + buf * A_TILE, Bs + buf * B_TILE, wr, wc, acc);
        // This thread's copies have landed; after the barrier everyone's have, and everyone has
        // finished reading this buffer, which the next trip refills.
        wait_copies();
        __syncthreads();
        buf ^= 1;
    }

    // ANCHOR: write_back
    // Write the accumulators back, element by element where they lie inside C: element e of
    // tile (j, i) is C's row 8i + 2t + e % 2 and column warp_col(j, g + 8 (e / 2)).
    int g = (threadIdx.x % 32) / 4, t = threadIdx.x % 4;
#pragma unroll
    for (int j = 0; j < NT; ++j) {
#pragma unroll
        for (int i = 0; i < MT; ++i) {
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                int row = row0 + wr + 8 * i + 2 * t + e % 2;
                int col = col0 + wc + warp_col(j, g + 8 * (e / 2));
                if (row < M && col < N) C[(offset_t)row * N + col] = acc[j][i][e];
            }
        }
    }
    // ANCHOR_END: write_back
}
// ANCHOR_END: kernel

// EXERCISE (step 07, hands-on): read A's fragments with ldmatrix.
//
// Starts from: this step's kernel with its reads of A's fragments taken out. The copies, the
//   padded tiles, B's paired loads, the MMAs and the write-back are there; load_a() leaves every
//   A register zero and every lane hands it the same row, so C comes out zero.
// To do: TODO 1 in load_a(), TODO 2 (the lane addresses) in compute_tile(). One warp-wide
//   ldmatrix.x4 must give each lane its A fragments of two 8-row strips, in the registers the
//   MMA reads (the chapter's fragment table and "The step's kernel: ldmatrix").
// Run (no GPU needed; on a GPU, leave out --emulate to see the speed):
//   cargo run --release -p step07_tf32_mma -- --emulate
//       --kernel step07_tf32_mma/exercises/ldmatrix.cu
//   and the same with -m 67 -n 45 -k 129 at the end.
// Check: `verify PASS · held to TF32 limits` at both shapes (docs/src/step07.md, "Hands-on",
//   shows what this file and two typical mistakes print).
// Solution: exercises/ldmatrix.diff; in step07_tf32_mma/,
//   patch -o /tmp/solved.cu exercises/ldmatrix.cu exercises/ldmatrix.diff
// gives src/kernel.cu.
//
// Step 07: TF32 on the tensor cores, one warp-wide mma.sync at a time.
//
// Idea: step 06 computes each K slice as outer products on the FMA units, one multiply-add per
// lane per instruction. The tensor cores of sm_80 and newer multiply a 16×8 tile by an 8×8 tile
// in one warp-wide instruction, mma.sync.m16n8k8, with operands rounded to TF32 (a float with a
// 10-bit fraction) and products summed in FP32. This kernel keeps step 06's structure, a block
// tile staged in double-buffered slices (with a tile of its own, 128×128), and replaces the outer
// products by such MMAs: each warp owns a WM×WN region of the block tile, and per 8-deep step of
// the slice it loads one A fragment per 8 rows and one B fragment per 16 columns and issues one MMA
// for each pair.
//
// What else had to change, and why:
// - Each MMA computes a tile of Cᵀ = Bᵀ·Aᵀ: 16 columns of C by 8 of its rows. The instruction's
//   first operand is then B, its second A, and each group of registers it reads is filled by one
//   load: B's pairs are neighbouring floats in shared memory, and ldmatrix gathers A's, so no
//   register has to be moved.
// - A is staged as it lies (As[m][k], K contiguous): the A fragment wants, per lane, elements
//   of one row, and the copies into shared memory are then 16-byte pieces of A's rows.
// - The slices travel with cp.async, which copies global memory into shared memory without
//   passing through registers (sm_80 and newer), in place of step 06's register staging: the
//   registers go to the accumulators, and the copy of slice t+1 runs behind the MMAs of slice t.
// - A fragments are read with ldmatrix, which hands each lane its elements of two 8-row strips
//   in one instruction. B fragments have no such instruction (ldmatrix cannot transpose 32-bit
//   elements), so a warp's columns are used in a permuted order: the two columns that a lane
//   needs from a 16-column strip lie side by side, one 8-byte load per row.
// - The rows of both tiles are padded (A by 4 floats, B by 8) so that these reads touch every
//   bank once per phase.
// - Values are rounded to TF32 as fragments are read: cvt.rn (to nearest, ties to even) on sm_90
//   and newer, one instruction there; cvt.rna (ties away from zero) on sm_80 to sm_89, which
//   lack it.
//
// stages/ builds this kernel up one idea at a time (--stage NAME); docs/src/step07.md measures
// each.

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
static_assert(MT % 2 == 0, "one ldmatrix.x4 reads the A fragments of two 8-row strips");
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
// The A fragments of two 8-row strips: a0 of the strip whose rows start at `address`'s row, a1 of
// the strip 8 rows below it.
__device__ __forceinline__ void load_a(unsigned (&a0)[2], unsigned (&a1)[2], unsigned address)
{
    // TODO 1 (one instruction): a0[0] and a0[1] are this lane's two values of the first strip,
    // the MMA's second operand q0 and q1 (a tile of Aᵀ: the fragment table's rows and columns
    // swapped), that is A's row g of the strip at depths t and t + 4 of the 8-deep step; a1 the
    // same of the second strip. Fill all four with one ldmatrix.sync.aligned.m8n8.x4.shared.b16
    // (inline PTX, like cp.async above). It reads four 8×8 matrices of 16-bit values, each row
    // from the shared-memory address one lane gives (`address`, see TODO 2), and hands lane l,
    // in its i-th destination register, elements 2(l % 4) and 2(l % 4) + 1 of row l / 4 of
    // matrix i. A 16-bit pair is one float here: which 8 rows × 4 floats must each matrix be?
    a0[0] = a0[1] = a1[0] = a1[1] = 0; // stands in for the instruction
#pragma unroll
    for (int h = 0; h < 2; ++h) a0[h] = tf32(a0[h]), a1[h] = tf32(a1[h]);
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
    // ANCHOR: lanes
    int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    // TODO 2 (the lane addresses): a_row is the shared-memory address of the row of As that
    // this lane hands ldmatrix for the first two strips at depth 0 (load_a's calls below add
    // the strip and the depth, in bytes). ldmatrix.x4 takes matrix i's rows 0–7 from lanes
    // 8i … 8i + 7, in that order. Point each lane at the row and column of A's tile that make
    // matrix i the one TODO 1 wants in register i. As given, every lane points at the warp's
    // first row.
    unsigned a_row = smem_address(&As[wr * AS]);
    const float* b_row = &Bs[t * BS + wc + warp_col(0, g)];
    // ANCHOR_END: lanes
#pragma unroll
    for (int k = 0; k < BK; k += 8) {
        unsigned a[MT][2], b[NT][4];
#pragma unroll
        for (int i = 0; i < MT; i += 2) load_a(a[i], a[i + 1], a_row + 4 * (8 * i * AS + k));
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

// EXERCISE (step 05, hands-on): the outer product.
//
// Starts from: this step's kernel with its heart taken out. The block tile, the warp regions,
// the copies into shared memory, the barriers and the write-back of each thread's TM×TN tile
// of C are all here, and the kernel declares that tile, acc[TM][TN], in registers. But
// compute_tile does nothing, so acc stays zero and so does C.
// To do: the TODOs in compute_tile. Per k of the staged slice, the thread's TM + TN values
// from shared memory must feed all TM·TN of its FMAs (the chapter's "The idea").
// Run a copy of your own, from the repository's root (git ignores mine/):
//   mkdir -p mine && cp step05_thread_tile/exercises/outer_product.cu mine/
//   ex=mine/outer_product.cu
//   cargo run --release -p step05_thread_tile -- --emulate --kernel $ex
//   cargo run --release -p step05_thread_tile -- --emulate --kernel $ex -m 67 -n 45 -k 129
//   cargo run --release -p step05_thread_tile -- --emulate --kernel $ex -m 257 -n 259 -k 133
//   (on a GPU, without --emulate, the first gives the speed as well). The last shape holds
//   whole 128×128 tiles, whose slices take the float4 loads, beside edges; N and K are not
//   multiples of 4.
// Check: each verify line reads PASS and the kernel line shows 0 B local/thread; try the
//        one-dimensional parameters of the chapter's "Run it" too (TN = 1). A value read from
//        the wrong place reads FAIL, with the worst element of C and what it should be.
// Solution: exercises/outer_product.diff turns this file into src/kernel.cu:
//   cd step05_thread_tile
//   patch -o /tmp/solved.cu exercises/outer_product.cu exercises/outer_product.diff

// The finished kernel, as src/kernel.cu describes it:
//
// Step 05: each thread computes a TM×TN tile of C in registers, as a sum of outer products.
//
// Idea: in step 04 every FMA needs two shared-memory loads, and shared-memory bandwidth, not
// arithmetic, sets the pace. Here a block computes a BM×BN tile of C with (BM/TM)·(BN/TN)
// threads, each owning TM×TN accumulators. For every k of a BK-deep slice staged in shared
// memory, a thread loads TM values of A's column k and TN values of B's row k into registers
// and adds their outer product to its tile: TM + TN loads feed TM·TN FMAs. With 8×8 that is
// 16 loads for 64 FMAs instead of 128, and each value loaded from global memory serves BN
// (for A) or BM (for B) dot products, not TILE.
//
// Details that keep the arithmetic units fed:
// - A's tile is stored transposed (As[k][m]), so a thread's TM values of column k are adjacent
//   and, like B's TN values of row k, arrive in 16-byte loads (LDS.128).
// - Threads are arranged warp by warp: each warp owns a WM×WN region of the block tile, and
//   its 32 threads split that region. A warp then reads only WM values of A and WN of B per k,
//   and a warp whose region lies wholly outside C (in an edge tile) skips the arithmetic.
// - A thread's tile is not one contiguous block: it is TM/4 × TN/4 pieces of 4×4, spread
//   4·WM/TM rows and 4·WN/TN columns apart, so the 16-byte reads of neighbouring threads are
//   adjacent and a warp's reads of shared memory cause almost no bank conflicts (the chapter
//   shows the counters).
// - Global loads are 16-byte (float4) where the rows allow: inside the matrices when K and N are
//   both multiples of 4, at the edges for each matrix whose own row length is (K for A, N for
//   B); a guarded scalar path does the rest, and past the edge the loads give 0.
// - __launch_bounds__ tells the compiler the block size and how many blocks should fit on an SM
//   (MINB), so it budgets registers for that occupancy.
// - A slice wholly inside A and B, every slice but the edge tiles' and a last partial one, is
//   fetched with no bounds checks (fetch_inside), in one copy of the loads per row length.
//
// stages/ builds this kernel up one idea at a time (--stage NAME); docs/src/step05-stages.md
// measures each.
//
// What it buys: most of the distance to cuBLAS SGEMM (docs/src/step05.md measures it), with the
// tuned 128×128×16 block tile, 64×32 warp regions and 8×8 thread tiles. The loads of the next
// slice still wait behind a barrier; step 06 overlaps them.

// BM, BN, BK, WM, WN, TM, TN, MINB are set at compile time (-D NAME=value) from the step's lib.rs.

// ANCHOR: constants
constexpr int WARPS_N = BN / WN;  // warps across the block tile
constexpr int THREADS = (BM / WM) * WARPS_N * 32;
constexpr int THREADS_N = WN / TN;  // threads across a warp's region
// A thread's rows (columns) come in runs of 4 when TM (TN) allows 16-byte loads, else singly.
constexpr int VM = (TM % 4 == 0) ? 4 : 1;
constexpr int VN = (TN % 4 == 0) ? 4 : 1;
// 4-element pieces of the A and B tiles, and how many each thread copies.
constexpr int A_PIECES = BM * BK / 4;
constexpr int B_PIECES = BK * BN / 4;
constexpr int A_LOADS = (A_PIECES + THREADS - 1) / THREADS;
constexpr int B_LOADS = (B_PIECES + THREADS - 1) / THREADS;
// ANCHOR_END: constants

// ANCHOR: helpers
// ANCHOR: layout
// Row (within the block tile) of a thread's i-th accumulator row, given its first row r0;
// likewise for columns.
__device__ __forceinline__ int tile_row(int i, int r0) {
    return r0 + (i / VM) * (VM * (WM / TM)) + i % VM;
}
__device__ __forceinline__ int tile_col(int j, int c0) {
    return c0 + (j / VN) * (VN * (WN / TN)) + j % VN;
}
// ANCHOR_END: layout

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
// acc += the BK outer products of the staged slice: per k, TM values of A's column k times
// TN values of B's row k.
__device__ __forceinline__ void compute_tile(const float (*As)[BM], const float (*Bs)[BN], int r0,
                                             int c0, float (&acc)[TM][TN]) {
    // TODO 1: room for what the thread reads at one k: its TM values of A's column and its
    // TN values of B's row. They must stay in registers, not spill to local memory: what does
    // that ask of every loop that indexes them?
#pragma unroll
    for (int k = 0; k < BK; ++k) {
        // TODO 2: the thread's TM values of A's column k. A's tile is stored transposed, so
        // column k is As[k], and tile_row says where the thread's i-th row lies in it. Where
        // those rows come in runs of four (VM), read each run in one 16-byte load, not four.

        // TODO 3: its TN values of B's row k, in the same way (tile_col, VN).

        // TODO 4: the outer product of the two into acc: each of the TM·TN sums takes one FMA.
    }
}
// ANCHOR_END: compute

// ANCHOR: kernel
extern "C" __global__ void __launch_bounds__(THREADS, MINB)
    matmul(int M, int N, int K, const float* A, const float* B, float* C) {
    // The A tile (transposed, BK×BM) and the B tile (BK×BN) in dynamic shared memory.
    extern __shared__ __align__(16) float smem[];
    float (*As)[BM] = reinterpret_cast<float (*)[BM]>(smem);
    float (*Bs)[BN] = reinterpret_cast<float (*)[BN]>(smem + BK * BM);

    // The warp's region of the block tile, and the thread's first row and column in it.
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    int r0 = (warp / WARPS_N) * WM + (lane / THREADS_N) * VM;
    int c0 = (warp % WARPS_N) * WN + (lane % THREADS_N) * VN;
    int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    // Uniform across the warp: its region holds at least one element of C.
    bool active = row0 + (warp / WARPS_N) * WM < M && col0 + (warp % WARPS_N) * WN < N;

    float acc[TM][TN] = {};
    float4 a_next[A_LOADS], b_next[B_LOADS];

    for (int k0 = 0; k0 < K; k0 += BK) {
        fetch_tiles(A, B, M, N, K, row0, col0, k0, a_next, b_next);
        store_tiles(As, Bs, a_next, b_next);
        // The tiles are complete before anyone reads them...
        __syncthreads();
        if (active) compute_tile(As, Bs, r0, c0, acc);
        // ...and everyone has finished reading them before the next copy overwrites them.
        __syncthreads();
    }

    // Write the tile back: 16-byte stores where a run of 4 columns is inside C and aligned.
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        int row = row0 + tile_row(i, r0);
        if (row >= M) continue;
#pragma unroll
        for (int j = 0; j < TN; j += VN) {
            int col = col0 + tile_col(j, c0);
            if constexpr (VN == 4) {
                if (N % 4 == 0 && col + 3 < N) {
                    *reinterpret_cast<float4*>(&C[(offset_t)row * N + col]) =
                        make_float4(acc[i][j + 0], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]);
                    continue;
                }
            }
#pragma unroll
            for (int v = 0; v < VN; ++v) {
                if (col + v < N) C[(offset_t)row * N + col + v] = acc[i][j + v];
            }
        }
    }
}
// ANCHOR_END: kernel

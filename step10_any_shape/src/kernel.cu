// Step 10: any shape. Step 06's kernel, unchanged in its inner loop, with the problem cut per
// shape on the host: which block tile, how many slices of K, and whether blocks share tiles.
//
// Idea: step 06 is fast where its 128×256 tiles fill the SMs many times over. Where the grid has
// few tiles (small squares, one short side) most SMs idle, and where K is long each tile is one
// long serial sum. The host (lib.rs, `choose`) picks a smaller tile where that makes more tiles,
// splits K where even that leaves the SMs short (grid.z blocks per tile, each over its own slices
// of K, written into their own slice of a workspace that sum_slices then adds into C in order of
// z: the same sum in every run, no atomics), and shares a part-filled last wave slice by slice
// (Stream-K, from step 06's variant). Rows that are not 16-byte multiples are padded by the launch
// or read as they are; products with a short side or a short K get kernels of their own.
//
// What it buys: docs/src/step10.md measures each decision over the suite of shapes
// (`compare --suite`); the inner loop, `multiply`, is step 06's.

// BM, BN, BK, WM, WN, TM, TN, MINB, PATH (and SPLIT, SHARE and PAD, which only the launch reads)
// are set at compile time (-D NAME=value), per shape, by the step's lib.rs; SHARED_TILES_MAX, the
// size of the table through which blocks sharing a tile take turns, by common.

// ANCHOR: constants
constexpr int WARPS_N = BN / WN;  // warps across the block tile
constexpr int THREADS = PATH == 0 ? (BM / WM) * WARPS_N * 32 : 256;  // the short side's blocks: 256
// Blocks an SM must hold: MINB for the tiles; of the short side's, which are bound by memory, three
// of few rows (768 threads for loads in flight, 85 registers each: room for 8 rows × 4 sums) and
// two of few columns (128 registers each: room for 4 rows × 8 sums, or 4 rows of 16 columns of B);
// two of short K (128 registers each: room for 16 rows of B × 4 columns).
constexpr int BLOCKS_PER_SM = PATH == 0 ? MINB : PATH == 1 ? 3 : 2;
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
// Row (within the block tile) of a thread's i-th accumulator row, given its first row r0;
// likewise for columns.
__device__ __forceinline__ int tile_row(int i, int r0) {
    return r0 + (i / VM) * (VM * (WM / TM)) + i % VM;
}
__device__ __forceinline__ int tile_col(int j, int c0) {
    return c0 + (j / VN) * (VN * (WN / TN)) + j % VN;
}

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
    float a[TM], b[TN];
#pragma unroll
    for (int k = 0; k < BK; ++k) {
#pragma unroll
        for (int i = 0; i < TM; i += VM) {
            if constexpr (VM == 4) {
                float4 v = *reinterpret_cast<const float4*>(&As[k][tile_row(i, r0)]);
                a[i + 0] = v.x; a[i + 1] = v.y; a[i + 2] = v.z; a[i + 3] = v.w;
            } else {
                a[i] = As[k][tile_row(i, r0)];
            }
        }
#pragma unroll
        for (int j = 0; j < TN; j += VN) {
            if constexpr (VN == 4) {
                float4 v = *reinterpret_cast<const float4*>(&Bs[k][tile_col(j, c0)]);
                b[j + 0] = v.x; b[j + 1] = v.y; b[j + 2] = v.z; b[j + 3] = v.w;
            } else {
                b[j] = Bs[k][tile_col(j, c0)];
            }
        }
#pragma unroll
        for (int i = 0; i < TM; ++i) {
#pragma unroll
            for (int j = 0; j < TN; ++j) {
                acc[i][j] += a[i] * b[j];
            }
        }
    }
}
// ANCHOR_END: compute

// ANCHOR: schedule
// Which tiles a block multiplies (the launch's layout is chosen on the host, by common's
// stream_k_layout). The grid
// is tiles_n wide; its first `whole` rows of blocks take one tile each, the tile under them. The
// blocks of the other rows share the remaining tile rows slice by slice ("Stream-K"): the shared
// tiles' slices of K are dealt out in order, the same number to each block, so a tile may be cut
// between blocks, and a last wave that would have run part-filled is spread over every SM.

// A tile, or the part of one between two slices of K.
struct Piece {
    int row0, col0;  // the tile's first row and column
    int k_lo, k_hi;  // the columns of A (rows of B) it covers: [k_lo, k_hi)
    int shared;      // the tile's place among the shared tiles when it is cut, else -1
};

// A shared block's pieces, in the order it computes them; returns how many (0, 1 or 2). The host
// gives at least as many sharers as shared tiles, so a share is at most one tile long: the end of
// one tile and the start of the next. The start goes first, so that the blocks ending a tile
// seldom wait for it (see take_turn).
__device__ __forceinline__ int my_share(int M, int N, int K, int whole, Piece* p)
{
    int tiles_n = gridDim.x, tiles_m = (M + BM - 1) / BM, slices = (K + BK - 1) / BK;
    int first = whole * tiles_n;  // the first shared tile
    long long me = (long long)(blockIdx.y - whole) * gridDim.x + blockIdx.x;
    long long sharers = (long long)(gridDim.y - whole) * gridDim.x;
    long long left = (long long)(tiles_m - whole) * tiles_n * slices;
    long long lo = left * me / sharers, hi = left * (me + 1) / sharers;
    // A share longer than a tile, or more shared tiles than turns in the table: the host's layout
    // is wrong.
    if (hi - lo > slices || (long long)(tiles_m - whole) * tiles_n > SHARED_TILES_MAX) __trap();
    auto piece = [&](long long t, long long s_lo, long long s_hi) {
        bool cut = s_lo > 0 || s_hi < slices;
        return Piece{int((first + t) / tiles_n) * BM, int((first + t) % tiles_n) * BN,
                     int(s_lo) * BK, int(s_hi) * BK, cut ? int(t) : -1};
    };
    if (lo == hi) return 0;
    long long t_lo = lo / slices, t_hi = (hi - 1) / slices;
    if (t_lo == t_hi) {
        p[0] = piece(t_lo, lo - t_lo * slices, hi - t_lo * slices);
        return 1;
    }
    p[0] = piece(t_hi, 0, hi - t_hi * slices);
    p[1] = piece(t_lo, lo - t_lo * slices, slices);
    return 2;
}

// Where each cut tile's sum in C has got to: the k its next piece starts at. The tile's last
// piece sets it back to 0, ready for the next launch. Indexed by the tile's place among the
// shared tiles.
__device__ int summed_to[SHARED_TILES_MAX];

// Where a tile starts: from the block's place in the grid for a whole tile, or read from shared
// memory at each use for a piece, so that it holds no registers through the loop, which has none
// to spare.
struct GridTile {
    __device__ int row0() const { return blockIdx.y * BM; }
    __device__ int col0() const { return blockIdx.x * BN; }
};
struct ListedTile {
    const Piece* p;
    __device__ int row0() const { return p->row0; }
    __device__ int col0() const { return p->col0; }
};
// ANCHOR_END: schedule

// ANCHOR: product
// acc = the tile's product over the columns [k_lo, k_hi) of A, for the thread of warp `warp`
// whose first row and column in the tile are r0 and c0.
template <class Tile>
__device__ __forceinline__ void multiply(Tile tile, int k_lo, int k_hi, int M, int N, int K,
                                         const float* A, const float* B, float* smem, int warp,
                                         int r0, int c0, float (&acc)[TM][TN]) {
    // Two buffers of the A tile (transposed, BK×BM) and the B tile (BK×BN) in dynamic shared
    // memory.
    float (*As)[BK][BM] = reinterpret_cast<float (*)[BK][BM]>(smem);
    float (*Bs)[BK][BN] = reinterpret_cast<float (*)[BK][BN]>(smem + 2 * BK * BM);

    // Uniform across the warp: its region holds at least one element of C.
    bool active =
        tile.row0() + (warp / WARPS_N) * WM < M && tile.col0() + (warp % WARPS_N) * WN < N;

#pragma unroll
    for (int i = 0; i < TM; ++i) {
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
    }
    float4 a_next[A_LOADS], b_next[B_LOADS];

    fetch_tiles(A, B, M, N, K, tile.row0(), tile.col0(), k_lo, a_next, b_next);
    store_tiles(As[0], Bs[0], a_next, b_next);
    __syncthreads();

    int buf = 0;
    for (int k0 = k_lo; k0 < k_hi; k0 += BK) {
        bool more = k0 + BK < k_hi;
        // Issue the next slice's loads first: they are in flight during the FMAs below.
        if (more) fetch_tiles(A, B, M, N, K, tile.row0(), tile.col0(), k0 + BK, a_next, b_next);
        if (active) compute_tile(As[buf], Bs[buf], r0, c0, acc);
        // The other buffer was last read before the previous barrier: it is free to fill.
        if (more) store_tiles(As[buf ^ 1], Bs[buf ^ 1], a_next, b_next);
        __syncthreads();
        buf ^= 1;
    }
}
// ANCHOR_END: product

// ANCHOR: write_back
// C's tile = acc, or C's tile += acc (add): 16-byte accesses where a run of 4 columns is inside C
// and aligned. Added values are read from L2 (__ldcg), where other blocks' writes land.
__device__ __forceinline__ void write_back(float* C, int M, int N, int row0, int col0, int r0,
                                           int c0, const float (&acc)[TM][TN], bool add) {
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        int row = row0 + tile_row(i, r0);
        if (row >= M) continue;
#pragma unroll
        for (int j = 0; j < TN; j += VN) {
            int col = col0 + tile_col(j, c0);
            if constexpr (VN == 4) {
                if (N % 4 == 0 && col + 3 < N) {
                    float4* c = reinterpret_cast<float4*>(&C[(offset_t)row * N + col]);
                    float4 v =
                        make_float4(acc[i][j + 0], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]);
                    if (add) {
                        float4 old = __ldcg(c);
                        v.x += old.x; v.y += old.y; v.z += old.z; v.w += old.w;
                    }
                    *c = v;
                    continue;
                }
            }
#pragma unroll
            for (int v = 0; v < VN; ++v) {
                float* c = &C[(offset_t)row * N + col + v];
                if (col + v < N) *c = add ? __ldcg(c) + acc[i][j + v] : acc[i][j + v];
            }
        }
    }
}

// Writes a piece into C in its turn. The first piece of a tile stores its sum; each later one
// waits until the pieces before it are in C, then adds to them, so the tile's sum is formed in the
// order of k, the same in every run. Earlier pieces belong to lower-numbered blocks, which GPUs
// start no later than this one (an assumption CUDA does not promise, but Stream-K codes rely
// on): the wait ends.
__device__ __forceinline__ void take_turn(float* C, int M, int N, int K, const Piece& p, int r0,
                                          int c0, const float (&acc)[TM][TN]) {
    bool add = p.k_lo > 0;
    if (add) {
        if (threadIdx.x == 0) {
            while (atomicAdd(&summed_to[p.shared], 0) != p.k_lo) {}
            __threadfence();
        }
        __syncthreads();
    }
    write_back(C, M, N, p.row0, p.col0, r0, c0, acc, add);
    if (p.shared >= 0) {
        __syncthreads();  // every thread's part of the tile is written
        if (threadIdx.x == 0) {
            __threadfence();  // ... and visible to every SM before the turn passes
            atomicExch(&summed_to[p.shared], p.k_hi < K ? p.k_hi : 0);
        }
    }
}
// ANCHOR_END: write_back

// ANCHOR: split
// ANCHOR: sum_slices
// A split of K: this block's share of the tile's slices of K when grid.z blocks split them, the
// same number (give or take one) to each, in order of z.
__device__ __forceinline__ void my_split(int K, int& k_lo, int& k_hi)
{
    long long slices = (K + BK - 1) / BK;
    k_lo = int(slices * blockIdx.z / gridDim.z) * BK;
    k_hi = min(K, int(slices * (blockIdx.z + 1) / gridDim.z) * BK);
}

// C = the sum of the `slices` partial products in `partials` (each M×N, one after another), added
// in order of z: every element's sum is formed the same way in every run.
extern "C" __global__ void sum_slices(const float* partials, float* C, long long count, int slices)
{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count;
         i += (long long)gridDim.x * blockDim.x) {
        float sum = partials[i];
        for (int z = 1; z < slices; ++z) sum += partials[z * count + i];
        C[i] = sum;
    }
}
// ANCHOR_END: sum_slices

// The same sum for a C of few elements (under 4096), whose threads in sum_slices would each walk
// many slices while most of the GPU waits. A block's 256 threads take `width` neighbouring
// elements in `groups` groups (a power of two, at most 8 and at most `slices`, as many as the grid
// has threads for): group g adds slices g, g + groups, g + 2·groups, … in that order, up to eight
// loads in flight at once, a warp reading 32 neighbouring elements of one slice; group 0 then adds
// the other groups' sums in order of g. Every element's sum is formed the same way in every run.
extern "C" __global__ void sum_few(const float* partials, float* C, long long count, int slices)
{
    __shared__ float group_sums[256];  // the launch's 256 threads
    int groups = 1;
    while (groups < 8 && 2 * groups <= slices &&
           (long long)gridDim.x * (256 / (2 * groups)) >= count)
        groups *= 2;
    int width = 256 / groups, g = threadIdx.x / width;
    for (long long first = blockIdx.x * (long long)width; first < count;
         first += (long long)gridDim.x * width) {
        long long i = first + threadIdx.x % width;
        float sum = 0.0f;
        if (i < count) {
            int z = g;
            sum = partials[z * count + i];
            z += groups;
            for (; z < slices; z += 8 * groups) {
                float part[8];
#pragma unroll
                for (int j = 0; j < 8; ++j)
                    part[j] =
                        z + j * groups < slices ? partials[(z + j * groups) * count + i] : 0.0f;
#pragma unroll
                for (int j = 0; j < 8; ++j)
                    if (z + j * groups < slices) sum += part[j];
            }
        }
        group_sums[threadIdx.x] = sum;  // every thread of the block meets at the barriers
        __syncthreads();
        for (int h = 1; h < groups && g == 0; ++h) sum += group_sums[h * width + threadIdx.x];
        __syncthreads();
        if (i < count && g == 0) C[i] = sum;
    }
}

// ANCHOR_END: split

// The products with a short side or a short K: src/short.cuh.
#include "short.cuh"

// ANCHOR: kernel
extern "C" __global__ void __launch_bounds__(THREADS, BLOCKS_PER_SM)
    matmul(int M, int N, int K, const float* A, const float* B, float* C, int whole,
           float* partials) {
    extern __shared__ __align__(16) float smem[];
    float acc[TM][TN];
    // The warp's region of the block tile, and the thread's first row and column in it.
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    int r0 = (warp / WARPS_N) * WM + (lane / THREADS_N) * VM;
    int c0 = (warp % WARPS_N) * WN + (lane % THREADS_N) * VN;

    if constexpr (PATH == 1 || PATH == 2) {  // a short side: its own kernel, into C or this block's
                                             // slice of partials
        short_side(M, N, K, A, B,
                   gridDim.z > 1 ? partials + static_cast<long long>(blockIdx.z) * M * N : C);
        return;
    }
    if constexpr (PATH == 3) {  // a short K: its own kernel, K whole, straight into C
        short_k_for(M, N, K, A, B, C);
        return;
    }
    if (gridDim.z > 1) {  // K split: the tile over this block's slices, into its slice of partials
        int k_lo, k_hi;
        my_split(K, k_lo, k_hi);
        multiply(GridTile{}, k_lo, k_hi, M, N, K, A, B, smem, warp, r0, c0, acc);
        write_back(partials + (long long)blockIdx.z * M * N, M, N, blockIdx.y * BM, blockIdx.x * BN,
                   r0, c0, acc, false);
        return;
    }
    if (blockIdx.y < whole) {  // one whole tile
        multiply(GridTile{}, 0, K, M, N, K, A, B, smem, warp, r0, c0, acc);
        write_back(C, M, N, blockIdx.y * BM, blockIdx.x * BN, r0, c0, acc, false);
        return;
    }
    __shared__ Piece share[2];
    __shared__ int pieces;
    if (threadIdx.x == 0) pieces = my_share(M, N, K, whole, share);
    __syncthreads();
    for (int q = 0; q < pieces; ++q) {
        multiply(ListedTile{&share[q]}, share[q].k_lo, share[q].k_hi, M, N, K, A, B, smem, warp, r0,
                 c0, acc);
        take_turn(C, M, N, K, share[q], r0, c0, acc);
    }
}
// ANCHOR_END: kernel

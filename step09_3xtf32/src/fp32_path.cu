// The FP32 path of steps 09 and 11: the rows of A and the columns of B that a step's own
// arithmetic cannot carry (NaN and infinities, magnitudes its scaling cannot hold), multiplied
// in FP32 by a tiled kernel instead of one thread per element.
//
// The step marks them (marks[i] for row i of A, marks[M + j] for column j of B; not zero: the
// FP32 path). list_paths turns the marks into lists on the device, and two launches of one
// tiled kernel take them, their grids sized for every row and their blocks past the lists'
// counts leaving at once, so the host never waits to learn how many there are:
//
//   fp32_rows: C[marked rows, every column]      (A's rows gathered, B as it is)
//   fp32_cols: C[unmarked rows, marked columns]  (B's columns gathered)
//
// and, where at most FEW rows are marked, fp32_rows_few in place of fp32_rows: a thread a
// column of C and a sum a marked row, B read once, so that a handful of rows does not cost
// whole 128-row tiles; likewise fp32_cols_few where at most FEW columns are marked, A read once.
//
// The tiled kernel is step 06's (a 128×256 block tile of 16-deep slices, two shared-memory
// buffers, 8×8 thread tiles in 128×16 warp regions), its loads and stores taken through the
// lists, and, as in step 06, a slice that lies wholly inside the listed rows and B loaded with no
// checks. Where the lists are short (a few rows or columns: few tiles), one tile would walk all
// of K on one multiprocessor while the others idle, so the blocks split K instead: S blocks a
// tile, each summing one piece of K into a workspace, and the last of them to finish adds the S
// pieces in order and writes C. Each element is the FP32 sum of its products in order within
// each piece, and of the pieces in order, whichever block computes it, so C is the same from run
// to run although the lists' order and the blocks' are not.

constexpr int BM = 128, BN = 256, BK = 16, WM = 128, WN = 16, TM = 8, TN = 8;
constexpr int WARPS_N = BN / WN;
constexpr int THREADS = (BM / WM) * WARPS_N * 32;
constexpr int THREADS_N = WN / TN;
constexpr int A_PIECES = BM * BK / 4;  // 4-float pieces of a slice of A, one a thread
constexpr int B_PIECES = BK * BN / 4;  // and of B, two a thread
constexpr int A_LOADS = A_PIECES / THREADS;
constexpr int B_LOADS = B_PIECES / THREADS;
static_assert(A_PIECES % THREADS == 0 && B_PIECES % THREADS == 0, "whole pieces a thread");
// Split K while tiles × S stays within WORK blocks (about two a multiprocessor), in at most
// SPLITS pieces of at least MIN_PIECE.
constexpr int WORK = 256, SPLITS = 16, MIN_PIECE = 256;
// The few-rows kernel: at most FEW marked rows, a block of FEW_COLS threads (a column each),
// slices of FEW_DEPTH of K staged in shared memory.
constexpr int FEW = 16, FEW_COLS = 256, FEW_DEPTH = 64;
// The few-columns kernel: a block of FEW_COLS threads takes FEW_ROWS rows, a thread a row and
// eight of the marked columns.
constexpr int FEW_ROWS = 128;
static_assert(FEW_COLS == FEW_ROWS * FEW / 8, "a thread a row and eight columns");

// lists: the marked rows (M ints), the unmarked rows (M), the marked columns (N); counts: how
// many of each (zeroed before). The order within a list is the atomics' and changes nothing.
extern "C" __global__ void list_paths(const int* marks, int* lists, int* counts, int M, int N)
{
    for (int v = blockIdx.x * blockDim.x + threadIdx.x; v < M + N; v += gridDim.x * blockDim.x) {
        if (v < M) {
            if (marks[v]) lists[atomicAdd(&counts[0], 1)] = v;
            else lists[M + atomicAdd(&counts[1], 1)] = v;
        } else if (marks[v]) {
            lists[2 * M + atomicAdd(&counts[2], 1)] = v - M;
        }
    }
}

// Every row of A marked for the FP32 path (marks[i] = 1, i < M): where a step's own arithmetic
// cannot reach FP32's accuracy at this shape (step 09 at short K), all of C is the FP32 path's.
extern "C" __global__ void mark_every_row(int* marks, int M)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < M; i += gridDim.x * blockDim.x) {
        marks[i] = 1;
    }
}

// Row (column) of the block tile of a thread's i-th accumulator row (column), as in step 06.
__device__ __forceinline__ int tile_row(int i, int r0) {
    return r0 + (i / 4) * (4 * (WM / TM)) + i % 4;
}
__device__ __forceinline__ int tile_col(int j, int c0) {
    return c0 + (j / 4) * (4 * (WN / TN)) + j % 4;
}

// C[rows[r], cols[c]] = Σ_k A[rows[r], k]·B[k, cols[c]] for r below *row_count and c below
// *col_count; cols == nullptr: every column, c itself. Where the lists make enough tiles to fill
// WORK blocks, or K is shorter than two pieces of MIN_PIECE, S = 1: the kernel with SPLIT false
// computes them, on a grid with a block for every tile of C, block (x, y) tile (x, y), and the
// one with SPLIT true leaves at once. Otherwise the other way round: the split kernel's grid has
// SPLITS blocks for every tile of C, up to WORK, and block b takes piece b % S of K for tile b / S
// into part (a piece a block); the last of a tile's S blocks adds the pieces. done holds a count
// a tile, zero between launches (the last block resets it). Blocks past the work leave at once.
template <bool LISTED_COLS, bool SPLIT>
__device__ __forceinline__ void listed_product(const float* A, const float* B, float* C,
                                               const int* rows, const int* row_count,
                                               const int* cols, const int* col_count, int N,
                                               int K, float* part, int* done) {
    int R = *row_count, NC = LISTED_COLS ? *col_count : N;
    if (LISTED_COLS ? NC <= FEW : R <= FEW) return;  // fp32_cols_few's, fp32_rows_few's
    int tiles_x = (NC + BN - 1) / BN, tiles = (R + BM - 1) / BM * tiles_x;
    int S = min(min(SPLITS, max(1, K / MIN_PIECE)), max(1, WORK / max(tiles, 1)));
    if (SPLIT != (S > 1)) return;
    int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN, k_begin = 0, k_end = K;
    // The split kernel's tile and piece; what its end needs is kept in shared memory, as the
    // main loop runs short of registers.
    __shared__ int tile_of;
    if (SPLIT) {
        int b = blockIdx.x;
        if (b >= tiles * S) return;
        int t = b / S, depth = ((K + S - 1) / S + BK - 1) / BK * BK;  // whole slices a piece
        row0 = t / tiles_x * BM, col0 = t % tiles_x * BN;
        k_begin = b % S * depth, k_end = min(K, k_begin + depth);
        if (threadIdx.x == 0) tile_of = t;
    }
    if (row0 >= R || col0 >= NC) return;

    extern __shared__ __align__(16) float smem[];
    float (*As)[BK][BM] = reinterpret_cast<float (*)[BK][BM]>(smem);
    float (*Bs)[BK][BN] = reinterpret_cast<float (*)[BK][BN]>(smem + 2 * BK * BM);
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    int r0 = (warp / WARPS_N) * WM + (lane / THREADS_N) * 4;
    int c0 = (warp % WARPS_N) * WN + (lane % THREADS_N) * 4;

    // The thread's piece of A's slice: one row, four columns from ka; nullptr past the list.
    int a_tile_row = threadIdx.x / (BK / 4), ka = 4 * (threadIdx.x % (BK / 4));
    const float* a_row = row0 + a_tile_row < R
                             ? A + static_cast<long long>(rows[row0 + a_tile_row]) * K
                             : nullptr;
    // Its pieces of B's slice: rows kb and kb + 8 of the slice, the same four columns (-1 past
    // the list).
    static_assert(THREADS % (BN / 4) == 0, "a thread's columns are the same in every piece");
    int kb = threadIdx.x / (BN / 4), cb = 4 * (threadIdx.x % (BN / 4));
    // The block's columns of C and B (-1 past the list), in shared memory for a listed set.
    __shared__ int col_of[LISTED_COLS ? BN : 1];
    if (LISTED_COLS && threadIdx.x < BN)
        col_of[threadIdx.x] = col0 + threadIdx.x < NC ? cols[col0 + threadIdx.x] : -1;
    __syncthreads();
    auto column = [&](int c) { return LISTED_COLS ? col_of[c] : col0 + c < NC ? col0 + c : -1; };
    bool vec_a = K % 4 == 0, vec_b = !LISTED_COLS && N % 4 == 0;

    // A slice inside the lists' rows, the columns and the piece of K, with rows that start on
    // 16-byte boundaries, needs no check: one 16-byte load a piece, as in step 06. The tile's rows
    // and columns are decided once; the depth, a slice at a time.
    bool whole = row0 + BM <= R && vec_a && !LISTED_COLS && vec_b && col0 + BN <= N;
    const float* b_at = B + static_cast<long long>(kb) * N + col0 + cb;

    float4 a_next, b_next[B_LOADS];
    auto fetch = [&](int k0) {
        if (whole && k0 + BK <= k_end) {
            a_next = __ldg(reinterpret_cast<const float4*>(a_row + k0 + ka));
#pragma unroll
            for (int i = 0; i < B_LOADS; ++i) {
                long long k = k0 + i * (THREADS / (BN / 4));
                b_next[i] = __ldg(reinterpret_cast<const float4*>(b_at + k * N));
            }
            return;
        }
        a_next = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (a_row) {
            int k = k0 + ka;
            if (vec_a && k + 3 < k_end) {
                a_next = __ldg(reinterpret_cast<const float4*>(a_row + k));
            } else {
                if (k + 0 < k_end) a_next.x = __ldg(a_row + k + 0);
                if (k + 1 < k_end) a_next.y = __ldg(a_row + k + 1);
                if (k + 2 < k_end) a_next.z = __ldg(a_row + k + 2);
                if (k + 3 < k_end) a_next.w = __ldg(a_row + k + 3);
            }
        }
#pragma unroll
        for (int i = 0; i < B_LOADS; ++i) {
            int k = k0 + kb + i * (THREADS / (BN / 4));
            b_next[i] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            if (k >= k_end) continue;
            const float* b_row = B + static_cast<long long>(k) * N;
            if (vec_b && column(cb + 3) >= 0) {
                b_next[i] = __ldg(reinterpret_cast<const float4*>(b_row + col0 + cb));
            } else {
                int c;
                if ((c = column(cb + 0)) >= 0) b_next[i].x = __ldg(b_row + c);
                if ((c = column(cb + 1)) >= 0) b_next[i].y = __ldg(b_row + c);
                if ((c = column(cb + 2)) >= 0) b_next[i].z = __ldg(b_row + c);
                if ((c = column(cb + 3)) >= 0) b_next[i].w = __ldg(b_row + c);
            }
        }
    };
    auto store = [&](int buf) {
        As[buf][ka + 0][a_tile_row] = a_next.x;
        As[buf][ka + 1][a_tile_row] = a_next.y;
        As[buf][ka + 2][a_tile_row] = a_next.z;
        As[buf][ka + 3][a_tile_row] = a_next.w;
#pragma unroll
        for (int i = 0; i < B_LOADS; ++i)
            *reinterpret_cast<float4*>(&Bs[buf][kb + i * (THREADS / (BN / 4))][cb]) = b_next[i];
    };

    float acc[TM][TN] = {};
    fetch(k_begin);
    store(0);
    __syncthreads();
    int buf = 0;
    for (int k0 = k_begin; k0 < k_end; k0 += BK) {
        bool more = k0 + BK < k_end;
        if (more) fetch(k0 + BK);
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float a[TM], b[TN];
#pragma unroll
            for (int i = 0; i < TM; i += 4) {
                float4 v = *reinterpret_cast<const float4*>(&As[buf][k][tile_row(i, r0)]);
                a[i] = v.x, a[i + 1] = v.y, a[i + 2] = v.z, a[i + 3] = v.w;
            }
#pragma unroll
            for (int j = 0; j < TN; j += 4) {
                float4 v = *reinterpret_cast<const float4*>(&Bs[buf][k][tile_col(j, c0)]);
                b[j] = v.x, b[j + 1] = v.y, b[j + 2] = v.z, b[j + 3] = v.w;
            }
#pragma unroll
            for (int i = 0; i < TM; ++i) {
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
            }
        }
        if (more) store(buf ^ 1);
        __syncthreads();
        buf ^= 1;
    }

    if (SPLIT) {
        // This piece into the workspace; the last of the tile's S blocks adds them in order.
        int t = tile_of;
        float* mine = part + static_cast<long long>(blockIdx.x) * BM * BN;  // piece b of tile t
#pragma unroll
        for (int i = 0; i < TM; ++i) {
#pragma unroll
            for (int j = 0; j < TN; ++j)
                mine[tile_row(i, r0) * BN + tile_col(j, c0)] = acc[i][j];
        }
        __threadfence();
        __syncthreads();
        __shared__ bool last;
        if (threadIdx.x == 0) last = atomicAdd(&done[t], 1) == S - 1;
        __syncthreads();
        if (!last) return;
        if (threadIdx.x == 0) done[t] = 0;  // ready for the next launch
        __threadfence();
        const float* pieces = part + static_cast<long long>(t) * S * BM * BN;
#pragma unroll
        for (int i = 0; i < TM; ++i) {
#pragma unroll
            for (int j = 0; j < TN; ++j) {
                int at = tile_row(i, r0) * BN + tile_col(j, c0);
                float sum = __ldcg(pieces + at);
                for (int p = 1; p < S; ++p)
                    sum += __ldcg(pieces + static_cast<long long>(p) * BM * BN + at);
                acc[i][j] = sum;
            }
        }
    }

#pragma unroll
    for (int i = 0; i < TM; ++i) {
        int r = row0 + tile_row(i, r0);
        if (r >= R) continue;
        float* out = C + static_cast<long long>(rows[r]) * N;
#pragma unroll
        for (int j = 0; j < TN; j += 4) {
            int c = tile_col(j, c0);
            if (!LISTED_COLS && N % 4 == 0 && col0 + c + 3 < N) {
                *reinterpret_cast<float4*>(out + col0 + c) =
                    make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]);
                continue;
            }
#pragma unroll
            for (int v = 0; v < 4; ++v) {
                int n = column(c + v);
                if (n >= 0) out[n] = acc[i][j + v];
            }
        }
    }
}

// C[rows[r], every column] for the R ≤ FEW marked rows (the tiled kernels leave them): block b
// takes the FEW_COLS columns of strip b / S and piece b % S of K, each thread one column and a sum
// for each row, in order of k, with A's rows staged FEW_DEPTH at a time. B is read once over all
// the blocks. K is split as in the tiled kernels (S pieces a strip, within WORK blocks), each
// piece into part, and the last of a strip's blocks adds them in order. Blocks past the work, and
// all where more than FEW rows are marked, leave at once.
extern "C" __global__ void __launch_bounds__(FEW_COLS)
    fp32_rows_few(const float* A, const float* B, float* C, const int* lists, int* counts,
                  float* part, int M, int N, int K) {
    int R = counts[0], strips = (N + FEW_COLS - 1) / FEW_COLS;
    if (R == 0 || R > FEW) return;
    int S = min(min(SPLITS, max(1, K / MIN_PIECE)), max(1, WORK / strips));
    int b = blockIdx.x, strip = b / S;
    if (strip >= strips) return;
    int depth = ((K + S - 1) / S + FEW_DEPTH - 1) / FEW_DEPTH * FEW_DEPTH;
    int k_begin = (b % S) * depth;
    int k_end = min(K, k_begin + depth), col = strip * FEW_COLS + threadIdx.x;
    __shared__ float As[FEW][FEW_DEPTH];
    float acc[FEW] = {};
    for (int k0 = k_begin; k0 < k_end; k0 += FEW_DEPTH) {
        for (int e = threadIdx.x; e < FEW * FEW_DEPTH; e += FEW_COLS) {
            int r = e / FEW_DEPTH, k = k0 + e % FEW_DEPTH;
            As[r][e % FEW_DEPTH] =
                r < R && k < k_end ? __ldg(A + static_cast<long long>(lists[r]) * K + k) : 0.0f;
        }
        __syncthreads();
        if (col < N) {
            int depth_here = min(FEW_DEPTH, k_end - k0);
            const float* b_col = B + static_cast<long long>(k0) * N + col;
#pragma unroll 8
            for (int k = 0; k < depth_here; ++k) {
                float v = __ldg(b_col + static_cast<long long>(k) * N);
#pragma unroll
                for (int r = 0; r < FEW; ++r) acc[r] = fmaf(As[r][k], v, acc[r]);
            }
        }
        __syncthreads();
    }
    if (S > 1) {
        // This piece into the workspace (FEW sums a column); the last of the strip's S blocks
        // adds the pieces in order.
        float* mine = part + static_cast<long long>(b) * FEW * FEW_COLS + threadIdx.x;
#pragma unroll
        for (int r = 0; r < FEW; ++r) mine[r * FEW_COLS] = acc[r];
        __threadfence();
        __syncthreads();
        __shared__ bool last;
        int* done = counts + 3;
        if (threadIdx.x == 0) last = atomicAdd(&done[strip], 1) == S - 1;
        __syncthreads();
        if (!last) return;
        if (threadIdx.x == 0) done[strip] = 0;  // ready for the next launch
        __threadfence();
        const float* pieces =
            part + static_cast<long long>(strip) * S * FEW * FEW_COLS + threadIdx.x;
#pragma unroll
        for (int r = 0; r < FEW; ++r) {
            float sum = __ldcg(pieces + r * FEW_COLS);
            for (int q = 1; q < S; ++q) sum += __ldcg(pieces + (q * FEW + r) * FEW_COLS);
            acc[r] = sum;
        }
    }
    if (col >= N) return;
#pragma unroll
    for (int r = 0; r < FEW; ++r) {
        if (r < R) C[static_cast<long long>(lists[r]) * N + col] = acc[r];
    }
}

// C[rows[r], cols[c]] for the R unmarked rows and the NC ≤ FEW marked columns (the tiled
// kernels leave them): block b takes the FEW_ROWS rows of band b / S and piece b % S of K, thread
// t row t % FEW_ROWS of the band and eight columns from 8·(t / FEW_ROWS), with the band of A and
// the columns of B staged FEW_DEPTH of K at a time. A is read once over all the blocks. K is split
// and its pieces added as in fp32_rows_few.
extern "C" __global__ void __launch_bounds__(FEW_COLS)
    fp32_cols_few(const float* A, const float* B, float* C, const int* lists, int* counts,
                  float* part, int M, int N, int K) {
    int R = counts[1], NC = counts[2], bands = (R + FEW_ROWS - 1) / FEW_ROWS;
    if (R == 0 || NC == 0 || NC > FEW) return;
    const int *rows = lists + M, *cols = lists + 2 * M;
    int S = min(min(SPLITS, max(1, K / MIN_PIECE)), max(1, WORK / bands));
    int b = blockIdx.x, band = b / S;
    if (band >= bands) return;
    int depth = ((K + S - 1) / S + FEW_DEPTH - 1) / FEW_DEPTH * FEW_DEPTH;
    int k_first = (b % S) * depth;
    int k_last = min(K, k_first + depth);
    int r = threadIdx.x % FEW_ROWS, c0 = 8 * (threadIdx.x / FEW_ROWS), row = band * FEW_ROWS + r;
    __shared__ float As[FEW_DEPTH][FEW_ROWS + 1];  // the band of A, transposed (+1: no conflicts)
    __shared__ float Bs[FEW_DEPTH][FEW];
    float acc[8] = {};
    for (int k0 = k_first; k0 < k_last; k0 += FEW_DEPTH) {
        for (int e = threadIdx.x; e < FEW_ROWS * FEW_DEPTH; e += FEW_COLS) {
            int i = band * FEW_ROWS + e / FEW_DEPTH, k = k0 + e % FEW_DEPTH;
            As[e % FEW_DEPTH][e / FEW_DEPTH] =
                i < R && k < k_last ? __ldg(A + static_cast<long long>(rows[i]) * K + k) : 0.0f;
        }
        for (int e = threadIdx.x; e < FEW_DEPTH * FEW; e += FEW_COLS) {
            int c = e % FEW, k = k0 + e / FEW;
            Bs[e / FEW][c] =
                c < NC && k < k_last ? __ldg(B + static_cast<long long>(k) * N + cols[c]) : 0.0f;
        }
        __syncthreads();
        int depth_here = min(FEW_DEPTH, k_last - k0);
#pragma unroll 4
        for (int k = 0; k < depth_here; ++k) {
            float a = As[k][r];
#pragma unroll
            for (int j = 0; j < 8; ++j) acc[j] = fmaf(a, Bs[k][c0 + j], acc[j]);
        }
        __syncthreads();
    }
    if (S > 1) {
        // This piece into the workspace (eight sums a thread); the last of the band's S blocks
        // adds the pieces in order.
        float* mine = part + static_cast<long long>(b) * FEW_ROWS * FEW + c0 * FEW_ROWS + r;
#pragma unroll
        for (int j = 0; j < 8; ++j) mine[j * FEW_ROWS] = acc[j];
        __threadfence();
        __syncthreads();
        __shared__ bool last;
        int* done = counts + 3;
        if (threadIdx.x == 0) last = atomicAdd(&done[band], 1) == S - 1;
        __syncthreads();
        if (!last) return;
        if (threadIdx.x == 0) done[band] = 0;  // ready for the next launch
        __threadfence();
        const float* pieces =
            part + static_cast<long long>(band) * S * FEW_ROWS * FEW + c0 * FEW_ROWS + r;
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            float sum = __ldcg(pieces + j * FEW_ROWS);
            for (int piece = 1; piece < S; ++piece)
                sum += __ldcg(pieces + (piece * FEW + j) * FEW_ROWS);
            acc[j] = sum;
        }
    }
    if (row >= R) return;
    float* out = C + static_cast<long long>(rows[row]) * N;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
        if (c0 + j < NC) out[cols[c0 + j]] = acc[j];
    }
}

// The marked rows, every column. lists and counts as list_paths leaves them; after the three
// counts, WORK counts of finished pieces, zero. Each comes as two entries, unsplit and split.
#define FP32_PATH_ENTRY(NAME, LISTED, SPLIT, ROWS, ROW_COUNT, COLS, COL_COUNT)                  \
    extern "C" __global__ void __launch_bounds__(THREADS, 1)                                   \
        NAME(const float* A, const float* B, float* C, const int* lists, int* counts,         \
             float* part, int M, int N, int K) {                                              \
        listed_product<LISTED, SPLIT>(A, B, C, ROWS, ROW_COUNT, COLS, COL_COUNT, N, K, part,    \
                                      counts + 3);                                            \
    }
FP32_PATH_ENTRY(fp32_rows, false, false, lists, &counts[0], nullptr, nullptr)
FP32_PATH_ENTRY(fp32_rows_split, false, true, lists, &counts[0], nullptr, nullptr)
// The unmarked rows, the marked columns.
FP32_PATH_ENTRY(fp32_cols, true, false, lists + M, &counts[1], lists + 2 * M, &counts[2])
FP32_PATH_ENTRY(fp32_cols_split, true, true, lists + M, &counts[1], lists + 2 * M, &counts[2])

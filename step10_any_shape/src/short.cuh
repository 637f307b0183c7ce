// Step 10's kernels for a short side (PATH 1 and 2) and a short K (PATH 3), included by its kernel
// (src/kernel.cu) and by the hands-on starting file; matmul, below the include, calls them.

// ANCHOR: short_side
// A product with a short side: C of at most SHORT rows (PATH 1) or SHORT_COLS columns (PATH 2). A
// tile of 16 rows or more would compute rows that are not there; these kernels read the long
// operand once, in order, and each thread keeps only the sums it owns. K is split between grid.z
// blocks as the tiles split it, each block writing its own slice of `partials` for sum_slices to
// add in order of z, so every element is summed the same way in every run.
constexpr int SHORT = 8;         // the most rows of few rows (PATH 1)
constexpr int SHORT_COLS = 16;   // the most columns of few columns (PATH 2)
constexpr int SHORT_GROUPS = 8;  // warps in a block of the short side (256 threads)
constexpr int CHUNK = 512;  // entries of K whose rows of B few columns keep at once
static_assert(PATH == 0 || THREADS == SHORT_GROUPS * 32,
              "a short side's or short K's block is SHORT_GROUPS warps");

// This block's share of K when grid.z blocks split it: [k_lo, k_hi), cut at multiples of 4 so that
// 16-byte loads stay aligned.
__device__ __forceinline__ void my_range(int K, int& k_lo, int& k_hi)
{
    long long quads = (K + 3) / 4;
    k_lo = int(quads * blockIdx.z / gridDim.z) * 4;
    k_hi = min(K, int(quads * (blockIdx.z + 1) / gridDim.z) * 4);
}

// Lanes of a warp that few rows lays across C's columns, 4 columns each: 32 where N > 64, else the
// least power of two that covers N (4 for 13 columns), so that no lane is left without columns.
__device__ __forceinline__ int lanes_across(int N)
{
    int lanes = 1;
    while (lanes < 32 && 4 * lanes < N) lanes *= 2;
    return lanes;
}

// Few rows (R of them): a thread owns 4 columns of C in every row, and a warp's L lanes across
// (lanes_across) cover 4·L columns: 128 a block, or all of N where it is 64 or less. The warp's
// 32/L groups of L lanes, and the block's 8 warps, take turns down K (group g rows k_lo + g, +
// groups, …), so that together they read many rows of B at a time, 512 contiguous bytes each
// where L is 32; A's R entries at a k are the same for a whole group, one broadcast load each.
// The groups' sums then meet, first within the warp by a fixed tree (xor L, 2L, … 16), then in
// shared memory, added in order of warp.
template <int R>
__device__ __forceinline__ void few_rows(int N, int K, const float* A, const float* B, float* out,
                                         float* smem) {
    float4 (*part)[R][32] = reinterpret_cast<float4 (*)[R][32]>(smem);  // warps 1 to 7's sums
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    int across = lanes_across(N), groups = SHORT_GROUPS * (32 / across);
    int group = warp * (32 / across) + lane / across;
    int col = 4 * (blockIdx.x * across + lane % across);
    int k_lo, k_hi;
    my_range(K, k_lo, k_hi);
    float acc[R][4] = {};
    if (col < N) {
        // ANCHOR: few_rows_loads
        // D of the group's rows of B (and their entries of A) are loaded before any is used, so
        // that a thread has D loads in flight, not one: fewer rows of C leave the registers for
        // more. The sums still take k in order, so the bits are those of one row at a time.
        constexpr int D = R <= 2 ? 8 : R <= 4 ? 4 : 2;
        int k = k_lo + group;
        for (; k + (D - 1) * groups < k_hi; k += D * groups) {
            float4 w[D];
            float x[D][R];
#pragma unroll
            for (int u = 0; u < D; ++u) w[u] = load4(B, k + u * groups, col, K, N, N % 4 == 0);
#pragma unroll
            for (int u = 0; u < D; ++u) {
#pragma unroll
                for (int i = 0; i < R; ++i)
                    x[u][i] = __ldg(A + static_cast<long long>(i) * K + k + u * groups);
            }
#pragma unroll
            for (int u = 0; u < D; ++u) {
                float b[4] = {w[u].x, w[u].y, w[u].z, w[u].w};
#pragma unroll
                for (int i = 0; i < R; ++i) {
#pragma unroll
                    for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(x[u][i], b[j], acc[i][j]);
                }
            }
        }
        for (; k < k_hi; k += groups) {  // the last rows, fewer than D
            float4 v = load4(B, k, col, K, N, N % 4 == 0);
            float b[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
            for (int i = 0; i < R; ++i) {
                float a = __ldg(A + static_cast<long long>(i) * K + k);
#pragma unroll
                for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(a, b[j], acc[i][j]);
            }
        }
        // ANCHOR_END: few_rows_loads
    }
    for (int o = across; o < 32; o *= 2) {
#pragma unroll
        for (int i = 0; i < R; ++i) {
#pragma unroll
            for (int j = 0; j < 4; ++j) acc[i][j] += __shfl_xor_sync(0xFFFFFFFFu, acc[i][j], o);
        }
    }
    if (warp > 0 && lane < across) {
#pragma unroll
        for (int i = 0; i < R; ++i)
            part[warp - 1][i][lane] = float4{acc[i][0], acc[i][1], acc[i][2], acc[i][3]};
    }
    __syncthreads();
    if (warp == 0 && lane < across && col < N) {
        for (int g = 0; g < SHORT_GROUPS - 1; ++g) {
#pragma unroll
            for (int i = 0; i < R; ++i) {
                float4 p = part[g][i][lane];
                acc[i][0] += p.x, acc[i][1] += p.y, acc[i][2] += p.z, acc[i][3] += p.w;
            }
        }
#pragma unroll
        for (int i = 0; i < R; ++i) {
            float* c = out + static_cast<long long>(i) * N + col;
            if (N % 4 == 0) {
                *reinterpret_cast<float4*>(c) =
                    make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
            } else {
                for (int j = 0; j < 4 && col + j < N; ++j) c[j] = acc[i][j];
            }
        }
    }
}

// Lanes of a warp that few columns lays along a row of A, 4 entries of K each: 32 where a block's
// share of K is over 64 entries, else the least power of two that covers it (4 for K = 16), so
// that the warp's 32 / lanes groups each take a row at once and no lane is left without entries.
__device__ __forceinline__ int lanes_along(int K)
{
    int quads = ((K + 3) / 4 + gridDim.z - 1) / gridDim.z;
    int lanes = 1;
    while (lanes < 32 && lanes < quads) lanes *= 2;
    return lanes;
}

// Rows of C a warp of few columns takes at each turn down its rows: 8 where rows are short (they
// are loaded before any is summed, so that a lane has 8 loads in flight; 4 past 4 columns, 2 past
// 8), 4 where they are long and C has 4 to 8 columns (1 past 8, for the registers), so that the
// block's copy of B serves several rows of A, else 1.
template <int R>
__device__ constexpr int warp_rows(bool short_rows)
{
    return short_rows ? (R <= 4 ? 8 : R <= 8 ? 4 : 2) : (R > 8 ? 1 : R >= 4 ? 4 : 1);
}

// Few columns where a block's share of K is short (64 or less): L lanes of a warp take a row, 4
// entries each, so each of the warp's 32 / L groups takes a row and a warp's load covers 32 / L
// whole rows, contiguous in memory. A lane keeps its 4 rows of B, R columns each, in registers,
// read once; it loads its entries of W rows before it sums any (W loads in flight), and the
// group's L lanes add their sums by a fixed tree (xor L/2, …, 1). Lane j of a group then writes
// column j of its row, so a warp's store covers its rows' R·(32 / L) contiguous floats.
// ANCHOR: few_cols_short
template <int R>
__device__ __forceinline__ void few_cols_short(int M, int K, int lanes, const float* A,
                                               const float* B, float* out) {
    constexpr int W = warp_rows<R>(true);
    int lane = threadIdx.x % 32, groups = 32 / lanes;
    int sub = lane % lanes, k_lo, k_hi;
    my_range(K, k_lo, k_hi);
    int k0 = k_lo + 4 * sub;
    float b[4][R];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
#pragma unroll
        for (int j = 0; j < R; ++j)
            b[u][j] = k0 + u < k_hi ? __ldg(B + static_cast<long long>(k0 + u) * R + j) : 0.0f;
    }
    // The lane's first row; its others follow every `groups` rows.
    long long warp0 = static_cast<long long>(blockIdx.x) * SHORT_GROUPS + threadIdx.x / 32;
    long long row0 = warp0 * W * groups + lane / lanes;
    float x[W][4];
#pragma unroll
    for (int w = 0; w < W; ++w) {
        long long row = row0 + static_cast<long long>(w) * groups;
        const float* a = A + row * K + k0;
        if (K % 4 == 0) {  // rows start on 16-byte boundaries, and k0 and k_hi are multiples of 4
            float4 v = row < M && k0 < k_hi ? __ldg(reinterpret_cast<const float4*>(a))
                                             : float4{};
            x[w][0] = v.x, x[w][1] = v.y, x[w][2] = v.z, x[w][3] = v.w;
        } else {
#pragma unroll
            for (int u = 0; u < 4; ++u) x[w][u] = row < M && k0 + u < k_hi ? __ldg(a + u) : 0.0f;
        }
    }
#pragma unroll
    for (int w = 0; w < W; ++w) {
        float sum[R];
#pragma unroll
        for (int j = 0; j < R; ++j) {
            sum[j] = 0.0f;
#pragma unroll
            for (int u = 0; u < 4; ++u) sum[j] = fmaf(x[w][u], b[u][j], sum[j]);
        }
        for (int o = lanes / 2; o > 0; o /= 2) {
#pragma unroll
            for (int j = 0; j < R; ++j) sum[j] += __shfl_xor_sync(0xFFFFFFFFu, sum[j], o);
        }
        long long row = row0 + static_cast<long long>(w) * groups;
        if (row < M) {
            if (lanes >= R) {  // lane j of the group writes column j
                float mine = sum[0];
#pragma unroll
                for (int j = 1; j < R; ++j) mine = sub == j ? sum[j] : mine;
                if (sub < R) out[row * R + sub] = mine;
            } else if (sub == 0) {
#pragma unroll
                for (int j = 0; j < R; ++j) out[row * R + j] = sum[j];
            }
        }
    }
}
// ANCHOR_END: few_cols_short

// Few columns (R of them) where a block's share of K is long: a warp owns warp_rows<R>(false) rows
// of C and walks its share of K along each row of A in turn, lane t taking entries 4t to 4t + 3,
// then 128 further on, so that the warp reads 512 contiguous bytes at a time (where rows are not
// 16-byte aligned, single entries t, t + 32, t + 64 and t + 96, four loads in flight). B's rows
// for a chunk of K are first copied, by the whole block, into shared memory column by column,
// where a lane reads its 4 entries of a column in one 16-byte load. Each lane keeps R sums per
// row, and the warp adds its lanes' sums by a fixed tree (xor 16, 8, 4, 2, 1).
template <int R>
__device__ __forceinline__ void few_cols_long(int M, int K, const float* A, const float* B,
                                              float* out, float* bs) {
    // Floats between B's columns in shared memory: a multiple of 4 (16-byte loads), and past CHUNK
    // by about 32/R, so that the 32 stores of a warp's copy fall in different banks.
    constexpr int PITCH = CHUNK + (32 / R + 3) / 4 * 4;
    constexpr int W = warp_rows<R>(false);
    int row0 = (blockIdx.x * SHORT_GROUPS + threadIdx.x / 32) * W, lane = threadIdx.x % 32;
    // Every warp copies B; a warp past the last row computes nothing.
    int rows = max(0, min(W, M - row0));
    int k_lo, k_hi;
    my_range(K, k_lo, k_hi);
    bool vec = K % 4 == 0;
    float sum[W][R] = {};
    for (int c = k_lo; c < k_hi; c += CHUNK) {
        int len = min(CHUNK, k_hi - c);
        // Where rows are aligned, the lane's entries of the first row of A in this chunk are
        // loaded first, to be in flight while the block copies B (c and len are then multiples of
        // 4).
        float4 v[CHUNK / 128];
        const float* a = A + static_cast<long long>(min(row0, M - 1)) * K;
#pragma unroll
        for (int q = 0; q < CHUNK / 128; ++q) {
            int kk = 4 * lane + 128 * q;
            v[q] = vec && rows > 0 && kk < len ? __ldg(reinterpret_cast<const float4*>(a + c + kk))
                                               : float4{};
        }
        __syncthreads();  // the previous chunk has been read
        for (int e = threadIdx.x; e < len * R; e += blockDim.x) {
            bs[(e % R) * PITCH + e / R] = __ldg(B + static_cast<long long>(c) * R + e);
        }
        __syncthreads();
#pragma unroll
        for (int w = 0; w < W; ++w) {
            if (w >= rows) break;
            a = A + static_cast<long long>(row0 + w) * K;
            if (vec) {
                if (w > 0) {
#pragma unroll
                    for (int q = 0; q < CHUNK / 128; ++q) {
                        int kk = 4 * lane + 128 * q;
                        v[q] = kk < len ? __ldg(reinterpret_cast<const float4*>(a + c + kk))
                                        : float4{};
                    }
                }
#pragma unroll
                for (int q = 0; q < CHUNK / 128; ++q) {
                    int kk = 4 * lane + 128 * q;
                    if (kk >= len) break;
#pragma unroll
                    for (int j = 0; j < R; ++j) {
                        float4 b = *reinterpret_cast<const float4*>(bs + j * PITCH + kk);
                        sum[w][j] = fmaf(v[q].x, b.x, sum[w][j]);
                        sum[w][j] = fmaf(v[q].y, b.y, sum[w][j]);
                        sum[w][j] = fmaf(v[q].z, b.z, sum[w][j]);
                        sum[w][j] = fmaf(v[q].w, b.w, sum[w][j]);
                    }
                }
            } else {
                for (int kk = lane; kk < len; kk += 32) {
                    float x = __ldg(a + c + kk);
#pragma unroll
                    for (int j = 0; j < R; ++j) sum[w][j] = fmaf(x, bs[j * PITCH + kk], sum[w][j]);
                }
            }
        }
    }
#pragma unroll
    for (int w = 0; w < W; ++w) {
#pragma unroll
        for (int j = 0; j < R; ++j) {
#pragma unroll
            for (int o = 16; o > 0; o /= 2) sum[w][j] += __shfl_xor_sync(0xFFFFFFFFu, sum[w][j], o);
        }
        if (w < rows && lane == 0) {
#pragma unroll
            for (int j = 0; j < R; ++j) out[static_cast<long long>(row0 + w) * R + j] = sum[w][j];
        }
    }
}

// Few columns (R of them): short rows or long ones, by the block's share of K.
template <int R>
__device__ __forceinline__ void few_cols(int M, int K, const float* A, const float* B, float* out,
                                         float* bs) {
    int lanes = lanes_along(K);
    if (lanes < 32) few_cols_short<R>(M, K, lanes, A, B, out);
    else few_cols_long<R>(M, K, A, B, out, bs);
}

// The kernel for this many rows (PATH 1) or columns (PATH 2), chosen once for the whole grid, and
// the shared memory both use.
__device__ __forceinline__ void short_side(int M, int N, int K, const float* A, const float* B,
                                           float* out) {
    constexpr int FLOATS =
        PATH == 1 ? (SHORT_GROUPS - 1) * SHORT * 32 * 4 : SHORT_COLS * (CHUNK + 4);  // the most R
    __shared__ __align__(16) float smem[FLOATS];
    if constexpr (PATH == 1) {
        switch (M) {
#define SHORT_CASE(r) \
    case r: few_rows<r>(N, K, A, B, out, smem); break;
            SHORT_CASE(1) SHORT_CASE(2) SHORT_CASE(3) SHORT_CASE(4) SHORT_CASE(5) SHORT_CASE(6)
            SHORT_CASE(7) SHORT_CASE(8)
#undef SHORT_CASE
        }
    } else {
        switch (N) {
#define SHORT_CASE(r) \
    case r: few_cols<r>(M, K, A, B, out, smem); break;
            SHORT_CASE(1) SHORT_CASE(2) SHORT_CASE(3) SHORT_CASE(4) SHORT_CASE(5) SHORT_CASE(6)
            SHORT_CASE(7) SHORT_CASE(8) SHORT_CASE(9) SHORT_CASE(10) SHORT_CASE(11) SHORT_CASE(12)
            SHORT_CASE(13) SHORT_CASE(14) SHORT_CASE(15) SHORT_CASE(16)
#undef SHORT_CASE
        }
    }
}
// ANCHOR_END: short_side

// ANCHOR: short_k
// A short K (PATH 3): at most SHORT_K entries, so each element of C is a dot product of a few
// terms and the product is bound by writing C, M·N floats, which a tile writes in scattered
// pieces after paying its prologue for one slice of K. Here a block takes SK_ROWS rows and 128
// columns of C. Lane t of a warp takes the columns t, t + 32, t + 64 and t + 96, so each of the
// warp's stores covers 128 contiguous bytes whatever N is, and no row needs padding. A thread
// keeps its 4 columns of B's K rows in registers, read once; the warps then go down the block's
// rows in turn, each reading a few rows of A at once (the same K entries for all 32 lanes: one
// broadcast load each) and storing their 4 sums, every one formed in order of k, so the same
// bits every run.
constexpr int SHORT_K = 16;
constexpr int SK_ROWS = 64;  // rows of C a block of short K takes (8 a warp)

// ANCHOR: short_k_rows
template <int KK>
__device__ __forceinline__ void short_k(int M, int N, const float* A, const float* B, float* C)
{
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    int col0 = blockIdx.x * 128 + lane;
    float b[KK][4];
#pragma unroll
    for (int k = 0; k < KK; ++k) {
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            int col = col0 + 32 * j;
            b[k][j] = col < N ? __ldg(B + static_cast<long long>(k) * N + col) : 0.0f;
        }
    }
    // Rows of A a warp loads before it sums any, so that several loads are in flight: U·KK floats
    // at most 32 of them.
    constexpr int U = KK <= 4 ? 8 : KK <= 8 ? 4 : 2;
    // A launch has at most 65535 rows of blocks: taller products go round again.
    for (long long row0 = static_cast<long long>(blockIdx.y) * SK_ROWS; row0 < M;
         row0 += static_cast<long long>(gridDim.y) * SK_ROWS) {
        for (int r = warp; r < SK_ROWS; r += U * SHORT_GROUPS) {
            float x[U][KK];
#pragma unroll
            for (int u = 0; u < U; ++u) {
                long long row = row0 + r + u * SHORT_GROUPS;
                const float* a = A + row * KK;
                if constexpr (KK % 4 == 0) {  // rows of A start on 16-byte boundaries
#pragma unroll
                    for (int k = 0; k < KK; k += 4) {
                        float4 v =
                            row < M ? __ldg(reinterpret_cast<const float4*>(a + k)) : float4{};
                        x[u][k] = v.x, x[u][k + 1] = v.y, x[u][k + 2] = v.z, x[u][k + 3] = v.w;
                    }
                } else {
#pragma unroll
                    for (int k = 0; k < KK; ++k) x[u][k] = row < M ? __ldg(a + k) : 0.0f;
                }
            }
#pragma unroll
            for (int u = 0; u < U; ++u) {
                long long row = row0 + r + u * SHORT_GROUPS;
                if (row >= M) break;
                float acc[4] = {};
#pragma unroll
                for (int k = 0; k < KK; ++k) {
#pragma unroll
                    for (int j = 0; j < 4; ++j) acc[j] = fmaf(x[u][k], b[k][j], acc[j]);
                }
                float* c = C + row * N + col0;
#pragma unroll
                for (int j = 0; j < 4; ++j) {
                    if (col0 + 32 * j < N) c[32 * j] = acc[j];
                }
            }
        }
    }
}
// ANCHOR_END: short_k_rows

// The kernel for this K, chosen once for the whole grid.
__device__ __forceinline__ void short_k_for(int M, int N, int K, const float* A, const float* B,
                                            float* C) {
    switch (K) {
#define SHORT_K_CASE(k) \
    case k: short_k<k>(M, N, A, B, C); break;
        SHORT_K_CASE(1)
        SHORT_K_CASE(2) SHORT_K_CASE(3) SHORT_K_CASE(4) SHORT_K_CASE(5) SHORT_K_CASE(6)
            SHORT_K_CASE(7) SHORT_K_CASE(8) SHORT_K_CASE(9) SHORT_K_CASE(10) SHORT_K_CASE(11)
                SHORT_K_CASE(12) SHORT_K_CASE(13) SHORT_K_CASE(14) SHORT_K_CASE(15) SHORT_K_CASE(16)
#undef SHORT_K_CASE
    }
}
// ANCHOR_END: short_k

// Step 06: prefetching. Step 05's kernel with two shared-memory buffers, so the next slice of A
// and B travels from global memory while the current one is being multiplied.
//
// Idea: in step 05 each iteration loads a slice, waits at a barrier, computes, and waits again:
// while the loads are in flight the block's warps have no arithmetic to issue, and only other
// resident blocks can fill the gap. Here the loads of slice t+1 are issued into registers before
// the outer products of slice t, so their latency hides behind BK·TM·TN FMAs per thread; the
// registers are then written into the second buffer, which nobody is reading. The block only
// needs one barrier per slice: the buffer being filled was last read before the previous one.
//
// What it buys: much of what the barrier still cost step 05 (docs/src/step06.md measures it), with
// the tuned 128×256×16 block tile, 128×16 warp regions and 8×8 thread tiles, for the price of a
// second buffer of shared memory and the registers holding the prefetched slice.

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

// ANCHOR: kernel
extern "C" __global__ void __launch_bounds__(THREADS, MINB)
    matmul(int M, int N, int K, const float* A, const float* B, float* C) {
    // Two buffers of the A tile (transposed, BK×BM) and the B tile (BK×BN) in dynamic shared
    // memory.
    extern __shared__ __align__(16) float smem[];
    float (*As)[BK][BM] = reinterpret_cast<float (*)[BK][BM]>(smem);
    float (*Bs)[BK][BN] = reinterpret_cast<float (*)[BK][BN]>(smem + 2 * BK * BM);

    // The warp's region of the block tile, and the thread's first row and column in it.
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    int r0 = (warp / WARPS_N) * WM + (lane / THREADS_N) * VM;
    int c0 = (warp % WARPS_N) * WN + (lane % THREADS_N) * VN;
    int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    // Uniform across the warp: its region holds at least one element of C.
    bool active = row0 + (warp / WARPS_N) * WM < M && col0 + (warp % WARPS_N) * WN < N;

    float acc[TM][TN] = {};
    float4 a_next[A_LOADS], b_next[B_LOADS];

    fetch_tiles(A, B, M, N, K, row0, col0, 0, a_next, b_next);
    store_tiles(As[0], Bs[0], a_next, b_next);
    __syncthreads();

    int buf = 0;
    for (int k0 = 0; k0 < K; k0 += BK) {
        bool more = k0 + BK < K;
        // Issue the next slice's loads first: they are in flight during the FMAs below.
        if (more) fetch_tiles(A, B, M, N, K, row0, col0, k0 + BK, a_next, b_next);
        if (active) compute_tile(As[buf], Bs[buf], r0, c0, acc);
        // The other buffer was last read before the previous barrier: it is free to fill.
        if (more) store_tiles(As[buf ^ 1], Bs[buf ^ 1], a_next, b_next);
        __syncthreads();
        buf ^= 1;
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

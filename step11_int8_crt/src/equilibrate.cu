// Step 11's equilibration along K, queued before the residues: a shift s_k for each k, so that A's
// column k times 2^s_k and B's row k times 2^-s_k leave every product a_ik·b_kj, and so A·B,
// exactly as it was. The kernels that scale A and B to integers (scaling.cuh, choose.cuh) apply
// the shifts as they read A and B (along_k), so no scaled copy of either is written.
//
// The scaling to integers that follows gives each row of A (each column of B) one power of two,
// so an entry far below its row's norm keeps few bits. Data whose scales were moved between A's
// columns and B's rows (activations and weights) has rows that spread over many binades along K
// while its products do not: balancing each k's largest magnitude in A's column against B's row
// takes the spread back out, and the integers keep FP32's bits again.
//
//   equilibrate(const float* A, const float* B, int* range, int* shift, int* summary, int M,
//               int N, int K, int a_chunks, int b_chunks)
//       one launch, one read of A and of B. Its first blocks take B's rows, a warp a piece of
//       a row (b_chunks pieces a row); the rest take A's columns, 128 of them by a chunk of rows
//       (a_chunks chunks), the last rows of A first, so that the rows the scaling reads first
//       are the ones left in L2. Each writes the largest and smallest nonzero finite magnitude
//       of its part into range (A's column k at range[4k + 1] and range[4k], B's row k at
//       range[4k + 3] and range[4k + 2], the smallest kept as the bits of INF minus it, so that
//       a zeroed workspace and atomicMax serve both). The block that arrives last
//       (summary[5] counts them) turns the ranges into the shifts, and leaves the ranges and
//       the count at zero for the next launch (the workspaces are zeroed only when made):
//         h_k = (e_B − e_A)/2 rounded down, e the exponents of the two largest magnitudes,
//         s_k = h_k less the mean of the h (a shift common to every k changes no row's
//         integers), kept where every scaled entry stays a normal number (so each scaled value
//         is exact), else 0; summary[0..3]: the most negative shift (as −s), the largest, how
//         many are not 0; summary[3..5]: the sum of the h and how many k have one.
//
// Entries of NaN or infinity keep their class (a power of two does not change it); the FP32 path
// still takes their rows and columns from the unscaled A and B.

constexpr int INF_BITS = 0x7f800000;
constexpr int THREADS = 256;         // a block (the host's THREADS)
constexpr int A_COLS = 128;          // columns of A a block takes (the host's A_COLS)
constexpr int WARPS = THREADS / 32;  // pieces of B's rows a block takes

// Bits of |v| where v is a nonzero finite number, else 0.
__device__ __forceinline__ int magnitude_bits(float v) {
    int b = __float_as_int(v) & 0x7fffffff;
    return (b != 0 && b < INF_BITS) ? b : 0;
}

__device__ __forceinline__ void widen(int& hi, int& lo, float v) {
    int b = magnitude_bits(v);
    if (b != 0) hi = max(hi, b), lo = min(lo, b);
}

__device__ __forceinline__ void widen4(int& hi, int& lo, float4 v) {
    widen(hi, lo, v.x), widen(hi, lo, v.y), widen(hi, lo, v.z), widen(hi, lo, v.w);
}

// B's row k from column n0 to n1, by one warp: its range into range[4k + 2] and range[4k + 3].
// 16-byte loads where the row allows (N a multiple of 4, n0 of 128), four in flight a lane.
__device__ void row_of_b(const float* B, int* range, int k, long long n0, long long n1, int N) {
    int lane = threadIdx.x % 32, hi = 0, lo = INF_BITS;
    const float* row = B + static_cast<long long>(k) * N;
    long long n = n0 + 4 * lane;
    if (N % 4 == 0 && n0 % 128 == 0) {
        for (; n + 384 < n1; n += 512) {
            const float4* at = reinterpret_cast<const float4*>(row + n);
            float4 v0 = at[0], v1 = at[32], v2 = at[64], v3 = at[96];
            widen4(hi, lo, v0), widen4(hi, lo, v1), widen4(hi, lo, v2), widen4(hi, lo, v3);
        }
        for (; n < n1; n += 128) widen4(hi, lo, *reinterpret_cast<const float4*>(row + n));
    } else {
        for (n = n0 + lane; n < n1; n += 32) widen(hi, lo, row[n]);
    }
    for (int o = 16; o > 0; o >>= 1) {
        hi = max(hi, __shfl_xor_sync(0xffffffffu, hi, o));
        lo = min(lo, __shfl_xor_sync(0xffffffffu, lo, o));
    }
    if (lane == 0 && hi != 0) {
        atomicMax(&range[4 * k + 2], INF_BITS - lo);
        atomicMax(&range[4 * k + 3], hi);
    }
}

// A's columns c0 to c0 + 127 over rows r0 to r1, a warp a row at a time, eight rows apart. With K
// a multiple of 4 a lane takes four neighbouring columns with one 16-byte load (a warp's loads of
// a row read 512 consecutive bytes), four rows in flight; else four columns 32 apart. Then the
// eight warps' ranges meet in shared memory and one pair of atomics a column goes out. From the
// last row down: the scaling that follows starts from the first rows, which are then in L2.
__device__ void columns_of_a(const float* A, int* range, int c0, long long r0, long long r1,
                             int K) {
    __shared__ int his[WARPS][A_COLS], los[WARPS][A_COLS];
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    int hi[4] = {0, 0, 0, 0}, lo[4] = {INF_BITS, INF_BITS, INF_BITS, INF_BITS};
    const long long step = static_cast<long long>(WARPS) * K;
    if (K % 4 == 0) {
        const int c = c0 + 4 * lane;  // the lane's four columns: c … c + 3
        const bool in = c < K;
        long long r = r1 - 1 - warp;
        for (; r - 3 * WARPS >= r0; r -= 4 * WARPS) {
            const float* at = A + r * K + c;
            float4 v[4];
#pragma unroll
            for (int q = 0; q < 4; ++q)
                v[q] = in ? *reinterpret_cast<const float4*>(at - q * step)
                          : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                widen(hi[0], lo[0], v[q].x), widen(hi[1], lo[1], v[q].y);
                widen(hi[2], lo[2], v[q].z), widen(hi[3], lo[3], v[q].w);
            }
        }
        for (; r >= r0; r -= WARPS) {
            if (!in) break;
            float4 v = *reinterpret_cast<const float4*>(A + r * K + c);
            widen(hi[0], lo[0], v.x), widen(hi[1], lo[1], v.y);
            widen(hi[2], lo[2], v.z), widen(hi[3], lo[3], v.w);
        }
#pragma unroll
        for (int q = 0; q < 4; ++q)
            his[warp][4 * lane + q] = hi[q], los[warp][4 * lane + q] = lo[q];
    } else {
        for (long long r = r1 - 1 - warp; r >= r0; r -= WARPS) {
            const float* row = A + r * K + c0 + lane;
#pragma unroll
            for (int q = 0; q < 4; ++q)
                if (c0 + lane + 32 * q < K) widen(hi[q], lo[q], row[32 * q]);
        }
#pragma unroll
        for (int q = 0; q < 4; ++q)
            his[warp][lane + 32 * q] = hi[q], los[warp][lane + 32 * q] = lo[q];
    }
    __syncthreads();
    if (threadIdx.x < A_COLS) {
        int c = threadIdx.x, h = 0, l = INF_BITS;
        for (int w = 0; w < WARPS; ++w) h = max(h, his[w][c]), l = min(l, los[w][c]);
        if (h != 0 && c0 + c < K) {
            atomicMax(&range[4 * (c0 + c)], INF_BITS - l);
            atomicMax(&range[4 * (c0 + c) + 1], h);
        }
    }
}

// The exponent of a magnitude's bits: −127 for a subnormal.
__device__ __forceinline__ int exponent_of(int bits) { return (bits >> 23) - 127; }

// k's four ranges, {A's smallest, A's largest, B's smallest, B's largest}, read from L2
// (__ldcg), where the other blocks' atomics landed.
__device__ __forceinline__ int4 ranges_of(const int* range, int k) {
    return __ldcg(reinterpret_cast<const int4*>(range) + k);
}

// Whether A's column k and B's row k both hold a nonzero finite entry; if so, their exponents'
// half-difference and the shifts that keep every scaled value exact: A's column times 2^s and B's
// row times 2^-s keep every entry below 2^127, and one scaled down at 2^-126 or above (a
// subnormal one is not scaled down at all).
__device__ __forceinline__ bool balance(int4 r, int& half, int& lowest, int& highest) {
    if (r.y == 0 || r.w == 0) return false;
    int ea = exponent_of(r.y), eb = exponent_of(r.w);
    int ea_lo = exponent_of(INF_BITS - r.x), eb_lo = exponent_of(INF_BITS - r.z);
    half = (eb - ea) >> 1;
    lowest = max(max(min(0, -126 - ea_lo), eb - 126), -126);
    highest = min(min(126 - ea, max(0, 126 + eb_lo)), 126);
    return true;
}

// s_k from k's ranges and the mean of the half-differences.
__device__ int shift_of(int4 r, int mean) {
    int half, lowest, highest;
    if (balance(r, half, lowest, highest))
        return lowest <= highest ? min(max(half - mean, lowest), highest) : 0;
    // B's row k is zeros, so A's column k adds nothing to C: scaled down as far as it stays
    // exact, it no longer takes bits from the rest of its rows. And the other way round.
    if (r.y != 0 && r.w == 0) return min(0, max(-126, -126 - exponent_of(INF_BITS - r.x)));
    if (r.w != 0 && r.y == 0) return max(0, min(126, 126 + exponent_of(INF_BITS - r.z)));
    return 0;
}

// The block's sum of v (every thread of the block calls it).
__device__ int block_sum(int v, int* scratch) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    __syncthreads();
    if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
    __syncthreads();
    int sum = 0;
    for (int w = 0; w < WARPS; ++w) sum += scratch[w];
    return sum;
}

__device__ int block_max(int v, int* scratch) {
    for (int o = 16; o > 0; o >>= 1) v = max(v, __shfl_xor_sync(0xffffffffu, v, o));
    __syncthreads();
    if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
    __syncthreads();
    int most = scratch[0];
    for (int w = 1; w < WARPS; ++w) most = max(most, scratch[w]);
    return most;
}

// The last block: the ranges into shifts, and the summary.
__device__ void shifts(int* range, int* shift, int* summary, int K) {
    __shared__ int scratch[WARPS];
    int sum = 0, count = 0;
#pragma unroll 4
    for (int k = threadIdx.x; k < K; k += THREADS) {
        int half, lowest, highest;
        if (balance(ranges_of(range, k), half, lowest, highest)) sum += half, count += 1;
    }
    sum = block_sum(sum, scratch);
    count = block_sum(count, scratch);
    int mean = count > 0 ? __float2int_rn(static_cast<float>(sum) / static_cast<float>(count)) : 0;
    int down = 0, up = 0, moved = 0;
#pragma unroll 4
    for (int k = threadIdx.x; k < K; k += THREADS) {
        int s = shift_of(ranges_of(range, k), mean);
        shift[k] = s;
        down = max(down, -s), up = max(up, s), moved += s != 0;
        // The ranges back to zeros for the next launch (no kernel reads them after this one).
        reinterpret_cast<int4*>(range)[k] = make_int4(0, 0, 0, 0);
    }
    down = block_max(down, scratch);
    up = block_max(up, scratch);
    moved = block_sum(moved, scratch);
    if (threadIdx.x == 0) {
        summary[0] = down, summary[1] = up, summary[2] = moved;
        summary[3] = sum, summary[4] = count;
        summary[5] = 0;  // the arrivals, back to zero for the next launch
    }
}

extern "C" __global__ void __launch_bounds__(THREADS)
    equilibrate(const float* A, const float* B, int* range, int* shift, int* summary, int M, int N,
                int K, int a_chunks, int b_chunks) {
    __shared__ bool last;
    long long b_items = static_cast<long long>(K) * b_chunks;
    long long b_blocks = (b_items + WARPS - 1) / WARPS;
    if (blockIdx.x < b_blocks) {
        long long item = static_cast<long long>(blockIdx.x) * WARPS + threadIdx.x / 32;
        if (item < b_items) {
            int k = static_cast<int>(item / b_chunks), piece = static_cast<int>(item % b_chunks);
            // Pieces of a whole number of 128 columns, so that each starts 16-byte aligned.
            long long per = ((N + b_chunks - 1) / b_chunks + 127) / 128 * 128;
            long long n0 = piece * per, n1 = min(static_cast<long long>(N), n0 + per);
            row_of_b(B, range, k, n0, n1, N);
        }
    } else {
        long long at = blockIdx.x - b_blocks;
        int c0 = static_cast<int>(at / a_chunks) * A_COLS, chunk = static_cast<int>(at % a_chunks);
        long long per = (M + a_chunks - 1) / a_chunks;
        long long r0 = chunk * per, r1 = min(static_cast<long long>(M), r0 + per);
        columns_of_a(A, range, c0, r0, r1, K);
    }
    // The last block to arrive sees every other block's atomics (each fenced before it arrived).
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) last = atomicAdd(&summary[5], 1) == static_cast<int>(gridDim.x) - 1;
    __syncthreads();
    if (last) {
        __threadfence();
        shifts(range, shift, summary, K);
    }
}

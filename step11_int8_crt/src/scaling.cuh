// Step 11's scaling: the exponent of each row of A and column of B, the unbiased rounding of
// their entries to integers, and the kernels that write their residues (scale_rows, col_norms,
// scale_cols, rescale_rows, rescale_cols), with the rule's counts. Included by the kernel
// (src/kernel.cu) and the hands-on starting file after residue_byte and pack, which it calls.

// ANCHOR: exponent
constexpr double MARGIN = 1.0 / 1048576.0;  // 2⁻²⁰: T's margin below √(P_L/2) (the host's room)

// The exponent e of a row (or column) x of K entries with Σx² = norm2, for a product of L
// moduli: the largest with 2^e·‖x‖ + √K ≤ T, T = √(P_L/2) less a margin. Rounding moves each
// entry by less than 1 (see unbiased), so the integers keep ‖x′‖ ≤ T, and by Cauchy and Schwarz
// every sum of products of a row and a column stays within T² < P_L/2: the remainder theorem can
// tell it from every other integer.
__device__ int exponent_for(double norm2, int K, int L)
{
    if (!(norm2 <= 1.7976931348623157e308)) return NONFINITE;  // NaN or infinity on the way
    if (norm2 == 0.0) return 0;
    double limit = sqrt(0.5 * TABLE.product[L]) * (1.0 - MARGIN);
    return ilogb((limit - sqrt(static_cast<double>(K))) / sqrt(norm2));
}
// ANCHOR_END: exponent

// ANCHOR: unbiased
// Rounding to nearest errs the same way on every entry with the same fraction: where the data
// lines those errors up against the other operand's signs, a dot product's K errors add up
// instead of cancelling. So an entry of magnitude 1 or more once scaled rounds up with a chance
// equal to its fraction and down otherwise. Its error stays below one unit and has mean zero
// whatever the data, and different entries draw coins that are as good as independent, so the
// errors of a sum cancel as FP32's own roundings do. A thread's run of entries (16 of a row or a
// column) seeds its coins with a hash of where the run lies, the same in every run of the
// program, and steps a linear congruential sequence from entry to entry. Below 1, and for K < 4
// (where the bound has no room for errors of a whole unit), an entry rounds to nearest (pieces()
// does it), which never moves it past zero.
struct Coins {
    unsigned x;
    __device__ explicit Coins(unsigned key)
    {
        key ^= key >> 16;
        key *= 0x85EBCA6Bu;
        key ^= key >> 13;
        key *= 0xC2B2AE35u;
        x = key ^ key >> 16;
    }
    // The next coin, 1 + t: x ← a·x + c modulo 2³², and t its top 23 bits, in [0, 1) in steps of
    // 2⁻²³ (the top bits of such a sequence are the ones that look independent).
    __device__ float next()
    {
        x = x * 0x2C9277B5u + 0xAC564B05u;
        return __uint_as_float(0x3F800000u | x >> 9);
    }
};

// The place of entry k of row i of A, or of column j of B: different keys for the two operands.
__device__ __forceinline__ unsigned key_a(int i, int k) { return i * 0x9E3779B9u + k; }
__device__ __forceinline__ unsigned key_b(int j, int k)
{
    return j * 0x7FEB352Du + k + 0x68E31DA4u;
}

// v rounded up when its fraction is above the coin's t, else down; v itself (to be rounded to
// nearest) where |v| < 1 or the rounding is off.
__device__ __forceinline__ float unbiased(float v, float coin, bool on)
{
    float whole = floorf(v);
    float fraction = (v - whole) + 1.0f;  // 1 + its fraction, exact: |v| ≥ 1 keeps 2⁻²³
    float rounded = fraction > coin ? whole + 1.0f : whole;
    return on && fabsf(v) >= 1.0f ? rounded : v;
}
// ANCHOR_END: unbiased

// v·2^e as a float, exact (|v·2^e| < 2⁶³; what falls below FP32's range rounds to 0 anyway); 0 for
// a row or column marked NONFINITE. The float multiply serves e within FP32's exponents.
struct Scale {
    int e;
    __device__ __forceinline__ float operator()(float v) const
    {
        if (e >= -126 && e <= 127) return v * __int_as_float((e + 127) << 23);
        if (e == NONFINITE) return 0.0f;
        return static_cast<float>(ldexp(static_cast<double>(v), e));
    }
};

// ANCHOR: along_k
// An entry of A's column k (sign 1) or of B's row k (sign −1) as the equilibration along K scales
// it (equilibrate.cu): times 2^(sign·shift[k]), exact, since every shift keeps its scaled entries
// normal numbers. A·B is unchanged; only how the entries sit in their rows moves.
__device__ __forceinline__ float along(float v, int s, int sign)
{
    return s == 0 ? v : v * __int_as_float((127 + sign * s) << 23);
}
__device__ __forceinline__ float along_k(float v, const int* shift, int k, int sign)
{
    return along(v, shift[k], sign);
}

// The shifts of k0 … k0 + N − 1 (0 past K), 16-byte loads where they lie whole inside K (k0 a
// multiple of 4): those of a column's run of entries in a tile of B.
template <int N>
__device__ __forceinline__ void shifts_at(const int* shift, int k0, int K, int (&s)[N])
{
    if (k0 + N <= K) {
#pragma unroll
        for (int q = 0; q < N / 4; ++q) {
            int4 v = *reinterpret_cast<const int4*>(shift + k0 + 4 * q);
            s[4 * q] = v.x, s[4 * q + 1] = v.y, s[4 * q + 2] = v.z, s[4 * q + 3] = v.w;
        }
    } else {
#pragma unroll
        for (int j = 0; j < N; ++j) s[j] = k0 + j < K ? shift[k0 + j] : 0;
    }
}
// ANCHOR_END: along_k

// Entries k0 … k0 + N - 1 of a row of A (zeros past K), equilibrated along K, 16-byte loads where
// rows allow.
template <int N>
__device__ __forceinline__ void load(const float* row, const int* shift, int k0, int K,
                                     float (&v)[N])
{
    static_assert(N % 4 == 0, "load reads whole float4s");
    if (K % 4 == 0 && k0 + N <= K) {
#pragma unroll
        for (int q = 0; q < N / 4; ++q) {
            float4 f = *reinterpret_cast<const float4*>(row + k0 + 4 * q);
            int4 s = *reinterpret_cast<const int4*>(shift + k0 + 4 * q);
            v[4 * q] = along(f.x, s.x, 1), v[4 * q + 1] = along(f.y, s.y, 1);
            v[4 * q + 2] = along(f.z, s.z, 1), v[4 * q + 3] = along(f.w, s.w, 1);
        }
    } else {
#pragma unroll
        for (int j = 0; j < N; ++j)
            v[j] = k0 + j < K ? along_k(row[k0 + j], shift, k0 + j, 1) : 0.0f;
    }
}

// ANCHOR: apart_rule
// Which rows and columns the scaling carries. Rounding 2^e·x to an integer (unbiased, above)
// moves it by less than 1, and never by more than |2^e·x|. Call an entry other than zero whose
// scaled value is below 2²⁷/K "small"; every other entry other than zero moves by less than 2τ of
// itself, τ = γ_K/16 (γ_K = K·2⁻²⁴, FP32's per-element factor), which costs element (i, j) at most
// 2τ·(|A||B|)ᵢⱼ. A row of A with s small entries costs element (i, j) at most one unit times the
// mass of column j of B on those s places, which is within 2τ·(|A||B|)ᵢⱼ while that mass is no
// more than the column's mass on the row's entries that are neither small nor zero: sure when
// (2s + z)·‖b_j‖∞ ≤ ‖b_j‖₁, with z the row's zeros, for every column. So with q_B the largest
// ‖b_j‖∞/‖b_j‖₁ over B's columns, a row with s > 0 and (2s + z)·q_B > 1 takes the FP32 path
// (mark_paths, below), and likewise a column of B against q_A, the rows' largest ‖a_i‖∞/‖a_i‖₁.
// Each operand then costs at most 4τ = γ_K/4, their cross term at most 4τ more, and the rest of
// the bound, γ_K/4, covers the final rounding to FP32 (at most γ_K/K; the rebuild is exact) from
// K = 4 on. Below that entries round to nearest, and every cost above halves. A vector the rule
// does not carry at MODULI is looked at again, element by element (bound_rule, below).
// stats: [0] q_A and [1] q_B as the bits of a positive float (largest by atomicMax), [2] the
// moduli the product takes (0 until choose_moduli raises it above MODULI), then for each row of
// A and column of B in turn (v = i, or M + j) 2s + z at [3 + 2v] and s at [4 + 2v], at MODULI;
// zeroed before every product.
constexpr float SMALL = 134217728.0f;  // 2²⁷: an entry is small below SMALL/K once scaled

// What an entry adds to its vector's 2s + z (weight) and s (small).
__device__ __forceinline__ void tally(float x, float scaled, float limit, int& weight, int& small)
{
    bool is_small = x != 0.0f && fabsf(scaled) < limit;
    weight += x == 0.0f ? 1 : is_small ? 2 : 0;
    small += is_small;
}

__device__ __forceinline__ void raise_to(int* q, double l1, float linf)
{
    if (l1 > 0.0) atomicMax(q, __float_as_int(static_cast<float>(linf / l1)));
}

// Whether a vector with this weight (2s + z) and these small entries takes the FP32 path, against
// the other operand's q (its bits: stats[1] for a row of A, stats[0] for a column of B).
__device__ __forceinline__ bool apart(int weight, int small, int q_bits)
{
    return small > 0 && static_cast<float>(weight) * __int_as_float(q_bits) > 1.0f;
}

// The moduli the product takes, once choose_moduli has run.
__device__ __forceinline__ int chosen(const int* stats) { return max(MODULI, stats[2]); }
// ANCHOR_END: apart_rule

// stats past the vectors' counts (the host's stats_len): at FLAG(M, N) whether mark_paths marked
// any vector 2; then, for rows and for columns, how many need each count (HIST_LEN of them, the
// last for more than REACH); then each vector's ratio of what its rounding may cost an element
// to what that element's bound allows, a positive float's bits (bound); then each vector's need.
constexpr int HIST_LEN = MOST + 2;
__device__ __forceinline__ int flag_at(int M, int N) { return 3 + 2 * (M + N); }
__device__ __forceinline__ int hist_at(int M, int N) { return flag_at(M, N) + 1; }
__device__ __forceinline__ int ratio_at(int M, int N) { return hist_at(M, N) + 2 * HIST_LEN; }
__device__ __forceinline__ int need_at(int M, int N) { return ratio_at(M, N) + M + N; }

// A's rows, a block each of 256 threads, or of K/16 rounded up to a warp where that is fewer (the
// host's): the exponent of row i into exps[i], Σx² into norms[i]
// and Σ|x| into l1[i], its residues
// modulo each modulus into plane l of res (MODULI planes of M rows of pitch bytes), and its
// share of stats (above). A thread takes 16 consecutive entries at a time; the first 16 a thread
// of the row stay in registers between the two passes, the rest is read again (from L2: few rows
// are in flight).
extern "C" __global__ void __launch_bounds__(256)
    scale_rows(const float* A, const int* shift, signed char* res, int* exps, int* stats,
               double* norms, double* l1, int M, int K, int pitch) {
    __shared__ double partial[8], partial1[8];
    __shared__ float partial_max[8];
    __shared__ int partial_weight[8], partial_small[8];
    int i = blockIdx.x, lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    int stride = 16 * blockDim.x;
    const float* row = A + static_cast<long long>(i) * K;
    float first[16];
    load(row, shift, 16 * threadIdx.x, K, first);
    double norm2 = 0.0, norm1 = 0.0;
    float largest = 0.0f;
#pragma unroll
    for (int j = 0; j < 16; ++j) {
        norm2 = fma(static_cast<double>(first[j]), static_cast<double>(first[j]), norm2);
        norm1 += fabs(static_cast<double>(first[j]));
        largest = fmaxf(largest, fabsf(first[j]));
    }
    for (int k0 = 16 * threadIdx.x + stride; k0 < K; k0 += stride) {
        float v[16];
        load(row, shift, k0, K, v);
#pragma unroll
        for (int j = 0; j < 16; ++j) {
            norm2 = fma(static_cast<double>(v[j]), static_cast<double>(v[j]), norm2);
            norm1 += fabs(static_cast<double>(v[j]));
            largest = fmaxf(largest, fabsf(v[j]));
        }
    }
#pragma unroll
    for (int o = 16; o > 0; o /= 2) {
        norm2 += __shfl_xor_sync(0xFFFFFFFFu, norm2, o);
        norm1 += __shfl_xor_sync(0xFFFFFFFFu, norm1, o);
        largest = fmaxf(largest, __shfl_xor_sync(0xFFFFFFFFu, largest, o));
    }
    if (lane == 0) partial[warp] = norm2, partial1[warp] = norm1, partial_max[warp] = largest;
    __syncthreads();
    norm2 = 0.0, norm1 = 0.0, largest = 0.0f;
    for (int w = 0; w < warps; ++w)
        norm2 += partial[w], norm1 += partial1[w], largest = fmaxf(largest, partial_max[w]);
    Scale scale{exponent_for(norm2, K, MODULI)};
    if (threadIdx.x == 0) {
        exps[i] = scale.e;
        norms[i] = norm2;
        l1[i] = norm1;
        if (scale.e != NONFINITE) raise_to(&stats[0], norm1, largest);
    }
    // A row with NaN or infinity takes the FP32 path (mark_paths): its residues are zeros.
    const float limit = SMALL / static_cast<float>(K);
    const bool on = K >= 4;
    int weight = 0, small = 0;
    for (int k0 = 16 * threadIdx.x; k0 < K; k0 += stride) {
        float v[16];
        if (k0 < stride) {
#pragma unroll
            for (int j = 0; j < 16; ++j) v[j] = first[j];
        } else {
            load(row, shift, k0, K, v);
        }
        Pieces x[16];
        Coins coins(key_a(i, k0));
#pragma unroll
        for (int j = 0; j < 16; ++j) {
            float scaled = scale(v[j]);
            if (k0 + j < K) tally(v[j], scaled, limit, weight, small);
            x[j] = pieces(unbiased(scaled, coins.next(), on));
        }
#pragma unroll
        for (int l = 0; l < MODULI; ++l) {
            *reinterpret_cast<uint4*>(res + (static_cast<long long>(l) * M + i) * pitch + k0) =
                pack(x, l);
        }
    }
#pragma unroll
    for (int o = 16; o > 0; o /= 2) {
        weight += __shfl_xor_sync(0xFFFFFFFFu, weight, o);
        small += __shfl_xor_sync(0xFFFFFFFFu, small, o);
    }
    if (lane == 0) partial_weight[warp] = weight, partial_small[warp] = small;
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < warps; ++w) weight += partial_weight[w], small += partial_small[w];
        stats[3 + 2 * i] = weight;
        stats[4 + 2 * i] = small;
    }
}

constexpr int NORM_CHUNK = 256;  // rows of B a block of col_norms sums (the host's NORM_CHUNK)

// Sums of squares of B's columns over 256-row chunks, part[chunk·N + n], and, for the rule above,
// their sums of magnitudes and largest magnitudes, part[(chunks + chunk)·N + n] and part[(2·chunks
// + chunk)·N + n]. Summed in a fixed order (no atomics), so that the exponents, and so C, are the
// same from run to run.
extern "C" __global__ void col_norms(const float* B, const int* shift, double* part, int K,
                                     int N)
{
    __shared__ double sums[8][32], sums1[8][32], maxes[8][32];
    __shared__ int shifts[NORM_CHUNK];  // the chunk's shifts along K, read once
    int tx = threadIdx.x % 32, ty = threadIdx.x / 32;
    int n = blockIdx.x * 32 + tx, k0 = blockIdx.y * NORM_CHUNK, k1 = min(K, k0 + NORM_CHUNK);
    for (int k = threadIdx.x; k < NORM_CHUNK; k += blockDim.x)
        shifts[k] = k0 + k < K ? shift[k0 + k] : 0;
    __syncthreads();
    double s = 0.0, s1 = 0.0, largest = 0.0;
    if (n < N) {
        for (int k = k0 + ty; k < k1; k += 8) {
            double v = along(B[static_cast<long long>(k) * N + n], shifts[k - k0], -1);
            s = fma(v, v, s);
            s1 += fabs(v);
            largest = fmax(largest, fabs(v));
        }
    }
    sums[ty][tx] = s, sums1[ty][tx] = s1, maxes[ty][tx] = largest;
    __syncthreads();
    if (ty == 0 && n < N) {
        for (int y = 1; y < 8; ++y)
            s += sums[y][tx], s1 += sums1[y][tx], largest = fmax(largest, maxes[y][tx]);
        long long chunks = gridDim.y;
        part[static_cast<long long>(blockIdx.y) * N + n] = s;
        part[(chunks + blockIdx.y) * N + n] = s1;
        part[(2 * chunks + blockIdx.y) * N + n] = largest;
    }
}

// Rows of K in a tile of scale_cols and rescale_cols (the host's SCALE_TILE).
constexpr int SCALE_TILE = 128;

// B's columns, 32 of them by 128 of K a block: the exponents (from col_norms' chunks) into
// exps[n] (Σx² into norms[M + n], Σ|x| into l1[M + n]), the residues written transposed, column
// n of B as row n of plane l (MODULI planes of N rows of pitch bytes): both operands of the INT8
// product are then K-major. And the columns' share of stats (see scale_rows).
// Four blocks an SM (64 registers a thread), as many as col_norms' reads keep busy.
extern "C" __global__ void __launch_bounds__(256, 4)
    scale_cols(const float* B, const int* shift, const double* part, signed char* res, int* exps,
               int* stats, double* norms, double* l1, int M, int K, int N, int pitch) {
    __shared__ float tile[SCALE_TILE][33];
    __shared__ int exponent[32];
    int tx = threadIdx.x % 32, ty = threadIdx.x / 32;
    // Blocks start in order of x, then y: taken in reverse order of K, they first read the rows
    // of B that col_norms read last, which are still in L2.
    int n0 = blockIdx.x * 32, k0 = (gridDim.y - 1 - blockIdx.y) * SCALE_TILE;
    if (ty == 0) {
        int n = n0 + tx, chunks = (K + NORM_CHUNK - 1) / NORM_CHUNK;
        double norm2 = 0.0, norm1 = 0.0, largest = 0.0;
        if (n < N) {
            for (int c = 0; c < chunks; ++c) norm2 += part[static_cast<long long>(c) * N + n];
            if (blockIdx.y == 0) {
                for (int c = 0; c < chunks; ++c) {
                    norm1 += part[static_cast<long long>(chunks + c) * N + n];
                    largest = fmax(largest, part[static_cast<long long>(2 * chunks + c) * N + n]);
                }
            }
        }
        int e = exponent_for(norm2, K, MODULI);
        if (n < N && blockIdx.y == 0) {
            exps[n] = e;
            norms[M + n] = norm2;
            l1[M + n] = norm1;
            if (e != NONFINITE) raise_to(&stats[1], norm1, static_cast<float>(largest));
        }
        exponent[tx] = e;
    }
#pragma unroll
    for (int j = 0; j < 16; ++j) {
        int k = k0 + ty + 8 * j, n = n0 + tx;
        tile[ty + 8 * j][tx] = k < K && n < N ? B[static_cast<long long>(k) * N + n] : 0.0f;
    }
    __syncthreads();
    // Each thread: 16 consecutive entries of K of one column, one 16-byte store per modulus.
    int c = threadIdx.x / 8, kk = 16 * (threadIdx.x % 8), n = n0 + c;
    if (n >= N || k0 + kk >= K) return;
    Scale scale{exponent[c]};
    Pieces x[16];
    const float limit = SMALL / static_cast<float>(K);
    const bool on = K >= 4;
    int weight = 0, small = 0;
    Coins coins(key_b(n, k0 + kk));
    int shifts[16];
    shifts_at(shift, k0 + kk, K, shifts);
#pragma unroll
    for (int j = 0; j < 16; ++j) {
        float v = along(tile[kk + j][c], shifts[j], -1), scaled = scale(v);
        if (k0 + kk + j < K) tally(v, scaled, limit, weight, small);
        x[j] = pieces(unbiased(scaled, coins.next(), on));
    }
    if (weight > 0) atomicAdd(&stats[3 + 2 * (M + n)], weight);
    if (small > 0) atomicAdd(&stats[4 + 2 * (M + n)], small);
#pragma unroll
    for (int l = 0; l < MODULI; ++l) {
        *reinterpret_cast<uint4*>(res + (static_cast<long long>(l) * N + n) * pitch + k0 + kk) =
            pack(x, l);
    }
}
// The second pass, where choose_moduli chose L > MODULI moduli (else the kernels return at once):
// A's rows (a block each, rows further on taken in turn) and B's columns (32 of them by 128 of K
// a block, tiles further down K taken in turn), their exponents for L moduli into exps and their
// residues into L planes, from the Σx² the first pass kept. The integers reach 2⁶³: six pieces
// each, eight entries at a time (for registers), one 8-byte store per modulus.
extern "C" __global__ void rescale_rows(const float* A, const int* shift, signed char* res,
                                        int* exps, const int* stats, const double* norms, int M,
                                        int K, int pitch)
{
    const int L = chosen(stats);
    if (L == MODULI) return;
    for (int i = blockIdx.x; i < M; i += gridDim.x) {
        Scale scale{exponent_for(norms[i], K, L)};
        if (threadIdx.x == 0) exps[i] = scale.e;
        const float* row = A + static_cast<long long>(i) * K;
        // Eight entries a thread, side by side: a warp's stores of one modulus fill 256 bytes.
        for (int k0 = 8 * threadIdx.x; k0 < K; k0 += 8 * 256) {
            float v[8];
            load(row, shift, k0, K, v);
            Long x[8];
            Coins coins(key_a(i, k0));
#pragma unroll
            for (int j = 0; j < 8; ++j)
                x[j] = long_pieces(unbiased(scale(v[j]), coins.next(), K >= 4));
            signed char* out = res + static_cast<long long>(i) * pitch + k0;
            for (int l = 0; l < L; ++l) {
                signed char* plane = out + static_cast<long long>(l) * M * pitch;
                *reinterpret_cast<uint2*>(plane) = pack8(x, l);
            }
        }
    }
}

extern "C" __global__ void rescale_cols(const float* B, const int* shift, signed char* res,
                                        int* exps, const int* stats, const double* norms, int M,
                                        int K, int N, int pitch)
{
    __shared__ float tile[SCALE_TILE][33];
    __shared__ int exponent[32];
    const int L = chosen(stats);
    if (L == MODULI) return;
    int tx = threadIdx.x % 32, ty = threadIdx.x / 32, tiles = (K + SCALE_TILE - 1) / SCALE_TILE;
    int n0 = blockIdx.x * 32;
    if (ty == 0) {
        int n = n0 + tx;
        int e = n < N ? exponent_for(norms[M + n], K, L) : 0;
        if (n < N && blockIdx.y == 0) exps[n] = e;
        exponent[tx] = e;
    }
    for (int y = blockIdx.y; y < tiles; y += gridDim.y) {
        int k0 = y * SCALE_TILE;
        __syncthreads();  // the exponents are written, and the tile before is used
#pragma unroll
        for (int j = 0; j < 16; ++j) {
            int k = k0 + ty + 8 * j, n = n0 + tx;
            tile[ty + 8 * j][tx] = k < K && n < N ? B[static_cast<long long>(k) * N + n] : 0.0f;
        }
        __syncthreads();
        int c = threadIdx.x / 8, n = n0 + c;
        if (n >= N) continue;
        Scale scale{exponent[c]};
        // The eight threads of a column take 64 entries side by side, then the next 64: their
        // stores of one modulus fill 64 bytes.
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            int kk = 64 * h + 8 * (threadIdx.x % 8);
            if (k0 + kk >= K) break;
            Long x[8];
            Coins coins(key_b(n, k0 + kk));
            int shifts[8];
            shifts_at(shift, k0 + kk, K, shifts);
#pragma unroll
            for (int j = 0; j < 8; ++j) {
                float v = along(tile[kk + j][c], shifts[j], -1);
                x[j] = long_pieces(unbiased(scale(v), coins.next(), K >= 4));
            }
            signed char* out = res + static_cast<long long>(n) * pitch + k0 + kk;
            for (int l = 0; l < L; ++l) {
                signed char* plane = out + static_cast<long long>(l) * N * pitch;
                *reinterpret_cast<uint2*>(plane) = pack8(x, l);
            }
        }
    }
}

// Step 11's choice of paths and moduli: mark_paths (which rows and columns the scaling carries),
// the bound of what each element needs (magnitudes_rows, magnitudes_cols) and choose_moduli.
// Included by the kernel (src/kernel.cu) and the hands-on starting file.

// ANCHOR: apart
// After the scaling: marks[v] = 1 for each row of A (v = i) and column of B (v = M + j) with NaN
// or infinity, 0 for those the rule carries at MODULI moduli, and 2 for the others, which the
// bound (below) looks at again; the flag is set where any vector is marked 2. With COUNT set
// (--moduli), the rule is off: every finite vector is carried at COUNT moduli.
extern "C" __global__ void mark_paths(const int* exps, int* stats, int* marks, int M, int N) {
    bool further = false;
    for (int v = blockIdx.x * blockDim.x + threadIdx.x; v < M + N; v += gridDim.x * blockDim.x) {
        bool row = v < M;
        int mark = exps[v] == NONFINITE ? 1
                   : COUNT == 0 && apart(stats[3 + 2 * v], stats[4 + 2 * v], stats[row ? 1 : 0])
                       ? 2
                       : 0;
        marks[v] = mark;
        further = further || mark == 2;
    }
    if (__syncthreads_or(further) && threadIdx.x == 0) atomicOr(&stats[flag_at(M, N)], 1);
    if (COUNT > MODULI && blockIdx.x == 0 && threadIdx.x == 0) stats[2] = COUNT;
}
// ANCHOR_END: apart

// ANCHOR: bound_rule
// The bound: where the rule above does not carry a vector at MODULI (the flag), what each element
// needs is read from a lower bound of |A||B| itself. Rounding row i at count L moves each entry
// other than zero by less than u_i(L) = 2^(−e_i(L)), so it costs element (i, j) at most
// u_i(L)·(‖b_j‖₁ + K·v_j), the cross term with column j's own rounding v_j included. That is
// within γ_K/4·(|A||B|)ᵢⱼ, as the rule's, once 2^(e_i(L) − e_i) ≥ ratio, e_i the first pass's
// exponent and ratio = (‖b_j‖₁·2^f_j + K)·2⁷²/(K·lower), lower below (|A||B|)ᵢⱼ·2^(46+e_i+f_j).
// It comes from the product below of the magnitudes |a|·2^(e_i+23) and |b|·2^(f_j+23) (at most
// 2^54.5), rounded toward zero to bf16 and raised to FLOOR where the entry is not zero: every pair
// of entries other than zero then adds at least FLOOR² = 2⁻¹²⁶ (an FP32 normal), so a sum of 0
// means that every term has a zero factor and the element is exact. Raising costs at most
// FLOOR·(‖a_i‖₁·2^(e_i+23) + ‖b_j‖₁·2^(f_j+23)) + K·FLOOR², which lower takes away from half the
// sum: rounding the magnitudes down only lowers the products, and the tensor cores' sum, above
// the exact one by a factor 1 + ε at most, ε far below 1, is then still at most twice it.
// Columns likewise, with ‖a_i‖₁.
constexpr float BOUND_SCALE = 4722366482869645213696.0f;  // 2⁷² = 2²⁶ (4/γ_K, over K) · 2⁴⁶
constexpr unsigned short FLOOR_BITS = 0x2000;  // 2⁻⁶³ as a bf16

// |x|·2^shift rounded toward zero to bf16 (its high 16 bits), at least FLOOR where x is not zero:
// the double's product is exact, and each conversion rounds down.
__device__ __forceinline__ unsigned short bf16_down(float x, int shift) {
    if (x == 0.0f) return 0;
    unsigned short m = static_cast<unsigned short>(
        __float_as_uint(__double2float_rz(ldexp(static_cast<double>(x), shift))) >> 16);
    return m > FLOOR_BITS ? m : FLOOR_BITS;
}

// A vector's ‖x‖₁·2^e + K (the ratio's numerator) and FLOOR·‖x‖₁·2^(e+23) (its share of what
// raising costs), as floats rounded up; zeros for a vector of zeros or with NaN or infinity,
// whose elements the bound leaves alone.
__device__ __forceinline__ float2 scaled_l1(double l1, int e, int K) {
    if (e == NONFINITE || l1 == 0.0) return make_float2(0.0f, 0.0f);
    return make_float2(__double2float_ru(ldexp(l1, e) + K),
                       __double2float_ru(ldexp(l1, e - 40)));
}
// ANCHOR_END: bound_rule

// Where the flag is set: |A| scaled and rounded down to bf16, row i of mag (kpitch entries a
// row, zeros past K), and each row's scaled_l1 into sl1[i]. A block a row, rows further on in
// turn.
extern "C" __global__ void magnitudes_rows(const float* A, const int* shift, const int* exps,
                                           const double* l1, const int* stats,
                                           unsigned short* mag, float2* sl1, int M, int N, int K,
                                           int kpitch) {
    if (!stats[flag_at(M, N)]) return;
    for (int i = blockIdx.x; i < M; i += gridDim.x) {
        int e = exps[i];
        const float* row = A + static_cast<long long>(i) * K;
        unsigned short* out = mag + static_cast<long long>(i) * kpitch;
        for (int k = threadIdx.x; k < kpitch; k += blockDim.x)
            out[k] = k < K && e != NONFINITE
                         ? bf16_down(fabsf(along_k(row[k], shift, k, 1)), e + 23)
                         : 0;
        if (threadIdx.x == 0) sl1[i] = scaled_l1(l1[i], e, K);
    }
}

// The same for B's columns, written transposed (column n as row n of mag), 32 columns by 128 of
// K a block, as scale_cols; sl1[M + n] for column n.
extern "C" __global__ void magnitudes_cols(const float* B, const int* shift, const int* exps,
                                           const double* l1, const int* stats,
                                           unsigned short* mag, float2* sl1, int M, int N, int K,
                                           int kpitch) {
    __shared__ float tile[SCALE_TILE][33];
    if (!stats[flag_at(M, N)]) return;
    int tx = threadIdx.x % 32, ty = threadIdx.x / 32;
    int n0 = blockIdx.x * 32, k0 = blockIdx.y * SCALE_TILE;
#pragma unroll
    for (int j = 0; j < 16; ++j) {
        int k = k0 + ty + 8 * j, n = n0 + tx;
        tile[ty + 8 * j][tx] = k < K && n < N ? B[static_cast<long long>(k) * N + n] : 0.0f;
    }
    __syncthreads();
    int c = threadIdx.x / 8, kk = 16 * (threadIdx.x % 8), n = n0 + c;
    if (n >= N) return;
    int e = exps[M + n];
    if (blockIdx.y == 0 && threadIdx.x % 8 == 0) sl1[M + n] = scaled_l1(l1[M + n], e, K);
    unsigned short x[16];
    int shifts[16];
    shifts_at(shift, k0 + kk, K, shifts);
#pragma unroll
    for (int j = 0; j < 16; ++j)
        x[j] = e != NONFINITE ? bf16_down(fabsf(along(tile[kk + j][c], shifts[j], -1)), e + 23) : 0;
    unsigned short* out = mag + static_cast<long long>(n) * kpitch + k0 + kk;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        if (k0 + kk + 8 * h < kpitch) {
            uint4 v;
            v.x = x[8 * h] | static_cast<unsigned>(x[8 * h + 1]) << 16;
            v.y = x[8 * h + 2] | static_cast<unsigned>(x[8 * h + 3]) << 16;
            v.z = x[8 * h + 4] | static_cast<unsigned>(x[8 * h + 5]) << 16;
            v.w = x[8 * h + 6] | static_cast<unsigned>(x[8 * h + 7]) << 16;
            *reinterpret_cast<uint4*>(out + 8 * h) = v;
        }
    }
}

// ANCHOR: choose
// The FP32 path's time in INT8 products (one modulus each): all the rows (or columns) of the
// product cost about 20, from one modulus costing about a fourteenth of SGEMM's time and the path
// running at 0.7× SGEMM; and any rows at all at least the time one block takes to walk K, about
// that of one modulus over 4·10⁷ elements of C (measured on an H100: 41 rows and 36 columns of a
// 4096³ product took 0.8 ms, a modulus 0.15 ms).
constexpr double FP32_IN_MODULI = 20.0;
constexpr double FP32_LEAST = 4e7;

// Where the flag is set, one block: each vector's need, MODULI for those the rule carries, for the
// others the fewest moduli whose exponent grows past the vector's ratio (REACH + 1 if none does);
// L, the count that costs least with the vectors needing more on the FP32 path;
// stats[2] = L where it is above MODULI, the needs counted into the histogram for the report,
// and marks[v] = 1 for the vectors needing more than L (0 for the others).
extern "C" __global__ void __launch_bounds__(1024)
    choose_moduli(const int* exps, const double* norms, int* stats, int* marks, int M, int N,
                  int K) {
    __shared__ int hist[2][HIST_LEN];
    __shared__ int pick;
    if (!stats[flag_at(M, N)]) return;
    for (int t = threadIdx.x; t < 2 * HIST_LEN; t += blockDim.x)
        hist[t / HIST_LEN][t % HIST_LEN] = 0;
    __syncthreads();
    int* need = stats + need_at(M, N);
    for (int v = threadIdx.x; v < M + N; v += blockDim.x) {
        int n = MODULI;
        if (marks[v] == 1) {
            n = REACH + 2;  // NaN or infinity: the FP32 path, whatever the count
        } else if (marks[v] == 2) {
            float ratio = __int_as_float(stats[ratio_at(M, N) + v]);
            n = REACH + 1;
            for (int L = MODULI; L <= REACH; ++L) {
                if (ldexpf(1.0f, exponent_for(norms[v], K, L) - exps[v]) >= ratio) {
                    n = L;
                    break;
                }
            }
        }
        need[v] = n;
        if (n <= REACH + 1) atomicAdd(&hist[v >= M][n], 1);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        double least = 1e300;
        for (int L = MODULI; L <= REACH; ++L) {
            int rows = 0, cols = 0;
            for (int n = L + 1; n <= REACH + 1; ++n) rows += hist[0][n], cols += hist[1][n];
            double least_fp32 = FP32_LEAST / (static_cast<double>(M) * N);
            double cost =
                L + (L > MODULI) + (rows > 0) * least_fp32 + (cols > 0) * least_fp32 +
                FP32_IN_MODULI * (static_cast<double>(rows) / M + static_cast<double>(cols) / N);
            if (cost < least) least = cost, pick = L;
        }
        if (pick > MODULI) stats[2] = pick;
        for (int t = 0; t < 2 * HIST_LEN; ++t)
            stats[hist_at(M, N) + t] = hist[t / HIST_LEN][t % HIST_LEN];
    }
    __syncthreads();
    for (int v = threadIdx.x; v < M + N; v += blockDim.x) marks[v] = need[v] > pick;
}
// ANCHOR_END: choose

// Step 11's equilibration along K, queued before the residues: A's column k times 2^s_k and B's
// row k times 2^-s_k, which leaves every product a_ik·b_kj, and so A·B, exactly as it was.
//
// The scaling to integers that follows gives each row of A (each column of B) one power of two,
// so an entry far below its row's norm keeps few bits. Data whose scales were moved between A's
// columns and B's rows (activations and weights) has rows that spread over many binades along K
// while its products do not: balancing each k's largest magnitude in A's column against B's row
// takes the spread back out, and the integers keep FP32's bits again.
//
//   k_range_a(const float* A, int* range, int M, int K)
//       blocks of 256 values of k by chunks of CHUNK rows: the largest and smallest nonzero
//       finite magnitude of A's column k, into range[4k + 1] and range[4k] (kept as the bits
//       of INF minus the smallest, so that a zeroed workspace and atomicMax serve both)
//   k_range_b(const float* B, int* range, int K, int N)
//       a block of 256 threads per row k (and chunks of columns in y): the same for B's row k,
//       into range[4k + 3] and range[4k + 2]
//   k_shifts(const int* range, int* summary, int K)
//       h_k = (e_B − e_A)/2 rounded down, e the exponents of the two largest magnitudes, summed
//       into summary[3] over the k where both are nonzero, counted in summary[4]
//   k_center(const int* range, int* shift, int* summary, int K)
//       s_k = h_k less the mean of the h (a shift common to every k changes no row's integers),
//       kept where every scaled entry stays a normal number (so each scaled value is exact), else
//       0; summary[0..3]: the most negative shift (as −s), the largest, how many are not 0
//   k_scale(const float* X, const int* shift, float* out, long long rows, int cols, int sign,
//           int along_rows)
//       out = X with entry (r, c) times 2^(sign·s), s the shift of c (A: columns) or of r (B:
//       rows); a grid that goes round
//
// Entries of NaN or infinity keep their class (a power of two does not change it); the FP32 path
// still takes their rows and columns from the unscaled A and B.

constexpr int CHUNK = 256;
constexpr int INF_BITS = 0x7f800000;

// Bits of |v| where v is a nonzero finite number, else 0.
__device__ __forceinline__ int magnitude_bits(float v) {
    int b = __float_as_int(v) & 0x7fffffff;
    return (b != 0 && b < INF_BITS) ? b : 0;
}

extern "C" __global__ void k_range_a(const float* A, int* range, int M, int K) {
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= K) return;
    int hi = 0, lo = INF_BITS;
    for (long long chunk = blockIdx.y; chunk * CHUNK < M; chunk += gridDim.y) {
        long long end = min((long long)M, (chunk + 1) * CHUNK);
        for (long long i = chunk * CHUNK; i < end; ++i) {
            int b = magnitude_bits(A[i * K + k]);
            if (b != 0) {
                hi = max(hi, b);
                lo = min(lo, b);
            }
        }
    }
    if (hi != 0) {
        atomicMax(&range[4 * k], INF_BITS - lo);
        atomicMax(&range[4 * k + 1], hi);
    }
}

extern "C" __global__ void k_range_b(const float* B, int* range, int K, int N) {
    int k = blockIdx.x;
    int hi = 0, lo = INF_BITS;
    const float* row = B + (long long)k * N;
    for (long long j = (long long)blockIdx.y * blockDim.x + threadIdx.x; j < N;
         j += (long long)gridDim.y * blockDim.x) {
        int b = magnitude_bits(row[j]);
        if (b != 0) {
            hi = max(hi, b);
            lo = min(lo, b);
        }
    }
    // The warp's largest and smallest, then one pair of atomics a warp.
    for (int o = 16; o > 0; o >>= 1) {
        hi = max(hi, __shfl_xor_sync(0xffffffffu, hi, o));
        lo = min(lo, __shfl_xor_sync(0xffffffffu, lo, o));
    }
    if ((threadIdx.x & 31) == 0 && hi != 0) {
        atomicMax(&range[4 * k + 2], INF_BITS - lo);
        atomicMax(&range[4 * k + 3], hi);
    }
}

// The exponent of a magnitude's bits: −127 for a subnormal.
__device__ __forceinline__ int exponent_of(int bits) { return (bits >> 23) - 127; }

// Whether A's column k and B's row k both hold a nonzero finite entry; if so, their exponents'
// half-difference and the shifts that keep every scaled value exact: A's column times 2^s and B's
// row times 2^-s keep every entry below 2^127, and one scaled down at 2^-126 or above (a
// subnormal one is not scaled down at all).
__device__ __forceinline__ bool balance(const int* range, int k, int& half, int& lowest,
                                        int& highest) {
    int a_hi = range[4 * k + 1], b_hi = range[4 * k + 3];
    if (a_hi == 0 || b_hi == 0) return false;
    int ea = exponent_of(a_hi), eb = exponent_of(b_hi);
    int ea_lo = exponent_of(INF_BITS - range[4 * k]);
    int eb_lo = exponent_of(INF_BITS - range[4 * k + 2]);
    half = (eb - ea) >> 1;
    lowest = max(max(min(0, -126 - ea_lo), eb - 126), -126);
    highest = min(min(126 - ea, max(0, 126 + eb_lo)), 126);
    return true;
}

// Each k's half-difference summed into summary[3], and the k that have one counted in summary[4]:
// their mean is a shift common to every k, which changes no row's integers, so it is taken out.
extern "C" __global__ void k_shifts(const int* range, int* summary, int K) {
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    int half, lowest, highest;
    if (k < K && balance(range, k, half, lowest, highest)) {
        atomicAdd(&summary[3], half);
        atomicAdd(&summary[4], 1);
    }
}

// s_k: the half-difference less the mean, kept where every scaled value stays exact (else 0);
// 0 where A's column or B's row holds nothing but zeros (its products are 0 whatever s is).
extern "C" __global__ void k_center(const int* range, int* shift, int* summary, int K) {
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= K) return;
    int count = summary[4];
    int mean = count > 0 ? __float2int_rn((float)summary[3] / (float)count) : 0;
    int half, lowest, highest, s = 0;
    if (balance(range, k, half, lowest, highest) && lowest <= highest) {
        s = min(max(half - mean, lowest), highest);
    } else if (range[4 * k + 1] != 0 && range[4 * k + 3] == 0) {
        // B's row k is zeros, so A's column k adds nothing to C: scaled down as far as it stays
        // exact, it no longer takes bits from the rest of its rows.
        int ea_lo = exponent_of(INF_BITS - range[4 * k]);
        s = min(0, max(-126, -126 - ea_lo));
    } else if (range[4 * k + 3] != 0 && range[4 * k + 1] == 0) {
        int eb_lo = exponent_of(INF_BITS - range[4 * k + 2]);
        s = max(0, min(126, 126 + eb_lo));
    }
    shift[k] = s;
    if (s != 0) {
        atomicMax(&summary[0], -s);
        atomicMax(&summary[1], s);
        atomicAdd(&summary[2], 1);
    }
}

// 2^e for e from −126 to 127, exactly.
__device__ __forceinline__ float power_of_two(int e) { return __int_as_float((127 + e) << 23); }

extern "C" __global__ void k_scale(const float* X, const int* shift, float* out, long long rows,
                                   int cols, int sign, int along_rows) {
    long long total = rows * cols;
    for (long long at = (long long)blockIdx.x * blockDim.x + threadIdx.x; at < total;
         at += (long long)gridDim.x * blockDim.x) {
        int s = shift[along_rows ? at / cols : at % cols];
        out[at] = s == 0 ? X[at] : X[at] * power_of_two(sign * s);
    }
}

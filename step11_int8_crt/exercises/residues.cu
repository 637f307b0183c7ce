// EXERCISE (step 11, hands-on): put back the residues and their rebuild.
//
// Starts from: step 11's kernel (src/kernel.cu) with its residues taken out. residue_byte, which
// turns a scaled entry into its residue modulo one modulus, returns 0; and reconstruct adds no
// residue to its sums. Everything else is in place: the scaling, the INT8 products, the rule
// that sends some rows and columns to the FP32 path.
// To do: TODO 1 (residue_byte) and TODO 2 (reconstruct) (docs/src/step11.md, "Exercises").
// Run, from the repository's root, on an H100 or H200, or on the CPU with --emulate:
//     cargo run --release -p step11_int8_crt -- --kernel step11_int8_crt/exercises/residues.cu
// Check: before, `verify   FAIL`, with C 0 wherever the FP32 path does not write it; when
// done, `verify   PASS` per element and normwise (on a GPU at step 11's speed). A wrong residue
// or weight also fails, at nearly every element (the chapter's "Exercises" says why).
// Solution: exercises/residues.diff; in step11_int8_crt/,
//     patch -o /tmp/solved.cu exercises/residues.cu exercises/residues.diff
// gives src/kernel.cu.
//
// Step 11: FP32 accuracy from the INT8 tensor cores. Each row of A and each column of B is
// scaled by a power of two and rounded to an integer; the integer product is computed exactly
// from its residues modulo a few coprime moduli near 256, one INT8 product per modulus, and
// rebuilt by the Chinese remainder theorem (the Ozaki scheme II).
//
// Idea: step 08's machinery (a producer warpgroup feeding wgmma through the copy engine and an
// mbarrier pipeline), with 8-bit operands. An INT8 product sums exactly in 32-bit integers, so
// its only error is none at all; what it cannot do is hold more than 8 bits of an operand. The
// residues fix that: integers of about 22 bits are cut into seven 8-bit residues, seven exact
// INT8 products give the integer product modulo each modulus, and the remainder theorem puts
// the one integer back together. The only rounding is where A and B become integers, and where
// the rebuilt integer becomes an FP32 number again.
//
// The kernels of every product: scale_rows (A's rows: exponents and residues for MODULI moduli),
// col_norms and scale_cols (B's columns, written transposed so that both operands are K-major, as
// the INT8 wgmma wants them in shared memory), mark_paths (the rows and columns the rule carries
// at MODULI), and where it does not carry them all, magnitudes_rows and _cols, bound (what each
// element needs, from a bf16 product of |A| and |B|) and choose_moduli (L, the moduli the product
// takes, up to MOST); rescale_rows and rescale_cols (the residues again for L moduli, where
// L > MODULI), matmul (one INT8 product per modulus, each reduced to its residue) and
// reconstruct, or reconstruct_wide where L > MODULI. The course's tiled FP32 kernel then computes
// the rows and columns no count carries.
//
// What it buys: FP32 accuracy at several times cuBLAS SGEMM's speed (docs/src/step11.md
// measures both).

// STAGES, GROUP and MODULI are set at compile time (-D NAME=value) from the step's lib.rs.

// ANCHOR: moduli
// The moduli, pairwise coprime, in the order they are taken. The first pass takes the first
// MODULI; where the data needs longer integers (see choose_moduli), the product takes up to MOST.
constexpr int MOST = 16;
__host__ __device__ constexpr int modulus(int l)
{
    constexpr int list[MOST] = {256, 255, 253, 251, 247, 241, 239, 233,
                                229, 227, 223, 217, 211, 199, 197, 193};
    return list[l];
}

// The most moduli the data may call for: the rows and columns that would need more take the FP32
// path.
constexpr int REACH = MOST;

// P, the product of the first n moduli, while it stays below 2⁶⁴ (n ≤ 8).
__host__ __device__ constexpr unsigned long long product(int n)
{
    unsigned long long p = 1;
    for (int l = 0; l < n; ++l) p *= modulus(l);
    return p;
}

constexpr unsigned long long P = product(MODULI);

// The remainder theorem's weight of modulus l: w ≡ 1 (mod m_l) and w ≡ 0 modulo every other
// modulus, so Σ w_l·r_l ≡ c modulo each of them, and so modulo P. With q = P / m_l, w = q·y
// where y is the inverse of q modulo m_l; w < P.
__host__ __device__ constexpr unsigned long long weight(int l)
{
    unsigned long long q = P / modulus(l);
    int m = modulus(l), r = static_cast<int>(q % m), y = 1;
    while (r * y % m != 1) ++y;
    return q * y;
}

// What the first pass's MODULI moduli need, each of the MOST moduli's own constants, and, for
// each count L of moduli the data may call for, the weights as 128-bit integers.
struct Table {
    float modulus[MOST];
    float inverse[MOST];    // 1/m, rounded to a float
    float high[MOST];       // 2²⁴ mod m
    float middle[MOST];     // 2¹² mod m
    float power[MOST][6];   // 2^(12k) mod m, from −m/2 to m/2: the pieces of a longer integer
    double weight[8];       // the first pass's weights, rounded to doubles
    unsigned low[8];        // the same modulo 2³²
    double product[MOST + 1];          // P_L, the product of the first L moduli (rounded)
    unsigned wide[MOST + 1][MOST][4];  // P_L's weights w_l, four 32-bit limbs, the lowest first
    double share[MOST + 1][MOST];      // w_l / P_L = y_l / m_l, rounded
    unsigned minus[MOST + 1][4];       // 2¹²⁸ − P_L
};

// x·s for a 128-bit x in four 32-bit limbs and a small s (the product below 2¹²⁸).
__host__ __device__ constexpr void times(unsigned (&x)[4], unsigned s)
{
    unsigned long long carry = 0;
    for (int j = 0; j < 4; ++j) {
        unsigned long long t = static_cast<unsigned long long>(x[j]) * s + carry;
        x[j] = static_cast<unsigned>(t);
        carry = t >> 32;
    }
}

__host__ __device__ constexpr Table make_table()
{
    Table t{};
    for (int l = 0; l < MOST; ++l) {
        int m = modulus(l);
        t.modulus[l] = static_cast<float>(m);
        t.inverse[l] = 1.0f / static_cast<float>(m);
        t.high[l] = static_cast<float>((1 << 24) % m);
        t.middle[l] = static_cast<float>((1 << 12) % m);
        int power = 1;
        for (int k = 0; k < 6; ++k) {
            t.power[l][k] = static_cast<float>(power > m / 2 ? power - m : power);
            power = power * 4096 % m;
        }
    }
    for (int l = 0; l < MODULI; ++l) {
        t.weight[l] = static_cast<double>(weight(l));
        t.low[l] = static_cast<unsigned>(weight(l));
    }
    for (int L = 1; L <= MOST; ++L) {
        unsigned p[4] = {1, 0, 0, 0};
        t.product[L] = 1.0;
        for (int k = 0; k < L; ++k) times(p, modulus(k)), t.product[L] *= modulus(k);
        unsigned long long carry = 1;  // 2¹²⁸ − P_L = (2¹²⁸ − 1 − P_L) + 1
        for (int j = 0; j < 4; ++j) {
            unsigned long long v = static_cast<unsigned long long>(~p[j]) + carry;
            t.minus[L][j] = static_cast<unsigned>(v);
            carry = v >> 32;
        }
        for (int l = 0; l < L; ++l) {
            int m = modulus(l), r = 1, y = 1;
            unsigned w[4] = {1, 0, 0, 0};
            for (int k = 0; k < L; ++k) {
                if (k != l) times(w, modulus(k)), r = r * (modulus(k) % m) % m;
            }
            while (r * y % m != 1) ++y;
            times(w, y);
            for (int j = 0; j < 4; ++j) t.wide[L][l][j] = w[j];
            t.share[L][l] = static_cast<double>(y) / m;
        }
    }
    return t;
}

__constant__ Table TABLE = make_table();

// An exponent that marks a row of A or a column of B holding NaN or infinity.
constexpr int NONFINITE = 1 << 30;
// ANCHOR_END: moduli

// ANCHOR: scale
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

// ANCHOR: pieces
// Adding 1.5·2²³ to a float of magnitude below 2²² rounds it to an integer (to nearest, ties to
// even), which then sits in the low bits of the sum's pattern.
constexpr float MAGIC = 12582912.0f;

__device__ __forceinline__ float round_float(float x) {
    return __fadd_rn(__fadd_rn(x, MAGIC), -MAGIC);
}

// The integer nearest v (|v| < 2³²) in three exact pieces, x = hi·2²⁴ + mid·2¹² + lo, with
// |hi| < 2⁸ and |mid|, |lo| ≤ 2¹¹, so that x modulo m is a small sum of floats.
struct Pieces {
    float hi, mid, lo;
};

__device__ __forceinline__ Pieces pieces(float v)
{
    float hi = round_float(v * (1.0f / 16777216.0f));
    float rest = __fmaf_rn(-hi, 16777216.0f, v);
    float mid = round_float(rest * (1.0f / 4096.0f));
    float lo = round_float(__fmaf_rn(-mid, 4096.0f, rest));
    return {hi, mid, lo};
}
// ANCHOR_END: pieces

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

// ANCHOR: residue_byte
// x's residue modulo m_l, from −m/2 to m/2, as its low byte: t = hi·(2²⁴ mod m) + mid·(2¹²
// mod m) + lo ≡ x is below 2²⁰, so t·(1/m) is within 2⁻¹¹ of t/m, closer than any half-integer
// t/m can be (1/(2m) away), and rounding it gives the quotient exactly. For m = 256 a residue
// of +128 has the byte of −128, the same residue.
__device__ __forceinline__ unsigned residue_byte(const Pieces& x, int l)
{
    // TODO 1: return x's residue modulo m = TABLE.modulus[l], taken between −m/2 and m/2, as
    // the low byte of its two's complement: the signed byte the INT8 products read. Use no
    // division and no conversion to an integer: reduce the three pieces to one small float that
    // has x's residue, find its quotient by m exactly, and read the byte out of a float's bits,
    // as round_float does. The idea, and why each step is exact: docs/src/step11-arithmetic.md,
    // "Residues without division"; TABLE (make_table, above) holds the constants it needs.
    return 0u;
}
// ANCHOR_END: residue_byte

// The integer nearest v (|v| < 2⁶³, as a product of up to MOST moduli needs) in six pieces,
// x = Σ p_k·2^(12k), |p_k| ≤ 2¹¹ (|p_5| ≤ 8), peeled off from the top: each subtraction is
// exact, and the last piece does the rounding.
struct Long {
    float p[6];
};

__device__ __forceinline__ Long long_pieces(float v)
{
    Long x;
    float rest = v;
#pragma unroll
    for (int k = 5; k > 0; --k) {
        x.p[k] = round_float(rest * __int_as_float((127 - 12 * k) << 23));
        rest = __fmaf_rn(-x.p[k], __int_as_float((127 + 12 * k) << 23), rest);
    }
    x.p[0] = round_float(rest);
    return x;
}

// x's residue modulo m_l as for three pieces: with the powers of 2¹² taken from −m/2 to m/2, t is
// below 2²¹ and t·(1/m) within 2⁻¹⁰ of t/m, still closer than any half-integer t/m can be.
__device__ __forceinline__ unsigned residue_byte(const Long& x, int l)
{
    // TODO 1, for six pieces: the same byte as the three-piece residue_byte above gives, for the
    // longer integers the second pass's moduli need (TABLE.power[l][k] is 2^(12k) mod m_l).
    return 0u;
}

// The residues of 8 longer integers modulo m_l, packed into 8 bytes.
__device__ __forceinline__ uint2 pack8(const Long (&x)[8], int l)
{
    unsigned w[2];
#pragma unroll
    for (int q = 0; q < 2; ++q) {
        w[q] = residue_byte(x[4 * q], l) | residue_byte(x[4 * q + 1], l) << 8 |
               residue_byte(x[4 * q + 2], l) << 16 | residue_byte(x[4 * q + 3], l) << 24;
    }
    return make_uint2(w[0], w[1]);
}

// The residues of 16 integers modulo m_l, packed into 16 bytes.
__device__ __forceinline__ uint4 pack(const Pieces (&x)[16], int l)
{
    unsigned w[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) {
        w[q] = residue_byte(x[4 * q], l) | residue_byte(x[4 * q + 1], l) << 8 |
               residue_byte(x[4 * q + 2], l) << 16 | residue_byte(x[4 * q + 3], l) << 24;
    }
    return make_uint4(w[0], w[1], w[2], w[3]);
}

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

// Entries k0 … k0 + N - 1 of a row of K (zeros past its end), 16-byte loads where rows allow.
template <int N>
__device__ __forceinline__ void load(const float* row, int k0, int K, float (&v)[N])
{
    static_assert(N % 4 == 0, "load reads whole float4s");
    if (K % 4 == 0 && k0 + N <= K) {
#pragma unroll
        for (int q = 0; q < N / 4; ++q) {
            float4 f = *reinterpret_cast<const float4*>(row + k0 + 4 * q);
            v[4 * q] = f.x, v[4 * q + 1] = f.y, v[4 * q + 2] = f.z, v[4 * q + 3] = f.w;
        }
    } else {
#pragma unroll
        for (int j = 0; j < N; ++j) v[j] = k0 + j < K ? row[k0 + j] : 0.0f;
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
    scale_rows(const float* A, signed char* res, int* exps, int* stats, double* norms, double* l1,
               int M, int K, int pitch) {
    __shared__ double partial[8], partial1[8];
    __shared__ float partial_max[8];
    __shared__ int partial_weight[8], partial_small[8];
    int i = blockIdx.x, lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    int stride = 16 * blockDim.x;
    const float* row = A + static_cast<long long>(i) * K;
    float first[16];
    load(row, 16 * threadIdx.x, K, first);
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
        load(row, k0, K, v);
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
            load(row, k0, K, v);
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
extern "C" __global__ void col_norms(const float* B, double* part, int K, int N)
{
    __shared__ double sums[8][32], sums1[8][32], maxes[8][32];
    int tx = threadIdx.x % 32, ty = threadIdx.x / 32;
    int n = blockIdx.x * 32 + tx, k0 = blockIdx.y * NORM_CHUNK, k1 = min(K, k0 + NORM_CHUNK);
    double s = 0.0, s1 = 0.0, largest = 0.0;
    if (n < N) {
        for (int k = k0 + ty; k < k1; k += 8) {
            double v = B[static_cast<long long>(k) * N + n];
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
extern "C" __global__ void scale_cols(const float* B, const double* part, signed char* res,
                                      int* exps, int* stats, double* norms, double* l1, int M,
                                      int K, int N, int pitch) {
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
#pragma unroll
    for (int j = 0; j < 16; ++j) {
        float scaled = scale(tile[kk + j][c]);
        if (k0 + kk + j < K) tally(tile[kk + j][c], scaled, limit, weight, small);
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
extern "C" __global__ void rescale_rows(const float* A, signed char* res, int* exps,
                                        const int* stats, const double* norms, int M, int K,
                                        int pitch)
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
            load(row, k0, K, v);
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

extern "C" __global__ void rescale_cols(const float* B, signed char* res, int* exps,
                                        const int* stats, const double* norms, int M, int K,
                                        int N, int pitch)
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
#pragma unroll
            for (int j = 0; j < 8; ++j)
                x[j] = long_pieces(unbiased(scale(tile[kk + j][c]), coins.next(), K >= 4));
            signed char* out = res + static_cast<long long>(n) * pitch + k0 + kk;
            for (int l = 0; l < L; ++l) {
                signed char* plane = out + static_cast<long long>(l) * N * pitch;
                *reinterpret_cast<uint2*>(plane) = pack8(x, l);
            }
        }
    }
}
// ANCHOR_END: scale

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
extern "C" __global__ void magnitudes_rows(const float* A, const int* exps, const double* l1,
                                           const int* stats, unsigned short* mag, float2* sl1,
                                           int M, int N, int K, int kpitch) {
    if (!stats[flag_at(M, N)]) return;
    for (int i = blockIdx.x; i < M; i += gridDim.x) {
        int e = exps[i];
        const float* row = A + static_cast<long long>(i) * K;
        unsigned short* out = mag + static_cast<long long>(i) * kpitch;
        for (int k = threadIdx.x; k < kpitch; k += blockDim.x)
            out[k] = k < K && e != NONFINITE ? bf16_down(fabsf(row[k]), e + 23) : 0;
        if (threadIdx.x == 0) sl1[i] = scaled_l1(l1[i], e, K);
    }
}

// The same for B's columns, written transposed (column n as row n of mag), 32 columns by 128 of
// K a block, as scale_cols; sl1[M + n] for column n.
extern "C" __global__ void magnitudes_cols(const float* B, const int* exps, const double* l1,
                                           const int* stats, unsigned short* mag, float2* sl1,
                                           int M, int N, int K, int kpitch) {
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
#pragma unroll
    for (int j = 0; j < 16; ++j)
        x[j] = e != NONFINITE ? bf16_down(fabsf(tile[kk + j][c]), e + 23) : 0;
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

// ANCHOR: constants
constexpr int BM = 128;                     // rows of C per block: two consumers of 64
constexpr int BN = 256;                     // columns of C per block: the N of each wgmma
constexpr int BK = 128;                     // bytes of one row in the 128-byte swizzle: 128 of K
constexpr int CONSUMERS = BM / 64;          // consumer warpgroups, one 64-row strip of C each
constexpr int THREADS = 128 * (CONSUMERS + 1);
constexpr int A_TILE = BM * BK;             // bytes of one buffer's A tile (BM rows of BK)
constexpr int B_TILE = BN * BK;             // bytes of one buffer's B tile (BN rows of Bᵀ)
constexpr unsigned STAGE_BYTES = A_TILE + B_TILE;
// Registers per thread after the producer hands its share to the consumers (setmaxnreg).
constexpr int PRODUCER_REGS = 40;
constexpr int BLOCK_REGS = THREADS * ((65536 / THREADS) / 8 * 8);
constexpr int CONSUMER_REGS_FIT = (BLOCK_REGS - 128 * PRODUCER_REGS) / (128 * CONSUMERS) / 8 * 8;
constexpr int CONSUMER_REGS = CONSUMER_REGS_FIT < 240 ? CONSUMER_REGS_FIT : 240;
// ANCHOR_END: constants

// The driver's tensor map, opaque to the kernel: NVRTC has no CUDA headers.
struct alignas(64) CUtensorMap {
    unsigned long long opaque[16];
};

// ANCHOR: sync
__device__ __forceinline__ unsigned smem(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(unsigned long long* bar, unsigned count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem(bar)), "r"(count));
}

// One arrival that also tells the barrier how many bytes the copies will deliver.
__device__ __forceinline__ void mbar_expect_bytes(unsigned long long* bar, unsigned bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem(bar)),
                 "r"(bytes)
                 : "memory");
}

__device__ __forceinline__ void mbar_arrive(unsigned long long* bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem(bar)) : "memory");
}

// Waits until the barrier's phase of the given parity has completed.
__device__ __forceinline__ void mbar_wait(unsigned long long* bar, unsigned parity)
{
    unsigned done = 0;
    while (!done) {
        asm volatile(
            "{\n.reg .pred p;\n"
            "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
            "selp.u32 %0, 1, 0, p;\n}\n"
            : "=r"(done)
            : "r"(smem(bar)), "r"(parity)
            : "memory");
    }
}

// The copy engine moves the box at (k, row) of plane z of the map's residues into dst, and
// counts its bytes on bar.
__device__ __forceinline__ void tma_load(unsigned char* dst, const CUtensorMap* map,
                                         unsigned long long* bar, int k, int row, int z) {
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], "
        "[%1, {%2, %3, %4}], [%5];" ::
            "r"(smem(dst)),
        "l"(map), "r"(k), "r"(row), "r"(z), "r"(smem(bar))
        : "memory");
}
// ANCHOR_END: sync

// The copy engine moves the box at (k, row) of a two-coordinate map into dst, counted on bar.
__device__ __forceinline__ void tma_load_2d(unsigned char* dst, const CUtensorMap* map,
                                            unsigned long long* bar, int k, int row) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], "
        "[%1, {%2, %3}], [%4];" ::"r"(smem(dst)),
        "l"(map), "r"(k), "r"(row), "r"(smem(bar))
        : "memory");
}

// ANCHOR: wgmma
// A shared-memory operand: rows of 128 bytes (128 of K), 16-byte pieces swizzled, 8-row groups
// 1024 bytes apart.
__device__ __forceinline__ unsigned long long descriptor(const unsigned char* tile)
{
    unsigned long long addr = smem(tile);
    return ((addr & 0x3FFFF) >> 4) | (1ull << 16) | ((1024ull >> 4) << 32) | (1ull << 62);
}

__device__ __forceinline__ void wgmma_fence() {
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
template <int N> __device__ __forceinline__ void wgmma_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}

// d (a 64×256 tile of C, 128 int32 a thread) += the 64×32 slice of A that a points at times the
// 32×256 slice of B whose transpose b points at, both signed bytes, summed exactly in int32.
// d is overwritten when accumulate is 0. The braces list every accumulator register.
__device__ __forceinline__ void wgmma(int (&d)[BN / 2], unsigned long long a, unsigned long long b,
                                      int accumulate) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k32.s32.s8.s8 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
        "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, "
        "%111, "
        "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, "
        "%127}, "
        "%128, %129, p;\n}\n"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]),
          "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]),
          "+r"(d[14]), "+r"(d[15]), "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]),
          "+r"(d[21]), "+r"(d[22]), "+r"(d[23]), "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]),
          "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31]), "+r"(d[32]), "+r"(d[33]), "+r"(d[34]),
          "+r"(d[35]), "+r"(d[36]), "+r"(d[37]), "+r"(d[38]), "+r"(d[39]), "+r"(d[40]), "+r"(d[41]),
          "+r"(d[42]), "+r"(d[43]), "+r"(d[44]), "+r"(d[45]), "+r"(d[46]), "+r"(d[47]), "+r"(d[48]),
          "+r"(d[49]), "+r"(d[50]), "+r"(d[51]), "+r"(d[52]), "+r"(d[53]), "+r"(d[54]), "+r"(d[55]),
          "+r"(d[56]), "+r"(d[57]), "+r"(d[58]), "+r"(d[59]), "+r"(d[60]), "+r"(d[61]), "+r"(d[62]),
          "+r"(d[63]), "+r"(d[64]), "+r"(d[65]), "+r"(d[66]), "+r"(d[67]), "+r"(d[68]), "+r"(d[69]),
          "+r"(d[70]), "+r"(d[71]), "+r"(d[72]), "+r"(d[73]), "+r"(d[74]), "+r"(d[75]), "+r"(d[76]),
          "+r"(d[77]), "+r"(d[78]), "+r"(d[79]), "+r"(d[80]), "+r"(d[81]), "+r"(d[82]), "+r"(d[83]),
          "+r"(d[84]), "+r"(d[85]), "+r"(d[86]), "+r"(d[87]), "+r"(d[88]), "+r"(d[89]), "+r"(d[90]),
          "+r"(d[91]), "+r"(d[92]), "+r"(d[93]), "+r"(d[94]), "+r"(d[95]), "+r"(d[96]), "+r"(d[97]),
          "+r"(d[98]), "+r"(d[99]), "+r"(d[100]), "+r"(d[101]), "+r"(d[102]), "+r"(d[103]),
          "+r"(d[104]), "+r"(d[105]), "+r"(d[106]), "+r"(d[107]), "+r"(d[108]), "+r"(d[109]),
          "+r"(d[110]), "+r"(d[111]), "+r"(d[112]), "+r"(d[113]), "+r"(d[114]), "+r"(d[115]),
          "+r"(d[116]), "+r"(d[117]), "+r"(d[118]), "+r"(d[119]), "+r"(d[120]), "+r"(d[121]),
          "+r"(d[122]), "+r"(d[123]), "+r"(d[124]), "+r"(d[125]), "+r"(d[126]), "+r"(d[127])
        : "l"(a), "l"(b), "r"(accumulate));
}
// ANCHOR_END: wgmma

// ANCHOR: residue
// Rows of a consumer's strip of residues as it waits in shared memory: 256 bytes and 16 more,
// so that the 8 rows a warp writes at once fall in different banks.
constexpr int STRIP_PITCH = BN + 16;

// The tile's sums modulo M_L, a byte each, into plane `out` (pitch bytes a row): M_L is a
// constant, so the compiler divides by multiplying. acc[4j + 2h + v] is row 16·warp + g + 8h of
// the consumer's 64-row strip, column 8j + 2t + v. The strip goes through shared memory (the
// pipeline's tiles, all read by now), then out in 16-byte pieces, whole rows at a time.
template <int M_L>
__device__ __forceinline__ void store_residues(const int (&acc)[BN / 2], unsigned char* strip,
                                               unsigned char* out, int row0, int M, int col0, int N,
                                               int pitch) {
    int warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
#pragma unroll
        for (int j = 0; j < BN / 8; ++j) {
            int r0 = acc[4 * j + 2 * h] % M_L, r1 = acc[4 * j + 2 * h + 1] % M_L;
            r0 += r0 < 0 ? M_L : 0;
            r1 += r1 < 0 ? M_L : 0;
            *reinterpret_cast<unsigned short*>(strip + (16 * warp + g + 8 * h) * STRIP_PITCH +
                                               8 * j + 2 * t) =
                static_cast<unsigned short>(r0 | r1 << 8);
        }
    }
    asm volatile("bar.sync %0, 128;" ::"r"(threadIdx.x / 128) : "memory");  // this warpgroup alone
#pragma unroll
    for (int q = 0; q < 64 * BN / 16 / 128; ++q) {
        int piece = threadIdx.x % 128 + 128 * q, r = piece / (BN / 16),
            n = col0 + 16 * (piece % (BN / 16));
        // A row's 16 bytes past N stay within its padding, which nothing reads.
        if (row0 + r < M && n < N) {
            *reinterpret_cast<uint4*>(out + static_cast<long long>(row0 + r) * pitch + n) =
                *reinterpret_cast<const uint4*>(strip + r * STRIP_PITCH + 16 * (piece % (BN / 16)));
        }
    }
}
// ANCHOR_END: residue

// ANCHOR: kernel
// One INT8 product per block and modulus z = blockIdx.z: C's BM×BN tile of Σ_k r_a·r_b, exact
// in int32, reduced modulo m_z into plane z of c_res (planes of M rows of N bytes, padded to
// 16). The grid has a z for each of the first pass's MODULI moduli; where choose_moduli chose
// L more, a block takes the moduli z, z + MODULI, … below L in turn. A, B, C and exps are for a
// kernel that rebuilds C itself.
extern "C" __global__ void __launch_bounds__(THREADS, 1)
    matmul(int M, int N, int K, const float* A, const float* B, float* C, unsigned char* c_res,
           const int* exps, const int* marks, const int* stats,
           const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map) {
    // STAGES tiles of A and B, then the barriers; the swizzle needs 1024-byte alignment.
    extern __shared__ unsigned char raw[];
    unsigned char* As = reinterpret_cast<unsigned char*>(
        (reinterpret_cast<unsigned long long>(raw) + 1023) & ~1023ull);
    unsigned char* Bs = As + STAGES * A_TILE;
    unsigned long long* full = reinterpret_cast<unsigned long long*>(Bs + STAGES * B_TILE);
    unsigned long long* empty = full + STAGES;

    // Blocks in launch order walk down groups of GROUP block-rows before moving right, so the
    // blocks resident at once share tiles of A and of B in L2.
    int bid = blockIdx.x + gridDim.x * blockIdx.y;
    int first = bid / (GROUP * gridDim.x) * GROUP;
    int rows = min(GROUP, static_cast<int>(gridDim.y) - first);
    int row0 = (first + bid % (GROUP * gridDim.x) % rows) * BM;
    int col0 = bid % (GROUP * gridDim.x) / rows * BN;
    int k_tiles = (K + BK - 1) / BK;
    int role = threadIdx.x / 128;  // 0: the producer; 1..CONSUMERS: consumers
    // The grid has a z for each of the first pass's MODULI moduli; where the data called for L
    // more, the block takes z, then z + MODULI, … below L in turn. The count of tiles, `it`, goes
    // on from one modulus to the next, and so do the barriers' phases.
    const int L = chosen(stats);
    // A tile whose rows, or whose columns, all take the FP32 path has nothing to compute here.
    int tid = threadIdx.x;
    if (!__syncthreads_or(tid < BM && row0 + tid < M && !marks[row0 + tid]) ||
        !__syncthreads_or(tid < BN && col0 + tid < N && !marks[M + col0 + tid]))
        return;

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(&full[s], 1);                  // the producer's arrival, plus the bytes
            mbar_init(&empty[s], 4 * CONSUMERS);     // one arrival per consumer warp
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();

    if (role == 0) {
        // The producer: one thread keeps the copy engine STAGES tiles ahead of the consumers.
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(PRODUCER_REGS));
        for (int z = blockIdx.z, it0 = 0; z < L; z += gridDim.z, it0 += k_tiles) {
            if (threadIdx.x == 0) {
                for (int it = it0; it < it0 + k_tiles; ++it) {
                    int s = it % STAGES, kt = it - it0;
                    // Buffer s was last filled for tile it - STAGES; wait until it has been used.
                    if (it >= STAGES) mbar_wait(&empty[s], (it / STAGES - 1) % 2);
                    mbar_expect_bytes(&full[s], STAGE_BYTES);
                    tma_load(As + s * A_TILE, &a_map, &full[s], kt * BK, row0, z);
                    tma_load(Bs + s * B_TILE, &b_map, &full[s], kt * BK, col0, z);
                }
            }
            // The consumers' strips are out. Producer and consumers meet at two different
            // places in the code, so the barrier is the unaligned kind, numbered apart from
            // the warpgroups' 1 to 3, and counts the whole block.
            if (z + gridDim.z < L) asm volatile("barrier.sync 4, %0;" ::"n"(THREADS) : "memory");
        }
    } else {
        // A consumer: a 64-row strip of the block's C, as BN/2 accumulators a thread.
        asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(CONSUMER_REGS));
        int lane = threadIdx.x % 32;
        for (int z = blockIdx.z, it0 = 0; z < L; z += gridDim.z, it0 += k_tiles) {
            // ANCHOR: consumer
            int acc[BN / 2] = {};

            for (int it = it0; it < it0 + k_tiles; ++it) {
                int s = it % STAGES;
                mbar_wait(&full[s], (it / STAGES) % 2);
                unsigned long long a = descriptor(As + s * A_TILE + (role - 1) * 64 * BK);
                unsigned long long b = descriptor(Bs + s * B_TILE);
                wgmma_fence();
#pragma unroll
                for (int k32 = 0; k32 < BK / 32; ++k32) {
                    wgmma(acc, a + (32 * k32 >> 4), b + (32 * k32 >> 4),
                          1);  // 32 bytes further along the rows
                }
                wgmma_commit();
                // The products of the tile before have now read their buffer: hand it back.
                wgmma_wait<1>();
                if (it > it0 && lane == 0) mbar_arrive(&empty[(it - 1) % STAGES]);
            }
            wgmma_wait<0>();
            if (lane == 0) mbar_arrive(&empty[(it0 + k_tiles - 1) % STAGES]);
            // The strips below overwrite the pipeline's first tiles: wait until the other
            // consumer's products have read them too (barrier 3: the two consumer warpgroups).
            asm volatile("bar.sync 3, 256;" ::: "memory");

            // Each sum reduced modulo m_z, a byte each, into plane z of c_res.
            int pitch = (N + 15) / 16 * 16;
            unsigned char* out = c_res + static_cast<long long>(z) * M * pitch;
            unsigned char* strip = As + (role - 1) * 64 * STRIP_PITCH;
            int strip0 = row0 + 64 * (role - 1);
            switch (z) {
            case 0: store_residues<modulus(0)>(acc, strip, out, strip0, M, col0, N, pitch); break;
            case 1: store_residues<modulus(1)>(acc, strip, out, strip0, M, col0, N, pitch); break;
            case 2: store_residues<modulus(2)>(acc, strip, out, strip0, M, col0, N, pitch); break;
            case 3: store_residues<modulus(3)>(acc, strip, out, strip0, M, col0, N, pitch); break;
            case 4: store_residues<modulus(4)>(acc, strip, out, strip0, M, col0, N, pitch); break;
            case 5: store_residues<modulus(5)>(acc, strip, out, strip0, M, col0, N, pitch); break;
            case 6: store_residues<modulus(6)>(acc, strip, out, strip0, M, col0, N, pitch); break;
            case 7: store_residues<modulus(7)>(acc, strip, out, strip0, M, col0, N, pitch); break;
            case 8: store_residues<modulus(8)>(acc, strip, out, strip0, M, col0, N, pitch); break;
            case 9: store_residues<modulus(9)>(acc, strip, out, strip0, M, col0, N, pitch); break;
            case 10: store_residues<modulus(10)>(acc, strip, out, strip0, M, col0, N, pitch); break;
            case 11: store_residues<modulus(11)>(acc, strip, out, strip0, M, col0, N, pitch); break;
            case 12: store_residues<modulus(12)>(acc, strip, out, strip0, M, col0, N, pitch); break;
            case 13: store_residues<modulus(13)>(acc, strip, out, strip0, M, col0, N, pitch); break;
            case 14: store_residues<modulus(14)>(acc, strip, out, strip0, M, col0, N, pitch); break;
            default: store_residues<modulus(15)>(acc, strip, out, strip0, M, col0, N, pitch); break;
            }
            // ANCHOR_END: consumer
            // The copy engine may write where the strips were once every thread is here.
            if (z + gridDim.z < L) {
                asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
                asm volatile("barrier.sync 4, %0;" ::"n"(THREADS) : "memory");  // with the producer
            }
        }
    }
}
// ANCHOR_END: kernel

// ANCHOR: bound_kernel
// d (a 64×256 tile, 128 floats a thread) += the 64×16 slice of bf16 magnitudes of A that a points
// at times the 16×256 slice whose transpose b points at (both K-major, 32 bytes of each row).
__device__ __forceinline__ void wgmma_bf16(float (&d)[128], unsigned long long a,
                                           unsigned long long b) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, "
        "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, "
        "%38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, "
        "%56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, "
        "%74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, "
        "%92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, "
        "%108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, "
        "%123, %124, %125, %126, %127"
        "}, %128, %129, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
          "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
          "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
          "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
          "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
          "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
          "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
          "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]),
          "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]),
          "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]),
          "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]),
          "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]),
          "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]),
          "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
          "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]),
          "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]),
          "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]),
          "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
        : "l"(a), "l"(b), "r"(1));
}

// The bound's tiles, whatever matmul's: 128×256, four buffers of 64 of K (128 bytes a row).
constexpr int BOUND_BN = 256;
constexpr int BOUND_STAGES = 4;
constexpr int BOUND_B_TILE = BOUND_BN * BK;
constexpr unsigned BOUND_STAGE_BYTES = A_TILE + BOUND_B_TILE;

// Where the flag is set, the product of the magnitudes (magnitudes_rows and _cols) on the bf16
// tensor cores, with matmul's pipeline and launch order, a tile 64 deep (128 bytes) a buffer; each
// element's ratios (bound_rule) raised into its row's and its column's, by atomicMax on the bits of
// a positive float. The maps are of the magnitudes, two coordinates {k, row}.
extern "C" __global__ void __launch_bounds__(THREADS, 1)
    bound(int M, int N, int K, int* stats, const float2* sl1,
          const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map) {
    if (!stats[flag_at(M, N)]) return;
    extern __shared__ unsigned char raw[];
    unsigned char* As = reinterpret_cast<unsigned char*>(
        (reinterpret_cast<unsigned long long>(raw) + 1023) & ~1023ull);
    unsigned char* Bs = As + BOUND_STAGES * A_TILE;
    unsigned long long* full =
        reinterpret_cast<unsigned long long*>(Bs + BOUND_STAGES * BOUND_B_TILE);
    unsigned long long* empty = full + BOUND_STAGES;
    int bid = blockIdx.x + gridDim.x * blockIdx.y;
    int first = bid / (GROUP * gridDim.x) * GROUP;
    int rows = min(GROUP, static_cast<int>(gridDim.y) - first);
    int row0 = (first + bid % (GROUP * gridDim.x) % rows) * BM;
    int col0 = bid % (GROUP * gridDim.x) / rows * BOUND_BN;
    int k_tiles = (K + BK / 2 - 1) / (BK / 2);  // 64 bf16 a row of the swizzle
    int role = threadIdx.x / 128;
    if (threadIdx.x == 0) {
        for (int s = 0; s < BOUND_STAGES; ++s) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], 4 * CONSUMERS);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (role == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(PRODUCER_REGS));
        if (threadIdx.x == 0) {
            for (int it = 0; it < k_tiles; ++it) {
                int s = it % BOUND_STAGES;
                if (it >= BOUND_STAGES) mbar_wait(&empty[s], (it / BOUND_STAGES - 1) % 2);
                mbar_expect_bytes(&full[s], BOUND_STAGE_BYTES);
                tma_load_2d(As + s * A_TILE, &a_map, &full[s], it * (BK / 2), row0);
                tma_load_2d(Bs + s * BOUND_B_TILE, &b_map, &full[s], it * (BK / 2), col0);
            }
        }
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(CONSUMER_REGS));
    int lane = threadIdx.x % 32;
    float acc[BOUND_BN / 2] = {};
    for (int it = 0; it < k_tiles; ++it) {
        int s = it % BOUND_STAGES;
        mbar_wait(&full[s], (it / BOUND_STAGES) % 2);
        unsigned long long a = descriptor(As + s * A_TILE + (role - 1) * 64 * BK);
        unsigned long long b = descriptor(Bs + s * BOUND_B_TILE);
        wgmma_fence();
#pragma unroll
        for (int k16 = 0; k16 < BK / 32; ++k16)
            wgmma_bf16(acc, a + (32 * k16 >> 4), b + (32 * k16 >> 4));
        wgmma_commit();
        wgmma_wait<1>();
        if (it > 0 && lane == 0) mbar_arrive(&empty[(it - 1) % BOUND_STAGES]);
    }
    wgmma_wait<0>();

    // acc[4j + 2h + v] is row 16·warp + g + 8h of the strip, column 8j + 2t + v.
    int warp = (threadIdx.x / 32) % 4, g = lane / 4, t = lane % 4;
    int r0 = row0 + 64 * (role - 1) + 16 * warp + g;
    const float scale = BOUND_SCALE / static_cast<float>(K),
                raised = static_cast<float>(K) * 1.1754943508222875e-38f;
    int* ratio = stats + ratio_at(M, N);
    float2 a_l1[2];
    float row_ratio[2] = {0.0f, 0.0f};
#pragma unroll
    for (int h = 0; h < 2; ++h)
        a_l1[h] = r0 + 8 * h < M ? sl1[r0 + 8 * h] : make_float2(0.0f, 0.0f);
#pragma unroll
    for (int j = 0; j < BOUND_BN / 8; ++j) {
#pragma unroll
        for (int v = 0; v < 2; ++v) {
            int c = col0 + 8 * j + 2 * t + v;
            float2 b_l1 = c < N ? sl1[M + c] : make_float2(0.0f, 0.0f);
            float col_ratio = 0.0f;
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                float sum = acc[4 * j + 2 * h + v];
                if (a_l1[h].x > 0.0f && b_l1.x > 0.0f && sum > 0.0f) {
                    // At most 0 where raising may account for all of it: an infinite ratio.
                    float lower = fmaxf(0.5f * sum - a_l1[h].y - b_l1.y - raised, 0.0f);
                    row_ratio[h] = fmaxf(row_ratio[h], b_l1.x * scale / lower);
                    col_ratio = fmaxf(col_ratio, a_l1[h].x * scale / lower);
                }
            }
#pragma unroll
            for (int o = 4; o < 32; o *= 2)
                col_ratio = fmaxf(col_ratio, __shfl_xor_sync(0xFFFFFFFFu, col_ratio, o));
            if (g == 0 && col_ratio > 0.0f) atomicMax(&ratio[M + c], __float_as_int(col_ratio));
        }
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        float r = row_ratio[h];
        r = fmaxf(r, __shfl_xor_sync(0xFFFFFFFFu, r, 1));
        r = fmaxf(r, __shfl_xor_sync(0xFFFFFFFFu, r, 2));
        if (t == 0 && r > 0.0f) atomicMax(&ratio[r0 + 8 * h], __float_as_int(r));
    }
}
// ANCHOR_END: bound_kernel

// Elements j0 … j0 + 3 of a row of C (those within N), one 16-byte store where rows allow.
__device__ __forceinline__ void store4(float* row, int j0, int N, const float (&c)[4])
{
    if (N % 4 == 0) {
        *reinterpret_cast<float4*>(row + j0) = make_float4(c[0], c[1], c[2], c[3]);
    } else {
        for (int v = 0; v < 4 && j0 + v < N; ++v) row[j0 + v] = c[v];
    }
}

// ANCHOR: reconstruct
// Columns of C a thread rebuilds, the bytes of one 4-byte load (the host's REBUILD_COLS).
constexpr int REBUILD_COLS = 4;

// C from the residues of its integers: s = Σ w_l·r_l ≡ c (mod P); the multiple of P nearest s
// taken away leaves c, the one integer within P/2 of zero, and the exponents of the row and the
// column scale it back. s reaches 2⁷⁵, so in doubles it is off by up to about 2²²: enough to find
// the multiple of P (c stays 2⁻¹⁹·P/2 away from ±P/2), not to give c, which may be far smaller.
// The same sum modulo 2³² in unsigned integers is exact, and gives the last bits. Adding 1.5·2⁵²
// (or 1.5·2⁶⁴) rounds a double to an integer (a multiple of 2¹²) whose low bits sit in the low
// word of its pattern, so that no conversion between doubles and 64-bit integers is needed. The
// rows on the FP32 path are left to it, and so are the columns (what is written there is
// written again). Four columns a thread, a row of C a block in y. No __launch_bounds__: left to
// itself the compiler keeps to few registers, so that many blocks share a multiprocessor and keep
// loads in flight (step 11's chapter gives the count); held to five blocks, it spills.
extern "C" __global__ void reconstruct(const unsigned char* c_res, const int* exps,
                                       const int* marks, const int* stats, float* C, int M,
                                       int N) {
    int pitch = (N + 15) / 16 * 16;
    int j0 = REBUILD_COLS * (blockIdx.x * blockDim.x + threadIdx.x);
    if (j0 >= N || chosen(stats) != MODULI) return;  // more moduli: reconstruct_wide's
    const double p = static_cast<double>(P), inverse = 1.0 / static_cast<double>(P);
    const double two52 = 4503599627370496.0;  // 2⁵² + b, read as a double, is exact for a byte b
    const double round52 = 6755399441055744.0;  // 1.5·2⁵²: rounds |x| < 2⁵¹ to an integer
    const double round64 =
        27670116110564327424.0;  // 1.5·2⁶⁴: rounds |x| < 2⁶³ to a multiple of 2¹²
    const double int_bias = 4503601774854144.0;          // 2⁵² + 2³¹
    for (int i = blockIdx.y; i < M; i += gridDim.y) {
        if (marks[i]) continue;
        double s[4] = {};
        unsigned low[4] = {};
#pragma unroll
        for (int l = 0; l < MODULI; ++l) {
            unsigned bytes = *reinterpret_cast<const unsigned*>(
                c_res + (static_cast<long long>(l) * M + i) * pitch + j0);
#pragma unroll
            for (int v = 0; v < 4; ++v) {
                unsigned b = (bytes >> (8 * v)) & 0xFF;
                // TODO 2: add residue b of modulus l, times its weight, into both of element
                // v's sums: s[v], in doubles, near enough to find the multiple of P, and low[v],
                // the same sum modulo 2³², exact. The idea: docs/src/step11.md, "The rebuild";
                // TABLE holds the weights in both forms, and two52 (above) says how a byte
                // becomes a double exactly.
                (void)b;
            }
        }
        int ea = exps[i];
        float c[4];
#pragma unroll
        for (int v = 0; v < 4; ++v) {
            int j = min(j0 + v, N - 1), eb = exps[M + j];
            if (eb == NONFINITE) {
                c[v] = 0.0f;  // the FP32 path's column
            } else {
                double t = fma(s[v], inverse, round52);  // 1.5·2⁵² + q, q = the multiple
                double q = t - round52;
                double u = fma(-q, p, s[v]) + round64;  // 1.5·2⁶⁴ + c, c rounded to 2¹²
                double rounded = u - round64;
                // c − rounded is within ±2³¹: the difference of their low 32 bits is all of it.
                unsigned exact_low =
                    low[v] - static_cast<unsigned>(__double2loint(t)) * static_cast<unsigned>(P);
                int delta =
                    static_cast<int>(exact_low - (static_cast<unsigned>(__double2loint(u)) << 12));
                double integer =
                    rounded + (__hiloint2double(0x43300000, delta ^ 0x80000000) - int_bias);
                c[v] = static_cast<float>(integer * __hiloint2double((1023 - ea - eb) << 20, 0));
            }
        }
        store4(C + static_cast<long long>(i) * N, j0, N, c);
    }
}
// ANCHOR_END: reconstruct

// ANCHOR: reconstruct_wide
// C as reconstruct gives it, where choose_moduli chose L moduli, more than the first pass's: P_L
// reaches 2¹²⁶, beyond what a double or a 64-bit integer holds. s = Σ w_l·r_l is summed exactly
// modulo 2¹²⁸ in four 32-bit limbs (each limb's sum of products stays below 2⁴⁵ in 64 bits), and
// the multiple of P_L to take away is q = round(s/P_L) = round(Σ r_l·(y_l/m_l)), which doubles
// give exactly (s/P_L stays 2⁻²¹ from a half-integer, their error is below 2⁻³⁶). s − q·P_L
// modulo 2¹²⁸ is c in two's complement; its magnitude becomes a double, then a float. Grid-
// stride over the rows, so that the launch costs little where it has nothing to do.
extern "C" __global__ void reconstruct_wide(const unsigned char* c_res, const int* exps,
                                            const int* marks, const int* stats, float* C, int M,
                                            int N)
{
    const int L = chosen(stats);
    int pitch = (N + 15) / 16 * 16;
    int j0 = REBUILD_COLS * (blockIdx.x * blockDim.x + threadIdx.x);
    if (j0 >= N || L == MODULI) return;
    for (int row = blockIdx.y; row < M; row += gridDim.y) {
        if (marks[row]) continue;
        unsigned long long limb[4][4] = {};  // [column][limb]
        double share[4] = {};
#pragma unroll
        for (int l = 0; l < MOST; ++l) {
            if (l >= L) break;
            unsigned bytes = *reinterpret_cast<const unsigned*>(
                c_res + (static_cast<long long>(l) * M + row) * pitch + j0);
#pragma unroll
            for (int v = 0; v < 4; ++v) {
                unsigned r = (bytes >> (8 * v)) & 0xFF;
#pragma unroll
                for (int j = 0; j < 4; ++j)
                    limb[v][j] += static_cast<unsigned long long>(TABLE.wide[L][l][j]) * r;
                share[v] = fma(TABLE.share[L][l], static_cast<double>(r), share[v]);
            }
        }
        int ea = exps[row];
        float c[4];
#pragma unroll
        for (int v = 0; v < 4; ++v) {
            int j = min(j0 + v, N - 1), eb = exps[M + j];
            unsigned q = static_cast<unsigned>(rint(share[v]));
#pragma unroll
            for (int k = 0; k < 4; ++k)
                limb[v][k] += static_cast<unsigned long long>(TABLE.minus[L][k]) * q;
            limb[v][1] += limb[v][0] >> 32;
            limb[v][2] += limb[v][1] >> 32;
            limb[v][3] += limb[v][2] >> 32;
            unsigned long long high = limb[v][3] << 32 | (limb[v][2] & 0xFFFFFFFFull),
                               low = limb[v][1] << 32 | (limb[v][0] & 0xFFFFFFFFull);
            bool negative = high >> 63;
            if (negative) {  // the magnitude: 2¹²⁸ − (high, low)
                low = ~low + 1;
                high = ~high + (low == 0);
            }
            double magnitude = fma(__ull2double_rn(high), 18446744073709551616.0,
                                   __ull2double_rn(low));
            double integer = negative ? -magnitude : magnitude;
            c[v] = eb == NONFINITE
                       ? 0.0f
                       : static_cast<float>(integer * __hiloint2double((1023 - ea - eb) << 20, 0));
        }
        store4(C + static_cast<long long>(row) * N, j0, N, c);
    }
}
// ANCHOR_END: reconstruct_wide

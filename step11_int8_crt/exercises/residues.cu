// EXERCISE (step 11, hands-on): put back the residues and their rebuild.
//
// Starts from: step 11's kernel (src/kernel.cu) with its residues taken out. residue_byte, which
// turns a scaled entry into its residue modulo one modulus, returns 0; and reconstruct adds no
// residue to its sums. Everything else is in place: the scaling, the INT8 products, the rule
// that sends some rows and columns to the FP32 path. This file holds what the exercise is about
// (the moduli, the residues, the rebuild); the rest is the step's include files, src/scaling.cuh,
// src/choose.cuh and src/int8_product.cuh, which the #include lines take from the program
// wherever this file lies.
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
// the rows and columns no count carries. This file holds the remainder theorem's arithmetic: the
// moduli, the residues and the rebuild; the scaling, the choice of paths and moduli, and the INT8
// products are its include files (src/scaling.cuh, src/choose.cuh, src/int8_product.cuh).
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

// The exponents, the unbiased rounding and the kernels that scale A and B and write their
// residues (through pack, above): src/scaling.cuh.
#include "scaling.cuh"

// Which rows and columns take the FP32 path, and how many moduli the product takes:
// src/choose.cuh.
#include "choose.cuh"

// The INT8 products, one per modulus, each leaving the residues of C's tile:
// src/int8_product.cuh.
#include "int8_product.cuh"

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

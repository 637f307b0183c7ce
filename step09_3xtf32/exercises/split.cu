// EXERCISE (step 09, hands-on): split the operands into two TF32 parts; issue three products.
//
// Starts from: this step's kernel with the split left out. A's small part is written as zero,
//   B's small fragments are zero, and each 8-deep step issues one wgmma, big·big: the product of
//   operands rounded to TF32, with TF32's error. The pipeline, the accumulators (part, acc,
//   total) and the rows computed apart are done. The Hopper helpers (wgmma among them) and the
//   marking of B's columns are the step's src/hopper.cuh and src/columns.cuh, which the two
//   #include lines take from the program wherever this file lies.
// To do: the three TODOs below: TODO 1 in split4(), TODOs 2 and 3 in the consumer in matmul().
//   Each operand must reach the tensor cores as two TF32 numbers, and each product of the sum
//   as the three products of the chapter's "The idea".
// Run, on an H100 or H200, or on the emulator without a GPU (add --emulate on a machine with
//   one; it runs at a small shape and predicts an H100's time):
//   cargo run --release -p step09_3xtf32 -- --kernel step09_3xtf32/exercises/split.cu
// Check: before, `verify FAIL`: the normwise line fails by far (TF32's error), and so does the
//   per-element line, whose bound is a worst case. When done, `verify PASS · held to FP32
//   limits, a strict FP32 product's`, at about step 09's speed (docs/src/step09.md,
//   "Hands-on", gives it). A correction left out still fails the normwise line.
// Solution: exercises/split.diff; in step09_3xtf32/,
//   patch -o /tmp/solved.cu exercises/split.cu exercises/split.diff
// gives src/kernel.cu.
//
// Step 09: FP32 accuracy from TF32 tensor cores. Every operand x is split into two TF32
// numbers, x = big + small, and three products, big·big + big·small + small·big, stand in for
// each product of the sum: only small·small (2⁻²² of it) is left out.
//
// Idea: step 08's machinery, each 8-deep step issued three times. B's fragments are split in
// registers as they are loaded (two conversions and a subtraction per float). A is the
// shared-memory operand, so its parts must lie in shared memory: split_a, queued before every
// launch, writes A's big and small parts to a workspace, and the copy engine brings a tile of
// each per slice, picked by a third coordinate of A's tensor map. Both parts are rounded to
// TF32 already, so the tensor cores' truncation of what they read changes nothing. Every row of
// A and column of B is scaled by a power of two first, so that tiny and huge data split as
// well as data near 1 (see scaling).
//
// What it buys: FP32 accuracy (an error below cuBLAS SGEMM's from K of about a thousand on) at
// well beyond SGEMM's speed (docs/src/step09.md measures both). 128-row blocks, so that each
// consumer has room for the slice's sum, a running sum and a total (see the accumulators).

// BN, STAGES, GROUP are set at compile time (-D NAME=value) from the step's lib.rs.

// ANCHOR: constants
constexpr int BM = 128;                     // rows of C per block: the N of each wgmma
constexpr int BK = 32;                      // floats in one 128-byte row: the swizzle's width
constexpr int CONSUMERS = BN / 64;          // consumer warpgroups, one 64-column strip of C each
constexpr int THREADS = 128 * (CONSUMERS + 1);
constexpr int A_TILE = BM * BK;  // floats of one part of a buffer's A tile (BM rows of BK)
constexpr int B_BOX = BK * 32;              // floats of one 32-column box of B (BK rows of 32)
constexpr int B_TILE = BK * BN;             // floats of one buffer's B tile
constexpr int FLUSH = 32;  // slices summed in registers before the total takes them
constexpr unsigned STAGE_BYTES = 4 * (2 * A_TILE + B_TILE);  // both parts of A, and B
// Registers per thread after the producer hands its share to the consumers (setmaxnreg):
// the block's registers, less the producer's, split among the consumers, in steps of 8.
constexpr int PRODUCER_REGS = 40;
constexpr int BLOCK_REGS = THREADS * ((65536 / THREADS) / 8 * 8);
constexpr int CONSUMER_REGS_FIT = (BLOCK_REGS - 128 * PRODUCER_REGS) / (128 * CONSUMERS) / 8 * 8;
constexpr int CONSUMER_REGS = CONSUMER_REGS_FIT < 240 ? CONSUMER_REGS_FIT : 240;
// ANCHOR_END: constants

// The tensor map, the barriers, the copies and the wgmma wrappers: src/hopper.cuh.
#include "hopper.cuh"

// ANCHOR: fragment
// Column, within its 32-column box of B, of the fragment rows g (and g + 8: the next column)
// of a lane in the given half of the box. Each row of the box is 8 pieces of 4 floats, stored
// at piece ^ (row % 8). Lanes g = 0..3 read pieces p and p + 4 of 4 different rows, which the
// swizzle sends to 8 different places: every 8-byte load of the half-warp hits its own banks.
__device__ __forceinline__ int fragment_col(int g, int half)
{
    int piece = 2 * half + g / 4 + 4 * ((g / 2) % 2);
    return 4 * piece + 2 * (g % 2);
}

// Two neighbouring floats at (row, col) of a swizzled 32-column box.
__device__ __forceinline__ float2 load_pair(const float* box, int row, int col)
{
    return *reinterpret_cast<const float2*>(box + row * 32 + 4 * ((col / 4) ^ (row % 8)) + col % 4);
}
// ANCHOR_END: fragment

// ANCHOR: split_head
// x rounded to the nearest TF32 number (ties away from zero): its 13 low mantissa bits zero.
__device__ __forceinline__ float tf32(float x)
{
    unsigned r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
    return __uint_as_float(r);
}

// ANCHOR: scaling
// Each row of A and each column of B is first scaled by a power of two, 2^s, which changes no
// bit of a mantissa: s brings the vector's largest magnitude to [2⁴⁸, 2⁴⁹) (s kept within
// FP32's exponents, so that 2^s is a float). The product of a row and a column then comes out
// scaled by 2^(s_row + s_col), and the epilogue takes that back with one rounding.
__device__ __forceinline__ int scale_exponent(float largest)
{
    if (largest == 0.0f || !(largest <= 0x1.fffffep127f)) return 0;
    return min(127, max(-126, 48 - ilogbf(largest)));
}

__device__ __forceinline__ float power_of_two(int s) { return __int_as_float((s + 127) << 23); }

// x·2^e rounded once to a float: exact in double, whose range holds it, then rounded.
__device__ __forceinline__ float scale_back(float x, int e)
{
    return static_cast<float>(static_cast<double>(x) *
                              __longlong_as_double(static_cast<long long>(e + 1023) << 52));
}

// Whether the split carries a vector once scaled by 2^s, from its largest magnitude and its least
// other than zero: no NaN or infinity (whose parts make ∞ − ∞), every entry other than zero at
// least 2⁻¹⁰⁰ once scaled, and at least 2⁻¹⁰⁰ times any entry of the vectors it meets, given by
// the least of their scaled entries, `met`. A product the kernel forms of two entries' parts
// (big·big, big·small, small·big; a small part is 0 or at least 2⁻²³ of its entry's power of
// two, whose product with the other's is then at least 2⁻¹⁰²) then lies from 2⁻¹²⁵ to 2⁹⁸: a
// normal float, never flushed, and K of them sum below 2¹²⁸ while K < 2³⁰. B's columns are
// decided first, against met = 2⁻⁵⁰: each spans up to 98 binades. A's rows then meet the least
// scaled entry of the carried columns, so a row may span up to 148 binades where B's columns
// span fewer. The split keeps FP32's accuracy; the rows and columns it does not carry are marked,
// and the course's tiled FP32 kernel computes them, beside the product.
__device__ __forceinline__ bool carried(bool finite, float largest, float least, int s, float met)
{
    float low = ldexpf(least, s);
    return finite && (largest == 0.0f || (low >= 0x1p-100f && low * met >= 0x1p-100f));
}

// The least scaled entry of the carried columns, which scale_cols leaves in one int as
// 0x7FFFFFFF less its bits (0: no carried column holds an entry other than zero), and split_a
// reads back.
__device__ __forceinline__ int least_bits(float low) { return 0x7FFFFFFF - __float_as_int(low); }
__device__ __forceinline__ float least_value(int bits)
{
    return bits == 0 ? __int_as_float(0x7F800000) : __int_as_float(0x7FFFFFFF - bits);
}

// The largest magnitude of a vector's entries, the least other than zero, and whether all are
// finite, taken an entry at a time.
struct Range {
    float largest = 0.0f, least = 0x1p127f * 2.0f;
    bool finite = true;
    __device__ __forceinline__ void take(float x)
    {
        float m = fabsf(x);
        finite = finite && m <= 0x1.fffffep127f;
        largest = fmaxf(largest, m);
        if (m > 0.0f) least = fminf(least, m);
    }
};
// ANCHOR_END: scaling

// Entries k0 … k0 + 3 of a row of K (zeros past its end), one 16-byte load where rows allow.
__device__ __forceinline__ void load4(const float* row, int k0, int K, float (&x)[4])
{
    if (K % 4 == 0 && k0 < K) {
        float4 v = *reinterpret_cast<const float4*>(row + k0);
        x[0] = v.x, x[1] = v.y, x[2] = v.z, x[3] = v.w;
    } else {
#pragma unroll
        for (int j = 0; j < 4; ++j) x[j] = k0 + j < K ? row[k0 + j] : 0.0f;
    }
}
// ANCHOR_END: split_head

// ANCHOR: split4
// Four entries of a row scaled by f, split, and their big and small parts stored at parts + at
// and parts + small + at: rows of pitch ≥ K floats, a multiple of 4, so one 16-byte store each
// (zeros past K).
__device__ __forceinline__ void split4(const float (&x)[4], float f, float* parts, long long small,
                                       long long at)
{
    float two[2][4];  // big and small parts of the four entries
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        float a = x[j] * f, big = tf32(a);
        two[0][j] = big;
        // TODO 1 (A's small part): big carries a's leading bits. two[1][j] must carry what
        // big left of a, as a number the tensor cores read whole (the chapter's "The idea":
        // why forming it loses nothing, and keeping it loses at most 2^-23 of a).
        two[1][j] = 0.0f;
    }
    *reinterpret_cast<float4*>(parts + at) =
        make_float4(two[0][0], two[0][1], two[0][2], two[0][3]);
    *reinterpret_cast<float4*>(parts + small + at) =
        make_float4(two[1][0], two[1][1], two[1][2], two[1][3]);
}
// ANCHOR_END: split4

// ANCHOR: split_rows
// A's rows, a block of 256 threads each (rows taken in turn): the row's exponent into exps[i],
// marks[i] = 1 if the split does not carry it, and its two parts once scaled (split4's, TODO
// 1), into parts[0..M) and parts[M..2M) as rows of
// pitch floats. The first 4096 entries of a row stay in registers between the two passes; the
// rest is read again. `col_least`: the carried columns' least scaled entry (see carried).
// Queued by the host before every launch.
extern "C" __global__ void split_a(const float* A, float* parts, int M, int K, int pitch,
                                   int* marks, int* exps, const int* col_least) {
    __shared__ float tops[8], lows[8];
    float met = least_value(*col_least);
    __shared__ int finites[8];
    long long small = static_cast<long long>(M) * pitch;
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    for (int i = blockIdx.x; i < M; i += gridDim.x) {
        const float* row = A + static_cast<long long>(i) * K;
        float first[4][4];
        Range r;
#pragma unroll
        for (int q = 0; q < 4; ++q) {
            load4(row, 4 * threadIdx.x + 1024 * q, K, first[q]);
            r.take(first[q][0]), r.take(first[q][1]), r.take(first[q][2]), r.take(first[q][3]);
        }
        for (int k0 = 4 * threadIdx.x + 4096; k0 < K; k0 += 1024) {
            float x[4];
            load4(row, k0, K, x);
            r.take(x[0]), r.take(x[1]), r.take(x[2]), r.take(x[3]);
        }
#pragma unroll
        for (int o = 16; o > 0; o /= 2) {
            r.largest = fmaxf(r.largest, __shfl_xor_sync(0xFFFFFFFFu, r.largest, o));
            r.least = fminf(r.least, __shfl_xor_sync(0xFFFFFFFFu, r.least, o));
        }
        r.finite = __all_sync(0xFFFFFFFFu, r.finite);
        if (lane == 0) tops[warp] = r.largest, lows[warp] = r.least, finites[warp] = r.finite;
        __syncthreads();
        for (int w = 0; w < 8; ++w) {
            r.largest = fmaxf(r.largest, tops[w]);
            r.least = fminf(r.least, lows[w]);
            r.finite = r.finite && finites[w];
        }
        __syncthreads();  // the next row may write the partials again
        int s = scale_exponent(r.largest);
        if (threadIdx.x == 0) {
            exps[i] = s;
            if (!carried(r.finite, r.largest, r.least, s, met)) marks[i] = 1;
        }
        float f = power_of_two(s);
        long long at = static_cast<long long>(i) * pitch;
#pragma unroll
        for (int q = 0; q < 4; ++q) {
            int k0 = 4 * threadIdx.x + 1024 * q;
            if (k0 < K) split4(first[q], f, parts, small, at + k0);
        }
        for (int k0 = 4 * threadIdx.x + 4096; k0 < K; k0 += 1024) {
            float x[4];
            load4(row, k0, K, x);
            split4(x, f, parts, small, at + k0);
        }
    }
}
// ANCHOR_END: split_rows

// B's columns marked and scaled, as split_a does A's rows: src/columns.cuh.
#include "columns.cuh"

// ANCHOR: kernel
extern "C" __global__ void __launch_bounds__(THREADS, 1)
    matmul(int M, int N, int K, const float* A, const float* B, float* C,
           const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
           const int* exps, const int* marks, float* slices, int* arrivals) {
    // STAGES tiles of A (two parts each) and B, then the barriers; the swizzle needs 1024-byte
    // alignment.
    extern __shared__ unsigned char raw[];
    float* As =
        reinterpret_cast<float*>((reinterpret_cast<unsigned long long>(raw) + 1023) & ~1023ull);
    float* Bs = As + STAGES * 2 * A_TILE;
    unsigned long long* full = reinterpret_cast<unsigned long long*>(Bs + STAGES * B_TILE);
    unsigned long long* empty = full + STAGES;

    // Blocks in launch order walk down groups of GROUP block-rows before moving right, so the
    // blocks resident at once share tiles of A and of B in L2.
    int bid = blockIdx.x + gridDim.x * blockIdx.y;
    int first = bid / (GROUP * gridDim.x) * GROUP;
    int rows = min(GROUP, static_cast<int>(gridDim.y) - first);
    int row0 = (first + bid % (GROUP * gridDim.x) % rows) * BM;
    int col0 = bid % (GROUP * gridDim.x) / rows * BN;
    // ANCHOR: split_k
    // Where the tiles are fewer than the SMs (or SPLIT_K asks), the grid has gridDim.z blocks a
    // tile, block z taking its share of the tile's 32-deep tiles of K, [kt_begin, kt_end).
    int k_tiles = (K + BK - 1) / BK;
    int kt_begin = blockIdx.z * k_tiles / gridDim.z,
        kt_end = (blockIdx.z + 1) * k_tiles / gridDim.z;
    // ANCHOR_END: split_k
    // Whether the tile has a row and a column not marked: else it is the FP32 path's alone
    // (read here, met at the barrier below, while the loads of the scales are in flight too).
    bool open_row = threadIdx.x < BM && row0 + threadIdx.x < M && !marks[row0 + threadIdx.x];
    bool open_col = threadIdx.x < BN && col0 + threadIdx.x < N && !marks[M + col0 + threadIdx.x];
    int role = threadIdx.x / 128;  // 0: the producer; 1..CONSUMERS: consumers
    // 2^s for each column of the block's B (see scaling).
    __shared__ alignas(8) float col_scale[BN];
    for (int c = threadIdx.x; c < BN; c += THREADS)
        col_scale[c] = power_of_two(col0 + c < N ? exps[M + col0 + c] : 0);

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(&full[s], 1);                  // the producer's arrival, plus the bytes
            mbar_init(&empty[s], 4 * CONSUMERS);     // one arrival per consumer warp
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    if (!__syncthreads_or(open_row) || !__syncthreads_or(open_col)) return;

    if (role == 0) {
        // The producer: one thread keeps the copy engine STAGES tiles ahead of the consumers.
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(PRODUCER_REGS));
        if (threadIdx.x == 0) {
            for (int kt = kt_begin; kt < kt_end; ++kt) {
                int it = kt - kt_begin, s = it % STAGES;
                // Buffer s was last filled for tile it - STAGES; wait until it has been used.
                if (it >= STAGES) mbar_wait(&empty[s], (it / STAGES - 1) % 2);
                mbar_expect_bytes(&full[s], STAGE_BYTES);
                for (int part = 0; part < 2; ++part) {
                    tma_load_part(As + (2 * s + part) * A_TILE, &a_map, &full[s], kt * BK, row0,
                                  part);
                }
                for (int b = 0; b < BN / 32; ++b) {
                    tma_load(Bs + s * B_TILE + b * B_BOX, &b_map, &full[s], col0 + 32 * b, kt * BK);
                }
            }
        }
    } else {
        // A consumer: a 64-column strip of the block's C, as BM/2 accumulators a thread.
        asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(CONSUMER_REGS));
        int warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
        int g = lane / 4, t = lane % 4;
        int box = 2 * (role - 1) + warp / 2;  // the 32-column box of B this warp reads
        int col = fragment_col(g, warp % 2);
        // ANCHOR: consumer_wait
        // The tensor cores' adds drop the bits beyond the accumulator's 24 (they round toward
        // zero), and over thousands of adds that bias grows with K. So each slice's products go
        // to `part`, which the first wgmma of the slice overwrites; `acc` takes each part with an
        // ordinary FP32 add, rounded to nearest, and hands its sum to `total` every FLUSH
        // slices, so that no sum of FP32 adds grows longer than K/1024 or 32 terms.
        float total[BM / 2] = {}, acc[BM / 2] = {}, part[BM / 2] = {};

        for (int kt = kt_begin; kt < kt_end; ++kt) {
            int it = kt - kt_begin, s = it % STAGES;
            mbar_wait(&full[s], (it / STAGES) % 2);
            const float* bs = Bs + s * B_TILE + box * B_BOX;
            // The thread's two columns of B scaled as they arrive (see scaling); their factors
            // are read again each slice, from shared memory, to keep registers free.
            float2 f = *reinterpret_cast<const float2*>(&col_scale[32 * box + col]);
            // ANCHOR_END: consumer_wait
            // ANCHOR: consumer_split
            // Fragments of Bᵀ: rows g, g + 8 are columns col, col + 1 of B; k is t and t + 4.
            // Each float is split as it arrives: big and small fragments.
            unsigned big[BK / 8][4], small[BK / 8][4];
#pragma unroll
            for (int k8 = 0; k8 < BK / 8; ++k8) {
                float2 lo = load_pair(bs, 8 * k8 + t, col), hi = load_pair(bs, 8 * k8 + t + 4, col);
                float v[4] = {lo.x * f.x, lo.y * f.y, hi.x * f.x, hi.y * f.y};
#pragma unroll
                for (int i = 0; i < 4; ++i) {
                    float b = tf32(v[i]);
                    big[k8][i] = __float_as_uint(b);
                    // TODO 2 (B's small fragment): the same split of v[i], in registers;
                    // the fragment holds the bits wgmma reads.
                    small[k8][i] = 0u;
                }
            }
            wgmma_fence();
            unsigned long long a_big = descriptor(As + 2 * s * A_TILE),
                               a_small = descriptor(As + (2 * s + 1) * A_TILE);
            // TODO 3 (three products per term): each 8-deep step issues big·big alone, so the
            // small parts never reach part. Issue the products of the chapter's "The idea", the
            // two corrections before the leading one. wgmma's last argument is scale-d (0
            // overwrites part, 1 adds to it): which of the slice's wgmmas may overwrite?
#pragma unroll
            for (int k8 = 0; k8 < BK / 8; ++k8) {
                unsigned long long k = 8 * k8 * 4 >> 4;  // 8 floats further along the rows
                wgmma(part, big[k8], a_big + k, k8);
            }
            // ANCHOR_END: consumer_split
            // ANCHOR: consumer_sum
            wgmma_commit();
            wgmma_wait_all();
            if (lane == 0) mbar_arrive(&empty[s]);
#pragma unroll
            for (int i = 0; i < BM / 2; ++i) acc[i] += part[i];
            if (it % FLUSH == FLUSH - 1) {
#pragma unroll
                for (int i = 0; i < BM / 2; ++i) {
                    total[i] += acc[i];
                    acc[i] = 0.0f;
                }
            }
        }
#pragma unroll
        for (int i = 0; i < BM / 2; ++i) total[i] += acc[i];
        // ANCHOR_END: consumer_sum

        // total[4j + 2h + v] is Cᵀ at row g + 8h, column 8j + 2t + v of the strip: C's row
        // row0 + 8j + 2t + v, column n (+1 when h = 1).
        int n = col0 + 32 * box + col;
        // ANCHOR: slices
        // A tile whose K is split: each block's sums go to its own slice of `slices` (a BM×BN
        // piece for each tile and z, rows past M or columns past N written and never read), and
        // the last of the tile's blocks to arrive adds the slices in the order of z, whichever
        // block that is, so C is the same from run to run.
        if (gridDim.z > 1) {
            __shared__ int last;
            int tile = blockIdx.x + gridDim.x * blockIdx.y, tiles = gridDim.x * gridDim.y;
            // Row 8j + 2t + v and column 32·box + col of the piece, + BN·8j + BN·v (+1: h = 1).
            float* mine = slices + (static_cast<long long>(blockIdx.z) * tiles + tile) * BM * BN +
                          (2 * t) * BN + 32 * box + col;
#pragma unroll
            for (int j = 0; j < BM / 8; ++j) {
#pragma unroll
                for (int v = 0; v < 2; ++v) {
                    *reinterpret_cast<float2*>(mine + (8 * j + v) * BN) =
                        make_float2(total[4 * j + v], total[4 * j + 2 + v]);
                }
            }
            // Every consumer's sums are out before the tile's count takes this block's arrival
            // (barrier 1: the consumer warpgroups alone; the producer has left).
            __threadfence();
            asm volatile("bar.sync 1, %0;" ::"n"(128 * CONSUMERS) : "memory");
            if (threadIdx.x == 128) last = atomicAdd(&arrivals[tile], 1) == gridDim.z - 1;
            asm volatile("bar.sync 1, %0;" ::"n"(128 * CONSUMERS) : "memory");
            if (!last) return;
            __threadfence();
            // A slice at a time, all of the thread's loads of it in flight at once.
#pragma unroll
            for (int i = 0; i < BM / 2; ++i) total[i] = 0.0f;
            for (int z = 0; z < gridDim.z; ++z) {
                const float* in = mine + (z - static_cast<int>(blockIdx.z)) *
                                             (static_cast<long long>(tiles) * BM * BN);
#pragma unroll
                for (int j = 0; j < BM / 8; ++j) {
#pragma unroll
                    for (int v = 0; v < 2; ++v) {
                        float2 p = __ldcg(reinterpret_cast<const float2*>(in + (8 * j + v) * BN));
                        total[4 * j + v] += p.x;
                        total[4 * j + 2 + v] += p.y;
                    }
                }
            }
        }
        // ANCHOR_END: slices
        // The scaling is taken back, one rounding. The marked rows and columns are the FP32
        // path's, which runs beside this kernel: their elements of C are left to it.
        int e0 = n < N ? exps[M + n] : 0, e1 = n + 1 < N ? exps[M + n + 1] : 0;
        bool own0 = n < N && !marks[M + n], own1 = n + 1 < N && !marks[M + n + 1];
#pragma unroll
        for (int j = 0; j < BM / 8; ++j) {
#pragma unroll
            for (int v = 0; v < 2; ++v) {
                int m = row0 + 8 * j + 2 * t + v;
                if (m >= M || marks[m]) continue;
                float* c = C + static_cast<long long>(m) * N + n;
                float c0 = scale_back(total[4 * j + v], -(exps[m] + e0)),
                      c1 = scale_back(total[4 * j + 2 + v], -(exps[m] + e1));
                if (N % 2 == 0 && own0 && own1) {
                    *reinterpret_cast<float2*>(c) = make_float2(c0, c1);
                } else {
                    if (own0) c[0] = c0;
                    if (own1) c[1] = c1;
                }
            }
        }
    }
}
// ANCHOR_END: kernel

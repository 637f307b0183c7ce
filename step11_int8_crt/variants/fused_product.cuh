// Variant of step11_int8_crt/src/int8_product.cuh: one pass: each block takes its tile through
// every modulus and rebuilds C from sums kept in registers.
//
// Step 11's INT8 products on Hopper, for the one-pass variant (variants/fused.cu includes it in
// place of src/int8_product.cuh): the tile constants, the barriers and the copy engine's loads,
// the INT8 wgmma, the product kernel matmul, which rebuilds C itself, and the bound's bf16
// product (bound_kernel).

// ANCHOR: constants
constexpr int BM = 128;                     // rows of C per block: two consumers of 64
constexpr int BN = 128;                     // variant: columns of C per block: the N of each wgmma
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
    // variant: the m64n128k32 form, 64 accumulators a thread
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k32.s32.s8.s8 {"
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
                 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
                 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
                 "%64, %65, p;\n}\n"
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]),
                   "+r"(d[6]), "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]),
                   "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]), "+r"(d[16]), "+r"(d[17]),
                   "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]),
                   "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]),
                   "+r"(d[30]), "+r"(d[31]), "+r"(d[32]), "+r"(d[33]), "+r"(d[34]), "+r"(d[35]),
                   "+r"(d[36]), "+r"(d[37]), "+r"(d[38]), "+r"(d[39]), "+r"(d[40]), "+r"(d[41]),
                   "+r"(d[42]), "+r"(d[43]), "+r"(d[44]), "+r"(d[45]), "+r"(d[46]), "+r"(d[47]),
                   "+r"(d[48]), "+r"(d[49]), "+r"(d[50]), "+r"(d[51]), "+r"(d[52]), "+r"(d[53]),
                   "+r"(d[54]), "+r"(d[55]), "+r"(d[56]), "+r"(d[57]), "+r"(d[58]), "+r"(d[59]),
                   "+r"(d[60]), "+r"(d[61]), "+r"(d[62]), "+r"(d[63])
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
// variant: sum += w·(acc mod M), for every element of the thread's tile.
template <int M_L>
__device__ __forceinline__ void add_residues(const int (&acc)[BN / 2], double (&sum)[BN / 2],
                                             double w) {
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) {
        int r = acc[i] % M_L;
        r += r < 0 ? M_L : 0;
        sum[i] = fma(w, __hiloint2double(0x43300000, r) - 4503599627370496.0, sum[i]);
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
        if (threadIdx.x == 0) {
            for (int it = 0; it < MODULI * k_tiles; ++it) {  // variant: every modulus in turn
                int s = it % STAGES, z = it / k_tiles, kt = it % k_tiles;
                if (it >= STAGES) mbar_wait(&empty[s], (it / STAGES - 1) % 2);
                mbar_expect_bytes(&full[s], STAGE_BYTES);
                tma_load(As + s * A_TILE, &a_map, &full[s], kt * BK, row0, z);
                tma_load(Bs + s * B_TILE, &b_map, &full[s], kt * BK, col0, z);
            }
        }
    } else {
        // A consumer: a 64-row strip of the block's C, as BN/2 accumulators a thread.
        asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(CONSUMER_REGS));
        int lane = threadIdx.x % 32;
        // ANCHOR: consumer
        int acc[BN / 2] = {};
        double sum[BN / 2] = {};  // variant: Σ w_z·r_z for each element, over the moduli so far

        for (int z = 0, it = 0; z < MODULI; ++z) {
            for (int kt = 0; kt < k_tiles; ++kt, ++it) {
                int s = it % STAGES;
                mbar_wait(&full[s], (it / STAGES) % 2);
                unsigned long long a = descriptor(As + s * A_TILE + (role - 1) * 64 * BK);
                unsigned long long b = descriptor(Bs + s * B_TILE);
                wgmma_fence();
#pragma unroll
                for (int k32 = 0; k32 < BK / 32; ++k32) {
                    wgmma(acc, a + (32 * k32 >> 4), b + (32 * k32 >> 4), kt > 0 || k32 > 0);
                }
                wgmma_commit();
                wgmma_wait<1>();
                if (kt > 0 && lane == 0) mbar_arrive(&empty[(it - 1) % STAGES]);
            }
            wgmma_wait<0>();
            if (lane == 0) mbar_arrive(&empty[(it - 1) % STAGES]);
            switch (z) {
            case 0: add_residues<modulus(0)>(acc, sum, TABLE.weight[0]); break;
            case 1: add_residues<modulus(1)>(acc, sum, TABLE.weight[1]); break;
            case 2: add_residues<modulus(2)>(acc, sum, TABLE.weight[2]); break;
            case 3: add_residues<modulus(3)>(acc, sum, TABLE.weight[3]); break;
            case 4: add_residues<modulus(4)>(acc, sum, TABLE.weight[4]); break;
            case 5: add_residues<modulus(5)>(acc, sum, TABLE.weight[5]); break;
            case 6: add_residues<modulus(6)>(acc, sum, TABLE.weight[6]); break;
            default: add_residues<modulus(7)>(acc, sum, TABLE.weight[7]); break;
            }
        }

        // variant: C rebuilt here, as reconstruct does it; sum[4j + 2h + v] is row g + 8h,
        // column 8j + 2t + v of the warp's strip.
        const double p = static_cast<double>(P), inverse = 1.0 / static_cast<double>(P);
        int warp = (threadIdx.x / 32) % 4, g = lane / 4, t = lane % 4;
        int row = row0 + 64 * (role - 1) + 16 * warp + g;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            int m = row + 8 * h;
            if (m >= M) continue;
            int ea = exps[m];
#pragma unroll
            for (int j = 0; j < BN / 8; ++j) {
#pragma unroll
                for (int v = 0; v < 2; ++v) {
                    int n = col0 + 8 * j + 2 * t + v, eb = n < N ? exps[M + n] : 0;
                    if (n >= N) continue;
                    float c;
                    if (ea == NONFINITE || eb == NONFINITE) {
                        c = 0.0f;  // the FP32 path's row or column
                    } else {
                        double s = sum[4 * j + 2 * h + v];
                        c = static_cast<float>(fma(-rint(s * inverse), p, s) *
                                               __hiloint2double((1023 - ea - eb) << 20, 0));
                    }
                    C[static_cast<long long>(m) * N + n] = c;
                }
            }
        }
    }
}
// ANCHOR_END: consumer
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

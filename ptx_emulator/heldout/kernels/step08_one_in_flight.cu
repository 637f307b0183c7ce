// Held-out kernel of a learner's variants: step08_wgmma_tma/src/kernel.cu with one change, each
// consumer keeping one wgmma group in flight (wait_group 1, the previous trip's buffer freed, two
// sets of fragment registers used in turn) instead of waiting for its own group each trip.
// Launch: step08_wgmma_tma at its defaults.

// BM, BN, STAGES, GROUP are set at compile time (-D NAME=value) from the step's lib.rs.

// ANCHOR: constants
constexpr int BK = 32;                      // floats in one 128-byte row: the swizzle's width
constexpr int CONSUMERS = BN / 64;          // consumer warpgroups, one 64-column strip of C each
constexpr int THREADS = 128 * (CONSUMERS + 1);
constexpr int A_TILE = BM * BK;             // floats of one buffer's A tile (BM rows of BK)
constexpr int B_BOX = BK * 32;              // floats of one 32-column box of B (BK rows of 32)
constexpr int B_TILE = BK * BN;             // floats of one buffer's B tile
constexpr unsigned STAGE_BYTES = 4 * (A_TILE + B_TILE);
// Registers per thread after the producer hands its share to the consumers (setmaxnreg):
// the block's registers, less the producer's, split among the consumers, in steps of 8.
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

// The copy engine moves the box at (col, row) of the map's matrix into dst, and counts its
// bytes on bar.
__device__ __forceinline__ void tma_load(float* dst, const CUtensorMap* map,
                                         unsigned long long* bar, int col, int row) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], "
        "[%1, {%2, %3}], [%4];" ::
            "r"(smem(dst)),
        "l"(map), "r"(col), "r"(row), "r"(smem(bar))
        : "memory");
}
// ANCHOR_END: sync

// ANCHOR: wgmma
// ANCHOR: descriptor
// The shared-memory operand: rows of 128 bytes (BK floats of one row of A), 16-byte pieces
// swizzled, 8-row groups 1024 bytes apart.
__device__ __forceinline__ unsigned long long descriptor(const float* tile)
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
__device__ __forceinline__ void wgmma_wait_all() {
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
}
// ANCHOR_END: descriptor

// d (a 64×BM tile of Cᵀ, BM/2 floats a thread) += a (64×8 of Bᵀ, 4 per thread) · the 8×BM
// slice of Aᵀ that desc points at. The braces list every accumulator register.
__device__ __forceinline__ void wgmma(float (&d)[BM / 2], const unsigned (&a)[4],
                                      unsigned long long desc) {
    if constexpr (BM == 256) {
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, %133, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 {"
            "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
            "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
            "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
            "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
            "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
            "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
            "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, "
            "%111, "
            "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, "
            "%126, %127}, "
            "{%128, %129, %130, %131}, %132, p, 1, 1;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
              "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]),
              "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]),
              "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),
              "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]),
              "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]),
              "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]),
              "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
              "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]),
              "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]),
              "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]),
              "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]),
              "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]),
              "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]),
              "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]),
              "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]),
              "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]),
              "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]),
              "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]),
              "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]),
              "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]),
              "+f"(d[127])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(1));
    } else {
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {"
            "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
            "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
            "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
            "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
            "{%64, %65, %66, %67}, %68, p, 1, 1;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
              "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]),
              "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]),
              "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),
              "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]),
              "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]),
              "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]),
              "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
              "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]),
              "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]),
              "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(1));
    }
}
// ANCHOR_END: wgmma

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

// ANCHOR: kernel
// ANCHOR: setup
extern "C" __global__ void __launch_bounds__(THREADS, 1)
    matmul(int M, int N, int K, const float* A, const float* B, float* C,
           const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map) {
    // STAGES tiles of A and B, then the barriers; the swizzle needs 1024-byte alignment.
    extern __shared__ unsigned char raw[];
    float* As =
        reinterpret_cast<float*>((reinterpret_cast<unsigned long long>(raw) + 1023) & ~1023ull);
    float* Bs = As + STAGES * A_TILE;
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

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(&full[s], 1);                  // the producer's arrival, plus the bytes
            mbar_init(&empty[s], 4 * CONSUMERS);     // one arrival per consumer warp
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    // ANCHOR_END: setup

    // ANCHOR: producer
    if (role == 0) {
        // The producer: one thread keeps the copy engine STAGES tiles ahead of the consumers.
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(PRODUCER_REGS));
        if (threadIdx.x == 0) {
            for (int kt = 0; kt < k_tiles; ++kt) {
                int s = kt % STAGES;
                // Buffer s was last filled for tile kt - STAGES; wait until it has been used.
                if (kt >= STAGES) mbar_wait(&empty[s], (kt / STAGES - 1) % 2);
                mbar_expect_bytes(&full[s], STAGE_BYTES);
                tma_load(As + s * A_TILE, &a_map, &full[s], kt * BK, row0);
                for (int b = 0; b < BN / 32; ++b) {
                    tma_load(Bs + s * B_TILE + b * B_BOX, &b_map, &full[s], col0 + 32 * b, kt * BK);
                }
            }
        }
    // ANCHOR_END: producer
    } else {
        // ANCHOR: consumer
        // A consumer: a 64-column strip of the block's C, as BM/2 accumulators a thread.
        asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(CONSUMER_REGS));
        int warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
        int g = lane / 4, t = lane % 4;
        int box = 2 * (role - 1) + warp / 2;  // the 32-column box of B this warp reads
        int col = fragment_col(g, warp % 2);
        float acc[BM / 2] = {};

        // Two sets of fragment registers, used in turn: the wgmma left in flight still reads
        // the set it was given while the next trip fills the other.
        unsigned frag_even[BK / 8][4], frag_odd[BK / 8][4];
        auto trip = [&](int kt, unsigned (&frag)[BK / 8][4]) {
            int s = kt % STAGES;
            mbar_wait(&full[s], (kt / STAGES) % 2);
            const float* bs = Bs + s * B_TILE + box * B_BOX;
            // Fragments of Bᵀ: rows g, g + 8 are columns col, col + 1 of B; k is t and t + 4.
#pragma unroll
            for (int k8 = 0; k8 < BK / 8; ++k8) {
                float2 lo = load_pair(bs, 8 * k8 + t, col), hi = load_pair(bs, 8 * k8 + t + 4, col);
                frag[k8][0] = __float_as_uint(lo.x);
                frag[k8][1] = __float_as_uint(lo.y);
                frag[k8][2] = __float_as_uint(hi.x);
                frag[k8][3] = __float_as_uint(hi.y);
            }
            wgmma_fence();
            unsigned long long desc = descriptor(As + s * A_TILE);
#pragma unroll
            for (int k8 = 0; k8 < BK / 8; ++k8) {
                wgmma(acc, frag[k8], desc + (8 * k8 * 4 >> 4));  // 8 floats further along the rows
            }
            wgmma_commit();
            // One group left in flight: the one issued a trip ago is done, so its buffer is free.
            asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
            if (kt > 0 && lane == 0) mbar_arrive(&empty[(kt - 1) % STAGES]);
        };
        for (int kt = 0; kt < k_tiles; kt += 2) {
            trip(kt, frag_even);
            if (kt + 1 < k_tiles) trip(kt + 1, frag_odd);
        }
        wgmma_wait_all();
        // ANCHOR_END: consumer

        // acc[4j + 2h + v] is Cᵀ at row g + 8h, column 8j + 2t + v of the strip: C's row
        // row0 + 8j + 2t + v, column col (+1 when h = 1) of the warp's box.
        int n = col0 + 32 * box + col;
#pragma unroll
        for (int j = 0; j < BM / 8; ++j) {
#pragma unroll
            for (int v = 0; v < 2; ++v) {
                int m = row0 + 8 * j + 2 * t + v;
                if (m >= M) continue;
                float* c = C + static_cast<long long>(m) * N + n;
                if (N % 2 == 0 && n + 1 < N) {
                    *reinterpret_cast<float2*>(c) = make_float2(acc[4 * j + v], acc[4 * j + 2 + v]);
                } else {
                    if (n < N) c[0] = acc[4 * j + v];
                    if (n + 1 < N) c[1] = acc[4 * j + 2 + v];
                }
            }
        }
    }
}
// ANCHOR_END: kernel

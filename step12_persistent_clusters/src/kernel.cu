// Step 12: step 08's kernel taken toward cuBLAS TF32 on Hopper, made persistent (one block per SM
// walking the work a scheduler hands it), launched in clusters whose blocks share A's tile
// through the copy engine's multicast, storing C through shared memory with the copy engine,
// keeping a slice's products in flight, and sharing the last round's depth between all clusters
// (Stream-K).
//
// Idea (this last stage): when the units of work do not divide evenly among the clusters, the
// last round leaves SMs idle: 16 units of 1024×1024×4096 on 66 clusters leave 50 of them idle
// for the whole product. Here the host may cut the last round's units along K into pieces, an
// equal run of k-tiles for every cluster (lib.rs decides when it pays). A piece leaves its sums
// in a workspace; the last of a tile's pieces to finish adds them, in the order of K, and stores
// the tile. A launch that cuts nothing runs a twin kernel without this code.
//
// What it buys: docs/src/step12.md measures every stage of this lab beside cuBLAS TF32.

// BM, BN, STAGES, GROUP, CLUSTER are set at compile time (-D NAME=value) from the step's lib.rs.

// ANCHOR: constants
constexpr int BK = 32;                      // floats in one 128-byte row: the swizzle's width
constexpr int CONSUMERS = BN / 64;          // consumer warpgroups, one 64-column strip of C each
constexpr int THREADS = 128 * (CONSUMERS + 1);
constexpr int A_TILE = BM * BK;             // floats of one buffer's A tile (BM rows of BK)
constexpr int A_BOX = BM / CLUSTER * BK;    // floats of one box of A, BM / CLUSTER rows
constexpr int B_BOX = BK * 32;              // floats of one 32-column box of B (BK rows of 32)
constexpr int B_TILE = BK * BN;             // floats of one buffer's B tile
constexpr unsigned STAGE_BYTES = 4 * (A_TILE + B_TILE);
constexpr int C_ROWS = 32;                  // rows of C a consumer stores at a time
constexpr int C_BOX = C_ROWS * 32;          // floats of one box of C (C_ROWS rows of 32)
// Registers per thread after the producer hands its share to the consumers (setmaxnreg):
// the block's registers, less the producer's, split among the consumers, in steps of 8.
constexpr int PRODUCER_REGS = 40;
constexpr int BLOCK_REGS = THREADS * ((65536 / THREADS) / 8 * 8);
constexpr int CONSUMER_REGS_FIT = (BLOCK_REGS - 128 * PRODUCER_REGS) / (128 * CONSUMERS) / 8 * 8;
constexpr int CONSUMER_REGS = CONSUMER_REGS_FIT < 240 ? CONSUMER_REGS_FIT : 240;
// ANCHOR_END: constants

// The tensor map, the barriers, the copies, the wgmma wrappers and the fragments of B, as stage 4
// has them: src/hopper.cuh.
#include "hopper.cuh"

// Counts one arrival on a count in global memory and returns the count before it, in one
// atomic that releases what this thread (and, after a barrier, its group) wrote before and
// acquires what the arrivals before it released.
__device__ __forceinline__ unsigned arrive(unsigned* count)
{
    unsigned before;
    asm volatile("atom.add.acq_rel.gpu.global.u32 %0, [%1], 1;"
                 : "=r"(before)
                 : "l"(count)
                 : "memory");
    return before;
}

// ANCHOR: scheduler
// The tile scheduler: a cluster's n-th unit, CLUSTER tiles side by side, as its first row and
// column of C in units of (BM, CLUSTER·BN). Units are numbered down groups of GROUP block-rows
// before moving right, so the units taken at once (one per cluster, consecutive numbers) share a
// few tiles of A and of B, which stay in L2.
__device__ __forceinline__ int2 tile_origin(int tile, int tiles_m, int units_n)
{
    int first = tile / (GROUP * units_n) * GROUP;
    int rows = min(GROUP, tiles_m - first);
    int in_group = tile % (GROUP * units_n);
    return make_int2((first + in_group % rows) * BM, in_group / rows * BN);
}

// One piece of work: k-tiles [k_begin, k_end) of a unit.
struct Work {
    int unit, k_begin, k_end;
};

// How the units are shared, as the host chose (lib.rs): the first `whole` units go out whole, a
// cluster's n-th being unit cluster + n·clusters; the k-tiles of the units after them are dealt
// out in runs of `share` (at most a unit's k-tiles), cluster c's being run c, each cut where it
// crosses from one unit into the next.
struct Schedule {
    int units, clusters, k_tiles, whole, share;

    // The n-th piece of work of cluster c; unit -1 past its last.
    __device__ Work piece(int c, int n) const
    {
        int own = whole > c ? (whole - c + clusters - 1) / clusters : 0;
        if (n < own) return {c + n * clusters, 0, k_tiles};
        // A run of `share` k-tiles crosses into at most one more unit.
        long long first = static_cast<long long>(c) * share;
        long long last = min(first + share, static_cast<long long>(units - whole) * k_tiles);
        long long from = n == own ? first : (first / k_tiles + 1) * k_tiles;
        if (n > own + 1 || from >= last) return {-1, 0, 0};
        int unit = static_cast<int>(from / k_tiles);
        long long to = min(last, static_cast<long long>(unit + 1) * k_tiles);
        return {whole + unit, static_cast<int>(from - static_cast<long long>(unit) * k_tiles),
                static_cast<int>(to - static_cast<long long>(unit) * k_tiles)};
    }

    // The clusters whose runs cut a shared unit: the first, and how many.
    __device__ int2 pieces(int unit) const
    {
        long long begin = static_cast<long long>(unit - whole) * k_tiles;
        int first = static_cast<int>(begin / share);
        return make_int2(first, static_cast<int>((begin + k_tiles - 1) / share) - first + 1);
    }

    // The workspace's tile of sums of cluster c's piece of a shared unit, for the unit's tile
    // `rank`: two per cluster and tile, for the first and the second unit its run touches.
    __device__ long long slot(int c, int unit, int rank) const
    {
        // The second where c's run began in the unit before.
        long long unit_begin = static_cast<long long>(unit - whole) * k_tiles;
        int second = static_cast<long long>(c) * share < unit_begin;
        return ((static_cast<long long>(c) * 2 + second) * CLUSTER + rank) * BM * BN;
    }
};
// ANCHOR_END: scheduler

// ANCHOR: kernel
// ANCHOR: setup
// The body of both kernels below: CUTS says whether any unit is cut into pieces. A launch that
// cuts nothing runs the body without the pieces' code: stage 4's loop and store.
template <bool CUTS>
__device__ __forceinline__ void product(int M, int N, int K, float* C, const CUtensorMap& a_map,
                                        const CUtensorMap& b_map, const CUtensorMap& c_map,
                                        float* partial, int whole, int share)
{
    // STAGES tiles of A and B, the consumers' boxes of C, then the barriers; the swizzle needs
    // 1024-byte alignment.
    extern __shared__ unsigned char raw[];
    float* As =
        reinterpret_cast<float*>((reinterpret_cast<unsigned long long>(raw) + 1023) & ~1023ull);
    float* Bs = As + STAGES * A_TILE;
    float* Cs = Bs + STAGES * B_TILE;  // two boxes of C per consumer
    unsigned long long* full = reinterpret_cast<unsigned long long*>(Cs + CONSUMERS * 2 * C_BOX);
    unsigned long long* empty = full + STAGES;
    // Where units are cut: a count of the pieces in per tile and consumer, then (from the next
    // 128-byte line) the pieces' tiles of sums, two per block; and whether a consumer is the
    // one that adds them.
    unsigned* arrivals = reinterpret_cast<unsigned*>(partial);
    float* sums = partial + (CONSUMERS * gridDim.x + 31) / 32 * 32;
    __shared__ int adder[CONSUMERS];

    // Cluster c takes the pieces of work the schedule deals it: the launch has as many blocks
    // as the GPU holds at once, in whole clusters; a unit is CLUSTER tiles side by side. Block
    // `rank` of the cluster computes the unit's tile `rank`; past C's last column, it still
    // loads its box of A for its peers, and stores nothing.
    int tiles_m = (M + BM - 1) / BM, units_n = (N + CLUSTER * BN - 1) / (CLUSTER * BN);
    int units = tiles_m * units_n;
    int cluster = blockIdx.x / CLUSTER, clusters = gridDim.x / CLUSTER;
    unsigned rank = cluster_rank();
    int k_tiles = (K + BK - 1) / BK;
    Schedule schedule{units, clusters, k_tiles, whole, share};
    int role = threadIdx.x / 128;  // 0: the producer; 1..CONSUMERS: consumers

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(&full[s], 1);                  // the producer's arrival, plus the bytes
            mbar_init(&empty[s], 4 * CONSUMERS * CLUSTER);  // a consumer warp's of each block
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    // No block may copy into a peer, or arrive on its barriers, before the peer has set them up.
    cluster_sync();
    // ANCHOR_END: setup

    // ANCHOR: producer
    if (role == 0) {
        // The producer: one thread keeps the copy engine STAGES tiles ahead of the consumers,
        // from one tile of C into the next. `it` counts the buffers filled since the launch, so
        // the buffer and its parity carry on across tiles.
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(PRODUCER_REGS));
        if (threadIdx.x == 0) {
            int it = 0;
            for (int n = 0;; ++n) {
                Work work = schedule.piece(cluster, n);
                if (work.unit < 0) break;
                int2 origin = tile_origin(work.unit, tiles_m, units_n);
                origin.y = origin.y * CLUSTER + rank * BN;
                int k_begin = CUTS ? work.k_begin : 0, k_end = CUTS ? work.k_end : k_tiles;
                for (int kt = k_begin; kt < k_end; ++kt, ++it) {
                    int s = it % STAGES;
                    // Buffer s was last filled STAGES fills ago; wait until every block of the
                    // cluster has used it, since this block's box of A lands in all of them.
                    if (it >= STAGES) mbar_wait(&empty[s], (it / STAGES - 1) % 2);
                    // The whole buffer arrives here: this block's box of A and its peers', and B.
                    mbar_expect_bytes(&full[s], STAGE_BYTES);
                    tma_load_multicast(As + s * A_TILE + rank * A_BOX, &a_map, &full[s], kt * BK,
                                       origin.x + rank * BM / CLUSTER);
                    for (int b = 0; b < BN / 32; ++b) {
                        tma_load(Bs + s * B_TILE + b * B_BOX, &b_map, &full[s], origin.y + 32 * b,
                                 kt * BK);
                    }
                }
            }
        }
    // ANCHOR_END: producer
    } else {
        // ANCHOR: consumer
        // A consumer: a 64-column strip of each of the block's tiles, as BM/2 accumulators a
        // thread.
        asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(CONSUMER_REGS));
        int warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
        int g = lane / 4, t = lane % 4;
        int box = 2 * (role - 1) + warp / 2;  // the 32-column box of B this warp reads
        int col = fragment_col(g, warp % 2);
        int it = 0;
        for (int n = 0;; ++n) {
            Work work = schedule.piece(cluster, n);
            if (work.unit < 0) break;
            int2 origin = tile_origin(work.unit, tiles_m, units_n);
            origin.y = origin.y * CLUSTER + rank * BN;
            float acc[BM / 2] = {};
            // Two sets of fragments: a wgmma reads its registers until it completes.
            unsigned frag0[BK / 8][4], frag1[BK / 8][4];
            auto issue = [&](unsigned (&frag)[BK / 8][4], int kt) {
                int s = it % STAGES;
                mbar_wait(&full[s], (it / STAGES) % 2);
                const float* bs = Bs + s * B_TILE + box * B_BOX;
                // Fragments of Bᵀ: rows g, g + 8 are columns col, col + 1 of B; k is t and t + 4.
#pragma unroll
                for (int k8 = 0; k8 < BK / 8; ++k8) {
                    float2 lo = load_pair(bs, 8 * k8 + t, col);
                    float2 hi = load_pair(bs, 8 * k8 + t + 4, col);
                    frag[k8][0] = __float_as_uint(lo.x);
                    frag[k8][1] = __float_as_uint(lo.y);
                    frag[k8][2] = __float_as_uint(hi.x);
                    frag[k8][3] = __float_as_uint(hi.y);
                }
                wgmma_fence();
                unsigned long long desc = descriptor(As + s * A_TILE);
#pragma unroll
                for (int k8 = 0; k8 < BK / 8; ++k8) {
                    // 8 floats further along the rows for each step of 8
                    wgmma(acc, frag[k8], desc + (8 * k8 * 4 >> 4));
                }
                wgmma_commit();
            };
            int k_begin = CUTS ? work.k_begin : 0, k_end = CUTS ? work.k_end : k_tiles;
            for (int kt = k_begin; kt < k_end; ++kt, ++it) {
                if ((kt - k_begin) % 2 == 0) {
                    issue(frag0, kt);
                } else {
                    issue(frag1, kt);
                }
                // The slice before is done: free its buffer in every block of the cluster.
                wgmma_wait_one();
                if (kt > k_begin && lane < CLUSTER)
                    mbar_arrive_cluster(&empty[(it + STAGES - 1) % STAGES], lane);
            }
            wgmma_wait_all();
            if (lane < CLUSTER) mbar_arrive_cluster(&empty[(it + STAGES - 1) % STAGES], lane);
            // ANCHOR_END: consumer

            // ANCHOR: piece
            if (CUTS && k_end - k_begin < k_tiles) {
                // A piece of a shared unit: its sums go to the workspace as a BM×BN tile in the
                // order of the registers: acc[4j..4j+3] of the warpgroup's 128 threads side by
                // side, 2 KiB for each j. Each store of a warp is 512 bytes in a row, and a
                // thread finds its own elements at the same place in every piece's tile.
                int at = ((role - 1) * (BM / 8) * 128 + threadIdx.x % 128) * 4;
                const float* tiles = sums + at;
                float* mine = sums + schedule.slot(cluster, work.unit, rank) + at;
#pragma unroll
                for (int j = 0; j < BM / 8; ++j) {
                    *reinterpret_cast<float4*>(mine + j * 512) =
                        make_float4(acc[4 * j], acc[4 * j + 1], acc[4 * j + 2], acc[4 * j + 3]);
                }
                // The warpgroup's sums are out before its first thread counts the arrival (one
                // atomic that releases them). The last of the unit's pieces to arrive adds them
                // all and stores the tile; the others go on.
                int2 cut = schedule.pieces(work.unit);
                unsigned* count = arrivals + ((work.unit - whole) * CLUSTER + rank) * CONSUMERS +
                                  role - 1;
                asm volatile("bar.sync %0, 128;" ::"r"(role) : "memory");
                if (threadIdx.x % 128 == 0) {
                    adder[role - 1] = arrive(count) == cut.y - 1;
                    if (adder[role - 1]) *count = 0;  // ready for the next launch
                }
                asm volatile("bar.sync %0, 128;" ::"r"(role) : "memory");
                if (!adder[role - 1]) continue;
                // In the order of K (of the clusters), whoever arrived last: every run gives
                // the same C. The pieces are read with __ldcg (from L2, past this SM's L1),
                // C_ROWS rows at a time, the loop over pieces unrolled four times so that
                // several pieces' loads are issued together.
#pragma unroll
                for (int i = 0; i < BM / 2; ++i) acc[i] = 0.0f;
#pragma unroll
                for (int q = 0; q < BM / C_ROWS; ++q) {
#pragma unroll 4
                    for (int c = cut.x; c < cut.x + cut.y; ++c) {
                        const float* piece = tiles + schedule.slot(c, work.unit, rank);
#pragma unroll
                        for (int j = q * C_ROWS / 8; j < (q + 1) * C_ROWS / 8; ++j) {
                            float4 p = __ldcg(reinterpret_cast<const float4*>(piece + j * 512));
                            acc[4 * j] += p.x;
                            acc[4 * j + 1] += p.y;
                            acc[4 * j + 2] += p.z;
                            acc[4 * j + 3] += p.w;
                        }
                    }
                }
            }
            // ANCHOR_END: piece

            // ANCHOR: epilogue
            // acc[4j + 2h + v] is Cᵀ at row g + 8h, column 8j + 2t + v of the strip: C's row
            // row0 + 8j + 2t + v, column col (+1 when h = 1) of the warp's box. The producer is
            // meanwhile filling the buffers for the next tile.
            if (N % 4 == 0) {
                // C_ROWS rows at a time: the warpgroup writes its two boxes (32 columns each),
                // and its first thread hands them to the copy engine.
                float* cs = Cs + (role - 1) * 2 * C_BOX;
                bool leader = threadIdx.x % 128 == 0;
#pragma unroll
                for (int q = 0; q < BM / C_ROWS; ++q) {
                    // The boxes are free once the copy engine has read the last rows from them.
                    if (leader) tma_store_wait_read();
                    asm volatile("bar.sync %0, 128;" ::"r"(role) : "memory");
#pragma unroll
                    for (int j = q * C_ROWS / 8; j < (q + 1) * C_ROWS / 8; ++j) {
#pragma unroll
                        for (int v = 0; v < 2; ++v) {
                            store_pair(cs + (warp / 2) * C_BOX, 8 * j + 2 * t + v - q * C_ROWS, col,
                                       make_float2(acc[4 * j + v], acc[4 * j + 2 + v]));
                        }
                    }
                    // Ordinary stores that the copy engine reads next: fence, then meet.
                    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
                    asm volatile("bar.sync %0, 128;" ::"r"(role) : "memory");
                    int n0 = origin.y + 64 * (role - 1), m0 = origin.x + q * C_ROWS;
                    if (leader && m0 < M) {
                        for (int b = 0; b < 2; ++b) {
                            if (n0 + 32 * b < N) tma_store(&c_map, cs + b * C_BOX, n0 + 32 * b, m0);
                        }
                    }
                }
            } else {
                // Rows of C that are not 16-byte multiples cannot be mapped: store directly.
                int n = origin.y + 32 * box + col;
#pragma unroll
                for (int j = 0; j < BM / 8; ++j) {
#pragma unroll
                    for (int v = 0; v < 2; ++v) {
                        int m = origin.x + 8 * j + 2 * t + v;
                        if (m >= M) continue;
                        float* c = C + static_cast<long long>(m) * N + n;
                        if (n < N) c[0] = acc[4 * j + v];
                        if (n + 1 < N) c[1] = acc[4 * j + 2 + v];
                    }
                }
            }
            // ANCHOR_END: epilogue
        }
    }
    // The copy engine must have read the last boxes of C before the block's shared memory goes.
    if (threadIdx.x % 128 == 0) asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
    // Peers may still arrive on this block's barriers, or copy into it: leave together.
    cluster_sync();
}

// ANCHOR: entries
// The launch where every unit goes whole (the host's choice, lib.rs).
extern "C" __global__ void __launch_bounds__(THREADS, 1) __cluster_dims__(CLUSTER, 1, 1)
    matmul(int M, int N, int K, const float* A, const float* B, float* C,
           const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
           const __grid_constant__ CUtensorMap c_map, float* partial, int whole, int share)
{
    product<false>(M, N, K, C, a_map, b_map, c_map, partial, whole, share);
}

// The launch where the last round's units are cut into pieces.
extern "C" __global__ void __launch_bounds__(THREADS, 1) __cluster_dims__(CLUSTER, 1, 1)
    matmul_cut(int M, int N, int K, const float* A, const float* B, float* C,
               const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
               const __grid_constant__ CUtensorMap c_map, float* partial, int whole, int share)
{
    product<true>(M, N, K, C, a_map, b_map, c_map, partial, whole, share);
}
// ANCHOR_END: entries
// ANCHOR_END: kernel

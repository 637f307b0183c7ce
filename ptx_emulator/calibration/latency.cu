// Microbenchmarks for the latencies of the emulator's time model (the book's appendix "The time
// model"): the cycles from an instruction's issue to the moment a dependent one may use its result,
// by instruction class, which the cycle-level replay of an SM's warps (its register scoreboard and
// unit queues) charges. Built and run on the GPU by `scripts/gpu-model-runs.sh latency`:
//
//   nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -o latency latency.cu && ./latency
//
// Each measurement is a long chain of dependent operations (every one needs the last one's
// result, so nothing overlaps) run by one warp or one thread of one block, timed by the SM's
// cycle counter and divided by the chain's length. The chains are inline PTX (`asm volatile`)
// with operands the compiler cannot know, so that nothing is folded, fused or hoisted; each is
// launched twice and the second run is the one reported. None of these kernels is a lab's:
// nothing here is fitted to the runs the model is judged on.
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <vector>
#include <utility>
#include <cuda_runtime.h>

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e)); exit(1); } } while (0)

__device__ __forceinline__ uint64_t ns() {
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// Each block's first thread records its SM's cycles and nanoseconds over the block's work.
struct Span { unsigned long long cycles, start_ns, end_ns; };

#define OPEN  __syncthreads(); long long c0 = clock64(); uint64_t t0 = ns();
#define CLOSE __syncthreads(); if (threadIdx.x == 0) { \
    spans[blockIdx.x] = Span{(unsigned long long)(clock64() - c0), t0, ns()}; }

__device__ __forceinline__ unsigned smem(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

// One warp runs `iters` rounds of 24 dependent steps. The side operands come from v[], four
// values the launch passes, and two steps in a row read three of them, so that ptxas cannot merge
// two steps into one three-input instruction (IADD3, LOP3) or fold a constant. The chain starts
// from a value that differs by lane, so that ptxas cannot move it to the uniform datapath (one
// value a warp: UIMAD, ULOP3, USEL, ...) or drop a shuffle of a value every lane holds.
#define CHAIN(name, T, STEP)                                                          \
    __global__ void name(T* out, int iters, T v0, T v1, T v2, T v3, Span* spans) {   \
        T v[4] = {v0, v1, v2, v3}, a = v0 + T(threadIdx.x), b = v1 + T(threadIdx.x); \
        T c = v2 + T(threadIdx.x);                                                    \
        OPEN                                                                          \
        for (int n = 0; n < iters; n++) {                                             \
            _Pragma("unroll") for (int i = 0; i < 24; i++) { STEP; }                  \
        }                                                                             \
        CLOSE                                                                         \
        out[threadIdx.x] = a + b + c + v[3];                                          \
    }

CHAIN(ffma_chain, float, asm volatile("fma.rn.f32 %0, %0, %1, %2;" : "+f"(a) : "f"(v[i % 4]), "f"(v[(i + 1) % 4])))
CHAIN(fadd_chain, float, asm volatile("add.f32 %0, %0, %1;" : "+f"(a) : "f"(v[i % 4])))
CHAIN(imad_chain, unsigned, asm volatile("mad.lo.u32 %0, %0, %1, %2;" : "+r"(a) : "r"(v[i % 4]), "r"(v[(i + 1) % 4])))
// Integer adds as IADD3, the three-input add of the ALU pipe: each step is the sum of the last
// three (two PTX adds that ptxas fuses), newest last. A chain of two-input adds would not do:
// ptxas gives some of them to the FMA pipe as IMAD.IADD.
CHAIN(iadd_chain, unsigned, unsigned t = a;
      asm volatile("add.u32 %0, %0, %1;\n\tadd.u32 %0, %0, %2;" : "+r"(t) : "r"(b), "r"(c)); a = b; b = c; c = t)
// (a & v) ^ w: not associative, so no run of steps reduces to fewer.
CHAIN(lop3_chain, unsigned, asm volatile("lop3.b32 %0, %0, %1, %2, 0x6A;" : "+r"(a) : "r"(v[i % 4]), "r"(v[(i + 1) % 4])))
CHAIN(shf_chain, unsigned, asm volatile("shf.l.wrap.b32 %0, %0, %1, %2;" : "+r"(a) : "r"(v[i % 4]), "r"(v[(i + 1) % 4])))
// A compare and a select, the select's result compared next.
CHAIN(setp_selp_chain, unsigned, asm volatile("{\n.reg .pred p;\nsetp.lt.u32 p, %0, %1;\nselp.u32 %0, %2, %1, p;\n}"
                                             : "+r"(a) : "r"(v[i % 4]), "r"(v[(i + 1) % 4])))
// On sm_90 ptxas writes this conversion as three instructions (FSETP, a predicated IADD, LOP3).
CHAIN(cvt_tf32_chain, unsigned, asm volatile("{\n.reg .f32 t;\nmov.b32 t, %0;\ncvt.rna.tf32.f32 %0, t;\n}" : "+r"(a)))
// The rounding to nearest that labs 07 and 09 use from sm_90 on (one instruction there).
CHAIN(cvt_rn_tf32_chain, unsigned, asm volatile("{\n.reg .f32 t;\nmov.b32 t, %0;\ncvt.rn.tf32.f32 %0, t;\n}" : "+r"(a)))
// Each lane reads lane (its own + v) mod 32.
CHAIN(shfl_chain, unsigned, asm volatile("shfl.sync.idx.b32 %0, %0, %1, 0x1f, 0xffffffff;"
                                         : "+r"(a) : "r"((threadIdx.x + v[i % 4]) & 31)))

// Shared-memory loads, a pointer chase: each word (or 16-byte piece's first word) holds the
// shared address of the next, so a step is the load alone, with no address arithmetic (the
// chase_shared of throughput.cu indexes an array, so its steps hold an address computation too).
__global__ void chase_shared(unsigned* out, int steps, int wide, Span* spans) {
    __shared__ __align__(16) unsigned s[4096];
    unsigned base = smem(s), n = wide ? 1024 : 4096, step = wide ? 16 : 4;
    for (unsigned i = threadIdx.x; i < n; i += blockDim.x) s[i * step / 4] = base + (i + 37) % n * step;
    unsigned at = base, x = 0, y = 0, z = 0;
    __syncthreads();
    OPEN
    if (wide) {
#pragma unroll 8
        for (int k = 0; k < steps; k++)
            asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%0];" : "+r"(at), "=r"(x), "=r"(y), "=r"(z) :: "memory");
    } else {
#pragma unroll 8
        for (int k = 0; k < steps; k++) asm volatile("ld.shared.u32 %0, [%0];" : "+r"(at) :: "memory");
    }
    CLOSE
    out[threadIdx.x] = at + x + y + z;
}

// Global loads, a pointer chase by one thread: each node holds the address of the next
// (throughput.cu's chase adds an index to a base, an address computation a step). `warm` steps go
// round the chain first (bringing it into the L1 for .ca), then `steps` are timed. ptxas writes
// .ca as LDG.E.64.STRONG.SM and .cg as LDG.E.64.STRONG.GPU; a plain ld.global (LDG.E.64) gave the
// L1 the same latency.
template <bool L1>
__device__ __forceinline__ void load(unsigned long long& p) {
    if constexpr (L1) asm volatile("ld.global.ca.u64 %0, [%0];" : "+l"(p) :: "memory");
    else asm volatile("ld.global.cg.u64 %0, [%0];" : "+l"(p) :: "memory");
}

template <bool L1>
__global__ void chase_global(const unsigned long long* start, unsigned long long* out, int warm, int steps, Span* spans) {
    unsigned long long p = (unsigned long long)start;
    for (int k = 0; k < warm; k++) load<L1>(p);
    OPEN
#pragma unroll 8
    for (int k = 0; k < steps; k++) load<L1>(p);
    CLOSE
    out[0] = p;
}

// Local memory, a pointer chase through each thread's own array of N words (the array's address
// goes to inline PTX, so it cannot live in registers). With `one_sm`, only the blocks on the SM
// the first block to start landed on chase (8 blocks of 256 threads, 1 KiB each: 2 MiB, far more
// than the L1, all in the L2); each block's first thread times its own chase.
template <int N>
__global__ void __launch_bounds__(256, 8) chase_local(unsigned* out, int steps, int one_sm, unsigned* target, Span* spans) {
    unsigned loc[N];
    unsigned base = (unsigned)__cvta_generic_to_local(loc), sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    __shared__ unsigned chosen;
    if (threadIdx.x == 0) { unsigned old = atomicCAS(target, 0xffffffffu, sm); chosen = old == 0xffffffffu ? sm : old; }
    __syncthreads();
    if (one_sm && chosen != sm) { if (threadIdx.x == 0) spans[blockIdx.x] = Span{0, 0, 0}; return; }
    for (int i = 0; i < N; i++) loc[i] = base + 4 * ((i + 37) % N);
    unsigned at = base;
    for (int k = 0; k < N; k++) asm volatile("ld.local.u32 %0, [%0];" : "+r"(at) :: "memory");
    OPEN
#pragma unroll 8
    for (int k = 0; k < steps; k++) asm volatile("ld.local.u32 %0, [%0];" : "+r"(at) :: "memory");
    CLOSE
    out[blockIdx.x * blockDim.x + threadIdx.x] = at;
}

// cp.async of 16 bytes, one thread: copy, commit, wait for the group, then read the landed word,
// which is the source offset of the next copy (a chain in 64 KiB the L2 holds).
__global__ void cp_async_land(const char* src, unsigned* out, int steps, Span* spans) {
    __shared__ __align__(16) unsigned land[4];
    unsigned dst = smem(land), off = 0;
    OPEN
    for (int k = 0; k < steps; k++) {
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(dst), "l"(src + off) : "memory");
        asm volatile("cp.async.commit_group;" ::: "memory");
        asm volatile("cp.async.wait_group 0;" ::: "memory");
        asm volatile("ld.shared.u32 %0, [%1];" : "=r"(off) : "r"(dst) : "memory");
    }
    CLOSE
    out[0] = off;
}

__device__ __forceinline__ void wait_parity(unsigned bar, unsigned parity) {
    unsigned done = 0;
    while (!done)
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}"
                     : "=r"(done) : "r"(bar), "r"(parity) : "memory");
}

// A bulk copy (the copy engine) of `bytes`, one thread: expect the bytes on an mbarrier, copy,
// wait for the barrier's phase, read the landed first word: the next copy's source offset. With
// `bytes` 0 there is no copy: one plain arrival a round on a barrier of count 1, and the wait.
__global__ void bulk_land(const char* src, unsigned* out, int steps, unsigned bytes, Span* spans) {
    __shared__ __align__(128) char land[16384];
    __shared__ __align__(8) uint64_t bar;
    unsigned b = smem(&bar), dst = smem(land), off = 0, phase = 0;
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(b) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    OPEN
    for (int k = 0; k < steps; k++) {
        if (bytes) {
            asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(b), "r"(bytes) : "memory");
            asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                         :: "r"(dst), "l"(src + off), "r"(bytes), "r"(b) : "memory");
        } else {
            asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(b) : "memory");
        }
        wait_parity(b, phase);
        phase ^= 1;
        if (bytes) asm volatile("ld.shared.u32 %0, [%1];" : "=r"(off) : "r"(dst) : "memory");
    }
    CLOSE
    out[0] = off + phase;
}

// bar.sync in a loop, every thread of the block: cycles a barrier.
__global__ void barrier(unsigned* out, int iters, Span* spans) {
    OPEN
    for (int n = 0; n < iters; n++) {
#pragma unroll
        for (int i = 0; i < 8; i++) asm volatile("bar.sync 0;" ::: "memory");
    }
    CLOSE
    if (threadIdx.x == 0) out[0] = iters;
}

// TF32 mma.sync m16n8k8, one warp, one accumulator: every mma waits for the last.
__global__ void mma_chain(float* out, int iters, Span* spans) {
    unsigned a0 = threadIdx.x, a1 = 1, a2 = 2, a3 = 3, b0 = 4, b1 = 5;
    float c[4] = {};
    OPEN
    for (int n = 0; n < iters; n++) {
#pragma unroll
        for (int i = 0; i < 8; i++)
            asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
                         "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                         : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                         : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    }
    CLOSE
    out[threadIdx.x] = c[0] + c[1] + c[2] + c[3];
}

// wgmma, one warpgroup, A and B from (zero-filled) shared memory through descriptors with no
// swizzle: 8-row by 16-byte core matrices, 128 bytes apart along K and 256 along M or N.
__device__ __forceinline__ unsigned long long descriptor(unsigned addr) {
    return ((addr & 0x3FFFF) >> 4) | ((128ull >> 4) << 16) | ((256ull >> 4) << 32);
}

#define D0_63 "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21," \
              "%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43," \
              "%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63"
#define D64_127 "%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,%80,%81,%82,%83," \
                "%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95,%96,%97,%98,%99,%100,%101,%102,%103," \
                "%104,%105,%106,%107,%108,%109,%110,%111,%112,%113,%114,%115," \
                "%116,%117,%118,%119,%120,%121,%122,%123,%124,%125,%126,%127"
#define F8(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), \
              "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
#define F64(i) F8(i), F8(i + 8), F8(i + 16), F8(i + 24), F8(i + 32), F8(i + 40), F8(i + 48), F8(i + 56)

template <int N>
__device__ __forceinline__ void wgmma(float (&d)[N / 2], unsigned long long da, unsigned long long db) {
    if constexpr (N == 256)
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 {" D0_63 "," D64_127 "}, %128, %129, p, 1, 1;\n}\n"
                     : F64(0), F64(64) : "l"(da), "l"(db), "r"(1));
    else
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {" D0_63 "}, %64, %65, p, 1, 1;\n}\n"
                     : F64(0) : "l"(da), "l"(db), "r"(1));
}

// Each round: fence, BATCH wgmmas on one accumulator, commit, wait for all. BATCH 1 gives the
// latency of one; BATCH 8 the rate the tensor cores take them back to back.
template <int N, int BATCH>
__global__ void wgmma_chain(float* out, int iters, Span* spans) {
    __shared__ __align__(1024) float tiles[4096];  // A: 64×8 at 0, B: N×8 at 2 KiB
    for (int i = threadIdx.x; i < 4096; i += blockDim.x) tiles[i] = 0.0f;
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    unsigned long long da = descriptor(smem(tiles)), db = descriptor(smem(tiles + 512));
    float d[N / 2];
    for (int i = 0; i < N / 2; i++) d[i] = 0.0f;
    OPEN
    for (int n = 0; n < iters; n++) {
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
        for (int j = 0; j < BATCH; j++) wgmma<N>(d, da, db);
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    }
    CLOSE
    float s = 0;
    for (int i = 0; i < N / 2; i++) s += d[i];
    out[threadIdx.x] = s;
}

// Launches twice (the first run warms the caches the chain lives in) and returns the second
// run's mean cycles over the blocks that timed anything; `timed` gets how many did.
template <typename F>
static double cycles(F launch, Span* d_spans, int blocks, int* timed = nullptr) {
    for (int run = 0; run < 2; run++) {
        launch();
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
    }
    std::vector<Span> spans(blocks);
    CHECK(cudaMemcpy(spans.data(), d_spans, blocks * sizeof(Span), cudaMemcpyDeviceToHost));
    double sum = 0;
    int n = 0;
    for (auto& s : spans)
        if (s.cycles) { sum += s.cycles; n++; }
    if (timed) *timed = n;
    return n ? sum / n : 0;
}

// A random cycle through `nodes` nodes `stride` bytes apart, as the byte offset of each node's
// successor stored at the node (offsets) or as its address (pointers, base added).
static std::vector<size_t> successors(size_t nodes) {
    std::vector<size_t> v(nodes), next(nodes);
    for (size_t i = 0; i < nodes; i++) v[i] = i;
    uint64_t x = 88172645463325252ull;
    for (size_t i = nodes - 1; i > 0; i--) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        std::swap(v[i], v[x % (i + 1)]);
    }
    for (size_t i = 0; i < nodes; i++) next[v[i]] = v[(i + 1) % nodes];
    return next;
}

static unsigned long long* pointer_cycle(size_t bytes, size_t stride) {
    unsigned long long* d;
    CHECK(cudaMalloc(&d, bytes));
    std::vector<unsigned long long> h(bytes / 8, 0);
    auto next = successors(bytes / stride);
    for (size_t i = 0; i < next.size(); i++) h[i * stride / 8] = (unsigned long long)d + next[i] * stride;
    CHECK(cudaMemcpy(d, h.data(), bytes, cudaMemcpyHostToDevice));
    return d;
}

static char* offset_cycle(size_t bytes, size_t stride) {
    char* d;
    CHECK(cudaMalloc(&d, bytes));
    std::vector<unsigned> h(bytes / 4, 0);
    auto next = successors(bytes / stride);
    for (size_t i = 0; i < next.size(); i++) h[i * stride / 4] = unsigned(next[i] * stride);
    CHECK(cudaMemcpy(d, h.data(), bytes, cudaMemcpyHostToDevice));
    return d;
}

// A block that spins for `cycles` of its SM's clock and leaves: launched back to back, what a
// launch adds to a kernel's own time.
__global__ void spin(long long cycles_to_spin, unsigned* out) {
    long long start = clock64();
    while (clock64() - start < cycles_to_spin) {}
    if (threadIdx.x == 1024) out[0] = 1;
}

int main() {
    cudaDeviceProp p; CHECK(cudaGetDeviceProperties(&p, 0));
    int sms = p.multiProcessorCount;
    printf("device %s, %d SMs\n", p.name, sms);
    Span* spans; CHECK(cudaMalloc(&spans, 16 * sms * sizeof(Span)));
    CHECK(cudaMemset(spans, 0, 16 * sms * sizeof(Span)));
    void* out; CHECK(cudaMalloc(&out, 8 * 256 * sms * sizeof(unsigned)));
    float* fo = (float*)out;
    unsigned* uo = (unsigned*)out;

    {   // Arithmetic: one warp, 24 dependent steps a round.
        int iters = 1 << 11;
        double steps = iters * 24.0;
        auto alu = [&](const char* what, double c) { printf("%s: %.1f cycles\n", what, c / steps); };
        alu("ffma dependent", cycles([&] { ffma_chain<<<1, 32>>>(fo, iters, 0.999f, 1e-4f, 1.001f, -1e-4f, spans); }, spans, 1));
        alu("fadd dependent", cycles([&] { fadd_chain<<<1, 32>>>(fo, iters, 1e-4f, -1e-4f, 2e-4f, -2e-4f, spans); }, spans, 1));
        alu("imad dependent", cycles([&] { imad_chain<<<1, 32>>>(uo, iters, 3, 5, 7, 9, spans); }, spans, 1));
        alu("iadd dependent", cycles([&] { iadd_chain<<<1, 32>>>(uo, iters, 3, 5, 7, 9, spans); }, spans, 1));
        alu("lop3/and dependent", cycles([&] { lop3_chain<<<1, 32>>>(uo, iters, 0xF0F0F0F0u, 0x3C3C3C3Cu, 0xFF00FF00u, 0x12345678u, spans); }, spans, 1));
        alu("shf/shl dependent", cycles([&] { shf_chain<<<1, 32>>>(uo, iters, 3, 5, 7, 9, spans); }, spans, 1));
        printf("setp+selp dependent: %.1f cycles a pair\n",
               cycles([&] { setp_selp_chain<<<1, 32>>>(uo, iters, 3, 5, 7, 9, spans); }, spans, 1) / steps);
        alu("cvt.rna.tf32.f32 dependent", cycles([&] { cvt_tf32_chain<<<1, 32>>>(uo, iters, 0x3F9E0419u, 0, 0, 0, spans); }, spans, 1));
        alu("cvt.rn.tf32.f32 dependent", cycles([&] { cvt_rn_tf32_chain<<<1, 32>>>(uo, iters, 0x3F9E0419u, 0, 0, 0, spans); }, spans, 1));
        alu("mov via shfl.sync dependent", cycles([&] { shfl_chain<<<1, 32>>>(uo, iters, 1, 7, 19, 30, spans); }, spans, 1));
    }
    {   // Shared memory, one warp, every lane at the same address (no bank conflict).
        int steps = 1 << 14;
        printf("shared load dependent: %.1f cycles a load\n",
               cycles([&] { chase_shared<<<1, 32>>>(uo, steps, 0, spans); }, spans, 1) / steps);
        printf("shared load 128-bit dependent: %.1f cycles a load\n",
               cycles([&] { chase_shared<<<1, 32>>>(uo, steps, 1, spans); }, spans, 1) / steps);
    }
    {   // Global: a 4 KiB chain (a node every 32-byte sector) in the L1, a 4 MiB one (a node every
        // 128-byte line) in the L2. Each step is the load alone: the node holds the next address.
        int steps = 1 << 14;
        unsigned long long* l1 = pointer_cycle(4096, 32);
        unsigned long long* l2 = pointer_cycle(size_t(4) << 20, 128);
        unsigned long long* o = (unsigned long long*)out;
        printf("L1 hit dependent: %.1f cycles a load\n",
               cycles([&] { chase_global<true><<<1, 1>>>(l1, o, 4096 / 32, steps, spans); }, spans, 1) / steps);
        printf("L2 hit dependent: %.1f cycles a load\n",
               cycles([&] { chase_global<false><<<1, 1>>>(l2, o, 0, steps, spans); }, spans, 1) / steps);
        CHECK(cudaFree(l1)); CHECK(cudaFree(l2));
    }
    {   // Local memory: one warp, 256 bytes a thread (the L1 holds it); then 8 blocks of 256
        // threads on one SM, 1 KiB a thread (2 MiB: the L2 holds it), every warp chasing.
        int steps = 1 << 13, timed = 0;
        unsigned* target; CHECK(cudaMalloc(&target, 4));
        auto reset = [&] { CHECK(cudaMemset(target, 0xff, 4)); };
        printf("local memory dependent (L1): %.1f cycles a load\n",
               cycles([&] { reset(); chase_local<64><<<1, 32>>>(uo, steps, 0, target, spans); }, spans, 1) / steps);
        double c = cycles([&] { reset(); chase_local<256><<<8 * sms, 256>>>(uo, 1 << 11, 1, target, spans); },
                          spans, 8 * sms, &timed);
        printf("local memory dependent (L2, %d blocks of 256 on one SM chasing): %.1f cycles a load\n",
               timed, c / (1 << 11));
        CHECK(cudaFree(target));
    }
    {   // cp.async 16 bytes, landing and read back, over a 64 KiB chain in the L2.
        int steps = 1 << 12;
        char* src = offset_cycle(64 << 10, 128);
        printf("cp.async 16B land: %.1f cycles a round\n",
               cycles([&] { cp_async_land<<<1, 1>>>(src, uo, steps, spans); }, spans, 1) / steps);
        CHECK(cudaFree(src));
    }
    {   // Bulk copies over a 1 MiB chain of 16 KiB pieces in the L2, and the mbarrier alone.
        int steps = 1 << 11;
        char* src = offset_cycle(1 << 20, 16384);
        for (unsigned bytes : {1024u, 4096u, 16384u})
            printf("TMA/bulk land + mbarrier, %u KiB: %.1f cycles a round\n", bytes / 1024,
                   cycles([&] { bulk_land<<<1, 1>>>(src, uo, steps, bytes, spans); }, spans, 1) / steps);
        printf("mbarrier arrive + try_wait: %.1f cycles a round\n",
               cycles([&] { bulk_land<<<1, 1>>>(src, uo, steps, 0, spans); }, spans, 1) / steps);
        CHECK(cudaFree(src));
    }
    {   // __syncthreads, 8 a round.
        int iters = 1 << 11;
        for (int threads : {256, 1024})
            printf("bar.sync, %d threads: %.1f cycles a barrier\n", threads,
                   cycles([&] { barrier<<<1, threads>>>(uo, iters, spans); }, spans, 1) / (iters * 8.0));
    }
    {   // Tensor cores.
        int iters = 1 << 11;
        printf("mma.sync m16n8k8 tf32 dependent: %.1f cycles\n",
               cycles([&] { mma_chain<<<1, 32>>>(fo, iters, spans); }, spans, 1) / (iters * 8.0));
        // wgmma: a round of one, a round of 8; the 7 more wgmmas' extra cycles are the pipe's rate.
        iters = 1 << 10;
        double r1 = cycles([&] { wgmma_chain<128, 1><<<1, 128>>>(fo, iters, spans); }, spans, 1) / iters;
        double r8 = cycles([&] { wgmma_chain<128, 8><<<1, 128>>>(fo, iters, spans); }, spans, 1) / iters;
        printf("wgmma m64n128k8 tf32 dependent: %.1f cycles a round\n", r1);
        printf("wgmma m64n128k8 tf32, 8 back to back: %.1f cycles a wgmma (%.1f each past the first)\n",
               r8 / 8, (r8 - r1) / 7);
        r1 = cycles([&] { wgmma_chain<256, 1><<<1, 128>>>(fo, iters, spans); }, spans, 1) / iters;
        r8 = cycles([&] { wgmma_chain<256, 8><<<1, 128>>>(fo, iters, spans); }, spans, 1) / iters;
        printf("wgmma m64n256k8 tf32 dependent: %.1f cycles a round\n", r1);
        printf("wgmma m64n256k8 tf32, 8 back to back: %.1f cycles a wgmma (%.1f each past the first)\n",
               r8 / 8, (r8 - r1) / 7);
    }
    {   // The launch: kernels of a known length back to back, timed by events over 200 launches;
        // beyond the spin's own time (at the SM clock each spin measured), what a launch adds.
        for (long long spin_cycles : {0LL, 4000LL, 20000LL, 100000LL}) {
            for (int blocks : {1, 132}) {
                cudaEvent_t a, b;
                CHECK(cudaEventCreate(&a)); CHECK(cudaEventCreate(&b));
                for (int i = 0; i < 20; i++) spin<<<blocks, 128>>>(spin_cycles, uo);
                CHECK(cudaEventRecord(a));
                for (int i = 0; i < 200; i++) spin<<<blocks, 128>>>(spin_cycles, uo);
                CHECK(cudaEventRecord(b)); CHECK(cudaEventSynchronize(b)); CHECK(cudaGetLastError());
                float ms = 0; CHECK(cudaEventElapsedTime(&ms, a, b));
                double us = ms * 1e3 / 200, spin_us = spin_cycles / 1980.0;
                printf("launch, %d block(s) spinning %lld cycles: %.2f us a launch, %.2f us beyond %.2f us of spin at 1980 MHz\n",
                       blocks, spin_cycles, us, us - spin_us, spin_us);
            }
        }
    }
    CHECK(cudaGetLastError());
    return 0;
}

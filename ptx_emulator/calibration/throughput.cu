// Microbenchmarks for the constants of the emulator's time model (the book's appendix "The
// time model"): the SM clock each kind of work holds, and the rates and latencies the H100's
// published figures leave out. Built and run on the GPU by `scripts/gpu-model-runs.sh constants`:
//
//   nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -o throughput throughput.cu && ./throughput
//
// Every kernel reads each SM's cycle counter and the global timer around its work, which gives
// the clock the SMs held while doing it; rates a clock are the events' time at that clock. None of these kernels
// is a lab's: nothing here is fitted to the runs the model is judged on.
#include <cstdio>
#include <cstdint>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)

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

// FP32: independent FMA chains, 8 per thread, `iters` rounds.
__global__ void ffma(float* out, int iters, Span* spans) {
    float a[8];
    for (int i = 0; i < 8; i++) a[i] = threadIdx.x * 0.001f + i;
    OPEN
    for (int n = 0; n < iters; n++) {
#pragma unroll
        for (int i = 0; i < 8; i++) a[i] = fmaf(a[i], 0.9999f, 0.0001f);
    }
    CLOSE
    float s = 0; for (int i = 0; i < 8; i++) s += a[i];
    if (s == 12345.0f) out[0] = s;
}

// TF32 rounding as labs 07 and 09 issue it (cvt.rn.tf32.f32, sm_90 on): independent
// conversions, 8 per thread, each of a value an add keeps changing, `iters` rounds.
__global__ void cvt_tf32(float* out, int iters, Span* spans) {
    float a[8];
    unsigned r[8];
    for (int i = 0; i < 8; i++) a[i] = threadIdx.x * 0.001f + i;
    OPEN
    for (int n = 0; n < iters; n++) {
#pragma unroll
        for (int i = 0; i < 8; i++) {
            asm volatile("cvt.rn.tf32.f32 %0, %1;" : "=r"(r[i]) : "f"(a[i]));
            a[i] += __uint_as_float(r[i]);
        }
    }
    CLOSE
    float s = 0; for (int i = 0; i < 8; i++) s += a[i];
    if (s == 12345.0f) out[0] = s;
}

// FP32 as a matrix product issues it: an 8×8 outer product a thread, every FMA reading three
// registers (the accumulator, a value of A's column, one of B's row), the operands refreshed each
// round by one add apiece so that nothing is hoisted. 16 FMA-and-add rounds of 64 FMAs.
__global__ void outer(float* out, int iters, Span* spans) {
    float a[8], b[8], acc[8][8] = {};
    for (int i = 0; i < 8; i++) { a[i] = threadIdx.x * 0.001f + i; b[i] = i * 0.5f; }
    OPEN
    for (int n = 0; n < iters; n++) {
#pragma unroll
        for (int i = 0; i < 8; i++)
#pragma unroll
            for (int j = 0; j < 8; j++) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
#pragma unroll
        for (int i = 0; i < 8; i++) { a[i] += 1e-7f; b[i] -= 1e-7f; }
    }
    CLOSE
    float s = 0;
    for (int i = 0; i < 8; i++) for (int j = 0; j < 8; j++) s += acc[i][j];
    if (s == 12345.0f) out[0] = s;
}

// The same outer product with its operands read from shared memory each round, as a tiled
// product reads them: `wide` 1 loads A's and B's eight values in four 16-byte loads, 0 in sixteen
// 4-byte ones. Lanes read eight distinct words (one wavefront a load), so the L1 is never the
// limit: what the loads cost is issue. A round is 64 FMAs, 4 or 16 loads and the loop's 3.
__global__ void outer_shared(float* out, int iters, int wide, Span* spans) {
    __shared__ float4 tile[64];
    for (int i = threadIdx.x; i < 64; i += blockDim.x) tile[i] = make_float4(i, i + 1, i + 2, i + 3);
    __syncthreads();
    unsigned base = (unsigned)__cvta_generic_to_shared(&tile[(threadIdx.x % 8) * 4]);
    float a[8], b[8], acc[8][8] = {};
    OPEN
    for (int n = 0; n < iters; n++) {
        if (wide) {
            asm volatile("ld.shared.v4.f32 {%0,%1,%2,%3}, [%4];" : "=f"(a[0]), "=f"(a[1]), "=f"(a[2]), "=f"(a[3]) : "r"(base));
            asm volatile("ld.shared.v4.f32 {%0,%1,%2,%3}, [%4+16];" : "=f"(a[4]), "=f"(a[5]), "=f"(a[6]), "=f"(a[7]) : "r"(base));
            asm volatile("ld.shared.v4.f32 {%0,%1,%2,%3}, [%4+32];" : "=f"(b[0]), "=f"(b[1]), "=f"(b[2]), "=f"(b[3]) : "r"(base));
            asm volatile("ld.shared.v4.f32 {%0,%1,%2,%3}, [%4+48];" : "=f"(b[4]), "=f"(b[5]), "=f"(b[6]), "=f"(b[7]) : "r"(base));
        } else {
#pragma unroll
            for (int i = 0; i < 8; i++) {
                asm volatile("ld.shared.f32 %0, [%1];" : "=f"(a[i]) : "r"(base + 4 * i));
                asm volatile("ld.shared.f32 %0, [%1];" : "=f"(b[i]) : "r"(base + 32 + 4 * i));
            }
        }
#pragma unroll
        for (int i = 0; i < 8; i++)
#pragma unroll
            for (int j = 0; j < 8; j++) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    CLOSE
    float s = 0;
    for (int i = 0; i < 8; i++) for (int j = 0; j < 8; j++) s += acc[i][j];
    if (s == 12345.0f) out[0] = s;
}

// The L2's latency under load: block 0's first thread walks a pointer chase (as `chase`) while
// every other warp of the grid streams a 24 MiB buffer through the L2 (as `stream`) until the
// chase ends.
__global__ void chase_loaded(const unsigned* next, unsigned* out, int steps, const float4* in, size_t words4,
                             volatile int* done, Span* spans) {
    OPEN
    if (blockIdx.x == 0 && threadIdx.x < 32) {
        if (threadIdx.x == 0) {
            unsigned at = 0;
            for (int n = 0; n < steps; n++) asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(at) : "l"(next + at));
            out[0] = at;
            *done = 1;
        }
    } else {
        float s = 0;
        size_t stride = (size_t)gridDim.x * blockDim.x;
        while (!*done) {
            for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < words4; i += stride) {
                float4 v;
                asm volatile("ld.global.cg.v4.f32 {%0,%1,%2,%3}, [%4];"
                             : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(in + i));
                s += v.x + v.y + v.z + v.w;
            }
        }
        if (s == 12345.0f) out[1] = 1;
    }
    CLOSE
}

// The L2 as the copy engine reads it: one thread a block keeps four bulk copies of `chunk` bytes
// in flight (cp.async.bulk into shared memory, each completing an mbarrier), over a buffer the L2
// holds.
__global__ void bulk(const char* in, size_t bytes, int rounds, unsigned chunk, Span* spans) {
    extern __shared__ __align__(128) char stage[];
    __shared__ __align__(8) unsigned long long bar[4];
    OPEN
    if (threadIdx.x == 0) {
        for (int s = 0; s < 4; s++) {
            unsigned b = (unsigned)__cvta_generic_to_shared(&bar[s]);
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(b));
        }
        asm volatile("fence.mbarrier_init.release.cluster;");
        size_t chunks = bytes / chunk;
        long long issued = 0;
        unsigned phase[4] = {0, 0, 0, 0};
        for (int r = 0; r < rounds; r++) {
            for (size_t c = blockIdx.x; c < chunks; c += gridDim.x, issued++) {
                int s = issued % 4;
                unsigned b = (unsigned)__cvta_generic_to_shared(&bar[s]);
                if (issued >= 4) {  // wait for the last copy into part s before reusing it
                    asm volatile("{\n .reg .pred p;\n W: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
                                 " @!p bra W;\n}" :: "r"(b), "r"(phase[s]));
                    phase[s] ^= 1;
                }
                unsigned dst = (unsigned)__cvta_generic_to_shared(stage + s * chunk);
                asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(b), "r"(chunk));
                asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                             :: "r"(dst), "l"(in + c * chunk), "r"(chunk), "r"(b) : "memory");
            }
        }
        for (int s = 0; s < 4 && s < issued; s++) {  // the last copies
            unsigned b = (unsigned)__cvta_generic_to_shared(&bar[s]);
            asm volatile("{\n .reg .pred p;\n W: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
                         " @!p bra W;\n}" :: "r"(b), "r"(phase[s]));
        }
    }
    CLOSE
}

// Global loads that hit the L1: each warp reads a 16 KiB array over and over; `stride` 0 makes
// every lane read one word (one sector a request), 1 makes a warp read 128 contiguous bytes
// (four sectors a request).
__global__ void l1_loads(const float* __restrict__ in, float* out, int iters, int stride, Span* spans) {
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    float s = 0;
    OPEN
    for (int n = 0; n < iters; n++) {
#pragma unroll
        for (int i = 0; i < 8; i++) {
            int at = ((n * 8 + i) * 32 + warp * 32 * 8 + lane * stride) & 4095;
            s += __ldg(&in[at]);
        }
    }
    CLOSE
    if (s == 12345.0f) out[0] = s;
}

// Global loads that hit the L1, with no address arithmetic: each load has its offset in the
// instruction, and one add uses it, so a warp issues two instructions a load. Each warp reads
// `sectors` sectors a request (1: every lane the same word; 4: 128 contiguous bytes).
__global__ void l1_requests(const float* __restrict__ in, float* out, int iters, int sectors, Span* spans) {
    int lane = threadIdx.x % 32;
    const float* p = in + (sectors == 4 ? lane : 0) + (threadIdx.x / 32 % 4) * 512;
    float s = 0;
    OPEN
    for (int n = 0; n < iters; n++) {
#pragma unroll
        for (int i = 0; i < 16; i++) s += __ldg(p + i * 32);
        if (s == 12345.0f) p += 1;  // never: keeps the loads in the loop
    }
    CLOSE
    if (s == 12345.0f) out[0] = s;
}

// Global loads that hit the L1, each warp's lanes spread over `lines` 128-byte lines (1, 2, 4,
// 8, 16 or 32): lane l reads line l % lines, so 32 lines is a warp walking down a column of a
// row-major matrix. The offsets are in the instruction, as in l1_requests, and the 16 loads of a
// round read 16 different places (the compiler merges loads of one address); the 20 KiB the
// block reads stays in the L1.
__global__ void l1_lines(const float* __restrict__ in, float* out, int iters, int lines, Span* spans) {
    int lane = threadIdx.x % 32;
    const float* p = in + (lane % lines) * 32 + lane / lines + (threadIdx.x / 32 % 4) * 32;
    float s = 0;
    OPEN
    for (int n = 0; n < iters; n++) {
#pragma unroll
        for (int i = 0; i < 16; i++) s += __ldg(p + i * 256);
        if (s == 12345.0f) p += 1;  // never: keeps the loads in the loop
    }
    CLOSE
    if (s == 12345.0f) out[0] = s;
}

// Loads that skip the L1 (`.cg`): the whole grid streams through a buffer of `words` floats,
// 16 bytes a lane; small enough for the L2 (L2 bandwidth) or far larger (DRAM bandwidth).
__global__ void stream(const float4* in, float* out, size_t words4, int rounds, Span* spans) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    float s = 0;
    OPEN
    for (int r = 0; r < rounds; r++) {
        for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < words4; i += stride) {
            float4 v;
            asm volatile("ld.global.cg.v4.f32 {%0,%1,%2,%3}, [%4];"
                         : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(in + i));
            s += v.x + v.y + v.z + v.w;
        }
    }
    CLOSE
    if (s == 12345.0f) out[0] = s;
}

// TF32 mma.sync m16n8k8: four independent accumulators per warp.
__global__ void mma_sync(float* out, int iters, Span* spans) {
    uint32_t a[4] = {threadIdx.x, 1, 2, 3}, b[2] = {4, 5};
    float c[4][4] = {};
    OPEN
    for (int n = 0; n < iters; n++) {
#pragma unroll
        for (int j = 0; j < 4; j++)
            asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
                         "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                         : "+f"(c[j][0]), "+f"(c[j][1]), "+f"(c[j][2]), "+f"(c[j][3])
                         : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
    CLOSE
    float s = 0; for (int j = 0; j < 4; j++) for (int i = 0; i < 4; i++) s += c[j][i];
    if (s == 12345.0f) out[0] = s;
}

// Dependent loads (a pointer chase) by one thread: the latency of a load served by the L2
// (`.cg`, a chain in a few MiB).
__global__ void chase(const unsigned* next, unsigned* out, int steps, Span* spans) {
    unsigned at = 0;
    OPEN
    for (int n = 0; n < steps; n++) {
        asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(at) : "l"(next + at));
    }
    CLOSE
    out[0] = at;
}

// Shared-memory latency: a dependent chain through shared memory.
__global__ void chase_shared(unsigned* out, int steps, Span* spans) {
    __shared__ unsigned s[1024];
    for (int i = threadIdx.x; i < 1024; i += blockDim.x) s[i] = (i * 33 + 7) & 1023;
    unsigned at = threadIdx.x;
    OPEN
    for (int n = 0; n < steps; n++) at = s[at];
    CLOSE
    out[0] = at;
}

__global__ void empty() {}

struct Result { double ms, mhz, cycles; };

// The launch's time by events, and the SMs' mean clock and mean cycles over the blocks.
template <typename F>
static Result timed(F launch, Span* d_spans, int blocks) {
    cudaEvent_t a, b;
    cudaEventCreate(&a); cudaEventCreate(&b);
    launch();  // warm-up
    cudaEventRecord(a); launch(); cudaEventRecord(b); cudaEventSynchronize(b);
    float ms = 0; cudaEventElapsedTime(&ms, a, b);
    std::vector<Span> spans(blocks);
    cudaMemcpy(spans.data(), d_spans, blocks * sizeof(Span), cudaMemcpyDeviceToHost);
    double cycles = 0, mhz = 0;
    for (auto& s : spans) {
        cycles += s.cycles;
        mhz += s.cycles / double(s.end_ns - s.start_ns) * 1e3;
    }
    return Result{ms, mhz / blocks, cycles / blocks};
}

int main() {
    cudaDeviceProp p; CHECK(cudaGetDeviceProperties(&p, 0));
    int sms = p.multiProcessorCount;
    printf("device %s, %d SMs\n", p.name, sms);
    Span* spans; CHECK(cudaMalloc(&spans, 64 * sms * sizeof(Span)));
    float* out; CHECK(cudaMalloc(&out, 64));

    {   // FP32: 4 blocks of 256 threads a SM, every lane busy.
        int blocks = 4 * sms, iters = 1 << 16;
        auto r = timed([&] { ffma<<<blocks, 256>>>(out, iters, spans); }, spans, blocks);
        double ops = double(blocks) * 256 * 8 * iters;
        printf("ffma: %.3f ms, SM clock %.0f MHz, %.1f FP32 warp-instructions a clock an SM, %.0f GFLOP/s\n",
               r.ms, r.mhz, ops / 32 / sms / (r.ms * 1e-3 * r.mhz * 1e6), 2 * ops / r.ms / 1e6);
    }
    {   // TF32 rounding: 4 blocks of 256 threads a SM, a conversion and an add each step.
        int blocks = 4 * sms, iters = 1 << 14;
        auto r = timed([&] { cvt_tf32<<<blocks, 256>>>(out, iters, spans); }, spans, blocks);
        double cvts = double(blocks) * 256 * 8 * iters;
        printf("cvt.rn.tf32.f32 with an add each: %.3f ms, SM clock %.0f MHz, %.2f conversion warp-instructions a clock an SM\n",
               r.ms, r.mhz, cvts / 32 / sms / (r.ms * 1e-3 * r.mhz * 1e6));
    }
    {   // FP32 as a product issues it: 2 and 4 blocks of 256 threads a SM.
        int iters = 1 << 12;
        for (int per : {2, 4}) {
            int blocks = per * sms;
            auto r = timed([&] { outer<<<blocks, 256>>>(out, iters, spans); }, spans, blocks);
            double fmas = double(blocks) * 256 * 64 * iters, warp_inst = double(blocks) * 8 * 80 * iters;
            printf("outer-product FMAs, %d blocks of 256 a SM: %.3f ms, SM clock %.0f MHz, %.2f FMA warp-instructions "
                   "a clock an SM (%.2f with the adds), %.0f GFLOP/s\n", per, r.ms, r.mhz,
                   fmas / 32 / sms / (r.ms * 1e-3 * r.mhz * 1e6), warp_inst / sms / (r.ms * 1e-3 * r.mhz * 1e6),
                   2 * fmas / r.ms / 1e6);
        }
    }
    {   // The outer product fed from shared memory: what a shared load costs in issue.
        int iters = 1 << 12;
        for (int wide : {1, 0}) {
            int blocks = 2 * sms;
            auto r = timed([&] { outer_shared<<<blocks, 256>>>(out, iters, wide, spans); }, spans, blocks);
            double rounds = double(blocks) * 8 * iters, per_round = 64 + (wide ? 4 : 16) + 3;
            double clocks = sms * (r.ms * 1e-3 * r.mhz * 1e6);
            printf("outer product from shared, %s loads, 2 blocks of 256 a SM: %.3f ms, SM clock %.0f MHz, %.2f FMA "
                   "warp-instructions a clock an SM (%.2f with the loads and the loop's 3)\n", wide ? "16-byte" : "4-byte",
                   r.ms, r.mhz, rounds * 64 / clocks, rounds * per_round / clocks);
        }
    }
    {   // The copy engine's reads of a 24 MiB buffer the L2 holds, 20 times over: a block a SM with
        // copies of 32 KiB, two with copies of 16 KiB.
        size_t bytes = size_t(24) << 20;
        char* in; CHECK(cudaMalloc(&in, bytes)); CHECK(cudaMemset(in, 1, bytes));
        CHECK(cudaFuncSetAttribute(bulk, cudaFuncAttributeMaxDynamicSharedMemorySize, 4 * 32768));
        for (int per : {1, 2}) {
            int blocks = per * sms;
            unsigned chunk = 32768 / per;
            auto r = timed([&] { bulk<<<blocks, 32, 4 * chunk>>>(in, bytes, 20, chunk, spans); }, spans, blocks);
            double moved = double(bytes) * 20;
            printf("L2 reads by the copy engine, %d block(s) a SM: %.3f ms, SM clock %.0f MHz, %.0f GB/s, %.1f bytes a clock (whole GPU)\n",
                   per, r.ms, r.mhz, moved / r.ms / 1e6, moved / (r.ms * 1e-3 * r.mhz * 1e6));
        }
        CHECK(cudaGetLastError());
        cudaFree(in);
    }
    {   // Global loads that hit L1.
        float* in; CHECK(cudaMalloc(&in, 4096 * 4)); CHECK(cudaMemset(in, 0, 4096 * 4));
        int blocks = 2 * sms, iters = 1 << 14;
        for (int stride : {0, 1}) {
            auto r = timed([&] { l1_loads<<<blocks, 512>>>(in, out, iters, stride, spans); }, spans, blocks);
            double requests = double(blocks) * 16 * 8 * iters;  // per block: 16 warps
            printf("l1 loads, %d sector(s) a request: %.3f ms, SM clock %.0f MHz, %.3f requests a clock an SM\n",
                   stride ? 4 : 1, r.ms, r.mhz, requests / sms / (r.ms * 1e-3 * r.mhz * 1e6));
        }
        for (int sectors : {1, 4}) {
            auto r = timed([&] { l1_requests<<<blocks, 512>>>(in, out, iters, sectors, spans); }, spans, blocks);
            double requests = double(blocks) * 16 * 16 * iters;
            printf("l1 requests, %d sector(s), no address arithmetic: %.3f ms, SM clock %.0f MHz, %.3f requests a clock an SM\n",
                   sectors, r.ms, r.mhz, requests / sms / (r.ms * 1e-3 * r.mhz * 1e6));
        }
        cudaFree(in);
    }
    {   // Global loads that hit the L1, a warp's lanes over 1 to 32 lines.
        float* in; CHECK(cudaMalloc(&in, 8192 * 4)); CHECK(cudaMemset(in, 0, 8192 * 4));
        int blocks = 2 * sms, iters = 1 << 12;
        for (int lines : {1, 2, 4, 8, 16, 32}) {
            auto r = timed([&] { l1_lines<<<blocks, 512>>>(in, out, iters, lines, spans); }, spans, blocks);
            double requests = double(blocks) * 16 * 16 * iters;
            printf("l1 lines, %d line(s) a request: %.3f ms, SM clock %.0f MHz, %.3f requests, %.3f lines a clock an SM\n",
                   lines, r.ms, r.mhz, requests / sms / (r.ms * 1e-3 * r.mhz * 1e6),
                   lines * requests / sms / (r.ms * 1e-3 * r.mhz * 1e6));
        }
        cudaFree(in);
    }
    {   // L2 (24 MiB, read 20 times) and DRAM (2 GiB, read once).
        for (size_t bytes : {size_t(24) << 20, size_t(2) << 30}) {
            float4* in; CHECK(cudaMalloc(&in, bytes)); CHECK(cudaMemset(in, 1, bytes));
            int rounds = bytes < (size_t(1) << 30) ? 20 : 1, blocks = 4 * sms;
            auto r = timed([&] { stream<<<blocks, 512>>>(in, out, bytes / 16, rounds, spans); }, spans, blocks);
            double moved = double(bytes) * rounds;
            printf("%s reads: %.3f ms, SM clock %.0f MHz, %.0f GB/s, %.1f bytes a clock (whole GPU)\n",
                   bytes < (size_t(1) << 30) ? "L2" : "DRAM", r.ms, r.mhz, moved / r.ms / 1e6,
                   moved / (r.ms * 1e-3 * r.mhz * 1e6));
            cudaFree(in);
        }
    }
    {   // TF32 mma.sync: 4 warps a block, 4 blocks a SM... and 8.
        int iters = 1 << 14;
        for (int per : {4, 8}) {
            int blocks = per * sms;
            auto r = timed([&] { mma_sync<<<blocks, 128>>>(out, iters, spans); }, spans, blocks);
            double flops = double(blocks) * 4 * 4 * iters * 2 * 16 * 8 * 8;
            printf("mma.sync tf32, %d blocks of 4 warps a SM: %.3f ms, SM clock %.0f MHz, %.0f FLOP a clock an SM, %.0f GFLOP/s\n",
                   per, r.ms, r.mhz, flops / sms / (r.ms * 1e-3 * r.mhz * 1e6), flops / r.ms / 1e6);
        }
    }
    {   // Latencies: a random cycle of 4-byte words.
        // (A chain far larger than the L2 does not measure DRAM here: the warm-up launch walks the
        // same steps first and leaves them in the L2. The record of 2026-11-27 has such a line.)
        for (size_t words : {size_t(1) << 20}) {
            std::vector<unsigned> order(words), next(words);
            for (size_t i = 0; i < words; i++) order[i] = unsigned(i);
            // Visit one word every 32 (a new sector and line each step), in a shuffled order.
            size_t n = words / 32;
            std::vector<unsigned> v(n);
            for (size_t i = 0; i < n; i++) v[i] = unsigned(i * 32);
            uint64_t x = 88172645463325252ull;
            for (size_t i = n - 1; i > 0; i--) {
                x ^= x << 13; x ^= x >> 7; x ^= x << 17;
                std::swap(v[i], v[x % (i + 1)]);
            }
            for (size_t i = 0; i < n; i++) next[v[i]] = v[(i + 1) % n];
            unsigned* d; CHECK(cudaMalloc(&d, words * 4));
            CHECK(cudaMemcpy(d, next.data(), words * 4, cudaMemcpyHostToDevice));
            int steps = 1 << 14;
            unsigned* o; CHECK(cudaMalloc(&o, 8));
            auto r = timed([&] { chase<<<1, 1>>>(d, o, steps, spans); }, spans, 1);
            printf("%s latency: %.0f cycles a load (SM clock %.0f MHz)\n",
                   words < (size_t(8) << 20) ? "L2" : "DRAM", r.cycles / steps, r.mhz);
            // The same chase while the rest of the GPU streams the L2.
            size_t bytes = size_t(24) << 20;
            float4* in; CHECK(cudaMalloc(&in, bytes)); CHECK(cudaMemset(in, 1, bytes));
            int* done; CHECK(cudaMalloc(&done, 4));
            for (int per : {1, 4}) {
                int blocks = per * sms;
                auto l = timed([&] {
                    cudaMemset(done, 0, 4);
                    chase_loaded<<<blocks, 512>>>(d, o, steps, in, bytes / 16, done, spans);
                }, spans, 1);
                printf("L2 latency under load, %d block(s) of 512 a SM streaming the L2: %.0f cycles a load "
                       "(SM clock %.0f MHz)\n", per, l.cycles / steps, l.mhz);
            }
            cudaFree(in); cudaFree(done);
            cudaFree(d); cudaFree(o);
        }
        unsigned* o; CHECK(cudaMalloc(&o, 4));
        int steps = 1 << 14;
        auto r = timed([&] { chase_shared<<<1, 32>>>(o, steps, spans); }, spans, 1);
        printf("shared latency: %.0f cycles a load\n", r.cycles / steps);
        cudaFree(o);
    }
    {   // Launch overhead: back-to-back empty kernels.
        cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
        for (int i = 0; i < 100; i++) empty<<<sms, 128>>>();
        cudaEventRecord(a);
        for (int i = 0; i < 1000; i++) empty<<<sms, 128>>>();
        cudaEventRecord(b); cudaEventSynchronize(b);
        float ms = 0; cudaEventElapsedTime(&ms, a, b);
        printf("launch: %.2f us a launch, back to back\n", ms);
    }
    CHECK(cudaGetLastError());
    return 0;
}

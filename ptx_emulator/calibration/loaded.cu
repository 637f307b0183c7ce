// The memory system under load, for the emulator's time model (the book's appendix "The time
// model"): how long a load waits in the L2 and in DRAM while the rest of the GPU reads at a chosen
// rate. Built and run on the GPU by `scripts/gpu-model-runs.sh loaded`:
//
//   nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -o loaded loaded.cu && ./loaded
//
// One thread walks a pointer chase (one new sector and line a step, in a shuffled order) while
// every other warp of the grid streams a buffer with L2-only loads, sleeping a chosen time between
// its loads. The chase gives the latency; the streamers' bytes over the chase's time give the load
// the GPU carried meanwhile. A chase over a few MiB and a stream of 24 MiB stay in the L2; a chase
// over 1 GiB and a stream of 4 GiB go to DRAM. None of these kernels is a lab's.
#include <cstdio>
#include <cstdint>
#include <vector>
#include <cuda_runtime.h>

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)

__device__ __forceinline__ uint64_t ns() {
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// What the chasing thread measured: its cycles and nanoseconds over the chase.
struct Chase { unsigned long long cycles, nanoseconds; };

__global__ void chase_under(const unsigned* next, unsigned start, unsigned* out, int steps, const float4* in,
                            size_t words4, int gap, volatile int* done, unsigned long long* bytes, Chase* chase) {
    if (blockIdx.x == 0 && threadIdx.x < 32) {
        if (threadIdx.x == 0) {
            unsigned at = start;
            // A few steps first, so that the streamers are running when the count starts.
            for (int n = 0; n < 256; n++) asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(at) : "l"(next + at));
            long long c0 = clock64();
            uint64_t t0 = ns();
            for (int n = 0; n < steps; n++) asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(at) : "l"(next + at));
            *chase = Chase{(unsigned long long)(clock64() - c0), ns() - t0};
            out[0] = at;
            *done = 1;
        }
        return;
    }
    float s = 0;
    unsigned long long rounds = 0;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    // Four loads in flight a thread between looks at `done`, so that the stream can reach the
    // memory's rate rather than the rate one load at a time allows.
    while (!*done) {
        float4 v[4];
#pragma unroll
        for (int u = 0; u < 4; u++) {
            asm volatile("ld.global.cg.v4.f32 {%0,%1,%2,%3}, [%4];"
                         : "=f"(v[u].x), "=f"(v[u].y), "=f"(v[u].z), "=f"(v[u].w) : "l"(in + i));
            i += stride;
            if (i >= words4) i -= words4;
        }
#pragma unroll
        for (int u = 0; u < 4; u++) s += v[u].x + v[u].y + v[u].z + v[u].w;
        rounds += 4;
        if (gap > 0) __nanosleep(gap);
    }
    if (s == 12345.0f) out[1] = 1;
    // Loads issued before `done` was seen but after the chase ended are counted too: a few per
    // thread against many thousands.
    atomicAdd(bytes, rounds * 16);
}

int main() {
    cudaDeviceProp p; CHECK(cudaGetDeviceProperties(&p, 0));
    int sms = p.multiProcessorCount;
    printf("device %s, %d SMs, L2 %d MiB\n", p.name, sms, p.l2CacheSize >> 20);
    unsigned* o; CHECK(cudaMalloc(&o, 8));
    int* done; CHECK(cudaMalloc(&done, 4));
    unsigned long long* bytes; CHECK(cudaMalloc(&bytes, 8));
    Chase* chase; CHECK(cudaMalloc(&chase, sizeof(Chase)));
    struct Level { const char* name; size_t chase_bytes, stream_bytes; };
    for (Level lv : {Level{"L2", size_t(4) << 20, size_t(24) << 20}, Level{"DRAM", size_t(1) << 30, size_t(4) << 30}}) {
        size_t words = lv.chase_bytes / 4;
        // Visit one word every 32 (a new sector and line each step), in a shuffled order.
        size_t n = words / 32;
        std::vector<unsigned> v(n), next(words, 0);
        for (size_t i = 0; i < n; i++) v[i] = unsigned(i * 32);
        uint64_t x = 88172645463325252ull;
        for (size_t i = n - 1; i > 0; i--) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            std::swap(v[i], v[x % (i + 1)]);
        }
        for (size_t i = 0; i < n; i++) next[v[i]] = v[(i + 1) % n];
        unsigned* d; CHECK(cudaMalloc(&d, words * 4));
        CHECK(cudaMemcpy(d, next.data(), words * 4, cudaMemcpyHostToDevice));
        float4* in; CHECK(cudaMalloc(&in, lv.stream_bytes)); CHECK(cudaMemset(in, 1, lv.stream_bytes));
        int steps = 1 << 13;
        // No streamers (one block), then 4 blocks of 512 an SM sleeping less and less between
        // rounds of loads. Each launch starts its chase at a node of its own, so that the measured
        // launch finds none of its lines in the L2 left there by the one before (for DRAM).
        unsigned launches = 0;
        for (int gap : {-1, 32000, 16000, 8000, 4000, 2000, 1000, 500, 250, 100, 0}) {
            int blocks = gap < 0 ? 1 : 4 * sms, threads = gap < 0 ? 32 : 512;
            for (int run = 0; run < 2; run++) {  // the first warms the TLBs and the stream
                CHECK(cudaMemset(done, 0, 4));
                CHECK(cudaMemset(bytes, 0, 8));
                unsigned start = v[(size_t(++launches) * 104729) % n];
                chase_under<<<blocks, threads>>>(d, start, o, steps, in, lv.stream_bytes / 16, gap, done, bytes, chase);
                CHECK(cudaDeviceSynchronize());
            }
            Chase c; unsigned long long b;
            CHECK(cudaMemcpy(&c, chase, sizeof c, cudaMemcpyDeviceToHost));
            CHECK(cudaMemcpy(&b, bytes, 8, cudaMemcpyDeviceToHost));
            double mhz = c.cycles / double(c.nanoseconds) * 1e3;
            double gbs = b / double(c.nanoseconds);
            printf("%s under load, sleep %d ns: %.0f GB/s, %.1f bytes a clock (whole GPU), %.1f cycles a load (SM clock %.0f MHz)\n",
                   lv.name, gap, gbs, gbs * 1e3 / mhz, c.cycles / double(steps), mhz);
        }
        cudaFree(in); cudaFree(d);
    }
    CHECK(cudaGetLastError());
    return 0;
}

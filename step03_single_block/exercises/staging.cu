// EXERCISE (step 03, hands-on): stage A and B in shared memory.
//
// Starts from: this step's kernel, src/kernel.cu, with the copy into shared memory and the
// barrier taken out. The compute loop already reads As and Bs, but nothing writes them yet, so
// the result is wrong.
// To do: TODO 1 (copy A into As), TODO 2 (copy B into Bs), TODO 3 (the barrier).
// Run a copy of your own, from the repository's root (git ignores mine/; --emulate runs it on
// the CPU, with no GPU):
//   mkdir -p mine && cp step03_single_block/exercises/staging.cu mine/ && ex=mine/staging.cu
//   cargo run --release -p step03_single_block -- --emulate --kernel $ex
//   cargo run --release -p step03_single_block -- --emulate --kernel $ex -m 32 -n 32 -k 908
//   cargo run --release -p step03_single_block -- --emulate --kernel $ex -m 8 -n 8 -k 3632
// Check: `verify ... PASS` at all three shapes, and no race named. At 32x32x908, A alone has
//   29056 elements for 1024 threads, so a copy of one element per thread fails there.
// Solution: exercises/staging.diff turns this file into src/kernel.cu:
//   cd step03_single_block && patch -o /tmp/solved.cu exercises/staging.cu exercises/staging.diff

// Step 03: the whole problem in one block's shared memory.
//
// Idea: in step 02 every element of A is read N times and every element of B M times, all from
// global memory. Here one block copies all of A and B into shared memory once, waits at a
// barrier, and then every dot product reads only on-chip memory: each input element crosses
// the global-memory bus exactly once.
//
// What it buys, and what it costs: global traffic falls to the minimum, (M·K + K·N) floats.
// But one block runs on one SM while the rest of the GPU idles, the block's thread limit caps
// M·N at 1024, and shared memory (227 KB on Hopper) caps M·K + K·N. It only serves tiny
// matrices; step 04 keeps the shared-memory reuse and lifts both limits by tiling.

// ANCHOR: kernel
extern "C" __global__ void matmul(int M, int N, int K, const float* A, const float* B, float* C)
{
    // A (M×K) then B (K×N), row-major, in dynamic shared memory sized at launch.
    extern __shared__ float smem[];
    float* As = smem;
    float* Bs = smem + M * K;

    // All threads copy together; the strided loops let K exceed the thread count.
    int tid = threadIdx.y * blockDim.x + threadIdx.x;
    int threads = blockDim.x * blockDim.y;
    // TODO 1: fill As with the M*K floats of A, the work shared by all `threads` threads of the
    // block. A may hold many more floats than the block has threads, and each of the warp's
    // loads should be coalesced: neighbouring threads copy neighbouring floats.

    // TODO 2: the same for the K*N floats of B, into Bs.

    // No thread may read shared memory before every thread has written its part.
    // TODO 3: hold every thread here until the whole block has copied its share.

    int col = threadIdx.x;
    int row = threadIdx.y;

    if (row < M && col < N) {
        float sum = 0.0f;
        for (int k = 0; k < K; ++k) {
            sum += As[row * K + k] * Bs[k * N + col];
        }
        C[row * N + col] = sum;
    }
}
// ANCHOR_END: kernel

// Step 09's marking and scaling of B's columns (mark_cols, scale_cols), included by its kernel
// (src/kernel.cu) and by the hands-on starting file, after split_a, whose helpers it uses.

// ANCHOR: split_cols
// B's columns: blocks of 256 threads, 64 across (four columns a thread: 256 columns a block) and
// 4 down, the rows of B taken in turn by the 4 and by the blocks in y; the four partial ranges
// of a column met in shared memory, then block y's written to part y of `cols` (gridDim.y parts
// of 2N ints): at j the bits of column j's largest magnitude (0x7FFFFFFF if it holds NaN or
// infinity), at N + j 0x7FFFFFFF less the bits of its least other than zero (a positive float's
// bits order as its value does, so the larger of two is the one to keep, and 0 means none seen).
extern "C" __global__ void mark_cols(const float* B, int* cols, int K, int N)
{
    __shared__ float tops[4][256], lows[4][256];
    __shared__ bool finites[4][256];
    int tx = threadIdx.x % 64, ty = threadIdx.x / 64;
    int j0 = 4 * (blockIdx.x * 64 + tx);
    Range r[4];
    if (j0 < N && N % 4 == 0) {
#pragma unroll 4
        for (int k = 4 * blockIdx.y + ty; k < K; k += 4 * gridDim.y) {
            float4 v =
                __ldg(reinterpret_cast<const float4*>(B + static_cast<long long>(k) * N + j0));
            r[0].take(v.x), r[1].take(v.y), r[2].take(v.z), r[3].take(v.w);
        }
    } else if (j0 < N) {
        for (int k = 4 * blockIdx.y + ty; k < K; k += 4 * gridDim.y) {
            const float* row = B + static_cast<long long>(k) * N;
            for (int v = 0; v < 4 && j0 + v < N; ++v) r[v].take(row[j0 + v]);
        }
    }
    for (int v = 0; v < 4; ++v) {
        tops[ty][4 * tx + v] = r[v].largest;
        lows[ty][4 * tx + v] = r[v].least;
        finites[ty][4 * tx + v] = r[v].finite;
    }
    __syncthreads();
    if (ty > 0 || j0 >= N) return;
    int* part = cols + 2ll * N * blockIdx.y;
    for (int v = 0; v < 4 && j0 + v < N; ++v) {
        for (int y = 1; y < 4; ++y) {
            r[v].largest = fmaxf(r[v].largest, tops[y][4 * tx + v]);
            r[v].least = fminf(r[v].least, lows[y][4 * tx + v]);
            r[v].finite = r[v].finite && finites[y][4 * tx + v];
        }
        part[j0 + v] = r[v].finite ? __float_as_int(r[v].largest) : 0x7FFFFFFF;
        part[N + j0 + v] =
            r[v].finite && r[v].largest > 0.0f ? 0x7FFFFFFF - __float_as_int(r[v].least) : 0;
    }
}

// From mark_cols' parts (`parts` of them): column j's exponent into exps[j], and marks[j] = 1 if
// the split does not carry it (exps + M and marks + M are passed); the least scaled entry of the
// carried columns into *col_least (zeroed before). Blocks of 256 threads, 32 columns a block, the
// parts of a column shared by 8 threads and met in shared memory.
extern "C" __global__ void scale_cols(const int* cols, int parts, int* marks, int* exps, int N,
                                      int* col_least) {
    __shared__ int tops[8][32], lows[8][32];
    int tx = threadIdx.x % 32, ty = threadIdx.x / 32, j = blockIdx.x * 32 + tx;
    int top = 0, low = 0;
    if (j < N) {
#pragma unroll 8
        for (int y = ty; y < parts; y += 8) {
            top = max(top, cols[2ll * N * y + j]);
            low = max(low, cols[2ll * N * y + N + j]);
        }
    }
    tops[ty][tx] = top, lows[ty][tx] = low;
    __syncthreads();
    if (ty > 0) return;  // warp 0 meets the parts, a column a lane
    int bits = 0;        // the column's least scaled entry, where it is kept (see least_bits)
    if (j < N) {
        for (int y = 1; y < 8; ++y) top = max(top, tops[y][tx]), low = max(low, lows[y][tx]);
        bool finite = top < 0x7F800000;
        float largest = finite ? __int_as_float(top) : 0.0f;
        float least = __int_as_float(0x7FFFFFFF - low);
        int s = scale_exponent(largest);
        exps[j] = s;
        if (!carried(finite, largest, least, s, 0x1p-50f)) marks[j] = 1;
        else if (largest > 0.0f) bits = least_bits(ldexpf(least, s));
    }
    // The block's least, met across the warp, then one atomic.
    bits = __reduce_max_sync(0xFFFFFFFFu, bits);
    if (tx == 0 && bits > 0) atomicMax(col_least, bits);
}
// ANCHOR_END: split_cols

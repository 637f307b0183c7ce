// The DRAM roof of the roofline: a copy that does nothing but stream memory, so its rate is
// the bandwidth a kernel can actually get from global memory on this GPU (read and write),
// measured in the same run as the steps it is drawn against.

extern "C" __global__ void copy(const float4* __restrict__ src, float4* __restrict__ dst,
                                unsigned long long n4) {
    // A grid-stride loop: a few blocks per SM keep every SM's loads in flight, whatever n4 is.
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n4;
         i += stride) {
        dst[i] = src[i];
    }
}

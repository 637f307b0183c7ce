// Calibration of the emulator's shared-memory model: one access pattern per PATTERN, run as a
// `matmul` with step 02's launch (`--kernel`, at -m 32 -n 32 -k 1: one block of 32 warps), so
// that Nsight Compute's wavefronts for the block's shared loads and stores can be set beside the
// emulator's for the same PTX. Every warp makes one load of the pattern (and, from PATTERN 20 on,
// one store); C gets a sum so that nothing is optimised away. The result is not a product.
#ifndef PATTERN
#define PATTERN 1
#endif

extern "C" __global__ void matmul(int M, int N, int K, const float* A, const float* B, float* C)
{
    __shared__ __align__(16) float s[4096 + 256];
    int lane = threadIdx.x;  // step 02's block is 32×32: threadIdx.x is the lane
    int warp = threadIdx.y;
    int t = warp * 32 + lane;
    for (int i = t; i < 4096 + 256; i += 1024) s[i] = float(i);
    __syncthreads();
    float acc = 0.0f;
#if PATTERN == 1    // 4 bytes, a row: lane l reads word l
    acc = s[lane];
#elif PATTERN == 2  // 4 bytes, one word for all (a broadcast)
    acc = s[K];
#elif PATTERN == 3  // 4 bytes, a column of a 32-wide tile: 32 words of one bank
    acc = s[lane * 32];
#elif PATTERN == 4  // 4 bytes, every other word: two words a bank
    acc = s[lane * 2];
#elif PATTERN == 5  // 4 bytes, a column of a 33-wide tile (padded)
    acc = s[lane * 33];
#elif PATTERN == 6  // 8 bytes, 256 contiguous bytes
    float2 v = *reinterpret_cast<float2*>(&s[lane * 2]); acc = v.x + v.y;
#elif PATTERN == 7  // 8 bytes, a broadcast
    float2 v = *reinterpret_cast<float2*>(&s[2 * K]); acc = v.x + v.y;
#elif PATTERN == 8  // 8 bytes, the half-warps read the same 128 bytes
    float2 v = *reinterpret_cast<float2*>(&s[(lane % 16) * 2]); acc = v.x + v.y;
#elif PATTERN == 9  // 16 bytes, 512 contiguous bytes
    float4 v = *reinterpret_cast<float4*>(&s[lane * 4]); acc = v.x + v.y + v.z + v.w;
#elif PATTERN == 10 // 16 bytes, a broadcast
    float4 v = *reinterpret_cast<float4*>(&s[4 * K]); acc = v.x + v.y + v.z + v.w;
#elif PATTERN == 11 // 16 bytes, four lanes a piece, 8 pieces in a row (lane / 4)
    float4 v = *reinterpret_cast<float4*>(&s[(lane / 4) * 4]); acc = v.x + v.y + v.z + v.w;
#elif PATTERN == 12 // 16 bytes, 8 pieces in a row, repeated by each quarter-warp (lane % 8)
    float4 v = *reinterpret_cast<float4*>(&s[(lane % 8) * 4]); acc = v.x + v.y + v.z + v.w;
#elif PATTERN == 13 // 16 bytes, 4 pieces (lane % 4), as step 05's B loads with 4 threads across
    float4 v = *reinterpret_cast<float4*>(&s[(lane % 4) * 4]); acc = v.x + v.y + v.z + v.w;
#elif PATTERN == 14 // 16 bytes, 8 pieces 32 bytes apart (lane / 4), as step 05's A loads
    float4 v = *reinterpret_cast<float4*>(&s[(lane / 4) * 8]); acc = v.x + v.y + v.z + v.w;
#elif PATTERN == 15 // 16 bytes, 32 bytes apart: two lanes a bank group
    float4 v = *reinterpret_cast<float4*>(&s[lane * 8]); acc = v.x + v.y + v.z + v.w;
#elif PATTERN == 16 // 16 bytes, 2 pieces (lane / 16), each half-warp broadcasting
    float4 v = *reinterpret_cast<float4*>(&s[(lane / 16) * 4]); acc = v.x + v.y + v.z + v.w;
#elif PATTERN == 17 // 16 bytes, 2 pieces (lane % 2)
    float4 v = *reinterpret_cast<float4*>(&s[(lane % 2) * 4]); acc = v.x + v.y + v.z + v.w;
#elif PATTERN == 18 // 16 bytes, 4 pieces (lane / 8), each quarter-warp broadcasting
    float4 v = *reinterpret_cast<float4*>(&s[(lane / 8) * 4]); acc = v.x + v.y + v.z + v.w;
#elif PATTERN == 19 // 16 bytes, 16 pieces (lane / 2) in 256 bytes
    float4 v = *reinterpret_cast<float4*>(&s[(lane / 2) * 4]); acc = v.x + v.y + v.z + v.w;
#elif PATTERN == 20 // store 16 bytes, 512 contiguous bytes (each warp its own)
    *reinterpret_cast<float4*>(&s[lane * 4 + warp * 128]) = make_float4(1.0f, 2.0f, 3.0f, float(warp));
#elif PATTERN == 21 // store 4 bytes down a column of a 128-wide tile (step 05's transposed A)
    s[lane * 128 % 4096 + warp] = float(warp);
#elif PATTERN == 22 // store 4 bytes, a row
    s[lane + 32 * warp] = float(warp);
#elif PATTERN == 23 // store 8 bytes, 256 contiguous bytes (each warp its own)
    *reinterpret_cast<float2*>(&s[lane * 2 + warp * 64]) = make_float2(1.0f, float(warp));
#elif PATTERN == 24 // 16 bytes, two pieces a group of four lanes: (lane % 4) / 2
    float4 v = *reinterpret_cast<float4*>(&s[((lane % 4) / 2) * 4]); acc = v.x + v.y + v.z + v.w;
#elif PATTERN == 25 // 16 bytes, three pieces (lane % 3)
    float4 v = *reinterpret_cast<float4*>(&s[(lane % 3) * 4]); acc = v.x + v.y + v.z + v.w;
#elif PATTERN == 26 // 16 bytes, four pieces 128 bytes apart (lane % 4): one bank group
    float4 v = *reinterpret_cast<float4*>(&s[(lane % 4) * 32]); acc = v.x + v.y + v.z + v.w;
#elif PATTERN == 27 // 16 bytes, two pieces 128 bytes apart (lane / 16)
    float4 v = *reinterpret_cast<float4*>(&s[(lane / 16) * 32]); acc = v.x + v.y + v.z + v.w;
#elif PATTERN == 28 // 16 bytes, 16 pieces, lane % 16
    float4 v = *reinterpret_cast<float4*>(&s[(lane % 16) * 4]); acc = v.x + v.y + v.z + v.w;
#elif PATTERN == 29 // 16 bytes, lane ^ 1 (neighbours swapped, all distinct)
    float4 v = *reinterpret_cast<float4*>(&s[(lane ^ 1) * 4]); acc = v.x + v.y + v.z + v.w;
#elif PATTERN == 30 // 8 bytes, lane % 2
    float2 v = *reinterpret_cast<float2*>(&s[(lane % 2) * 2]); acc = v.x + v.y;
#elif PATTERN == 31 // 8 bytes, lane % 4
    float2 v = *reinterpret_cast<float2*>(&s[(lane % 4) * 2]); acc = v.x + v.y;
#elif PATTERN == 32 // 8 bytes, lane % 8
    float2 v = *reinterpret_cast<float2*>(&s[(lane % 8) * 2]); acc = v.x + v.y;
#elif PATTERN == 33 // 8 bytes, lane / 2
    float2 v = *reinterpret_cast<float2*>(&s[(lane / 2) * 2]); acc = v.x + v.y;
#elif PATTERN == 34 // 8 bytes, lane / 4
    float2 v = *reinterpret_cast<float2*>(&s[(lane / 4) * 2]); acc = v.x + v.y;
#elif PATTERN == 35 // 8 bytes, lane / 16
    float2 v = *reinterpret_cast<float2*>(&s[(lane / 16) * 2]); acc = v.x + v.y;
#elif PATTERN == 36 // store 16 bytes, lane % 4 (four lanes write each piece; each warp its own)
    *reinterpret_cast<float4*>(&s[(lane % 4) * 4 + warp * 128]) = make_float4(1.0f, 2.0f, 3.0f, float(lane));
#elif PATTERN == 37 // store 16 bytes, lane / 4 (each warp its own)
    *reinterpret_cast<float4*>(&s[(lane / 4) * 4 + warp * 128]) = make_float4(1.0f, 2.0f, 3.0f, float(lane));
#endif
    __syncthreads();
    acc += s[(t + 1) % 4096];
    if (warp < M && lane < N) C[warp * N + lane] = acc;
}

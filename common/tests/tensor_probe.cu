// The tensor cores' TF32 arithmetic, probed. Each block computes one small product
// D = A·B + C (A 64×8, B 8×8, C 64×8, all f32 bit patterns) twice, with the two instructions the
// course's TF32 labs use: four mma.sync m16n8k8 (step 07's) and one wgmma m64n8k8 (step 08's),
// and writes both D's. common/tests/tensor_cores.rs compares every element with the emulator's
// model of one k8 step (ptx_emulator/src/tensor_arith.rs), bit for bit.
//
// Each D is one k8 step and nothing else: the operands go in as the f32 bits the host wrote (the
// tensor cores drop the low 13 bits themselves; a cvt.rna.tf32 would round them first), there is
// no second k step to add in, and C is the accumulator the instruction starts from, so what comes
// back is the adder's own result.

// Words of one problem in `in`: A (row-major), then B (B[k][n], row-major), then C (row-major);
// and of its result in `out`: mma.sync's D, then wgmma's (row-major). The host lays them out
// the same way (PROBLEM_WORDS and RESULT_WORDS in tensor_cores.rs).
constexpr int A_WORDS = 64 * 8;
constexpr int B_WORDS = 8 * 8;
constexpr int PROBLEM_WORDS = A_WORDS + B_WORDS + 64 * 8;
constexpr int RESULT_WORDS = 2 * 64 * 8;

// One problem per block of 128 threads: one warpgroup, as wgmma needs; warp w owns rows
// 16w to 16w + 15 of A, C and D, one m16n8k8 tile for mma.sync and its quarter of wgmma's m64.
extern "C" __global__ void __launch_bounds__(128) tensor_probe(const unsigned* in, unsigned* out)
{
    const unsigned* A = in + (unsigned long long)blockIdx.x * PROBLEM_WORDS;
    const unsigned* B = A + A_WORDS;
    const unsigned* C = B + B_WORDS;
    unsigned* D_mma = out + (unsigned long long)blockIdx.x * RESULT_WORDS;
    unsigned* D_wgmma = D_mma + 64 * 8;
    int w = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;

    // wgmma reads B from shared memory only, K-major (as Bᵀ, N×K), here in the layout without
    // swizzle: two core matrices of 8 rows (n) of 16 bytes (four k's), k 0–3 at byte 0 and
    // k 4–7 at byte 128, row n at byte 16n of each.
    __shared__ __align__(1024) unsigned Bs[B_WORDS];
    if (threadIdx.x < B_WORDS) {
        int n = threadIdx.x / 8, k = threadIdx.x % 8;
        Bs[(k / 4) * 32 + n * 4 + k % 4] = B[k * 8 + n];
    }
    // The stores above are the generic proxy's; wgmma reads through the async proxy, which sees
    // them only after this fence, and only once the barrier has ordered every thread's.
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();

    // The fragments of the PTX ISA's m16n8k8 .tf32 layout, which wgmma's A from registers
    // shares: a0 (g, t), a1 (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4); b0 (k t, n g),
    // b1 (k t + 4, n g); d0 (g, 2t), d1 (g, 2t + 1), d2 (g + 8, 2t), d3 (g + 8, 2t + 1).
    int r = 16 * w + g;
    unsigned a0 = A[r * 8 + t], a1 = A[(r + 8) * 8 + t];
    unsigned a2 = A[r * 8 + t + 4], a3 = A[(r + 8) * 8 + t + 4];
    unsigned b0 = B[t * 8 + g], b1 = B[(t + 4) * 8 + g];
    int at[4] = {r * 8 + 2 * t, r * 8 + 2 * t + 1, (r + 8) * 8 + 2 * t, (r + 8) * 8 + 2 * t + 1};
    float d[4], e[4];  // mma.sync's D and wgmma's, both starting from C
    for (int i = 0; i < 4; i++) d[i] = e[i] = __uint_as_float(C[at[i]]);

    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));

    // The shared-memory descriptor of Bs: its address in 16-byte units (bits 0–13), 128 bytes
    // from one core matrix to the next along K (the leading offset, bits 16–29) and along N (the
    // stride offset, bits 32–45; one group of 8 n here), swizzle mode 0 (bits 62–63): none.
    unsigned long long addr = (unsigned long long)__cvta_generic_to_shared(Bs);
    unsigned long long desc = ((addr & 0x3FFFF) >> 4) | (8ull << 16) | (8ull << 32);
    // wgmma reads its accumulators asynchronously: the fence orders the writes of e above
    // before it, and the wait keeps e from being read before it has finished.
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    asm volatile("{\n"
                 ".reg .pred accumulate;\n"
                 "setp.ne.b32 accumulate, %9, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n8k8.f32.tf32.tf32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, %8, accumulate, 1, 1;\n"
                 "}\n"
                 : "+f"(e[0]), "+f"(e[1]), "+f"(e[2]), "+f"(e[3])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(desc), "r"(1)
                 : "memory");
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");

    for (int i = 0; i < 4; i++) {
        D_mma[at[i]] = __float_as_uint(d[i]);
        D_wgmma[at[i]] = __float_as_uint(e[i]);
    }
}
